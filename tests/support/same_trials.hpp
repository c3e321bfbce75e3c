#pragma once
// Checks that two histories hold the same trials in the same order: config, status, samples and
// (for a success) mean; and the cost too when `same_cost` (a kernel whose cost is simulated, as
// the replay kernel's; a wall-clock cost differs from run to run).

#include <tunekit/core/history.hpp>

#include <doctest/doctest.h>

#include <cstddef>

namespace tunekit::test {

inline void check_same_trials(const tunekit::History& a, const tunekit::History& b, bool same_cost = true) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("trial " << i);
    CHECK(a[i].config == b[i].config);
    CHECK(a[i].measurement.status == b[i].measurement.status);
    CHECK(a[i].measurement.samples == b[i].measurement.samples);
    if (same_cost) CHECK(a[i].measurement.cost == b[i].measurement.cost);
    if (a[i].measurement.ok()) CHECK(a[i].measurement.mean == b[i].measurement.mean);
  }
}

}  // namespace tunekit::test
