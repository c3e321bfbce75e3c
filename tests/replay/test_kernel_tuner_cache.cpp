#include <tunekit/replay/kernel_tuner_cache.hpp>
#include <tunekit/replay/replay_kernel.hpp>

#include "support/temp_dir.hpp"
#include "support/what_of.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <cmath>
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
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32.5, "use_shmem": 1, "filter": 15, "time": 1.0})"))
            .find("mem.json: cache entry '32,1,15': parameter 'block_size_x' = 32.5 is not an integer") == 0);
  CHECK(cache_error_of(with_entry(R"("8,1,15": {"block_size_x": 8, "use_shmem": 1, "filter": 15, "time": 1.0})")) ==
        "mem.json: cache entry '8,1,15': parameter 'block_size_x' = 8 is not among its tune_params values");
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15, "time": "Oops"})")) ==
        "mem.json: cache entry '32,1,15': 'time' is the unknown failure \"Oops\"");
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15})")) ==
        "mem.json: cache entry '32,1,15': lacks 'time'");
  CHECK(cache_error_of(with_entry(R"("32,1,15": {"block_size_x": 32, "use_shmem": 1, "filter": 15, "time": 1.0, "times": [1.0, -2]})"))
            .find("mem.json: cache entry '32,1,15': 'times' holds -2") == 0);
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
