#pragma once
/// \file
/// GradientBoostedTrees: second-order gradient boosting of regression trees (XGBoost; Chen &
/// Guestrin 2016) with AutoTVM's hyperparameters and training schedule (XGBoostCostModel).

#include "tunekit/concepts/surrogate.hpp"
#include "tunekit/core/deferred.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/surrogate/cart.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

// GCC 12 reports false -Wmaybe-uninitialized warnings inside Eigen's AVX-512 reductions and
// GEMM kernel (-march=native); silence them for the code of this header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace tunekit {

/// The boosting objective.
enum class BoostingLoss {
  /// 0.5 (s_i - y_i)^2: g_i = s_i - y_i, h_i = 1 (XGBoost's reg:squarederror).
  squared_error,
  /// Pairwise logistic rank loss (XGBoost's rank:pairwise, LambdaRank without NDCG weights):
  /// for each pair with y_i > y_j, L = log(1 + exp(-(s_i - s_j))). With p = 1 / (1 +
  /// exp(-(s_i - s_j))): dL/ds_i = -(1 - p), dL/ds_j = +(1 - p), d2L/ds_i^2 = d2L/ds_j^2 =
  /// p (1 - p); summed over the pairs of each row. (XGBoost doubles the hessian; this is the
  /// exact second derivative.)
  pairwise_rank,
};

/// Parameters of GradientBoostedTrees; fill with designated initialisers. Defaults are AutoTVM's
/// (python/tvm/autotvm/tuner/xgboost_cost_model.py).
struct GradientBoostedTreesParams {
  std::size_t max_depth = 3;
  double gamma = 1e-4;
  double min_child_weight = 1.0;
  /// Shrinkage of each tree.
  double eta = 0.3;
  double lambda = 1.0;
  /// Fraction of rows (Bernoulli per row and round) each tree is grown on.
  double subsample = 1.0;
  /// Fraction of features tried at each split.
  double feature_fraction = 1.0;
  BoostingLoss loss = BoostingLoss::squared_error;
  /// Initial prediction (normalised units for squared error; XGBoost's classic default).
  double base_score = 0.5;
  std::size_t max_rounds = 8000;
  /// Stop when the training set's average recall@plan_size has not improved for this many
  /// rounds, and keep the trees of the best round (AutoTVM: 20, plan_size 64). 0: no early
  /// stopping; boost exactly max_rounds trees and keep them all (XGBoost's xgb.train without an
  /// evaluation set; the benchmarks use it so that fit time does not depend on the data).
  std::size_t early_stopping_rounds = 20;
  std::size_t plan_size = 64;
  /// Rank loss: all pairs of rows up to this many rows (n (n-1) / 2 pairs); above it, every
  /// round draws rank_pairs_per_row random partners for each row (n * rank_pairs_per_row pairs,
  /// like XGBoost's sampled pairs), so a round costs O(n) rather than O(n^2).
  std::size_t rank_all_pairs_max_rows = 512;
  std::size_t rank_pairs_per_row = 32;
  BinningParams binning{};

  void validate() const {
    if (max_depth < 1) throw std::invalid_argument("GradientBoostedTreesParams: max_depth must be >= 1");
    if (!(gamma >= 0)) throw std::invalid_argument("GradientBoostedTreesParams: gamma must be >= 0");
    if (!(min_child_weight >= 0))
      throw std::invalid_argument("GradientBoostedTreesParams: min_child_weight must be >= 0");
    if (!(eta > 0 && eta <= 1)) throw std::invalid_argument("GradientBoostedTreesParams: eta must be in (0, 1]");
    if (!(lambda >= 0)) throw std::invalid_argument("GradientBoostedTreesParams: lambda must be >= 0");
    if (!(subsample > 0 && subsample <= 1))
      throw std::invalid_argument("GradientBoostedTreesParams: subsample must be in (0, 1]");
    if (!(feature_fraction > 0 && feature_fraction <= 1))
      throw std::invalid_argument("GradientBoostedTreesParams: feature_fraction must be in (0, 1]");
    if (!std::isfinite(base_score))
      throw std::invalid_argument("GradientBoostedTreesParams: base_score must be finite");
    if (max_rounds < 1) throw std::invalid_argument("GradientBoostedTreesParams: max_rounds must be >= 1");
    if (plan_size < 1) throw std::invalid_argument("GradientBoostedTreesParams: plan_size must be >= 1");
    if (rank_pairs_per_row < 1)
      throw std::invalid_argument("GradientBoostedTreesParams: rank_pairs_per_row must be >= 1");
    binning.validate();
  }
};

