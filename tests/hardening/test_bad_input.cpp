// The table of bad inputs (docs/reliability.md, "Bad input"): one case per row, each through the
// public API, checking the exception type and that its message names the problem (the knob, the
// file and line, the task), or, where the input is fine, the behaviour that it gets.
#include <tunekit/evaluator/adaptive_cv.hpp>
#include <tunekit/evaluator/deterministic.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/records/log.hpp>
#include <tunekit/space/knob.hpp>
#include <tunekit/space/search_space.hpp>
#include <tunekit/tuner.hpp>

#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "support/what_of.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using tunekit::Config;
using tunekit::Knob;
using tunekit::SearchSpace;
using tunekit::Status;

namespace {

// A 4 x 4 space (16 configs) with an optional constraint.
SearchSpace bad_input_space() {
  SearchSpace s;
  s.add(Knob::range("tile", 1, 4)).add(Knob::power_of_two("vec", 1, 8));
  return s;
}

// A kernel whose every run takes `seconds` (whatever that is) and costs 1 simulated second.
struct FixedTimeKernel {
  SearchSpace s = bad_input_space();
  double seconds = 1e-3;
  std::size_t extra_times = 0;  // returns runs + extra_times times

  const SearchSpace& space() const { return s; }
  double flop() const { return 1e6; }
  tunekit::RunResult run(const Config&, std::size_t runs, tunekit::Rng&) const {
    return {Status::ok, std::vector<double>(runs + extra_times, seconds), {}, 1.0};
  }
};

// A kernel over `s` whose run time depends on the config (for tuners that fit a model).
struct ToyKernel {
  SearchSpace s;
  const SearchSpace& space() const { return s; }
  double flop() const { return 1e6; }
  tunekit::RunResult run(const Config& c, std::size_t runs, tunekit::Rng&) const {
    double t = 1e-3;
    for (std::size_t i = 0; i < c.size(); ++i) t *= 1.0 + 0.1 * static_cast<double>(c[i] + i);
    return {Status::ok, std::vector<double>(runs, t), {}, 0.01};
  }
};

using tunekit::test::what_of;

}  // namespace

