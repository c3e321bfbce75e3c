// Knob factories, their errors, split enumeration (against a brute force) and to_string.
#include <tunekit/space/knob.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using tunekit::Knob;
using tunekit::KnobKind;

namespace {

using Factors = std::vector<std::int64_t>;

bool is_pow2(std::int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// Every ordered tuple of `parts` factors, each in [1, extent], whose product is `extent`, in
// lexicographic order: tries every candidate value at each position (no divisor list), so it is
// independent of Knob::split's enumeration.
void brute_force_splits(std::int64_t extent, std::int64_t rest, int parts, bool pow2_only,
                        Factors& current, std::vector<Factors>& out) {
  if (parts == 0) {
    if (rest == 1) out.push_back(current);
    return;
  }
  for (std::int64_t f = 1; f <= extent; ++f) {
    if (pow2_only && !is_pow2(f)) continue;
    if (rest % f != 0) continue;
    current.push_back(f);
    brute_force_splits(extent, rest / f, parts - 1, pow2_only, current, out);
    current.pop_back();
  }
}

std::vector<Factors> brute_force_splits(std::int64_t extent, int parts, bool pow2_only) {
  std::vector<Factors> out;
  Factors current;
  brute_force_splits(extent, extent, parts, pow2_only, current, out);
  return out;
}

std::vector<Factors> all_factors(const Knob& k) {
  std::vector<Factors> out;
  for (std::size_t i = 0; i < k.size(); ++i) out.push_back(k.factors(i));
  return out;
}

}  // namespace

TEST_CASE("Knob::ordinal keeps the given values in the given order") {
  const Knob k = Knob::ordinal("tile", {8, 2, 32, -4});
  CHECK(k.name() == "tile");
  CHECK(k.kind() == KnobKind::ordinal);
  REQUIRE(k.size() == 4);
  CHECK(k.values() == std::vector<std::int64_t>{8, 2, 32, -4});
  CHECK(k.value(0) == 8);
  CHECK(k.value(3) == -4);
  CHECK(k.index_of(32) == 2);
  CHECK(k.index_of(-4) == 3);
  CHECK(k.index_of(7) == k.size());  // absent
  CHECK(k.ordered());
  CHECK(k.parts() == 0);
  CHECK_THROWS_AS(k.value(4), std::out_of_range);
}

TEST_CASE("Knob::range covers lo..hi inclusive by step") {
  CHECK(Knob::range("r", 3, 7).values() == std::vector<std::int64_t>{3, 4, 5, 6, 7});
  CHECK(Knob::range("r", 0, 10, 3).values() == std::vector<std::int64_t>{0, 3, 6, 9});
  CHECK(Knob::range("r", 16, 256, 16).size() == 16);
  CHECK(Knob::range("r", 5, 5).values() == std::vector<std::int64_t>{5});
  CHECK(Knob::range("r", -2, 2, 2).values() == std::vector<std::int64_t>{-2, 0, 2});
  CHECK(Knob::range("r", 1, 4).kind() == KnobKind::ordinal);
  // Near the top of int64: the loop must stop at hi without overflowing past it.
  constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max();
  CHECK(Knob::range("r", top - 5, top, 4).values() == std::vector<std::int64_t>{top - 5, top - 1});
  CHECK(Knob::range("r", top - 2, top).values() ==
        std::vector<std::int64_t>{top - 2, top - 1, top});

  CHECK_THROWS_WITH_AS(Knob::range("stepper", 0, 10, 0), doctest::Contains("'stepper'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::range("stepper", 0, 10, -1), doctest::Contains("step"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::range("backwards", 5, 4), doctest::Contains("'backwards'"),
                       std::invalid_argument);
}

TEST_CASE("Knob::power_of_two from bounds and from a list") {
  SUBCASE("bounds") {
    const Knob k = Knob::power_of_two("MWG", 16, 128);
    CHECK(k.kind() == KnobKind::power_of_two);
    CHECK(k.values() == std::vector<std::int64_t>{16, 32, 64, 128});
    CHECK(k.ordered());
    CHECK(Knob::power_of_two("one", 1, 1).values() == std::vector<std::int64_t>{1});
    CHECK(Knob::power_of_two("wide", 1, std::int64_t{1} << 40).size() == 41);
    // The largest power of two an int64 holds: the loop must stop without overflowing.
    const Knob big = Knob::power_of_two("big", std::int64_t{1} << 60, std::int64_t{1} << 62);
    CHECK(big.values() ==
          std::vector<std::int64_t>{std::int64_t{1} << 60, std::int64_t{1} << 61,
                                    std::int64_t{1} << 62});
  }
  SUBCASE("list") {
    const Knob k = Knob::power_of_two("VW", std::vector<std::int64_t>{8, 1, 4});
    CHECK(k.kind() == KnobKind::power_of_two);
    CHECK(k.values() == std::vector<std::int64_t>{8, 1, 4});
  }
  SUBCASE("errors name the knob") {
    CHECK_THROWS_WITH_AS(Knob::power_of_two("lo3", 3, 64), doctest::Contains("'lo3'"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("hi48", 2, 48), doctest::Contains("'hi48'"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("zero", 0, 8), doctest::Contains("'zero'"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("neg", -4, 8), doctest::Contains("'neg'"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("swapped", 64, 8), doctest::Contains("'swapped'"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("L", std::vector<std::int64_t>{1, 2, 6}),
                         doctest::Contains("6 is not a power of two"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("L0", std::vector<std::int64_t>{0, 2}),
                         doctest::Contains("'L0'"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("Lneg", std::vector<std::int64_t>{-2, 2}),
                         doctest::Contains("'Lneg'"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("Lempty", std::vector<std::int64_t>{}),
                         doctest::Contains("'Lempty' has no values"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Knob::power_of_two("Ldup", std::vector<std::int64_t>{2, 4, 2}),
                         doctest::Contains("'Ldup': duplicate value 2"), std::invalid_argument);
  }
}

TEST_CASE("Knob::boolean is 0 then 1 and unordered") {
  const Knob k = Knob::boolean("SA");
  CHECK(k.kind() == KnobKind::boolean);
  CHECK(k.values() == std::vector<std::int64_t>{0, 1});
  CHECK_FALSE(k.ordered());
  CHECK(k.to_string(0) == "0");
  CHECK(k.to_string(1) == "1");
}

TEST_CASE("Knob::categorical maps labels to positions") {
  const Knob k = Knob::categorical("layout", {"nchw", "nhwc", "nchwc"});
  CHECK(k.kind() == KnobKind::categorical);
  CHECK_FALSE(k.ordered());
  REQUIRE(k.size() == 3);
  CHECK(k.values() == std::vector<std::int64_t>{0, 1, 2});
  CHECK(k.label(0) == "nchw");
  CHECK(k.label(2) == "nchwc");
  CHECK(k.to_string(1) == "nhwc");
  CHECK(k.index_of_label("nchwc") == 2);
  CHECK(k.index_of_label("chwn") == 3);  // absent -> size()
  CHECK_THROWS_AS(k.label(3), std::out_of_range);

  CHECK_THROWS_WITH_AS(Knob::categorical("lay", {}), doctest::Contains("'lay' has no values"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::categorical("lay", {"a", "b", "a"}),
                       doctest::Contains("'lay': duplicate value 'a'"), std::invalid_argument);
}

TEST_CASE("Knob factories reject empty names, empty and duplicate value lists") {
  CHECK_THROWS_WITH_AS(Knob::ordinal("", {1, 2}), doctest::Contains("non-empty name"),
                       std::invalid_argument);
  CHECK_THROWS_AS(Knob::boolean(""), std::invalid_argument);
  CHECK_THROWS_AS(Knob::categorical("", {"a"}), std::invalid_argument);
  CHECK_THROWS_AS(Knob::power_of_two("", 1, 4), std::invalid_argument);
  CHECK_THROWS_AS(Knob::power_of_two("", std::vector<std::int64_t>{1, 4}), std::invalid_argument);
  CHECK_THROWS_AS(Knob::range("", 1, 4), std::invalid_argument);
  CHECK_THROWS_AS(Knob::split("", 8, 2), std::invalid_argument);

  CHECK_THROWS_WITH_AS(Knob::ordinal("empty", {}), doctest::Contains("'empty' has no values"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::ordinal("dup", {1, 5, 3, 5}),
                       doctest::Contains("'dup': duplicate value 5"), std::invalid_argument);
  // A message that names the knob, checked through what().
  try {
    (void)Knob::ordinal("block_size_x", {16, 16});
    FAIL("duplicate values were accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("block_size_x") != std::string::npos);
  }
}

TEST_CASE("Knob::split errors") {
  CHECK_THROWS_WITH_AS(Knob::split("tile_x", 0, 2), doctest::Contains("'tile_x'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::split("tile_x", -12, 2), doctest::Contains("-12"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::split("tile_y", 12, 0), doctest::Contains("'tile_y'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::split("tile_y", 12, -3), doctest::Contains("fewer than one part"),
                       std::invalid_argument);
  // No power-of-two factor list multiplies to an extent with an odd factor > 1.
  CHECK_THROWS_WITH_AS(Knob::split("tile_z", 12, 2, true),
                       doctest::Contains("'tile_z': no power-of-two split of 12"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Knob::split("tile_z", 360, 3, true), doctest::Contains("'tile_z'"),
                       std::invalid_argument);
}

TEST_CASE("Knob::split enumerates every ordered factorisation, as a brute force does") {
  for (std::int64_t extent : {1, 2, 12, 64, 360, 1024}) {
    for (int parts = 1; parts <= 4; ++parts) {
      CAPTURE(extent);
      CAPTURE(parts);
      const Knob k = Knob::split("s", extent, parts);
      const auto expected = brute_force_splits(extent, parts, false);
      CHECK(k.kind() == KnobKind::split);
      CHECK(k.ordered());
      CHECK(k.size() == expected.size());
      CHECK(k.parts() == static_cast<std::size_t>(parts));
      // Same lists, same (lexicographic) order.
      CHECK(all_factors(k) == expected);
      // The numeric value of a split knob is its first factor.
      for (std::size_t i = 0; i < k.size(); ++i) CHECK(k.value(i) == k.factors(i).front());
    }
  }
}

TEST_CASE("Knob::split counts match the closed form for ordered factorisations") {
  // Ordered factorisations of prod p^a into k parts: prod C(a + k - 1, k - 1).
  CHECK(Knob::split("s", 1, 4).size() == 1);
  CHECK(Knob::split("s", 12, 1).size() == 1);
  CHECK(Knob::split("s", 12, 2).size() == 6);     // 12 = 2^2 * 3: C(3,1)*C(2,1)
  CHECK(Knob::split("s", 12, 3).size() == 18);    // C(4,2)*C(3,2)
  CHECK(Knob::split("s", 64, 3).size() == 28);    // C(8,2)
  CHECK(Knob::split("s", 360, 3).size() == 180);  // 2^3 3^2 5: C(5,2)*C(4,2)*C(3,2)
  CHECK(Knob::split("s", 360, 4).size() == 800);  // C(6,3)*C(5,3)*C(4,3)
  CHECK(Knob::split("s", 1024, 4).size() == 286); // C(13,3)
}

TEST_CASE("Knob::split with power-of-two factors only") {
  for (std::int64_t extent : {1, 2, 64, 1024}) {
    for (int parts = 1; parts <= 4; ++parts) {
      CAPTURE(extent);
      CAPTURE(parts);
      const Knob k = Knob::split("p", extent, parts, true);
      const auto expected = brute_force_splits(extent, parts, true);
      CHECK(all_factors(k) == expected);
      for (const auto& f : all_factors(k))
        for (auto x : f) CHECK(is_pow2(x));
    }
  }
  // Extents with an odd part admit no power-of-two list, for any number of parts above zero.
  for (std::int64_t extent : {3, 12, 360}) {
    CAPTURE(extent);
    for (int parts = 1; parts <= 4; ++parts)
      CHECK_THROWS_AS(Knob::split("p", extent, parts, true), std::invalid_argument);
  }
}

TEST_CASE("Knob::split lists are in strictly increasing lexicographic order") {
  const Knob k = Knob::split("s", 360, 3);
  const auto lists = all_factors(k);
  for (std::size_t i = 1; i < lists.size(); ++i) {
    CAPTURE(i);
    CHECK(std::lexicographical_compare(lists[i - 1].begin(), lists[i - 1].end(),
                                       lists[i].begin(), lists[i].end()));
  }
  // Explicit small case.
  const Knob s = Knob::split("s", 12, 2);
  CHECK(all_factors(s) ==
        std::vector<Factors>{{1, 12}, {2, 6}, {3, 4}, {4, 3}, {6, 2}, {12, 1}});
  CHECK(s.values() == std::vector<std::int64_t>{1, 2, 3, 4, 6, 12});
  CHECK(s.index_of_factors({4, 3}) == 3);
  CHECK(s.index_of_factors({4, 4}) == s.size());  // absent
  CHECK(s.index_of_factors({12}) == s.size());    // wrong length
}

TEST_CASE("Knob::to_string for each kind") {
  CHECK(Knob::ordinal("o", {-3, 17}).to_string(0) == "-3");
  CHECK(Knob::ordinal("o", {-3, 17}).to_string(1) == "17");
  CHECK(Knob::power_of_two("p", 1, 1024).to_string(10) == "1024");
  CHECK(Knob::categorical("c", {"x", "yy"}).to_string(1) == "yy");
  const Knob s = Knob::split("s", 12, 3);
  CHECK(s.to_string(0) == "[1,1,12]");
  CHECK(s.to_string(s.size() - 1) == "[12,1,1]");
  CHECK(Knob::split("one", 7, 1).to_string(0) == "[7]");
  CHECK_THROWS_AS(s.to_string(s.size()), std::out_of_range);
}

TEST_CASE("Constant holds a name and a value") {
  const tunekit::Constant c{"KWG", 32};
  CHECK(c.name == "KWG");
  CHECK(c.value == 32);
}