/// AutoTVM's average recall@n (xgboost_cost_model.py, xgb_average_recalln_curve_score): order
/// the rows by prediction (descending), rank their labels (0 = best), and average over i < n the
/// recall curve ret[i] = #{k < i : rank_k <= i} / (i + 1). Ties are broken by row order.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
double average_recall(const Eigen::VectorXd& predictions, const Eigen::VectorXd& labels,
                      std::size_t n) {
  const auto rows = static_cast<std::size_t>(labels.size());
  std::vector<std::size_t> trials(rows);
  std::iota(trials.begin(), trials.end(), 0);
  // np.argsort(preds)[::-1]: descending; among equal predictions the later row first.
  std::stable_sort(trials.begin(), trials.end(), [&](std::size_t a, std::size_t b) {
    return predictions[static_cast<Eigen::Index>(a)] < predictions[static_cast<Eigen::Index>(b)];
  });
  std::reverse(trials.begin(), trials.end());
  // get_rank(labels[trials]): rank of each trial's label, descending.
  std::vector<std::size_t> order(rows);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return labels[static_cast<Eigen::Index>(trials[a])] > labels[static_cast<Eigen::Index>(trials[b])];
  });
  std::vector<std::size_t> rank(rows);
  for (std::size_t k = 0; k < rows; ++k) rank[order[k]] = k;
  // curve[i] = sum(rank[:i] <= i) / (i + 1); the prefix grows by one element per i.
  double sum = 0.0;
  const std::size_t upto = std::min(n, rows);
  for (std::size_t i = 0; i < upto; ++i) {
    std::size_t hits = 0;
    for (std::size_t k = 0; k < i; ++k) hits += rank[k] <= i;
    sum += static_cast<double>(hits) / static_cast<double>(i + 1);
  }
  return sum / static_cast<double>(n);
}

namespace detail {

/// AutoTVM's cost model: boosted regression trees on throughput. fit() normalises the targets
/// by their maximum (y / max(y) when max(y) > 0), boosts up to max_rounds trees and stops early
/// on the training set's average recall@plan_size, keeping the trees up to the best round
/// (without early stopping, early_stopping_rounds = 0, it keeps all max_rounds trees).
/// predict() returns, for squared error, the prediction in the units of y (normalised prediction
/// times max(y)); for the rank loss, the raw score (only its order is meaningful). After a fit
/// from margins (XGBoost's base_margin) it returns the trees' part, without the margin.
template <class Lazy = void>
class GradientBoostedTreesImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;
  using VectorXd = Deferred<Eigen::VectorXd, Lazy>;

 public:
  using Params = GradientBoostedTreesParams;

  GradientBoostedTreesImpl() = default;
  explicit GradientBoostedTreesImpl(Params params) : params_(params) { params_.validate(); }

  void fit(const MatrixXd& x, const VectorXd& y, Rng& rng) {
    fit_from(x, y, nullptr, rng);
  }

  /// As fit, the boosting started from a margin per row (XGBoost's base_margin, in y's units
  /// for squared error, raw scores for the rank loss) in place of base_score: the trees model
  /// y - margin. predict() then returns the trees' part alone, to which the caller adds the
  /// margin of the rows it predicts (as XGBoost's predict with a base_margin). AutoTVM's transfer
  /// (TransferMargin) passes the discounted prediction of a model of earlier runs.
  void fit(const MatrixXd& x, const VectorXd& y, const VectorXd& margin, Rng& rng) {
    if (margin.size() != y.size())
      throw std::invalid_argument("GradientBoostedTrees::fit: the margin needs one value per row of y");
    if (!margin.allFinite()) throw std::invalid_argument("GradientBoostedTrees::fit: the margin must be finite");
    fit_from(x, y, &margin, rng);
  }

  VectorXd predict(const MatrixXd& x) const {
    if (trees_.empty()) throw std::logic_error("GradientBoostedTrees: predict before fit");
    VectorXd out = VectorXd::Constant(x.rows(), base_);
    // Chunks of rows in parallel, each through the trees in order (so the sums do not depend
    // on the thread count); a small batch stays on one thread.
    constexpr Eigen::Index chunk = 512;
    const Eigen::Index chunks = (x.rows() + chunk - 1) / chunk;
    const bool parallel = chunks > 1 && x.rows() * static_cast<Eigen::Index>(trees_.size()) >= (1 << 17);
#pragma omp parallel for schedule(static) if (parallel)
    for (Eigen::Index c = 0; c < chunks; ++c) {
      const Eigen::Index first = c * chunk, count = std::min(chunk, x.rows() - first);
      const std::span<double> part(out.data() + first, static_cast<std::size_t>(count));
      for (const auto& t : trees_) t.predict_add(x, first, part);
    }
    if (params_.loss == BoostingLoss::squared_error) out *= scale_;
    return out;
  }

  const Params& params() const noexcept { return params_; }
  /// Trees kept by the last fit (eta already folded into their leaves).
  const std::vector<RegressionTree>& trees() const noexcept { return trees_; }
  /// The training set's average recall@plan_size at the kept round.
  double training_recall() const noexcept { return recall_; }

