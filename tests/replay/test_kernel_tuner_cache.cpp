#include <tunekit/presets.hpp>
#include <tunekit/records/record.hpp>
#include <tunekit/replay/kernel_tuner_cache.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/replay_score.hpp>

#include "support/temp_dir.hpp"
#include "support/what_of.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using tunekit::test::datasets;

// The header as Kernel Tuner's process_cache writes it: json.dumps(..., indent="") without the
// closing "}\n}", so the file ends in `"cache": {`.
const std::string header =
    "{\n\"device_name\": \"NVIDIA RTX A4000\",\n\"kernel_name\": \"convolution_kernel\",\n"
    "\"problem_size\": [\n4096,\n4096\n],\n\"tune_params_keys\": [\n\"block_size_x\",\n"
    "\"use_shmem\",\n\"filter\"\n],\n\"tune_params\": {\n\"block_size_x\": [\n16,\n32,\n64\n],\n"
    "\"use_shmem\": [\n0,\n1\n],\n\"filter\": [\n15\n]\n},\n\"objective\": \"time\",\n\"cache\": {";
// One line per entry as store_cache appends them ("\n" + entry + ",").
const std::vector<std::string> entries = {
    R"("16,0,15": {"block_size_x": 16, "use_shmem": 0, "filter": 15, "time": 2.0, "times": [1.0, 3.0], "compile_time": 410.2, "timestamp": "2024-03-01 10:00:00.000000+00:00"})",
    R"("16,1,15": {"block_size_x": 16, "use_shmem": 1, "filter": 15, "time": "CompilationFailedConfig", "compile_time": 12.5})",
    R"("32,0,15": {"block_size_x": 32, "use_shmem": false, "filter": 15.0, "time": 1.5})",
    R"("64,1,15": {"block_size_x": 64, "use_shmem": true, "filter": 15, "time": 4.0, "times": [4.0, 4.0, 4.0]})",
};

std::string open_cache(std::size_t n = entries.size()) {
  std::string s = header;
  for (std::size_t i = 0; i < n; ++i) s += "\n" + entries[i] + ",";
  return s;
}
std::string closed_cache() {
  std::string s = open_cache();
  s.pop_back();
  return s + "}\n}";
}

tunekit::ReplayKernel from_cache_text(const std::string& text, std::ostream* warnings = nullptr) {
  return tunekit::from_kernel_tuner_cache_text(text, "mem.json", {}, warnings);
}

std::string cache_error_of(const std::string& text) {
  return tunekit::test::what_of<tunekit::DatasetError>([&] { from_cache_text(text); });
}

}  // namespace

TEST_CASE("a Kernel Tuner cache file replays its entries: times, failures, constants") {
  tunekit::test::TempDir dir;
  const auto path = dir.path / "conv_A4000.json";
  std::ofstream(path) << closed_cache() << "\n";
  const auto k = tunekit::from_kernel_tuner_cache(path, {.overhead_seconds = 0.5, .flop = 0, .name = {}});
  CHECK(k.name() == "conv_A4000");
  const auto& s = k.space();
  REQUIRE(s.dimensions() == 2);
  CHECK(s.knob(0).name() == "block_size_x");
  CHECK(s.knob(0).kind() == tunekit::KnobKind::power_of_two);  // {16, 32, 64}
  CHECK(s.knob(1).kind() == tunekit::KnobKind::boolean);       // false/true and 0/1 alike
  REQUIRE(s.constants().size() == 1);
  CHECK(s.constants()[0].name == "filter");
  CHECK(s.constants()[0].value == 15);
  CHECK(k.row_count() == 4);
  CHECK(k.failed_count() == 1);
  CHECK(k.optimum_ms() == 1.5);
  CHECK(s.count_valid() == 4);  // the membership constraint: 4 of the product's 6

  CHECK(k.recorded_ms({0, 0}) == 2.0);
  CHECK(std::isinf(k.recorded_ms({0, 1})));
  CHECK(k.recorded_ms({1, 0}) == 1.5);
  CHECK(k.recorded_ms({2, 1}) == 4.0);
  CHECK_FALSE(s.is_valid({1, 1}));

  tunekit::Rng rng(7);
  CHECK(k.prepare({0, 1}).status == tunekit::Status::runtime_error);
  CHECK(k.prepare({0, 0}).simulated_cost == 0.5);
  // "times" are the samples; without "times", "time" is the only one.
  std::set<double> seen;
  for (double x : k.run({0, 0}, 100, rng).seconds) seen.insert(x);
  CHECK(seen == std::set<double>{1.0e-3, 3.0e-3});
  for (double x : k.run({1, 0}, 10, rng).seconds) CHECK(x == 1.5e-3);
}

