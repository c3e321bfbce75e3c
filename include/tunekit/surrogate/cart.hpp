#pragma once
/// \file
/// The CART regression-tree core shared by RandomForest and GradientBoostedTrees.
///
/// A tree is grown over per-row gradient statistics (g_i, h_i), as in XGBoost (Chen & Guestrin
/// 2016): a node with sums G = sum g_i, H = sum h_i is split where
///
///     gain = G_L^2 / (H_L + lambda) + G_R^2 / (H_R + lambda) - G^2 / (H + lambda)
///
/// is largest, if gain > gamma and both children have H >= min_child_weight; a leaf predicts
/// -G / (H + lambda). Plain variance-reduction CART is the special case g_i = -w_i y_i,
/// h_i = w_i, lambda = 0 (w_i the row's weight, e.g. its bootstrap count): the gain is then the
/// reduction of the weighted sum of squared errors and the leaf predicts the weighted mean.
///
/// Features are quantised once per fit into a BinnedMatrix, shared by every tree of a model:
/// - exact greedy (rows <= histogram_threshold, default 1024): every distinct value of a feature
///   is its own bin, so every split of the data is a candidate, as in exact CART;
/// - histogram (rows > histogram_threshold): at most max_bins (default 256) bins per feature,
///   cut at quantiles of the feature's values (XGBoost's "hist", LightGBM).
/// A split between bins k and k+1 sends x to the left when x <= cut, the cut being the midpoint
/// of the largest value in bin k and the smallest value in bin k+1. Per node, a feature's
/// (G, H) histogram is accumulated over the node's rows, or, when the node has far fewer rows
/// than the feature has bins, its rows are sorted by bin.
///
/// Trees are stored as flat arrays (feature, threshold, left, right, value) in pre-order.

#include "tunekit/core/deferred.hpp"
#include "tunekit/core/parallel_gate.hpp"
#include "tunekit/core/random.hpp"

#include <Eigen/Core>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// GCC 12 reports false -Wmaybe-uninitialized warnings inside Eigen's AVX-512 reductions and
// GEMM kernel (-march=native); silence them for the code of this header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace tunekit {

/// How features are quantised for tree building.
struct BinningParams {
  /// Up to this many rows every distinct value is a bin (exact greedy splits); above it, at most
  /// max_bins quantile bins per feature.
  std::size_t histogram_threshold = 1024;
  std::size_t max_bins = 256;

  void validate() const {
    if (histogram_threshold > 65535)
      throw std::invalid_argument("BinningParams: histogram_threshold must be <= 65535");
    if (max_bins < 2 || max_bins > 65535)
      throw std::invalid_argument("BinningParams: max_bins must be in [2, 65535]");
  }
};

namespace detail {

/// A feature matrix quantised to bin codes (column-major), with each feature's cut points.
template <class Lazy = void>
class BinnedMatrixImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;

 public:
  BinnedMatrixImpl() = default;

