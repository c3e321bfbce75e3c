// What the tuning programs (tune_gemm, tune_conv2d and their CUDA twins) share: their common
// options, tuning a kernel with a preset chosen by name, with progress bar, log, curve and resume,
// serially, on local worker processes or on MPI ranks; and the median timing of the comparisons.
#pragma once

#include <tunekit/tunekit.hpp>

#if defined(TUNEKIT_EXAMPLES_MPI)
#include <tunekit/farm/mpi.hpp>
#endif

#include "cli.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace examples {

/// The program's place in an MPI job. Under an MPI launcher (mpirun, srun; the programs built
/// with MPI, TUNEKIT_MPI) rank 0 tunes and prints, and every other rank measures for it
/// (tunekit::MpiFarm) and prints nothing; otherwise the program runs alone. Made first in main:
/// it calls MPI_Init and, at the end of main, MPI_Finalize.
class MpiRun {
 public:
  MpiRun([[maybe_unused]] int& argc, [[maybe_unused]] char**& argv)
#if defined(TUNEKIT_EXAMPLES_MPI)
      : env_(argc, argv)
#endif
  {
    // What the program prints is rank 0's.
    if (measures_only() && std::freopen("/dev/null", "w", stdout) == nullptr) std::perror("stdout to /dev/null");
  }
  /// Whether the program runs under an MPI launcher with MPI.
  static bool active() {
#if defined(TUNEKIT_EXAMPLES_MPI)
    return tunekit::MpiEnvironment::active();
#else
    return false;
#endif
  }
  /// Whether this process only measures for rank 0 (a rank other than 0).
  static bool measures_only() {
#if defined(TUNEKIT_EXAMPLES_MPI)
    return tunekit::MpiEnvironment::active() && tunekit::MpiEnvironment::rank() > 0;
#else
    return false;
#endif
  }

 private:
#if defined(TUNEKIT_EXAMPLES_MPI)
  tunekit::MpiEnvironment env_;
#endif
};

struct TuningSetup {
  std::string tuner{tunekit::default_preset};
  std::size_t budget = 500;
  double seconds = 150;
  std::size_t plan_size = 32;
  bool resume = false;
  std::string log, curve;
  std::uint64_t seed = 1;
  /// Measurement of the presets that measure deterministically (all but adatune) ...
  tunekit::DeterministicParams evaluator{};
  /// ... and of adatune's adaptive evaluator.
  tunekit::AdaptiveCVParams adaptive{};
  /// Worker processes measuring each round in parallel (tunekit::LocalFarm), each pinned to its
  /// share of the cores, or each on its own GPU (`cuda`); 0: measure in this process.
  std::size_t workers = 0;
  /// Whether the workers are GPUs (the CUDA programs): worker i measures on gpus[i]
  /// (tunekit::cuda_workers), which the program fills with cuda_worker_gpus.
  bool cuda = false;
  std::vector<int> gpus{};
  /// After tuning, the `confirm` fastest configurations are measured again, in turns, and the
  /// fastest of those measurements is the result (tunekit::confirm_best); 0: the tuner's best.
  std::size_t confirm = 5;
};

/// The defaults of the CUDA tuning programs (tune_gemm_cuda, tune_conv2d_cuda): tunekit's search (default_preset),
/// 300 configurations or 300 s; a measurement over 10 s is a timeout.
inline const TuningSetup cuda_tuning_defaults{
    .tuner = std::string(tunekit::default_preset),
    .budget = 300,
    .seconds = 300,
    .evaluator = {.warmup = 1, .repeat = 5, .timeout_seconds = 10.0},
    .adaptive = {.max_runs = 20, .batch = 2, .timeout_seconds = 10.0},
    .cuda = true};

