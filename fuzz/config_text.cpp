// Fuzz target: a config as text, "name=value;..." (space/search_space.hpp: SearchSpace::parse,
// the inverse of describe). Documented errors: std::invalid_argument and std::out_of_range (an
// unknown knob name). Invariant: describe(parse(text)) parses to the same config.

#include "fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunekit;
  const auto& space = fuzz::record_space();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Config c;
  try {
    c = space.parse(text);
  } catch (const std::invalid_argument&) {
    return 0;
  } catch (const std::out_of_range&) {
    return 0;
  }
  fuzz::require(c.size() == space.dimensions(), "one index per knob");
  for (std::size_t i = 0; i < c.size(); ++i) fuzz::require(c[i] < space.knob(i).size(), "index within its knob");
  fuzz::require(space.parse(space.describe(c)) == c, "parse(describe(c)) == c");
  (void)space.is_valid(c);
  return 0;
}