TEST_CASE("an unclosed Kernel Tuner cache (a run still writing) reads as Kernel Tuner reads it") {
  const auto closed = from_cache_text(closed_cache());
  const auto open = from_cache_text(open_cache());
  CHECK(open.row_count() == closed.row_count());
  CHECK(open.recorded_times_ms() == closed.recorded_times_ms());
  // Only the header written so far: no entries.
  CHECK(cache_error_of(open_cache(0)).find("mem.json: no rows") == 0);

  // A last line cut off in the middle of its write is dropped with a warning.
  std::string cut = open_cache(3) + "\n" + entries[3].substr(0, 40);
  std::ostringstream warnings;
  const auto k = from_cache_text(cut, &warnings);
  CHECK(k.row_count() == 3);
  CHECK(warnings.str().find("mem.json: ignoring a cut-off last cache entry") != std::string::npos);
}

TEST_CASE("malformed Kernel Tuner caches are errors naming the file, key and entry") {
  auto with_entry = [](const std::string& e) { return header + "\n" + entries[0] + ",\n" + e + "}\n}"; };
  CHECK(cache_error_of("").find("mem.json: not a Kernel Tuner cache file (malformed JSON") == 0);
  CHECK(cache_error_of("{\"cache\": {}}").find("mem.json: 'tune_params_keys' is missing") == 0);
  CHECK(cache_error_of("[1, 2]").find("not a JSON object") != std::string::npos);
  CHECK(cache_error_of("{\"tune_params_keys\": [\"a\"]}").find("mem.json: 'cache' is missing") == 0);
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "filter": 15, "time": 1.0})")) ==
        "mem.json: cache entry '32,1,15': lacks parameter 'use_shmem'");
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32.5, "use_shmem": 1, "filter": 15, "time": 1.0})")) ==
        "mem.json: cache entry '32,1,15': parameter 'block_size_x' = 32.5 is not among its tune_params values");
  CHECK(cache_error_of(with_entry(R"("8,1,15": {"block_size_x": 8, "use_shmem": 1, "filter": 15, "time": 1.0})")) ==
        "mem.json: cache entry '8,1,15': parameter 'block_size_x' = 8 is not among its tune_params values");
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15, "time": "Oops"})")) ==
        "mem.json: cache entry '32,1,15': 'time' is the unknown failure \"Oops\"");
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15})")) ==
        "mem.json: cache entry '32,1,15': lacks 'time'");
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15, "time": 1.0, "times": [1.0, -2]})"))
            == "mem.json: cache entry '32,1,15': 'times' holds -2, not a finite positive time");
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15, "time": 0})")) ==
        "mem.json: cache entry '32,1,15': 'time' holds 0, not a finite positive time");
  CHECK(cache_error_of(open_cache() + "\n" + R"("16,0,x": {"block_size_x": 16, "use_shmem": 0, "filter": 15, "time": 1.0})" + "}\n}")
            .find("mem.json: duplicate rows for ") == 0);
  // Python's json.dumps writes NaN/Infinity for non-finite floats: read as null.
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15, "time": NaN})")) ==
        "mem.json: cache entry '32,1,15': 'time' is neither a number nor a failure name: null");
  CHECK(from_cache_text(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15, "time": 1.0, "GFLOP/s": -Infinity, "note": "NaN"})"))
            .row_count() == 2);
  CHECK_THROWS_WITH_AS(tunekit::from_kernel_tuner_cache("/nonexistent/x.json"),
                       "cannot open Kernel Tuner cache '/nonexistent/x.json'", tunekit::DatasetError);
}