/// The usage lines of the options read_setup reads (and --help), with the defaults of `d` and
/// `program`'s file names: `data` names what --seed also draws, `clock` what --seconds counts.
inline std::string tuning_usage(const std::string& program, const TuningSetup& d, const std::string& data,
                                const std::string& clock) {
  std::string text;
  auto line = [&](const std::string& option, const std::string& what, const std::string& fallback) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-17s %-54s [%s]\n", option.c_str(), what.c_str(), fallback.c_str());
    text += buf;
  };
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", d.seconds);
  line("--budget T", "configurations to measure", std::to_string(d.budget));
  line("--seconds S", "stop after S seconds of tuning (" + clock + ")", seconds);
  line("--seed X", "seed of the search and of the random " + data, std::to_string(d.seed));
  line("--tuner NAME", "the preset, one of (docs/concepts.md):", d.tuner);
  text += tunekit::preset_help(20);
  line("--plan-size N", "configurations measured per round", std::to_string(d.plan_size));
  const std::string turns = std::to_string(tunekit::ConfirmParams{}.turns);
  line("--confirm K", "measure the K fastest again, " + turns + " turns, keep the fastest", std::to_string(d.confirm));
  line("--log FILE", "tuning log, one JSON line per measurement", program + ".jsonl");
  line("--curve FILE", "tuning curve CSV", program + "_curve.csv");
  if (d.cuda)
    text +=
        "  --workers W       measure each round on W GPUs, one worker process each (docs/farm.md):\n"
        "                    GPUs 0..W-1, or the first W of CUDA_VISIBLE_DEVICES; the same\n"
        "                    trials, W configurations at a time                                  [0]\n";
  else
    text +=
        "  --workers W       measure each round on W worker processes, each pinned to 1/W of the\n"
        "                    cores (docs/farm.md): the same trials, W configurations at a time   [0]\n";
  text +=
      "  --resume          continue a killed run from its log instead of starting a new one: with the\n"
      "                    same options and --seed it replays the logged measurements and ends as\n"
      "                    the uninterrupted run would have\n"
      "  --help            this text\n";
  return text;
}

/// Reads the options every tuning program shares into a TuningSetup: --budget, --seconds, --seed,
/// --tuner, --plan-size, --log and --curve (default `program`.jsonl and `program`_curve.csv),
/// --resume; fails with a message on a bad value. Defaults, and the measurement parameters, come
/// from `d`.
inline TuningSetup read_setup(tunekit::cli::CommandLine& cl, const std::string& program, const TuningSetup& d) {
  TuningSetup s = d;
  s.budget = cl.count("--budget", d.budget);
  s.seconds = cl.real("--seconds", d.seconds);
  s.seed = cl.count("--seed", d.seed);
  s.tuner = cl.text("--tuner", d.tuner);
  s.plan_size = cl.count("--plan-size", d.plan_size);
  s.confirm = cl.natural("--confirm", d.confirm);
  s.log = cl.text("--log", program + ".jsonl");
  s.curve = cl.text("--curve", program + "_curve.csv");
  s.resume = cl.flag("--resume");
  s.workers = cl.natural("--workers", 0);
  if (s.workers > 0 && MpiRun::active())
    cl.fail("--workers is for local worker processes; under mpirun the other ranks measure");
  if (!(s.seconds > 0)) cl.fail("--seconds must be positive");
  try {
    tunekit::check_preset(s.tuner);
  } catch (const std::invalid_argument& e) {
    cl.fail(e.what());
  }
  if (s.plan_size == 0) cl.fail("--plan-size must be at least 1");
  return s;
}

/// The GPUs of the CUDA programs' `workers` workers, `visible` being the number of CUDA devices
/// this process sees (tunekit::cuda::device_count): the first W entries of CUDA_VISIBLE_DEVICES
/// when it is set (a worker's own CUDA_VISIBLE_DEVICES replaces it, so it must name the GPU as the
/// machine numbers it), else 0 .. W-1. Fails with a message when fewer than W are visible, or
/// when CUDA_VISIBLE_DEVICES names a GPU otherwise than by its number (a UUID).
inline std::vector<int> cuda_worker_gpus(tunekit::cli::CommandLine& cl, std::size_t workers, int visible) {
  if (workers > static_cast<std::size_t>(std::max(visible, 0)))
    cl.fail("--workers " + std::to_string(workers) + ": this process sees " + std::to_string(visible) +
            " CUDA device(s)");
  std::vector<int> gpus;
  const char* listed = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string rest = listed ? listed : "";
  while (listed && gpus.size() < workers) {
    const std::string item = rest.substr(0, rest.find(','));
    rest = item.size() < rest.size() ? rest.substr(item.size() + 1) : "";
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      cl.fail("--workers: CUDA_VISIBLE_DEVICES='" + std::string(listed) + "' names a GPU as '" + item +
              "'; the workers need GPU numbers (e.g. CUDA_VISIBLE_DEVICES=2,3)");
    gpus.push_back(std::stoi(item));
  }
  for (int g = 0; !listed && gpus.size() < workers; ++g) gpus.push_back(g);
  return gpus;
}

