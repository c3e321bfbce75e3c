// Fuzz target: a dataset CSV (kernel/replay.hpp: ReplayKernel::from_stream).
// Documented error: DatasetError. Invariants of a dataset that loads: every row's config is
// valid and answers with its recorded time; runs return recorded samples.

#include "fuzz_support.hpp"

#include <tunekit/kernel/replay.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunekit;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto k = ReplayKernel::from_stream(in, "fuzz.csv", {.overhead_seconds = 0.5, .flop = 0, .name = "fuzz"});
    fuzz::require(k.row_count() > 0, "a dataset that loads has rows");
    fuzz::require(std::isfinite(k.optimum_ms()) && k.optimum_ms() > 0, "finite positive optimum");
    fuzz::require(k.failed_count() < k.row_count(), "not every row failed");
    const auto& s = k.space();
    const auto times = k.recorded_times_ms();
    fuzz::require(times.size() == k.row_count(), "one recorded time per row");
    if (s.product_size() <= (1u << 16)) {
      const auto valid = s.valid_indices();
      fuzz::require(valid.size() == k.row_count(), "the valid configs are the rows");
      Rng rng(1);
      for (const auto idx : valid) {
        const auto c = s.from_index(idx);
        const double ms = k.recorded_ms(c);
        const auto r = k.run(c, 2, rng);
        fuzz::require(std::isinf(ms) == (r.status != Status::ok), "a failed row fails to run");
        for (const double x : r.seconds) fuzz::require(x > 0 && std::isfinite(x), "samples finite, positive");
      }
    }
  } catch (const DatasetError&) {
  }
  return 0;
}
