// Tunes the 12 convolution layers of ResNet-18 (batch 1) on this CPU as one multi-task problem:
// a scheduler gives time slots to the layers' tuners, minimising the network's weighted sum of
// layer latencies; prints that objective over time and each layer's best.

#include <tunekit/kernels/cpu/conv2d.hpp>
#include <tunekit/kernels/cpu/resnet18.hpp>
#include <tunekit/multi_task_tuner.hpp>
#include <tunekit/preset_registry.hpp>
#include <tunekit/scheduler/by_name.hpp>
#include <tunekit/tunekit.hpp>

#include "cli.hpp"
#include "tuning.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* const usage_head = R"(usage: tune_resnet18 [options]

Tunes tunekit's OpenMP conv2d on the 12 convolution layers of ResNet-18 (TVM's x86 workload
list, batch 1) as one network: a scheduler gives slots of trials to the layers' tuners (each keeps
its model and history between its slots), minimising sum_layer weight x best latency (weight:
how often the layer occurs in ResNet-18). Every configuration is verified against a
double-precision reference. Prints the objective after every slot and each layer's best; then
measures each layer's fastest configurations again, in turns, and keeps the fastest of those.

options:
  --scheduler NAME  sequential, round-robin, random, flop, bandit, bandit-epsilon,
                    bandit-softmax, gradient (docs/concepts.md)             [gradient]
)";

// The --tuner line, whose default is the library's (default_preset).
const std::string tuner_line =
    "  --tuner NAME      per-layer tuner, a preset (docs/concepts.md):         [" + std::string(tunekit::default_preset) + "]\n";

const char* const usage_tail = R"(  --budget T        configurations to measure, all layers together          [1200]
  --seconds S       stop after S seconds of tuning (all layers' clocks)     [150]
  --slot N          configurations per slot                                 [16]
  --threads P       OpenMP threads per run               [all cores, or 1/W of them]
  --workers W       measure each slot's rounds on W worker processes, each pinned to
                    1/W of the cores (docs/farm.md): the same trials, W at a time  [0]
  --seed X          seed of the search and of the random data               [1]
  --confirm K       after tuning, measure each layer's K fastest configurations
                    again, 3 turns each, in turns, and keep the fastest by those (the
                    best of many noisy measurements is biased low); 0: none [5]
  --log FILE        tuning log, one JSON line per measurement   [tune_resnet18.jsonl]
  --resume          continue a killed run from its log instead of starting a new one: with
                    the same options and --seed it replays the logged measurements and ends
                    as the uninterrupted run would have (when --budget ends it, not --seconds)
  --help            this text
)";
// The --confirm text above states ConfirmParams' turns as a number.
static_assert(tunekit::ConfirmParams{}.turns == 3, "the --confirm help text says 3 turns");

constexpr const auto& resnet18_weights = tunekit::cpu::resnet18_conv2d_occurrences;

struct Setup {
  std::string scheduler, tuner, log;
  std::size_t budget, slot, workers, confirm;
  double seconds;
  int threads;
  std::uint64_t seed;
  bool resume;
};

// Prints the objective after each slot.
struct SlotPrinter {
  const std::vector<std::string>* names;
  void on_slot(const tunekit::MultiTaskState& s) {
    const auto& p = s.objective.back();
    const auto& t = s.tasks[s.task];
    std::printf("slot %3zu  %-13s  trials %5zu  clock %7.1f s  layer best %9.4f ms  objective %s\n", s.slot + 1,
                (*names)[s.task].c_str(), p.trial, p.seconds, t.best_latency.back() * 1e3,
                std::isfinite(p.objective) ? (std::to_string(p.objective * 1e3) + " ms").c_str() : "(a layer has no result yet)");
    std::fflush(stdout);
  }
};

