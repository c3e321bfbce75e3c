// What a farm sends (detail::FarmCodec) and what its records add: a job and a result round-trip
// and a damaged one is refused; a record's "measured_on" (host and device) round-trips, and a
// record without it (an older log) loads.
#include <tunekit/farm/protocol.hpp>
#include <tunekit/records/record.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace tunekit;

namespace {
SearchSpace small_space() {
  SearchSpace s;
  s.add(Knob::ordinal("unroll", {1, 3, 7}));
  s.add(Knob::power_of_two("tile", 8, 64));
  return s;
}
}  // namespace

TEST_CASE("farm protocol: a job and a result round-trip, a damaged one is refused") {
  const FarmJob job{.task = 3, .config = {2, 1}, .measurement_seed = 0xfeedbeefULL, .trial = 41};
  const std::string bytes = detail::FarmCodec::encode_job(17, job);
  std::uint64_t id = 0;
  FarmJob back;
  REQUIRE(detail::FarmCodec::decode_job(bytes, id, back));
  CHECK(id == 17);
  CHECK(back.task == 3);
  CHECK(back.config == job.config);
  CHECK(back.measurement_seed == job.measurement_seed);
  CHECK(back.trial == 41);
  CHECK(back.rng()() == job.rng()());
  CHECK(back.compile_ahead == 0);
  CHECK(back.prefetch.empty());
  CHECK_FALSE(detail::FarmCodec::decode_job(bytes.substr(0, bytes.size() - 1), id, back));
  CHECK_FALSE(detail::FarmCodec::decode_job(bytes + "x", id, back));

  // With the configs to compile ahead (JobQueue, FarmJob::prefetch).
  const FarmJob ahead{.task = 1, .config = {0, 3}, .measurement_seed = 9, .trial = 2, .compile_ahead = 4,
                      .prefetch = {{1, 2}, {2, 0}, {0, 1}}};
  const std::string with = detail::FarmCodec::encode_job(18, ahead);
  REQUIRE(detail::FarmCodec::decode_job(with, id, back));
  CHECK(id == 18);
  CHECK(back.config == ahead.config);
  CHECK(back.compile_ahead == 4);
  CHECK(back.prefetch == ahead.prefetch);
  CHECK_FALSE(detail::FarmCodec::decode_job(with.substr(0, with.size() - 2), id, back));

  Measurement m = Measurement::from_samples({1e-3, 2e-3, 3e-3}, 0.5);
  m.host = "node7";
  m.device = "cuda:2";
  const std::string r = detail::FarmCodec::encode_result(5, m);
  Measurement got;
  REQUIRE(detail::FarmCodec::decode_result(r, id, got));
  CHECK(id == 5);
  CHECK(got.samples == m.samples);
  CHECK(got.mean == m.mean);
  CHECK(got.cost == m.cost);
  CHECK(got.host == "node7");
  CHECK(got.device == "cuda:2");
  CHECK_FALSE(detail::FarmCodec::decode_result(r.substr(0, 20), id, got));

  // A worker's work that throws gives a runtime_error with the message, and says where.
  const Measurement failed = detail::measure_job([](const FarmJob&) -> Measurement { throw std::runtime_error("boom"); },
                                                 job, "h", "d");
  CHECK(failed.status == Status::runtime_error);
  CHECK(failed.error == "boom");
  CHECK(failed.device == "d");
}

TEST_CASE("farm records: measured_on round-trips, an older record without it loads") {
  const SearchSpace space = small_space();
  Record r{.task = "gemm", .device = "RTX 3090", .config = {1, 2},
           .measurement = Measurement::from_samples({1e-3, 1e-3}), .timestamp = "2026-11-25T07:00:00.000Z"};
  r.measurement.host = "gpu-node-3";
  r.measurement.device = "cuda:1";
  const auto j = to_json(space, r);
  CHECK(j.at("measured_on").at("host") == "gpu-node-3");
  const Record back = record_from_json(space, nlohmann::json::parse(j.dump()));
  CHECK(back.measurement.host == "gpu-node-3");
  CHECK(back.measurement.device == "cuda:1");
  CHECK(back.device == "RTX 3090");

  // Measured in the tuning process: no field, as before.
  r.measurement.host.clear();
  r.measurement.device.clear();
  const auto plain = to_json(space, r);
  CHECK_FALSE(plain.contains("measured_on"));
  const std::string old_line =
      R"({"task":"gemm","device":"RTX 3090","config":{"unroll":3,"tile":32},"status":"ok","samples":[0.001],)"
      R"("mean":0.001,"std":0,"cost":0.001,"timestamp":"2026-11-20T12:00:00.123Z"})";
  const Record old = record_from_json(space, nlohmann::json::parse(old_line));
  CHECK(old.measurement.host.empty());
  CHECK(old.measurement.device.empty());

  auto bad = nlohmann::json::parse(old_line);
  bad["measured_on"] = "node";
  CHECK_THROWS_WITH_AS(record_from_json(space, bad), doctest::Contains("measured_on"), RecordError);
}
