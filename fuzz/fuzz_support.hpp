#pragma once
// Shared by the fuzz targets (docs/reliability.md, "Fuzzing"): the search space the
// record targets read configs of, and the way a target reports a broken invariant.

#include <tunekit/space/search_space.hpp>

#include <cstdio>
#include <cstdlib>

namespace tunekit::fuzz {

/// A space with every knob kind, a constant and a constraint: the configs of the corpus's
/// records belong to it.
inline const SearchSpace& record_space() {
  static const SearchSpace space = [] {
    SearchSpace s;
    s.add(Knob::ordinal("tile", {1, 2, 3, 4, 6, 8}));
    s.add(Knob::power_of_two("block", 16, 256));
    s.add(Knob::boolean("unroll"));
    s.add(Knob::categorical("order", {"mnk", "mkn", "kmn"}));
    s.add(Knob::split("split_m", 64, 3));
    s.add_constant("precision", 32);
    s.add_constraint(Constraint("block * tile <= 1024", [](const ConfigView& v) {
      return v["block"] * v["tile"] <= 1024;
    }));
    return s;
  }();
  return space;
}

/// Ends the run as a finding (libFuzzer saves the input) when `ok` is false.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace tunekit::fuzz
