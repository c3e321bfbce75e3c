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

#include "tunekit/random.hpp"

#include <Eigen/Core>

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

/// A feature matrix quantised to bin codes (column-major), with each feature's cut points.
class BinnedMatrix {
 public:
  BinnedMatrix() = default;

  BinnedMatrix(const Eigen::MatrixXd& x, const BinningParams& params = {}) {
    params.validate();
    rows_ = static_cast<std::size_t>(x.rows());
    cols_ = static_cast<std::size_t>(x.cols());
    for (Eigen::Index r = 0; r < x.rows(); ++r)
      for (Eigen::Index c = 0; c < x.cols(); ++c)
        if (std::isnan(x(r, c)))
          throw std::invalid_argument("BinnedMatrix: NaN feature at row " + std::to_string(r) +
                                      ", column " + std::to_string(c));
    const bool exact = rows_ <= params.histogram_threshold;
    codes_.resize(rows_ * cols_);
    cuts_.resize(cols_);
    std::vector<double> v(rows_);
    for (std::size_t f = 0; f < cols_; ++f) {
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
    const auto& c = cuts_[f];
    return static_cast<std::size_t>(std::lower_bound(c.begin(), c.end(), x) - c.begin());
  }

 private:
  static double midpoint(double a, double b) {
    const double m = a + 0.5 * (b - a);
    return m < b ? m : a;  // a < m < b unless a and b are adjacent doubles
  }

  std::size_t rows_ = 0, cols_ = 0;
  std::vector<std::uint16_t> codes_;
  std::vector<std::vector<double>> cuts_;
};

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

/// A regression tree as flat arrays; node 0 is the root, a leaf has left == -1.
class RegressionTree {
 public:
  /// Grows a tree over the rows `rows` of `x` with gradient statistics g, h (indexed by row;
  /// rows not listed are ignored). Draws feature subsets from `rng` (nothing when
  /// feature_fraction is 1).
  static RegressionTree grow(const BinnedMatrix& x, std::span<const double> g,
                             std::span<const double> h, std::vector<std::uint32_t> rows,
                             const TreeParams& params, Rng& rng) {
    params.validate();
    if (g.size() != x.rows() || h.size() != x.rows())
      throw std::invalid_argument("RegressionTree::grow: g and h need one entry per row");
    RegressionTree t;
    Builder b{x, g, h, params, rng, t, std::move(rows), {}, {}, {}, {}, {}};
    b.init();
    b.node(0, b.rows.size(), 0);
    return t;
  }

  /// A single leaf predicting `value`.
  static RegressionTree constant(double value) {
    RegressionTree t;
    t.push(value);
    return t;
  }

  std::size_t node_count() const noexcept { return value_.size(); }
  std::size_t leaf_count() const noexcept {
    return static_cast<std::size_t>(std::count(left_.begin(), left_.end(), -1));
  }
  std::size_t depth() const { return depth_of(0); }

  /// Multiplies every leaf value by s (shrinkage).
  void scale(double s) noexcept {
    for (auto& v : value_) v *= s;
  }

  /// The prediction for row r of x.
  double predict_row(const Eigen::MatrixXd& x, Eigen::Index r) const noexcept {
    std::int32_t n = 0;
    while (left_[static_cast<std::size_t>(n)] >= 0) {
      const auto i = static_cast<std::size_t>(n);
      n = x(r, feature_[i]) <= threshold_[i] ? left_[i] : right_[i];
    }
    return value_[static_cast<std::size_t>(n)];
  }

  /// out[r] += the prediction of row r, for every row of x.
  void predict_add(const Eigen::MatrixXd& x, Eigen::Ref<Eigen::VectorXd> out) const {
    for (Eigen::Index r = 0; r < x.rows(); ++r) out[r] += predict_row(x, r);
  }

