#pragma once
/// \file
/// Writing and reading tuning logs (JSON lines), and resuming a tuner from one.

#include "tunekit/records/record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

namespace detail {

/// Appends records to a log, one line each, written with a single write() and so on disk (in the
/// OS's cache) before the next measurement starts: a killed process loses at most the line it
/// was writing. Opening a log whose last line was cut off removes that partial line (a complete
/// last line that only lacks its newline is ended instead).
template <class = void>
class RecordWriterImpl {
 public:
  explicit RecordWriterImpl(std::filesystem::path path, std::ostream* warnings = &std::cerr)
      : path_(std::move(path)) {
    drop_partial_last_line(warnings);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw std::runtime_error("cannot open log '" + path_.string() + "': " + std::strerror(errno));
  }
  RecordWriterImpl(const RecordWriterImpl&) = delete;
  RecordWriterImpl& operator=(const RecordWriterImpl&) = delete;
  RecordWriterImpl(RecordWriterImpl&& o) noexcept : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)) {}
  ~RecordWriterImpl() {
    if (fd_ >= 0) ::close(fd_);
  }

  void write(const SearchSpace& space, const Record& r) {
    const std::string line = to_json(space, r).dump() + "\n";
    std::size_t done = 0;
    while (done < line.size()) {
      const auto n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error("cannot write log '" + path_.string() + "': " + std::strerror(errno));
      }
      done += static_cast<std::size_t>(n);
    }
  }

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void drop_partial_last_line(std::ostream* warnings) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path_, ec);
    if (ec || size == 0) return;
    std::ifstream in(path_, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (content.back() == '\n') return;
    const auto last_newline = content.rfind('\n');
    const std::uintmax_t keep = last_newline == std::string::npos ? 0 : last_newline + 1;
    if (nlohmann::json::accept(content.substr(keep))) {
      // Complete JSON lacking only its newline (not a cut-off write): read_records and resume
      // take it, so end the line rather than drop a record the tuner already has.
      std::ofstream(path_, std::ios::binary | std::ios::app) << '\n';
      return;
    }
    if (warnings)
      *warnings << "tunekit: warning: " << path_.string() << ": removing a truncated last line ("
                << size - keep << " bytes)\n";
    std::filesystem::resize_file(path_, keep);
  }

  std::filesystem::path path_;
  int fd_ = -1;
};
}  // namespace detail

/// detail::RecordWriterImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using RecordWriter = detail::RecordWriterImpl<>;

namespace detail {
/// Each non-blank line of a log's `content` parsed as a `Json` (nlohmann::json or ordered_json)
/// and handed to `f(j)`: a truncated last line (not valid JSON, no newline at its end: a killed
/// writer) is skipped with a warning; another malformed line, and a RecordError or a json
/// exception from `f`, is a RecordError naming the file and line number.
template <class Json, class F>
void for_each_log_line(const std::string& content, const std::filesystem::path& path, std::ostream* warnings, F&& f) {
  std::size_t pos = 0, line_no = 0;
  while (pos < content.size()) {
    ++line_no;
    const auto nl = content.find('\n', pos);
    const bool last_unterminated = nl == std::string::npos;
    const std::string line = content.substr(pos, last_unterminated ? std::string::npos : nl - pos);
    pos = last_unterminated ? content.size() : nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    Json j;
    try {
      j = Json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      if (last_unterminated) {
        if (warnings) *warnings << "tunekit: warning: " << where << ": ignoring a truncated last line\n";
        return;
      }
      throw RecordError(where + ": malformed record: " + e.what());
    }
    try {
      if (!j.is_object()) throw RecordError("record is not a JSON object");
      f(j);
    } catch (const RecordError& e) {
      throw RecordError(where + ": " + e.what());
    } catch (const nlohmann::json::exception& e) {
      throw RecordError(where + ": malformed record: " + e.what());
    }
  }
}
}  // namespace detail

