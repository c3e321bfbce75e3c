#pragma once
/// \file
/// Goodman & Weare's affine-invariant ensemble sampler (Comm. App. Math. Comp. Sci. 5(1), 2010),
/// the stretch move: to update walker X_k, draw another walker X_j (j != k) and
/// z ~ g(z) proportional to 1/sqrt(z) on [1/a, a]; propose Y = X_j + z (X_k - X_j) and accept
/// with probability min(1, z^(d-1) p(Y) / p(X_k)). The walkers are updated one after another,
/// each against the current positions of the others (the serial form of the paper).

#include "tunekit/core/random.hpp"

#include <Eigen/Core>

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace tunekit::stats {

/// Parameters of ensemble_sample; fill with designated initialisers. Defaults: DynaTune's
/// (10 walkers, 500 steps, 300 of them burn-in; stretch scale a = 2).
struct EnsembleSamplerParams {
  std::size_t walkers = 10;
  std::size_t steps = 500;
  /// Steps discarded at the start.
  std::size_t burn_in = 300;
  /// The stretch scale a > 1.
  double stretch = 2.0;

  void validate() const {
    if (walkers < 2) throw std::invalid_argument("EnsembleSamplerParams: walkers must be at least 2");
    if (steps <= burn_in) throw std::invalid_argument("EnsembleSamplerParams: steps must exceed burn_in");
    if (!(stretch > 1) || !std::isfinite(stretch))
      throw std::invalid_argument("EnsembleSamplerParams: stretch must be finite and > 1");
  }
};

/// The draws after burn-in: row s * walkers + k is walker k after step burn_in + s.
struct EnsembleSamples {
  Eigen::MatrixXd samples{};
  /// log p of each row of samples.
  Eigen::VectorXd log_prob{};
  /// Accepted proposals / all proposals, burn-in included.
  double acceptance_fraction = 0.0;
};

/// Samples the density exp(log_prob(theta)) (unnormalised; -infinity outside its support) with
/// the stretch move, from `initial` (one walker per row, each with a finite log probability).
/// Needs at least as many walkers as 2 x dimensions, as emcee does, so the ensemble spans the
/// space.
template <class LogProb>
EnsembleSamples ensemble_sample(LogProb&& log_prob, const Eigen::MatrixXd& initial,
                                const EnsembleSamplerParams& params, Rng& rng) {
  params.validate();
  const auto walkers = static_cast<Eigen::Index>(params.walkers);
  const Eigen::Index dim = initial.cols();
  if (initial.rows() != walkers)
    throw std::invalid_argument("ensemble_sample: initial has " + std::to_string(initial.rows()) +
                                " rows, walkers is " + std::to_string(walkers));
  if (dim == 0) throw std::invalid_argument("ensemble_sample: initial has no columns (dimensions)");
  if (walkers < 2 * dim)
    throw std::invalid_argument("ensemble_sample: walkers must be at least twice the dimensions (" +
                                std::to_string(2 * dim) + ")");
  Eigen::MatrixXd x = initial;
  Eigen::VectorXd lp(walkers);
  for (Eigen::Index k = 0; k < walkers; ++k) {
    lp[k] = log_prob(Eigen::VectorXd(x.row(k).transpose()));
    if (!std::isfinite(lp[k]))
      throw std::invalid_argument("ensemble_sample: initial walker " + std::to_string(k) +
                                  " has no finite log probability");
  }
  const auto kept = static_cast<Eigen::Index>(params.steps - params.burn_in);
  EnsembleSamples out;
  out.samples.resize(kept * walkers, dim);
  out.log_prob.resize(kept * walkers);
  const double a = params.stretch;
  std::size_t accepted = 0;
  for (std::size_t step = 0; step < params.steps; ++step) {
    for (Eigen::Index k = 0; k < walkers; ++k) {
      auto j = static_cast<Eigen::Index>(uniform_index(rng, static_cast<std::uint64_t>(walkers - 1)));
      if (j >= k) ++j;
      // Inverse CDF of g(z) ~ 1/sqrt(z) on [1/a, a].
      const double u = uniform_real(rng);
      const double z = std::pow((a - 1.0) * u + 1.0, 2) / a;
      const Eigen::VectorXd y = x.row(j).transpose() + z * (x.row(k) - x.row(j)).transpose();
      const double lp_y = log_prob(y);
      const double log_ratio = static_cast<double>(dim - 1) * std::log(z) + lp_y - lp[k];
      if (std::isfinite(lp_y) && std::log(uniform_real(rng)) < log_ratio) {
        x.row(k) = y.transpose();
        lp[k] = lp_y;
        ++accepted;
      }
    }
    if (step >= params.burn_in) {
      const auto s = static_cast<Eigen::Index>(step - params.burn_in);
      out.samples.middleRows(s * walkers, walkers) = x;
      out.log_prob.segment(s * walkers, walkers) = lp;
    }
  }
  out.acceptance_fraction = static_cast<double>(accepted) / static_cast<double>(params.steps * params.walkers);
  return out;
}

}  // namespace tunekit::stats