 private:
  // fit, from base_score (margin null) or from the rows' margins.
  void fit_from(const MatrixXd& x, const VectorXd& y, const VectorXd* margin, Rng& rng) {
    params_.validate();
    if (x.rows() != y.size() || x.rows() == 0)
      throw std::invalid_argument("GradientBoostedTrees::fit: X and y need the same number (> 0) of rows");
    const auto n = static_cast<std::size_t>(x.rows());
    const double ymax = y.maxCoeff();
    scale_ = ymax > 0 ? ymax : 1.0;
    const VectorXd yn = y / scale_;
    const bool squared = params_.loss == BoostingLoss::squared_error;
    base_ = squared && !margin ? params_.base_score : 0.0;

    const BinnedMatrix binned(x, params_.binning);
    const TreeParams tp{.max_depth = params_.max_depth,
                        .min_child_weight = params_.min_child_weight,
                        .lambda = params_.lambda,
                        .gamma = params_.gamma,
                        .feature_fraction = params_.feature_fraction};
    trees_.clear();
    VectorXd pred = VectorXd::Constant(x.rows(), base_);
    if (margin) pred += squared ? VectorXd(*margin / scale_) : *margin;
    std::vector<double> g(n), h(n);
    std::vector<std::uint32_t> rows;
    std::vector<std::int32_t> leaf_of(n);
    double best_score = -1.0;
    std::size_t best_rounds = 0;
    for (std::size_t round = 0; round < params_.max_rounds; ++round) {
      gradients(pred, yn, g, h, rng);
      rows.clear();
      for (std::size_t i = 0; i < n; ++i)
        if (params_.subsample >= 1.0 || uniform_real(rng) < params_.subsample)
          rows.push_back(static_cast<std::uint32_t>(i));
      std::fill(leaf_of.begin(), leaf_of.end(), -1);
      RegressionTree t = rows.empty() ? RegressionTree::constant(0.0)
                                      : RegressionTree::grow(binned, g, h, rows, tp, rng, leaf_of);
      t.scale(params_.eta);
      // The rows the tree was grown on know their leaf; the others (subsampling) walk it.
      const auto values = t.value();
      for (std::size_t i = 0; i < n; ++i) {
        const auto e = static_cast<Eigen::Index>(i);
        pred[e] += leaf_of[i] >= 0 ? values[static_cast<std::size_t>(leaf_of[i])] : t.predict_row(x, e);
      }
      trees_.push_back(std::move(t));
      if (params_.early_stopping_rounds == 0) continue;
      const double score = average_recall(pred, yn, params_.plan_size);
      if (score > best_score) {
        best_score = score;
        best_rounds = round + 1;
      } else if (round + 1 - best_rounds >= params_.early_stopping_rounds) {
        break;
      }
    }
    if (params_.early_stopping_rounds == 0) {
      recall_ = average_recall(pred, yn, params_.plan_size);
      return;
    }
    trees_.resize(best_rounds);
    recall_ = best_score;
  }

  void gradients(const VectorXd& pred, const VectorXd& y, std::vector<double>& g,
                 std::vector<double>& h, Rng& rng) const {
    const auto n = static_cast<std::size_t>(y.size());
    if (params_.loss == BoostingLoss::squared_error) {
      for (std::size_t i = 0; i < n; ++i) {
        g[i] = pred[static_cast<Eigen::Index>(i)] - y[static_cast<Eigen::Index>(i)];
        h[i] = 1.0;
      }
      return;
    }
    std::fill(g.begin(), g.end(), 0.0);
    std::fill(h.begin(), h.end(), 0.0);
    auto pair = [&](std::size_t i, std::size_t j) {
      // Requires y_i > y_j.
      const double d = pred[static_cast<Eigen::Index>(i)] - pred[static_cast<Eigen::Index>(j)];
      const double p = 1.0 / (1.0 + std::exp(-d));
      const double hess = std::max(p * (1.0 - p), 1e-16);
      g[i] -= 1.0 - p;
      g[j] += 1.0 - p;
      h[i] += hess;
      h[j] += hess;
    };
    auto yi = [&](std::size_t i) { return y[static_cast<Eigen::Index>(i)]; };
    if (n <= params_.rank_all_pairs_max_rows) {
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) {
          if (yi(i) > yi(j)) pair(i, j);
          else if (yi(j) > yi(i)) pair(j, i);
        }
    } else {
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < params_.rank_pairs_per_row; ++k) {
          const auto j = static_cast<std::size_t>(uniform_index(rng, n));
          if (yi(i) > yi(j)) pair(i, j);
          else if (yi(j) > yi(i)) pair(j, i);
        }
    }
  }

  Params params_{};
  std::vector<RegressionTree> trees_;
  double base_ = 0.0;
  double scale_ = 1.0;
  double recall_ = 0.0;
};
}  // namespace detail

/// detail::GradientBoostedTreesImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using GradientBoostedTrees = detail::GradientBoostedTreesImpl<>;

static_assert(Surrogate<GradientBoostedTrees>);

}  // namespace tunekit

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