namespace {

// A cache over a float, a string and an integer parameter (as Kernel Tuner's hyperparameter
// tuning caches have: pso's w, dual annealing's method): every combination, time 1 + 4 |w - 0.5|
// + the method's position + 0.5 for popsize 10, so the optimum is w = 0.5, Powell, popsize 20.
std::string labelled_cache(const nlohmann::json& tune_params) {
  const std::vector<double> ws{0.75, 0.25, 0.5};
  const std::vector<std::string> methods{"Powell", "COBYLA", "L-BFGS-B"};
  nlohmann::json doc = {{"tune_params_keys", {"w", "method", "popsize"}}, {"objective", "time"}};
  if (!tune_params.is_null()) doc["tune_params"] = tune_params;
  nlohmann::json cache = nlohmann::json::object();
  for (const double w : ws)
    for (std::size_t m = 0; m < methods.size(); ++m)
      for (const int popsize : {10, 20}) {
        const double t = 1.0 + 4.0 * std::abs(w - 0.5) + static_cast<double>(m) + (popsize == 10 ? 0.5 : 0.0);
        cache[nlohmann::json(w).dump() + "," + methods[m] + "," + std::to_string(popsize)] = {
            {"w", w}, {"method", methods[m]}, {"popsize", popsize}, {"time", t}, {"times", {t, t}}};
      }
  doc["cache"] = cache;
  return doc.dump();
}

// The same space as a T4 results file, as Kernel Tuner's store_output_file writes one (keys in
// tune_params' order, times in milliseconds) in an order of its own; every result of popsize 10
// and w = 0.75 failed ("compile"), and one time measurement is given in seconds.
std::string labelled_t4() {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  const std::vector<std::string> methods{"Powell", "COBYLA", "L-BFGS-B"};
  for (const int popsize : {20, 10})
    for (const double w : {0.5, 0.25, 0.75})
      for (std::size_t m = 0; m < methods.size(); ++m) {
        const double t = 1.0 + 4.0 * std::abs(w - 0.5) + static_cast<double>(m) + (popsize == 10 ? 0.5 : 0.0);
        nlohmann::ordered_json r;
        r["timestamp"] = "2025-03-17 07:10:18.518878+00:00";
        r["configuration"] = {{"w", w}, {"method", methods[m]}, {"popsize", popsize}};
        const bool failed = popsize == 10 && w == 0.75;
        const auto runtimes = failed ? nlohmann::ordered_json::array() : nlohmann::ordered_json{t, t};
        r["times"] = {{"compilation", 25.7}, {"runtimes", runtimes}};
        r["invalidity"] = failed ? "compile" : "correct";
        r["correctness"] = 1;
        if (popsize == 10 && w == 0.5 && m == 2)
          r["measurements"] = {{{"name", "time"}, {"value", t / 1000}, {"unit", "s"}}};
        else
          r["measurements"] = {{{"name", "time"},
                                {"value", failed ? nlohmann::ordered_json("CompilationFailedConfig") : nlohmann::ordered_json(t)},
                                {"unit", "ms"}}};
        r["objectives"] = {"time"};
        results.push_back(r);
      }
  return nlohmann::ordered_json{
      {"results", results}, {"schema_version", "1.0.0"}, {"metadata", {{"timeunit", "milliseconds"}}}}
      .dump();
}

}  // namespace

