// The ablation of tunekit's own search: TreeParzen<> with one part removed or swapped (one
// template argument or one option), replayed on a recorded space as tunekit-replay replays a
// preset (the same evaluator, overhead and seeds: the variant "default" makes tunekit-replay's
// trials of TreeParzen<>). One JSON line per seed: the found score (the best recorded time among
// the configs measured, PEERS.md's score) at each budget, the measurements to 0.95 and 0.99 of the
// optimum by it (e95, e99; null when never reached), and the run's search seconds.
// bench/tpe_ablation.sh runs every variant on every recorded space; bench/tpe_ablation.py
// makes the table with bootstrap intervals.
//
//   tpe_ablation --dataset FILE --variant NAME [--seeds S] [--budget B] [--parallel W] [--out FILE]
//   tpe_ablation --list
#include <tunekit/acquisition/predicted_mean.hpp>
#include <tunekit/evaluator/deterministic.hpp>
#include <tunekit/optimizer/tree_parzen.hpp>
#include <tunekit/replay/kernel_tuner_cache.hpp>
#include <tunekit/replay_score.hpp>
#include <tunekit/tuner.hpp>

#include <nlohmann/json.hpp>

#include "cli.hpp"

#include <array>
#include <cmath>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

namespace {

using namespace tunekit;

// The default's parts, to swap one at a time.
using Draws = GoodDensityDraws;
using Neighbours = IncumbentNeighbours;
using DefaultSources = CandidateSources<Draws, Neighbours, Crossovers>;
template <class Sources>
using WithSources = TreeParzen<MaximinStart, ModelStart<>, Sources>;

struct Variant {
  std::string_view name, what;
};
constexpr std::array<Variant, 14> variants{{
    {"default", "TreeParzen<>: every part"},
    {"no-model-start", "NoModelStart: TPE's sources from the end of the start"},
    {"gp-model-start", "ModelStart<GaussianProcess>: the model start's Gaussian process alone"},
    {"forest-model-start", "ModelStart<RandomForest>: the model start's forest alone"},
    {"no-crossovers", "the sources without Crossovers"},
    {"no-neighbours", "the sources without IncumbentNeighbours"},
    {"no-draws", "the sources without GoodDensityDraws"},
    {"model-pick", "the sources and ModelPick<> (tpe-gp-rf-restarts' parts)"},
    {"forest-model-pick", "the sources and ModelPick<RandomForest>"},
    {"uniform-mix", "UniformMix: the sources drawn uniformly"},
    {"random-start", "RandomStart: a start of random configs"},
    {"no-restarts", "NoRestarts"},
    {"no-failure-model", "TreeParzenParams::model_failures false"},
    {"tpe-local", "MaximinStart, NoModelStart, draws and neighbours, ThompsonMix, NoRestarts"},
}};

// Calls f.template operator()<Optimizer>(make) for the variant: make() builds the optimizer.
template <class F>
auto with_variant(std::string_view name, F&& f) {
  auto plain = []<class O>() { return [] { return O(); }; };
  if (name == "default") return f.template operator()<TreeParzen<>>(plain.template operator()<TreeParzen<>>());
  if (name == "no-model-start") {
    using O = TreeParzen<MaximinStart, NoModelStart>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "gp-model-start") {
    using O = TreeParzen<MaximinStart, ModelStart<GaussianProcess>>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "forest-model-start") {
    using O = TreeParzen<MaximinStart, ModelStart<RandomForest>>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "no-crossovers") {
    using O = WithSources<CandidateSources<Draws, Neighbours>>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "no-neighbours") {
    using O = WithSources<CandidateSources<Draws, Crossovers>>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "no-draws") {
    using O = WithSources<CandidateSources<Neighbours, Crossovers>>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "model-pick") {
    using O = WithSources<CandidateSources<Draws, Neighbours, Crossovers, ModelPick<>>>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "forest-model-pick") {
    using O = WithSources<CandidateSources<Draws, Neighbours, Crossovers, ModelPick<RandomForest>>>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "uniform-mix") {
    using O = TreeParzen<MaximinStart, ModelStart<>, DefaultSources, UniformMix>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "random-start") {
    using O = TreeParzen<RandomStart>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "no-restarts") {
    using O = TreeParzen<MaximinStart, ModelStart<>, DefaultSources, ThompsonMix, NoRestarts>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  if (name == "no-failure-model")
    return f.template operator()<TreeParzen<>>([] { return TreeParzen<>({.model_failures = false}); });
  if (name == "tpe-local") {
    using O = TreeParzen<MaximinStart, NoModelStart, CandidateSources<Draws, Neighbours>, ThompsonMix, NoRestarts>;
    return f.template operator()<O>(plain.template operator()<O>());
  }
  throw std::invalid_argument("unknown variant '" + std::string(name) + "' (tpe_ablation --list)");
}

nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

constexpr std::array<std::size_t, 5> budgets{25, 50, 100, 200, 400};

const char* const usage = R"(usage: tpe_ablation --dataset FILE --variant NAME [options]

Replays TreeParzen<> with one part removed or swapped on a recorded space (a dataset CSV, a Kernel
Tuner cache or T4 file, gzipped or not), one JSON line per seed: the found score at 25, 50, 100,
200 and 400 measured configs (those within the budget), e95 and e99, the search seconds.

  --dataset FILE     the recorded space (required)
  --variant NAME     the variant (--list)                             [default]
  --seeds S          seeds 0 .. S-1                                   [100]
  --first-seed K     seeds K .. K+S-1                                 [0]
  --budget B         measured configs per run                         [400]
  --parallel W       configs measured at once (TunerOptions::parallel) [1]
  --out FILE         append the lines to FILE                         [stdout]
  --list             the variants
)";

}  // namespace

