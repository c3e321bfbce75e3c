#pragma once
/// \file
/// LogToFile: append every measurement to a JSON-lines log as it happens.

#include "tunekit/concepts/callback.hpp"
#include "tunekit/records/log.hpp"

#include <filesystem>
#include <iostream>

namespace tunekit {

/// Appends a record per measurement to a log (records/record.hpp gives the format), flushed
/// before the next measurement starts; trials replayed from the log by an exact resume are in it
/// already and are not written again. Resume a run from it with `tunekit::resume_exact` (the
/// same path as an uninterrupted run) or `tunekit::resume` (takes the log as it is).
class LogToFile {
 public:
  explicit LogToFile(std::filesystem::path path, std::ostream* warnings = &std::cerr)
      : writer_(std::move(path), warnings) {}

  void on_measured(const TuningState& s, const Trial& t) {
    if (s.replayed) return;
    writer_.write(s.space, Record{s.task, s.device, t.config, t.measurement, utc_timestamp()});
  }

  const std::filesystem::path& path() const noexcept { return writer_.path(); }

 private:
  RecordWriter writer_;
};

static_assert(Callback<LogToFile>);

}  // namespace tunekit