TEST_CASE("a T4 results file replays as the Kernel Tuner cache of the same runs") {
  const auto t4 = from_cache_text(labelled_t4());
  const auto kt = from_cache_text(labelled_cache(nlohmann::json{
      {"w", {0.75, 0.25, 0.5}}, {"method", {"Powell", "COBYLA", "L-BFGS-B"}}, {"popsize", {10, 20}}}));
  const auto& s = t4.space();
  REQUIRE(s.dimensions() == 3);
  // The parameters in the first configuration's order (not sorted), the strings in the order met.
  CHECK(s.knob(0).name() == "w");
  CHECK(s.knob(1).name() == "method");
  CHECK(s.knob(1).label(0) == "Powell");
  CHECK(s.knob(2).name() == "popsize");
  CHECK(t4.row_count() == 18);
  CHECK(t4.failed_count() == 3);
  CHECK(t4.optimum_ms() == 1.0);
  // Every config the cache has, at the same time, but the three that failed here.
  for (const auto& c : kt.recorded_configs()) {
    const auto text = kt.space().describe(c);
    CAPTURE(text);
    const double ms = t4.recorded_ms(s.parse(text));
    if (text.starts_with("w=0.75") && text.ends_with("popsize=10")) CHECK(std::isinf(ms));
    else CHECK(ms == doctest::Approx(kt.recorded_ms(c)).epsilon(1e-12));
  }
  // Told from a cache by its "results" coming before any "cache", wherever it stands: with the
  // metadata first, the same replay; a "cache" after it makes the file a cache.
  {
    const auto doc = nlohmann::ordered_json::parse(labelled_t4());
    nlohmann::ordered_json moved{
        {"metadata", doc["metadata"]}, {"schema_version", "1.0.0"}, {"results", doc["results"]}};
    CHECK(from_cache_text(moved.dump()).recorded_times_ms() == t4.recorded_times_ms());
    moved["cache"] = nlohmann::ordered_json::object();
    CHECK(cache_error_of(moved.dump()) == "mem.json: 'tune_params_keys' is missing or not a list");
  }
  // The runtimes are the samples.
  tunekit::Rng rng(1);
  for (const double x : t4.run(s.parse("w=0.25;method=COBYLA;popsize=20"), 5, rng).seconds) CHECK(x == 3.0e-3);

  // Malformed results are errors naming the result.
  auto t4_error = [](const std::function<void(nlohmann::ordered_json&)>& change) {
    auto doc = nlohmann::ordered_json::parse(labelled_t4());
    change(doc);
    return cache_error_of(doc.dump());
  };
  CHECK(t4_error([](auto& d) { d["results"][2]["invalidity"] = "slow"; }) ==
        "mem.json: result 3: 'invalidity' is the unknown \"slow\"");
  CHECK(t4_error([](auto& d) { d["results"][4].erase("configuration"); }) ==
        "mem.json: result 5: lacks 'configuration'");
  CHECK(t4_error([](auto& d) { d["results"][1]["configuration"].erase("popsize"); }) ==
        "mem.json: result 2: 2 parameters, result 1 has 3");
  CHECK(t4_error([](auto& d) { d["metadata"]["timeunit"] = "fortnights"; }) ==
        "mem.json: 'timeunit' \"fortnights\" is not a time unit");
  CHECK(t4_error([](auto& d) { d["results"][0]["times"]["runtimes"] = {1.0, -1.0}; }) ==
        "mem.json: result 1: 'runtimes' holds -1.0, not a finite positive time");
  CHECK(t4_error([](auto& d) {
          d["results"][0]["times"].erase("runtimes");
          d["results"][0].erase("measurements");
        }) == "mem.json: result 1: a correct result needs a 'time' measurement or runtimes");
  CHECK(t4_error([](auto& d) { d["results"] = nlohmann::ordered_json::array(); }) == "mem.json: no rows");
}