int main(int argc, char** argv) {
  cli::CommandLine cl(argc, argv, "tpe_ablation", usage);
  if (cl.flag("--list")) {
    for (const auto& v : variants) std::cout << v.name << "\t" << v.what << "\n";
    return 0;
  }
  const std::string dataset = cl.text("--dataset", "");
  const std::string variant = cl.text("--variant", "default");
  const std::size_t seeds = cl.count("--seeds", 100), first = cl.natural("--first-seed", 0);
  const std::size_t budget = cl.count("--budget", 400), parallel = cl.count("--parallel", 1);
  const std::string out_path = cl.text("--out", "");
  cl.reject_unknown();
  if (dataset.empty()) cl.fail("--dataset is required");
  try {
    ReplayKernel kernel = replay_from_file(dataset);
    std::ofstream file;
    if (!out_path.empty()) file.open(out_path, std::ios::app);
    std::ostream& out = out_path.empty() ? std::cout : file;
    with_variant(variant, [&]<class O>(auto make) {
      using T = Tuner<NoSurrogate, PredictedMean, O, Deterministic>;
      for (std::size_t seed = first; seed < first + seeds; ++seed) {
        T tuner(kernel.space(), {.budget = {.trials = budget}, .parallel = parallel}, {.optimizer = make()});
        Rng rng(seed);
        const ReplayTrace trace = replay_trace(tuner, kernel, rng);
        nlohmann::json line{{"variant", variant},      {"space", kernel.name()},  {"seed", seed},
                            {"budget", budget},        {"parallel", parallel},
                            {"search_seconds", tuner.search_seconds()}};
        nlohmann::json found = nlohmann::json::object();
        for (std::size_t b : budgets)
          if (b <= trace.found.size()) found[std::to_string(b)] = score_at(trace, b, ScoreKind::found);
        line["found"] = found;
        line["e95"] = finite_or_null(evals_to(trace, 0.95, ScoreKind::found));
        line["e99"] = finite_or_null(evals_to(trace, 0.99, ScoreKind::found));
        out << line.dump() << "\n" << std::flush;
      }
      return 0;
    });
  } catch (const std::exception& e) {
    std::cerr << "tpe_ablation: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
