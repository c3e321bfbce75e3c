#pragma once
/// \file
/// GaussianProcess: Gaussian-process regression with a squared-exponential kernel whose length
/// scale is chosen by the marginal likelihood (Rasmussen & Williams, Gaussian Processes for
/// Machine Learning, 2006, algorithm 2.1 and eq. 5.8): an UncertainSurrogate, for expected
/// improvement and the other acquisitions of the predictive standard deviation. Exact: a fit
/// costs O(n^3) per length scale tried, so it suits the small histories of early tuning (a few
/// hundred configs), not AutoTVM's thousands.

#include "tunekit/concepts/surrogate.hpp"
#include "tunekit/core/deferred.hpp"
#include "tunekit/core/random.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit {

/// Parameters of GaussianProcess.
struct GaussianProcessParams {
  /// The length scales tried, in units of the root mean square per-feature distance: the kernel
  /// is exp(-||a - b||^2 / (2 l^2 p)) for p features, so with features in [0, 1], l = 0.2 means
  /// that two configs 0.2 apart in every feature are one length scale apart. The one of largest
  /// marginal likelihood is used.
  std::vector<double> length_scales{0.1, 0.2, 0.4, 0.8, 1.6};
  /// Noise variance added to the kernel's diagonal, relative to the targets' variance (the
  /// targets are standardised before the fit).
  double noise = 1e-2;
  /// Automatic relevance determination (0: off, one length scale for every feature): after the
  /// length scale above is chosen, up to `ard_steps` steps of gradient ascent on the log marginal
  /// likelihood plus a log-normal prior give each feature a length scale of its own, so that the
  /// features the targets do not depend on stop counting in the distance (Rasmussen & Williams,
  /// section 5.1). The prior, centred on the common length scale with `ard_prior_sd` the standard
  /// deviation of each log length scale, keeps a fit on a few points from running off.
  std::size_t ard_steps = 0;
  double ard_prior_sd = 1.0;

  void validate() const {
    if (length_scales.empty()) throw std::invalid_argument("GaussianProcessParams: no length scale to try");
    for (double l : length_scales)
      if (!(l > 0) || !std::isfinite(l))
        throw std::invalid_argument("GaussianProcessParams: length scales must be positive and finite");
    if (!(noise > 0) || !std::isfinite(noise))
      throw std::invalid_argument("GaussianProcessParams: noise must be positive and finite");
    if (!(ard_prior_sd > 0) || !std::isfinite(ard_prior_sd))
      throw std::invalid_argument("GaussianProcessParams: ard_prior_sd must be positive and finite");
  }
};

namespace detail {

/// Gaussian-process regression, zero mean on standardised targets:
///     k(a, b) = exp(-sum_j (a_j - b_j)^2 / (2 l_j^2 p)),   K = k(X, X) + noise I,
///     mean(x) = k(x, X) K^-1 y,   var(x) = k(x, x) - k(x, X) K^-1 k(X, x)   (latent function),
/// mapped back to the targets' units, for p features. `fit` tries every length scale of the
/// parameters as the common l_j = l and keeps the one of largest log marginal likelihood
///     L = -y'K^-1 y / 2 - log|K| / 2 - n log(2 pi) / 2;
/// with ARD (GaussianProcessParams::ard_steps) it then ascends L - sum_j (log l_j - log l)^2 /
/// (2 ard_prior_sd^2) from there, by the gradient dL/dt_j = tr((a a' - K^-1) dK/dt_j) / 2 in
/// t_j = -log(l_j^2 p) (a = K^-1 y) with a backtracking step. A fit costs O(n^3) per length scale
/// or step (a Cholesky factorisation), a prediction O(n^2).
template <class Lazy = void>
class GaussianProcessImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;
  using VectorXd = Deferred<Eigen::VectorXd, Lazy>;
  using RowVectorXd = Deferred<Eigen::RowVectorXd, Lazy>;

