#pragma once
/// \file
/// Non-linear least squares by Levenberg-Marquardt (Levenberg 1944, Marquardt 1963) on Eigen.
///
/// Minimises S(theta) = sum_i r_i(theta)^2. Each iteration solves
/// (J^T J + lambda diag(J^T J)) delta = -J^T r (Marquardt's scaling, so the step does not depend
/// on the parameters' units) with a forward-difference Jacobian; a step that lowers S is taken and
/// lambda divided by 10, otherwise lambda is multiplied by 10 and the step retried.

#include "tunekit/stats/curve_models.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace tunekit::stats {

/// Parameters of levenberg_marquardt; fill with designated initialisers.
struct LevenbergMarquardtParams {
  std::size_t max_iterations = 200;
  /// The damping lambda of the first iteration.
  double initial_damping = 1e-3;
  /// Converged when a taken step lowers S by less than this fraction of S (or S is below
  /// `tolerance^2`), or the step is smaller than `tolerance` times the parameters' norm.
  double tolerance = 1e-10;
  /// Forward-difference step of the Jacobian, relative to max(|theta_j|, 1).
  double jacobian_step = 1e-7;

  void validate() const {
    if (max_iterations == 0)
      throw std::invalid_argument("LevenbergMarquardtParams: max_iterations must be at least 1");
    if (!(initial_damping > 0) || !std::isfinite(initial_damping))
      throw std::invalid_argument("LevenbergMarquardtParams: initial_damping must be positive");
    if (!(tolerance > 0)) throw std::invalid_argument("LevenbergMarquardtParams: tolerance must be positive");
    if (!(jacobian_step > 0) || jacobian_step > 0.1)
      throw std::invalid_argument("LevenbergMarquardtParams: jacobian_step must be in (0, 0.1]");
  }
};

/// What levenberg_marquardt returns.
struct LeastSquaresResult {
  Eigen::VectorXd parameters{};
  /// S at `parameters` (infinity when no finite value was ever found).
  double sum_of_squares = std::numeric_limits<double>::infinity();
  std::size_t iterations = 0;
  bool converged = false;
};

/// Minimises the sum of squares of `residuals(theta)` (a callable returning Eigen::VectorXd of
/// a fixed length) from `start`. Non-finite residuals count as an infinite S, so a step into a
/// region where the model is undefined is rejected.
template <class Residuals>
LeastSquaresResult levenberg_marquardt(Residuals&& residuals, Eigen::VectorXd start,
                                       const LevenbergMarquardtParams& params = {}) {
  params.validate();
  if (start.size() == 0) throw std::invalid_argument("levenberg_marquardt: start has no parameters");
  auto sum_sq = [](const Eigen::VectorXd& r) {
    const double s = r.squaredNorm();
    return std::isfinite(s) ? s : std::numeric_limits<double>::infinity();
  };
  LeastSquaresResult out;
  out.parameters = std::move(start);
  Eigen::VectorXd r = residuals(out.parameters);
  out.sum_of_squares = sum_sq(r);
  if (!std::isfinite(out.sum_of_squares)) return out;
  const Eigen::Index p = out.parameters.size(), n = r.size();
  double lambda = params.initial_damping;
  Eigen::MatrixXd jac(n, p);
  for (; out.iterations < params.max_iterations; ++out.iterations) {
    if (out.sum_of_squares < params.tolerance * params.tolerance) {
      out.converged = true;
      break;
    }
    bool jacobian_ok = true;
    for (Eigen::Index j = 0; j < p; ++j) {
      Eigen::VectorXd t = out.parameters;
      const double h = params.jacobian_step * std::max(std::abs(t[j]), 1.0);
      t[j] += h;
      jac.col(j) = (residuals(t) - r) / h;
      jacobian_ok = jacobian_ok && jac.col(j).allFinite();
    }
    if (!jacobian_ok) break;
    const Eigen::MatrixXd jtj = jac.transpose() * jac;
    const Eigen::VectorXd g = jac.transpose() * r;
    Eigen::VectorXd scale = jtj.diagonal().cwiseMax(1e-12 * std::max(jtj.diagonal().maxCoeff(), 1e-300));
    bool stepped = false;
    while (lambda < 1e16) {
      Eigen::MatrixXd a = jtj;
      a.diagonal() += lambda * scale;
      const Eigen::VectorXd delta = a.ldlt().solve(-g);
      if (!delta.allFinite()) {
        lambda *= 10;
        continue;
      }
      const Eigen::VectorXd trial = out.parameters + delta;
      Eigen::VectorXd r_trial = residuals(trial);
      const double s = sum_sq(r_trial);
      if (s < out.sum_of_squares) {
        const double gain = out.sum_of_squares - s;
        const bool small = gain <= params.tolerance * out.sum_of_squares ||
                           delta.norm() <= params.tolerance * (out.parameters.norm() + params.tolerance);
        out.parameters = trial;
        out.sum_of_squares = s;
        r = std::move(r_trial);
        lambda = std::max(lambda / 10, 1e-12);
        stepped = true;
        if (small) out.converged = true;
        break;
      }
      lambda *= 10;
    }
    if (!stepped) {
      // No step lowers S at any damping: a (local) minimum to working precision.
      out.converged = true;
      break;
    }
    if (out.converged) {
      ++out.iterations;
      break;
    }
  }
  return out;
}

/// Fits a curve model to points (x, y) by least squares from `start` (the model's initial guess
/// from the data when empty).
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
LeastSquaresResult fit_curve(const CurveModel& model, std::span<const double> x,
                             std::span<const double> y, Eigen::VectorXd start = {},
                             const LevenbergMarquardtParams& params = {}) {
  if (x.size() != y.size()) throw std::invalid_argument("fit_curve: x and y differ in length");
  if (x.empty()) throw std::invalid_argument("fit_curve: no data points");
  if (start.size() == 0) start = model.initial_guess(x, y);
  if (static_cast<std::size_t>(start.size()) != model.parameters)
    throw std::invalid_argument("fit_curve: start has " + std::to_string(start.size()) + " parameters, " +
                                std::string(model.name) + " takes " + std::to_string(model.parameters));
  auto residuals = [&](const Eigen::VectorXd& t) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i) r[static_cast<Eigen::Index>(i)] = model.value(t, x[i]) - y[i];
    return r;
  };
  return levenberg_marquardt(residuals, std::move(start), params);
}

}  // namespace tunekit::stats
