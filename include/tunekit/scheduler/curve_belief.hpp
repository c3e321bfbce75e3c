#pragma once
/// \file
/// DynaTune's Bayesian belief model of a task's tuning curve (Zhang et al., ICLR 2021, section 4):
/// predicts the distribution of a task's best-so-far throughput after its next slot.
///
/// 1. The curve (best-so-far throughput per slot, normalised by the device's peak so that it lies
///    in [0, 1]) is cut into segments at jumps of more than 20% (stats/segmentation.hpp); only
///    the last segment is modelled.
/// 2. Every curve model of stats/curve_models.hpp with fewer parameters than the segment has
///    points is fitted by Levenberg-Marquardt; the one with the lowest BIC
///    (m log(S/m) + k log m) whose prediction for the next slot is finite and within [0, 1] wins.
/// 3. Goodman & Weare's ensemble sampler (stretch move, a = 2; 10 walkers, 500 steps, 300
///    burn-in), started in a small ball around the least-squares fit, samples the posterior of
///    the model's parameters and the noise sigma: Gaussian likelihood, flat priors, log sigma in
///    [-20, 0], the prediction for the next slot in [0, 1].
/// 4. The predictive samples f(theta, x_next) + sigma eps give the mean and std of the next
///    slot's value.
/// A segment of fewer than `min_points` points is extrapolated by its last step instead (a
/// normal with that step as mean increment and as std).

#include "tunekit/core/measurement.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/stats/curve_models.hpp"
#include "tunekit/stats/ensemble_sampler.hpp"
#include "tunekit/stats/least_squares.hpp"
#include "tunekit/stats/segmentation.hpp"

#include <boost/random/normal_distribution.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace tunekit {

/// Parameters of the belief model; fill with designated initialisers.
struct CurveBeliefParams {
  /// The ensemble sampler (DynaTune: 10 walkers, 500 steps, 300 burn-in; raised to twice the
  /// model's dimensions when a model has more).
  stats::EnsembleSamplerParams sampler{};
  stats::LevenbergMarquardtParams least_squares{.max_iterations = 100};
  /// A relative change above which a new segment starts.
  double jump = 0.2;
  /// Fewest points of the last segment that get a curve fit.
  std::size_t min_points = 3;
  /// Predictive samples drawn when the last step is extrapolated.
  std::size_t fallback_samples = 500;

  void validate() const {
    sampler.validate();
    least_squares.validate();
    if (!(jump > 0) || !std::isfinite(jump)) throw std::invalid_argument("CurveBeliefParams: jump must be positive");
    if (min_points < 3) throw std::invalid_argument("CurveBeliefParams: min_points must be at least 3");
    if (fallback_samples == 0) throw std::invalid_argument("CurveBeliefParams: fallback_samples must be at least 1");
  }
};

/// The belief about a task's next slot.
struct CurvePrediction {
  /// Mean and standard deviation of the normalised throughput after the next slot.
  double mean = 0.0;
  double std = 0.0;
  /// The curve model used ("last_step" for the extrapolation of the last step).
  std::string_view model{};
  /// The predictive samples.
  std::vector<double> samples{};
};