TEST_CASE("bad input: an empty knob") {
  CHECK_THROWS_WITH_AS(Knob::ordinal("tile_x", {}), doctest::Contains("knob 'tile_x' has no values"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::categorical("layout", {}),
                       doctest::Contains("knob 'layout' has no values"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::power_of_two("vec", std::vector<std::int64_t>{}),
                       doctest::Contains("knob 'vec' has no values"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::range("unroll", 8, 4), doctest::Contains("knob 'unroll': empty range"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::ordinal("", {1, 2}), doctest::Contains("non-empty name"),
                       std::invalid_argument);
  // A space without knobs: nothing to tune.
  CHECK_THROWS_WITH_AS(tunekit::RandomSearchTuner(SearchSpace{}),
                       doctest::Contains("the search space has no knobs"), std::invalid_argument);
  tunekit::Rng rng(1);
  CHECK_THROWS_WITH_AS((void)SearchSpace{}.sample(rng), doctest::Contains("without knobs"),
                       std::logic_error);
}

TEST_CASE("bad input: a duplicate knob name") {
  SearchSpace s;
  s.add(Knob::range("tile", 1, 4));
  CHECK_THROWS_WITH_AS(s.add(Knob::boolean("tile")),
                       doctest::Contains("duplicate parameter name 'tile'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(s.add_constant("tile", 3), doctest::Contains("duplicate parameter name 'tile'"),
                       std::invalid_argument);
  s.add_constant("N", 1024);
  CHECK_THROWS_WITH_AS(s.add(Knob::range("N", 1, 2)), doctest::Contains("duplicate parameter name 'N'"),
                       std::invalid_argument);
  // The space is unchanged by the rejected additions.
  CHECK(s.dimensions() == 1);
  CHECK(s.constants().size() == 1);
  // A duplicate value within a knob, and a duplicate label.
  CHECK_THROWS_WITH_AS(Knob::ordinal("tile_y", {4, 8, 4}),
                       doctest::Contains("knob 'tile_y': duplicate value 4"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::categorical("layout", {"nchw", "nhwc", "nchw"}),
                       doctest::Contains("knob 'layout': duplicate value 'nchw'"),
                       std::invalid_argument);
}

TEST_CASE("bad input: a split of 0") {
  CHECK_THROWS_WITH_AS(Knob::split("tile_k", 0, 2),
                       doctest::Contains("knob 'tile_k': split of a non-positive extent 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::split("tile_k", -8, 2), doctest::Contains("non-positive extent -8"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::split("tile_k", 64, 0),
                       doctest::Contains("knob 'tile_k': split into fewer than one part"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::split("tile_k", 12, 1, /*power_of_two_factors=*/true),
                       doctest::Contains("knob 'tile_k': no power-of-two split of 12"),
                       std::invalid_argument);
  // A split of 1 is legal: the one factor list [1, 1].
  const Knob one = Knob::split("tile_k", 1, 2);
  REQUIRE(one.size() == 1);
  CHECK(one.factors(0) == std::vector<std::int64_t>{1, 1});
}

TEST_CASE("bad input: a range or value list too long for a knob") {
  // A Config holds each value index in 32 bits; a longer range is refused before allocating.
  CHECK_THROWS_WITH_AS(Knob::range("n", 0, std::numeric_limits<std::int64_t>::max()),
                       doctest::Contains("knob 'n': range of 9223372036854775808 values"),
                       std::length_error);
  CHECK_THROWS_WITH_AS(Knob::range("n", std::numeric_limits<std::int64_t>::min(),
                                   std::numeric_limits<std::int64_t>::max(), 2),
                       doctest::Contains("a knob holds at most 4294967295"), std::length_error);
  CHECK_THROWS_WITH_AS(Knob::range("n", std::numeric_limits<std::int64_t>::min(),
                                   std::numeric_limits<std::int64_t>::max()),
                       doctest::Contains("knob 'n': range of 2^64 values"), std::length_error);
  // 2^32 values: one more than a knob holds.
  CHECK_THROWS_WITH_AS(Knob::range("n", 0, 4'294'967'295), doctest::Contains("range of 4294967296 values"),
                       std::length_error);
  // A long legal range is checked for duplicates in O(n log n) (the pairwise check took minutes).
  const Knob big = Knob::range("n", 1, 300'000);
  CHECK(big.size() == 300'000);
  CHECK(big.value(299'999) == 300'000);
}

TEST_CASE("bad input: a constraint that admits nothing") {
  SearchSpace s = bad_input_space();
  s.add_constraint("tile > 100", [](const tunekit::ConfigView& v) { return v["tile"] > 100; });
  CHECK(s.count_valid() == 0);
  tunekit::Rng rng(7);
  CHECK_THROWS_WITH_AS((void)s.sample(rng), doctest::Contains("no configuration satisfies tile > 100"),
                       std::runtime_error);

  // Every tuner says so rather than reporting an empty result.
  ToyKernel k{s};
  {
    tunekit::RandomSearchTuner t(s, {.budget = {.trials = 8}});
    CHECK_THROWS_WITH_AS(t.tune(k, rng), doctest::Contains("no configuration satisfies tile > 100"),
                         std::runtime_error);
  }
  {
    tunekit::GridSearchTuner t(s, {.budget = {.trials = 8}});
    CHECK_THROWS_WITH_AS(t.tune(k, rng), doctest::Contains("no configuration satisfies tile > 100"),
                         std::runtime_error);
  }
  {
    tunekit::AutoTvmTuner t(s, {.budget = {.trials = 8}, .plan_size = 4});
    CHECK_THROWS_WITH_AS(t.tune(k, rng), doctest::Contains("no configuration satisfies tile > 100"),
                         std::runtime_error);
  }
  // An empty predicate is refused when the constraint is made.
  CHECK_THROWS_WITH_AS(tunekit::Constraint("tile even", nullptr),
                       doctest::Contains("constraint 'tile even' is empty"), std::invalid_argument);
}

TEST_CASE("bad input: a search space over 2^64 configs") {
  SearchSpace s;
  for (int i = 0; i < 63; ++i) {
    std::string name = "b";  // not "b" + to_string(i): GCC 12's false -Wrestrict at -O3
    name += std::to_string(i);
    s.add(Knob::boolean(name));
  }
  CHECK(s.product_size() == std::uint64_t{1} << 63);  // 2^63: still representable
  CHECK_THROWS_WITH_AS(s.add(Knob::boolean("b63")),
                       doctest::Contains("search space over 2^64 configs: adding knob 'b63'"),
                       std::overflow_error);
  // The failed add left the space as it was.
  CHECK(s.dimensions() == 63);
  CHECK(s.product_size() == std::uint64_t{1} << 63);
  // Enumerating a space this size is refused, not attempted.
  CHECK_THROWS_WITH_AS((void)s.count_valid(), doctest::Contains("refusing to enumerate"),
                       std::length_error);
}

TEST_CASE("bad input: a NaN, negative or zero run time from a kernel") {
  tunekit::Rng rng(3);
  const Config c{1, 2};
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), -1e-3, 0.0,
                     std::numeric_limits<double>::infinity()}) {
    CAPTURE(bad);
    FixedTimeKernel k;
    k.seconds = bad;
    tunekit::Deterministic det;
    const auto m = det.measure(k, c, rng);
    CHECK(m.status == Status::runtime_error);
    CHECK(m.error.find("invalid run time") != std::string::npos);
    CHECK(std::isinf(m.mean));
    CHECK(m.throughput(1e6) == 0.0);
    tunekit::AdaptiveCV acv;
    const auto m2 = acv.measure(k, c, rng);
    CHECK(m2.status == Status::runtime_error);
    CHECK(m2.error.find("invalid run time") != std::string::npos);

    // The tuner records every such config as a failure and never picks one as best.
    tunekit::RandomSearchTuner t(k.space(), {.budget = {.trials = 5}});
    const auto r = t.tune(k, rng);
    CHECK(r.trials == 5);
    CHECK_FALSE(r.best.has_value());
    for (const auto& trial : t.history()) CHECK(trial.measurement.status == Status::runtime_error);
  }
  // Too many times for the runs asked.
  FixedTimeKernel k;
  k.extra_times = 1;
  const auto m = tunekit::Deterministic({.warmup = 0, .number = 2}).measure(k, c, rng);
  CHECK(m.status == Status::runtime_error);
  CHECK(m.error == "kernel returned 3 times for 2 runs");
}

namespace {
// A dataset's error, the file named bad.csv.
std::string bad_csv_error(const std::string& csv) { return tunekit::test::dataset_error(csv, "bad.csv"); }
}  // namespace

TEST_CASE("bad input: a dataset with a missing column or a ragged row") {
  using tunekit::DatasetError;
  using tunekit::ReplayKernel;
  std::istringstream no_samples("a,b,time_ms\n1,2,3.0\n");
  CHECK_THROWS_WITH_AS((void)ReplayKernel::from_stream(no_samples, "bad.csv"),
                       doctest::Contains("bad.csv:1: header must be the parameters, then time_ms, then samples"),
                       DatasetError);
  CHECK(bad_csv_error("a,b,samples,time_ms\n1,2,3;3,3\n").find("bad.csv:1: header must be") !=
        std::string::npos);
  CHECK(bad_csv_error("time_ms,samples\n3,3\n").find("bad.csv:1: header must be") != std::string::npos);
  CHECK(bad_csv_error(",b,time_ms,samples\n1,2,3,3\n").find("bad.csv:1: empty parameter name") !=
        std::string::npos);
  // Ragged rows: a field short, a field over.
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,2,3,3\n1,3,3\n") ==
        "bad.csv:3: 3 fields, header has 4");
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,2,3,3,9\n") == "bad.csv:2: 5 fields, header has 4");
  // Fields that do not parse.
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,x,3,3\n") ==
        "bad.csv:2: parameter b is not an integer: 'x'");
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,2,nan,3\n") == "bad.csv:2: not a number: 'nan'");
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,2,-1,3\n") == "bad.csv:2: time_ms must be positive");
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,2,3,3;0\n") ==
        "bad.csv:2: sample times must be finite and positive");
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,2,3,\n") == "bad.csv:2: a finite time_ms needs samples");
  // Empty, header only, duplicate rows, nothing varies, everything failed.
  CHECK(bad_csv_error("") == "bad.csv: empty dataset (no header)");
  CHECK(bad_csv_error("a,b,time_ms,samples\n") == "bad.csv: no rows");
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,2,3,3\n1,2,4,4\n1,3,3,3\n") ==
        "bad.csv: duplicate rows for b=2");
  CHECK(bad_csv_error("a,b,time_ms,samples\n1,2,3,3\n") == "bad.csv: no parameter takes two values");
  CHECK(bad_csv_error("a,time_ms,samples\n1,inf,\n2,inf,\n") == "bad.csv: every row is recorded as failed");
  // A file that is not there.
  CHECK_THROWS_WITH_AS((void)ReplayKernel::from_csv("/nonexistent/gemm.csv"),
                       doctest::Contains("cannot open dataset '/nonexistent/gemm.csv'"), DatasetError);
}

namespace {
// Writes one successful record of `task` on `space` to `path`.
void write_record(const std::filesystem::path& path, const SearchSpace& space, const std::string& task,
                  const Config& c) {
  tunekit::RecordWriter w(path, nullptr);
  tunekit::Measurement m;
  m.samples = {1e-3, 1e-3};
  m.mean = 1e-3;
  m.cost = 1.0;
  w.write(space, tunekit::Record{task, "cpu", c, m, tunekit::utc_timestamp()});
}
}  // namespace

TEST_CASE("bad input: a log from a different task or space") {
  tunekit::test::TempDir dir;
  const SearchSpace s = bad_input_space();
  const auto path = dir.path / "gemm.jsonl";
  write_record(path, s, "gemm_1024", {0, 1});
  write_record(path, s, "gemm_2048", {1, 1});

  tunekit::RandomSearchTuner t(s);
  const std::string msg = what_of([&] { (void)tunekit::resume(t, path, "conv2d_7x7", nullptr); });
  CHECK(msg.find("log '" + path.string() + "' holds no records of task 'conv2d_7x7'") !=
        std::string::npos);
  CHECK(msg.find("(it has: 'gemm_1024', 'gemm_2048')") != std::string::npos);
  CHECK_THROWS_AS((void)tunekit::resume(t, path, "conv2d_7x7", nullptr), tunekit::RecordError);
  CHECK(t.history().size() == 0);
  // The right task resumes its one record.
  CHECK(tunekit::resume(t, path, "gemm_2048", nullptr) == 1);
  // A kernel without name() logs records with an empty task: the message quotes it and says why.
  const auto unnamed = dir.path / "unnamed.jsonl";
  write_record(unnamed, s, "", {0, 1});
  tunekit::RandomSearchTuner u(s);
  const std::string why = what_of([&] { (void)tunekit::resume(u, unnamed, "my_kernel", nullptr); });
  CHECK(why.find("(it has: '')") != std::string::npos);
  CHECK(why.find("kernel without name()") != std::string::npos);

  // The same task name on another space: the record's config names a knob the space lacks.
  SearchSpace other;
  other.add(Knob::range("block", 1, 4)).add(Knob::power_of_two("vec", 1, 8));
  tunekit::RandomSearchTuner t2(other);
  const std::string lacks = path.string() + ":1: config lacks knob 'block'";
  CHECK_THROWS_WITH_AS((void)tunekit::resume(t2, path, "gemm_1024", nullptr),
                       doctest::Contains(lacks.c_str()), tunekit::RecordError);

  // The same knobs, but the space now has a constraint the logged config violates: the error
  // names the file, the line, the config and the constraint, not just "invalid config" later.
  SearchSpace constrained = bad_input_space();
  constrained.add_constraint("tile * vec <= 2", [](const tunekit::ConfigView& v) { return v["tile"] * v["vec"] <= 2; });
  tunekit::RandomSearchTuner t3(constrained);
  const std::string violates = path.string() + ":2: config tile=2;vec=2 violates the space's constraints (tile * vec <= 2)";
  CHECK_THROWS_WITH_AS((void)tunekit::resume(t3, path, "gemm_2048", nullptr), doctest::Contains(violates.c_str()),
                       tunekit::RecordError);
}

TEST_CASE("bad input: a budget of 0") {
  const SearchSpace s = bad_input_space();
  using O = tunekit::TunerOptions;
  CHECK_THROWS_WITH_AS(tunekit::RandomSearchTuner(s, O{.budget = {.trials = 0}}),
                       doctest::Contains("Budget: trials must be at least 1"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(tunekit::AutoTvmTuner(s, O{.budget = {.trials = 10, .seconds = 0.0}}),
                       doctest::Contains("Budget: seconds must be positive"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      tunekit::AutoTvmTuner(s, O{.budget = {.seconds = std::numeric_limits<double>::quiet_NaN()}}),
      doctest::Contains("Budget: seconds must be positive"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(tunekit::RandomSearchTuner(s, O{.plan_size = 0}),
                       doctest::Contains("plan_size must be at least 1"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(tunekit::RandomSearchTuner(s, O{.flop = -1.0}),
                       doctest::Contains("flop must be finite and >= 0"), std::invalid_argument);
}

TEST_CASE("bad input: a plan_size larger than the space is fine (the tuner exhausts the space)") {
  // Not an error: the tuner measures every valid config once and stops at space_exhausted.
  SearchSpace s = bad_input_space();
  s.add_constraint("tile * vec <= 4", [](const tunekit::ConfigView& v) { return v["tile"] * v["vec"] <= 4; });
  REQUIRE(s.count_valid() == 7);  // tile 1: vec 1, 2, 4; tile 2: 1, 2; tile 3 and 4: 1
  const ToyKernel k{s};
  const tunekit::TunerOptions opts{.budget = {.trials = 100}, .plan_size = 64};
  auto check = [&](auto tuner) {
    tunekit::Rng rng(11);
    ToyKernel kk = k;
    const auto r = tuner.tune(kk, rng);
    CHECK(r.reason == tunekit::StopReason::space_exhausted);
    CHECK(r.trials == 7);
    std::set<std::uint64_t> seen;
    for (const auto& t : tuner.history()) seen.insert(t.index);
    CHECK(seen.size() == 7);
    REQUIRE(r.best.has_value());
    CHECK(r.best->config == Config{0, 0});  // the toy kernel is fastest at the first values
  };
  SUBCASE("random search") { check(tunekit::RandomSearchTuner(s, opts)); }
  SUBCASE("grid search") { check(tunekit::GridSearchTuner(s, opts)); }
  SUBCASE("AutoTVM") { check(tunekit::AutoTvmTuner(s, opts)); }
  SUBCASE("AdaTune") { check(tunekit::AdaTuneTuner(s, opts)); }
  SUBCASE("Chameleon") { check(tunekit::ChameleonTuner(s, opts)); }
}

TEST_CASE("bad input: a config of the wrong shape, an unknown knob, a kernel of another space") {
  const SearchSpace s = bad_input_space();
  CHECK_THROWS_WITH_AS((void)s.to_index(Config{1}),
                       doctest::Contains("config has 1 values for a space of 2 knobs"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)s.to_index(Config{1, 4}),
                       doctest::Contains("config value index 4 out of range for knob 'vec'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)s.parse("tile=1;vek=2"), doctest::Contains("no knob named 'vek'"),
                       std::out_of_range);
  CHECK_THROWS_WITH_AS((void)s.parse("tile=1;vec=3"), doctest::Contains("knob 'vec' has no value '3'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)s.parse("tile=1"), doctest::Contains("config text lacks knob 'vec'"),
                       std::invalid_argument);

  tunekit::RandomSearchTuner t(s);
  CHECK_THROWS_WITH_AS(t.tell(Config{0, 9}, {}),
                       doctest::Contains("not valid in the search space: config value index 9 out of range for knob 'vec'"),
                       std::invalid_argument);
  SearchSpace three = bad_input_space();
  three.add(Knob::boolean("unroll"));
  ToyKernel k{three};
  tunekit::Rng rng(1);
  CHECK_THROWS_WITH_AS(t.tune(k, rng), doctest::Contains("the kernel's space differs"),
                       std::invalid_argument);
}

TEST_CASE("bad input: evaluator and replay parameters") {
  CHECK_THROWS_WITH_AS(tunekit::Deterministic({.repeat = 0}),
                       doctest::Contains("DeterministicParams: repeat must be >= 1"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(tunekit::AdaptiveCV({.batch = 0}),
                       doctest::Contains("AdaptiveCVParams: batch must be >= 1"), std::invalid_argument);
  std::istringstream in("a,time_ms,samples\n1,3,3\n2,4,4\n");
  CHECK_THROWS_WITH_AS(
      (void)tunekit::ReplayKernel::from_stream(in, "ok.csv", {.overhead_seconds = -1.0}),
      doctest::Contains("ReplayOptions: overhead_seconds must be finite and >= 0"),
      std::invalid_argument);
}