// The confirmation after the run (Setup::confirm): each layer's fastest configurations measured
// again in this process with its tuner's evaluator (tunekit::confirm_tasks); prints each layer's
// tuned and confirmed latency and the objective by the confirmed ones. Nothing is logged: a
// resumed run confirms again.
template <class MT>
void confirm_layers(MT& mt, std::vector<std::unique_ptr<tunekit::cpu::Conv2dKernel>>& kernels,
                    const std::vector<std::string>& names, const Setup& s, tunekit::Rng& rng) {
  const tunekit::ConfirmParams p{.top = s.confirm};
  const auto confirmed = tunekit::confirm_tasks(mt, kernels, rng, p);
  std::printf("\nconfirming: each layer's %zu fastest configurations measured again, %zu turns each, in turns\n",
              p.top, p.turns);
  std::printf("%-13s %11s %13s  %s\n", "layer", "tuned ms", "confirmed ms", "kept configuration");
  double objective = 0.0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const auto* b = mt.tuner(i).history().best();
    // The confirmed latency of the kept config; a layer none of whose candidates could be
    // measured again keeps its tuned best at its tuned latency.
    const auto* kept = tunekit::first_confirmed(confirmed[i]);
    const double ms = (kept ? kept->median : b->measurement.mean) * 1e3;
    objective += resnet18_weights[i] * ms;
    std::printf("%-13s %11.4f %13.4f  %s\n", names[i].c_str(), b->measurement.mean * 1e3, ms,
                kernels[i]->space().describe(kept ? kept->trial.config : b->config).c_str());
  }
  std::printf("\nobjective by the confirmed latencies: %.4f ms\n", objective);
}