/// Prints how many configurations of the space are valid.
inline void print_space(const tunekit::SearchSpace& space) {
  std::printf("space: %llu valid configurations of %llu\n", static_cast<unsigned long long>(space.count_valid()),
              static_cast<unsigned long long>(space.product_size()));
}

struct TuningOutcome {
  tunekit::TuneResult result;
  std::size_t failed = 0, wrong = 0;
};

/// The confirmation after a run (TuningSetup::confirm): the s.confirm fastest configurations
/// measured again in this process with the preset's evaluator, ConfirmParams' turns (3), in turns;
/// prints them and makes the fastest confirmed one the result. Nothing is logged: a resumed run
/// confirms again.
template <class TunerT, class K>
void confirm(K& kernel, const TunerT& tuner, const TuningSetup& s, tunekit::Rng& rng, TuningOutcome& out) {
  auto evaluator = tunekit::preset_evaluator<TunerT>(s.evaluator, s.adaptive);
  const auto confirmed = tunekit::confirm_best(kernel, tuner.history(), evaluator, rng, {.top = s.confirm});
  std::printf("\nconfirming: the %zu fastest configurations measured again, %zu turns each, in turns\n",
              confirmed.size(), tunekit::ConfirmParams{}.turns);
  std::printf("   %12s %12s  %s\n", "tuned GFLOPS", "confirmed", "configuration");
  const double flop = kernel.flop();
  for (std::size_t i = 0; i < confirmed.size(); ++i) {
    const auto& c = confirmed[i];
    char now[64];
    if (c.status == tunekit::Status::ok)
      std::snprintf(now, sizeof now, "%12.1f", flop > 0 ? flop / c.median / 1e9 : 0.0);
    else
      std::snprintf(now, sizeof now, "%12s", std::string(tunekit::to_string(c.status)).c_str());
    std::printf("%zu. %12.1f %s  %s\n", i + 1, c.trial.measurement.throughput(flop) / 1e9, now,
                kernel.space().describe(c.trial.config).c_str());
  }
  if (const auto* kept = tunekit::first_confirmed(confirmed)) out.result.best = kept->trial;
}

