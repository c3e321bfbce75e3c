#pragma once
/// \file
/// Tuning records: one JSON object per measurement, one per line (JSON lines).
///
/// {"task": "...", "device": "...", "config": {"knob": value, ...}, "status": "ok",
///  "samples": [seconds, ...], "mean": s, "std": s, "cost": s, "error": "...",
///  "timestamp": "2026-11-20T12:00:00.123Z", "measured_on": {"host": "...", "device": "cuda:1"}}
/// Config values: a number for ordinal and power-of-two knobs, true/false for booleans, the label
/// for categorical and ranked knobs, the list of factors for split knobs. "mean" and "std" are
/// present for successful measurements only. "measured_on" is present for measurements made by a
/// farm's worker (include/tunekit/farm/): the host and device that made it; logs without it load.

#include "tunekit/core/measurement.hpp"
#include "tunekit/core/status.hpp"
#include "tunekit/space/search_space.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <limits>
#include <stdexcept>
#include <string>

namespace tunekit {

/// A malformed record or log; the message names the file and line.
struct RecordError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One measurement as stored in a log.
struct Record {
  std::string task{};
  std::string device{};
  Config config{};
  Measurement measurement{};
  std::string timestamp{};
};

/// The current UTC time as ISO 8601 with milliseconds.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

/// The config as a JSON object keyed by knob name, in knob order.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
nlohmann::ordered_json config_to_json(const SearchSpace& space, const Config& c) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < space.dimensions(); ++i) {
    const Knob& k = space.knob(i);
    switch (k.kind()) {
      case KnobKind::boolean: j[k.name()] = k.value(c.at(i)) != 0; break;
      case KnobKind::split: j[k.name()] = k.factors(c.at(i)); break;
      default:
        if (k.labelled()) j[k.name()] = k.label(c.at(i));  // categorical and ranked knobs
        else j[k.name()] = k.value(c.at(i));
        break;
    }
  }
  return j;
}

/// The config of a JSON object keyed by knob name. Throws RecordError naming a missing or
/// unknown knob or a value the knob does not have.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Config config_from_json(const SearchSpace& space, const nlohmann::json& j) {
  if (!j.is_object()) throw RecordError("config is not an object");
  Config c(space.dimensions());
  for (std::size_t i = 0; i < space.dimensions(); ++i) {
    const Knob& k = space.knob(i);
    const auto it = j.find(k.name());
    if (it == j.end()) throw RecordError("config lacks knob '" + k.name() + "'");
    std::size_t idx = k.size();
    if (k.labelled() && it->is_string())
      idx = k.index_of_label(it->get<std::string>());
    else if (k.kind() == KnobKind::split && it->is_array() &&
             std::all_of(it->begin(), it->end(), [](const auto& x) { return x.is_number_integer(); }))
      idx = k.index_of_factors(it->get<std::vector<std::int64_t>>());
    else if (k.kind() == KnobKind::boolean && it->is_boolean())
      idx = k.index_of(it->get<bool>() ? 1 : 0);
    else if (it->is_number_integer())
      idx = k.index_of(it->get<std::int64_t>());
    if (idx >= k.size())
      throw RecordError("knob '" + k.name() + "' has no value " + it->dump());
    c[i] = static_cast<std::uint32_t>(idx);
  }
  if (j.size() != space.dimensions())
    for (const auto& [name, v] : j.items()) {
      bool known = false;
      for (const auto& k : space.knobs()) known = known || k.name() == name;
      if (!known) throw RecordError("config has unknown knob '" + name + "'");
    }
  return c;
}

/// The record as a JSON object, keys in the documented order.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
nlohmann::ordered_json to_json(const SearchSpace& space, const Record& r) {
  nlohmann::ordered_json j;
  j["task"] = r.task;
  j["device"] = r.device;
  j["config"] = config_to_json(space, r.config);
  j["status"] = std::string(to_string(r.measurement.status));
  j["samples"] = r.measurement.samples;
  if (r.measurement.ok()) {
    j["mean"] = r.measurement.mean;
    j["std"] = r.measurement.std;
  }
  j["cost"] = r.measurement.cost;
  if (!r.measurement.error.empty()) j["error"] = r.measurement.error;
  j["timestamp"] = r.timestamp;
  if (!r.measurement.host.empty() || !r.measurement.device.empty())
    j["measured_on"] = {{"host", r.measurement.host}, {"device", r.measurement.device}};
  return j;
}

/// The record of a parsed JSON object. Throws RecordError (or nlohmann::json::exception) on a
/// missing field or a wrong type.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Record record_from_json(const SearchSpace& space, const nlohmann::json& j) {
  if (!j.is_object()) throw RecordError("record is not a JSON object");
  Record r;
  r.task = j.at("task").get<std::string>();
  r.device = j.at("device").get<std::string>();
  r.config = config_from_json(space, j.at("config"));
  if (!space.is_valid(r.config))
    throw RecordError("config " + space.describe(r.config) + " violates the space's constraints (" +
                      space.describe_constraints() + ")");
  const auto status = parse_status(j.at("status").get<std::string>());
  if (!status) throw RecordError("unknown status " + j.at("status").dump());
  Measurement& m = r.measurement;
  m.status = *status;
  m.samples = j.at("samples").get<std::vector<double>>();
  m.cost = j.at("cost").get<double>();
  if (m.ok()) {
    m.mean = j.at("mean").get<double>();
    m.std = j.at("std").get<double>();
    if (!(m.mean > 0) || !std::isfinite(m.mean))
      throw RecordError("mean of a successful record must be finite and positive");
  } else {
    m.mean = std::numeric_limits<double>::infinity();
  }
  if (const auto e = j.find("error"); e != j.end()) m.error = e->get<std::string>();
  r.timestamp = j.at("timestamp").get<std::string>();
  if (const auto on = j.find("measured_on"); on != j.end()) {
    if (!on->is_object()) throw RecordError("measured_on is not an object");
    m.host = on->value("host", std::string());
    m.device = on->value("device", std::string());
  }
  return r;
}

}  // namespace tunekit
