// Callbacks: EarlyStopping, TimeLimit, CurveRecorder, ProgressBar, and how tune() calls the
// hooks (stopping from on_round, on_end only, every callback sees every measurement).
#include <tunekit/callbacks/curve_recorder.hpp>
#include <tunekit/callbacks/early_stopping.hpp>
#include <tunekit/callbacks/progress_bar.hpp>
#include <tunekit/callbacks/time_limit.hpp>
#include <tunekit/presets.hpp>

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

using tunekit::Config;
using tunekit::Knob;
using tunekit::SearchSpace;
using tunekit::Status;
using tunekit::StopReason;
using tunekit::TuningState;

constexpr double inf = std::numeric_limits<double>::infinity();

// A synthetic kernel over one ordinal knob "i" in 0..n-1: config i runs in times[i] seconds
// (infinity: it fails). 1e9 FLOP per run, so GFLOPS = 1 / time. Optionally sleeps per run().
struct TableKernel {
  SearchSpace s;
  std::vector<double> times;
  int sleep_ms = 0;

  explicit TableKernel(std::vector<double> t, int sleep = 0) : times(std::move(t)), sleep_ms(sleep) {
    std::vector<std::int64_t> v(times.size());
    std::iota(v.begin(), v.end(), std::int64_t{0});
    s.add(Knob::ordinal("i", v));
  }
  const SearchSpace& space() const { return s; }
  double flop() const { return 1e9; }
  tunekit::RunResult run(const Config& c, std::size_t runs, tunekit::Rng&) {
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    const double t = times.at(c.at(0));
    if (!std::isfinite(t)) return {Status::runtime_error, {}, "synthetic failure", -1.0};
    return {Status::ok, std::vector<double>(runs, t), {}, -1.0};
  }
};

// Pseudo-random but fixed times in [1, 2) ms; every 7th config fails when `failures`.
std::vector<double> scrambled_times(std::size_t n, bool failures) {
  std::vector<double> t(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t h = (i * 2654435761u) % 1000;
    t[i] = 1e-3 * (1.0 + static_cast<double>(h) / 1000.0);
    if (failures && i % 7 == 3) t[i] = inf;
  }
  return t;
}

tunekit::TunerOptions options(std::size_t trials, std::size_t plan_size = 64) {
  tunekit::TunerOptions o;
  o.budget.trials = trials;
  o.plan_size = plan_size;
  o.task = "synthetic";
  return o;
}

// 1-based position of the best trial among the first k trials (0: none succeeded).
std::size_t best_position_in_prefix(const tunekit::History& h, std::size_t k) {
  std::size_t pos = 0;
  double best = inf;
  for (std::size_t i = 0; i < k; ++i)
    if (h[i].measurement.ok() && h[i].measurement.mean < best) {
      best = h[i].measurement.mean;
      pos = i + 1;
    }
  return pos;
}

using tunekit::test::TempDir;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// "[done/budget]", the start of a progress line. (snprintf: GCC 12 warns falsely on
// "[" + std::to_string(...) at -O3.)
std::string progress(std::size_t done, std::size_t budget) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%zu/%zu]", done, budget);
  return buf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// EarlyStopping

TEST_CASE("EarlyStopping stops exactly `patience` trials after the last improvement (grid order)") {
  // Grid search measures i = 0, 1, 2, ... Improvements at positions 1..3 and 9; a tie with the
  // best at position 10 is no improvement. With patience 6 the run stops at 9 + 6 = 15 (not at
  // 3 + 6 = 9: position 8 is only 5 trials after position 3).
  std::vector<double> t(60, 9e-3);
  t[0] = 5e-3;
  t[1] = 4e-3;
  t[2] = 3e-3;
  t[3] = 3.5e-3;
  t[5] = inf;  // a failure is no improvement either
  t[8] = 2e-3;
  t[9] = 2e-3;  // tie
  t[11] = 2.5e-3;
  t[20] = 1e-3;  // would improve, never reached
  TableKernel k(t);
  tunekit::GridSearchTuner tuner(k.space(), options(60));
  tunekit::Rng rng(1);
  tunekit::EarlyStopping stop(6);
  const auto res = tuner.tune(k, rng, stop);
  CHECK(res.reason == StopReason::callback);
  CHECK(res.trials == 15);
  REQUIRE(tuner.history().size() == 15);
  REQUIRE(res.best.has_value());
  CHECK(res.best->index == 8);
  CHECK(res.best->measurement.mean == 2e-3);

  SUBCASE("patience 1 stops at the first trial that does not improve") {
    TableKernel k1(t);
    tunekit::GridSearchTuner t1(k1.space(), options(60));
    const auto r1 = t1.tune(k1, rng, tunekit::EarlyStopping(1));
    CHECK(r1.trials == 4);  // 5, 4, 3 ms improve; 3.5 ms does not
    CHECK(r1.reason == StopReason::callback);
  }
}

