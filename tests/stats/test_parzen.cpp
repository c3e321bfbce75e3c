// ParzenEstimator: a normalised density over the product of the knobs' values, its draws follow
// it, its kernels have the widths of their formulas, and it concentrates where its centres are.
#include <tunekit/stats/parzen.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace tunekit;

namespace {

// Every kind of knob: ordinal, power of two, categorical, boolean (24 x 4 x 3 x 2 = 576 configs).
SearchSpace parzen_mixed_space() {
  SearchSpace s;
  s.add(Knob::range("o", 0, 23)).add(Knob::power_of_two("p", 1, 8));
  s.add(Knob::categorical("cat", {"x", "y", "z"})).add(Knob::boolean("b"));
  return s;
}

}  // namespace

TEST_CASE("ParzenEstimator: the density sums to 1 over the product, with and without weights") {
  const SearchSpace s = parzen_mixed_space();
  const std::vector<Config> centres{{3, 1, 0, 1}, {20, 3, 2, 0}, {4, 1, 0, 1}};
  for (const std::vector<double>& w : {std::vector<double>{}, std::vector<double>{0.5, 2.0, 1.0}}) {
    const ParzenEstimator p(s, centres, w);
    double sum = 0.0;
    for (std::uint64_t i = 0; i < s.product_size(); ++i) sum += p.density(s.from_index(i));
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
  }
  // No centres: the uniform prior.
  const ParzenEstimator empty(s, {});
  CHECK(empty.density({0, 0, 0, 0}) == doctest::Approx(1.0 / 576).epsilon(1e-12));
}

TEST_CASE("ParzenEstimator: draws follow the density") {
  const SearchSpace s = parzen_mixed_space();
  const std::vector<Config> centres{{3, 1, 0, 1}, {20, 3, 2, 0}};
  const ParzenEstimator p(s, centres);
  Rng rng(7);
  const int draws = 200000;
  std::vector<int> count(s.product_size(), 0);
  for (int i = 0; i < draws; ++i) ++count[s.to_index(p.sample(rng))];
  // Each config's frequency within 5 binomial standard deviations of its density (576 cells: a
  // correct sampler fails this with probability well under 1e-4).
  double worst = 0.0;
  for (std::uint64_t i = 0; i < s.product_size(); ++i) {
    const double q = p.density(s.from_index(i));
    const double sd = std::sqrt(draws * q * (1 - q));
    worst = std::max(worst, std::abs(count[i] - draws * q) / sd);
  }
  MESSAGE("largest deviation: " << worst << " standard deviations");
  CHECK(worst < 5.0);
}

TEST_CASE("ParzenEstimator: kernel widths follow Scott's rule with its floors") {
  const SearchSpace s = parzen_mixed_space();
  const ParzenParams params{};
  auto shrink = [](double n) { return std::pow(n, -1.0 / (4.0 + 4.0)); };
  std::vector<Config> centres(9, Config{12, 2, 1, 0});
  const ParzenEstimator p(s, centres);
  // o: 24 values, 9 centres: 0.2 * 24 * 9^(-1/8) = 3.64 (above the floors 0.5 and 24/10).
  CHECK(p.sigma(0) == doctest::Approx(params.width * 24 * shrink(9)));
  // p: 4 values: 0.2 * 4 * 9^(-1/8) = 0.61, above 0.5 and 4/10.
  CHECK(p.sigma(1) == doctest::Approx(params.width * 4 * shrink(9)));
  // cat: (3 - 1) / 3 * min(1, 0.5 * 9^(-1/8)); b likewise with 1/2.
  CHECK(p.change(2) == doctest::Approx(2.0 / 3 * params.change * shrink(9)));
  CHECK(p.change(3) == doctest::Approx(0.5 * params.change * shrink(9)));
  CHECK(p.sigma(2) == 0.0);
  // Many centres: the floor takes over (0.2 * 4 * 1000^(-1/8) = 0.34 < 0.5).
  const ParzenEstimator many(s, std::vector<Config>(1000, Config{12, 2, 1, 0}));
  CHECK(many.sigma(1) == doctest::Approx(params.min_width));
  CHECK(many.sigma(0) < p.sigma(0));
}

TEST_CASE("ParzenEstimator: mass near the centres, falling off with distance") {
  const SearchSpace s = parzen_mixed_space();
  const ParzenEstimator p(s, std::vector<Config>{{5, 2, 1, 1}});
  const double at = p.density({5, 2, 1, 1});
  CHECK(at > p.density({6, 2, 1, 1}));
  CHECK(p.density({6, 2, 1, 1}) > p.density({9, 2, 1, 1}));
  CHECK(p.density({9, 2, 1, 1}) > p.density({20, 2, 1, 1}));
  CHECK(at > p.density({5, 2, 0, 1}));
  CHECK(at > p.density({5, 2, 1, 0}));
  // The density of the centre is well above the uniform one (one centre: the widest kernels, the
  // ordered knobs' widths at m / 2 by the clip m / min(100, n + 1)).
  CHECK(at > 2.5 / 576);
  // kernel() is the density of one kernel: with one centre, p = (prior + kernel) / 2.
  CHECK(p.density({9, 0, 2, 0}) == doctest::Approx((1.0 / 576 + p.kernel({5, 2, 1, 1}, {9, 0, 2, 0})) / 2));
}

TEST_CASE("ParzenEstimator: bad arguments are errors") {
  const SearchSpace s = parzen_mixed_space();
  const std::vector<Config> c{{0, 0, 0, 0}};
  CHECK_THROWS_AS(ParzenEstimator(s, c, std::vector<double>{1.0, 2.0}), std::invalid_argument);
  CHECK_THROWS_AS(ParzenEstimator(s, c, std::vector<double>{-1.0}), std::invalid_argument);
  CHECK_THROWS_AS(ParzenEstimator(s, c, {}, ParzenParams{.width = 0.0}), std::invalid_argument);
}
