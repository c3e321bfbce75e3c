// Fuzz target: a Kernel Tuner cache file (replay/kernel_tuner_cache.hpp:
// from_kernel_tuner_cache_text), read by its own objective and by GFLOP/s (better higher, replayed
// as 1 / it). Documented error: DatasetError. Invariants of a cache that loads: one row per entry,
// each row's config valid and answering with its recorded time.

#include "replay_invariants.hpp"

#include <tunekit/replay/kernel_tuner_cache.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunekit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* objective : {"", "GFLOP/s"}) {
    try {
      const auto k = from_kernel_tuner_cache_text(
          text, "fuzz.json", {.overhead_seconds = 0.5, .flop = 0, .name = "fuzz", .objective = objective}, nullptr);
      fuzz::require(!objective[0] || k.options().objective == objective, "the objective asked for is replayed");
      fuzz::require_sound_replay(k);
    } catch (const DatasetError&) {
    }
  }
  return 0;
}
