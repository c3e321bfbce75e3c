// Tuning logs: RecordWriter, read_records (truncated last line, malformed lines, other tasks),
// resume, a writer reopening a log cut off by a crash, and LogToFile::none().
#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/records/log.hpp>

#include "support/temp_dir.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

using tunekit::Config;
using tunekit::Knob;
using tunekit::Measurement;
using tunekit::Record;
using tunekit::RecordError;
using tunekit::SearchSpace;
using tunekit::Status;

using tunekit::test::TempDir;

// 8 x 8 = 64 configs; one knob is categorical so that config JSON has a label.
SearchSpace log_space() {
  SearchSpace s;
  s.add(Knob::ordinal("a", {0, 1, 2, 3, 4, 5, 6, 7}));
  s.add(Knob::categorical("b", {"b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7"}));
  return s;
}

// A synthetic kernel: a fixed time per config; counts run() calls per flat index.
struct CountingKernel {
  SearchSpace s = log_space();
  std::map<std::uint64_t, int> runs_of;
  const SearchSpace& space() const { return s; }
  double flop() const { return 1e9; }
  tunekit::RunResult run(const Config& c, std::size_t runs, tunekit::Rng&) {
    const auto idx = s.to_index(c);
    ++runs_of[idx];
    const double t = 1e-3 * (1.0 + static_cast<double>((idx * 7) % 13) / 10.0);
    return {Status::ok, std::vector<double>(runs, t), {}, -1.0};
  }
};

Record make_record(const SearchSpace& s, const std::string& task, std::uint64_t idx) {
  Measurement m;
  m.status = Status::ok;
  m.samples = {1e-3, 2e-3, 3e-3};
  m.mean = 2e-3 + static_cast<double>(idx) * 1e-6;
  m.std = 1e-3;
  m.cost = 0.25;
  return Record{task, "dev", s.from_index(idx), m, tunekit::utc_timestamp()};
}

using tunekit::test::slurp;

void append_raw(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::app);
  out << text;
}

std::vector<std::string> lines_of(const std::string& content) {
  std::vector<std::string> out;
  std::istringstream in(content);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::size_t count_newlines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

// The JSON line of a record, with its newline.
std::string line_of(const SearchSpace& s, const Record& r) { return tunekit::to_json(s, r).dump() + "\n"; }

}  // namespace

TEST_CASE("log: RecordWriter appends one line per record, also after reopening") {
  TempDir dir;
  const fs::path log = dir.path / "run.jsonl";
  const SearchSpace s = log_space();
  {
    tunekit::RecordWriter w(log);
    CHECK(w.path() == log);
    for (std::uint64_t i = 0; i < 3; ++i) w.write(s, make_record(s, "t", i));
    // Written at once (no buffering in the writer): readable before it is closed.
    CHECK(count_newlines(slurp(log)) == 3);
  }
  {
    std::ostringstream warn;
    tunekit::RecordWriter w(log, &warn);  // a complete log: nothing removed
    CHECK(warn.str().empty());
    w.write(s, make_record(s, "t", 10));
    w.write(s, make_record(s, "t", 11));
  }
  const std::string content = slurp(log);
  REQUIRE_FALSE(content.empty());
  CHECK(content.back() == '\n');
  const auto lines = lines_of(content);
  REQUIRE(lines.size() == 5);
  const std::vector<std::uint64_t> expected = {0, 1, 2, 10, 11};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto j = nlohmann::json::parse(lines[i]);
    CHECK(s.to_index(tunekit::config_from_json(s, j.at("config"))) == expected[i]);
  }

  std::ostringstream warn;
  const auto records = tunekit::read_records(log, s, "t", &warn);
  CHECK(warn.str().empty());
  REQUIRE(records.size() == 5);
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(s.to_index(records[i].config) == expected[i]);
    CHECK(records[i].measurement.mean == make_record(s, "t", expected[i]).measurement.mean);
    CHECK(records[i].task == "t");
  }
}

TEST_CASE("log: read_records skips a truncated last line with a warning") {
  TempDir dir;
  const fs::path log = dir.path / "cut.jsonl";
  const SearchSpace s = log_space();
  std::string full;
  for (std::uint64_t i = 0; i < 3; ++i) full += line_of(s, make_record(s, "t", i));
  const std::string fourth = line_of(s, make_record(s, "t", 3));
  // A killed writer: half of the fourth line, no newline.
  append_raw(log, full + fourth.substr(0, fourth.size() / 2));

  std::ostringstream warn;
  const auto records = tunekit::read_records(log, s, "t", &warn);
  REQUIRE(records.size() == 3);
  for (std::uint64_t i = 0; i < 3; ++i) CHECK(s.to_index(records[i].config) == i);
  CHECK(warn.str().find("truncated") != std::string::npos);
  CHECK(warn.str().find(log.string() + ":4") != std::string::npos);

  // No warnings stream: still read, silently.
  CHECK(tunekit::read_records(log, s, "t", nullptr).size() == 3);
}

