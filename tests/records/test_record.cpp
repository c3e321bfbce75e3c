// Tuning records as JSON: the encoding of every knob kind and every status, the round trip, and
// the errors of config_from_json and record_from_json.
#include <tunekit/records/record.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <regex>
#include <string>
#include <vector>

namespace {

using tunekit::Config;
using tunekit::Knob;
using tunekit::Measurement;
using tunekit::Record;
using tunekit::RecordError;
using tunekit::SearchSpace;
using tunekit::Status;

// One knob of every kind: 3 * 4 * 2 * 3 * 4 = 288 configs.
SearchSpace every_kind_space() {
  SearchSpace s;
  s.add(Knob::ordinal("unroll", {1, 3, 7}));
  s.add(Knob::power_of_two("tile", 8, 64));  // 8, 16, 32, 64
  s.add(Knob::boolean("vector"));
  s.add(Knob::categorical("layout", {"row", "col", "blocked"}));
  s.add(Knob::split("split", 8, 2));  // [1,8] [2,4] [4,2] [8,1]
  return s;
}

// The config with the given value index of each knob.
Config cfg(std::uint32_t unroll, std::uint32_t tile, std::uint32_t vector, std::uint32_t layout,
           std::uint32_t split) {
  return Config{unroll, tile, vector, layout, split};
}

Measurement ok_measurement() {
  Measurement m;
  m.status = Status::ok;
  m.samples = {1.25e-3, 1.5e-3, 1.0 / 3.0 * 1e-3};  // 1/3 needs every digit to round-trip
  m.mean = 1.0277777777777777e-3;
  m.std = 1.1e-4;
  m.cost = 1.0047;
  return m;
}

Measurement failed_measurement(Status st) {
  Measurement m;
  m.status = st;
  m.mean = std::numeric_limits<double>::infinity();
  m.std = 0.0;
  m.cost = 0.5;
  m.error = std::string("failed: ") + std::string(tunekit::to_string(st));
  return m;
}

// A valid record as JSON, to be broken by the error tests.
nlohmann::json good_json(const SearchSpace& s) {
  return tunekit::to_json(s, Record{"task", "dev", cfg(0, 0, 0, 0, 0), ok_measurement(), "t"});
}

const std::vector<Status> all_statuses = {Status::ok,      Status::build_error,
                                          Status::runtime_error, Status::timeout,
                                          Status::wrong_result,  Status::excluded};

}  // namespace

TEST_CASE("record JSON: every knob kind is encoded as documented") {
  const SearchSpace s = every_kind_space();
  // unroll=7, tile=32, vector=true, layout=blocked, split=[4,2]
  const Config c = cfg(2, 2, 1, 2, 2);
  const nlohmann::json j = tunekit::config_to_json(s, c);
  REQUIRE(j.is_object());
  CHECK(j.size() == 5);
  CHECK(j.at("unroll").is_number_integer());
  CHECK(j.at("unroll").get<std::int64_t>() == 7);
  CHECK(j.at("tile").is_number_integer());
  CHECK(j.at("tile").get<std::int64_t>() == 32);
  CHECK(j.at("vector").is_boolean());
  CHECK(j.at("vector").get<bool>() == true);
  CHECK(j.at("layout").is_string());
  CHECK(j.at("layout").get<std::string>() == "blocked");
  CHECK(j.at("split").is_array());
  CHECK(j.at("split") == nlohmann::json::array({4, 2}));

  const nlohmann::json j0 = tunekit::config_to_json(s, cfg(0, 0, 0, 0, 0));
  CHECK(j0.at("vector").is_boolean());
  CHECK(j0.at("vector").get<bool>() == false);
  CHECK(j0.at("layout").get<std::string>() == "row");
  CHECK(j0.at("split") == nlohmann::json::array({1, 8}));
}

TEST_CASE("record JSON: every config of the space round-trips through text") {
  const SearchSpace s = every_kind_space();
  REQUIRE(s.product_size() == 288);
  for (std::uint64_t idx = 0; idx < s.product_size(); ++idx) {
    const Config c = s.from_index(idx);
    const std::string text = tunekit::config_to_json(s, c).dump();
    const Config back = tunekit::config_from_json(s, nlohmann::json::parse(text));
    REQUIRE_MESSAGE(back == c, text);
  }
}

