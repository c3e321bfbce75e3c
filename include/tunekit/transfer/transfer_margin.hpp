#pragma once
/// \file
/// TransferMargin<S>: AutoTVM's transfer learning (python/tvm/autotvm/tuner/xgboost_cost_model.py,
/// fit_log, fit and predict with a base model) as a wrapper of any Surrogate, so that every
/// model-based preset can start from earlier runs and the idea is ablated like any other part.
///
/// A base model of the wrapped kind is fitted once, on a TransferSource (earlier runs matched to
/// the target's knobs). Each fit on n target observations then fits the local model from the
/// discounted base prediction as its margin,
///     f(x) = w(n) f_base(x) + f_local(x),   w(n) = 2^(-n / 64),
/// f_local fitted to y - w(n) f_base(x): from that margin (XGBoost's base_margin) where the model
/// takes one (GradientBoostedTrees: the boosting starts from it and stops early on the recall of
/// the whole sum, as AutoTVM's does), to the residuals otherwise. Once w(n) < 0.05 (n >= 277)
/// the base model is dropped and the wrapper is the plain model. With fewer than 500 source
/// records AutoTVM fits no base model; nor does this wrapper.
///
/// Before its first fit, a wrapper with a base model predicts the base model's prediction (a
/// PriorSurrogate: Tuner picks the first configs by it, as AutoTVM's tuner does after
/// load_history). Predictions are in the units the tuner fits (throughput relative to the best measured, as the
/// source's targets are relative to each source's best), higher better.

#include "tunekit/concepts/surrogate.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/surrogate/gradient_boosted_trees.hpp"
#include "tunekit/transfer/source.hpp"

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of TransferMargin; fill with designated initialisers. Defaults are AutoTVM's.
struct TransferMarginParams {
  /// The base model's weight halves every this many target observations: w(n) = 2^(-n / it).
  double half_life = 64.0;
  /// Below this weight the base model is dropped and the plain model is fitted.
  double drop_below = 0.05;
  /// Fewest source records for a base model; with fewer, the wrapper is the plain model.
  std::size_t min_source_records = 500;
  /// Seed of the base model's fit (a generator of its own: the tuner's draws stay the plain run's).
  std::uint64_t base_seed = 0;

  void validate() const {
    if (!(half_life > 0) || !std::isfinite(half_life))
      throw std::invalid_argument("TransferMarginParams: half_life must be finite and > 0");
    if (!(drop_below >= 0 && drop_below < 1))
      throw std::invalid_argument("TransferMarginParams: drop_below must be in [0, 1)");
  }
};

/// The base model's weight after n target observations, 2^(-n / half_life), or 0 once it is below
/// drop_below (the base model dropped).
inline double transfer_weight(std::size_t n, const TransferMarginParams& p = {}) {
  const double w = std::exp2(-static_cast<double>(n) / p.half_life);
  return w < p.drop_below ? 0.0 : w;
}

/// A Surrogate that fits from a margin per row: `fit(X, y, margin, rng)`, after which predict()
/// gives the part without the margin (XGBoost's base_margin; GradientBoostedTrees).
template <class S>
concept MarginSurrogate = Surrogate<S> && requires(S& s, const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                                   const Eigen::VectorXd& margin, Rng& rng) {
  s.fit(x, y, margin, rng);
};

/// The base model TransferMargin fits on the sources, made from the local one: a copy of it (not
/// fitted), and for boosted trees AutoTVM's schedule of fit_log (up to 400 rounds, early stopping
/// after 100 without gain on the recall at twice plan_size).
template <class S>
S transfer_base_model(const S& local) {
  return local;
}
template <class Lazy>
detail::GradientBoostedTreesImpl<Lazy> transfer_base_model(const detail::GradientBoostedTreesImpl<Lazy>& local) {
  GradientBoostedTreesParams p = local.params();
  p.max_rounds = 400;
  p.early_stopping_rounds = 100;
  p.plan_size *= 2;
  return detail::GradientBoostedTreesImpl<Lazy>(p);
}

/// AutoTVM's transfer as a Surrogate wrapper (see the file comment). Default-constructed, or
/// made from an empty TransferSource, it has no base model and is the plain S. An
/// UncertainSurrogate when S is one (the local model's standard deviation; the base is fixed).
template <class S>
class TransferMargin {
  static_assert(check_surrogate<S>());