template <class TunerT>
int run(const Setup& s, std::vector<std::unique_ptr<tunekit::cpu::Conv2dKernel>>& kernels,
        const std::vector<std::string>& names) {
  tunekit::MultiTaskTuner<tunekit::AnyScheduler, TunerT> mt(
      tunekit::make_scheduler(s.scheduler),
      {.budget = {.trials = s.budget, .seconds = s.seconds}, .slot_trials = s.slot, .plan_size = s.slot});
  for (std::size_t i = 0; i < kernels.size(); ++i)
    mt.add_task(*kernels[i], {.weight = resnet18_weights[i], .tag = "conv2d"},
                // 5 timed runs after a warm-up; adatune's adaptive evaluator with tune_conv2d's parameters.
                {.evaluator = tunekit::preset_evaluator<TunerT>({.warmup = 1, .repeat = 5},
                                                                {.max_runs = 100, .batch = 5})});
  tunekit::Rng rng(s.seed);
#if defined(TUNEKIT_EXAMPLES_MPI)
  if (examples::MpiRun::measures_only()) {
    // A worker rank: measures rank 0's jobs, no log, no output (its tune() calls no callback). The
    // callbacks are rank 0's types, so that both share one instantiation of the loop (see
    // examples::tune_with), and touch none of its files.
    tunekit::MpiFarm farm;
    mt.tune(kernels, farm, rng, tunekit::LogToFile::none(), SlotPrinter{&names});
    return 0;
  }
#endif
  if (!s.resume) std::filesystem::remove(s.log);
  // Exact resume: tune() re-runs the slots from the start with the same seed, taking the logged
  // measurements instead of measuring them again, and so continues as if never interrupted.
  if (const auto n = tunekit::resume_exact(mt, s.log))
    std::printf("resuming: %zu measurements from %s replayed, not measured again\n", n, s.log.c_str());
  const auto r = [&] {
#if defined(TUNEKIT_EXAMPLES_MPI)
    if (examples::MpiRun::active()) {
      tunekit::MpiFarm farm;
      int ranks = 1;
      MPI_Comm_size(MPI_COMM_WORLD, &ranks);
      std::printf("measuring on %d MPI ranks\n", ranks - 1);
      return mt.tune(kernels, farm, rng, tunekit::LogToFile(s.log), SlotPrinter{&names});
    }
#endif
    if (s.workers == 0) return mt.tune(kernels, rng, tunekit::LogToFile(s.log), SlotPrinter{&names});
    const std::size_t cores = std::max<std::size_t>(1, std::thread::hardware_concurrency() / s.workers);
    tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(s.workers, cores)});
    std::printf("measuring on %zu worker processes, %zu cores each\n", s.workers, cores);
    return mt.tune(kernels, farm, rng, tunekit::LogToFile(s.log), SlotPrinter{&names});
  }();
  std::printf("\n%s: %zu configurations in %zu slots, %.1f s on the tuning clock (%.1f s measuring, %.2f s "
              "scheduling); log %s\n",
              tunekit::to_string(r.reason), r.trials, r.slots, mt.seconds(), mt.measure_seconds(),
              mt.scheduler_seconds(), s.log.c_str());
  std::printf("\n%-13s %6s %7s %6s %11s %9s  %s\n", "layer", "weight", "slots", "trials", "best ms", "GFLOPS",
              "best configuration");
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const auto* b = mt.tuner(i).history().best();
    std::printf("%-13s %6.0f %7zu %6zu %11.4f %9.1f  %s\n", names[i].c_str(), resnet18_weights[i],
                mt.progress()[i].slots, mt.tuner(i).history().size(), b ? b->measurement.mean * 1e3 : INFINITY,
                b ? b->measurement.throughput(kernels[i]->flop()) / 1e9 : 0.0,
                b ? kernels[i]->space().describe(b->config).c_str() : "-");
  }
  std::printf("\nobjective (sum of weight x best latency): %.4f ms\n", r.objective * 1e3);
  if (s.confirm > 0 && std::isfinite(r.objective)) confirm_layers(mt, kernels, names, s, rng);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const examples::MpiRun mpi(argc, argv);  // under mpirun: rank 0 tunes, the others measure
  tunekit::cli::CommandLine cl(argc, argv, "tune_resnet18", usage_head + tuner_line + tunekit::preset_help(20) + usage_tail);
  Setup s;
  s.scheduler = cl.text("--scheduler", "gradient");
  s.tuner = cl.text("--tuner", std::string(tunekit::default_preset));
  s.budget = cl.count("--budget", 1200);
  s.seconds = cl.real("--seconds", 150);
  s.slot = cl.count("--slot", 16);
  s.workers = cl.natural("--workers", 0);
  if (s.workers > 0 && examples::MpiRun::active())
    cl.fail("--workers is for local worker processes; under mpirun the other ranks measure");
  const std::size_t cores = static_cast<std::size_t>(omp_get_num_procs());
  s.threads = static_cast<int>(cl.count("--threads", std::max<std::size_t>(1, cores / std::max<std::size_t>(1, s.workers))));
  s.seed = cl.count("--seed", 1);
  s.confirm = cl.natural("--confirm", 5);
  s.log = cl.text("--log", "tune_resnet18.jsonl");
  s.resume = cl.flag("--resume");
  cl.reject_unknown();
  if (!(s.seconds > 0)) cl.fail("--seconds must be positive");
  try {
    tunekit::check_preset(s.tuner);
  } catch (const std::invalid_argument& e) {
    cl.fail(e.what());
  }
  try {
    tunekit::make_scheduler(s.scheduler);
  } catch (const std::invalid_argument& e) {
    cl.fail(e.what());
  }
  try {
    std::printf("tune_resnet18: 12 layers, scheduler %s, tuner %s, slots of %zu, budget %zu configurations / %.0f s, "
                "%d threads; computing the references...\n",
                s.scheduler.c_str(), s.tuner.c_str(), s.slot, s.budget, s.seconds, s.threads);
    std::fflush(stdout);
    std::vector<std::unique_ptr<tunekit::cpu::Conv2dKernel>> kernels;
    std::vector<std::string> names;
    for (const auto& task : tunekit::cpu::resnet18_conv2d_tasks) {
      names.emplace_back(task.name);
      kernels.push_back(std::make_unique<tunekit::cpu::Conv2dKernel>(
          task.shape, tunekit::cpu::Conv2dOptions{.threads = s.threads, .seed = s.seed, .name = names.back()}));
    }
    return tunekit::with_preset(s.tuner, [&]<class TunerT>() { return run<TunerT>(s, kernels, names); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_resnet18: error: %s\n", e.what());
    return 1;
  }
}