template <class TunerT, class K>
TuningOutcome tune_with(K& kernel, const TuningSetup& s) {
  TunerT tuner(kernel.space(), {.budget = {.trials = s.budget, .seconds = s.seconds}, .plan_size = s.plan_size},
               {.evaluator = tunekit::preset_evaluator<TunerT>(s.evaluator, s.adaptive)});
  tunekit::Rng rng(s.seed);
  TuningOutcome out;
#if defined(TUNEKIT_EXAMPLES_MPI)
  if (MpiRun::measures_only()) {
    // A worker rank: serves rank 0's jobs until its run ends (no log, no output; no trials): its
    // tune() returns before any callback is called. It passes callbacks of rank 0's types, so that
    // both ranks share one instantiation of the tuning loop, and touches none of rank 0's
    // files: no log (LogToFile::none), no curve file.
    tunekit::MpiFarm farm({.gpu_per_rank = s.cuda});
    out.result = tuner.tune(kernel, farm, rng, tunekit::ProgressBar(), tunekit::LogToFile::none(),
                            tunekit::CurveRecorder());
    return out;
  }
#endif
  if (!s.resume) std::filesystem::remove(s.log);
  // Exact resume: tune() re-runs the search from the start with the same seed, taking the
  // logged measurements instead of measuring, and goes on as if the run had never been killed.
  const auto resumed = tunekit::resume_exact(tuner, s.log, kernel.name());
  if (resumed) std::printf("resuming: %zu measurements from %s replayed, not measured again\n", resumed, s.log.c_str());
#if defined(TUNEKIT_EXAMPLES_MPI)
  if (MpiRun::active()) {
    tunekit::MpiFarm farm({.gpu_per_rank = s.cuda});
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    std::printf("measuring on %d MPI ranks%s\n", ranks - 1, s.cuda ? ", one GPU each" : "");
    out.result = tuner.tune(kernel, farm, rng, tunekit::ProgressBar(), tunekit::LogToFile(s.log),
                            tunekit::CurveRecorder(s.curve));
  } else
#endif
  if (s.workers > 0) {
    const std::size_t cores = std::max<std::size_t>(1, std::thread::hardware_concurrency() / s.workers);
    tunekit::LocalFarm farm(
        {.devices = s.cuda ? tunekit::cuda_workers(s.gpus) : tunekit::cpu_workers(s.workers, cores)});
    if (s.cuda) {
      std::string names;
      for (const auto& d : farm.options().devices) names += (names.empty() ? "" : ", ") + d.name;
      std::printf("measuring on %zu worker processes, one GPU each (%s)\n", s.workers, names.c_str());
    } else {
      std::printf("measuring on %zu worker processes, %zu cores each\n", s.workers, cores);
    }
    out.result = tuner.tune(kernel, farm, rng, tunekit::ProgressBar(), tunekit::LogToFile(s.log),
                            tunekit::CurveRecorder(s.curve));
  } else {
    out.result = tuner.tune(kernel, rng, tunekit::ProgressBar(), tunekit::LogToFile(s.log),
                            tunekit::CurveRecorder(s.curve));
  }
  double measuring = 0.0;
  std::size_t timed_runs = 0;
  for (const auto& t : tuner.history()) {
    out.failed += !t.measurement.ok();
    out.wrong += t.measurement.status == tunekit::Status::wrong_result;
    measuring += t.measurement.cost;
    timed_runs += t.measurement.samples.size();
  }
  std::printf("%zu configurations measured (%s; %.1f s of it searching, %.1f s measuring, %zu timed runs); "
              "%zu failed (%zu wrong results); log %s, curve %s\n",
              out.result.trials, tunekit::to_string(out.result.reason), tuner.search_seconds(), measuring,
              timed_runs, out.failed, out.wrong, s.log.c_str(), s.curve.c_str());
  if (s.confirm > 0 && out.result.best) confirm(kernel, tuner, s, rng, out);
  return out;
}

/// Tunes the kernel with the preset named s.tuner (tunekit::with_preset; every preset: grid
/// measures the first configurations in lexicographic order, the baseline without any search).
template <class K>
TuningOutcome tune(K& kernel, const TuningSetup& s) {
  std::printf("tuner: %s, %zu configurations per round\n", s.tuner.c_str(), s.plan_size);
  return tunekit::with_preset(s.tuner, [&]<class TunerT>() { return tune_with<TunerT>(kernel, s); });
}

/// The median seconds of each of the timers (callables returning the seconds of one run), timed
/// in turns: each turn runs every timer once untimed (its caches warm again after the others ran)
/// and then `per_turn` times timed, until each has at least `runs` timed runs. A slow spell of a
/// shared machine then hits all of them alike, so their ratios stay fair, and each is timed with
/// its own data in cache, as when run back to back.
template <class... F>
std::array<double, sizeof...(F)> interleaved_medians(std::size_t runs, std::size_t per_turn, F&&... time_one) {
  std::array<std::vector<double>, sizeof...(F)> t;
  for (std::size_t done = 0; done < runs; done += per_turn) {
    std::size_t i = 0;
    (
        [&] {
          time_one();
          for (std::size_t r = 0; r < per_turn; ++r) t[i].push_back(time_one());
          ++i;
        }(),
        ...);
  }
  std::array<double, sizeof...(F)> median{};
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto mid = t[i].begin() + static_cast<std::ptrdiff_t>(t[i].size() / 2);
    std::nth_element(t[i].begin(), mid, t[i].end());
    median[i] = *mid;
  }
  return median;
}

}  // namespace examples
