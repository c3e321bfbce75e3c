// Fuzz target: a dataset CSV (replay/replay_kernel.hpp: ReplayKernel::from_stream).
// Documented error: DatasetError. Invariants of a dataset that loads: every row's config is
// valid and answers with its recorded time; runs return recorded samples.

#include "replay_invariants.hpp"

#include <tunekit/replay/replay_kernel.hpp>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunekit;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto k = ReplayKernel::from_stream(in, "fuzz.csv", {.overhead_seconds = 0.5, .flop = 0, .name = "fuzz"});
    fuzz::require_sound_replay(k);
    fuzz::require(k.failed_count() < k.row_count(), "not every row failed");
    fuzz::require(k.recorded_times_ms().size() == k.row_count(), "one recorded time per row");
  } catch (const DatasetError&) {
  }
  return 0;
}
