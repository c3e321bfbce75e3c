#pragma once
// The invariants of a replay kernel read from a file, checked by the dataset_csv and
// kernel_tuner_cache fuzz targets.

#include "fuzz_support.hpp"

#include <tunekit/replay/replay_kernel.hpp>

#include <cmath>

namespace tunekit::fuzz {

/// What holds for every replay kernel a reader accepts: rows, a finite positive optimum, and
/// (for spaces small enough to enumerate) the valid configs are exactly the rows, each answering
/// with its recorded time: a failed row fails to run, the others give finite positive samples;
/// each config's text (SearchSpace::describe) parses back to it.
inline void require_sound_replay(const ReplayKernel& k) {
  require(k.row_count() > 0, "a dataset that loads has rows");
  require(std::isfinite(k.optimum_ms()) && k.optimum_ms() > 0, "finite positive optimum");
  const auto& s = k.space();
  if (s.product_size() > (1u << 16)) return;
  const auto valid = s.valid_indices();
  require(valid.size() == k.row_count(), "the valid configs are the rows");
  Rng rng(1);
  for (const auto idx : valid) {
    const auto c = s.from_index(idx);
    require(s.parse(s.describe(c)) == c, "a config's text reads back as the config");
    const auto r = k.run(c, 2, rng);
    require(std::isinf(k.recorded_ms(c)) == (r.status != Status::ok), "a failed row fails to run");
    for (const double x : r.seconds) require(x > 0 && std::isfinite(x), "samples finite, positive");
    require(r.simulated_cost >= 0 && std::isfinite(r.simulated_cost), "simulated cost finite, not negative");
  }
}

}  // namespace tunekit::fuzz
