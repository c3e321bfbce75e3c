// tunekit-replay: replays a tuner on a recorded tuning space (shared/datasets/*.csv) over many
// seeds and reports its search efficiency (the score of shared/datasets/PEERS.md).

#include <tunekit/tunekit.hpp>
#include <tunekit/kernel/replay_score.hpp>

#include "cli.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char* const usage = R"(usage: tunekit-replay --dataset FILE.csv [options]

Replays a tuner on a recorded, brute-force-measured tuning space: every measurement is answered
with the dataset's recorded samples, so the search sees real noise and real failures.

options:
  --dataset FILE.csv     recorded space (format: shared/datasets/README.md)      (required)
  --tuner NAME           tuner preset: random, grid, autotvm, adatune, rfei-sa,
                         rfei-csa, chameleon, sa-as, ppo (docs/concepts.md)       [random]
  --plan-size N          configs per round (AutoTVM's plan_size)                  [64]
  --budget N             distinct configs measured per run, failed ones included  [400]
  --seeds S              runs with seeds 0 .. S-1                                 [25]
  --flop F               FLOP per kernel run, to print GFLOPS                     [unknown]
  --evaluator NAME       measurement policy: preset (the tuner's own), deterministic
                         (warm-up 1, --repeat runs) or adaptive (AdaTune's AdaptiveCV:
                         warm-up 1, micro-batches of --batch runs, at most --max-runs,
                         until the throughput's CV < --cv-threshold)              [preset]
  --repeat N             runs per config of deterministic                         [3]
  --max-runs N           adaptive: most runs per config (AdaTune's n)             [500]
  --batch N              adaptive: runs per micro-batch (AdaTune's B)             [50]
  --cv-threshold X       adaptive: stopping threshold                             [0.1]
  --overhead SECONDS     simulated cost per config on top of its run times        [1.0]
  --out trials.csv       one row per (seed, trial): its status and time, the best so far,
                         the tuning clock, the measurement seconds so far, the score
  --summary-json FILE    the summary as JSON (score per budget, evals to 0.95/0.99)
  --quiet                no per-seed lines
  --help                 this text
)";

struct Args {
  std::string dataset, tuner, evaluator, out, summary_json;
  std::size_t budget, seeds, plan_size, repeat, max_runs, batch;
  double flop, overhead, cv_threshold;
  bool quiet;
};

Args parse(tunekit::cli::CommandLine& cl) {
  Args a;
  a.dataset = cl.text("--dataset", "");
  a.tuner = cl.text("--tuner", "random");
  a.evaluator = cl.text("--evaluator", "preset");
  a.repeat = cl.count("--repeat", 3);
  a.max_runs = cl.count("--max-runs", 500);
  a.batch = cl.count("--batch", 50);
  a.cv_threshold = cl.real("--cv-threshold", 0.1);
  a.out = cl.text("--out", "");
  a.summary_json = cl.text("--summary-json", "");
  a.budget = cl.count("--budget", 400);
  a.seeds = cl.count("--seeds", 25);
  a.plan_size = cl.count("--plan-size", 64);
  a.flop = cl.real("--flop", 0.0);
  a.overhead = cl.real("--overhead", 1.0);
  a.quiet = cl.flag("--quiet");
  cl.reject_unknown();
  if (a.dataset.empty()) cl.fail("--dataset is required");
  if (a.evaluator != "preset" && a.evaluator != "deterministic" && a.evaluator != "adaptive")
    cl.fail("unknown evaluator '" + a.evaluator + "' (available: preset, deterministic, adaptive)");
  return a;
}

using RunFn = std::function<tunekit::ReplayTrace(tunekit::ReplayKernel&, const Args&, tunekit::Rng&)>;

template <class TunerT>
tunekit::ReplayTrace run_one(tunekit::ReplayKernel& kernel, const Args& a, tunekit::Rng& rng,
                             typename TunerT::Evaluator evaluator) {
  TunerT tuner(kernel.space(), {.budget = {.trials = a.budget}, .plan_size = a.plan_size},
               {.evaluator = std::move(evaluator)});
  return tunekit::replay_trace(tuner, kernel, rng);
}

template <class TunerT>
RunFn runner() {
  return [](tunekit::ReplayKernel& kernel, const Args& a, tunekit::Rng& rng) {
    if (a.evaluator == "deterministic")
      return run_one<tunekit::WithEvaluator<TunerT, tunekit::Deterministic>>(
          kernel, a, rng, tunekit::Deterministic({.warmup = 1, .repeat = a.repeat}));
    if (a.evaluator == "adaptive")
      return run_one<tunekit::WithEvaluator<TunerT, tunekit::AdaptiveCV>>(
          kernel, a, rng,
          tunekit::AdaptiveCV({.max_runs = a.max_runs, .batch = a.batch, .threshold = a.cv_threshold}));
    return run_one<TunerT>(kernel, a, rng, typename TunerT::Evaluator());
  };
}

const std::map<std::string, RunFn>& tuners() {
  static const std::map<std::string, RunFn> t = {
      {"random", runner<tunekit::RandomSearchTuner>()},
      {"grid", runner<tunekit::GridSearchTuner>()},
      {"autotvm", runner<tunekit::AutoTvmTuner>()},
      {"adatune", runner<tunekit::AdaTuneTuner>()},
      {"rfei-sa", runner<tunekit::RfEiSaTuner>()},
      {"rfei-csa", runner<tunekit::RfEiCsaTuner>()},
      {"chameleon", runner<tunekit::ChameleonTuner>()},
      {"sa-as", runner<tunekit::SaAsTuner>()},
      {"ppo", runner<tunekit::PpoTuner>()},
  };
  return t;
}

nlohmann::json median_or_null(const std::vector<double>& v) {
  const double m = tunekit::quantile(v, 0.5);
  return std::isfinite(m) ? nlohmann::json(m) : nlohmann::json(nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  tunekit::cli::CommandLine cl(argc, argv, "tunekit-replay", usage);
  const Args args = parse(cl);
  const auto& table = tuners();
  const auto it = table.find(args.tuner);
  if (it == table.end()) {
    std::string names;
    for (const auto& [name, fn] : table) names += (names.empty() ? "" : ", ") + name;
    cl.fail("unknown tuner '" + args.tuner + "' (available: " + names + ")");
  }

  try {
    auto kernel = tunekit::ReplayKernel::from_csv(
        args.dataset, {.overhead_seconds = args.overhead, .flop = args.flop, .name = {}});
    const std::size_t valid = kernel.row_count();
    std::cerr << "tunekit-replay: " << args.dataset << ": " << valid << " recorded configs ("
              << kernel.failed_count() << " failed) of " << kernel.space().product_size()
              << ", optimum " << kernel.optimum_ms() << " ms; tuner " << args.tuner << ", budget "
              << args.budget << ", " << args.seeds << " seeds\n";

    std::ofstream out;
    if (!args.out.empty()) {
      out.open(args.out);
      if (!out) cl.fail("cannot write " + args.out);
      out << "seed,trial,config,status,time_ms,best_time_ms,simulated_seconds,measure_seconds,score\n";
    }

    std::vector<tunekit::ReplayTrace> traces;
    for (std::size_t seed = 0; seed < args.seeds; ++seed) {
      tunekit::Rng rng(seed);
      traces.push_back(it->second(kernel, args, rng));
      const auto& t = traces.back();
      double best_ms = std::numeric_limits<double>::infinity(), measuring = 0.0;
      for (std::size_t i = 0; i < t.trials.size(); ++i) {
        const auto& tr = t.trials[i];
        measuring += tr.measurement.cost;
        const double ms = tr.measurement.ok() ? tr.measurement.mean * 1e3
                                              : std::numeric_limits<double>::infinity();
        best_ms = std::min(best_ms, ms);
        if (out.is_open()) {
          char num[160];
          std::snprintf(num, sizeof num, "%.6g,%.6g,%.3f,%.6f,%.6g", ms, best_ms, tr.tuning_seconds, measuring,
                        t.score[i]);
          out << seed << ',' << i + 1 << ',' << kernel.space().describe(tr.config) << ','
              << tunekit::to_string(tr.measurement.status) << ',' << num << '\n';
        }
      }
      if (!args.quiet)
        std::cerr << "  seed " << seed << ": " << t.trials.size() << " trials, final score "
                  << tunekit::score_at(t, args.budget) << " (" << t.wall_seconds << " s)\n";
    }

    nlohmann::json summary;
    summary["dataset"] = std::filesystem::path(args.dataset).filename().string();
    summary["tuner"] = args.tuner;
    summary["evaluator"] = args.evaluator;
    summary["seeds"] = args.seeds;
    summary["budget"] = args.budget;
    summary["optimum_ms"] = kernel.optimum_ms();
    nlohmann::json med = nlohmann::json::object(), p25 = nlohmann::json::object(),
                   p75 = nlohmann::json::object();
    std::printf("%-8s %8s %8s %8s\n", "budget", "p25", "median", "p75");
    for (std::size_t b : tunekit::score_checkpoints(args.budget)) {
      std::vector<double> s;
      for (const auto& t : traces) s.push_back(tunekit::score_at(t, b));
      const auto key = std::to_string(b);
      med[key] = tunekit::quantile(s, 0.5);
      p25[key] = tunekit::quantile(s, 0.25);
      p75[key] = tunekit::quantile(s, 0.75);
      std::printf("%-8zu %8.3f %8.3f %8.3f\n", b, p25[key].get<double>(), med[key].get<double>(),
                  p75[key].get<double>());
    }
    summary["score_median"] = med;
    summary["score_p25"] = p25;
    summary["score_p75"] = p75;
    std::vector<double> e95, e99;
    double wall = 0.0;
    for (const auto& t : traces) {
      e95.push_back(tunekit::evals_to(t, 0.95));
      e99.push_back(tunekit::evals_to(t, 0.99));
      wall += t.wall_seconds;
    }
    summary["evals_to_95_median"] = median_or_null(e95);
    summary["evals_to_99_median"] = median_or_null(e99);
    summary["wall_seconds_per_run"] = wall / static_cast<double>(traces.size());
    std::vector<double> t95, t_total;
    for (const auto& t : traces) {
      t95.push_back(tunekit::measure_seconds_to(t, 0.95));
      t_total.push_back(tunekit::measure_seconds(t));
    }
    summary["measure_seconds_to_95_median"] = median_or_null(t95);
    summary["measure_seconds_median"] = median_or_null(t_total);
    std::printf("simulated measurement seconds to 0.95: %s, in all: %s (median over seeds)\n",
                summary["measure_seconds_to_95_median"].dump().c_str(),
                summary["measure_seconds_median"].dump().c_str());
    std::printf("evals to 0.95: %s, to 0.99: %s (median over seeds; null: not reached by half)\n",
                summary["evals_to_95_median"].dump().c_str(),
                summary["evals_to_99_median"].dump().c_str());

    if (!args.summary_json.empty()) {
      std::ofstream js(args.summary_json);
      if (!js) cl.fail("cannot write " + args.summary_json);
      js << summary.dump(2) << '\n';
    }
  } catch (const std::exception& e) {
    std::cerr << "tunekit-replay: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