TEST_CASE("log: a malformed line in the middle is a RecordError naming path:line") {
  TempDir dir;
  const fs::path log = dir.path / "bad.jsonl";
  const SearchSpace s = log_space();
  auto message_for = [&](const std::string& bad_line) {
    fs::remove(log);
    // Line 1, 2: records; line 3: blank (still counted); line 4: the bad one; line 5: a record.
    append_raw(log, line_of(s, make_record(s, "t", 0)) + line_of(s, make_record(s, "t", 1)) + "\n" +
                        bad_line + "\n" + line_of(s, make_record(s, "t", 2)));
    std::ostringstream warn;
    try {
      (void)tunekit::read_records(log, s, "t", &warn);
    } catch (const RecordError& e) {
      return std::string(e.what());
    }
    return std::string("<no RecordError>");
  };
  const std::string where = log.string() + ":4";

  SUBCASE("not JSON") {
    const std::string m = message_for("this is not json");
    CHECK(m.find(where) != std::string::npos);
    CHECK(m.find("malformed") != std::string::npos);
  }
  SUBCASE("a cut-off record followed by more records (not the last line)") {
    const std::string rec = line_of(s, make_record(s, "t", 5));
    CHECK(message_for(rec.substr(0, rec.size() / 2)).find(where) != std::string::npos);
  }
  SUBCASE("JSON but not an object") {
    CHECK(message_for("[1, 2, 3]").find(where) != std::string::npos);
  }
  SUBCASE("a record missing a field") {
    auto j = tunekit::to_json(s, make_record(s, "t", 5));
    j.erase("samples");
    CHECK(message_for(j.dump()).find(where) != std::string::npos);
  }
  SUBCASE("a record with an unknown status") {
    auto j = tunekit::to_json(s, make_record(s, "t", 5));
    j["status"] = "melted";
    const std::string m = message_for(j.dump());
    CHECK(m.find(where) != std::string::npos);
    CHECK(m.find("unknown status") != std::string::npos);
  }
  SUBCASE("a record whose config has an unknown label") {
    auto j = tunekit::to_json(s, make_record(s, "t", 5));
    j["config"]["b"] = "b9";
    const std::string m = message_for(j.dump());
    CHECK(m.find(where) != std::string::npos);
    CHECK(m.find("'b'") != std::string::npos);
  }
}

TEST_CASE("log: records of other tasks are skipped, an empty task reads all") {
  TempDir dir;
  const fs::path log = dir.path / "mixed.jsonl";
  const SearchSpace s = log_space();
  // Task "other" has configs of another space (unknown knobs): skipped, never parsed.
  nlohmann::json foreign = tunekit::to_json(s, make_record(s, "other", 0));
  foreign["config"] = {{"x", 1}, {"y", "z"}};
  append_raw(log, line_of(s, make_record(s, "mine", 3)) + foreign.dump() + "\n" +
                      line_of(s, make_record(s, "mine", 4)) + line_of(s, make_record(s, "third", 9)) +
                      foreign.dump() + "\n" + line_of(s, make_record(s, "mine", 5)));
  std::ostringstream warn;
  const auto mine = tunekit::read_records(log, s, "mine", &warn);
  REQUIRE(mine.size() == 3);
  CHECK(s.to_index(mine[0].config) == 3);
  CHECK(s.to_index(mine[1].config) == 4);
  CHECK(s.to_index(mine[2].config) == 5);
  for (const auto& r : mine) CHECK(r.task == "mine");

  const auto third = tunekit::read_records(log, s, "third", &warn);
  REQUIRE(third.size() == 1);
  CHECK(s.to_index(third[0].config) == 9);

  CHECK(tunekit::read_records(log, s, "nobody", &warn).empty());
  // An empty task reads every record, so the foreign configs are now errors (line 2).
  try {
    (void)tunekit::read_records(log, s, "", &warn);
    FAIL("reading all tasks should reach the foreign config");
  } catch (const RecordError& e) {
    CHECK(std::string(e.what()).find(log.string() + ":2") != std::string::npos);
  }
  CHECK(warn.str().empty());

  CHECK(tunekit::log_tasks(log) == std::set<std::string>{"mine", "other", "third"});
}

