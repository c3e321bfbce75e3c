// Compilation ahead on MpiFarm's worker ranks, under mpirun -np 3 (ctest farm.mpi_compile_ahead):
//   mpi_compile_ahead EVENTS_FILE
// Every rank makes a kernel that logs its prefetch and prepare calls to EVENTS_FILE
// (tests/support/prefetch_log.hpp); rank 0 tunes on the farm, then runs the same tune serially,
// and prints "same trials ..." and exits 0 when the farm made the serial run's trials and every
// config but each lane's first (rounds of 8 on 2 worker ranks: lanes 0-3 and 4-7) was handed to
// a worker rank to compile ahead, once, never after that rank measured it.
#include <tunekit/farm/mpi.hpp>
#include <tunekit/presets.hpp>

#include "support/prefetch_log.hpp"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  try {
    tunekit::MpiEnvironment mpi(argc, argv);
    if (argc != 2) {
      std::fprintf(stderr, "usage: mpirun -np 3 mpi_compile_ahead EVENTS_FILE\n");
      return 2;
    }
    tunekit::MpiFarm farm;
    if (farm.workers() != 2) {
      std::fprintf(stderr, "mpi_compile_ahead: needs 3 ranks (1 tuner, 2 workers), got %d\n", farm.workers() + 1);
      return 2;
    }
    const tunekit::TunerOptions options{.budget = {.trials = 32}, .plan_size = 8, .compile_ahead = 3};
    tunekit::test::PrefetchLogKernel kernel{.path = argv[1]};
    if (farm.rank() == 0) {  // before any job: the workers log only the jobs rank 0 sends
      std::filesystem::create_directories(std::filesystem::path(kernel.path).parent_path());
      std::filesystem::remove(kernel.path);
    }
    tunekit::RandomSearchTuner parallel(kernel.space(), options);
    tunekit::Rng prng(3);
    parallel.tune(kernel, farm, prng);
    if (farm.rank() != 0) return 0;

    tunekit::test::PrefetchLogKernel serial_kernel;
    tunekit::RandomSearchTuner serial(serial_kernel.space(), options);
    tunekit::Rng rng(3);
    serial.tune(serial_kernel, rng);

    std::vector<std::string> failures;
    const auto& a = serial.history();
    const auto& b = parallel.history();
    if (a.size() != 32 || b.size() != a.size()) failures.push_back("not 32 trials in both runs");
    std::vector<std::uint64_t> trials;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
      trials.push_back(b[i].index);
      if (a[i].config != b[i].config || a[i].measurement.samples != b[i].measurement.samples ||
          a[i].measurement.status != b[i].measurement.status)
        failures.push_back("trial " + std::to_string(i) + " differs from the serial run's");
    }
    const auto log = tunekit::test::read_prefetch_log(kernel.path);
    for (const auto& e : log)
      if (e.pid == static_cast<long>(::getpid())) failures.push_back("rank 0 measured or compiled a config");
    const auto s = tunekit::test::summarise(log, trials);
    std::size_t ahead = 0;
    for (std::size_t t = 0; t < trials.size(); ++t) {
      const bool lane_start = t % 8 == 0 || t % 8 == 4;
      ahead += s.prefetched[t];
      if (s.prepared[t] != 1) failures.push_back("trial " + std::to_string(t) + " prepared " + std::to_string(s.prepared[t]) + " times");
      if (s.prefetched[t] != (lane_start ? 0u : 1u))
        failures.push_back("trial " + std::to_string(t) + " compiled ahead " + std::to_string(s.prefetched[t]) + " times");
    }
    if (s.too_late > 0) failures.push_back(std::to_string(s.too_late) + " configs compiled ahead after they were measured");
    if (s.strangers > 0) failures.push_back(std::to_string(s.strangers) + " events of configs that are not trials");
    for (const auto& f : failures) std::printf("FAILED: %s\n", f.c_str());
    if (!failures.empty()) return 1;
    std::printf("same trials (%zu), %zu compiled ahead on the worker ranks, %zu of them by the rank that measured them\n",
                trials.size(), ahead, s.by_measurer);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_compile_ahead: %s\n", e.what());
    return 1;
  }
}
