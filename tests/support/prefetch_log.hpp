#pragma once
// A PrefetchingKernel for the tests of compilation ahead on a measurement farm: it appends every
// prefetch and prepare it is asked for, with the process that asked, to a file that the farm's
// worker processes (forked, or MPI ranks) share with the test; its runs take a time that depends
// on the config only, so a farm's results are the serial run's. And the reader of that file.

#include <tunekit/core/random.hpp>
#include <tunekit/core/status.hpp>
#include <tunekit/space/search_space.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace tunekit::test {

/// One line of the log: a prefetch ('P') or a prepare ('M', where a real kernel compiles and
/// measures) of config `index` (its flat index) by process `pid`, in the order they happened.
struct PrefetchEvent {
  char what = 'M';
  long pid = 0;
  std::uint64_t index = 0;
};

/// The kernel: a line of 64 configs, each run 1 ms * (1 + x); events go to `path` ("" : none).
struct PrefetchLogKernel {
  tunekit::SearchSpace s = [] {
    tunekit::SearchSpace space;
    space.add(tunekit::Knob::range("x", 0, 63));
    return space;
  }();
  std::string path{};

  const tunekit::SearchSpace& space() const { return s; }
  double flop() const { return 1.0; }
  void prefetch(const std::vector<tunekit::Config>& configs) const {
    for (const auto& c : configs) log('P', c);
  }
  tunekit::RunResult prepare(const tunekit::Config& c) const {
    log('M', c);
    return {};
  }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t runs, tunekit::Rng&) const {
    tunekit::RunResult r;
    r.seconds.assign(runs, 1e-3 * (1.0 + static_cast<double>(s.view(c)["x"])));
    return r;
  }

 private:
  // One write of one line with O_APPEND: lines of several processes never interleave.
  void log(char what, const tunekit::Config& c) const {
    if (path.empty()) return;
    const std::string line = std::string(1, what) + " " + std::to_string(::getpid()) + " " +
                             std::to_string(s.to_index(c)) + "\n";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    [[maybe_unused]] const auto written = ::write(fd, line.data(), line.size());
    ::close(fd);
  }
};

/// The events of a log, in order.
inline std::vector<PrefetchEvent> read_prefetch_log(const std::string& path) {
  std::vector<PrefetchEvent> out;
  std::ifstream in(path);
  PrefetchEvent e;
  while (in >> e.what >> e.pid >> e.index) out.push_back(e);
  return out;
}

/// What a log says of the trials of a run (their flat indices, in trial order).
struct PrefetchSummary {
  /// Per trial: how often its config was prepared, and prefetched.
  std::vector<std::size_t> prepared, prefetched;
  /// Per trial: the prepares (of any config) logged before its config's first prefetch; -1 when
  /// it was not prefetched.
  std::vector<long> prefetched_after;
  /// Trials whose config was prefetched by the process that prepared it, before it did; and
  /// prefetched by that process after it prepared it (too late: never).
  std::size_t by_measurer = 0, too_late = 0;
  /// Events of configs that are not trials of the run.
  std::size_t strangers = 0;
};

inline PrefetchSummary summarise(const std::vector<PrefetchEvent>& log, const std::vector<std::uint64_t>& trials) {
  PrefetchSummary out;
  const std::size_t n = trials.size();
  out.prepared.assign(n, 0);
  out.prefetched.assign(n, 0);
  out.prefetched_after.assign(n, -1);
  std::vector<long> preparer(n, 0), prefetcher(n, 0);
  long prepares = 0;
  for (const PrefetchEvent& e : log) {
    std::size_t t = 0;
    while (t < n && trials[t] != e.index) ++t;
    if (t == n) {
      ++out.strangers;
      continue;
    }
    if (e.what == 'P') {
      if (out.prefetched[t]++ == 0) out.prefetched_after[t] = prepares;
      if (out.prepared[t] > 0 && preparer[t] == e.pid) ++out.too_late;
      prefetcher[t] = e.pid;
    } else {
      ++prepares;
      if (out.prepared[t]++ == 0) preparer[t] = e.pid;
      if (out.prefetched[t] > 0 && prefetcher[t] == e.pid) ++out.by_measurer;
    }
  }
  return out;
}

}  // namespace tunekit::test
