// Goodman & Weare's stretch-move ensemble sampler against densities with known moments.
#include <tunekit/core/random.hpp>
#include <tunekit/stats/ensemble_sampler.hpp>
#include <tunekit/stats/segmentation.hpp>

#include <boost/random/normal_distribution.hpp>
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <cmath>
#include <limits>
#include <vector>

using namespace tunekit;

namespace {
Eigen::MatrixXd ball(std::size_t walkers, Eigen::Index dim, double radius, Rng& rng) {
  boost::random::normal_distribution<double> n(0.0, radius);
  Eigen::MatrixXd m(static_cast<Eigen::Index>(walkers), dim);
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < dim; ++j) m(i, j) = n(rng);
  return m;
}
Eigen::Vector2d sample_mean(const Eigen::MatrixXd& s) { return s.colwise().mean().transpose(); }
Eigen::Matrix2d sample_cov(const Eigen::MatrixXd& s) {
  const Eigen::MatrixXd c = s.rowwise() - s.colwise().mean();
  return (c.transpose() * c) / static_cast<double>(s.rows() - 1);
}
}  // namespace

TEST_CASE("the ensemble sampler reproduces a correlated 2-D Gaussian") {
  // mean (1, -2), covariance [[2, 0.6], [0.6, 1]]; 32 walkers x 4000 steps, 1000 burn-in
  // (96000 draws, autocorrelation ~ 30 steps). Tolerances: mean within 0.1 per coordinate,
  // covariance entries within 0.15 (absolute; 7.5% of the largest); acceptance in [0.3, 0.9]
  // (the stretch move's usual range on a 2-D Gaussian is 0.5-0.75).
  Eigen::Vector2d mu(1.0, -2.0);
  Eigen::Matrix2d cov;
  cov << 2.0, 0.6, 0.6, 1.0;
  const Eigen::Matrix2d prec = cov.inverse();
  auto log_p = [&](const Eigen::VectorXd& x) {
    const Eigen::Vector2d d = x - mu;
    return -0.5 * d.dot(prec * d);
  };
  Rng rng(11);
  const auto chain = stats::ensemble_sample(log_p, ball(32, 2, 0.1, rng),
                                            {.walkers = 32, .steps = 4000, .burn_in = 1000}, rng);
  REQUIRE(chain.samples.rows() == 32 * 3000);
  const Eigen::Vector2d m = sample_mean(chain.samples);
  const Eigen::Matrix2d c = sample_cov(chain.samples);
  CHECK(std::abs(m[0] - 1.0) < 0.1);
  CHECK(std::abs(m[1] + 2.0) < 0.1);
  CHECK(std::abs(c(0, 0) - 2.0) < 0.15);
  CHECK(std::abs(c(1, 1) - 1.0) < 0.15);
  CHECK(std::abs(c(0, 1) - 0.6) < 0.15);
  CHECK(chain.acceptance_fraction > 0.3);
  CHECK(chain.acceptance_fraction < 0.9);
  // Same seed, same chain.
  Rng a(3), b(3);
  const auto ca = stats::ensemble_sample(log_p, ball(8, 2, 0.1, a), {.walkers = 8, .steps = 50, .burn_in = 10}, a);
  const auto cb = stats::ensemble_sample(log_p, ball(8, 2, 0.1, b), {.walkers = 8, .steps = 50, .burn_in = 10}, b);
  CHECK(ca.samples == cb.samples);
}

TEST_CASE("the ensemble sampler reproduces a banana-shaped posterior") {
  // p(x, y) ~ exp(-x^2/2 - (y - x^2)^2 / 2): x ~ N(0, 1), y | x ~ N(x^2, 1), so E[x] = 0,
  // E[y] = 1, Var[x] = 1, Var[y] = 1 + Var[x^2] = 3, Cov[x, y] = E[x^3] = 0. 32 walkers x 8000
  // steps, 1000 burn-in. Tolerances (the curved tails mix slowly): means within 0.1, Var[x]
  // within 0.1, Var[y] within 0.35 (12%), Cov within 0.15; acceptance in [0.2, 0.9].
  auto log_p = [](const Eigen::VectorXd& v) {
    const double x = v[0], y = v[1];
    return -0.5 * x * x - 0.5 * (y - x * x) * (y - x * x);
  };
  Rng rng(5);
  const auto chain = stats::ensemble_sample(log_p, ball(32, 2, 0.5, rng),
                                            {.walkers = 32, .steps = 8000, .burn_in = 1000}, rng);
  const Eigen::Vector2d m = sample_mean(chain.samples);
  const Eigen::Matrix2d c = sample_cov(chain.samples);
  CHECK(std::abs(m[0]) < 0.1);
  CHECK(std::abs(m[1] - 1.0) < 0.1);
  CHECK(std::abs(c(0, 0) - 1.0) < 0.1);
  CHECK(std::abs(c(1, 1) - 3.0) < 0.35);
  CHECK(std::abs(c(0, 1)) < 0.15);
  CHECK(chain.acceptance_fraction > 0.2);
  CHECK(chain.acceptance_fraction < 0.9);
}

TEST_CASE("the ensemble sampler rejects bad parameters and starts") {
  auto log_p = [](const Eigen::VectorXd& x) { return -0.5 * x.squaredNorm(); };
  Rng rng(1);
  const Eigen::MatrixXd init = Eigen::MatrixXd::Random(6, 2);
  CHECK_THROWS_AS(stats::ensemble_sample(log_p, init, {.walkers = 6, .steps = 10, .burn_in = 10}, rng),
                  std::invalid_argument);
  CHECK_THROWS_AS(stats::ensemble_sample(log_p, init, {.walkers = 6, .steps = 10, .burn_in = 1, .stretch = 1.0}, rng),
                  std::invalid_argument);
  CHECK_THROWS_AS(stats::ensemble_sample(log_p, init, {.walkers = 4, .steps = 10, .burn_in = 1}, rng),
                  std::invalid_argument);  // rows != walkers
  CHECK_THROWS_AS(stats::ensemble_sample(log_p, Eigen::MatrixXd::Random(3, 2), {.walkers = 3, .steps = 10, .burn_in = 1}, rng),
                  std::invalid_argument);  // fewer than 2 x dimensions
  auto nowhere = [](const Eigen::VectorXd&) { return -std::numeric_limits<double>::infinity(); };
  CHECK_THROWS_AS(stats::ensemble_sample(nowhere, init, {.walkers = 6, .steps = 10, .burn_in = 1}, rng),
                  std::invalid_argument);
}

TEST_CASE("segment_starts cuts a curve at changes above 20%") {
  const std::vector<double> y{1.0, 1.1, 1.15, 1.5, 1.55, 1.6, 2.5, 2.6};
  CHECK(stats::segment_starts(y) == std::vector<std::size_t>{0, 3, 6});
  CHECK(stats::segment_starts(y, 0.5) == std::vector<std::size_t>{0, 6});
  CHECK(stats::segment_starts(std::vector<double>{}).empty());
  CHECK_THROWS_AS(stats::segment_starts(y, 0.0), std::invalid_argument);
}