/// Reads the records of one task from a log. A truncated last line (no newline at the end, not
/// valid JSON: a killed writer) is skipped with a warning; any other malformed line is a
/// RecordError naming the file and line number. Records of other tasks are skipped (their
/// configs may belong to other spaces); an empty `task` reads them all.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::vector<Record> read_records(const std::filesystem::path& path, const SearchSpace& space,
                                 const std::string& task, std::ostream* warnings = &std::cerr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecordError("cannot open log '" + path.string() + "'");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Record> out;
  detail::for_each_log_line<nlohmann::json>(content, path, warnings, [&](const nlohmann::json& j) {
    if (!task.empty() && j.at("task").get<std::string>() != task) return;
    out.push_back(record_from_json(space, j));
  });
  return out;
}

/// The distinct task names in a log (for error messages).
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::set<std::string> log_tasks(const std::filesystem::path& path) {
  std::set<std::string> tasks;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("task") && j["task"].is_string()) tasks.insert(j["task"].get<std::string>());
  }
  return tasks;
}

/// Something that tunes several named tasks, each with its own tuner (MultiTaskTuner): what the
/// multi-task `resume` and `resume_exact` need of it.
template <class M>
concept TaskTuners = requires(M& m, std::size_t i) {
  { m.task_count() } -> std::convertible_to<std::size_t>;
  m.tuner(i).space();
  { m.task(i).name } -> std::convertible_to<std::string>;
};

namespace detail {

// Whether a log exists and holds something.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
bool log_has_content(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0;
}

// The error for a log that has records but none of the tasks resumed (probably the wrong file).
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
RecordError no_records_of(const std::filesystem::path& path, const std::string& what) {
  const auto tasks = log_tasks(path);
  std::string names;
  for (const auto& t : tasks) names += (names.empty() ? "'" : ", '") + t + "'";
  return RecordError("log '" + path.string() + "' holds no records of " + what + " (it has: " + names + ")" +
                     (tasks.contains("") ? "; records without a task name come from a kernel without name()" : ""));
}

// The one resume step, for a single task and for each task of a multi-task tuner: feeds `tuner`
// the records of its task, either told at once (exact = false: `resume`) or as the recorded
// measurements of a re-execution (exact = true: Tuner::set_recorded, `resume_exact`). A config
// recorded twice, or (told) already in the history, is taken once with a warning. Returns the
// records taken.
template <class TunerT>
std::size_t resume_task(TunerT& tuner, const std::vector<Record>& records, const std::filesystem::path& path,
                        bool exact, std::ostream* warnings) {
  std::vector<std::pair<Config, Measurement>> recorded;
  recorded.reserve(records.size());
  std::unordered_set<std::uint64_t> seen;
  for (const auto& r : records) {
    const auto idx = tuner.space().to_index(r.config);
    if (!seen.insert(idx).second || (!exact && tuner.history().contains(idx))) {
      if (warnings)
        *warnings << "tunekit: warning: " << path.string() << ": config recorded twice, keeping the first: "
                  << tuner.space().describe(r.config) << "\n";
      continue;
    }
    recorded.emplace_back(r.config, r.measurement);
  }
  const std::size_t taken = recorded.size();
  if (exact)
    tuner.set_recorded(std::move(recorded), path.string(), warnings);
  else
    for (auto& [c, m] : recorded) tuner.tell(c, std::move(m));
  return taken;
}

// resume and resume_exact of one task: a missing or empty log resumes nothing, a log with
// records but none of the task is a RecordError.
template <class TunerT>
std::size_t resume_one(TunerT& tuner, const std::filesystem::path& path, const std::string& task, bool exact,
                       std::ostream* warnings) {
  if (!log_has_content(path)) {
    if (exact) tuner.set_recorded({}, path.string(), warnings);
    return 0;
  }
  const auto records = read_records(path, tuner.space(), task, warnings);
  if (records.empty() && !log_tasks(path).empty()) throw no_records_of(path, "task '" + task + "'");
  return resume_task(tuner, records, path, exact, warnings);
}

// resume and resume_exact of every task of a multi-task tuner, each by its name: a missing or
// empty log resumes nothing; a task without records resumes nothing (it had no slot yet); a log
// with records but none of any task is a RecordError.
template <class M>
std::size_t resume_all(M& mt, const std::filesystem::path& path, bool exact, std::ostream* warnings) {
  std::size_t taken = 0;
  const bool content = log_has_content(path);
  for (std::size_t i = 0; i < mt.task_count(); ++i) {
    auto& tuner = mt.tuner(i);
    const std::vector<Record> records =
        content ? read_records(path, tuner.space(), mt.task(i).name, warnings) : std::vector<Record>{};
    taken += resume_task(tuner, records, path, exact, warnings);
  }
  if (content && taken == 0 && !log_tasks(path).empty()) {
    std::string names;
    for (std::size_t i = 0; i < mt.task_count(); ++i) names += (i ? ", " : "") + std::string(mt.task(i).name);
    throw no_records_of(path, "the tasks " + names);
  }
  return taken;
}

}  // namespace detail

