#include <tunekit/acquisition/expected_improvement.hpp>
#include <tunekit/acquisition/predicted_mean.hpp>
#include <tunekit/acquisition/probability_of_improvement.hpp>
#include <tunekit/acquisition/upper_confidence_bound.hpp>
#include <tunekit/core/random.hpp>

#include <boost/random/normal_distribution.hpp>
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

namespace {

// Monte-Carlo mean of g(f), f ~ N(mu, sigma^2), and its standard error.
template <class G>
std::pair<double, double> monte_carlo(double mu, double sigma, G g, std::size_t n, std::uint64_t seed) {
  tunekit::Rng rng(seed);
  boost::random::normal_distribution<double> normal(mu, sigma);
  double sum = 0, sum2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = g(normal(rng));
    sum += v;
    sum2 += v * v;
  }
  const double mean = sum / static_cast<double>(n);
  const double var = sum2 / static_cast<double>(n) - mean * mean;
  return {mean, std::sqrt(var / static_cast<double>(n))};
}

}  // namespace

TEST_CASE("expected improvement equals Monte-Carlo integration of max(f - best, 0) under a normal") {
  const tunekit::ExpectedImprovement ei;
  struct Case {
    double mu, sigma, best;
  };
  std::uint64_t seed = 1;
  for (const Case c : {Case{1.0, 1.0, 1.0}, Case{0.5, 2.0, 3.0}, Case{4.0, 0.3, 3.5}, Case{-2.0, 0.5, 0.0},
                       Case{10.0, 5.0, 2.0}}) {
    CAPTURE(c.mu);
    CAPTURE(c.sigma);
    CAPTURE(c.best);
    const auto [mc, se] = monte_carlo(c.mu, c.sigma, [&](double f) { return std::max(f - c.best, 0.0); },
                                      2'000'000, seed++);
    // Within 5 standard errors of the Monte-Carlo estimate (plus a floor for a tiny EI).
    CHECK(std::abs(ei.score(c.mu, c.sigma, c.best) - mc) <= 5 * se + 1e-9);
  }
  // Closed form at mu == best: sigma * phi(0).
  CHECK(ei.score(2.0, 3.0, 2.0) == doctest::Approx(3.0 / std::sqrt(2 * M_PI)).epsilon(1e-12));
}

TEST_CASE("expected improvement with sigma = 0 is the plain improvement, and xi shifts best") {
  const tunekit::ExpectedImprovement ei;
  CHECK(ei.score(5.0, 0.0, 3.0) == 2.0);
  CHECK(ei.score(1.0, 0.0, 3.0) == 0.0);
  CHECK(ei.score(3.0, 0.0, 3.0) == 0.0);
  const tunekit::ExpectedImprovement margin{.xi = 0.5};
  CHECK(margin.score(5.0, 0.0, 3.0) == 1.5);
  CHECK(margin.score(4.0, 1.0, 3.0) == doctest::Approx(ei.score(4.0, 1.0, 3.5)));
  // EI grows with sigma at a fixed mean below best: uncertainty is worth exploring.
  CHECK(ei.score(1.0, 2.0, 3.0) > ei.score(1.0, 1.0, 3.0));
  CHECK(ei.score(1.0, 1.0, 3.0) > 0.0);
  CHECK_THROWS_AS((void)ei.score(1.0, -1.0, 0.0), std::invalid_argument);
  CHECK_THROWS_AS((void)ei.score(1.0, std::nan(""), 0.0), std::invalid_argument);
}

TEST_CASE("probability of improvement equals the Monte-Carlo frequency of f > best") {
  const tunekit::ProbabilityOfImprovement pi;
  const auto [mc, se] = monte_carlo(1.0, 2.0, [](double f) { return f > 2.0 ? 1.0 : 0.0; }, 1'000'000, 7);
  CHECK(std::abs(pi.score(1.0, 2.0, 2.0) - mc) <= 5 * se);
  CHECK(pi.score(2.0, 1.0, 2.0) == doctest::Approx(0.5));
  CHECK(pi.score(3.0, 0.0, 2.0) == 1.0);
  CHECK(pi.score(1.0, 0.0, 2.0) == 0.0);
}

TEST_CASE("upper confidence bound and predicted mean are their closed forms") {
  CHECK(tunekit::UpperConfidenceBound{}.score(1.0, 0.5, 9.0) == 2.0);
  CHECK(tunekit::UpperConfidenceBound{.kappa = 0.0}.score(1.0, 0.5, 9.0) == 1.0);
  CHECK(tunekit::PredictedMean{}.score(1.5, 3.0, 9.0) == 1.5);
}