TEST_CASE("log: read_records of a missing file is a RecordError") {
  TempDir dir;
  CHECK_THROWS_AS((void)tunekit::read_records(dir.path / "absent.jsonl", log_space(), "t"), RecordError);
}

TEST_CASE("log: LogToFile::none() opens and writes nothing, and its run makes the logged run's trials") {
  TempDir dir;
  const fs::path log = dir.path / "logged.jsonl";
  constexpr std::size_t budget = 20;
  auto open_fds = [] {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{}));
  };
  auto run = [&](tunekit::LogToFile cb) {
    CountingKernel k;
    tunekit::RandomSearchTuner tuner(k.space(), {.budget = {.trials = budget}, .plan_size = 5, .task = "syn"});
    tunekit::Rng rng(7);
    CHECK(tuner.tune(k, rng, std::move(cb)).trials == budget);
    std::vector<std::uint64_t> indices;
    for (const auto& t : tuner.history()) indices.push_back(t.index);
    return indices;
  };
  const std::size_t before = open_fds();
  {
    const auto none = tunekit::LogToFile::none();
    CHECK(none.path().empty());
    CHECK(open_fds() == before);
  }
  const auto quiet = run(tunekit::LogToFile::none());
  CHECK(fs::is_empty(dir.path));
  const auto logged = run(tunekit::LogToFile(log));
  CHECK(quiet == logged);
  CHECK(count_newlines(slurp(log)) == budget);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);
}

TEST_CASE("log: resume continues a tuning run without measuring anything twice") {
  TempDir dir;
  const fs::path log = dir.path / "resume.jsonl";
  constexpr std::size_t first_budget = 12, budget = 40;

  // First run: 12 trials, logged.
  std::vector<std::uint64_t> first_run;
  {
    CountingKernel k;
    tunekit::RandomSearchTuner tuner(k.space(), {.budget = {.trials = first_budget}, .plan_size = 5,
                                                 .task = "syn"});
    tunekit::Rng rng(2024);
    const auto res = tuner.tune(k, rng, tunekit::LogToFile(log));
    REQUIRE(res.trials == first_budget);
    for (const auto& t : tuner.history()) first_run.push_back(t.index);
  }
  REQUIRE(count_newlines(slurp(log)) == first_budget);

  // Second run: resume, then tune to the full budget with the same seed.
  CountingKernel k;
  tunekit::RandomSearchTuner tuner(k.space(), {.budget = {.trials = budget}, .plan_size = 5,
                                               .task = "syn"});
  std::ostringstream warn;
  const std::size_t taken = tunekit::resume(tuner, log, "syn", &warn);
  CHECK(warn.str().empty());
  CHECK(taken == first_budget);
  REQUIRE(tuner.history().size() == first_budget);
  for (std::size_t i = 0; i < first_budget; ++i) CHECK(tuner.history()[i].index == first_run[i]);
  CHECK(tuner.history().best() != nullptr);
  // The resumed measurement costs count on the tuning clock.
  CHECK(tuner.measurement_seconds() > 0.0);

  tunekit::Rng rng(2024);  // same seed: the optimizer's first picks are the already-measured ones
  const auto res = tuner.tune(k, rng, tunekit::LogToFile(log, &warn));
  CHECK(res.trials == budget);
  CHECK(res.reason == tunekit::StopReason::trial_budget);
  REQUIRE(tuner.history().size() == budget);

  // The kernel measured exactly the 28 new configs, none of the resumed ones.
  CHECK(k.runs_of.size() == budget - first_budget);
  for (const auto idx : first_run) CHECK(k.runs_of.count(idx) == 0);
  std::set<std::uint64_t> distinct;
  for (const auto& t : tuner.history()) distinct.insert(t.index);
  CHECK(distinct.size() == budget);

  // The log now holds all 40, each config once, in the history's order.
  const auto records = tunekit::read_records(log, tuner.space(), "syn", &warn);
  REQUIRE(records.size() == budget);
  for (std::size_t i = 0; i < budget; ++i)
    CHECK(tuner.space().to_index(records[i].config) == tuner.history()[i].index);
  CHECK(warn.str().empty());

  // Resuming that complete log into a fresh tuner: nothing left to do.
  CountingKernel k2;
  tunekit::RandomSearchTuner again(k2.space(), {.budget = {.trials = budget}, .task = "syn"});
  CHECK(tunekit::resume(again, log, "syn", &warn) == budget);
  tunekit::Rng rng2(7);
  CHECK(again.tune(k2, rng2).trials == budget);
  CHECK(k2.runs_of.empty());
}

