#include <tunekit/surrogate/cart.hpp>

#include "surrogate/metrics.hpp"

#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <set>
#include <vector>

namespace {

// Three pieces: 1 where x0 < 0.3; 5 where x0 >= 0.3 and x1 < 0.6; -2 elsewhere.
double piece(double x0, double x1) { return x0 < 0.3 ? 1.0 : (x1 < 0.6 ? 5.0 : -2.0); }
bool inside(double x0, double x1, double margin) {
  return std::abs(x0 - 0.3) > margin && (x0 < 0.3 || std::abs(x1 - 0.6) > margin);
}

// Variance-reduction tree (g = -y, h = 1, lambda = 0) on all rows of x.
tunekit::RegressionTree variance_tree(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                      const tunekit::BinningParams& binning = {}) {
  const tunekit::BinnedMatrix b(x, binning);
  std::vector<double> g(static_cast<std::size_t>(y.size())), h(g.size(), 1.0);
  std::vector<std::uint32_t> rows(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    g[i] = -y[static_cast<Eigen::Index>(i)];
    rows[i] = static_cast<std::uint32_t>(i);
  }
  tunekit::Rng rng(1);
  return tunekit::RegressionTree::grow(b, g, h, rows, {}, rng);
}

}  // namespace

TEST_CASE("a CART tree recovers a piecewise-constant function exactly (exact greedy)") {
  tunekit::Rng rng(42);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(300, 3, rng);  // x2 is noise-free junk
  Eigen::VectorXd y(x.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i) y[i] = piece(x(i, 0), x(i, 1));
  const auto t = variance_tree(x, y);
  CHECK(t.predict(x) == y);  // training points: exact
  CHECK(t.leaf_count() <= 4);  // greedy: 3, or 4 when the first split is on x1
  // Held-out points inside the pieces (0.05 away from a boundary; 300 points leave gaps of about
  // 0.01 at the boundaries, where the cut is the midpoint of the gap).
  const Eigen::MatrixXd q = surrogate_test::uniform_points(2000, 3, rng);
  std::size_t checked = 0;
  for (Eigen::Index i = 0; i < q.rows(); ++i) {
    if (!inside(q(i, 0), q(i, 1), 0.05)) continue;
    ++checked;
    CHECK(t.predict_row(q, i) == piece(q(i, 0), q(i, 1)));
  }
  CHECK(checked > 1000);
}

TEST_CASE("a CART tree on histogram bins recovers a piecewise-constant function away from the cuts") {
  // 4000 rows > histogram_threshold (1024): at most 256 quantile bins per feature.
  tunekit::Rng rng(7);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(4000, 2, rng);
  Eigen::VectorXd y(x.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i) y[i] = piece(x(i, 0), x(i, 1));
  const tunekit::BinnedMatrix b(x);
  CHECK(b.bins(0) <= 256);
  CHECK(b.bins(0) >= 250);
  const auto t = variance_tree(x, y);
  std::set<double> thresholds;
  for (std::size_t n = 0; n < t.node_count(); ++n)
    if (t.left()[n] >= 0) thresholds.insert(t.threshold()[n]);
  for (double c : thresholds) {
    bool is_cut = false;
    for (std::size_t f = 0; f < 2; ++f)
      for (std::size_t k = 0; k + 1 < b.bins(f); ++k) is_cut = is_cut || b.cut(f, k) == c;
    CHECK(is_cut);
  }
  // A bin is about 1/256 wide: only a bin straddling a boundary mixes pieces.
  const Eigen::MatrixXd q = surrogate_test::uniform_points(2000, 2, rng);
  for (Eigen::Index i = 0; i < q.rows(); ++i)
    if (inside(q(i, 0), q(i, 1), 0.02)) CHECK(t.predict_row(q, i) == piece(q(i, 0), q(i, 1)));
  // Exact greedy on the same data (threshold raised): every training point exact.
  const auto exact = variance_tree(x, y, {.histogram_threshold = 5000});
  CHECK(exact.predict(x) == y);
}