 public:
  using Params = TransferMarginParams;

  TransferMargin() = default;

  /// Fits the base model (transfer_base_model(local)) on `source` when it has at least
  /// params.min_source_records records.
  explicit TransferMargin(const TransferSource& source, Params params = {}, S local = {})
      : TransferMargin(source, params, local, transfer_base_model(local)) {}

  /// As above with a base model of the caller's (not fitted).
  TransferMargin(const TransferSource& source, Params params, S local, S base)
      : params_(params), local_(std::move(local)), base_(std::move(base)) {
    params_.validate();
    source_records_ = source.rows();
    if (source_records_ == 0 || source_records_ < params_.min_source_records) return;
    Rng rng(params_.base_seed);
    base_.fit(source.features(), source.targets(), rng);
    columns_ = source.columns();
    features_ = source.target_features();
    has_base_ = true;
  }

  /// Whether it predicts before a fit: with a base model, unfitted, it predicts the base
  /// model's prediction (w(0) = 1; PriorSurrogate), as AutoTVM picks its first configs.
  bool has_prior() const noexcept { return has_base_; }

  void fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Rng& rng) {
    fitted_ = true;
    weight_ = has_base_ ? transfer_weight(static_cast<std::size_t>(x.rows()), params_) : 0.0;
    if (weight_ == 0.0) {
      local_.fit(x, y, rng);
      return;
    }
    const Eigen::VectorXd margin = weight_ * base_prediction(x);
    if constexpr (MarginSurrogate<S>)
      local_.fit(x, y, margin, rng);
    else
      local_.fit(x, y - margin, rng);
  }

  Eigen::VectorXd predict(const Eigen::MatrixXd& x) const {
    if (!fitted_) return prior(x);
    Eigen::VectorXd mean = local_.predict(x);
    if (weight_ > 0) mean += weight_ * base_prediction(x);
    return mean;
  }

  void predict(const Eigen::MatrixXd& x, Eigen::VectorXd& mean, Eigen::VectorXd& sd) const
    requires UncertainSurrogate<S>
  {
    if (!fitted_) {
      mean = prior(x);
      sd = Eigen::VectorXd::Zero(mean.size());
      return;
    }
    local_.predict(x, mean, sd);
    if (weight_ > 0) mean += weight_ * base_prediction(x);
  }

  /// The base model's weight in the last fit (0: none, the plain model).
  double weight() const noexcept { return weight_; }
  /// Whether a base model was fitted on the sources.
  bool has_base() const noexcept { return has_base_; }
  /// Records of the source it was made from.
  std::size_t source_records() const noexcept { return source_records_; }
  const S& local() const noexcept { return local_; }
  const S& base() const noexcept { return base_; }
  const Params& params() const noexcept { return params_; }

 private:
  // The prediction before any fit: the base model's.
  Eigen::VectorXd prior(const Eigen::MatrixXd& x) const {
    if (!has_base_) throw std::logic_error("TransferMargin: predict before fit, without a base model");
    return base_prediction(x);
  }

  // The base model's prediction of target rows (their features of the knobs in common).
  Eigen::VectorXd base_prediction(const Eigen::MatrixXd& x) const {
    if (static_cast<std::size_t>(x.cols()) != features_)
      throw std::invalid_argument("TransferMargin: a feature matrix of " + std::to_string(x.cols()) +
                                  " columns; the source was matched to a space of " + std::to_string(features_));
    Eigen::MatrixXd common(x.rows(), static_cast<Eigen::Index>(columns_.size()));
    for (std::size_t c = 0; c < columns_.size(); ++c) common.col(static_cast<Eigen::Index>(c)) = x.col(columns_[c]);
    return base_.predict(common);
  }

  Params params_{};
  S local_{};
  S base_{};
  bool has_base_ = false;
  std::size_t source_records_ = 0;
  std::vector<Eigen::Index> columns_{};
  std::size_t features_ = 0;
  double weight_ = 0.0;
  bool fitted_ = false;
};

static_assert(check_surrogate<TransferMargin<GradientBoostedTrees>>());
static_assert(PriorSurrogate<TransferMargin<GradientBoostedTrees>>);

}  // namespace tunekit