TEST_CASE("log: resume keeps the first of a config recorded twice, with a warning") {
  TempDir dir;
  const fs::path log = dir.path / "dup.jsonl";
  const SearchSpace s = log_space();
  Record second = make_record(s, "syn", 7);
  second.measurement.mean = 9e-3;
  append_raw(log, line_of(s, make_record(s, "syn", 7)) + line_of(s, make_record(s, "syn", 8)) +
                      line_of(s, second));
  tunekit::RandomSearchTuner tuner(s, {.budget = {.trials = 10}, .task = "syn"});
  std::ostringstream warn;
  CHECK(tunekit::resume(tuner, log, "syn", &warn) == 2);
  REQUIRE(tuner.history().size() == 2);
  CHECK(tuner.history()[0].index == 7);
  CHECK(tuner.history()[0].measurement.mean == make_record(s, "syn", 7).measurement.mean);
  CHECK(warn.str().find("twice") != std::string::npos);
}

TEST_CASE("log: resume on a log of other tasks only is an error naming the tasks") {
  TempDir dir;
  const fs::path log = dir.path / "others.jsonl";
  const SearchSpace s = log_space();
  append_raw(log, line_of(s, make_record(s, "alpha", 1)) + line_of(s, make_record(s, "beta", 2)) +
                      line_of(s, make_record(s, "alpha", 3)));
  tunekit::RandomSearchTuner tuner(s, {.budget = {.trials = 10}, .task = "gamma"});
  std::ostringstream warn;
  try {
    (void)tunekit::resume(tuner, log, "gamma", &warn);
    FAIL("resume should refuse a log without records of its task");
  } catch (const RecordError& e) {
    const std::string m = e.what();
    CHECK(m.find("'gamma'") != std::string::npos);
    CHECK(m.find("'alpha', 'beta'") != std::string::npos);
    CHECK(m.find(log.string()) != std::string::npos);
  }
  CHECK(tuner.history().empty());
}

TEST_CASE("log: resume on a missing or empty log takes nothing") {
  TempDir dir;
  const SearchSpace s = log_space();
  tunekit::RandomSearchTuner tuner(s, {.budget = {.trials = 10}, .task = "t"});
  std::ostringstream warn;
  CHECK(tunekit::resume(tuner, dir.path / "never_written.jsonl", "t", &warn) == 0);
  CHECK_FALSE(fs::exists(dir.path / "never_written.jsonl"));
  append_raw(dir.path / "empty.jsonl", "");
  CHECK(tunekit::resume(tuner, dir.path / "empty.jsonl", "t", &warn) == 0);
  CHECK(tuner.history().empty());
  CHECK(warn.str().empty());
}

TEST_CASE("log: opening a RecordWriter removes a truncated last line, and the log stays readable") {
  TempDir dir;
  const fs::path log = dir.path / "crashed.jsonl";
  const SearchSpace s = log_space();
  const std::string complete = line_of(s, make_record(s, "t", 0)) + line_of(s, make_record(s, "t", 1));
  const std::string third = line_of(s, make_record(s, "t", 2));
  const std::string partial = third.substr(0, 25);
  append_raw(log, complete + partial);

  {
    std::ostringstream warn;
    tunekit::RecordWriter w(log, &warn);
    CHECK(warn.str().find("truncated") != std::string::npos);
    CHECK(warn.str().find(std::to_string(partial.size()) + " bytes") != std::string::npos);
    CHECK(slurp(log) == complete);  // exactly the partial line is gone
    w.write(s, make_record(s, "t", 5));
  }
  std::ostringstream warn;
  const auto records = tunekit::read_records(log, s, "t", &warn);
  CHECK(warn.str().empty());  // no truncated line left
  REQUIRE(records.size() == 3);
  CHECK(s.to_index(records[0].config) == 0);
  CHECK(s.to_index(records[1].config) == 1);
  CHECK(s.to_index(records[2].config) == 5);

  // Same through LogToFile.
  append_raw(log, partial);
  {
    std::ostringstream w2;
    tunekit::LogToFile cb(log, &w2);
    CHECK(w2.str().find("truncated") != std::string::npos);
  }
  CHECK(tunekit::read_records(log, s, "t", &warn).size() == 3);
  CHECK(warn.str().empty());
}

