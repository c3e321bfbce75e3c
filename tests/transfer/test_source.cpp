// TransferSource: the matching of earlier runs' records to a target space by knob name and
// value, and the loaders of logs and recorded spaces (plain and gzipped).

#include <tunekit/records/log.hpp>
#include <tunekit/transfer/source.hpp>

#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "support/what_of.hpp"
#include "support/zlib_gzip.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace transfer_source_test {

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// The target: tile (power of two 16..64), layout (a, c), split (16 into 2), vec (ordinal 1, 2, 4).
tunekit::SearchSpace target_space() {
  tunekit::SearchSpace s;
  s.add(tunekit::Knob::power_of_two("tile", 16, 64));
  s.add(tunekit::Knob::categorical("layout", {"a", "c"}));
  s.add(tunekit::Knob::split("split", 16, 2));
  s.add(tunekit::Knob::ordinal("vec", {1, 2, 4}));
  return s;
}

// A source: tile (8..32: 8 is not the target's), layout (a, b: b is not the target's), split
// (16 into 2), unroll (the target lacks it); no vec.
tunekit::SearchSpace source_space() {
  tunekit::SearchSpace s;
  s.add(tunekit::Knob::power_of_two("tile", 8, 32));
  s.add(tunekit::Knob::categorical("layout", {"a", "b"}));
  s.add(tunekit::Knob::split("split", 16, 2));
  s.add(tunekit::Knob::boolean("unroll"));
  return s;
}

tunekit::Record record_of(const tunekit::SearchSpace& s, const tunekit::Config& c, double seconds) {
  tunekit::Record r{.task = "conv", .device = "gpu0", .config = c, .timestamp = "2026-01-01T00:00:00.000Z"};
  r.measurement = std::isfinite(seconds) ? tunekit::Measurement::from_samples({seconds, seconds}, 2 * seconds)
                                         : tunekit::Measurement::failure(tunekit::Status::runtime_error, "boom");
  (void)s;
  return r;
}

}  // namespace transfer_source_test

TEST_CASE("transfer source: knobs matched by name, values placed on the target's features") {
  using namespace transfer_source_test;
  const tunekit::SearchSpace target = target_space();
  tunekit::SourceTable t{.identity = {.file = "mem", .task = "conv", .hash = "0"},
                         .knobs = {"unroll", "split", "layout", "tile"}};
  using V = std::vector<std::int64_t>;
  t.rows = {
      {std::int64_t{1}, V{4, 4}, std::string("a"), std::int64_t{8}},    // tile 8: placed by its value
      {std::int64_t{0}, V{2, 8}, std::string("c"), std::int64_t{32}},   // all the target's values
      {std::int64_t{0}, V{1, 16}, std::string("b"), std::int64_t{16}},  // layout b: the target lacks it
      {std::int64_t{1}, V{2, 2, 4}, std::string("a"), std::int64_t{16}},  // three factors: left out
      {std::int64_t{1}, V{16, 1}, std::string("a"), std::int64_t{64}},  // failed
  };
  t.times = {2.0, 1.0, 1.0, 1.0, std::numeric_limits<double>::infinity()};
  const tunekit::TransferSource src(target, {t});

  CHECK(src.common_knobs() == std::vector<std::string>{"tile", "layout", "split"});
  CHECK(src.target_only_knobs() == std::vector<std::string>{"vec"});
  REQUIRE(src.sources().size() == 1);
  CHECK(src.sources()[0].unused_knobs == std::vector<std::string>{"unroll"});
  CHECK(src.sources()[0].records == 5);
  CHECK(src.sources()[0].left_out == 2);
  // Target features: tile, log2(tile), layout=a, layout=c, split[0], split[1], log2 of both, vec.
  CHECK(src.target_features() == 9);
  CHECK(src.columns() == std::vector<Eigen::Index>{0, 1, 2, 3, 4, 5, 6, 7});
  REQUIRE(src.rows() == 3);
  Eigen::MatrixXd expected(3, 8);
  expected << 8, 3, 1, 0, 4, 4, 2, 2,  //
      32, 5, 0, 1, 2, 8, 1, 3,         //
      64, 6, 1, 0, 16, 1, 4, 0;
  CHECK(src.features() == expected);
  // Throughput relative to the source's best (its best time is 1.0), a failure 0.
  CHECK(src.targets()[0] == 0.5);
  CHECK(src.targets()[1] == 1.0);
  CHECK(src.targets()[2] == 0.0);

  // The target's features of the knobs in common are those placed for the same values.
  const auto split28 = static_cast<std::uint32_t>(target.knob(2).index_of_factors({2, 8}));
  tunekit::Config c = {1, 1, split28, 2};  // tile 32, c, [2,8], vec 4
  const Eigen::MatrixXd x = tunekit::feature_matrix(target, std::vector<tunekit::Config>{c});
  CHECK(src.common_features(x) == expected.row(1));
  CHECK(tunekit::test::what_of<std::invalid_argument>([&] { (void)src.common_features(Eigen::MatrixXd(1, 3)); })
            .find("a feature matrix of 3 columns, the target space has 9") != std::string::npos);
}