TEST_CASE("a Kernel Tuner cache of float and string parameters replays them as ranked and categorical knobs") {
  const nlohmann::json tune_params = {
      {"w", {0.75, 0.25, 0.5}}, {"method", {"Powell", "COBYLA", "L-BFGS-B"}}, {"popsize", {10, 20}}};
  const auto k = from_cache_text(labelled_cache(tune_params));
  const auto& s = k.space();
  REQUIRE(s.dimensions() == 3);
  // Floats: ordered by value whatever the order listed, written by their JSON text.
  CHECK(s.knob(0).kind() == tunekit::KnobKind::ordinal);
  CHECK(s.knob(0).labelled());
  CHECK(s.knob(0).to_string(0) == "0.25");
  CHECK(s.knob(0).to_string(1) == "0.5");
  CHECK(s.knob(0).to_string(2) == "0.75");
  // Strings: unordered, in the order tune_params lists them.
  CHECK(s.knob(1).kind() == tunekit::KnobKind::categorical);
  CHECK(s.knob(1).label(0) == "Powell");
  CHECK(s.knob(1).label(2) == "L-BFGS-B");
  CHECK(s.knob(2).kind() == tunekit::KnobKind::ordinal);
  CHECK_FALSE(s.knob(2).labelled());
  CHECK(k.row_count() == 18);
  CHECK(k.optimum_ms() == 1.0);

  // A config by its text and back, and its recorded time.
  const auto best = s.parse("w=0.5;method=Powell;popsize=20");
  CHECK(s.describe(best) == "w=0.5;method=Powell;popsize=20");
  CHECK(k.recorded_ms(best) == 1.0);
  CHECK(k.recorded_ms(s.parse("w=0.75;method=COBYLA;popsize=10")) == doctest::Approx(3.5));
  // The ranked knob's adjacent neighbours (SearchSpace::neighbours) are its next values by rank:
  // from w = 0.25 only 0.5, not 0.75; the categorical knob's are all its other values.
  const auto low = s.parse("w=0.25;method=Powell;popsize=20");
  std::set<std::string> neighbours;
  for (const auto& n : s.neighbours(low)) neighbours.insert(s.describe(n));
  CHECK(neighbours == std::set<std::string>{"w=0.5;method=Powell;popsize=20", "w=0.25;method=COBYLA;popsize=20",
                                            "w=0.25;method=L-BFGS-B;popsize=20", "w=0.25;method=Powell;popsize=10"});
  // Records write the labels and read them back.
  const auto j = tunekit::config_to_json(s, best);
  CHECK(j.dump() == R"({"w":"0.5","method":"Powell","popsize":20})");
  CHECK(tunekit::config_from_json(s, j) == best);

  // The default search over it measures each config once and finds the optimum.
  auto kernel = k;
  tunekit::TpeGpRfRestartsTuner t(s, {.budget = {.trials = 18}});
  tunekit::Rng rng(3);
  const auto trace = tunekit::replay_trace(t, kernel, rng);
  CHECK(trace.score.size() == 18);
  CHECK(tunekit::score_at(trace, 18) == 1.0);

  // Without tune_params the values are the entries' (the strings in the entries' order, the keys'
  // sorted order here): the same space but for the labels' order of the categorical knob.
  const auto bare = from_cache_text(labelled_cache(nullptr));
  CHECK(bare.space().knob(0).to_string(1) == "0.5");
  CHECK(bare.space().knob(1).label(0) == "COBYLA");
  CHECK(bare.optimum_ms() == 1.0);
  CHECK(bare.recorded_ms(bare.space().parse("w=0.5;method=Powell;popsize=20")) == 1.0);

  // A value outside tune_params, and two values written alike, are errors.
  auto narrower = tune_params;
  narrower["w"] = {0.25, 0.5, 0.8};
  CHECK(cache_error_of(labelled_cache(narrower)).find("parameter 'w' = 0.75 is not among its tune_params values") !=
        std::string::npos);
  auto alike = tune_params;
  alike["method"] = {"Powell", "COBYLA", "L-BFGS-B", 1, "1"};
  CHECK(cache_error_of(labelled_cache(alike)) ==
        "mem.json: parameter 'method': two of its values are both written '1'");
  auto separator = tune_params;
  separator["method"] = {"Powell", "COBYLA", "L-BFGS-B", "a;b"};
  CHECK(cache_error_of(labelled_cache(separator)) ==
        "mem.json: parameter 'method': its value \"a;b\" holds a ',', ';' or line break, which a config's text "
        "cannot hold");
}