/// Feeds a tuner the records of its task from a log, so that tuning continues where the log
/// ends without measuring anything again. Returns the number of records taken. A missing or
/// empty log resumes nothing; a log that has records but none of this task is an error (it is
/// probably the wrong file). A config recorded twice is taken once, with a warning.
///
/// The tuner then knows every logged measurement, but not the state the killed run's optimizer
/// and generator had: the continued run takes another path than an uninterrupted one would.
/// `resume_exact` takes the same path (at the cost of re-running the search up to the kill).
template <class TunerT>
  requires(!TaskTuners<TunerT>)
std::size_t resume(TunerT& tuner, const std::filesystem::path& path, const std::string& task,
                   std::ostream* warnings = &std::cerr) {
  return detail::resume_one(tuner, path, task, /*exact=*/false, warnings);
}

/// Exact resume: prepares a fresh tuner to continue the run that wrote the log as if it had
/// never been killed. The log's records of the task become the tuner's recorded measurements
/// (Tuner::set_recorded); the next `tune` with the same seed (and options, policies, kernel)
/// re-runs the search from the start, takes each logged config's measurement from the log
/// instead of measuring it (LogToFile does not write it again), and measures from where the log
/// ends. The optimizer, surrogate and generator so have the state they had at the kill, and the
/// run ends with the same trials, in the same order, and the same best config as an
/// uninterrupted one (for a trial budget; a budget in seconds also depends on search time).
/// A log that the re-run does not follow (another seed or version) is taken as `resume` would,
/// with one warning. Returns the number of records loaded; a missing or empty log loads none, a
/// log without records of the task is a RecordError, a config logged twice is taken once with a
/// warning. The tuner must not have measured anything yet.
template <class TunerT>
  requires(!TaskTuners<TunerT>)
std::size_t resume_exact(TunerT& tuner, const std::filesystem::path& path, const std::string& task,
                         std::ostream* warnings = &std::cerr) {
  return detail::resume_one(tuner, path, task, /*exact=*/true, warnings);
}

/// `resume` for every task of a multi-task tuner (MultiTaskTuner), each from the records of its
/// name in the one log its LogToFile wrote. A task without records (it had no slot) takes none;
/// a log with records but none of any task is a RecordError. Returns the records taken.
template <TaskTuners M>
std::size_t resume(M& multi_task_tuner, const std::filesystem::path& path, std::ostream* warnings = &std::cerr) {
  return detail::resume_all(multi_task_tuner, path, /*exact=*/false, warnings);
}

/// `resume_exact` for every task of a fresh multi-task tuner (MultiTaskTuner): each task's
/// records become its tuner's recorded measurements, and the next `tune` with the same seed,
/// scheduler, options and kernels re-runs the slots from the start, taking each logged trial
/// from the log (not logged again) and measuring from where the log ends, so that the run ends
/// with the same trials in the same order and the same objective as an uninterrupted one (for a
/// trial budget and slots of trials). Returns the records loaded.
template <TaskTuners M>
std::size_t resume_exact(M& multi_task_tuner, const std::filesystem::path& path,
                         std::ostream* warnings = &std::cerr) {
  return detail::resume_all(multi_task_tuner, path, /*exact=*/true, warnings);
}

}  // namespace tunekit
