// GaussianProcess: its mean and standard deviation equal the closed form on two points, the
// marginal likelihood chooses a longer length scale for a smooth function than for noise, and
// it predicts a smooth function of three features on held-out points with calibrated errors;
// ARD finds the relevant feature, and an ascent from an earlier fit's length scales (fit_from)
// reaches a full one's likelihood in a few steps.
#include <tunekit/surrogate/gaussian_process.hpp>

#include "surrogate/metrics.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

using tunekit::GaussianProcess;

TEST_CASE("GaussianProcess: mean and standard deviation on two points equal the closed form") {
  // x = 0 and 1 (one feature), y = 1 and 3: standardised targets -1 and 1 (mean 2, scale 1).
  const double l = 0.5, noise = 0.01;
  GaussianProcess gp({.length_scales = {l}, .noise = noise});
  Eigen::MatrixXd X(2, 1);
  X << 0.0, 1.0;
  Eigen::VectorXd y(2);
  y << 1.0, 3.0;
  gp.fit(X, y);
  CHECK(gp.length_scale() == l);
  const double k01 = std::exp(-0.5 / (l * l));
  // K = [[a, k01], [k01, a]], a = 1 + noise; K^-1 = [[a, -k01], [-k01, a]] / (a^2 - k01^2).
  const double a = 1.0 + noise, det = a * a - k01 * k01;
  for (const double x : {0.0, 0.25, 0.6, 2.0}) {
    CAPTURE(x);
    const double k0 = std::exp(-0.5 * x * x / (l * l)), k1 = std::exp(-0.5 * (x - 1) * (x - 1) / (l * l));
    const double mean = 2.0 + (k0 * (-a - k01) + k1 * (a + k01)) / det;  // k' K^-1 z, z = (-1, 1)
    const double var = 1.0 - (a * k0 * k0 - 2 * k01 * k0 * k1 + a * k1 * k1) / det;
    Eigen::MatrixXd q(1, 1);
    q << x;
    Eigen::VectorXd m, sd;
    gp.predict(q, m, sd);
    CHECK(m[0] == doctest::Approx(mean).epsilon(1e-12));
    CHECK(sd[0] == doctest::Approx(std::sqrt(var)).epsilon(1e-9));
    CHECK(gp.predict(q)[0] == doctest::Approx(mean).epsilon(1e-12));
  }
  // Its log marginal likelihood: -z'K^-1 z / 2 - log|K| / 2 - log(2 pi).
  const double quad = (a * 2 + 2 * k01) / det;  // z'K^-1 z for z = (-1, 1)
  CHECK(gp.log_marginal_likelihood() ==
        doctest::Approx(-0.5 * quad - 0.5 * std::log(det) - std::log(2 * std::numbers::pi)).epsilon(1e-12));
}

TEST_CASE("GaussianProcess: the marginal likelihood picks a longer length scale for a smooth function than for noise") {
  tunekit::Rng rng(3);
  const Eigen::MatrixXd X = surrogate_test::uniform_points(40, 1, rng);
  Eigen::VectorXd smooth(40), rough(40);
  for (Eigen::Index i = 0; i < 40; ++i) {
    smooth[i] = std::sin(2 * std::numbers::pi * X(i, 0));
    rough[i] = tunekit::uniform_real(rng);  // independent of x
  }
  GaussianProcess a, b;
  a.fit(X, smooth);
  b.fit(X, rough);
  MESSAGE("length scales: smooth " << a.length_scale() << ", noise " << b.length_scale());
  CHECK(a.length_scale() > b.length_scale());
  CHECK(b.length_scale() == a.params().length_scales.front());
}

