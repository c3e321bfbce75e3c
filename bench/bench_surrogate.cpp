// Fit and predict times of the surrogate models (GradientBoostedTrees, RandomForest,
// GaussianProcess) on a fixed synthetic regression problem: n training rows in [0, 1)^d drawn
// from tunekit::Rng(1), target Friedman's #1 function (Friedman 1991; sklearn's make_friedman1)
//
//     y = 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + e,   e uniform with variance 1,
//
// the other d - 5 features irrelevant. Arguments of the trees' benchmarks: n in {100, 500, 2000,
// 10000}, d in {10, 30}, threads in {1, 2} (omp_set_num_threads before each run); the Gaussian
// process's are its own (BM_gp_fit_predict).
//
// Boosting runs exactly 100 rounds (early_stopping_rounds = 0), so that fit time does not depend
// on when early stopping ends it; the other parameters are the defaults (AutoTVM's: max_depth 3,
// eta 0.3, lambda 1, gamma 1e-4, min_child_weight 1). The forest uses its defaults (100 trees,
// max_features 1/3, min_samples_leaf 1, bootstrap). Predict times are for 1000 query rows; the
// forest's `predict_std` is predict(X, mean, std) with the jackknife variance.
// GCC 12: false -Wmaybe-uninitialized in Eigen's AVX-512 reductions and GEMM kernel under
// -march=native (instantiated here, outside the surrogate headers' own pragma).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <tunekit/surrogate/gaussian_process.hpp>
#include <tunekit/surrogate/gradient_boosted_trees.hpp>
#include <tunekit/surrogate/random_forest.hpp>

#include <Eigen/Core>
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstddef>
#include <map>
#include <numbers>
#include <utility>

namespace {

constexpr std::size_t gbt_rounds = 100;
constexpr Eigen::Index query_rows = 1000;

struct Problem {
  Eigen::MatrixXd x, q;
  Eigen::VectorXd y;
};

Eigen::VectorXd friedman1(const Eigen::MatrixXd& x, tunekit::Rng& rng) {
  Eigen::VectorXd y(x.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double e = std::sqrt(12.0) * (tunekit::uniform_real(rng) - 0.5);
    y[i] = 10 * std::sin(std::numbers::pi * x(i, 0) * x(i, 1)) + 20 * (x(i, 2) - 0.5) * (x(i, 2) - 0.5) +
           10 * x(i, 3) + 5 * x(i, 4) + e;
  }
  return y;
}

Eigen::MatrixXd uniform_points(Eigen::Index n, Eigen::Index d, tunekit::Rng& rng) {
  Eigen::MatrixXd x(n, d);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j) x(i, j) = tunekit::uniform_real(rng);
  return x;
}

// The problem of size n x d, made once.
const Problem& problem(Eigen::Index n, Eigen::Index d) {
  static std::map<std::pair<Eigen::Index, Eigen::Index>, Problem> cache;
  auto it = cache.find({n, d});
  if (it == cache.end()) {
    tunekit::Rng rng(1);
    Problem p;
    p.x = uniform_points(n, d, rng);
    p.y = friedman1(p.x, rng);
    p.q = uniform_points(query_rows, d, rng);
    it = cache.emplace(std::make_pair(n, d), std::move(p)).first;
  }
  return it->second;
}

tunekit::GradientBoostedTrees boosting() {
  return tunekit::GradientBoostedTrees({.max_rounds = gbt_rounds, .early_stopping_rounds = 0});
}

// Reads (n, d, threads) and sets the thread count.
const Problem& setup(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(2)));
  return problem(state.range(0), state.range(1));
}

void BM_boosting_fit(benchmark::State& state) {
  const Problem& p = setup(state);
  for (auto _ : state) {
    auto m = boosting();
    tunekit::Rng rng(2);
    m.fit(p.x, p.y, rng);
    benchmark::DoNotOptimize(m.trees().data());
  }
  state.SetItemsProcessed(state.iterations() * p.x.rows());
}

void BM_boosting_predict(benchmark::State& state) {
  const Problem& p = setup(state);
  auto m = boosting();
  tunekit::Rng rng(2);
  m.fit(p.x, p.y, rng);
  for (auto _ : state) benchmark::DoNotOptimize(m.predict(p.q));
  state.SetItemsProcessed(state.iterations() * p.q.rows());
}

void BM_forest_fit(benchmark::State& state) {
  const Problem& p = setup(state);
  for (auto _ : state) {
    tunekit::RandomForest m;
    tunekit::Rng rng(2);
    m.fit(p.x, p.y, rng);
    benchmark::DoNotOptimize(m.trees().data());
  }
  state.SetItemsProcessed(state.iterations() * p.x.rows());
}

void BM_forest_predict(benchmark::State& state) {
  const Problem& p = setup(state);
  tunekit::RandomForest m;
  tunekit::Rng rng(2);
  m.fit(p.x, p.y, rng);
  for (auto _ : state) benchmark::DoNotOptimize(m.predict(p.q));
  state.SetItemsProcessed(state.iterations() * p.q.rows());
}

void BM_forest_predict_std(benchmark::State& state) {
  const Problem& p = setup(state);
  tunekit::RandomForest m;
  tunekit::Rng rng(2);
  m.fit(p.x, p.y, rng);
  Eigen::VectorXd mean, std;
  for (auto _ : state) {
    m.predict(p.q, mean, std);
    benchmark::DoNotOptimize(std.data());
  }
  state.SetItemsProcessed(state.iterations() * p.q.rows());
}

// The Gaussian process of TreeParzen's model start: fit on the n rows (n <= 60 there: the start's
// trials) and the mean and standard deviation of the 1000 query rows, with one length scale
// (ard_steps 0) or one per feature (ard_steps 50, the default preset's), one thread.
void BM_gp_fit_predict(benchmark::State& state) {
  omp_set_num_threads(1);
  const Problem& p = problem(state.range(0), state.range(1));
  Eigen::VectorXd mean, sd;
  for (auto _ : state) {
    tunekit::GaussianProcess m({.ard_steps = static_cast<std::size_t>(state.range(2))});
    m.fit(p.x, p.y);
    m.predict(p.q, mean, sd);
    benchmark::DoNotOptimize(sd.data());
  }
  state.SetItemsProcessed(state.iterations() * p.q.rows());
}

void sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "d", "threads"})
      ->ArgsProduct({{100, 500, 2000, 10000}, {10, 30}, {1, 2}})
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

BENCHMARK(BM_boosting_fit)->Apply(sizes);
BENCHMARK(BM_boosting_predict)->Apply(sizes);
BENCHMARK(BM_forest_fit)->Apply(sizes);
BENCHMARK(BM_forest_predict)->Apply(sizes);
BENCHMARK(BM_forest_predict_std)->Apply(sizes);
BENCHMARK(BM_gp_fit_predict)
    ->ArgNames({"n", "d", "ard_steps"})
    ->ArgsProduct({{20, 60}, {10, 30}, {0, 50}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