TEST_CASE("log: a log that is one partial line becomes empty when a writer opens it") {
  TempDir dir;
  const fs::path log = dir.path / "only_partial.jsonl";
  append_raw(log, "{\"task\": \"t\", \"dev");
  std::ostringstream warn;
  { tunekit::RecordWriter w(log, &warn); }
  CHECK(fs::file_size(log) == 0);
  CHECK(warn.str().find("truncated") != std::string::npos);
}

TEST_CASE("log: a complete last record without a newline is read, and kept by a writer") {
  TempDir dir;
  const fs::path log = dir.path / "no_final_newline.jsonl";
  const SearchSpace s = log_space();
  std::string last = line_of(s, make_record(s, "t", 4));
  last.pop_back();  // e.g. a hand-edited log: valid JSON, no newline at the end
  append_raw(log, line_of(s, make_record(s, "t", 3)) + last);

  std::ostringstream warn;
  REQUIRE(tunekit::read_records(log, s, "t", &warn).size() == 2);
  CHECK(warn.str().empty());

  // resume took both records; the writer of the continued run must not drop the second one,
  // or the log would disagree with the tuner's history.
  {
    tunekit::RecordWriter w(log, &warn);
    w.write(s, make_record(s, "t", 6));
  }
  CHECK(warn.str().empty());  // nothing was truncated
  const auto records = tunekit::read_records(log, s, "t", &warn);
  REQUIRE(records.size() == 3);
  CHECK(s.to_index(records[0].config) == 3);
  CHECK(s.to_index(records[1].config) == 4);
  CHECK(s.to_index(records[2].config) == 6);
}

TEST_CASE("log: resume_exact continues a logged run as an uninterrupted one, writing no line twice") {
  TempDir dir;
  const fs::path log = dir.path / "exact.jsonl";
  constexpr std::size_t budget = 30;
  const tunekit::TunerOptions options{.budget = {.trials = budget}, .plan_size = 7, .task = "syn"};

  // The uninterrupted run, and the same run stopped by a callback after 11 measurements, logged.
  CountingKernel k0;
  tunekit::RandomSearchTuner reference(k0.space(), options);
  tunekit::Rng rng0(99);
  REQUIRE(reference.tune(k0, rng0).trials == budget);
  {
    CountingKernel k;
    tunekit::RandomSearchTuner first(k.space(), options);
    tunekit::Rng rng(99);
    struct StopAt {
      bool on_measured(const tunekit::TuningState& s, const tunekit::Trial&) { return s.history.size() == 11; }
    };
    first.tune(k, rng, tunekit::LogToFile(log), StopAt{});
    REQUIRE(first.history().size() == 11);
  }

  CountingKernel k;
  tunekit::RandomSearchTuner tuner(k.space(), options);
  std::ostringstream warn;
  CHECK(tunekit::resume_exact(tuner, log, "syn", &warn) == 11);
  CHECK(tuner.history().empty());  // nothing told yet: tune() replays
  tunekit::Rng rng(99);
  CHECK(tuner.tune(k, rng, tunekit::LogToFile(log, &warn)).trials == budget);
  CHECK(warn.str().empty());
  CHECK(k.runs_of.size() == budget - 11);
  const auto records = tunekit::read_records(log, tuner.space(), "syn", &warn);
  REQUIRE(records.size() == budget);
  for (std::size_t i = 0; i < budget; ++i) {
    CHECK(tuner.space().to_index(records[i].config) == reference.history()[i].index);
    CHECK(tuner.history()[i].measurement.mean == reference.history()[i].measurement.mean);
  }

  // The same errors and warnings as resume: a config logged twice, a log of other tasks only.
  append_raw(log, line_of(tuner.space(), records.front()));
  tunekit::RandomSearchTuner again(k.space(), options);
  std::ostringstream warn2;
  CHECK(tunekit::resume_exact(again, log, "syn", &warn2) == budget);
  CHECK(warn2.str().find("twice") != std::string::npos);
  tunekit::RandomSearchTuner other(k.space(), options);
  CHECK_THROWS_AS((void)tunekit::resume_exact(other, log, "gamma", &warn2), RecordError);
  // A tuner that has measured already cannot be resumed by re-execution.
  CHECK_THROWS_AS((void)tunekit::resume_exact(tuner, log, "syn", &warn2), std::invalid_argument);
}