/// Predicts the normalised best-so-far throughput after the next slot from its values after each
/// slot so far (y: at least one value, each in [0, 1]).
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
CurvePrediction predict_next_slot(std::span<const double> y, const CurveBeliefParams& params, Rng& rng) {
  params.validate();
  if (y.empty()) throw std::invalid_argument("predict_next_slot: y is empty");
  for (double v : y)
    if (!std::isfinite(v) || v < 0) throw std::invalid_argument("predict_next_slot: y must be finite and >= 0");
  const std::size_t n = y.size();
  const std::size_t s = stats::segment_starts(y, params.jump).back();
  const std::span<const double> seg = y.subspan(s);
  std::vector<double> x(seg.size());
  for (std::size_t i = 0; i < seg.size(); ++i) x[i] = static_cast<double>(i + 1);
  const double x_next = static_cast<double>(n - s + 1);
  boost::random::normal_distribution<double> normal(0.0, 1.0);

  auto summarise = [](CurvePrediction p) {
    p.mean = stats::mean(p.samples);
    p.std = stats::stddev(p.samples);
    return p;
  };
  auto last_step = [&] {
    CurvePrediction p;
    p.model = "last_step";
    const double step = n >= 2 ? y[n - 1] - y[n - 2] : 0.0;
    const double sd = std::max(std::abs(step), 1e-3 * y[n - 1] + 1e-12);
    for (std::size_t i = 0; i < params.fallback_samples; ++i)
      p.samples.push_back(y[n - 1] + std::max(step, 0.0) + sd * normal(rng));
    return summarise(std::move(p));
  };
  if (seg.size() < params.min_points) return last_step();

  const auto m = static_cast<double>(seg.size());
  const stats::CurveModel* best = nullptr;
  stats::LeastSquaresResult best_fit;
  double best_bic = std::numeric_limits<double>::infinity();
  for (const auto& model : stats::curve_models) {
    if (model.parameters >= seg.size()) continue;
    auto fit = stats::fit_curve(model, x, seg, {}, params.least_squares);
    if (!std::isfinite(fit.sum_of_squares)) continue;
    const double next = model.value(fit.parameters, x_next);
    if (!std::isfinite(next) || next < 0 || next > 1) continue;
    const double bic = m * std::log(std::max(fit.sum_of_squares / m, 1e-300)) +
                       static_cast<double>(model.parameters) * std::log(m);
    if (bic < best_bic) {
      best_bic = bic;
      best = &model;
      best_fit = std::move(fit);
    }
  }
  if (!best) return last_step();

  const auto k = static_cast<Eigen::Index>(best->parameters);
  auto log_prob = [&](const Eigen::VectorXd& v) {
    const double log_sigma = v[k];
    if (!(log_sigma >= -20.0 && log_sigma <= 0.0)) return -std::numeric_limits<double>::infinity();
    const Eigen::VectorXd theta = v.head(k);
    const double next = best->value(theta, x_next);
    if (!std::isfinite(next) || next < 0 || next > 1) return -std::numeric_limits<double>::infinity();
    double ss = 0.0;
    for (std::size_t i = 0; i < seg.size(); ++i) {
      const double r = best->value(theta, x[i]) - seg[i];
      ss += r * r;
    }
    if (!std::isfinite(ss)) return -std::numeric_limits<double>::infinity();
    return -m * log_sigma - ss / (2.0 * std::exp(2.0 * log_sigma));
  };
  stats::EnsembleSamplerParams sp = params.sampler;
  sp.walkers = std::max<std::size_t>(sp.walkers, 2 * static_cast<std::size_t>(k + 1));
  Eigen::VectorXd centre(k + 1);
  centre.head(k) = best_fit.parameters;
  centre[k] = std::clamp(std::log(std::sqrt(best_fit.sum_of_squares / m) + 1e-8), -19.0, -0.5);
  Eigen::MatrixXd initial(static_cast<Eigen::Index>(sp.walkers), k + 1);
  for (Eigen::Index w = 0; w < initial.rows(); ++w) {
    Eigen::VectorXd v = centre;
    for (int attempt = 0; attempt < 100; ++attempt) {
      for (Eigen::Index j = 0; j <= k; ++j)
        v[j] = centre[j] + (j < k ? 1e-3 * (std::abs(centre[j]) + 1e-6) : 0.05) * normal(rng);
      if (std::isfinite(log_prob(v))) break;
      v = centre;
    }
    initial.row(w) = v.transpose();
  }
  if (!std::isfinite(log_prob(centre))) return last_step();
  stats::EnsembleSamples chain;
  try {
    chain = stats::ensemble_sample(log_prob, initial, sp, rng);
  } catch (const std::invalid_argument&) {
    return last_step();
  }
  CurvePrediction p;
  p.model = best->name;
  p.samples.reserve(static_cast<std::size_t>(chain.samples.rows()));
  for (Eigen::Index r = 0; r < chain.samples.rows(); ++r) {
    const Eigen::VectorXd v = chain.samples.row(r).transpose();
    p.samples.push_back(best->value(v.head(k), x_next) + std::exp(v[k]) * normal(rng));
  }
  return summarise(std::move(p));
}

}  // namespace tunekit
