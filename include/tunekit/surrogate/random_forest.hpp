#pragma once
/// \file
/// RandomForest: bootstrap-aggregated CART regression trees with a predictive standard
/// deviation (AdaTune 4.2.1), by default the bias-corrected infinitesimal jackknife.

#include "tunekit/concepts/surrogate.hpp"
#include "tunekit/core/deferred.hpp"
#include "tunekit/core/parallel_gate.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/surrogate/cart.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

// GCC 12 reports false -Wmaybe-uninitialized warnings inside Eigen's AVX-512 reductions and
// GEMM kernel (-march=native); silence them for the code of this header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace tunekit {

/// Which variance RandomForest::predict(X, mean, std) reports.
enum class ForestVariance {
  /// Bias-corrected infinitesimal jackknife V_IJ-U (Wager, Hastie & Efron 2014; forestci): the
  /// sampling variance of the forest's mean prediction.
  jackknife,
  /// The variance of the trees' predictions around their mean (divided by B).
  across_trees,
};

/// The bias-corrected infinitesimal jackknife variance (Wager, Hastie & Efron 2014, eq. 7-8;
/// forestci's `random_forest_error`) of a bagged ensemble's prediction, for a batch of points:
///
///     V_IJ(x)   = sum_i Cov_b(N_bi, t_b(x))^2,   Cov_b over the B trees, divided by B
///     V_IJ-U(x) = V_IJ(x) - (n / B^2) sum_b (t_b(x) - tbar(x))^2,   clipped at 0
///
/// `inbag` is n x B: N_bi = how often training row i is in tree b's bootstrap sample;
/// `tree_predictions` is q x B: t_b(x) for q points. Returns the q variances. (forestci scales
/// the correction by the empirical variance of the in-bag counts, which is 1 - 1/n for the
/// bootstrap; this is the paper's formula, with that factor 1.) Computed as
/// Cov = Tc * N^T / B (q x n; centring T suffices, Tc 1 = 0), V_IJ = rowwise squared norm.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Eigen::VectorXd infinitesimal_jackknife_variance(const Eigen::MatrixXd& inbag,
                                                 const Eigen::MatrixXd& tree_predictions) {
  if (inbag.cols() != tree_predictions.cols() || inbag.cols() == 0)
    throw std::invalid_argument("infinitesimal_jackknife_variance: inbag (n x B) and tree "
                                "predictions (q x B) need the same B > 0");
  const auto b = static_cast<double>(inbag.cols());
  const auto n = static_cast<double>(inbag.rows());
  const Eigen::MatrixXd tc = tree_predictions.colwise() - tree_predictions.rowwise().mean();
  // Eigen runs a product this large on omp_get_max_threads() threads (from q n B of about
  // 1e5 on); the product's gate keeps it serial where that is faster (a loaded core).
  const double work = static_cast<double>(tc.rows()) * n * b;
  static detail::ParallelGate gate;
  const bool eligible = work >= 1e5;
  const bool parallel = eligible && gate.choose();
  const detail::GatedRun timed(gate, parallel, work, eligible);
  const detail::SerialScope serial(!parallel);
  const Eigen::MatrixXd cov = (tc * inbag.transpose()) / b;  // q x n
  const Eigen::VectorXd v_ij = cov.rowwise().squaredNorm();
  const Eigen::VectorXd correction = (n / (b * b)) * tc.rowwise().squaredNorm();
  return (v_ij - correction).cwiseMax(0.0);
}

/// Parameters of a RandomForest; fill with designated initialisers.
struct RandomForestParams {
  /// Number of trees B. 100: the jackknife's Monte-Carlo noise is O(n / B^2) (Wager et al.
  /// recommend B of order n for small n; 100 keeps a refit every round in milliseconds).
  std::size_t n_trees = 100;
  /// Maximum depth; 0: unlimited (grown until min_samples_leaf stops it, as in sklearn).
  std::size_t max_depth = 0;
  /// Least bootstrap samples per leaf.
  std::size_t min_samples_leaf = 1;
  /// Fraction of features tried at each split (Breiman's p/3 for regression).
  double max_features = 1.0 / 3.0;
  /// Bootstrap resampling (the jackknife and the residual variance need it).
  bool bootstrap = true;
  ForestVariance variance = ForestVariance::jackknife;
  /// Add the residual noise variance (mean squared out-of-bag residual) to the variance, making
  /// std a predictive interval for a new measurement rather than the uncertainty of the mean.
  bool add_residual_variance = false;
  BinningParams binning{};

  void validate() const {
    if (n_trees < 2) throw std::invalid_argument("RandomForestParams: n_trees must be >= 2");
    if (min_samples_leaf < 1)
      throw std::invalid_argument("RandomForestParams: min_samples_leaf must be >= 1");
    if (!(max_features > 0 && max_features <= 1))
      throw std::invalid_argument("RandomForestParams: max_features must be in (0, 1]");
    if (!bootstrap && (variance == ForestVariance::jackknife || add_residual_variance))
      throw std::invalid_argument("RandomForestParams: the jackknife variance and the residual "
                                  "variance need bootstrap = true");
    binning.validate();
  }
};

namespace detail {

/// A random forest regressor with uncertainty. fit() grows the bootstrap trees in parallel with
/// OpenMP (one generator per tree, derived from the caller's in tree order before the parallel
/// loop, so a seed gives the same forest for any thread count) and records the in-bag counts
/// N_bi; predict(X, mean, std) reports
///   std = sqrt(V(x) [+ residual variance]),
/// V the jackknife V_IJ-U (default) or the across-tree variance, the residual variance (mean
/// squared out-of-bag residual of the training rows) only with add_residual_variance. The
/// default, V_IJ-U alone, is the uncertainty of the model's mean (what AdaTune's expected
/// improvement uses); it shrinks as data grow and does not cover measurement noise.
template <class Lazy = void>
class RandomForestImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;
  using VectorXd = Deferred<Eigen::VectorXd, Lazy>;

