#pragma once
/// \file
/// ProgressBar: trials, current and best GFLOPS, elapsed time.

#include "tunekit/concepts/callback.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

namespace tunekit {

/// Shows the progress of a tuning run: trials done of the budget, the last and the best GFLOPS,
/// failures, and the elapsed wall and tuning-clock time. On a terminal it redraws one line in
/// place after every trial; otherwise (a file, a CI log) it prints a line at every tenth of the
/// trial budget and at the end. In a multi-task run (MultiTaskTuner) the trials, budget, failures
/// and clocks are the run's, the GFLOPS those of the task measured, which the line names.
class ProgressBar {
 public:
  /// Writes to `os`; redraws in place when `in_place` (default: standard error is a terminal).
  explicit ProgressBar(std::ostream& os = std::cerr, bool in_place = ::isatty(STDERR_FILENO) != 0)
      : os_(&os), in_place_(in_place) {}

  void on_begin(const TuningState& s) { next_line_ = step(s) + s.trials; }

  void on_measured(const TuningState& s, const Trial& t) {
    last_gflops_ = s.gflops(t.measurement);
    failures_ += !t.measurement.ok();
    if (in_place_) {
      *os_ << '\r' << line(s) << "\x1b[K" << std::flush;
    } else if (s.trials >= next_line_) {
      *os_ << line(s) << '\n' << std::flush;
      next_line_ = s.trials + step(s);
    }
  }

  void on_end(const TuningState& s) {
    if (in_place_)
      *os_ << '\r' << line(s) << "\x1b[K\n" << std::flush;
    else if (s.trials + step(s) != next_line_)  // not printed at this trial yet
      *os_ << line(s) << '\n' << std::flush;
  }

 private:
  static std::size_t step(const TuningState& s) { return std::max<std::size_t>(1, s.budget_trials / 10); }

  std::string line(const TuningState& s) const {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "[%zu/%zu] best %.2f GFLOPS | last %.2f GFLOPS | %zu failed | %.1fs wall, %.1fs tuning",
                  s.trials, s.budget_trials, s.best_gflops(), last_gflops_, failures_, s.wall_seconds,
                  s.tuning_seconds);
    return s.tasks > 1 ? std::string(buf) + " | task " + s.task : std::string(buf);
  }

  std::ostream* os_;
  bool in_place_;
  double last_gflops_ = 0.0;
  std::size_t failures_ = 0;
  std::size_t next_line_ = 0;
};

static_assert(Callback<ProgressBar>);

}  // namespace tunekit
