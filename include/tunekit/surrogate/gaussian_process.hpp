#pragma once
/// \file
/// GaussianProcess: Gaussian-process regression with a squared-exponential kernel whose length
/// scale is chosen by the marginal likelihood (Rasmussen & Williams, Gaussian Processes for
/// Machine Learning, 2006, algorithm 2.1 and eq. 5.8): an UncertainSurrogate, for expected
/// improvement and the other acquisitions of the predictive standard deviation. Exact: a fit
/// costs O(n^3) per length scale tried, so it suits the small histories of early tuning (a few
/// hundred configs), not AutoTVM's thousands.

#include "tunekit/concepts/surrogate.hpp"
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

  void validate() const {
    if (length_scales.empty()) throw std::invalid_argument("GaussianProcessParams: no length scale to try");
    for (double l : length_scales)
      if (!(l > 0) || !std::isfinite(l))
        throw std::invalid_argument("GaussianProcessParams: length scales must be positive and finite");
    if (!(noise > 0) || !std::isfinite(noise))
      throw std::invalid_argument("GaussianProcessParams: noise must be positive and finite");
  }
};

/// Gaussian-process regression, zero mean on standardised targets:
///     k(a, b) = exp(-||a - b||^2 / (2 l^2 p)),   K = k(X, X) + noise I,
///     mean(x) = k(x, X) K^-1 y,   var(x) = k(x, x) - k(x, X) K^-1 k(X, x)   (latent function),
/// mapped back to the targets' units. `fit` tries every length scale of the parameters and keeps
/// the one of largest log marginal likelihood -y'K^-1 y / 2 - log|K| / 2 - n log(2 pi) / 2.
/// A fit costs O(n^3) per length scale (a Cholesky factorisation), a prediction O(n^2).
class GaussianProcess {
 public:
  GaussianProcess() = default;
  explicit GaussianProcess(GaussianProcessParams params) : params_(std::move(params)) { params_.validate(); }

  const GaussianProcessParams& params() const noexcept { return params_; }

  /// Fits the model on the rows of X (features) and targets y.
  void fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y) {
    if (X.rows() != y.size())
      throw std::invalid_argument("GaussianProcess::fit: " + std::to_string(X.rows()) + " rows of features for " +
                                  std::to_string(y.size()) + " targets");
    if (X.rows() == 0) throw std::invalid_argument("GaussianProcess::fit: no data");
    if (!X.allFinite() || !y.allFinite()) throw std::invalid_argument("GaussianProcess::fit: non-finite data");
    X_ = X;
    const auto n = static_cast<double>(y.size());
    y_mean_ = y.mean();
    const double var = (y.array() - y_mean_).square().sum() / n;
    y_scale_ = var > 0 ? std::sqrt(var) : 1.0;
    const Eigen::VectorXd z = (y.array() - y_mean_) / y_scale_;
    const Eigen::MatrixXd d2 = squared_distances(X_, X_);
    log_likelihood_ = -std::numeric_limits<double>::infinity();
    for (double l : params_.length_scales) {
      Eigen::MatrixXd K = (d2 * (-0.5 / (l * l * features()))).array().exp().matrix();
      K.diagonal().array() += params_.noise;
      Eigen::LLT<Eigen::MatrixXd> llt(K);
      if (llt.info() != Eigen::Success) continue;
      Eigen::VectorXd alpha = llt.solve(z);
      const double lml = -0.5 * z.dot(alpha) - llt.matrixLLT().diagonal().array().log().sum() -
                         0.5 * n * std::log(2.0 * std::numbers::pi);
      if (lml > log_likelihood_) {
        log_likelihood_ = lml;
        length_scale_ = l;
        llt_ = std::move(llt);
        alpha_ = std::move(alpha);
      }
    }
    if (!std::isfinite(log_likelihood_))
      throw std::runtime_error("GaussianProcess::fit: the kernel matrix is not positive definite");
  }
  /// The Surrogate form (the fit is deterministic: the generator is not used).
  void fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, Rng&) { fit(X, y); }

  /// Predictive mean and standard deviation (of the latent function, in the targets' units).
  void predict(const Eigen::MatrixXd& X, Eigen::VectorXd& mean, Eigen::VectorXd& sd) const {
    check_fitted(X);
    const Eigen::MatrixXd Ks = cross_kernel(X);  // n x m
    mean = (Ks.transpose() * alpha_).array() * y_scale_ + y_mean_;
    const Eigen::MatrixXd v = llt_.matrixL().solve(Ks);
    sd = (1.0 - v.colwise().squaredNorm().array()).max(0.0).sqrt().matrix().transpose() * y_scale_;
  }
  Eigen::VectorXd predict(const Eigen::MatrixXd& X) const {
    check_fitted(X);
    return (cross_kernel(X).transpose() * alpha_).array() * y_scale_ + y_mean_;
  }

  /// The kernel k(a, b) at the chosen length scale, in [0, 1].
  double kernel(const Eigen::Ref<const Eigen::RowVectorXd>& a, const Eigen::Ref<const Eigen::RowVectorXd>& b) const {
    return std::exp(-0.5 * (a - b).squaredNorm() / (length_scale_ * length_scale_ * features()));
  }
  /// The length scale the fit chose, and its log marginal likelihood.
  double length_scale() const noexcept { return length_scale_; }
  double log_marginal_likelihood() const noexcept { return log_likelihood_; }
  bool fitted() const noexcept { return X_.rows() > 0; }

 private:
  double features() const { return static_cast<double>(std::max<Eigen::Index>(1, X_.cols())); }
  static Eigen::MatrixXd squared_distances(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) {
    const Eigen::VectorXd a2 = A.rowwise().squaredNorm(), b2 = B.rowwise().squaredNorm();
    Eigen::MatrixXd d2 = (-2.0 * A * B.transpose()).colwise() + a2;
    d2.rowwise() += b2.transpose();
    return d2.cwiseMax(0.0);
  }
  Eigen::MatrixXd cross_kernel(const Eigen::MatrixXd& X) const {
    return (squared_distances(X_, X) * (-0.5 / (length_scale_ * length_scale_ * features()))).array().exp().matrix();
  }
  void check_fitted(const Eigen::MatrixXd& X) const {
    if (!fitted()) throw std::logic_error("GaussianProcess::predict: not fitted");
    if (X.cols() != X_.cols())
      throw std::invalid_argument("GaussianProcess::predict: " + std::to_string(X.cols()) + " features, fitted on " +
                                  std::to_string(X_.cols()));
  }

  GaussianProcessParams params_{};
  Eigen::MatrixXd X_{};
  Eigen::LLT<Eigen::MatrixXd> llt_{};
  Eigen::VectorXd alpha_{};
  double y_mean_ = 0.0, y_scale_ = 1.0, length_scale_ = 1.0;
  double log_likelihood_ = -std::numeric_limits<double>::infinity();
};

static_assert(UncertainSurrogate<GaussianProcess>);

}  // namespace tunekit
