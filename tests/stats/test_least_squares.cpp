// Levenberg-Marquardt and the curve models: each model's parameters recovered from noisy
// synthetic data.
#include <tunekit/core/random.hpp>
#include <tunekit/stats/curve_models.hpp>
#include <tunekit/stats/least_squares.hpp>

#include <boost/random/normal_distribution.hpp>
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace tunekit;

TEST_CASE("levenberg_marquardt solves a linear and a Rosenbrock least-squares problem") {
  // Rosenbrock as residuals (10 (y - x^2), 1 - x): minimum 0 at (1, 1), from the classic start.
  auto rosen = [](const Eigen::VectorXd& t) {
    Eigen::VectorXd r(2);
    r << 10 * (t[1] - t[0] * t[0]), 1 - t[0];
    return r;
  };
  Eigen::VectorXd start(2);
  start << -1.2, 1.0;
  const auto fit = stats::levenberg_marquardt(rosen, start);
  CHECK(fit.converged);
  CHECK(fit.parameters[0] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(fit.parameters[1] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(fit.sum_of_squares < 1e-12);
  CHECK_THROWS_AS(stats::levenberg_marquardt(rosen, start, {.max_iterations = 0}), std::invalid_argument);
  CHECK_THROWS_AS(stats::levenberg_marquardt(rosen, Eigen::VectorXd()), std::invalid_argument);
}

TEST_CASE("Levenberg-Marquardt recovers every curve model's parameters from noisy data") {
  // Parameters of an increasing, saturating curve over x = 1..60 for each model; noise N(0, 0.002)
  // (about 0.3% of the curves' range); start at the truth with every parameter moved by +-20%.
  // Tolerance: each parameter within 10% of the truth (relative), and the fit's RMS residual
  // within 20% of the noise level.
  const std::map<std::string, std::vector<double>> truth = {
      {"log_power", {0.8, std::log(5.0), -1.2}}, {"pow2", {0.1, 0.4}},
      {"pow3", {0.9, 0.6, 0.7}},                 {"pow4", {0.9, 0.5, 0.8, 0.9}},
      {"log_linear", {0.15, 0.2}},               {"ilog2", {0.9, 0.4}},
      {"exp4", {0.85, 0.3, -0.2, 0.8}},          {"janoschek", {0.85, 0.1, 0.05, 1.3}},
      {"weibull", {0.85, 0.1, 0.08, 1.5}},       {"mmf", {0.9, 0.05, 0.1, 1.8}}};
  REQUIRE(truth.size() == stats::curve_models.size());
  Rng rng(7);
  boost::random::normal_distribution<double> noise(0.0, 0.002);
  for (const auto& model : stats::curve_models) {
    CAPTURE(model.name);
    const auto& tv = truth.at(std::string(model.name));
    REQUIRE(tv.size() == model.parameters);
    const Eigen::VectorXd theta = Eigen::Map<const Eigen::VectorXd>(tv.data(), static_cast<Eigen::Index>(tv.size()));
    std::vector<double> x, y;
    for (int i = 1; i <= 60; ++i) {
      x.push_back(i);
      y.push_back(model.value(theta, i) + noise(rng));
    }
    Eigen::VectorXd start = theta;
    for (Eigen::Index j = 0; j < start.size(); ++j) start[j] *= j % 2 ? 0.8 : 1.2;
    const auto fit = stats::fit_curve(model, x, y, start);
    CHECK(std::isfinite(fit.sum_of_squares));
    CHECK(std::sqrt(fit.sum_of_squares / 60) < 1.2 * 0.002);
    for (Eigen::Index j = 0; j < theta.size(); ++j) {
      CAPTURE(j);
      CHECK(std::abs(fit.parameters[j] - theta[j]) <= 0.1 * std::abs(theta[j]));
    }
    // From the model's own starting point (no truth): a fit as good as the noise allows, so the
    // belief model can use it. Tolerance: RMS residual within 3x the noise.
    const auto guessed = stats::fit_curve(model, x, y);
    CHECK(std::sqrt(guessed.sum_of_squares / 60) < 3 * 0.002);
  }
  CHECK_THROWS_AS(stats::curve_model("nope"), std::invalid_argument);
  CHECK_THROWS_AS(stats::fit_curve(stats::pow3_curve, std::vector<double>{1, 2}, std::vector<double>{1}),
                  std::invalid_argument);
}