 public:
  GaussianProcessImpl() = default;
  explicit GaussianProcessImpl(GaussianProcessParams params) : params_(std::move(params)) { params_.validate(); }

  const GaussianProcessParams& params() const noexcept { return params_; }

  /// Fits the model on the rows of X (features) and targets y.
  void fit(const MatrixXd& X, const VectorXd& y) { fit_from(X, y, VectorXd(), 0); }
  /// Fits as fit(X, y), with the ARD ascent started from an earlier fit: from the log kernel
  /// weights `warm` (the log_weights() of a fit on the same features) for at most `warm_steps`
  /// steps, its prior still centred on this fit's common length scale. A model refitted each round
  /// on one more point moves its length scales little, so a few steps from the last ones cost a
  /// fraction of ard_steps from the common one. An empty `warm`, or one at which the kernel matrix
  /// is not positive definite, starts the ascent from the common length scale (ard_steps steps);
  /// without ARD it is fit(X, y).
  void fit_from(const MatrixXd& X, const VectorXd& y, const VectorXd& warm,
                std::size_t warm_steps) {
    if (X.rows() != y.size())
      throw std::invalid_argument("GaussianProcess::fit: " + std::to_string(X.rows()) + " rows of features for " +
                                  std::to_string(y.size()) + " targets");
    if (X.rows() == 0) throw std::invalid_argument("GaussianProcess::fit: no data");
    if (!X.allFinite() || !y.allFinite()) throw std::invalid_argument("GaussianProcess::fit: non-finite data");
    if (warm.size() != 0 && (warm.size() != X.cols() || !warm.allFinite()))
      throw std::invalid_argument("GaussianProcess::fit_from: warm needs one finite log weight per feature (" +
                                  std::to_string(warm.size()) + " for " + std::to_string(X.cols()) + " features)");
    X_ = X;
    const auto n = static_cast<double>(y.size());
    y_mean_ = y.mean();
    const double var = (y.array() - y_mean_).square().sum() / n;
    y_scale_ = var > 0 ? std::sqrt(var) : 1.0;
    const VectorXd z = (y.array() - y_mean_) / y_scale_;
    const Eigen::Index p = X_.cols();
    log_likelihood_ = -std::numeric_limits<double>::infinity();
    Fit best;
    const MatrixXd d2 = squared_distances(X_, X_);
    for (double l : params_.length_scales) {
      Fit f;
      f.theta = VectorXd::Constant(p, -std::log(l * l * features()));
      if (!factor((d2 * (-0.5 / (l * l * features()))).array().exp().matrix(), z, false, f)) continue;
      if (f.lml > best.lml) {
        best = std::move(f);
        length_scale_ = l;
      }
    }
    if (!std::isfinite(best.lml))
      throw std::runtime_error("GaussianProcess::fit: the kernel matrix is not positive definite");
    ard_ = params_.ard_steps > 0 && p > 0;
    if (ard_) {
      const VectorXd centre = best.theta;
      std::size_t steps = params_.ard_steps;
      if (Fit w; warm.size() != 0 && evaluate(warm, z, true, w)) {
        best = std::move(w);
        steps = warm_steps;
      }
      best = ascend(std::move(best), z, centre, steps);
    }
    log_likelihood_ = best.lml;
    inv_scale_ = (0.5 * best.theta.array()).exp().matrix();
    llt_ = std::move(best.llt);
    alpha_ = std::move(best.alpha);
  }
  /// The Surrogate form (the fit is deterministic: the generator is not used).
  void fit(const MatrixXd& X, const VectorXd& y, Rng&) { fit(X, y); }

