#pragma once
/// \file
/// CurveRecorder: the tuning curve (best GFLOPS over trials and time) as CSV.

#include "tunekit/concepts/callback.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunekit {

/// One point of a tuning curve.
struct CurvePoint {
  std::size_t trial = 0;
  double tuning_seconds = 0.0;
  double wall_seconds = 0.0;
  Status status = Status::ok;
  double gflops = 0.0;
  double best_gflops = 0.0;
};

namespace detail {

/// Records the tuning curve in memory and, when given a path, as CSV with the header
/// `trial,tuning_seconds,wall_seconds,status,gflops,best_gflops`, a row flushed per trial.
template <class = void>
class CurveRecorderImpl {
 public:
  CurveRecorderImpl() = default;
  explicit CurveRecorderImpl(const std::filesystem::path& csv) : out_(csv) {
    if (!out_) throw std::runtime_error("cannot write curve CSV '" + csv.string() + "'");
    out_ << "trial,tuning_seconds,wall_seconds,status,gflops,best_gflops\n" << std::flush;
  }

  void on_measured(const TuningState& s, const Trial& t) {
    CurvePoint p{s.trials, s.tuning_seconds, s.wall_seconds, t.measurement.status,
                 s.gflops(t.measurement), s.best_gflops()};
    if (out_.is_open()) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%zu,%.6f,%.6f,%s,%.6g,%.6g\n", p.trial, p.tuning_seconds,
                    p.wall_seconds, std::string(to_string(p.status)).c_str(), p.gflops, p.best_gflops);
      out_ << buf << std::flush;
    }
    points_.push_back(p);
  }

  const std::vector<CurvePoint>& points() const noexcept { return points_; }

 private:
  std::ofstream out_;
  std::vector<CurvePoint> points_;
};
}  // namespace detail

/// detail::CurveRecorderImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using CurveRecorder = detail::CurveRecorderImpl<>;

static_assert(Callback<CurveRecorder>);

}  // namespace tunekit
