// GCC 12: false -Wmaybe-uninitialized in Eigen's AVX-512 reductions under -march=native.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <tunekit/surrogate/gradient_boosted_trees.hpp>

#include "support/what_of.hpp"
#include "surrogate/metrics.hpp"

#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>

namespace {

// A smooth positive function on [0, 1)^4.
Eigen::VectorXd smooth(const Eigen::MatrixXd& x) {
  Eigen::VectorXd y(x.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    y[i] = 3 + std::sin(3 * x(i, 0)) + 2 * x(i, 1) * x(i, 1) + std::exp(-4 * std::pow(x(i, 2) - 0.5, 2)) +
           0.5 * x(i, 3);
  return y;
}

}  // namespace

TEST_CASE("average recall matches AutoTVM's a-recall@N") {
  // Values from AutoTVM's python (get_rank, recall_curve, xgb_average_recalln_curve_score).
  Eigen::VectorXd p(6), l(6);
  p << 0.1, 0.9, 0.4, 0.7, 0.2, 0.8;
  l << 1.0, 5.0, 2.0, 3.0, 0.5, 4.0;
  CHECK(tunekit::average_recall(p, l, 4) == doctest::Approx(0.47916666666666663).epsilon(1e-14));
  CHECK(tunekit::average_recall(p, l, 8) == doctest::Approx(0.44375).epsilon(1e-14));
  Eigen::VectorXd p2(7), l2(7);
  p2 << 0.3, 0.1, 0.5, 0.2, 0.9, 0.8, 0.05;
  l2 << 3, 7, 1, 2, 6, 4, 5;
  CHECK(tunekit::average_recall(p2, l2, 5) == doctest::Approx(0.3866666666666666).epsilon(1e-14));
  CHECK(tunekit::average_recall(p2, l2, 3) == doctest::Approx(0.27777777777777773).epsilon(1e-14));
}

TEST_CASE("boosted trees fit a smooth function: held-out R^2 above 0.95") {
  tunekit::Rng rng(1);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(1000, 4, rng);
  const Eigen::MatrixXd q = surrogate_test::uniform_points(1000, 4, rng);
  tunekit::GradientBoostedTrees m;
  m.fit(x, smooth(x), rng);
  const double r2 = surrogate_test::r_squared(smooth(q), m.predict(q));
  std::printf("boosting (AutoTVM defaults): %zu trees, held-out R^2 %.4f\n", m.trees().size(), r2);
  CHECK(r2 > 0.95);  // measured 0.9845 (50 trees kept)
  // Predictions are in y's units (targets were normalised by their maximum).
  CHECK(std::abs(m.predict(q).mean() - smooth(q).mean()) < 0.1);
  // Trees keep AutoTVM's depth.
  for (const auto& t : m.trees()) CHECK(t.depth() <= 3);
}

TEST_CASE("rank loss orders a held-out set: pairwise accuracy above 0.9") {
  tunekit::Rng rng(2);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(400, 4, rng);  // all pairs
  const Eigen::MatrixXd x_big = surrogate_test::uniform_points(1500, 4, rng);  // sampled pairs
  const Eigen::MatrixXd q = surrogate_test::uniform_points(500, 4, rng);
  for (const auto* train : {&x, &x_big}) {
    tunekit::GradientBoostedTrees m({.loss = tunekit::BoostingLoss::pairwise_rank});
    m.fit(*train, smooth(*train), rng);
    const double acc = surrogate_test::pairwise_accuracy(smooth(q), m.predict(q));
    std::printf("rank loss, %ld rows: %zu trees, held-out pairwise accuracy %.4f\n",
                static_cast<long>(train->rows()), m.trees().size(), acc);
    CHECK(acc > 0.9);  // chance: 0.5; measured 0.962 (400 rows) and 0.980 (1500 rows)
  }
}

TEST_CASE("boosting is bit-identical for a seed") {
  tunekit::Rng data(3);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(1200, 6, data);
  const Eigen::MatrixXd q = surrogate_test::uniform_points(200, 6, data);
  for (auto loss : {tunekit::BoostingLoss::squared_error, tunekit::BoostingLoss::pairwise_rank}) {
    auto run = [&] {
      tunekit::GradientBoostedTrees m({.subsample = 0.8, .feature_fraction = 0.7, .loss = loss});
      tunekit::Rng rng(99);
      m.fit(x, smooth(x), rng);
      return m.predict(q);
    };
    CHECK(run() == run());
  }
  CHECK_THROWS_AS(tunekit::GradientBoostedTrees({.eta = 0.0}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::GradientBoostedTrees({.subsample = 1.5}), std::invalid_argument);
}

TEST_CASE("without early stopping boosting keeps max_rounds trees, for any thread count") {
  tunekit::Rng data(4);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(3000, 8, data);
  const Eigen::MatrixXd q = surrogate_test::uniform_points(2000, 8, data);
  const int threads = omp_get_max_threads();
  auto run = [&](int t, double subsample) {
    omp_set_num_threads(t);
    tunekit::GradientBoostedTrees m({.subsample = subsample, .max_rounds = 70, .early_stopping_rounds = 0});
    tunekit::Rng rng(8);
    m.fit(x, smooth(x), rng);
    CHECK(m.trees().size() == 70);
    // predict = base_score + the trees' sum, in tree order, times the targets' maximum.
    Eigen::VectorXd sum(q.rows());
    for (Eigen::Index i = 0; i < q.rows(); ++i) {
      double s = 0.5;
      for (const auto& tree : m.trees()) s += tree.predict_row(q, i);
      sum[i] = s * smooth(x).maxCoeff();
    }
    const Eigen::VectorXd p = m.predict(q);
    CHECK(p == sum);
    return p;
  };
  for (double subsample : {1.0, 0.7}) {
    const Eigen::VectorXd one = run(1, subsample), two = run(2, subsample);
    CHECK(one == two);
  }
  omp_set_num_threads(threads);
  CHECK_NOTHROW(tunekit::GradientBoostedTrees({.early_stopping_rounds = 0}));
}

TEST_CASE("boosted trees from a margin: a constant margin of base_score is the plain fit") {
  // With max(y) = 1 (no rescaling), boosting from the margin 0.5 on every row is boosting from
  // base_score 0.5: the same trees; predict() then gives the trees' part, without the margin.
  tunekit::Rng data(5);
  const Eigen::MatrixXd x = surrogate_test::uniform_points(300, 4, data);
  Eigen::VectorXd y = smooth(x);
  y /= y.maxCoeff();
  tunekit::GradientBoostedTrees plain, margin;
  tunekit::Rng r1(6), r2(6);
  plain.fit(x, y, r1);
  margin.fit(x, y, Eigen::VectorXd::Constant(y.size(), 0.5), r2);
  REQUIRE(plain.trees().size() == margin.trees().size());
  const Eigen::MatrixXd q = surrogate_test::uniform_points(200, 4, data);
  CHECK((plain.predict(q) - (margin.predict(q).array() + 0.5).matrix()).cwiseAbs().maxCoeff() < 1e-12);
  // A margin that is the truth leaves the trees almost nothing to fit.
  tunekit::GradientBoostedTrees exact;
  tunekit::Rng r3(6);
  exact.fit(x, y, y, r3);
  CHECK(exact.predict(x).cwiseAbs().maxCoeff() < 1e-9);
  CHECK(tunekit::test::what_of<std::invalid_argument>([&] { exact.fit(x, y, Eigen::VectorXd(3), r3); }) ==
        "GradientBoostedTrees::fit: the margin needs one value per row of y");
}