TEST_CASE("record JSON: config_from_json also takes 0/1 for a boolean knob") {
  const SearchSpace s = every_kind_space();
  nlohmann::json j = tunekit::config_to_json(s, cfg(1, 1, 0, 1, 1));
  j["vector"] = 1;
  CHECK(tunekit::config_from_json(s, j) == cfg(1, 1, 1, 1, 1));
  j["vector"] = 0;
  CHECK(tunekit::config_from_json(s, j) == cfg(1, 1, 0, 1, 1));
}

TEST_CASE("record JSON: a record of every status round-trips") {
  const SearchSpace s = every_kind_space();
  std::uint64_t idx = 5;
  for (const Status st : all_statuses) {
    CAPTURE(tunekit::to_string(st));
    const Record r{"gemm_4096", "RTX 3090", s.from_index(idx), st == Status::ok ? ok_measurement()
                                                                                : failed_measurement(st),
                   "2026-11-20T12:00:00.123Z"};
    idx += 41;
    const nlohmann::json j = tunekit::to_json(s, r);
    CHECK(j.at("status").get<std::string>() == std::string(tunekit::to_string(st)));
    CHECK(j.at("task").get<std::string>() == "gemm_4096");
    CHECK(j.at("device").get<std::string>() == "RTX 3090");
    CHECK(j.at("timestamp").get<std::string>() == "2026-11-20T12:00:00.123Z");
    CHECK(j.at("cost").get<double>() == r.measurement.cost);
    if (st == Status::ok) {
      CHECK(j.contains("mean"));
      CHECK(j.contains("std"));
      CHECK_FALSE(j.contains("error"));  // empty error is not written
    } else {
      // Failed measurements carry no mean/std (infinity is not JSON).
      CHECK_FALSE(j.contains("mean"));
      CHECK_FALSE(j.contains("std"));
      CHECK(j.at("error").get<std::string>() == r.measurement.error);
      CHECK(j.at("samples").empty());
    }

    // Through text, as in a log: every field comes back exactly.
    const Record back = tunekit::record_from_json(s, nlohmann::json::parse(j.dump()));
    CHECK(back.task == r.task);
    CHECK(back.device == r.device);
    CHECK(back.config == r.config);
    CHECK(back.timestamp == r.timestamp);
    CHECK(back.measurement.status == st);
    CHECK(back.measurement.samples == r.measurement.samples);
    CHECK(back.measurement.cost == r.measurement.cost);
    CHECK(back.measurement.error == r.measurement.error);
    if (st == Status::ok) {
      CHECK(back.measurement.mean == r.measurement.mean);
      CHECK(back.measurement.std == r.measurement.std);
      CHECK(back.measurement.ok());
    } else {
      CHECK(std::isinf(back.measurement.mean));
      CHECK(back.measurement.mean > 0);
      CHECK_FALSE(back.measurement.ok());
      CHECK(back.measurement.throughput(1e9) == 0.0);
    }
  }
}

