#include <tunekit/replay/record_dataset.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/presets.hpp>

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// A kernel with known run times: a (1..4, ordinal) x b (categorical x, y, z) x c (boolean), a
// constraint a + b != 5 (b as its index), run time (10 a + 3 b + c + 1) ms, always the same.
// (a=2, b=z) fails to prepare, (a=4, b=x) computes a wrong result. It counts its runs.
struct RecordToyKernel {
  tunekit::SearchSpace space_ = [] {
    tunekit::SearchSpace s;
    s.add(tunekit::Knob::ordinal("a", {1, 2, 3, 4}))
        .add(tunekit::Knob::categorical("b", {"x", "y", "z"}))
        .add(tunekit::Knob::boolean("c"))
        .add_constant("k", 7);
    s.add_constraint("a + b != 5", [](const tunekit::ConfigView& v) { return v["a"] + v["b"] != 5; });
    return s;
  }();
  std::size_t runs = 0;

  const tunekit::SearchSpace& space() const { return space_; }
  double flop() const { return 1e6; }
  static double ms(std::int64_t a, std::int64_t b, std::int64_t c) { return static_cast<double>(10 * a + 3 * b + c + 1); }
  tunekit::RunResult prepare(const tunekit::Config& c) {
    const auto v = space_.view(c);
    if (v["a"] == 2 && v["b"] == 2) return {tunekit::Status::runtime_error, {}, "toy: does not build", -1.0};
    return {};
  }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t n, tunekit::Rng&) {
    const auto v = space_.view(c);
    runs += n;
    return {tunekit::Status::ok, std::vector<double>(n, ms(v["a"], v["b"], v["c"]) * 1e-3), {}, -1.0};
  }
  tunekit::RunResult verify(const tunekit::Config& c) const {
    const auto v = space_.view(c);
    if (v["a"] == 4 && v["b"] == 0) return {tunekit::Status::wrong_result, {}, "toy: wrong", -1.0};
    return {};
  }
};

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t count_lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("record_dataset writes every valid config with its times, and ReplayKernel reads it back") {
  const tunekit::test::TempDir dir;
  const auto path = dir.path / "toy.csv";
  RecordToyKernel kernel;
  const std::size_t valid = kernel.space().count_valid();
  REQUIRE(valid == 20);  // 24 combinations, minus (a=3, b=z) and (a=4, b=y) twice each (c)
  const tunekit::RecordOptions options{.evaluator = {.warmup = 1, .repeat = 4}};
  CHECK(tunekit::record_dataset(kernel, path, options) == valid);
  // Prepared configs: warm-up, verification, 4 samples; the failed one runs nothing, the wrong
  // one only its warm-up.
  CHECK(kernel.runs == 16 * 5 + 2 * 1);

  const std::string text = read_all(path);
  CHECK(text.rfind("a,b,c,k,time_ms,samples\n", 0) == 0);
  CHECK(count_lines(text) == valid + 1);
  CHECK(text.find("1,0,0,7,11,11;11;11;11\n") != std::string::npos);  // 10 + 0 + 0 + 1 ms
  CHECK(text.find("2,2,1,7,inf,\n") != std::string::npos);          // failed to prepare
  CHECK(text.find("4,0,0,7,inf,\n") != std::string::npos);          // wrong result
  CHECK(!std::filesystem::exists(dir.path / "toy.csv.writing"));

  // Read back: the same space of valid configs, each with its recorded time.
  const auto replay = tunekit::ReplayKernel::from_csv(path);
  CHECK(replay.row_count() == valid);
  CHECK(replay.failed_count() == 4);
  CHECK(replay.space().count_valid() == valid);
  CHECK(replay.optimum_ms() == 11.0);
  for (const std::uint64_t i : kernel.space().valid_indices()) {
    const tunekit::Config c = kernel.space().from_index(i);
    const auto v = kernel.space().view(c);
    const bool failed = (v["a"] == 2 && v["b"] == 2) || (v["a"] == 4 && v["b"] == 0);
    // The replay's knob b has values {0, 1, 2}: the categorical's indices, the same config.
    CHECK(replay.recorded_ms(c) == (failed ? HUGE_VAL : RecordToyKernel::ms(v["a"], v["b"], v["c"])));
  }
}

TEST_CASE("record_dataset records only the configs `keep` selects, and refuses an empty selection") {
  const tunekit::test::TempDir dir;
  RecordToyKernel kernel;
  const tunekit::RecordOptions keep_c1{
      .evaluator = {.repeat = 2},
      .keep = [](const tunekit::SearchSpace& s, const tunekit::Config& c) { return s.view(c)["c"] == 1; }};
  CHECK(tunekit::record_selection(kernel.space(), keep_c1).size() == 10);
  CHECK(tunekit::record_dataset(kernel, dir.path / "c1.csv", keep_c1) == 10);
  const std::string text = read_all(dir.path / "c1.csv");
  CHECK(count_lines(text) == 11);
  CHECK(text.find(",0,7,") == std::string::npos);  // no row with c = 0

  const tunekit::RecordOptions none{.keep = [](const tunekit::SearchSpace&, const tunekit::Config&) { return false; }};
  CHECK_THROWS_AS(tunekit::record_dataset(kernel, dir.path / "none.csv", none), std::invalid_argument);
}