  BinnedMatrixImpl(const MatrixXd& x, const BinningParams& params = {}) {
    params.validate();
    rows_ = static_cast<std::size_t>(x.rows());
    cols_ = static_cast<std::size_t>(x.cols());
    if (x.hasNaN())
      for (Eigen::Index r = 0; r < x.rows(); ++r)
        for (Eigen::Index c = 0; c < x.cols(); ++c)
          if (std::isnan(x(r, c)))
            throw std::invalid_argument("BinnedMatrix: NaN feature at row " + std::to_string(r) +
                                        ", column " + std::to_string(c));
    const bool exact = rows_ <= params.histogram_threshold;
    codes_.resize(rows_ * cols_);
    cuts_.resize(cols_);
    // Features are independent: quantised in parallel when there is enough work.
    const auto cols_signed = static_cast<std::ptrdiff_t>(cols_);
#pragma omp parallel for schedule(dynamic, 1) if (cols_ > 1 && rows_ * cols_ >= parallel_binning_work)
    for (std::ptrdiff_t fi = 0; fi < cols_signed; ++fi) {
      const auto f = static_cast<std::size_t>(fi);
      std::vector<double> v(rows_);
      for (std::size_t r = 0; r < rows_; ++r) v[r] = x(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(f));
      std::sort(v.begin(), v.end());
      // Distinct values and their counts.
      std::vector<double> values;
      std::vector<std::size_t> counts;
      for (double a : v) {
        if (values.empty() || a != values.back()) {
          values.push_back(a);
          counts.push_back(0);
        }
        ++counts.back();
      }
      auto& cut = cuts_[f];
      if (exact || values.size() <= params.max_bins) {
        for (std::size_t i = 0; i + 1 < values.size(); ++i)
          cut.push_back(midpoint(values[i], values[i + 1]));
      } else {
        // Quantile cuts: close a bin once the cumulative count reaches the next multiple of
        // rows / max_bins.
        const double per_bin = static_cast<double>(rows_) / static_cast<double>(params.max_bins);
        std::size_t cum = 0;
        double next = per_bin;
        for (std::size_t i = 0; i + 1 < values.size(); ++i) {
          cum += counts[i];
          if (static_cast<double>(cum) >= next) {
            cut.push_back(midpoint(values[i], values[i + 1]));
            while (next <= static_cast<double>(cum)) next += per_bin;
            if (cut.size() + 1 >= params.max_bins) break;
          }
        }
      }
      for (std::size_t r = 0; r < rows_; ++r)
        codes_[f * rows_ + r] = static_cast<std::uint16_t>(
            bin_of(f, x(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(f))));
    }
  }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  /// Number of bins of feature f.
  std::size_t bins(std::size_t f) const noexcept { return cuts_[f].size() + 1; }
  /// Bin codes of feature f, one per row.
  std::span<const std::uint16_t> codes(std::size_t f) const noexcept {
    return {codes_.data() + f * rows_, rows_};
  }
  /// The threshold between bins k and k+1 of feature f (x <= cut goes to bins <= k).
  double cut(std::size_t f, std::size_t k) const noexcept { return cuts_[f][k]; }
  /// The bin of value x of feature f.
  std::size_t bin_of(std::size_t f, double x) const noexcept {
    // std::lower_bound (the number of cuts < x) without data-dependent branches.
    const auto& c = cuts_[f];
    if (c.empty()) return 0;
    const double* base = c.data();
    for (std::size_t n = c.size(); n > 1;) {
      const std::size_t half = n / 2;
      base = base[half - 1] < x ? base + half : base;
      n -= half;
    }
    return static_cast<std::size_t>(base - c.data()) + (*base < x ? 1 : 0);
  }

 private:
  // Least rows x features for which the features are quantised on several threads.
  static constexpr std::size_t parallel_binning_work = std::size_t{1} << 15;

  static double midpoint(double a, double b) {
    const double m = a + 0.5 * (b - a);
    return m < b ? m : a;  // a < m < b unless a and b are adjacent doubles
  }

  std::size_t rows_ = 0, cols_ = 0;
  std::vector<std::uint16_t> codes_;
  std::vector<std::vector<double>> cuts_;
};
}  // namespace detail

/// detail::BinnedMatrixImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using BinnedMatrix = detail::BinnedMatrixImpl<>;

/// How one tree is grown.
struct TreeParams {
  /// Maximum depth (the root is depth 0); 0: unlimited.
  std::size_t max_depth = 0;
  /// Least sum of hessians per child (rows, or bootstrap samples, for variance reduction).
  double min_child_weight = 1.0;
  /// L2 regularisation of leaf weights.
  double lambda = 0.0;
  /// Least gain of a split.
  double gamma = 0.0;
  /// Fraction of the features drawn (without replacement) as split candidates at each node;
  /// at least one.
  double feature_fraction = 1.0;