TEST_CASE("record JSON: config_from_json errors name the knob") {
  const SearchSpace s = every_kind_space();
  const nlohmann::json good = tunekit::config_to_json(s, cfg(1, 2, 1, 0, 3));
  REQUIRE(tunekit::config_from_json(s, good) == cfg(1, 2, 1, 0, 3));

  auto message = [&](const nlohmann::json& j) -> std::string {
    try {
      (void)tunekit::config_from_json(s, j);
    } catch (const RecordError& e) {
      return e.what();
    }
    return "<no RecordError>";
  };

  SUBCASE("missing knob") {
    nlohmann::json j = good;
    j.erase("layout");
    const std::string m = message(j);
    CHECK(m.find("lacks") != std::string::npos);
    CHECK(m.find("'layout'") != std::string::npos);
  }
  SUBCASE("unknown knob") {
    nlohmann::json j = good;
    j["warp"] = 4;
    const std::string m = message(j);
    CHECK(m.find("unknown") != std::string::npos);
    CHECK(m.find("'warp'") != std::string::npos);
  }
  SUBCASE("a known knob renamed: missing wins over unknown") {
    nlohmann::json j = good;
    j.erase("tile");
    j["tiles"] = 16;
    const std::string m = message(j);
    CHECK(m.find("'tile'") != std::string::npos);
  }
  SUBCASE("ordinal value the knob lacks") {
    nlohmann::json j = good;
    j["unroll"] = 2;
    const std::string m = message(j);
    CHECK(m.find("'unroll'") != std::string::npos);
    CHECK(m.find("has no value 2") != std::string::npos);
  }
  SUBCASE("power-of-two value out of range") {
    nlohmann::json j = good;
    j["tile"] = 128;
    CHECK(message(j).find("'tile'") != std::string::npos);
  }
  SUBCASE("ordinal value of the wrong type") {
    nlohmann::json j = good;
    j["unroll"] = "3";
    CHECK(message(j).find("'unroll'") != std::string::npos);
    j["unroll"] = 3.5;
    CHECK(message(j).find("'unroll'") != std::string::npos);
  }
  SUBCASE("boolean knob given 2") {
    nlohmann::json j = good;
    j["vector"] = 2;
    CHECK(message(j).find("'vector'") != std::string::npos);
  }
  SUBCASE("categorical label the knob lacks") {
    nlohmann::json j = good;
    j["layout"] = "diagonal";
    const std::string m = message(j);
    CHECK(m.find("'layout'") != std::string::npos);
    CHECK(m.find("diagonal") != std::string::npos);
  }
  SUBCASE("categorical given its index instead of its label") {
    nlohmann::json j = good;
    j["layout"] = 7;
    CHECK(message(j).find("'layout'") != std::string::npos);
  }
  SUBCASE("split factors the knob lacks") {
    nlohmann::json j = good;
    j["split"] = nlohmann::json::array({3, 3});
    CHECK(message(j).find("'split'") != std::string::npos);
    j["split"] = nlohmann::json::array({2, 2, 2});
    CHECK(message(j).find("'split'") != std::string::npos);
    j["split"] = nlohmann::json::array({"2", "4"});
    CHECK(message(j).find("'split'") != std::string::npos);
  }
  SUBCASE("not an object") {
    CHECK_THROWS_AS((void)tunekit::config_from_json(s, nlohmann::json::array({1, 2})), RecordError);
  }
}

TEST_CASE("record JSON: record_from_json rejects an unknown status and a bad mean") {
  const SearchSpace s = every_kind_space();
  REQUIRE_NOTHROW((void)tunekit::record_from_json(s, good_json(s)));

  SUBCASE("unknown status") {
    nlohmann::json j = good_json(s);
    j["status"] = "exploded";
    try {
      (void)tunekit::record_from_json(s, j);
      FAIL("no RecordError for an unknown status");
    } catch (const RecordError& e) {
      const std::string m = e.what();
      CHECK(m.find("unknown status") != std::string::npos);
      CHECK(m.find("exploded") != std::string::npos);
    }
  }
  SUBCASE("status in the wrong case") {
    nlohmann::json j = good_json(s);
    j["status"] = "OK";
    CHECK_THROWS_AS((void)tunekit::record_from_json(s, j), RecordError);
  }
  SUBCASE("successful record with a non-positive mean") {
    nlohmann::json j = good_json(s);
    j["mean"] = 0.0;
    CHECK_THROWS_AS((void)tunekit::record_from_json(s, j), RecordError);
    j["mean"] = -1e-3;
    CHECK_THROWS_AS((void)tunekit::record_from_json(s, j), RecordError);
  }
  SUBCASE("successful record without a mean") {
    nlohmann::json j = good_json(s);
    j.erase("mean");
    CHECK_THROWS((void)tunekit::record_from_json(s, j));
  }
  SUBCASE("a failed record ignores a stray mean") {
    nlohmann::json j = good_json(s);
    j["status"] = "timeout";
    const Record r = tunekit::record_from_json(s, j);
    CHECK(r.measurement.status == Status::timeout);
    CHECK(std::isinf(r.measurement.mean));
  }
  SUBCASE("not an object") {
    CHECK_THROWS_AS((void)tunekit::record_from_json(s, nlohmann::json(42)), RecordError);
  }
}

TEST_CASE("record JSON: utc_timestamp is ISO 8601 UTC with milliseconds") {
  const std::string t = tunekit::utc_timestamp();
  CHECK(std::regex_match(t, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)")));
  CHECK(t.substr(0, 2) == "20");
}
