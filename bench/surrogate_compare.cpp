// The tunekit side of bench/compare_surrogates.py: fits one surrogate model to a training CSV,
// predicts the rows of a query CSV and reports the fit time (best of --repeats fits, each from
// the same seed), so that the script can set it beside XGBoost and scikit-learn on the same data
// with the same hyperparameters.
//
//   surrogate_compare --model boosting|forest --train train.csv --query query.csv --out pred.txt
//                     [--threads 1] [--repeats 5] [--seed 1] [boosting or forest parameters]
//
// train.csv: a header line, then one row per sample: the features, the target last. query.csv:
// a header line, then the features only. pred.txt gets one prediction per query row. Standard
// output gets one line `fit_seconds <best> predict_seconds <best> trees <count>`.
// GCC 12: false -Wmaybe-uninitialized in Eigen's AVX-512 reductions and GEMM kernel under
// -march=native (instantiated here, outside the surrogate headers' own pragma).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <tunekit/surrogate/gradient_boosted_trees.hpp>
#include <tunekit/surrogate/random_forest.hpp>

#include "cli.hpp"

#include <Eigen/Core>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr const char* usage = R"(surrogate_compare: fit a tunekit surrogate to a CSV and time it.

  --model boosting|forest   the model (required)
  --train FILE              training CSV: header, features then target per row (required)
  --query FILE              query CSV: header, features per row (required)
  --out FILE                predictions, one per line (required)
  --threads N               OpenMP threads (default 1)
  --repeats K               fits to time; the best is reported (default 5)
  --seed S                  seed of every fit (default 1)
boosting (defaults: AutoTVM's; exactly --rounds trees, no early stopping):
  --rounds 100 --max-depth 3 --eta 0.3 --lambda 1 --gamma 1e-4 --min-child-weight 1
  --base-score 0.5
forest (defaults: tunekit's):
  --trees 100 --max-features 0.3333333333333333 --min-samples-leaf 1
both:
  --histogram-threshold 1024 --max-bins 256   (exact greedy up to this many rows, else bins)
)";

struct Table {
  std::size_t cols = 0;
  std::vector<double> values;  // row-major
};

Table read_csv(const std::string& path, tunekit::cli::CommandLine& cl) {
  std::ifstream in(path);
  if (!in) cl.fail("cannot read " + path);
  std::string line;
  std::getline(in, line);  // header
  Table t;
  t.cols = static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
  std::size_t row = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++row;
    std::stringstream ss(line);
    std::string cell;
    std::size_t c = 0;
    while (std::getline(ss, cell, ',')) {
      t.values.push_back(std::stod(cell));
      ++c;
    }
    if (c != t.cols) cl.fail(path + ": row " + std::to_string(row) + " has " + std::to_string(c) + " fields");
  }
  return t;
}

Eigen::MatrixXd columns(const Table& t, std::size_t count) {
  const auto rows = static_cast<Eigen::Index>(t.values.size() / t.cols);
  Eigen::MatrixXd m(rows, static_cast<Eigen::Index>(count));
  for (Eigen::Index r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < count; ++c)
      m(r, static_cast<Eigen::Index>(c)) = t.values[static_cast<std::size_t>(r) * t.cols + c];
  return m;
}

// Best of `repeats` wall-clock times of f(), in seconds.
template <class F>
double best_seconds(std::size_t repeats, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  tunekit::cli::CommandLine cl(argc, argv, "surrogate_compare", usage);
  const std::string model = cl.text("--model", "");
  const std::string train_path = cl.text("--train", ""), query_path = cl.text("--query", "");
  const std::string out_path = cl.text("--out", "");
  const auto threads = cl.count("--threads", 1);
  const auto repeats = cl.count("--repeats", 5);
  const auto seed = cl.count("--seed", 1);
  const tunekit::BinningParams binning{.histogram_threshold = cl.count("--histogram-threshold", 1024),
                                       .max_bins = cl.count("--max-bins", 256)};
  const tunekit::GradientBoostedTreesParams bp{.max_depth = cl.count("--max-depth", 3),
                                               .gamma = cl.real("--gamma", 1e-4),
                                               .min_child_weight = cl.real("--min-child-weight", 1.0),
                                               .eta = cl.real("--eta", 0.3),
                                               .lambda = cl.real("--lambda", 1.0),
                                               .base_score = cl.real("--base-score", 0.5),
                                               .max_rounds = cl.count("--rounds", 100),
                                               .early_stopping_rounds = 0,
                                               .binning = binning};
  const tunekit::RandomForestParams fp{.n_trees = cl.count("--trees", 100),
                                       .min_samples_leaf = cl.count("--min-samples-leaf", 1),
                                       .max_features = cl.real("--max-features", 1.0 / 3.0),
                                       .binning = binning};
  cl.reject_unknown();
  if (model != "boosting" && model != "forest") cl.fail("--model must be boosting or forest");
  if (train_path.empty() || query_path.empty() || out_path.empty()) cl.fail("--train, --query and --out are required");

  const Table train = read_csv(train_path, cl), query = read_csv(query_path, cl);
  if (train.cols < 2 || query.cols != train.cols - 1)
    cl.fail("the query CSV needs the training CSV's columns less the target");
  const Eigen::MatrixXd x = columns(train, train.cols - 1), q = columns(query, query.cols);
  Eigen::VectorXd y(x.rows());
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    y[r] = train.values[static_cast<std::size_t>(r) * train.cols + train.cols - 1];
  omp_set_num_threads(static_cast<int>(threads));

  Eigen::VectorXd pred;
  double fit_s = 0, predict_s = 0;
  std::size_t trees = 0;
  auto run = [&](auto m) {
    fit_s = best_seconds(repeats, [&] {
      tunekit::Rng rng(seed);
      m.fit(x, y, rng);
    });
    predict_s = best_seconds(repeats, [&] { pred = m.predict(q); });
    trees = m.trees().size();
  };
  if (model == "boosting") run(tunekit::GradientBoostedTrees(bp));
  else run(tunekit::RandomForest(fp));

  std::FILE* out = std::fopen(out_path.c_str(), "w");
  if (!out) cl.fail("cannot write " + out_path);
  for (Eigen::Index i = 0; i < pred.size(); ++i) std::fprintf(out, "%.17g\n", pred[i]);
  std::fclose(out);
  std::printf("fit_seconds %.6g predict_seconds %.6g trees %zu\n", fit_s, predict_s, trees);
}
