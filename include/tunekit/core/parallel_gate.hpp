#pragma once
/// \file
/// ParallelGate: whether an OpenMP region is worth running on several threads here and now,
/// learned from how long its runs take.

#include <chrono>
#include <algorithm>
#include <cstdint>
#include <mutex>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace tunekit::detail {

/// The threads an OpenMP parallel region would start here (1 without OpenMP).
inline int max_threads() noexcept {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// Whether the caller runs inside an OpenMP parallel region (where a nested region gets one
/// thread).
inline bool in_parallel() noexcept {
#if defined(_OPENMP)
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

/// Decides, for one OpenMP region of tunekit's (one gate per region, a function-local static),
/// whether its next run goes parallel, from the measured seconds per unit of work of its
/// parallel and of its serial runs (exponential moving averages, weight 1/4 for the newest run;
/// a probe's run, below, replaces its way's average, which is stale by then).
///
/// On a machine the tuner has to itself a region's parallel runs are the faster ones and the
/// gate keeps them parallel. When another process holds a core, a parallel region waits at its
/// barriers for a thread that is not running (and libgomp's waiting threads spin by default),
/// so a search of hundreds of small regions can take ten times its serial time; the gate then
/// sees the parallel runs slow down and runs the region serially. It tries each way twice first,
/// then, now and then, the way it is not taking (every 64th run, backing off to every 1024th
/// while the probes confirm its choice), so it follows a load that comes and goes.
///
/// Only the regions whose results do not depend on the thread count use a gate (every parallel
/// region of tunekit's search and models is written so): the choice changes the time a search
/// takes, never its result. Safe to call from several threads; a run inside another parallel
/// region is serial and not recorded.
class ParallelGate {
 public:
  /// Runs of each way before the gate compares them, and the runs between its probes: from
  /// min_probe_period, doubled after each probe that confirms the way taken, up to
  /// max_probe_period, and back to the least when a probe finds the other way faster.
  static constexpr std::uint64_t warmup_runs = 2;
  static constexpr std::uint64_t min_probe_period = 64;
  static constexpr std::uint64_t max_probe_period = 1024;

  /// Whether the next run should be parallel: false with one thread or inside a parallel region.
  bool choose() {
    if (max_threads() <= 1 || in_parallel()) return false;
    const std::lock_guard lock(mutex_);
    if (runs_[1] < warmup_runs) return true;
    if (runs_[0] < warmup_runs) return false;
    const bool faster_parallel = rate_[1] <= rate_[0];
    if (++since_probe_ < period_) return faster_parallel;
    since_probe_ = 0;
    probing_[faster_parallel ? 0 : 1] = true;
    return !faster_parallel;
  }

  /// Records a run of `work` units (any measure proportional to its serial time) that took
  /// `seconds`, parallel or not.
  void record(bool parallel, double work, double seconds) {
    if (in_parallel() || !(work > 0)) return;
    const std::lock_guard lock(mutex_);
    const double rate = seconds / work;
    const int way = parallel ? 1 : 0;
    // A probe's run replaces the way's stale average; the others move it by a quarter.
    if (probing_[way]) {
      period_ = rate < rate_[1 - way] ? min_probe_period : std::min(2 * period_, max_probe_period);
      probing_[way] = false;
      rate_[way] = rate;
      ++runs_[way];
      return;
    }
    rate_[way] = runs_[way]++ == 0 ? rate : 0.75 * rate_[way] + 0.25 * rate;
  }

  /// Seconds per unit of work of the serial (0) and parallel (1) runs so far (0 before any).
  double rate(bool parallel) const {
    const std::lock_guard lock(mutex_);
    return rate_[parallel ? 1 : 0];
  }

 private:
  mutable std::mutex mutex_;
  double rate_[2] = {0.0, 0.0};
  std::uint64_t runs_[2] = {0, 0};
  bool probing_[2] = {false, false};
  std::uint64_t since_probe_ = 0;
  std::uint64_t period_ = min_probe_period;
};

/// Times one run of a gated region and records it on destruction; records nothing when not
/// `eligible` (a run too small to be offered to the gate at all).
class GatedRun {
 public:
  GatedRun(ParallelGate& gate, bool parallel, double work, bool eligible = true)
      : gate_(gate), parallel_(parallel), work_(eligible ? work : 0.0), t0_(std::chrono::steady_clock::now()) {}
  GatedRun(const GatedRun&) = delete;
  GatedRun& operator=(const GatedRun&) = delete;
  ~GatedRun() {
    gate_.record(parallel_, work_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  }

 private:
  ParallelGate& gate_;
  bool parallel_;
  double work_;
  std::chrono::steady_clock::time_point t0_;
};

/// Makes OpenMP regions started by the calling thread in this scope serial (omp_set_num_threads(1),
/// restored at the end; a per-thread setting, so other threads are not affected), e.g. the
/// OpenMP-parallel matrix products of Eigen, which follow omp_get_max_threads() unless the
/// program called Eigen::setNbThreads. Does nothing when `active` is false.
class SerialScope {
 public:
  explicit SerialScope(bool active) {
#if defined(_OPENMP)
    if (active) {
      saved_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
#else
    (void)active;
#endif
  }
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;
  ~SerialScope() {
#if defined(_OPENMP)
    if (saved_ > 0) omp_set_num_threads(saved_);
#endif
  }

 private:
  int saved_ = 0;
};

}  // namespace tunekit::detail
