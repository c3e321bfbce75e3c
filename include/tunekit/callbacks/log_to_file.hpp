#pragma once
/// \file
/// LogToFile: append every measurement to a JSON-lines log as it happens.

#include "tunekit/concepts/callback.hpp"
#include "tunekit/records/log.hpp"

#include <filesystem>
#include <iostream>
#include <optional>
#include <utility>

namespace tunekit {

namespace detail {

/// Appends a record per measurement to a log (records/record.hpp gives the format), flushed
/// before the next measurement starts; trials replayed from the log by an exact resume are in it
/// already and are not written again. Resume a run from it with `tunekit::resume_exact` (the
/// same path as an uninterrupted run) or `tunekit::resume` (takes the log as it is).
///
/// `LogToFile::none()` logs nothing: for a program that decides at run time whether to log (one
/// `tune` call either way), or for the MPI ranks that only measure (they must not open rank 0's log).
template <class = void>
class LogToFileImpl {
 public:
  explicit LogToFileImpl(std::filesystem::path path, std::ostream* warnings = &std::cerr)
      : writer_(std::in_place, std::move(path), warnings) {}

  /// A LogToFile that writes nothing and opens no file; path() is empty.
  static LogToFileImpl none() { return LogToFileImpl(); }

  void on_measured(const TuningState& s, const Trial& t) {
    if (s.replayed || !writer_) return;
    writer_->write(s.space, Record{s.task, s.device, t.config, t.measurement, utc_timestamp()});
  }

  /// The log's path; empty for none().
  const std::filesystem::path& path() const noexcept {
    static const std::filesystem::path no_path;
    return writer_ ? writer_->path() : no_path;
  }

 private:
  LogToFileImpl() = default;
  std::optional<RecordWriter> writer_;
};
}  // namespace detail

/// detail::LogToFileImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using LogToFile = detail::LogToFileImpl<>;

static_assert(Callback<LogToFile>);

}  // namespace tunekit