  void validate() const {
    if (!(min_child_weight >= 0)) throw std::invalid_argument("TreeParams: min_child_weight must be >= 0");
    if (!(lambda >= 0)) throw std::invalid_argument("TreeParams: lambda must be >= 0");
    if (!(gamma >= 0)) throw std::invalid_argument("TreeParams: gamma must be >= 0");
    if (!(feature_fraction > 0 && feature_fraction <= 1))
      throw std::invalid_argument("TreeParams: feature_fraction must be in (0, 1]");
  }
};

namespace detail {

/// A regression tree as flat arrays; node 0 is the root, a leaf has left == -1.
template <class Lazy = void>
class RegressionTreeImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;
  using VectorXd = Deferred<Eigen::VectorXd, Lazy>;

 public:
  /// Grows a tree over the rows `rows` of `x` with gradient statistics g, h (indexed by row;
  /// rows not listed are ignored). Draws feature subsets from `rng` (nothing when
  /// feature_fraction is 1). If `leaf_of` is not empty (one entry per row of x), it receives
  /// the leaf node of each listed row (the others are left as they are): boosting updates its
  /// training predictions from it without walking the tree.
  static RegressionTreeImpl grow(const BinnedMatrix& x, std::span<const double> g,
                             std::span<const double> h, std::vector<std::uint32_t> rows,
                             const TreeParams& params, Rng& rng,
                             std::span<std::int32_t> leaf_of = {}) {
    params.validate();
    if (g.size() != x.rows() || h.size() != x.rows())
      throw std::invalid_argument("RegressionTree::grow: g and h need one entry per row");
    if (!leaf_of.empty() && leaf_of.size() != x.rows())
      throw std::invalid_argument("RegressionTree::grow: leaf_of needs one entry per row");
    RegressionTreeImpl t;
    Builder b{x, g, h, params, rng, t, std::move(rows), leaf_of, {}, {}, {}, {}, {}, 1};
    b.init();
    b.node(0, b.rows.size(), 0);
    t.depth_ = t.depth_of(0);
    return t;
  }

  /// A single leaf predicting `value`.
  static RegressionTreeImpl constant(double value) {
    RegressionTreeImpl t;
    t.push(value);
    return t;
  }

  std::size_t node_count() const noexcept { return value_.size(); }
  std::size_t leaf_count() const noexcept {
    return static_cast<std::size_t>(std::count(left_.begin(), left_.end(), -1));
  }
  std::size_t depth() const noexcept { return depth_; }

  /// Multiplies every leaf value by s (shrinkage).
  void scale(double s) noexcept {
    for (auto& v : value_) v *= s;
  }

  /// The prediction for row r of x.
  double predict_row(const MatrixXd& x, Eigen::Index r) const noexcept {
    std::size_t n = 0;
    for (std::int32_t l = left_[0]; l >= 0; l = left_[n]) {
      // Both children are loaded, so that the choice compiles to a conditional move rather
      // than a branch that mispredicts half the time.
      const std::int32_t rr = right_[n];
      n = static_cast<std::size_t>(x(r, feature_[n]) <= threshold_[n] ? l : rr);
    }
    return value_[n];
  }

  /// out[r] += the prediction of row r, for every row of x.
  void predict_add(const MatrixXd& x, Eigen::Ref<VectorXd> out) const {
    predict_add(x, 0, {out.data(), static_cast<std::size_t>(out.size())});
  }

  /// out[k] += the prediction of row first + k of x, for k < out.size().
  void predict_add(const MatrixXd& x, Eigen::Index first, std::span<double> out) const {
    // Blocks of rows descend the tree in lockstep, one level per pass, without branches (a
    // leaf stays where it is), so that the rows' walks overlap rather than wait for each other.
    constexpr Eigen::Index block = 32;
    const auto rows = static_cast<Eigen::Index>(out.size());
    for (Eigen::Index r0 = 0; r0 < rows; r0 += block) {
      const Eigen::Index count = std::min(block, rows - r0);
      std::int32_t node[block] = {};
      for (std::size_t level = 0; level < depth_; ++level)
        for (Eigen::Index j = 0; j < count; ++j) {
          const auto n = static_cast<std::size_t>(node[j]);
          const std::int32_t l = left_[n], rr = right_[n];
          const Eigen::Index f = std::max(feature_[n], 0);  // a leaf's -1 would read outside x
          const std::int32_t next = x(first + r0 + j, f) <= threshold_[n] ? l : rr;
          node[j] = l < 0 ? node[j] : next;
        }
      for (Eigen::Index j = 0; j < count; ++j)
        out[static_cast<std::size_t>(r0 + j)] += value_[static_cast<std::size_t>(node[j])];
    }
  }