TEST_CASE("GaussianProcess: predicts a smooth function of three features on held-out points") {
  tunekit::Rng rng(5);
  auto f = [](const Eigen::MatrixXd& x) {
    Eigen::VectorXd y(x.rows());
    for (Eigen::Index i = 0; i < x.rows(); ++i) y[i] = x(i, 0) * x(i, 0) + std::sin(3 * x(i, 1)) - 0.5 * x(i, 2);
    return y;
  };
  const Eigen::MatrixXd train = surrogate_test::uniform_points(60, 3, rng), test = surrogate_test::uniform_points(200, 3, rng);
  GaussianProcess gp;
  gp.fit(train, f(train), rng);
  Eigen::VectorXd m, sd;
  gp.predict(test, m, sd);
  const Eigen::VectorXd truth = f(test);
  const double r2 = surrogate_test::r_squared(truth, m);
  int within = 0;
  for (Eigen::Index i = 0; i < test.rows(); ++i) within += std::abs(m[i] - truth[i]) <= 3 * sd[i] + 1e-3;
  MESSAGE("R^2 " << r2 << ", within 3 sd " << within << "/200, length scale " << gp.length_scale());
  CHECK(r2 > 0.95);  // a constant has R^2 <= 0
  CHECK(within >= 180);
  // At a training point the standard deviation is about the noise's, far away it is the prior's.
  gp.predict(train.topRows(1), m, sd);
  const double scale = std::sqrt((f(train).array() - f(train).mean()).square().mean());
  CHECK(sd[0] < 0.15 * scale);
  Eigen::MatrixXd far = Eigen::MatrixXd::Constant(1, 3, 10.0);
  gp.predict(far, m, sd);
  CHECK(sd[0] == doctest::Approx(scale).epsilon(1e-6));
  CHECK(m[0] == doctest::Approx(f(train).mean()).epsilon(1e-6));
}

TEST_CASE("GaussianProcess: ARD gives the feature the targets depend on the shortest length scale") {
  // y = sin(2 pi x0) on 40 points of five features; x1..x4 are irrelevant. One common length
  // scale must stay long enough for the four irrelevant distances; ARD lengthens theirs and
  // shortens x0's, so it predicts held-out points better, with a larger marginal likelihood.
  tunekit::Rng rng(11);
  const Eigen::MatrixXd train = surrogate_test::uniform_points(40, 5, rng), test = surrogate_test::uniform_points(200, 5, rng);
  auto f = [](const Eigen::MatrixXd& x) { return Eigen::VectorXd((2 * std::numbers::pi * x.col(0)).array().sin()); };
  GaussianProcess iso, ard({.ard_steps = 100});
  iso.fit(train, f(train));
  ard.fit(train, f(train));
  const Eigen::VectorXd l = ard.length_scales();
  MESSAGE("common length scale " << iso.length_scale() << ", ARD " << l.transpose() << "; log marginal likelihood "
                                 << iso.log_marginal_likelihood() << " -> " << ard.log_marginal_likelihood());
  CHECK(ard.length_scale() == iso.length_scale());  // the ascent starts from the common one
  for (const double li : iso.length_scales()) CHECK(li == doctest::Approx(iso.length_scale()).epsilon(1e-12));
  for (Eigen::Index j = 1; j < 5; ++j) CHECK(l[j] > 2 * l[0]);
  CHECK(ard.log_marginal_likelihood() > iso.log_marginal_likelihood() + 1.0);
  const double r2_iso = surrogate_test::r_squared(f(test), iso.predict(test));
  const double r2_ard = surrogate_test::r_squared(f(test), ard.predict(test));
  MESSAGE("held-out R^2: common " << r2_iso << ", ARD " << r2_ard);
  CHECK(r2_ard > r2_iso + 0.05);
  CHECK(r2_ard > 0.9);
  // kernel() uses the fitted length scales: a move of 0.4 in an irrelevant feature keeps two
  // points alike, the same move in x0 does not (with one length scale the two are equal).
  Eigen::RowVectorXd a = Eigen::RowVectorXd::Constant(5, 0.5), b = a, c = a;
  b[1] += 0.4;
  c[0] += 0.4;
  CHECK(ard.kernel(a, b) > 0.9);
  CHECK(ard.kernel(a, c) < 0.5);
  CHECK(iso.kernel(a, b) == doctest::Approx(iso.kernel(a, c)));
  // At a training point the mean is the target, up to the noise.
  Eigen::VectorXd m, sd;
  ard.predict(train.topRows(1), m, sd);
  CHECK(std::abs(m[0] - f(train)[0]) < 0.1);
}