TEST_CASE("a Kernel Tuner cache converted from a recorded dataset replays the dataset's times") {
  // The first 250 rows of convolution_A100.csv and its first 20 failed rows, as a CSV and as the
  // Kernel Tuner cache file they were recorded in (an unclosed one, with every failure kind).
  std::ifstream in(datasets + "/convolution_A100.csv");
  REQUIRE(in);
  std::string line, csv;
  std::getline(in, line);
  csv = line + "\n";
  std::vector<std::string> names;
  {
    std::istringstream h(line);
    for (std::string f; std::getline(h, f, ',');) names.push_back(f);
    names.resize(names.size() - 2);  // time_ms, samples
  }
  std::string kt = "{\n\"device_name\": \"NVIDIA A100-PCIE-40GB\",\n\"kernel_name\": \"convolution_kernel\",\n"
                   "\"tune_params_keys\": [";
  for (std::size_t i = 0; i < names.size(); ++i) kt += (i ? ",\"" : "\"") + names[i] + "\"";
  kt += "],\n\"objective\": \"time\",\n\"cache\": {";
  const char* const failures[] = {"CompilationFailedConfig", "RuntimeFailedConfig", "InvalidConfig"};
  std::size_t rows = 0, failed = 0;
  while (std::getline(in, line)) {
    const bool inf = line.find(",inf,") != std::string::npos;
    if (!(rows < 250 || (inf && failed < 20))) continue;
    csv += line + "\n";
    std::vector<std::string> f;
    std::istringstream l(line);
    for (std::string x; std::getline(l, x, ',');) f.push_back(x);
    if (f.size() == names.size() + 1) f.emplace_back();  // empty samples of a failed row
    REQUIRE(f.size() == names.size() + 2);
    std::string key, entry;
    for (std::size_t i = 0; i < names.size(); ++i) {
      key += (i ? "," : "") + f[i];
      entry += "\"" + names[i] + "\": " + f[i] + ", ";
    }
    if (inf) {
      entry += std::string("\"time\": \"") + failures[failed % 3] + "\"";
      ++failed;
    } else {
      std::string times = f.back();
      for (auto& c : times)
        if (c == ';') c = ',';
      entry += "\"time\": " + f[names.size()] + ", \"times\": [" + times + "], \"compile_time\": 512.0";
    }
    kt += "\n\"" + key + "\": {" + entry + "},";
    ++rows;
  }
  REQUIRE(failed == 20);

  std::istringstream csv_in(csv);
  const auto from_csv = tunekit::ReplayKernel::from_stream(csv_in, "subset.csv");
  const auto from_kt = tunekit::from_kernel_tuner_cache_text(kt, "subset.json", {}, nullptr);
  REQUIRE(from_kt.row_count() == rows);
  CHECK(from_kt.failed_count() == 20);
  CHECK(from_kt.failed_count() == from_csv.failed_count());
  CHECK(from_kt.optimum_ms() == from_csv.optimum_ms());
  const auto& s = from_csv.space();
  REQUIRE(from_kt.space().dimensions() == s.dimensions());
  CHECK(from_kt.space().product_size() == s.product_size());
  // The CSV's rows are in lexicographic order of their values, as the cache's are read: the same
  // times in the same order, exactly (the same decimal text on both sides).
  CHECK(from_kt.recorded_times_ms() == from_csv.recorded_times_ms());
  std::size_t compared = 0;
  for (const auto idx : s.valid_indices()) {
    const auto c = s.from_index(idx);
    const double a = from_csv.recorded_ms(c), b = from_kt.recorded_ms(c);
    CHECK((a == b || (std::isinf(a) && std::isinf(b))));
    tunekit::Rng r1(11), r2(11);
    const auto x = from_csv.run(c, 5, r1), y = from_kt.run(c, 5, r2);
    CHECK(x.status == y.status);
    CHECK(x.seconds == y.seconds);
    ++compared;
  }
  CHECK(compared == rows);
}

namespace {

// An energy-tuning cache as Kernel Tuner 1.4 writes one (tune_kernel(..., objective="GFLOPS/W")
// with an NVML observer): each entry's time, its energy efficiency and its energy, and a
// configuration that failed to compile as "__error__" without a time. The fastest config
// (32,0: 1.5 ms) is not the most efficient (64,1: 20 GFLOPS/W) nor the most frugal (16,0: 0.2 J).
std::string energy_cache(const std::string& objective = R"("GFLOPS/W")") {
  std::string s = header;
  s.replace(s.find("\"objective\": \"time\""), 19, "\"objective\": " + objective);
  for (const std::string e : {
           R"("16,0,15": {"block_size_x": 16, "use_shmem": 0, "filter": 15, "time": 2.0, "times": [1.0, 3.0], "GFLOPS/W": 10.0, "energy": 0.2})",
           R"("16,1,15": {"block_size_x": 16, "use_shmem": 1, "filter": 15, "__error__": "CompilationFailedConfig", "compile_time": 12.5})",
           R"("32,0,15": {"block_size_x": 32, "use_shmem": 0, "filter": 15, "time": 1.5, "GFLOPS/W": 8.0, "energy": 0.5})",
           R"("64,0,15": {"block_size_x": 64, "use_shmem": 0, "filter": 15, "time": 3.0, "GFLOPS/W": 5.0, "energy": 0.9})",
           R"("64,1,15": {"block_size_x": 64, "use_shmem": 1, "filter": 15, "time": 4.0, "times": [4.0, 4.0, 4.0], "GFLOPS/W": 20.0, "energy": 0.4})"})
    s += "\n" + e + ",";
  s.pop_back();
  return s + "}\n}";
}

tunekit::ReplayKernel energy_replay(const std::string& text, tunekit::ReplayOptions options = {}) {
  return tunekit::from_kernel_tuner_cache_text(text, "energy.json", std::move(options), nullptr);
}

}  // namespace