TEST_CASE("EarlyStopping with random search: stops at best position + patience, never earlier") {
  for (const std::size_t patience : {3u, 10u, 25u}) {
    CAPTURE(patience);
    TableKernel k(scrambled_times(300, true));
    tunekit::RandomSearchTuner tuner(k.space(), options(300, 16));
    tunekit::Rng rng(77 + patience);
    const auto res = tuner.tune(k, rng, tunekit::EarlyStopping(patience));
    const auto& h = tuner.history();
    REQUIRE(res.reason == StopReason::callback);
    REQUIRE(h.best() != nullptr);
    const std::size_t best_pos = static_cast<std::size_t>(h.best() - h.trials().data()) + 1;
    CHECK(best_pos == best_position_in_prefix(h, h.size()));
    CHECK(h.size() == best_pos + patience);
    // No earlier point had `patience` trials without an improvement.
    for (std::size_t n = 1; n < h.size(); ++n) CHECK(n - best_position_in_prefix(h, n) < patience);
  }
}

TEST_CASE("EarlyStopping: no success within the first `patience` trials stops too") {
  TableKernel k(std::vector<double>(50, inf));
  tunekit::RandomSearchTuner tuner(k.space(), options(50));
  tunekit::Rng rng(3);
  const auto res = tuner.tune(k, rng, tunekit::EarlyStopping(8));
  CHECK(res.reason == StopReason::callback);
  CHECK(res.trials == 8);
  CHECK_FALSE(res.best.has_value());
  CHECK_THROWS_AS(tunekit::EarlyStopping(0), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// TimeLimit

TEST_CASE("TimeLimit stops a tuning run once its wall-clock time has passed") {
  // Each config takes at least 4 run() calls x 2 ms = 8 ms (1 warm-up + 3 repeats). The limit is
  // checked after each measurement, so with 0.1 s at most 12 configs finish before it and the
  // 13th (or an earlier one) stops the run.
  TableKernel k(scrambled_times(200, false), /*sleep_ms=*/2);
  tunekit::RandomSearchTuner tuner(k.space(), options(200, 8));
  tunekit::Rng rng(11);
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = tuner.tune(k, rng, tunekit::TimeLimit(0.1));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(res.reason == StopReason::callback);
  CHECK(res.trials >= 1);
  CHECK(res.trials <= 13);
  CHECK(elapsed >= 0.1);
}

TEST_CASE("TimeLimit does not stop a run that finishes in time, and rejects bad limits") {
  TableKernel k(scrambled_times(40, false));
  tunekit::RandomSearchTuner tuner(k.space(), options(30));
  tunekit::Rng rng(12);
  const auto res = tuner.tune(k, rng, tunekit::TimeLimit(600.0));
  CHECK(res.reason == StopReason::trial_budget);
  CHECK(res.trials == 30);

  CHECK_THROWS_AS(tunekit::TimeLimit{0.0}, std::invalid_argument);
  CHECK_THROWS_AS(tunekit::TimeLimit{-1.0}, std::invalid_argument);
  CHECK_THROWS_AS(tunekit::TimeLimit{inf}, std::invalid_argument);
  CHECK_THROWS_AS(tunekit::TimeLimit{std::nan("")}, std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// CurveRecorder

TEST_CASE("CurveRecorder writes one CSV row per trial with the running best GFLOPS") {
  TempDir dir;
  const fs::path csv = dir.path / "curve.csv";
  constexpr std::size_t budget = 60;
  TableKernel k(scrambled_times(100, true));
  tunekit::RandomSearchTuner tuner(k.space(), options(budget, 16));
  tunekit::Rng rng(5);
  tunekit::CurveRecorder rec(csv);
  const auto res = tuner.tune(k, rng, rec);
  REQUIRE(res.trials == budget);
  const auto& h = tuner.history();

  std::ifstream in(csv);
  std::string header;
  REQUIRE(std::getline(in, header));
  CHECK(header == "trial,tuning_seconds,wall_seconds,status,gflops,best_gflops");
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(split(line, ','));
  REQUIRE(rows.size() == budget);

  // Values are printed with 6 significant digits: compare with a relative tolerance of 1e-5.
  const auto approx = [](double x) { return doctest::Approx(x).epsilon(1e-5); };
  double prev_best = 0.0, prev_tuning = 0.0, best = 0.0;
  std::size_t failures = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    const auto& r = rows[i];
    REQUIRE(r.size() == 6);
    CHECK(std::stoul(r[0]) == i + 1);
    const double tuning = std::stod(r[1]);
    CHECK(tuning >= prev_tuning);
    prev_tuning = tuning;
    const auto& m = h[i].measurement;
    CHECK(r[3] == std::string(tunekit::to_string(m.status)));
    const double gflops = std::stod(r[4]);
    const double best_gflops = std::stod(r[5]);
    if (m.ok()) {
      CHECK(gflops == approx(1.0 / m.mean));
      best = std::max(best, 1.0 / m.mean);
    } else {
      CHECK(gflops == 0.0);
      ++failures;
    }
    CHECK(best_gflops >= prev_best);  // non-decreasing
    prev_best = best_gflops;
    CHECK(best_gflops == approx(best));
  }
  CHECK(failures > 0);  // the run did see failures (status column tested on both kinds)
  REQUIRE(h.best() != nullptr);
  CHECK(std::stod(rows.back()[5]) == approx(1.0 / h.best()->measurement.mean));

  // The same curve in memory, unrounded.
  const auto& pts = rec.points();
  REQUIRE(pts.size() == budget);
  CHECK(pts.back().best_gflops == doctest::Approx(1.0 / h.best()->measurement.mean).epsilon(1e-12));
  for (std::size_t i = 0; i < pts.size(); ++i) {
    CHECK(pts[i].trial == i + 1);
    CHECK(pts[i].status == h[i].measurement.status);
  }
}

TEST_CASE("CurveRecorder without a file records in memory, an unwritable path throws") {
  TableKernel k(scrambled_times(30, false));
  tunekit::RandomSearchTuner tuner(k.space(), options(20));
  tunekit::Rng rng(6);
  tunekit::CurveRecorder rec;
  tuner.tune(k, rng, rec);
  CHECK(rec.points().size() == 20);
  TempDir dir;
  CHECK_THROWS_AS(tunekit::CurveRecorder(dir.path / "no_such_dir" / "curve.csv"), std::runtime_error);
}

// ---------------------------------------------------------------------------------------------
// ProgressBar

TEST_CASE("ProgressBar (not in place) prints a line at every tenth of the budget") {
  std::ostringstream out;
  TableKernel k(scrambled_times(100, false));
  tunekit::GridSearchTuner tuner(k.space(), options(50, 7));
  tunekit::Rng rng(1);
  tuner.tune(k, rng, tunekit::ProgressBar(out, /*in_place=*/false));
  const std::string text = out.str();
  CHECK(text.find('\r') == std::string::npos);
  REQUIRE_FALSE(text.empty());
  CHECK(text.back() == '\n');
  auto lines = split(text, '\n');
  lines.pop_back();  // after the final newline
  REQUIRE(lines.size() == 10);  // 5, 10, ..., 50: the last tenth is the final line, not repeated
  for (std::size_t i = 0; i < lines.size(); ++i)
    CHECK(starts_with(lines[i], progress(5 * (i + 1), 50)));
  // Grid order measured i = 0..49: the best is the fastest of them.
  double best_s = inf;
  for (std::size_t i = 0; i < 50; ++i) best_s = std::min(best_s, k.times[i]);
  char expected[64];
  std::snprintf(expected, sizeof expected, "best %.2f GFLOPS", 1e9 / best_s / 1e9);
  CHECK(lines.back().find(expected) != std::string::npos);
  CHECK(lines.back().find("| 0 failed |") != std::string::npos);
}

TEST_CASE("ProgressBar (not in place) adds a final line when the run ends between tenths") {
  SUBCASE("space exhausted at 47 of 50") {
    std::ostringstream out;
    std::vector<double> t = scrambled_times(47, false);
    t[0] = t[1] = t[2] = inf;  // three failures, counted on the line
    TableKernel k(t);
    tunekit::GridSearchTuner tuner(k.space(), options(50));
    tunekit::Rng rng(1);
    const auto res = tuner.tune(k, rng, tunekit::ProgressBar(out, false));
    REQUIRE(res.reason == StopReason::space_exhausted);
    auto lines = split(out.str(), '\n');
    lines.pop_back();
    REQUIRE(lines.size() == 10);  // 5..45, then 47
    CHECK(starts_with(lines[8], "[45/50]"));
    CHECK(starts_with(lines[9], "[47/50]"));
    CHECK(lines[9].find("| 3 failed |") != std::string::npos);
  }
  SUBCASE("stopped by EarlyStopping-like callback at 23 of 50") {
    struct StopAt23 {
      bool on_measured(const TuningState& s, const tunekit::Trial&) const { return s.history.size() == 23; }
    };
    std::ostringstream out;
    TableKernel k(scrambled_times(100, false));
    tunekit::GridSearchTuner tuner(k.space(), options(50));
    tunekit::Rng rng(1);
    const auto res = tuner.tune(k, rng, tunekit::ProgressBar(out, false), StopAt23{});
    REQUIRE(res.trials == 23);
    auto lines = split(out.str(), '\n');
    lines.pop_back();
    REQUIRE(lines.size() == 5);
    for (std::size_t i = 0; i < 4; ++i)
      CHECK(starts_with(lines[i], progress(5 * (i + 1), 50)));
    CHECK(starts_with(lines[4], "[23/50]"));
  }
  SUBCASE("a budget under 10 prints every trial once") {
    std::ostringstream out;
    TableKernel k(scrambled_times(20, false));
    tunekit::GridSearchTuner tuner(k.space(), options(6));
    tunekit::Rng rng(1);
    tuner.tune(k, rng, tunekit::ProgressBar(out, false));
    auto lines = split(out.str(), '\n');
    lines.pop_back();
    REQUIRE(lines.size() == 6);
    for (std::size_t i = 0; i < 6; ++i) CHECK(starts_with(lines[i], progress(i + 1, 6)));
  }
}

TEST_CASE("ProgressBar (in place) redraws one line with carriage returns") {
  std::ostringstream out;
  TableKernel k(scrambled_times(100, false));
  tunekit::RandomSearchTuner tuner(k.space(), options(20, 6));
  tunekit::Rng rng(2);
  tuner.tune(k, rng, tunekit::ProgressBar(out, /*in_place=*/true));
  const std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\r') == 21);  // 20 trials + the final redraw
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  REQUIRE_FALSE(text.empty());
  CHECK(text.back() == '\n');
  CHECK(text.find("\x1b[K") != std::string::npos);
  CHECK(text.front() == '\r');
  const auto last = text.substr(text.rfind('\r') + 1);
  CHECK(starts_with(last, "[20/20]"));
  CHECK(text.find("[1/20]") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// How tune() calls the hooks

namespace {

struct StopAfterRound {
  std::size_t stop_round;
  std::vector<std::size_t> rounds_seen;
  std::vector<std::size_t> trials_at_round;
  std::size_t measured = 0;
  void on_measured(const TuningState&, const tunekit::Trial&) { ++measured; }
  bool on_round(const TuningState& s) {
    rounds_seen.push_back(s.round);
    trials_at_round.push_back(s.history.size());
    return s.round == stop_round;
  }
};

struct RoundCounter {  // on_round returning void never stops
  std::size_t rounds = 0;
  void on_round(const TuningState&) { ++rounds; }
};

struct EndOnly {
  int calls = 0;
  std::size_t trials_seen = 0;
  void on_end(const TuningState& s) {
    ++calls;
    trials_seen = s.history.size();
  }
};

struct BeginOnly {
  int calls = 0;
  std::size_t trials_seen = 99;
  std::size_t budget_seen = 0;
  void on_begin(const TuningState& s) {
    ++calls;
    trials_seen = s.history.size();
    budget_seen = s.budget_trials;
  }
};

struct StopAtTrial {
  std::size_t at;
  bool on_measured(const TuningState& s, const tunekit::Trial&) const { return s.history.size() == at; }
};

struct Watcher {
  std::vector<std::uint64_t> seen;
  int ends = 0;
  void on_measured(const TuningState&, const tunekit::Trial& t) { seen.push_back(t.index); }
  void on_end(const TuningState&) { ++ends; }
};

}  // namespace

TEST_CASE("a callback returning true from on_round stops after that round") {
  TableKernel k(scrambled_times(100, false));
  tunekit::RandomSearchTuner tuner(k.space(), options(100, 8));
  tunekit::Rng rng(4);
  StopAfterRound cb{2, {}, {}, 0};
  RoundCounter counter;
  const auto res = tuner.tune(k, rng, cb, counter);
  CHECK(res.reason == StopReason::callback);
  CHECK(res.trials == 16);  // two full rounds of plan_size 8
  CHECK(cb.measured == 16);
  CHECK(cb.rounds_seen == std::vector<std::size_t>{1, 2});
  CHECK(cb.trials_at_round == std::vector<std::size_t>{8, 16});
  CHECK(counter.rounds == 2);  // the other callback still saw the stopping round

  // The same without the stopping callback runs to the budget.
  TableKernel k2(scrambled_times(100, false));
  tunekit::RandomSearchTuner t2(k2.space(), options(40, 8));
  RoundCounter c2;
  const auto r2 = t2.tune(k2, rng, c2);
  CHECK(r2.reason == StopReason::trial_budget);
  CHECK(r2.trials == 40);
  CHECK(c2.rounds == 5);
}

TEST_CASE("a callback with only on_end (or only on_begin) is called once") {
  TableKernel k(scrambled_times(100, false));
  tunekit::RandomSearchTuner tuner(k.space(), options(25, 10));
  tunekit::Rng rng(8);
  EndOnly end;
  BeginOnly begin;
  const auto res = tuner.tune(k, rng, end, begin);
  CHECK(res.trials == 25);
  CHECK(end.calls == 1);
  CHECK(end.trials_seen == 25);
  CHECK(begin.calls == 1);
  CHECK(begin.trials_seen == 0);
  CHECK(begin.budget_seen == 25);

  // Also once when a callback stops the run.
  TableKernel k2(scrambled_times(100, false));
  tunekit::RandomSearchTuner t2(k2.space(), options(25, 10));
  EndOnly end2;
  t2.tune(k2, rng, StopAtTrial{3}, end2);
  CHECK(end2.calls == 1);
  CHECK(end2.trials_seen == 3);
}

TEST_CASE("every callback gets on_measured of the trial where another one stops") {
  TableKernel k(scrambled_times(100, false));
  tunekit::RandomSearchTuner tuner(k.space(), options(100, 16));
  tunekit::Rng rng(9);
  Watcher before, after;
  StopAtTrial stop{5};
  const auto res = tuner.tune(k, rng, before, stop, after);
  CHECK(res.reason == StopReason::callback);
  REQUIRE(res.trials == 5);
  std::vector<std::uint64_t> expected;
  for (const auto& t : tuner.history()) expected.push_back(t.index);
  CHECK(before.seen == expected);
  CHECK(after.seen == expected);  // listed after the stopper: still saw trial 5
  CHECK(before.ends == 1);
  CHECK(after.ends == 1);

  SUBCASE("two callbacks stopping at the same trial: both still called") {
    TableKernel k2(scrambled_times(100, false));
    tunekit::RandomSearchTuner t2(k2.space(), options(100, 16));
    Watcher w;
    const auto r2 = t2.tune(k2, rng, StopAtTrial{4}, tunekit::EarlyStopping(1000), StopAtTrial{4}, w);
    CHECK(r2.trials == 4);
    CHECK(w.seen.size() == 4);
  }
}
