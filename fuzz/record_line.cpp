// Fuzz target: one line of a tuning log (records/record.hpp: record_from_json).
// Documented errors: RecordError and nlohmann::json::exception. Invariant: a record that reads
// back writes (to_json) to a line that reads back to the same record.

#include "fuzz_support.hpp"

#include <tunekit/records/record.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunekit;
  const auto& space = fuzz::record_space();
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  Record r;
  try {
    r = record_from_json(space, j);
  } catch (const RecordError&) {
    return 0;
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  fuzz::require(r.config.size() == space.dimensions(), "config has one index per knob");
  for (std::size_t i = 0; i < r.config.size(); ++i)
    fuzz::require(r.config[i] < space.knob(i).size(), "config index within its knob");
  fuzz::require(!r.measurement.ok() || (r.measurement.mean > 0 && std::isfinite(r.measurement.mean)),
                "a successful record has a finite positive mean");

  const std::string again = to_json(space, r).dump();
  const Record back = record_from_json(space, nlohmann::json::parse(again));
  fuzz::require(back.task == r.task && back.device == r.device && back.config == r.config &&
                    back.timestamp == r.timestamp && back.measurement.status == r.measurement.status &&
                    back.measurement.samples == r.measurement.samples &&
                    back.measurement.cost == r.measurement.cost && back.measurement.error == r.measurement.error &&
                    back.measurement.host == r.measurement.host && back.measurement.device == r.measurement.device,
                "to_json then record_from_json gives the record back");
  fuzz::require(!r.measurement.ok() ||
                    (back.measurement.mean == r.measurement.mean && back.measurement.std == r.measurement.std),
                "mean and std survive a round trip");
  return 0;
}
