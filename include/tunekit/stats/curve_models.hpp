#pragma once
/// \file
/// Parametric learning curves: the shapes DynaTune's belief model fits to a task's best-so-far
/// throughput (after Domhan, Springenberg & Hutter 2015, "Speeding up automatic hyperparameter
/// optimization of deep neural networks by extrapolation of learning curves").
///
/// Each model is y = f(x; theta) for x >= 1 (x: the slot or step number), with a starting point
/// for least squares taken from the data.

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tunekit::stats {

/// One parametric curve family.
struct CurveModel {
  std::string_view name{};
  /// The formula, for documentation and messages.
  std::string_view formula{};
  std::size_t parameters{};
  /// f(x; theta); theta has `parameters` entries.
  double (*value)(const Eigen::VectorXd& theta, double x);
  /// A starting point for least squares from data points (x ascending, y), at least one.
  Eigen::VectorXd (*initial_guess)(std::span<const double> x, std::span<const double> y);
};

namespace detail {
inline double curve_y_first(std::span<const double> y) { return y.front(); }
inline double curve_y_last(std::span<const double> y) { return y.back(); }
inline double curve_ceiling(std::span<const double> y) {
  const double hi = *std::max_element(y.begin(), y.end());
  return hi + 0.05 * std::abs(hi) + 1e-12;
}
inline double curve_x_mid(std::span<const double> x) { return 0.5 * (x.front() + x.back()); }
inline Eigen::VectorXd curve_vec(std::initializer_list<double> v) {
  Eigen::VectorXd t(static_cast<Eigen::Index>(v.size()));
  Eigen::Index i = 0;
  for (double a : v) t[i++] = a;
  return t;
}
}  // namespace detail

/// log power: a / (1 + (x / e^b)^c); increasing and saturating at a when c < 0.
inline constexpr CurveModel log_power_curve{
    "log_power", "a / (1 + (x / exp(b))^c)", 3,
    [](const Eigen::VectorXd& t, double x) { return t[0] / (1.0 + std::pow(x / std::exp(t[1]), t[2])); },
    [](std::span<const double> x, std::span<const double> y) {
      return detail::curve_vec({detail::curve_ceiling(y), std::log(std::max(detail::curve_x_mid(x), 1.0)), -1.0});
    }};

/// pow2: a x^alpha (power growth, two parameters).
inline constexpr CurveModel pow2_curve{
    "pow2", "a * x^alpha", 2, [](const Eigen::VectorXd& t, double x) { return t[0] * std::pow(x, t[1]); },
    [](std::span<const double> x, std::span<const double> y) {
      const double y0 = std::max(std::abs(detail::curve_y_first(y)), 1e-12);
      const double y1 = std::max(std::abs(detail::curve_y_last(y)), 1e-12);
      const double alpha = x.back() > x.front() ? std::log(y1 / y0) / std::log(x.back() / x.front()) : 0.1;
      return detail::curve_vec({y0 / std::pow(x.front(), alpha), alpha});
    }};

/// pow3: c - a x^(-alpha); saturates at c.
inline constexpr CurveModel pow3_curve{
    "pow3", "c - a * x^(-alpha)", 3,
    [](const Eigen::VectorXd& t, double x) { return t[0] - t[1] * std::pow(x, -t[2]); },
    [](std::span<const double>, std::span<const double> y) {
      const double c = detail::curve_ceiling(y);
      return detail::curve_vec({c, c - detail::curve_y_first(y), 0.5});
    }};

/// pow4: c - (a x + b)^(-alpha); saturates at c.
inline constexpr CurveModel pow4_curve{
    "pow4", "c - (a * x + b)^(-alpha)", 4,
    [](const Eigen::VectorXd& t, double x) { return t[0] - std::pow(t[1] * x + t[2], -t[3]); },
    [](std::span<const double>, std::span<const double> y) {
      const double c = detail::curve_ceiling(y);
      const double gap = std::max(c - detail::curve_y_first(y), 1e-12);
      // (a + b)^(-1) = gap at x = 1 with alpha = 1, a = b.
      return detail::curve_vec({c, 0.5 / gap, 0.5 / gap, 1.0});
    }};

/// log-linear: a log(x) + b.
inline constexpr CurveModel log_linear_curve{
    "log_linear", "a * log(x) + b", 2,
    [](const Eigen::VectorXd& t, double x) { return t[0] * std::log(x) + t[1]; },
    [](std::span<const double> x, std::span<const double> y) {
      const double lx = std::log(x.back()) - std::log(x.front());
      const double a = lx > 0 ? (y.back() - y.front()) / lx : 0.0;
      return detail::curve_vec({a, y.front() - a * std::log(x.front())});
    }};

/// ilog2: c - a / log(x + 1); saturates at c (x + 1 keeps x = 1 finite).
inline constexpr CurveModel ilog2_curve{
    "ilog2", "c - a / log(x + 1)", 2,
    [](const Eigen::VectorXd& t, double x) { return t[0] - t[1] / std::log(x + 1.0); },
    [](std::span<const double>, std::span<const double> y) {
      const double c = detail::curve_ceiling(y);
      return detail::curve_vec({c, (c - detail::curve_y_first(y)) * std::log(2.0)});
    }};

/// exp4: c - exp(-a x^alpha + b); saturates at c.
inline constexpr CurveModel exp4_curve{
    "exp4", "c - exp(-a * x^alpha + b)", 4,
    [](const Eigen::VectorXd& t, double x) { return t[0] - std::exp(-t[1] * std::pow(x, t[3]) + t[2]); },
    [](std::span<const double> x, std::span<const double> y) {
      const double c = detail::curve_ceiling(y);
      const double a = 1.0 / std::max(detail::curve_x_mid(x), 1.0);
      return detail::curve_vec({c, a, std::log(std::max(c - detail::curve_y_first(y), 1e-12)) + a, 1.0});
    }};

/// Janoschek: a - (a - beta) exp(-k x^delta); rises from beta to a.
inline constexpr CurveModel janoschek_curve{
    "janoschek", "a - (a - beta) * exp(-k * x^delta)", 4,
    [](const Eigen::VectorXd& t, double x) { return t[0] - (t[0] - t[1]) * std::exp(-t[2] * std::pow(x, t[3])); },
    [](std::span<const double> x, std::span<const double> y) {
      return detail::curve_vec({detail::curve_ceiling(y), detail::curve_y_first(y),
                                1.0 / std::max(detail::curve_x_mid(x), 1.0), 1.0});
    }};

/// Weibull: alpha - (alpha - beta) exp(-(kappa x)^delta); rises from beta to alpha.
inline constexpr CurveModel weibull_curve{
    "weibull", "alpha - (alpha - beta) * exp(-(kappa * x)^delta)", 4,
    [](const Eigen::VectorXd& t, double x) {
      return t[0] - (t[0] - t[1]) * std::exp(-std::pow(t[2] * x, t[3]));
    },
    [](std::span<const double> x, std::span<const double> y) {
      return detail::curve_vec({detail::curve_ceiling(y), detail::curve_y_first(y),
                                1.0 / std::max(detail::curve_x_mid(x), 1.0), 1.0});
    }};

/// MMF (Morgan-Mercer-Flodin): alpha - (alpha - beta) / (1 + (kappa x)^delta).
inline constexpr CurveModel mmf_curve{
    "mmf", "alpha - (alpha - beta) / (1 + (kappa * x)^delta)", 4,
    [](const Eigen::VectorXd& t, double x) {
      return t[0] - (t[0] - t[1]) / (1.0 + std::pow(t[2] * x, t[3]));
    },
    [](std::span<const double> x, std::span<const double> y) {
      return detail::curve_vec({detail::curve_ceiling(y), detail::curve_y_first(y),
                                1.0 / std::max(detail::curve_x_mid(x), 1.0), 1.0});
    }};

/// Every shipped curve model, in the order DynaTune lists them first (log power, pow2, pow3,
/// pow4, log-linear), then Domhan et al.'s further saturating families.
inline constexpr std::array<CurveModel, 10> curve_models{log_power_curve, pow2_curve,     pow3_curve,
                                                        pow4_curve,      log_linear_curve, ilog2_curve,
                                                        exp4_curve,      janoschek_curve, weibull_curve,
                                                        mmf_curve};

/// The curve model of this name; throws std::invalid_argument naming it when there is none.
inline const CurveModel& curve_model(std::string_view name) {
  for (const auto& m : curve_models)
    if (m.name == name) return m;
  throw std::invalid_argument("curve_model: no curve model named '" + std::string(name) + "'");
}

}  // namespace tunekit::stats