TEST_CASE("second-order statistics: leaf weight, gamma, min_child_weight, max_depth") {
  tunekit::Rng rng(3);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(64, 2, rng);
  const tunekit::BinnedMatrix b(x);
  std::vector<double> g(64), h(64);
  std::vector<std::uint32_t> rows(64);
  double gs = 0, hs = 0;
  for (std::size_t i = 0; i < 64; ++i) {
    g[i] = std::sin(10.0 * x(static_cast<Eigen::Index>(i), 0));
    h[i] = 0.5 + x(static_cast<Eigen::Index>(i), 1);
    rows[i] = static_cast<std::uint32_t>(i);
    gs += g[i];
    hs += h[i];
  }
  // gamma above any gain: one leaf with weight -G / (H + lambda).
  const auto stump = tunekit::RegressionTree::grow(b, g, h, rows, {.lambda = 2.0, .gamma = 1e9}, rng);
  REQUIRE(stump.node_count() == 1);
  CHECK(stump.value()[0] == doctest::Approx(-gs / (hs + 2.0)).epsilon(1e-12));
  // A depth-limited tree: the root's split has the largest gain over all (feature, cut) pairs.
  const auto t = tunekit::RegressionTree::grow(b, g, h, rows, {.max_depth = 2, .min_child_weight = 3.0, .lambda = 1.0}, rng);
  CHECK(t.depth() <= 2);
  double best = -1;
  for (std::size_t f = 0; f < 2; ++f)
    for (std::size_t k = 0; k + 1 < b.bins(f); ++k) {
      double gl = 0, hl = 0;
      for (std::size_t i = 0; i < 64; ++i)
        if (x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(f)) <= b.cut(f, k)) {
          gl += g[i];
          hl += h[i];
        }
      if (hl < 3.0 || hs - hl < 3.0) continue;
      best = std::max(best, gl * gl / (hl + 1) + (gs - gl) * (gs - gl) / (hs - hl + 1) - gs * gs / (hs + 1));
    }
  const auto f0 = t.feature()[0];
  REQUIRE(f0 >= 0);
  double gl = 0, hl = 0;
  for (std::size_t i = 0; i < 64; ++i)
    if (x(static_cast<Eigen::Index>(i), f0) <= t.threshold()[0]) {
      gl += g[i];
      hl += h[i];
    }
  CHECK(gl * gl / (hl + 1) + (gs - gl) * (gs - gl) / (hs - hl + 1) - gs * gs / (hs + 1) ==
        doctest::Approx(best).epsilon(1e-12));
  // Every leaf holds hessian mass >= min_child_weight.
  std::vector<double> leaf_h(t.node_count(), 0.0);
  for (Eigen::Index i = 0; i < 64; ++i) {
    std::int32_t n = 0;
    while (t.left()[static_cast<std::size_t>(n)] >= 0)
      n = x(i, t.feature()[static_cast<std::size_t>(n)]) <= t.threshold()[static_cast<std::size_t>(n)]
              ? t.left()[static_cast<std::size_t>(n)] : t.right()[static_cast<std::size_t>(n)];
    leaf_h[static_cast<std::size_t>(n)] += h[static_cast<std::size_t>(i)];
  }
  for (std::size_t n = 0; n < t.node_count(); ++n)
    if (t.left()[n] < 0) CHECK(leaf_h[n] >= 3.0);
}