  /// Predictive mean and standard deviation (of the latent function, in the targets' units).
  void predict(const MatrixXd& X, VectorXd& mean, VectorXd& sd) const {
    check_fitted(X);
    const MatrixXd Ks = cross_kernel(X);  // n x m
    mean = (Ks.transpose() * alpha_).array() * y_scale_ + y_mean_;
    const MatrixXd v = llt_.matrixL().solve(Ks);
    sd = (1.0 - v.colwise().squaredNorm().array()).max(0.0).sqrt().matrix().transpose() * y_scale_;
  }
  VectorXd predict(const MatrixXd& X) const {
    check_fitted(X);
    return (cross_kernel(X).transpose() * alpha_).array() * y_scale_ + y_mean_;
  }

  /// The kernel k(a, b) at the fitted length scales, in [0, 1].
  double kernel(const Eigen::Ref<const RowVectorXd>& a, const Eigen::Ref<const RowVectorXd>& b) const {
    if (!ard_) return std::exp(-0.5 * (a - b).squaredNorm() / (length_scale_ * length_scale_ * features()));
    return std::exp(-0.5 * (a - b).cwiseProduct(inv_scale_.transpose()).squaredNorm());
  }
  /// The common length scale the fit chose (from the parameters' list), and the log marginal
  /// likelihood of the fitted model.
  double length_scale() const noexcept { return length_scale_; }
  double log_marginal_likelihood() const noexcept { return log_likelihood_; }
  /// Each feature's length scale l_j (all the common one without ARD).
  VectorXd length_scales() const {
    return (inv_scale_.array() * std::sqrt(features())).inverse().matrix();
  }
  bool fitted() const noexcept { return X_.rows() > 0; }
  /// The fitted log kernel weights t_j = -log(l_j^2 p), one per feature (the `warm` of fit_from).
  VectorXd log_weights() const { return (2.0 * inv_scale_.array().log()).matrix(); }

 private:
  // A fit at log kernel weights theta (t_j = -2 log l_j - log p: k = exp(-sum_j e^t_j d_j^2 / 2)).
  struct Fit {
    VectorXd theta{};
    // The empty matrix's factor, not Eigen's default: that leaves its info unset, and moving or
    // copying it reads the unset value (undefined behaviour, UBSan's report).
    Eigen::LLT<MatrixXd> llt{MatrixXd(0, 0)};
    VectorXd alpha{};
    double lml = -std::numeric_limits<double>::infinity();
    VectorXd grad{};  // of lml, when asked for
  };

  // The fit at log weights theta; false when the kernel matrix is not positive definite.
  bool evaluate(const VectorXd& theta, const VectorXd& z, bool gradient, Fit& f) const {
    f.theta = theta;
    return factor(scaled_kernel(X_, X_, (0.5 * theta.array()).exp().matrix()), z, gradient, f);
  }
  // The fit with the noise-free kernel matrix Kf at f.theta.
  bool factor(const MatrixXd& Kf, const VectorXd& z, bool gradient, Fit& f) const {
    MatrixXd K = Kf;
    K.diagonal().array() += params_.noise;
    f.llt.compute(K);
    if (f.llt.info() != Eigen::Success) return false;
    f.alpha = f.llt.solve(z);
    const auto n = static_cast<double>(z.size());
    f.lml = -0.5 * z.dot(f.alpha) - f.llt.matrixLLT().diagonal().array().log().sum() -
            0.5 * n * std::log(2.0 * std::numbers::pi);
    if (gradient) {
      // dK/dt_j = -w_j D_j o Kf / 2 (D_j: the squared differences of feature j), so with
      // M = (a a' - K^-1) o Kf, r = M 1 and G = M X:
      // dL/dt_j = -w_j (sum_a X_aj^2 r_a - sum_a X_aj G_aj) / 2.
      const MatrixXd M =
          (f.alpha * f.alpha.transpose() - f.llt.solve(MatrixXd::Identity(K.rows(), K.cols()))).cwiseProduct(Kf);
      const VectorXd r = M.rowwise().sum();
      const MatrixXd G = M * X_;
      const VectorXd s =
          (X_.array().square().colwise() * r.array()).colwise().sum() - (X_.array() * G.array()).colwise().sum();
      f.grad = -0.5 * f.theta.array().exp().matrix().cwiseProduct(s);
    }
    return true;
  }