TEST_CASE("transfer source: a knob the target lacks in one source of several is not in common") {
  using namespace transfer_source_test;
  const tunekit::SearchSpace target = target_space();
  tunekit::SourceTable a{.identity = {.file = "a"}, .knobs = {"tile", "vec"}};
  a.rows = {{std::int64_t{16}, std::int64_t{2}}, {std::int64_t{32}, std::int64_t{4}}};
  a.times = {1.0, 2.0};
  tunekit::SourceTable b{.identity = {.file = "b"}, .knobs = {"tile"}};
  b.rows = {{std::int64_t{64}}};
  b.times = {3.0};
  const tunekit::TransferSource src(target, {a, b});
  CHECK(src.common_knobs() == std::vector<std::string>{"tile"});
  CHECK(src.target_only_knobs() == std::vector<std::string>{"layout", "split", "vec"});
  REQUIRE(src.rows() == 3);
  CHECK(src.targets()[0] == 1.0);
  CHECK(src.targets()[1] == 0.5);
  CHECK(src.targets()[2] == 1.0);  // each source relative to its own best
  CHECK(src.features()(2, 0) == 64);
}

TEST_CASE("transfer source: nothing in common is a clear error") {
  using namespace transfer_source_test;
  const tunekit::SearchSpace target = target_space();
  tunekit::SourceTable t{.identity = {.file = "other.csv"}, .knobs = {"block_x", "block_y"}};
  t.rows = {{std::int64_t{16}, std::int64_t{2}}};
  t.times = {1.0};
  const std::string e = tunekit::test::what_of<std::invalid_argument>([&] { tunekit::TransferSource(target, {t}); });
  CHECK(e == "TransferSource: no knob of the target (tile layout split vec) is in every source; 'other.csv' has "
             "block_x block_y");
  // Knobs in common, but no value the target can take.
  tunekit::SourceTable u{.identity = {.file = "u"}, .knobs = {"layout"}};
  u.rows = {{std::string("b")}, {std::string("d")}};
  u.times = {1.0, 2.0};
  CHECK(tunekit::test::what_of<std::invalid_argument>([&] { tunekit::TransferSource(target, {u}); }) ==
        "TransferSource: no source record has values the target can take; 'u': 2 of 2 records left out");
  // No success, no source.
  u.times = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  CHECK(tunekit::test::what_of<std::invalid_argument>([&] { tunekit::TransferSource(target, {u}); }).find(
            "has no successful record") != std::string::npos);
  CHECK(tunekit::test::what_of<std::invalid_argument>([&] { tunekit::TransferSource(target, {}); }) ==
        "TransferSource: no source");
}