  Eigen::VectorXd predict(const Eigen::MatrixXd& x) const {
    Eigen::VectorXd out = Eigen::VectorXd::Zero(x.rows());
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

  struct Builder {
    const BinnedMatrix& x;
    std::span<const double> g, h;
    const TreeParams& p;
    Rng& rng;
    RegressionTree& tree;
    std::vector<std::uint32_t> rows;
    std::vector<std::size_t> features;     // candidate features (shuffled for subsampling)
    std::vector<std::size_t> chosen;       // this node's candidates, ascending
    std::vector<double> hist_g, hist_h;    // per bin
    std::vector<std::uint32_t> hist_n;     // rows per bin
    std::vector<std::pair<std::uint16_t, std::uint32_t>> sorted;  // (bin, row) of a small node

    void init() {
      std::size_t max_bins = 1;
      for (std::size_t f = 0; f < x.cols(); ++f) {
        if (x.bins(f) > 1) features.push_back(f);
        max_bins = std::max(max_bins, x.bins(f));
      }
      hist_g.assign(max_bins, 0.0);
      hist_h.assign(max_bins, 0.0);
      hist_n.assign(max_bins, 0);
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
      if (end - begin < 2 || (p.max_depth > 0 && depth >= p.max_depth) ||
          hs < 2 * p.min_child_weight || features.empty())
        return id;
      const Split s = best_split(begin, end, gs, hs, std::max(p.gamma, 1e-12 * scale));
      if (s.gain < 0) return id;
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

    // Returns the best split with gain > min_gain (gain -1 when none).
    Split best_split(std::size_t begin, std::size_t end, double gs, double hs, double min_gain) {
      choose_features();
      Split best;
      const double parent = gs * gs / (hs + p.lambda);
      const std::size_t m = end - begin;
      auto consider = [&](double gl, double hl, std::size_t nl, std::size_t f, std::size_t bin) {
        if (nl == 0 || nl == m) return;
        const double hr = hs - hl, gr = gs - gl;
        if (hl < p.min_child_weight || hr < p.min_child_weight) return;
        if (hl + p.lambda <= 0 || hr + p.lambda <= 0) return;
        const double gain = gl * gl / (hl + p.lambda) + gr * gr / (hr + p.lambda) - parent;
        if (gain > min_gain && gain > best.gain) best = {gain, f, bin};
      };
      for (const std::size_t f : chosen) {
        const auto codes = x.codes(f);
        const std::size_t nb = x.bins(f);
        if (4 * m < nb) {
          // Few rows, many bins: sort the node's rows by bin.
          sorted.clear();
          for (std::size_t i = begin; i < end; ++i) sorted.emplace_back(codes[rows[i]], rows[i]);
          std::sort(sorted.begin(), sorted.end());
          double gl = 0, hl = 0;
          for (std::size_t i = 0; i < m; ++i) {
            gl += g[sorted[i].second];
            hl += h[sorted[i].second];
            if (i + 1 < m && sorted[i + 1].first != sorted[i].first) consider(gl, hl, i + 1, f, sorted[i].first);
          }
        } else {
          std::fill_n(hist_g.begin(), nb, 0.0);
          std::fill_n(hist_h.begin(), nb, 0.0);
          std::fill_n(hist_n.begin(), nb, 0u);
          for (std::size_t i = begin; i < end; ++i) {
            const auto r = rows[i];
            const auto b = codes[r];
            hist_g[b] += g[r];
            hist_h[b] += h[r];
            ++hist_n[b];
          }
          double gl = 0, hl = 0;
          std::size_t nl = 0;
          for (std::size_t b = 0; b + 1 < nb; ++b) {
            if (hist_n[b] == 0) continue;
            gl += hist_g[b];
            hl += hist_h[b];
            nl += hist_n[b];
            consider(gl, hl, nl, f, b);
          }
        }
      }
      return best;
    }
  };

  std::vector<std::int32_t> feature_;
  std::vector<double> threshold_;
  std::vector<std::int32_t> left_, right_;
  std::vector<double> value_;
};

}  // namespace tunekit

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