TEST_CASE("a Kernel Tuner cache replays the objective it was tuned for, or the one asked for") {
  // By default the file's objective, better higher by Kernel Tuner's default: replayed as 1 / it.
  const auto k = energy_replay(energy_cache(), {.overhead_seconds = 0.5});
  CHECK(k.options().objective == "GFLOPS/W");
  CHECK(k.options().higher_is_better == true);
  CHECK(k.row_count() == 5);
  CHECK(k.failed_count() == 1);  // "__error__": Kernel Tuner 1.0 on
  CHECK(k.optimum_ms() == doctest::Approx(1.0 / 20.0));
  CHECK(k.recorded_ms({0, 0}) == doctest::Approx(1.0 / 10.0));
  CHECK(k.recorded_ms({1, 0}) == doctest::Approx(1.0 / 8.0));
  CHECK(std::isinf(k.recorded_ms({0, 1})));
  CHECK(k.prepare({0, 1}).status == tunekit::Status::runtime_error);
  // The value is the one sample; the clock is charged the recorded time of each run.
  tunekit::Rng rng(3);
  const auto r = k.run({2, 1}, 3, rng);
  REQUIRE(r.seconds.size() == 3);
  for (const double x : r.seconds) CHECK(x == doctest::Approx(1e-3 / 20.0));
  CHECK(r.simulated_cost == doctest::Approx(3 * 4.0e-3));
  CHECK(k.run({0, 0}, 2, rng).simulated_cost == doctest::Approx(2 * 2.0e-3));

  // The found score of a tuner's pick is the ratio of the values (the best / the pick's), so a
  // run on this replay ranks configs by efficiency, not speed: the lowest replayed value is the
  // most efficient config, 64,1, not the fastest, 32,0.
  std::vector<std::pair<double, std::string>> by_value;
  for (const auto& c : k.recorded_configs()) by_value.emplace_back(k.recorded_ms(c), k.space().describe(c));
  std::sort(by_value.begin(), by_value.end());
  CHECK(by_value.front().second == "block_size_x=64;use_shmem=1");
  CHECK(k.optimum_ms() / k.recorded_ms({0, 0}) == doctest::Approx(10.0 / 20.0));

  // Another objective of the file, by its name: energy, better lower, as it is.
  const auto e = energy_replay(energy_cache(), {.objective = "energy"});
  CHECK(e.options().higher_is_better == false);
  CHECK(e.optimum_ms() == doctest::Approx(0.2));
  CHECK(e.recorded_ms({2, 1}) == doctest::Approx(0.4));
  // Time, by its name: the recorded times and samples, as for a cache of time.
  const auto t = energy_replay(energy_cache(), {.objective = "time"});
  CHECK(t.optimum_ms() == 1.5);
  std::set<double> seen;
  for (double x : t.run({0, 0}, 100, rng).seconds) seen.insert(x);
  CHECK(seen == std::set<double>{1.0e-3, 3.0e-3});
  // A file without an objective, or of a name Kernel Tuner does not know, given its direction.
  CHECK(energy_replay(energy_cache("null")).optimum_ms() == 1.5);
  const auto watts = energy_replay(energy_cache(R"("watts")"), {.objective = "energy", .higher_is_better = true});
  CHECK(watts.optimum_ms() == doctest::Approx(1.0 / 0.9));

  // Errors: no direction, time better higher, several objectives, a missing or bad value.
  auto error = [](const std::string& text, tunekit::ReplayOptions options = {}) {
    return tunekit::test::what_of<tunekit::DatasetError>([&] { energy_replay(text, std::move(options)); });
  };
  CHECK(error(energy_cache(R"("watts")")) ==
        "energy.json: Kernel Tuner knows no direction for the objective 'watts'; say whether higher is better "
        "(ReplayOptions::higher_is_better, tunekit-replay --higher-is-better yes|no)");
  CHECK(error(energy_cache(R"("time")"), {.higher_is_better = true}) ==
        "energy.json: the objective time is better lower, not higher");
  CHECK(error(energy_cache(R"(["time", "GFLOPS/W"])")) ==
        "energy.json: it was tuned for the objectives [\"time\",\"GFLOPS/W\"]; say which one to replay "
        "(ReplayOptions::objective, tunekit-replay --objective)");
  CHECK(energy_replay(energy_cache(R"(["time", "GFLOPS/W"])"), {.objective = "GFLOPS/W"}).optimum_ms() ==
        doctest::Approx(1.0 / 20.0));
  CHECK(energy_replay(energy_cache(R"(["GFLOPS/W"])")).optimum_ms() == doctest::Approx(1.0 / 20.0));
  CHECK(error(energy_cache(), {.objective = "GB/s"}) == "energy.json: cache entry '16,0,15': lacks 'GB/s'");
  auto with = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  CHECK(error(with(energy_cache(), "\"GFLOPS/W\": 5.0", "\"GFLOPS/W\": 0")) ==
        "energy.json: cache entry '64,0,15': 'GFLOPS/W' holds 0, not a finite positive value (tunekit replays "
        "an objective's positive values)");
  CHECK(error(with(energy_cache(), "\"CompilationFailedConfig\"", "\"Oops\"")) ==
        "energy.json: cache entry '16,1,15': '__error__' is the unknown failure \"Oops\"");
  CHECK(error(energy_cache(), {.objective = "time", .higher_is_better = true}) ==
        "energy.json: the objective time is better lower, not higher");
  CHECK(error(energy_cache(), {.flop = 1e9}) ==
        "energy.json: flop (GFLOPS of the run times) is for the objective time, not 'GFLOPS/W'");
  CHECK(energy_replay(energy_cache(), {.flop = 1e9, .objective = "time"}).flop() == 1e9);
  // A failure name as the objective's value (as caches before Kernel Tuner 1.0 wrote failures).
  const auto old = energy_replay(with(energy_cache(), "\"GFLOPS/W\": 5.0", "\"GFLOPS/W\": \"RuntimeFailedConfig\""));
  CHECK(old.failed_count() == 2);
  // A dataset CSV records time alone.
  std::istringstream csv("a,time_ms,samples\n1,2.0,2.0\n2,3.0,3.0\n");
  CHECK_THROWS_WITH_AS(tunekit::ReplayKernel::from_stream(csv, "d.csv", {.objective = "energy"}),
                       "d.csv: a dataset CSV records time alone, not the objective 'energy'", tunekit::DatasetError);
}