  VectorXd predict(const MatrixXd& x) const {
    VectorXd out = VectorXd::Zero(x.rows());
    predict_add(x, out);
    return out;
  }

  std::span<const std::int32_t> feature() const noexcept { return feature_; }
  std::span<const double> threshold() const noexcept { return threshold_; }
  std::span<const std::int32_t> left() const noexcept { return left_; }
  std::span<const std::int32_t> right() const noexcept { return right_; }
  std::span<const double> value() const noexcept { return value_; }

 private:
  std::size_t push(double value) {
    feature_.push_back(-1);
    threshold_.push_back(0.0);
    left_.push_back(-1);
    right_.push_back(-1);
    value_.push_back(value);
    return value_.size() - 1;
  }

  std::size_t depth_of(std::size_t n) const {
    if (left_[n] < 0) return 0;
    return 1 + std::max(depth_of(static_cast<std::size_t>(left_[n])),
                        depth_of(static_cast<std::size_t>(right_[n])));
  }

  struct Split {
    double gain = -1.0;
    std::size_t feature = 0;
    std::size_t bin = 0;  // rows with code <= bin go left
  };

  struct GradientPair {
    double g, h;
  };

  // A bin of a (G, H) histogram: the sums over its rows, and their count.
  struct Bin {
    double g = 0.0, h = 0.0;
    std::uint32_t n = 0;
  };

  // One thread's buffers for the split search.
  struct Scratch {
    std::vector<Bin> hist;                                        // per bin
    std::vector<std::pair<std::uint16_t, std::uint32_t>> sorted;  // (bin, row) of a small node
  };

  // Least work (about rows x candidate features, see best_split) of a node for which its split
  // search runs on several threads; below it a parallel region costs more than it saves.
  static constexpr std::size_t parallel_split_work = std::size_t{1} << 15;
  // Most features whose histograms are filled in one pass over a node's rows.
  static constexpr std::size_t group = 4;
  // Nodes with fewer rows are searched one feature at a time (grouping does not pay).
  static constexpr std::size_t small_node = 64;

  struct Builder {
    const BinnedMatrix& x;
    std::span<const double> g, h;
    const TreeParams& p;
    Rng& rng;
    RegressionTreeImpl& tree;
    std::vector<std::uint32_t> rows;
    std::span<std::int32_t> leaf_of;       // leaf of each row (when not empty)
    std::vector<std::size_t> features;     // candidate features (shuffled for subsampling)
    std::vector<std::size_t> chosen;       // this node's candidates, ascending
    std::vector<GradientPair> node_gh;     // the node's (g, h) in the order of its rows
    std::vector<Split> feature_best;       // best split of each chosen feature
    std::vector<Scratch> scratch;          // per thread
    int threads = 1;

    void init() {
      for (std::size_t f = 0; f < x.cols(); ++f)
        if (x.bins(f) > 1) features.push_back(f);
      // Inside a parallel region (the forest's loop over trees) a tree is grown serially.
      threads = omp_in_parallel() ? 1 : std::max(1, omp_get_max_threads());
      scratch.resize(static_cast<std::size_t>(threads));
    }

    double leaf_value(double gs, double hs) const {
      return hs + p.lambda > 0 ? -gs / (hs + p.lambda) : 0.0;
    }