TEST_CASE("feature subsampling is reproducible for a seed") {
  tunekit::Rng data(11);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(500, 10, data);
  Eigen::VectorXd y = x.rowwise().sum();
  const tunekit::BinnedMatrix b(x);
  std::vector<double> g(500), h(500, 1.0);
  std::vector<std::uint32_t> rows(500);
  for (std::size_t i = 0; i < 500; ++i) {
    g[i] = -y[static_cast<Eigen::Index>(i)];
    rows[i] = static_cast<std::uint32_t>(i);
  }
  tunekit::Rng r1(5), r2(5), r3(6);
  const tunekit::TreeParams p{.feature_fraction = 0.3};
  const auto a = tunekit::RegressionTree::grow(b, g, h, rows, p, r1);
  const auto c = tunekit::RegressionTree::grow(b, g, h, rows, p, r2);
  const auto d = tunekit::RegressionTree::grow(b, g, h, rows, p, r3);
  // Grown to pure leaves, every tree fits the training rows; held-out points tell them apart.
  const Eigen::MatrixXd q = surrogate_test::uniform_points(200, 10, data);
  CHECK(a.predict(q) == c.predict(q));
  CHECK(a.predict(q) != d.predict(q));
  CHECK_THROWS_AS(tunekit::RegressionTree::grow(b, g, h, rows, {.feature_fraction = 0.0}, r1),
                  std::invalid_argument);
}

TEST_CASE("a tree does not depend on the thread count, and leaf_of and batch prediction agree with predict_row") {
  // 6000 rows x 12 features: the root's split search (6000 x 8 candidates) runs on several
  // threads when there are several.
  tunekit::Rng data(13);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(6000, 12, data);
  std::vector<double> g(6000), h(6000);
  std::vector<std::uint32_t> rows;
  for (std::size_t i = 0; i < 6000; ++i) {
    const auto r = static_cast<Eigen::Index>(i);
    g[i] = -(std::sin(6 * x(r, 0)) + x(r, 1) * x(r, 2) + 0.1 * tunekit::uniform_real(data));
    h[i] = 0.5 + tunekit::uniform_real(data);
    if (i % 7 != 3) rows.push_back(static_cast<std::uint32_t>(i));  // row 3, 10, ... left out
  }
  const tunekit::BinnedMatrix b(x);
  const tunekit::TreeParams p{.max_depth = 8, .lambda = 1.0, .feature_fraction = 0.7};
  const int threads = omp_get_max_threads();
  auto grow = [&](int t, std::vector<std::int32_t>& leaf_of) {
    omp_set_num_threads(t);
    tunekit::Rng rng(3);
    leaf_of.assign(6000, -1);
    return tunekit::RegressionTree::grow(b, g, h, rows, p, rng, leaf_of);
  };
  std::vector<std::int32_t> leaf1, leaf2;
  const auto t1 = grow(1, leaf1);
  const auto t2 = grow(2, leaf2);
  omp_set_num_threads(threads);
  REQUIRE(t1.node_count() == t2.node_count());
  CHECK(std::equal(t1.feature().begin(), t1.feature().end(), t2.feature().begin()));
  CHECK(std::equal(t1.threshold().begin(), t1.threshold().end(), t2.threshold().begin()));
  CHECK(std::equal(t1.value().begin(), t1.value().end(), t2.value().begin()));
  CHECK(leaf1 == leaf2);
  // leaf_of: the leaf that walking the tree reaches, for the listed rows only.
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < 6000; ++i) {
    if (i % 7 == 3) {
      wrong += leaf1[i] != -1;
      continue;
    }
    std::int32_t n = 0;
    while (t1.left()[static_cast<std::size_t>(n)] >= 0) {
      const auto k = static_cast<std::size_t>(n);
      n = x(static_cast<Eigen::Index>(i), t1.feature()[k]) <= t1.threshold()[k] ? t1.left()[k] : t1.right()[k];
    }
    wrong += leaf1[i] != n;
  }
  CHECK(wrong == 0);
  // Batch prediction (lockstep blocks, any row range) = predict_row, bit for bit.
  const Eigen::MatrixXd q = surrogate_test::uniform_points(1000, 12, data);
  Eigen::VectorXd one(q.rows());
  for (Eigen::Index i = 0; i < q.rows(); ++i) one[i] = t1.predict_row(q, i);
  CHECK(t1.predict(q) == one);
  std::vector<double> part(77, 1.0);
  t1.predict_add(q, 900, part);
  for (std::size_t k = 0; k < part.size(); ++k) CHECK(part[k] == 1.0 + one[900 + static_cast<Eigen::Index>(k)]);
  CHECK(t1.depth() <= 8);
}