TEST_CASE("a T4 results file replays the objective of its results, or the one asked for") {
  auto doc = nlohmann::ordered_json::parse(labelled_t4());
  // Each result's efficiency: highest where the time is highest among the correct results.
  for (auto& r : doc["results"]) {
    r["objectives"] = {"GFLOPS/W"};
    if (r["invalidity"] == "correct") {
      double t = r["measurements"][0]["value"].get<double>();
      if (r["measurements"][0]["unit"] == "s") t *= 1000;
      r["measurements"].push_back({{"name", "GFLOPS/W"}, {"value", t * 10}, {"unit", ""}});
    }
  }
  const auto k = from_cache_text(doc.dump());
  CHECK(k.options().objective == "GFLOPS/W");
  const auto t = tunekit::from_kernel_tuner_cache_text(doc.dump(), "mem.json", {.objective = "time"}, nullptr);
  CHECK(t.optimum_ms() == 1.0);
  // 1 / (10 t): the slowest correct config (w = 0.25 or 0.75, L-BFGS-B, popsize 10: 1 + 1 + 2 +
  // 0.5 = 4.5 ms; w = 0.75 with popsize 10 failed) is the optimum.
  CHECK(k.optimum_ms() == doctest::Approx(1.0 / 45.0));
  CHECK(k.recorded_ms(k.space().parse("w=0.25;method=L-BFGS-B;popsize=10")) == doctest::Approx(1.0 / 45.0));
  CHECK(k.failed_count() == t.failed_count());
  tunekit::Rng rng(2);
  const auto r = k.run(k.space().parse("w=0.5;method=Powell;popsize=20"), 2, rng);
  for (const double x : r.seconds) CHECK(x == doctest::Approx(1e-3 / 10.0));
  CHECK(r.simulated_cost == doctest::Approx(2 * 1.0e-3));  // its time: 1 ms
  doc["results"][0]["measurements"].erase(1);
  CHECK(cache_error_of(doc.dump()) == "mem.json: result 1: lacks a measurement named 'GFLOPS/W'");
}