    std::size_t node(std::size_t begin, std::size_t end, std::size_t depth) {
      double gs = 0, hs = 0, scale = 0;
      for (std::size_t i = begin; i < end; ++i) {
        const auto r = rows[i];
        gs += g[r];
        hs += h[r];
        if (h[r] > 0) scale += g[r] * g[r] / h[r];
      }
      const std::size_t id = tree.push(leaf_value(gs, hs));
      auto leaf = [&] {
        if (!leaf_of.empty())
          for (std::size_t i = begin; i < end; ++i) leaf_of[rows[i]] = static_cast<std::int32_t>(id);
        return id;
      };
      if (end - begin < 2 || (p.max_depth > 0 && depth >= p.max_depth) ||
          hs < 2 * p.min_child_weight || features.empty())
        return leaf();
      const Split s = best_split(begin, end, gs, hs, std::max(p.gamma, 1e-12 * scale));
      if (s.gain < 0) return leaf();
      const auto codes = x.codes(s.feature);
      const auto mid = static_cast<std::size_t>(
          std::partition(rows.begin() + static_cast<std::ptrdiff_t>(begin),
                         rows.begin() + static_cast<std::ptrdiff_t>(end),
                         [&](std::uint32_t r) { return codes[r] <= s.bin; }) -
          rows.begin());
      tree.feature_[id] = static_cast<std::int32_t>(s.feature);
      tree.threshold_[id] = x.cut(s.feature, s.bin);
      const std::size_t l = node(begin, mid, depth + 1);
      const std::size_t r = node(mid, end, depth + 1);
      tree.left_[id] = static_cast<std::int32_t>(l);
      tree.right_[id] = static_cast<std::int32_t>(r);
      return id;
    }

    void choose_features() {
      const std::size_t d = features.size();
      std::size_t k = d;
      if (p.feature_fraction < 1.0)
        k = std::clamp<std::size_t>(
            static_cast<std::size_t>(std::lround(p.feature_fraction * static_cast<double>(d))), 1, d);
      if (k < d)
        for (std::size_t i = 0; i < k; ++i)
          std::swap(features[i], features[i + uniform_index(rng, d - i)]);
      chosen.assign(features.begin(), features.begin() + static_cast<std::ptrdiff_t>(k));
      std::sort(chosen.begin(), chosen.end());
    }

