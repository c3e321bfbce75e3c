// Fuzz target: a Kernel Tuner cache file (kernel/kernel_tuner_cache.hpp:
// from_kernel_tuner_cache_text). Documented error: DatasetError. Invariants of a cache that
// loads: one row per entry, each row's config valid and answering with its recorded time.

#include "fuzz_support.hpp"

#include <tunekit/kernel/kernel_tuner_cache.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunekit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto k = from_kernel_tuner_cache_text(text, "fuzz.json", {.overhead_seconds = 0.5, .flop = 0, .name = "fuzz"},
                                                nullptr);
    fuzz::require(k.row_count() > 0, "a cache that loads has rows");
    fuzz::require(std::isfinite(k.optimum_ms()) && k.optimum_ms() > 0, "finite positive optimum");
    const auto& s = k.space();
    if (s.product_size() <= (1u << 16)) {
      const auto valid = s.valid_indices();
      fuzz::require(valid.size() == k.row_count(), "the valid configs are the rows");
      Rng rng(1);
      for (const auto idx : valid) {
        const auto c = s.from_index(idx);
        const auto r = k.run(c, 2, rng);
        fuzz::require(std::isinf(k.recorded_ms(c)) == (r.status != Status::ok), "a failed row fails to run");
        for (const double x : r.seconds) fuzz::require(x > 0 && std::isfinite(x), "samples finite, positive");
      }
    }
  } catch (const DatasetError&) {
  }
  return 0;
}