  // ARD: at most `steps` steps of gradient ascent on the log marginal likelihood plus the prior
  // centred on `centre` (the common length scale's log weights), from `start` (its gradient
  // computed here unless it has one already); each step moves no log weight by more than its step
  // size, which doubles after a step that gains and is quartered after one that does not.
  Fit ascend(Fit start, const VectorXd& z, const VectorXd& centre, std::size_t steps) const {
    const double prior_var = 4.0 * params_.ard_prior_sd * params_.ard_prior_sd;  // t_j = -2 log l_j + c
    auto objective = [&](const Fit& f) { return f.lml - 0.5 * (f.theta - centre).squaredNorm() / prior_var; };
    auto gradient = [&](const Fit& f) { return VectorXd(f.grad - (f.theta - centre) / prior_var); };
    Fit best = std::move(start);
    if (best.grad.size() == 0) evaluate(best.theta, z, true, best);
    double best_obj = objective(best), step = 0.5;
    for (std::size_t i = 0; i < steps && step > 1e-4; ++i) {
      const VectorXd g = gradient(best);
      const double g_max = g.cwiseAbs().maxCoeff();
      if (!(g_max > 1e-9)) break;
      Fit f;
      if (evaluate(best.theta + (step / g_max) * g, z, true, f) && objective(f) > best_obj) {
        best_obj = objective(f);
        best = std::move(f);
        step = std::min(2.0 * step, 2.0);
      } else {
        step *= 0.25;
      }
    }
    return best;
  }

  double features() const { return static_cast<double>(std::max<Eigen::Index>(1, X_.cols())); }
  static MatrixXd squared_distances(const MatrixXd& A, const MatrixXd& B) {
    const VectorXd a2 = A.rowwise().squaredNorm(), b2 = B.rowwise().squaredNorm();
    MatrixXd d2 = (-2.0 * A * B.transpose()).colwise() + a2;
    d2.rowwise() += b2.transpose();
    return d2.cwiseMax(0.0);
  }
  MatrixXd cross_kernel(const MatrixXd& X) const {
    if (!ard_)
      return (squared_distances(X_, X) * (-0.5 / (length_scale_ * length_scale_ * features()))).array().exp().matrix();
    return scaled_kernel(X_, X, inv_scale_);
  }
  // exp(-||(a - b) o scale||^2 / 2) for the rows a of A and b of B.
  static MatrixXd scaled_kernel(const MatrixXd& A, const MatrixXd& B,
                                       const VectorXd& scale) {
    return (squared_distances(A * scale.asDiagonal(), B * scale.asDiagonal()) * -0.5).array().exp().matrix();
  }
  void check_fitted(const MatrixXd& X) const {
    if (!fitted()) throw std::logic_error("GaussianProcess::predict: not fitted");
    if (X.cols() != X_.cols())
      throw std::invalid_argument("GaussianProcess::predict: " + std::to_string(X.cols()) + " features, fitted on " +
                                  std::to_string(X_.cols()));
  }

  GaussianProcessParams params_{};
  MatrixXd X_{};
  Eigen::LLT<MatrixXd> llt_{MatrixXd(0, 0)};  // the empty matrix's factor, as Fit::llt
  VectorXd alpha_{};
  // 1 / (l_j sqrt p) per feature: the kernel is exp(-||(a - b) o inv_scale||^2 / 2).
  VectorXd inv_scale_{};
  double y_mean_ = 0.0, y_scale_ = 1.0, length_scale_ = 1.0;
  bool ard_ = false;
  double log_likelihood_ = -std::numeric_limits<double>::infinity();
};
}  // namespace detail

/// detail::GaussianProcessImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using GaussianProcess = detail::GaussianProcessImpl<>;

static_assert(UncertainSurrogate<GaussianProcess>);

}  // namespace tunekit