    // Returns the best split with gain > min_gain (gain -1 when none): the first in (feature,
    // bin) order of those with the largest gain. Features are searched in groups of up to
    // `group`, whose histograms are filled in one pass over the node's rows; a group's features
    // in order, each starting from the best so far (so that few candidates improve on it, and
    // the branch that records one is predictable). The groups run one after the other, the best
    // carried across, or, for a large node, on several threads, each from scratch; the bests are
    // then combined in feature order, so the result does not depend on the grouping or the
    // thread count.
    Split best_split(std::size_t begin, std::size_t end, double gs, double hs, double min_gain) {
      choose_features();
      const std::size_t m = end - begin;
      const std::size_t k = chosen.size();
      // Rough cost of the search, in row-feature updates: a histogram costs a pass over the rows
      // and a scan of its bins (two divisions per bin), sorting a small node m log m.
      std::size_t work = 0;
      bool histograms = false;
      for (const std::size_t f : chosen) {
        const bool sorted = 4 * m < x.bins(f);
        work += sorted ? 8 * m : m + 6 * x.bins(f);
        histograms = histograms || !sorted;
      }
      const bool may_parallel = threads > 1 && k > 1 && work >= parallel_split_work;
      static detail::ParallelGate gate;  // the search of a large node: parallel when that pays
      const bool parallel = may_parallel && gate.choose();
      const detail::GatedRun timed(gate, parallel, static_cast<double>(work), may_parallel);
      if (!parallel && m < small_node) {
        // A small node (most nodes of a deep tree): one feature after the other, nothing to
        // gather, group or combine.
        Split best;
        Scratch& s = scratch[0];
        for (const std::size_t f : chosen) {
          const std::size_t nb = x.bins(f);
          if (4 * m < nb) {
            best = sorted_split(f, begin, end, gs, hs, min_gain, best, s);
            continue;
          }
          s.hist.assign(nb, Bin{});
          const auto codes = x.codes(f);
          for (std::size_t i = begin; i < end; ++i) {
            Bin& b = s.hist[codes[rows[i]]];
            b.g += g[rows[i]];
            b.h += h[rows[i]];
            ++b.n;
          }
          best = histogram_split(f, s.hist.data(), m, gs, hs, min_gain, best);
        }
        return best;
      }
      if (histograms) {
        node_gh.resize(m);
        for (std::size_t i = begin; i < end; ++i) node_gh[i - begin] = {g[rows[i]], h[rows[i]]};
      }
      feature_best.assign(k, Split{});
      // Groups: as large as allowed, but at least two per thread when parallel.
      const std::size_t groups_wanted =
          parallel ? std::max<std::size_t>(2 * static_cast<std::size_t>(threads), (k + group - 1) / group)
                   : (k + group - 1) / group;
      const std::size_t groups = std::min(k, groups_wanted);
      auto search = [&](std::size_t gi, Scratch& s, const Split& start) {
        // Group gi: features [gi k / groups, (gi + 1) k / groups) of `chosen`.
        const std::size_t lo = gi * k / groups, hi = (gi + 1) * k / groups;
        return search_group(lo, hi, begin, end, gs, hs, min_gain, start, s);
      };
      if (parallel) {
        const auto groups_signed = static_cast<std::ptrdiff_t>(groups);
#pragma omp parallel num_threads(std::min<int>(threads, static_cast<int>(groups)))
        {
          Scratch& s = scratch[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 1)
          for (std::ptrdiff_t gi = 0; gi < groups_signed; ++gi) search(static_cast<std::size_t>(gi), s, Split{});
        }
      } else {
        Split so_far;
        for (std::size_t gi = 0; gi < groups; ++gi) so_far = search(gi, scratch[0], so_far);
      }
      Split best;
      for (const Split& s : feature_best)
        if (s.gain > best.gain) best = s;
      return best;
    }

    // Sets feature_best[j], j in [lo, hi), to the best of `start` and the splits of chosen[lo..j];
    // returns the last.
    Split search_group(std::size_t lo, std::size_t hi, std::size_t begin, std::size_t end, double gs,
                       double hs, double min_gain, const Split& start, Scratch& s) {
      const std::size_t m = end - begin;
      std::size_t hist_of[group], offsets[group + 1] = {0};  // histogram index of each feature
      std::size_t count = 0;
      for (std::size_t j = lo; j < hi; ++j) {
        const std::size_t nb = x.bins(chosen[j]);
        hist_of[j - lo] = count;
        if (4 * m >= nb) {
          offsets[count + 1] = offsets[count] + nb;
          ++count;
        }
      }
      if (count > 0) {
        std::size_t js[group];
        for (std::size_t j = lo, c = 0; j < hi; ++j)
          if (4 * m >= x.bins(chosen[j])) js[c++] = j;
        s.hist.assign(offsets[count], Bin{});
        static_assert(group == 4, "fill_histograms is instantiated for 1 to 4 features");
        switch (count) {
          case 1: fill_histograms<1>(js, offsets, begin, end, s); break;
          case 2: fill_histograms<2>(js, offsets, begin, end, s); break;
          case 3: fill_histograms<3>(js, offsets, begin, end, s); break;
          default: fill_histograms<4>(js, offsets, begin, end, s); break;
        }
      }
      Split best = start;
      for (std::size_t j = lo; j < hi; ++j) {
        const std::size_t f = chosen[j];
        best = 4 * m < x.bins(f)
                   ? sorted_split(f, begin, end, gs, hs, min_gain, best, s)
                   : histogram_split(f, s.hist.data() + offsets[hist_of[j - lo]], m, gs, hs, min_gain, best);
        feature_best[j] = best;
      }
      return best;
    }