TEST_CASE("GaussianProcess: an ascent from the last fit's length scales reaches a full ascent's likelihood in a few steps") {
  // A model refitted on one more point (TreeParzenParams::gp_ard_warm_steps): 5 steps from the
  // length scales of the fit on n points reach, on n + 1, the log marginal likelihood of 100
  // steps from the common length scale within 0.5, where 5 steps from the common one fall short
  // by more than 2. y = sin(2 pi x0) + x1 / 2 of five features.
  tunekit::Rng rng(11);
  const Eigen::MatrixXd all = surrogate_test::uniform_points(41, 5, rng);
  auto f = [](const Eigen::MatrixXd& x) {
    return Eigen::VectorXd((2 * std::numbers::pi * x.col(0)).array().sin() + 0.5 * x.col(1).array());
  };
  for (const Eigen::Index n : {20, 30, 40}) {
    const Eigen::MatrixXd before = all.topRows(n), after = all.topRows(n + 1);
    GaussianProcess last({.ard_steps = 100}), full({.ard_steps = 100}), warm({.ard_steps = 100}), few({.ard_steps = 5});
    last.fit(before, f(before));
    full.fit(after, f(after));
    warm.fit_from(after, f(after), last.log_weights(), 5);
    few.fit(after, f(after));
    MESSAGE("n = " << n + 1 << ": log marginal likelihood, 100 steps " << full.log_marginal_likelihood() << ", 5 warm "
                   << warm.log_marginal_likelihood() << ", 5 cold " << few.log_marginal_likelihood());
    CHECK(warm.log_marginal_likelihood() > full.log_marginal_likelihood() - 0.5);
    CHECK(few.log_marginal_likelihood() < full.log_marginal_likelihood() - 2.0);
    CHECK(warm.length_scale() == full.length_scale());  // the prior's centre: the common length scale
    // log_weights() are t_j = -log(l_j^2 p).
    const Eigen::VectorXd l = warm.length_scales(), t = warm.log_weights();
    for (Eigen::Index j = 0; j < 5; ++j) CHECK(t[j] == doctest::Approx(-std::log(l[j] * l[j] * 5.0)));
  }
  // No warm start is fit(); without ARD the warm start is not used; a warm start of another
  // number of features is refused.
  GaussianProcess a({.ard_steps = 20}), b({.ard_steps = 20}), iso, iso_warm;
  a.fit(all, f(all));
  b.fit_from(all, f(all), Eigen::VectorXd(), 3);
  CHECK(a.log_marginal_likelihood() == b.log_marginal_likelihood());
  CHECK((a.predict(all) - b.predict(all)).cwiseAbs().maxCoeff() == 0.0);
  iso.fit(all, f(all));
  iso_warm.fit_from(all, f(all), a.log_weights(), 3);
  CHECK(iso.log_marginal_likelihood() == iso_warm.log_marginal_likelihood());
  CHECK_THROWS_AS(b.fit_from(all, f(all), Eigen::VectorXd::Zero(4), 3), std::invalid_argument);
  CHECK_THROWS_AS(b.fit_from(all, f(all), Eigen::VectorXd::Constant(5, std::nan("")), 3), std::invalid_argument);
}

TEST_CASE("GaussianProcess: bad input is refused") {
  GaussianProcess gp;
  Eigen::MatrixXd X(2, 1);
  X << 0.0, 1.0;
  Eigen::VectorXd y(3);
  y << 1.0, 2.0, 3.0;
  CHECK_THROWS_AS(gp.fit(X, y), std::invalid_argument);
  CHECK_THROWS_AS(gp.predict(X), std::logic_error);
  CHECK_THROWS_AS(GaussianProcess({.length_scales = {}}), std::invalid_argument);
  CHECK_THROWS_AS(GaussianProcess({.length_scales = {0.0}}), std::invalid_argument);
  CHECK_THROWS_AS(GaussianProcess({.noise = -1.0}), std::invalid_argument);
  CHECK_THROWS_AS(GaussianProcess({.ard_steps = 10, .ard_prior_sd = 0.0}), std::invalid_argument);
  Eigen::VectorXd y2(2);
  y2 << 1.0, std::nan("");
  CHECK_THROWS_AS(gp.fit(X, y2), std::invalid_argument);
  gp.fit(X, y.head(2));
  CHECK_THROWS_AS(gp.predict(Eigen::MatrixXd::Zero(1, 2)), std::invalid_argument);
}
