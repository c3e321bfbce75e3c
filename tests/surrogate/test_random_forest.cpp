// GCC 12: false -Wmaybe-uninitialized in Eigen's AVX-512 reductions under -march=native.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <tunekit/surrogate/random_forest.hpp>

#include "surrogate/metrics.hpp"

#include <boost/random/normal_distribution.hpp>
#include <doctest/doctest.h>

#include "support/omp_threads.hpp"
#include <omp.h>

#include <cmath>
#include <cstdio>

namespace {

// Friedman's first function on [0, 1)^5 plus Gaussian noise of standard deviation sigma.
Eigen::VectorXd friedman(const Eigen::MatrixXd& x, double sigma, tunekit::Rng& rng) {
  boost::random::normal_distribution<double> noise(0.0, sigma);
  Eigen::VectorXd y(x.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    y[i] = 10 * std::sin(M_PI * x(i, 0) * x(i, 1)) + 20 * std::pow(x(i, 2) - 0.5, 2) + 10 * x(i, 3) +
           5 * x(i, 4) + (sigma > 0 ? noise(rng) : 0.0);
  return y;
}

using Threads = tunekit::test::OmpThreads;

}  // namespace

TEST_CASE("the infinitesimal jackknife equals its formula computed by loops") {
  // n = 4 training rows, B = 5 trees, q = 3 points.
  Eigen::MatrixXd inbag(4, 5);
  inbag << 2, 0, 1, 1, 3,  //
      1, 1, 0, 2, 0,       //
      0, 2, 1, 1, 1,       //
      1, 1, 2, 0, 0;
  Eigen::MatrixXd t(3, 5);
  t << 1.0, 2.0, 1.5, 0.5, 3.0,  //
      4.0, 4.1, 3.9, 4.0, 4.2,     //
      -1.0, 2.0, 0.0, 1.0, -2.0;
  const Eigen::VectorXd v = tunekit::infinitesimal_jackknife_variance(inbag, t);
  const double n = 4, b = 5;
  for (Eigen::Index x = 0; x < 3; ++x) {
    double tbar = 0;
    for (Eigen::Index k = 0; k < 5; ++k) tbar += t(x, k) / b;
    double v_ij = 0;
    for (Eigen::Index i = 0; i < 4; ++i) {
      double nbar = 0;
      for (Eigen::Index k = 0; k < 5; ++k) nbar += inbag(i, k) / b;
      double cov = 0;
      for (Eigen::Index k = 0; k < 5; ++k) cov += (inbag(i, k) - nbar) * (t(x, k) - tbar) / b;
      v_ij += cov * cov;
    }
    double ss = 0;
    for (Eigen::Index k = 0; k < 5; ++k) ss += (t(x, k) - tbar) * (t(x, k) - tbar);
    const double expected = std::max(0.0, v_ij - n / (b * b) * ss);
    CAPTURE(x);
    CHECK(v[x] == doctest::Approx(expected).epsilon(1e-12).scale(1e-12));
  }
  // With B = 5 the bias correction exceeds V_IJ for the first two points (clipped to 0).
  CHECK(v[0] == 0.0);
  CHECK(v[1] == 0.0);
  CHECK(v[2] > 0);
  CHECK_THROWS_AS(tunekit::infinitesimal_jackknife_variance(inbag, t.leftCols(4)), std::invalid_argument);
}

TEST_CASE("the forest records in-bag counts and its mean is the trees' mean") {
  tunekit::Rng rng(1);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(200, 5, rng);
  const Eigen::VectorXd y = friedman(x, 1.0, rng);
  tunekit::RandomForest f({.n_trees = 50});
  f.fit(x, y, rng);
  CHECK(f.inbag().rows() == 200);
  CHECK(f.inbag().cols() == 50);
  CHECK((f.inbag().colwise().sum().array() == 200.0).all());  // each bootstrap draws n rows
  const Eigen::MatrixXd q = surrogate_test::uniform_points(20, 5, rng);
  Eigen::VectorXd mean, sd;
  f.predict(q, mean, sd);
  CHECK(mean.isApprox(f.predict(q)));
  CHECK(mean.isApprox(f.tree_predictions(q).rowwise().mean()));
  CHECK((sd.array() >= 0).all());
  CHECK(sd.isApprox(tunekit::infinitesimal_jackknife_variance(f.inbag(), f.tree_predictions(q)).cwiseSqrt()));
  CHECK_THROWS_AS(tunekit::RandomForest({.bootstrap = false}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::RandomForest({.max_features = 0.0}), std::invalid_argument);
}

TEST_CASE("2-sigma intervals of the forest cover 85 to 99 percent of noisy held-out points") {
  // std() with add_residual_variance = sqrt(V_IJ-U(x) + mean squared out-of-bag residual): the
  // jackknife alone is the variance of the forest's mean, not of a new noisy measurement, and
  // under-covers (measured 37.6% here; with the residual variance 98.1%), so the predictive interval adds the residual variance.
  tunekit::Rng rng(2024);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(500, 5, rng);
  const Eigen::VectorXd y = friedman(x, 1.0, rng);
  const Eigen::MatrixXd q = surrogate_test::uniform_points(1000, 5, rng);
  const Eigen::VectorXd yq = friedman(q, 1.0, rng);
  auto coverage = [&](const tunekit::RandomForestParams& p) {
    tunekit::RandomForest f(p);
    tunekit::Rng r(9);
    f.fit(x, y, r);
    Eigen::VectorXd mean, sd;
    f.predict(q, mean, sd);
    return ((yq - mean).array().abs() <= 2.0 * sd.array()).cast<double>().mean();
  };
  const double raw = coverage({});
  const double predictive = coverage({.add_residual_variance = true});
  std::printf("forest 2-sigma coverage: jackknife %.3f, jackknife + residual %.3f\n", raw, predictive);
  CHECK(raw < 0.85);
  CHECK(predictive >= 0.85);
  CHECK(predictive <= 0.99);
}

TEST_CASE("the jackknife variance is larger far from the training data than near it") {
  // 1-D training data on [0, 0.4] and [0.6, 1] of y = sin(2 pi x) + noise; the gap (0.4, 0.6)
  // has no data, so bootstrap trees disagree on where to cut it.
  tunekit::Rng rng(5);
  boost::random::normal_distribution<double> noise(0.0, 0.1);
  Eigen::MatrixXd x(400, 1);
  Eigen::VectorXd y(400);
  for (Eigen::Index i = 0; i < 400; ++i) {
    const double u = tunekit::uniform_real(rng) * 0.8;
    x(i, 0) = u < 0.4 ? u : u + 0.2;
    y[i] = std::sin(2 * M_PI * x(i, 0)) + noise(rng);
  }
  tunekit::RandomForest f({.max_features = 1.0});
  f.fit(x, y, rng);
  Eigen::MatrixXd near(40, 1), far(40, 1);
  for (Eigen::Index i = 0; i < 40; ++i) {
    near(i, 0) = 0.05 + 0.3 * static_cast<double>(i) / 39;  // inside [0.05, 0.35]
    far(i, 0) = 0.45 + 0.1 * static_cast<double>(i) / 39;   // inside the gap
  }
  Eigen::VectorXd m, sd_near, sd_far;
  f.predict(near, m, sd_near);
  f.predict(far, m, sd_far);
  std::printf("forest jackknife std: near %.4f, in the gap %.4f\n", sd_near.mean(), sd_far.mean());
  CHECK(sd_far.mean() > 2.0 * sd_near.mean());
}

TEST_CASE("the forest is bit-identical for a seed and thread count") {
  tunekit::Rng data(3);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(1500, 10, data);  // histogram mode
  const Eigen::VectorXd y = friedman(x, 0.5, data);
  const Eigen::MatrixXd q = surrogate_test::uniform_points(300, 10, data);
  auto run = [&](int threads) {
    Threads scope(threads);
    tunekit::RandomForest f({.n_trees = 40});
    tunekit::Rng rng(77);
    f.fit(x, y, rng);
    Eigen::VectorXd mean, sd;
    f.predict(q, mean, sd);
    return std::pair{mean, sd};
  };
  const auto a = run(2), b = run(2), c = run(1);
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
  // Trees draw from streams derived before the parallel loop: the thread count does not matter.
  CHECK(a.first == c.first);
  // And the forest predicts Friedman's function well.
  CHECK(surrogate_test::r_squared(friedman(q, 0.0, data), a.first) > 0.7);
}