TEST_CASE("transfer source: a tunekit log, plain and gzipped, one source per task") {
  using namespace transfer_source_test;
  tunekit::test::TempDir dir;
  const tunekit::SearchSpace source = source_space();
  const auto log = dir.path / "run.jsonl";
  {
    tunekit::RecordWriter w(log);
    // tile 8 / a / [1,16] / 0; tile 16 / b / ...; tile 32 / a / [4,4] / 1 (failed)
    w.write(source, record_of(source, {0, 0, 0, 0}, 2e-3));
    w.write(source, record_of(source, {1, 1, 0, 0}, 1e-3));
    w.write(source, record_of(source, {2, 0, 2, 1}, 1e-3));
    w.write(source, record_of(source, {2, 0, 1, 1}, std::numeric_limits<double>::infinity()));
    tunekit::Record other = record_of(source, {1, 0, 0, 0}, 5e-3);
    other.task = "gemm";
    w.write(source, other);
  }
  // A cut-off last line (a killed writer) is skipped.
  std::ofstream(log, std::ios::app) << R"({"task": "conv", "device": "gp)";
  std::ostringstream warnings;
  const auto tables = tunekit::sources_from_log(log, {}, &warnings);
  CHECK(warnings.str().find("ignoring a truncated last line") != std::string::npos);
  REQUIRE(tables.size() == 2);
  CHECK(tables[0].identity.task == "conv");
  CHECK(tables[1].identity.task == "gemm");
  CHECK(tables[0].identity.hash == tunekit::content_hash(tunekit::test::slurp(log)));
  CHECK(tables[0].knobs == std::vector<std::string>{"tile", "layout", "split", "unroll"});
  REQUIRE(tables[0].rows.size() == 4);
  CHECK(std::get<std::string>(tables[0].rows[1][1]) == "b");
  CHECK(std::get<std::vector<std::int64_t>>(tables[0].rows[2][2]) == std::vector<std::int64_t>{4, 4});
  CHECK(std::isinf(tables[0].times[3]));

  const tunekit::TransferSource src(target_space(), tunekit::sources_from_log(log, "conv", nullptr));
  CHECK(src.rows() == 3);  // layout b left out
  CHECK(src.sources()[0].left_out == 1);
  CHECK(src.targets()(0) == doctest::Approx(0.5));
  CHECK(src.targets()(1) == doctest::Approx(1.0));
  CHECK(src.targets()(2) == 0.0);

  // The same log gzipped reads the same records; its identity hashes the bytes as stored.
  const auto gz = dir.path / "run.jsonl.gz";
  write_file(gz, tunekit::test::zlib_gzip(tunekit::test::slurp(log)));
  const auto gz_tables = tunekit::sources_from_files({gz}, nullptr);
  REQUIRE(gz_tables.size() == 2);
  CHECK(gz_tables[0].rows == tables[0].rows);
  CHECK(gz_tables[0].times == tables[0].times);
  CHECK(gz_tables[0].identity.hash != tables[0].identity.hash);
  CHECK(gz_tables[0].identity.hash == tunekit::content_hash(tunekit::test::slurp(gz)));

  CHECK(tunekit::test::what_of<tunekit::RecordError>([&] { (void)tunekit::sources_from_log(log, "nope", nullptr); })
            .find("holds no records of task 'nope'") != std::string::npos);
}

TEST_CASE("transfer source: recorded spaces (dataset CSV, Kernel Tuner cache), plain and gzipped") {
  using namespace transfer_source_test;
  tunekit::test::TempDir dir;
  // tile varies, layout is constant (a constant of the replay's space: still matched by name).
  const std::string csv =
      "tile,vec,layout,time_ms,samples\n"
      "16,1,0,2.0,2.0;2.0\n"
      "32,2,0,1.0,1.0\n"
      "64,3,0,inf,\n";
  write_file(dir.path / "space.csv", csv);
  write_file(dir.path / "space.csv.gz", tunekit::test::zlib_gzip(csv));
  const std::string cache =
      R"({"device_name": "X", "kernel_name": "k", "problem_size": [1], "tune_params_keys": ["tile", "vec"],)"
      R"( "tune_params": {"tile": [16, 128], "vec": [1, 2]}, "objective": "time", "cache": {)"
      R"("16,1": {"tile": 16, "vec": 1, "time": 4.0}, "128,2": {"tile": 128, "vec": 2, "time": 1.0}}})";
  write_file(dir.path / "cache.json.gz", tunekit::test::zlib_gzip(cache));

  tunekit::SearchSpace target;
  target.add(tunekit::Knob::power_of_two("tile", 16, 64));
  target.add(tunekit::Knob::ordinal("vec", {1, 2, 4}));
  const auto tables = tunekit::sources_from_files({dir.path / "space.csv", dir.path / "space.csv.gz",
                                                   dir.path / "cache.json.gz"}, nullptr);
  REQUIRE(tables.size() == 3);
  CHECK(tables[0].identity.task == "space");
  CHECK(tables[0].knobs == std::vector<std::string>{"tile", "vec", "layout"});
  CHECK(tables[1].rows == tables[0].rows);
  CHECK(tables[1].times == tables[0].times);
  const tunekit::TransferSource src(target, tables);
  CHECK(src.common_knobs() == std::vector<std::string>{"tile", "vec"});
  REQUIRE(src.rows() == 8);
  Eigen::VectorXd y(8);
  y << 0.5, 1, 0, 0.5, 1, 0, 0.25, 1;
  CHECK(src.targets() == y);
  CHECK(src.features()(7, 0) == 128);  // a value the target lacks, placed by its value
  CHECK(src.features()(7, 1) == 7);
  const auto json = tunekit::sources_to_json(src);
  REQUIRE(json.size() == 3);
  CHECK(json[2]["task"] == "cache");
  CHECK(json[2]["hash"] == tunekit::content_hash(tunekit::test::slurp(dir.path / "cache.json.gz")));
}