 public:
  using Params = RandomForestParams;

  RandomForestImpl() = default;
  explicit RandomForestImpl(Params params) : params_(params) { params_.validate(); }

  void fit(const MatrixXd& x, const VectorXd& y, Rng& rng) {
    params_.validate();
    if (x.rows() != y.size() || x.rows() == 0)
      throw std::invalid_argument("RandomForest::fit: X and y need the same number (> 0) of rows");
    const auto n = static_cast<std::size_t>(x.rows());
    const std::size_t b_count = params_.n_trees;
    const BinnedMatrix binned(x, params_.binning);
    const TreeParams tp{.max_depth = params_.max_depth,
                        .min_child_weight = static_cast<double>(params_.min_samples_leaf),
                        .lambda = 0.0,
                        .gamma = 0.0,
                        .feature_fraction = params_.max_features};
    std::vector<Rng> streams;
    streams.reserve(b_count);
    for (std::size_t b = 0; b < b_count; ++b) streams.push_back(derive_stream(rng, b));

    trees_.assign(b_count, RegressionTree{});
    inbag_.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(b_count));
    MatrixXd train_pred(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(b_count));
    const auto b_signed = static_cast<std::ptrdiff_t>(b_count);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t bi = 0; bi < b_signed; ++bi) {
      Rng& r = streams[static_cast<std::size_t>(bi)];
      std::vector<double> w(n, params_.bootstrap ? 0.0 : 1.0);
      if (params_.bootstrap)
        for (std::size_t i = 0; i < n; ++i) w[uniform_index(r, n)] += 1.0;
      std::vector<double> g(n), h(n);
      std::vector<std::uint32_t> rows;
      for (std::size_t i = 0; i < n; ++i) {
        g[i] = -w[i] * y[static_cast<Eigen::Index>(i)];
        h[i] = w[i];
        inbag_(static_cast<Eigen::Index>(i), bi) = w[i];
        if (w[i] > 0) rows.push_back(static_cast<std::uint32_t>(i));
      }
      trees_[static_cast<std::size_t>(bi)] = RegressionTree::grow(binned, g, h, std::move(rows), tp, r);
      if (params_.add_residual_variance)
        for (Eigen::Index i = 0; i < x.rows(); ++i)
          train_pred(i, bi) = trees_[static_cast<std::size_t>(bi)].predict_row(x, i);
    }

    residual_variance_ = 0.0;
    if (params_.add_residual_variance) {
      double sse = 0.0;
      std::size_t count = 0;
      for (Eigen::Index i = 0; i < x.rows(); ++i) {
        double s = 0.0;
        std::size_t k = 0;
        for (Eigen::Index b = 0; b < b_signed; ++b)
          if (inbag_(i, b) == 0.0) {
            s += train_pred(i, b);
            ++k;
          }
        if (k > 0) {
          const double e = y[i] - s / static_cast<double>(k);
          sse += e * e;
          ++count;
        }
      }
      residual_variance_ = count > 0 ? sse / static_cast<double>(count) : 0.0;
    }
  }

  /// The B trees' predictions, q x B.
  MatrixXd tree_predictions(const MatrixXd& x) const {
    check_fitted();
    MatrixXd t(x.rows(), static_cast<Eigen::Index>(trees_.size()));
    const auto b_signed = static_cast<std::ptrdiff_t>(trees_.size());
    // Small batches (an optimizer scoring a few chains) run serially: a parallel region per call
    // would cost more than it saves.
#pragma omp parallel for schedule(static) if (x.rows() * b_signed >= 65536)
    for (std::ptrdiff_t b = 0; b < b_signed; ++b)
      for (Eigen::Index i = 0; i < x.rows(); ++i)
        t(i, b) = trees_[static_cast<std::size_t>(b)].predict_row(x, i);
    return t;
  }

  /// The forest's mean prediction.
  VectorXd predict(const MatrixXd& x) const {
    return tree_predictions(x).rowwise().mean();
  }

  /// Mean and standard deviation (see the class comment for what std is).
  void predict(const MatrixXd& x, VectorXd& mean, VectorXd& std) const {
    const MatrixXd t = tree_predictions(x);
    mean = t.rowwise().mean();
    VectorXd var;
    if (params_.variance == ForestVariance::jackknife) {
      var = infinitesimal_jackknife_variance(inbag_, t);
    } else {
      var = (t.colwise() - mean).rowwise().squaredNorm() / static_cast<double>(t.cols());
    }
    var.array() += residual_variance_;
    std = var.cwiseSqrt();
  }

  const Params& params() const noexcept { return params_; }
  const std::vector<RegressionTree>& trees() const noexcept { return trees_; }
  /// In-bag counts N_bi of the last fit, n x B.
  const MatrixXd& inbag() const noexcept { return inbag_; }
  /// Mean squared out-of-bag residual of the last fit (0 unless add_residual_variance).
  double residual_variance() const noexcept { return residual_variance_; }

 private:
  void check_fitted() const {
    if (trees_.empty()) throw std::logic_error("RandomForest: predict before fit");
  }

  Params params_{};
  std::vector<RegressionTree> trees_;
  MatrixXd inbag_;
  double residual_variance_ = 0.0;
};
}  // namespace detail

/// detail::RandomForestImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using RandomForest = detail::RandomForestImpl<>;

static_assert(Surrogate<RandomForest>);
static_assert(UncertainSurrogate<RandomForest>);

}  // namespace tunekit

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