TEST_CASE("a stopped recording resumes where it stopped and ends as an uninterrupted one") {
  const tunekit::test::TempDir dir;
  RecordToyKernel straight_kernel;
  const tunekit::RecordOptions options{.evaluator = {.repeat = 3}, .seed = 5};
  tunekit::record_dataset(straight_kernel, dir.path / "straight.csv", options);

  // Stop after 7 configs (a crash at that point), then start again.
  const auto path = dir.path / "resumed.csv";
  RecordToyKernel kernel;
  tunekit::RecordOptions stopping = options;
  stopping.progress = [](std::size_t done, std::size_t, const tunekit::Measurement&) {
    if (done == 7) throw std::runtime_error("stop");
  };
  CHECK_THROWS_WITH(tunekit::record_dataset(kernel, path, stopping), "stop");
  CHECK(count_lines(read_all(path)) == 1 + 7);  // header and the 7 rows measured
  // A last line cut short by the crash (no newline) is measured again, not kept.
  { std::ofstream(path, std::ios::app) << "2,1,0,7,3"; }
  CHECK(tunekit::record_dataset(kernel, path, options) == 20);
  CHECK(kernel.runs == straight_kernel.runs);  // each config measured once over both calls
  CHECK(read_all(path) == read_all(dir.path / "straight.csv"));

  // A complete recording started again measures nothing.
  const std::size_t runs_done = kernel.runs;
  CHECK(tunekit::record_dataset(kernel, path, options) == 20);
  CHECK(kernel.runs == runs_done);
}

TEST_CASE("record_dataset refuses a file of another space and a knob a column cannot hold") {
  const tunekit::test::TempDir dir;
  RecordToyKernel kernel;
  { std::ofstream(dir.path / "other.csv") << "a,b,time_ms,samples\n1,0,2,2\n"; }
  CHECK_THROWS_AS(tunekit::record_dataset(kernel, dir.path / "other.csv"), tunekit::DatasetError);
  { std::ofstream(dir.path / "short.csv") << "a,b,c,k,time_ms,samples\n1,0,0,11,11\n"; }
  CHECK_THROWS_AS(tunekit::record_dataset(kernel, dir.path / "short.csv"), tunekit::DatasetError);
  // A row of this header whose config the recording does not select (c = 0 with keep c = 1).
  { std::ofstream(dir.path / "unselected.csv") << "a,b,c,k,time_ms,samples\n1,0,0,7,11,11\n"; }
  const tunekit::RecordOptions keep_c1{
      .keep = [](const tunekit::SearchSpace& s, const tunekit::Config& c) { return s.view(c)["c"] == 1; }};
  CHECK_THROWS_AS(tunekit::record_dataset(kernel, dir.path / "unselected.csv", keep_c1), tunekit::DatasetError);

  struct SplitKernel {
    tunekit::SearchSpace s = [] {
      tunekit::SearchSpace sp;
      sp.add(tunekit::Knob::split("tile", 8, 2));
      return sp;
    }();
    const tunekit::SearchSpace& space() const { return s; }
    double flop() const { return 1.0; }
    tunekit::RunResult run(const tunekit::Config&, std::size_t n, tunekit::Rng&) { return {tunekit::Status::ok, std::vector<double>(n, 1e-3), {}, -1.0}; }
  } split;
  CHECK_THROWS_AS(tunekit::record_dataset(split, dir.path / "split.csv"), std::invalid_argument);
}

TEST_CASE("record_dataset hands a compiling kernel each block of configs to compile ahead") {
  // The toy kernel with a prefetch: it notes what it was handed and checks at each prepare that
  // the config was handed over before it is measured.
  struct PrefetchingToy : RecordToyKernel {
    std::set<std::uint64_t> handed;
    std::vector<std::size_t> calls;  // configs per prefetch call
    std::size_t prepared_unhanded = 0;
    void prefetch(const std::vector<tunekit::Config>& configs) {
      calls.push_back(configs.size());
      for (const auto& c : configs) handed.insert(space().to_index(c));
    }
    tunekit::RunResult prepare(const tunekit::Config& c) {
      if (!handed.contains(space().to_index(c))) ++prepared_unhanded;
      return RecordToyKernel::prepare(c);
    }
  };
  static_assert(tunekit::PrefetchingKernel<PrefetchingToy>);
  const tunekit::test::TempDir dir;
  const tunekit::RecordOptions options{.evaluator = {.repeat = 2}, .seed = 3, .compile_ahead = 6};
  RecordToyKernel plain;
  tunekit::record_dataset(plain, dir.path / "plain.csv", options);
  PrefetchingToy kernel;
  CHECK(tunekit::record_dataset(kernel, dir.path / "ahead.csv", options) == 20);
  CHECK(kernel.prepared_unhanded == 0);
  CHECK(kernel.handed.size() == 20);
  // At configs 0, 6, 12 and 18 of the order: 12, 12, 8 and 2 configs (up to twice the block).
  CHECK(kernel.calls == std::vector<std::size_t>{12, 12, 8, 2});
  CHECK(read_all(dir.path / "ahead.csv") == read_all(dir.path / "plain.csv"));  // the same rows

  tunekit::RecordOptions never = options;
  never.compile_ahead = 0;
  PrefetchingToy unhanded;
  tunekit::record_dataset(unhanded, dir.path / "never.csv", never);
  CHECK(unhanded.calls.empty());
  CHECK(unhanded.prepared_unhanded == 20);  // each config is prepared once, unhanded
}
