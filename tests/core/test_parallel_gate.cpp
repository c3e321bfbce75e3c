// ParallelGate: a region goes parallel while its parallel runs are the faster ones, serial when
// they are slower (another process on a core), probes the other way every 64th run, and follows
// a load that comes and goes, probing less often while its choice holds.
#include <tunekit/core/parallel_gate.hpp>

#include <doctest/doctest.h>

#include "support/omp_threads.hpp"
#include <omp.h>

#include <thread>

using tunekit::detail::GatedRun;
using tunekit::detail::ParallelGate;

namespace {

// Runs `n` decisions, each recorded as taking `parallel_rate` or `serial_rate` seconds per unit;
// returns how many went parallel.
int drive(ParallelGate& gate, int n, double parallel_rate, double serial_rate) {
  int parallel = 0;
  for (int i = 0; i < n; ++i) {
    const bool p = gate.choose();
    parallel += p;
    gate.record(p, 10.0, 10.0 * (p ? parallel_rate : serial_rate));
  }
  return parallel;
}

using Threads = tunekit::test::OmpThreads;

}  // namespace

TEST_CASE("ParallelGate: parallel while it pays, serial when it does not, probing the other way") {
  const Threads two(2);
  ParallelGate gate;
  // Warm-up: two parallel runs, then two serial ones, whatever the times.
  CHECK(gate.choose());
  gate.record(true, 1.0, 1.0);
  CHECK(gate.choose());
  gate.record(true, 1.0, 1.0);
  CHECK_FALSE(gate.choose());
  gate.record(false, 1.0, 0.1);
  CHECK_FALSE(gate.choose());
  gate.record(false, 1.0, 0.1);
  // Parallel runs 10x slower (a busy core): serial, but for probes after 64, 128, 256, ... runs.
  const int busy = drive(gate, 64 + 128 + 256 + 512 + 10, 1.0, 0.1);
  CHECK(busy == 4);
  // The load goes: parallel is twice as fast. The next probe (within 1024 runs) sees it and the
  // gate goes back to parallel, probing serial every 64th run again.
  const int freed = drive(gate, 2048, 0.05, 0.1);
  CHECK(freed >= 2048 - 1024 - 2048 / 64);
  CHECK(gate.rate(true) < gate.rate(false));
}

TEST_CASE("ParallelGate: serial with one thread and inside a parallel region, and such runs not recorded") {
  {
    const Threads one(1);
    ParallelGate gate;
    CHECK_FALSE(gate.choose());
  }
  const Threads two(2);
  ParallelGate gate;
  bool inside = true;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
      inside = gate.choose();
      gate.record(true, 1.0, 5.0);
    }
  }
  CHECK_FALSE(inside);
  CHECK(gate.rate(true) == 0.0);
  CHECK(gate.choose());  // still in its warm-up
}

TEST_CASE("GatedRun: times its scope, and records nothing for an ineligible run") {
  const Threads two(2);
  ParallelGate gate;
  {
    const GatedRun run(gate, true, 2.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(gate.rate(true) >= 0.009);  // >= 20 ms over 2 units, less timer slack
  CHECK(gate.rate(true) < 1.0);
  {
    const GatedRun run(gate, false, 2.0, /*eligible=*/false);
  }
  CHECK(gate.rate(false) == 0.0);
}