    // Accumulates the histograms of G features in one pass over the node's rows (the rows of
    // each bin in node order, as a pass per feature would).
    template <std::size_t G>
    void fill_histograms(const std::size_t* js, const std::size_t* offsets, std::size_t begin,
                         std::size_t end, Scratch& s) const {
      const std::uint16_t* codes[G];
      Bin* hist[G];
      for (std::size_t c = 0; c < G; ++c) {
        codes[c] = x.codes(chosen[js[c]]).data();
        hist[c] = s.hist.data() + offsets[c];
      }
      const std::uint32_t* r = rows.data() + begin;
      const std::size_t m = end - begin;
      for (std::size_t i = 0; i < m; ++i) {
        const GradientPair gh = node_gh[i];
        const std::uint32_t row = r[i];
        for (std::size_t c = 0; c < G; ++c) {
          Bin& b = hist[c][codes[c][row]];
          b.g += gh.g;
          b.h += gh.h;
          ++b.n;
        }
      }
    }

    // The scan of one feature's candidate splits in bin order: consider(gl, hl, nl, bin) offers
    // sending (gl, hl, nl) of the node's (gs, hs, m) to the left. Returns `start` unless a
    // candidate has a larger gain (> min_gain); then the first of the largest.
    template <class Scan>
    Split scan_splits(std::size_t f, std::size_t m, double gs, double hs, double min_gain,
                      const Split& start, Scan&& scan) const {
      Split best = start;
      const double parent = gs * gs / (hs + p.lambda);
      const double lambda = p.lambda, min_child_weight = p.min_child_weight;
      auto consider = [&](double gl, double hl, std::size_t nl, std::size_t bin) {
        if (nl == 0 || nl == m) return;
        const double hr = hs - hl, gr = gs - gl;
        if (hl < min_child_weight || hr < min_child_weight) return;
        if (hl + lambda <= 0 || hr + lambda <= 0) return;
        const double gain = gl * gl / (hl + lambda) + gr * gr / (hr + lambda) - parent;
        if (gain > min_gain && gain > best.gain) best = {gain, f, bin};
      };
      scan(consider);
      return best;
    }

    // The best of `start` and the splits of feature f, from its histogram.
    Split histogram_split(std::size_t f, const Bin* hist, std::size_t m, double gs, double hs,
                          double min_gain, const Split& start) const {
      const std::size_t nb = x.bins(f);
      return scan_splits(f, m, gs, hs, min_gain, start, [&](auto& consider) {
        double gl = 0, hl = 0;
        std::size_t nl = 0;
        for (std::size_t b = 0; b + 1 < nb; ++b) {
          if (hist[b].n == 0) continue;
          gl += hist[b].g;
          hl += hist[b].h;
          nl += hist[b].n;
          consider(gl, hl, nl, b);
        }
      });
    }

    // The best of `start` and the splits of feature f for a node with few rows and many bins: its
    // rows sorted by bin.
    Split sorted_split(std::size_t f, std::size_t begin, std::size_t end, double gs, double hs,
                       double min_gain, const Split& start, Scratch& s) const {
      const std::size_t m = end - begin;
      const auto codes = x.codes(f);
      auto& sorted = s.sorted;
      sorted.clear();
      for (std::size_t i = begin; i < end; ++i) sorted.emplace_back(codes[rows[i]], rows[i]);
      std::sort(sorted.begin(), sorted.end());
      return scan_splits(f, m, gs, hs, min_gain, start, [&](auto& consider) {
        double gl = 0, hl = 0;
        for (std::size_t i = 0; i < m; ++i) {
          gl += g[sorted[i].second];
          hl += h[sorted[i].second];
          if (i + 1 < m && sorted[i + 1].first != sorted[i].first) consider(gl, hl, i + 1, sorted[i].first);
        }
      });
    }
  };

  std::vector<std::int32_t> feature_;
  std::vector<double> threshold_;
  std::vector<std::int32_t> left_, right_;
  std::vector<double> value_;
  std::size_t depth_ = 0;
};
}  // namespace detail

/// detail::RegressionTreeImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using RegressionTree = detail::RegressionTreeImpl<>;

}  // namespace tunekit

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
