// SearchSpace: flat indices, overflow, names, constraints, the GEMM space, uniform sampling,
// neighbours, ConfigView and malformed configs.
#include <tunekit/space/search_space.hpp>

#include <boost/math/distributions/chi_squared.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using tunekit::Config;
using tunekit::ConfigView;
using tunekit::Constraint;
using tunekit::Knob;
using tunekit::Rng;
using tunekit::SearchSpace;

namespace {

// "k3" from "k" and 3 (appending: GCC 12 at -O3 warns falsely on "k" + std::to_string(i)).
std::string numbered(const char* prefix, int i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}

// A small space with one knob of every kind: 3 * 2 * 4 * 6 * 4 = 576 configs.
SearchSpace mixed_space() {
  SearchSpace s;
  s.add(Knob::ordinal("a", {5, 1, 9}))
      .add(Knob::boolean("flag"))
      .add(Knob::categorical("layout", {"nchw", "nhwc", "nchwc", "hwcn"}))
      .add(Knob::split("tile", 12, 2))
      .add(Knob::power_of_two("vw", 1, 8));
  return s;
}

// Pearson's chi-square statistic of observed counts against equal expected counts.
double chi_square_uniform(const std::vector<std::uint64_t>& counts, std::uint64_t draws) {
  const double expected = static_cast<double>(draws) / static_cast<double>(counts.size());
  double chi2 = 0.0;
  for (auto n : counts) {
    const double d = static_cast<double>(n) - expected;
    chi2 += d * d / expected;
  }
  return chi2;
}

double chi_square_quantile(double p, std::size_t dof) {
  return boost::math::quantile(boost::math::chi_squared(static_cast<double>(dof)), p);
}

// The GEMM space of shared/datasets/README.md.
SearchSpace gemm_space() {
  SearchSpace s;
  s.add(Knob::power_of_two("MWG", 16, 128))
      .add(Knob::power_of_two("NWG", 16, 128))
      .add(Knob::power_of_two("MDIMC", 8, 32))
      .add(Knob::power_of_two("NDIMC", 8, 32))
      .add(Knob::power_of_two("MDIMA", 8, 32))
      .add(Knob::power_of_two("NDIMB", 8, 32))
      .add(Knob::power_of_two("VWM", 1, 8))
      .add(Knob::power_of_two("VWN", 1, 8))
      .add(Knob::boolean("SA"))
      .add(Knob::boolean("SB"));
  s.add_constant("KWG", 32)
      .add_constant("KWI", 2)
      .add_constant("STRM", 0)
      .add_constant("STRN", 0)
      .add_constant("PRECISION", 32);
  s.add_constraint("MWG % (MDIMC*VWM) == 0",
                   [](const ConfigView& c) { return c["MWG"] % (c["MDIMC"] * c["VWM"]) == 0; });
  s.add_constraint("NWG % (NDIMC*VWN) == 0",
                   [](const ConfigView& c) { return c["NWG"] % (c["NDIMC"] * c["VWN"]) == 0; });
  s.add_constraint("MWG % (MDIMA*VWM) == 0",
                   [](const ConfigView& c) { return c["MWG"] % (c["MDIMA"] * c["VWM"]) == 0; });
  s.add_constraint("NWG % (NDIMB*VWN) == 0",
                   [](const ConfigView& c) { return c["NWG"] % (c["NDIMB"] * c["VWN"]) == 0; });
  s.add_constraint("KWG % ((MDIMC*NDIMC)/MDIMA) == 0", [](const ConfigView& c) {
    return c["KWG"] % ((c["MDIMC"] * c["NDIMC"]) / c["MDIMA"]) == 0;
  });
  s.add_constraint("KWG % ((MDIMC*NDIMC)/NDIMB) == 0", [](const ConfigView& c) {
    return c["KWG"] % ((c["MDIMC"] * c["NDIMC"]) / c["NDIMB"]) == 0;
  });
  return s;
}

// Independent count of the GEMM space: nested loops over the raw values of the README, the flat
// index built by Horner's rule in the same knob order.
std::vector<std::uint64_t> gemm_brute_force() {
  const std::vector<std::int64_t> wg{16, 32, 64, 128}, dim{8, 16, 32}, vw{1, 2, 4, 8}, b{0, 1};
  const std::int64_t KWG = 32;
  std::vector<std::uint64_t> valid;
  std::uint64_t flat = 0;
  for (auto MWG : wg)
    for (auto NWG : wg)
      for (auto MDIMC : dim)
        for (auto NDIMC : dim)
          for (auto MDIMA : dim)
            for (auto NDIMB : dim)
              for (auto VWM : vw)
                for (auto VWN : vw)
                  for (auto SA : b)
                    for (auto SB : b) {
                      (void)SA;
                      (void)SB;
                      if (MWG % (MDIMC * VWM) == 0 && NWG % (NDIMC * VWN) == 0 &&
                          MWG % (MDIMA * VWM) == 0 && NWG % (NDIMB * VWN) == 0 &&
                          KWG % ((MDIMC * NDIMC) / MDIMA) == 0 &&
                          KWG % ((MDIMC * NDIMC) / NDIMB) == 0)
                        valid.push_back(flat);
                      ++flat;
                    }
  return valid;
}

}  // namespace

TEST_CASE("SearchSpace flat index <-> config round trip over a whole space") {
  const SearchSpace s = mixed_space();
  REQUIRE(s.dimensions() == 5);
  REQUIRE(s.product_size() == 3u * 2u * 4u * 6u * 4u);
  const std::vector<std::uint32_t> radix{3, 2, 4, 6, 4};
  std::set<Config> seen;
  for (std::uint64_t idx = 0; idx < s.product_size(); ++idx) {
    const Config c = s.from_index(idx);
    REQUIRE(c.size() == 5);
    for (std::size_t k = 0; k < c.size(); ++k) REQUIRE(c[k] < radix[k]);
    // Horner's rule, first knob most significant.
    std::uint64_t horner = 0;
    for (std::size_t k = 0; k < c.size(); ++k) horner = horner * radix[k] + c[k];
    CHECK(horner == idx);
    CHECK(s.to_index(c) == idx);
    seen.insert(c);
  }
  CHECK(seen.size() == s.product_size());  // a bijection
  CHECK_THROWS_AS(s.from_index(s.product_size()), std::out_of_range);
  CHECK_THROWS_AS(s.from_index(std::numeric_limits<std::uint64_t>::max()), std::out_of_range);
}

TEST_CASE("SearchSpace flat order is lexicographic, the first knob most significant") {
  const SearchSpace s = mixed_space();
  CHECK(s.from_index(0) == Config{0, 0, 0, 0, 0});
  CHECK(s.from_index(1) == Config{0, 0, 0, 0, 1});  // the last knob moves fastest
  CHECK(s.from_index(4) == Config{0, 0, 0, 1, 0});
  CHECK(s.from_index(4 * 6) == Config{0, 0, 1, 0, 0});
  CHECK(s.from_index(4 * 6 * 4) == Config{0, 1, 0, 0, 0});
  CHECK(s.from_index(4 * 6 * 4 * 2) == Config{1, 0, 0, 0, 0});
  CHECK(s.from_index(s.product_size() - 1) == Config{2, 1, 3, 5, 3});
  for (std::uint64_t idx = 1; idx < s.product_size(); ++idx) {
    const Config prev = s.from_index(idx - 1), cur = s.from_index(idx);
    REQUIRE(std::lexicographical_compare(prev.begin(), prev.end(), cur.begin(), cur.end()));
  }
}

TEST_CASE("SearchSpace without knobs") {
  SearchSpace s;
  CHECK(s.dimensions() == 0);
  CHECK(s.product_size() == 0);
  CHECK(s.count_valid() == 0);
  CHECK_THROWS_AS(s.from_index(0), std::out_of_range);
  Rng rng(1);
  CHECK_THROWS_AS(s.sample(rng), std::logic_error);
}

TEST_CASE("SearchSpace products up to 2^64 - 1, a larger one throws naming the knob") {
  SUBCASE("8 knobs of 1024 values: 2^80") {
    SearchSpace s;
    for (int i = 0; i < 6; ++i) s.add(Knob::range(numbered("k", i), 0, 1023));
    CHECK(s.product_size() == std::uint64_t{1} << 60);
    CHECK_THROWS_WITH_AS(s.add(Knob::range("k6", 0, 1023)), doctest::Contains("'k6'"),
                         std::overflow_error);
    // The failed add left the space as it was.
    CHECK(s.dimensions() == 6);
    CHECK(s.product_size() == std::uint64_t{1} << 60);
  }
  SUBCASE("2^63 fits, 2^64 does not") {
    SearchSpace s;
    for (int i = 0; i < 6; ++i) s.add(Knob::range(numbered("p", i), 0, 1023));
    s.add(Knob::range("eight", 0, 7));  // 2^60 * 8 = 2^63
    REQUIRE(s.product_size() == std::uint64_t{1} << 63);
    s.add(Knob::ordinal("single", {7}));  // x1 still fits
    CHECK(s.product_size() == std::uint64_t{1} << 63);
    CHECK_THROWS_WITH_AS(s.add(Knob::boolean("last_bit")), doctest::Contains("'last_bit'"),
                         std::overflow_error);
    CHECK(s.dimensions() == 8);
    // Index arithmetic holds at the top of the product.
    const std::uint64_t top = s.product_size() - 1;
    const Config c = s.from_index(top);
    CHECK(c == Config{1023, 1023, 1023, 1023, 1023, 1023, 7, 0});
    CHECK(s.to_index(c) == top);
    CHECK(s.to_index(s.from_index(123456789012345ULL)) == 123456789012345ULL);
    // Too large to enumerate.
    CHECK_THROWS_AS(s.count_valid(), std::length_error);
  }
}

TEST_CASE("SearchSpace rejects duplicate parameter names") {
  SearchSpace s;
  s.add(Knob::boolean("x"));
  s.add_constant("C", 4);
  CHECK_THROWS_WITH_AS(s.add(Knob::ordinal("x", {1, 2})), doctest::Contains("'x'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(s.add(Knob::boolean("C")), doctest::Contains("'C'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(s.add_constant("x", 1), doctest::Contains("'x'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(s.add_constant("C", 5), doctest::Contains("'C'"), std::invalid_argument);
  CHECK(s.dimensions() == 1);
  CHECK(s.constants().size() == 1);
  CHECK(s.constants()[0].value == 4);
}

TEST_CASE("knob_index finds a knob by name, an unknown one throws naming it") {
  const SearchSpace s = mixed_space();
  CHECK(s.knob_index("a") == 0);
  CHECK(s.knob_index("tile") == 3);
  CHECK(s.knob(4).name() == "vw");
  CHECK_THROWS_WITH_AS((void)s.knob_index("nope"), doctest::Contains("'nope'"), std::out_of_range);
  CHECK_THROWS_AS((void)s.knob(5), std::out_of_range);
}

TEST_CASE("Constraints compose with &&, || and !") {
  // x in 0..4, y in 0..4.
  SearchSpace base;
  base.add(Knob::range("x", 0, 4)).add(Knob::range("y", 0, 4));
  const Constraint big_x("x > 1", [](const ConfigView& c) { return c["x"] > 1; });
  const Constraint even_y("y % 2 == 0", [](const ConfigView& c) { return c["y"] % 2 == 0; });

  const Constraint both = big_x && even_y;
  const Constraint either = big_x || even_y;
  const Constraint not_x = !big_x;
  CHECK(both.description() == "(x > 1) && (y % 2 == 0)");
  CHECK(either.description() == "(x > 1) || (y % 2 == 0)");
  CHECK(not_x.description() == "!(x > 1)");
  CHECK((!(big_x && !even_y)).description() == "!((x > 1) && (!(y % 2 == 0)))");
  // The operands survive (they are copied, not moved from).
  CHECK(big_x.description() == "x > 1");

  for (std::uint64_t idx = 0; idx < base.product_size(); ++idx) {
    const Config c = base.from_index(idx);
    const ConfigView v = base.view(c);
    const std::int64_t x = c[0], y = c[1];
    CAPTURE(x);
    CAPTURE(y);
    CHECK(both(v) == (x > 1 && y % 2 == 0));
    CHECK(either(v) == (x > 1 || y % 2 == 0));
    CHECK(not_x(v) == !(x > 1));
    CHECK(big_x(v) == (x > 1));
  }

  SearchSpace s1 = base, s2 = base, s3 = base;
  s1.add_constraint(both);
  s2.add_constraint(either);
  s3.add_constraint(not_x);
  CHECK(s1.count_valid() == 3 * 3);          // x in {2,3,4}, y in {0,2,4}
  CHECK(s2.count_valid() == 25 - 2 * 2);     // all but x in {0,1} with y odd
  CHECK(s3.count_valid() == 2 * 5);          // x in {0,1}
  CHECK(s1.describe_constraints() == "(x > 1) && (y % 2 == 0)");
  CHECK(base.describe_constraints() == "(no constraints)");
  SearchSpace s4 = base;
  s4.add_constraint(big_x).add_constraint(even_y);
  CHECK(s4.describe_constraints() == "x > 1; y % 2 == 0");
  CHECK(s4.valid_indices() == s1.valid_indices());
}

TEST_CASE("A constraint needs a predicate") {
  CHECK_THROWS_WITH_AS(Constraint("empty one", Constraint::Predicate{}),
                       doctest::Contains("'empty one'"), std::invalid_argument);
}

TEST_CASE("membership admits exactly the listed flat indices") {
  SearchSpace s = mixed_space();
  const std::vector<std::uint64_t> listed{500, 3, 77, 3, 0, 575};  // unsorted, one duplicate
  s.add_constraint(tunekit::membership("recorded set", listed));
  CHECK(s.describe_constraints() == "recorded set");
  CHECK(s.valid_indices() == std::vector<std::uint64_t>{0, 3, 77, 500, 575});
  CHECK(s.is_valid(s.from_index(77)));
  CHECK_FALSE(s.is_valid(s.from_index(78)));
  // A copy shares the list and answers the same.
  const SearchSpace copy = s;
  CHECK(copy.count_valid() == 5);
  // Sampling only ever returns listed configs, and each of them eventually.
  Rng rng(7);
  std::set<std::uint64_t> drawn;
  for (int i = 0; i < 200; ++i) drawn.insert(s.to_index(s.sample(rng)));
  CHECK(drawn == std::set<std::uint64_t>{0, 3, 77, 500, 575});
}

TEST_CASE("count_valid follows constraints added after a count (the cache is reset)") {
  SearchSpace s;
  s.add(Knob::range("x", 0, 9)).add(Knob::range("y", 0, 9));
  CHECK(s.count_valid() == 100);
  s.add_constraint("x < y", [](const ConfigView& c) { return c["x"] < c["y"]; });
  CHECK(s.count_valid() == 45);
  const SearchSpace before = s;
  s.add_constraint("y < 5", [](const ConfigView& c) { return c["y"] < 5; });
  CHECK(s.count_valid() == 10);       // pairs x < y < 5
  CHECK(before.count_valid() == 45);  // the copy keeps its own constraints
  s.add(Knob::boolean("z"));
  CHECK(s.count_valid() == 20);
  CHECK(s.valid_indices().size() == 20);
  CHECK_THROWS_AS(s.valid_indices(199), std::length_error);
  CHECK(s.valid_indices(200).size() == 20);
}

TEST_CASE("validity: once the constraints were evaluated as often as the product has configs, a bit answers") {
  // x, y, z in 0..5 with x + y + z odd and x != z: a constraint that counts its evaluations.
  auto evaluations = std::make_shared<std::size_t>(0);
  SearchSpace s;
  s.add(Knob::range("x", 0, 5)).add(Knob::range("y", 0, 5)).add(Knob::range("z", 0, 5));
  s.add_constraint("x + y + z odd, x != z", [evaluations](const ConfigView& c) {
    ++*evaluations;
    return (c["x"] + c["y"] + c["z"]) % 2 == 1 && c["x"] != c["z"];
  });
  const std::uint64_t product = s.product_size();  // 216
  auto expected = [](const Config& c) { return (c[0] + c[1] + c[2]) % 2 == 1 && c[0] != c[2]; };
  std::size_t valid = 0;
  for (int pass = 0; pass < 3; ++pass) {  // every config three times: the same answers throughout
    for (std::uint64_t i = 0; i < product; ++i) {
      const Config c = s.from_index(i);
      CHECK(s.is_valid(c) == expected(c));
      valid += pass == 0 && expected(c);
    }
  }
  // The first pass evaluated each config once, the last of them built the bits (one evaluation
  // per config again); the other two passes evaluated nothing.
  CHECK(*evaluations == 2 * product - 1);
  CHECK(s.count_valid() == valid);  // from the cache, no evaluation
  CHECK(*evaluations == 2 * product - 1);
  Rng rng(7);
  for (int i = 0; i < 1000; ++i) CHECK(expected(s.sample(rng)));
  CHECK(*evaluations == 2 * product - 1);

  // A space whose valid configs were counted first answers from bits at once.
  SearchSpace counted = s;
  counted.add_constraint("y < 3", [](const ConfigView& c) { return c["y"] < 3; });  // its own cache
  const std::size_t before = *evaluations;
  const std::uint64_t n = counted.count_valid();
  CHECK(*evaluations == before + product);  // the enumeration
  std::uint64_t seen = 0;
  for (std::uint64_t i = 0; i < product; ++i) seen += counted.is_valid(counted.from_index(i));
  CHECK(seen == n);
  CHECK(*evaluations == before + product);
}

TEST_CASE("keep_validity_bits(false): the constraints are evaluated at every call") {
  auto evaluations = std::make_shared<std::size_t>(0);
  SearchSpace s;
  s.add(Knob::range("x", 0, 9));
  s.add_constraint("x odd", [evaluations](const ConfigView& c) {
    ++*evaluations;
    return c["x"] % 2 == 1;
  });
  s.keep_validity_bits(false);
  for (int pass = 0; pass < 3; ++pass)
    for (std::uint64_t i = 0; i < 10; ++i) CHECK(s.is_valid(s.from_index(i)) == (i % 2 == 1));
  CHECK(*evaluations == 30);
  CHECK(s.count_valid() == 5);  // the enumeration is still kept...
  CHECK(s.is_valid(Config{3}));
  CHECK(*evaluations == 41);  // ...but not as bits
}

TEST_CASE("validity bits: threads asking at once get the constraints' answers") {
  SearchSpace s;
  s.add(Knob::range("x", 0, 63)).add(Knob::range("y", 0, 63));
  s.add_constraint("x * y % 7 == 3", [](const ConfigView& c) { return c["x"] * c["y"] % 7 == 3; });
  std::atomic<std::size_t> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Rng rng(static_cast<std::uint64_t>(t) + 1);
      for (int i = 0; i < 20000; ++i) {
        const std::uint64_t flat = uniform_index(rng, s.product_size());
        const Config c = s.from_index(flat);
        if (s.is_valid(c) != (c[0] * c[1] % 7 == 3)) ++wrong;
        if (i % 100 == 0) {
          const Config d = s.sample(rng);
          if (d[0] * d[1] % 7 != 3) ++wrong;
        }
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
}

TEST_CASE("for_each_valid beyond the cached enumeration: x < y < z over 162^3 configs") {
  SearchSpace s;
  s.add(Knob::range("x", 0, 161)).add(Knob::range("y", 0, 161)).add(Knob::range("z", 0, 161));
  s.add_constraint("x < y < z", [](const ConfigView& c) { return c["x"] < c["y"] && c["y"] < c["z"]; });
  REQUIRE(s.product_size() > SearchSpace::enumeration_limit);
  std::uint64_t count = 0, previous = 0;
  bool ascending = true, valid = true;
  s.for_each_valid([&](std::uint64_t i) {
    ascending = ascending && (count == 0 || i > previous);
    valid = valid && s.is_valid(s.from_index(i));
    previous = i;
    ++count;
  });
  CHECK(count == 162ull * 161 * 160 / 6);  // C(162, 3)
  CHECK(ascending);
  CHECK(valid);
  CHECK_THROWS_AS(s.for_each_valid([](std::uint64_t) {}, 1000), std::length_error);
}

TEST_CASE("The GEMM space of the datasets README: 17956 valid of 82944") {
  const SearchSpace s = gemm_space();
  CHECK(s.dimensions() == 10);
  CHECK(s.constants().size() == 5);
  CHECK(s.constraints().size() == 6);
  CHECK(s.product_size() == 82944);
  CHECK(s.count_valid() == 17956);
  // The same set, in the same order, as the independent nested loops.
  const auto expected = gemm_brute_force();
  CHECK(expected.size() == 17956);
  CHECK(s.valid_indices() == expected);
  std::vector<std::uint64_t> visited;
  s.for_each_valid([&](std::uint64_t i) { visited.push_back(i); });
  CHECK(visited == expected);
  CHECK(s.count_valid() == expected.size());
  // The limit holds for a space whose valid set is cached too (82944 configs > 1000).
  CHECK_THROWS_AS(s.for_each_valid([](std::uint64_t) {}, 1000), std::length_error);
  CHECK_THROWS_AS(s.count_valid(1000), std::length_error);
  // Spot check: the first valid config is all minimum values except where forced.
  const Config first = s.from_index(expected.front());
  CHECK(s.describe(first) == "MWG=16;NWG=16;MDIMC=8;NDIMC=8;MDIMA=8;NDIMB=8;VWM=1;VWN=1;SA=0;SB=0");
  // A known invalid one: MWG=16 with MDIMC=32.
  Config bad = first;
  bad[2] = 2;
  CHECK_FALSE(s.is_valid(bad));
}

TEST_CASE("The GEMM space matches the rows of the recorded GEMM dataset") {
  const std::filesystem::path csv = std::filesystem::path(TUNEKIT_DATASETS) / "gemm_RTX_3090.csv";
  if (!std::filesystem::exists(csv)) {
    WARN_MESSAGE(false, "dataset not found, skipped: " << csv.string());
    return;
  }
  const SearchSpace s = gemm_space();
  std::ifstream in(csv);
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK(line.rfind("MWG,NWG,KWG,MDIMC,NDIMC,MDIMA,NDIMB,KWI,VWM,VWN,STRM,STRN,SA,SB,PRECISION,", 0) ==
        0);
  // Column positions of the knobs (the others are the constants).
  const std::vector<std::size_t> knob_columns{0, 1, 3, 4, 5, 6, 8, 9, 12, 13};
  std::vector<std::uint64_t> rows;
  while (std::getline(in, line)) {
    std::vector<std::int64_t> fields;
    std::stringstream ss(line);
    std::string field;
    for (int i = 0; i < 15 && std::getline(ss, field, ','); ++i)
      fields.push_back(std::stoll(field));
    REQUIRE(fields.size() == 15);
    Config c(10);
    for (std::size_t k = 0; k < 10; ++k) {
      c[k] = static_cast<std::uint32_t>(s.knob(k).index_of(fields[knob_columns[k]]));
      REQUIRE(c[k] < s.knob(k).size());
    }
    REQUIRE(fields[2] == 32);  // KWG
    rows.push_back(s.to_index(c));
  }
  CHECK(rows.size() == 17956);
  CHECK(rows == s.valid_indices());
}

TEST_CASE("sample() is uniform over the valid configs (chi-square, rejection path)") {
  // x, y in 0..7 with x + y <= 6: 28 valid of 64.
  SearchSpace s;
  s.add(Knob::range("x", 0, 7)).add(Knob::range("y", 0, 7));
  s.add_constraint("x + y <= 6", [](const ConfigView& c) { return c["x"] + c["y"] <= 6; });
  const auto valid = s.valid_indices();
  REQUIRE(valid.size() == 28);
  std::map<std::uint64_t, std::size_t> slot;
  for (std::size_t i = 0; i < valid.size(); ++i) slot[valid[i]] = i;

  Rng rng(12345);
  constexpr std::uint64_t draws = 20000;
  std::vector<std::uint64_t> counts(valid.size(), 0);
  for (std::uint64_t d = 0; d < draws; ++d) {
    const Config c = s.sample(rng);
    REQUIRE(s.is_valid(c));
    REQUIRE(c[0] + c[1] <= 6);
    ++counts[slot.at(s.to_index(c))];
  }
  const double chi2 = chi_square_uniform(counts, draws);
  const double limit = chi_square_quantile(0.999, valid.size() - 1);
  CAPTURE(chi2);
  CAPTURE(limit);
  CHECK(limit > 50.0);  // sanity of the quantile for 27 degrees of freedom (~55.5)
  CHECK(limit < 60.0);
  CHECK(chi2 < limit);
  // And not suspiciously perfect either (would hint at a non-random sequence): 0.001 quantile.
  CHECK(chi2 > chi_square_quantile(0.001, valid.size() - 1));
}

TEST_CASE("sample() is uniform on the enumeration fallback path (chi-square)") {
  // 5 valid configs in a product of 10^5: rejection nearly always fails, so most draws come
  // from the enumerated valid set.
  SearchSpace s;
  for (int i = 0; i < 5; ++i) s.add(Knob::range(numbered("d", i), 0, 9));
  const std::vector<std::uint64_t> listed{11111, 2, 99999, 31415, 50000};
  s.add_constraint(tunekit::membership("five configs", listed));
  Rng rng(12345);
  constexpr std::uint64_t draws = 2000;
  std::map<std::uint64_t, std::uint64_t> counts;
  for (std::uint64_t d = 0; d < draws; ++d) ++counts[s.to_index(s.sample(rng))];
  REQUIRE(counts.size() == 5);
  std::vector<std::uint64_t> v;
  for (auto [idx, n] : counts) {
    CHECK(std::find(listed.begin(), listed.end(), idx) != listed.end());
    v.push_back(n);
  }
  const double chi2 = chi_square_uniform(v, draws);
  CAPTURE(chi2);
  CHECK(chi2 < chi_square_quantile(0.999, 4));
}

TEST_CASE("sample() finds the single valid config of 100000") {
  SearchSpace s;
  for (int i = 0; i < 5; ++i) s.add(Knob::range(numbered("d", i), 0, 9));
  REQUIRE(s.product_size() == 100000);
  s.add_constraint("digits are 3,1,4,1,5", [](const ConfigView& c) {
    return c["d0"] == 3 && c["d1"] == 1 && c["d2"] == 4 && c["d3"] == 1 && c["d4"] == 5;
  });
  Rng rng(12345);
  for (int i = 0; i < 20; ++i) CHECK(s.sample(rng) == Config{3, 1, 4, 1, 5});
}

TEST_CASE("sample() throws naming the constraints when none is valid") {
  SUBCASE("small space: found by enumeration") {
    SearchSpace s;
    s.add(Knob::range("x", 0, 9)).add(Knob::boolean("b"));
    s.add_constraint("x > 100", [](const ConfigView& c) { return c["x"] > 100; });
    Rng rng(12345);
    CHECK_THROWS_WITH_AS(s.sample(rng), doctest::Contains("x > 100"), std::runtime_error);
    CHECK(s.count_valid() == 0);
  }
  SUBCASE("space too large to enumerate: gives up after max_rejections") {
    SearchSpace s;
    for (int i = 0; i < 3; ++i) s.add(Knob::range(numbered("k", i), 0, 255));
    REQUIRE(s.product_size() > SearchSpace::enumeration_limit);
    s.add_constraint("never", [](const ConfigView&) { return false; });
    s.add_constraint("k0 >= 0", [](const ConfigView& c) { return c["k0"] >= 0; });
    Rng rng(12345);
    CHECK_THROWS_WITH_AS(s.sample(rng), doctest::Contains("never; k0 >= 0"), std::runtime_error);
  }
}

TEST_CASE("neighbours(): +-1 step of ordered knobs, every other value of unordered ones") {
  // An explicit case first.
  SearchSpace s;
  s.add(Knob::range("o", 0, 3))
      .add(Knob::categorical("cat", {"p", "q", "r"}))
      .add(Knob::boolean("b"));
  const auto n = s.neighbours({1, 0, 0});
  const std::set<Config> got(n.begin(), n.end());
  CHECK(got.size() == n.size());  // no duplicates
  CHECK(got == std::set<Config>{{0, 0, 0}, {2, 0, 0}, {1, 1, 0}, {1, 2, 0}, {1, 0, 1}});
  // At the ends of an ordered knob there is one step only.
  const auto e = s.neighbours({3, 2, 1});
  CHECK(std::set<Config>(e.begin(), e.end()) ==
        std::set<Config>{{2, 2, 1}, {3, 0, 1}, {3, 1, 1}, {3, 2, 0}});
  // Invalid neighbours are excluded.
  s.add_constraint("o != 2 || b == 1", [](const ConfigView& c) { return c["o"] != 2 || c["b"] == 1; });
  const auto f = s.neighbours({1, 0, 0});
  CHECK(std::set<Config>(f.begin(), f.end()) ==
        std::set<Config>{{0, 0, 0}, {1, 1, 0}, {1, 2, 0}, {1, 0, 1}});
}

TEST_CASE("neighbours() and hamming_neighbours() equal a brute force over every config of a constrained space") {
  SearchSpace s;
  s.add(Knob::ordinal("o", {7, 3, 5, 1}))
      .add(Knob::power_of_two("p", 1, 8))
      .add(Knob::categorical("cat", {"x", "y", "z"}))
      .add(Knob::boolean("b"))
      .add(Knob::split("sp", 12, 2));
  // Admits about half of the product, mixing every knob.
  auto admits = [](std::int64_t o, std::int64_t p, std::int64_t cat, std::int64_t b,
                   std::int64_t sp0) { return (o * p + cat + b * sp0) % 3 != 0; };
  s.add_constraint("(o*p + cat + b*sp[0]) % 3 != 0", [&](const ConfigView& c) {
    return admits(c["o"], c["p"], c["cat"], c["b"], c.factors("sp")[0]);
  });
  auto valid = [&](const Config& c) {
    return admits(s.knob(0).value(c[0]), s.knob(1).value(c[1]), c[2], c[3],
                  s.knob(4).factors(c[4])[0]);
  };
  const std::vector<bool> ordered{true, true, false, false, true};
  std::size_t total_neighbours = 0;
  for (std::uint64_t i = 0; i < s.product_size(); ++i) {
    const Config c = s.from_index(i);
    CHECK(s.is_valid(c) == valid(c));
    std::set<Config> expected, hamming;
    for (std::uint64_t j = 0; j < s.product_size(); ++j) {
      const Config d = s.from_index(j);
      std::size_t differing = 0, where = 0;
      for (std::size_t k = 0; k < d.size(); ++k)
        if (d[k] != c[k]) {
          ++differing;
          where = k;
        }
      if (differing != 1 || !valid(d)) continue;
      hamming.insert(d);
      const auto step = static_cast<std::int64_t>(d[where]) - static_cast<std::int64_t>(c[where]);
      if (ordered[where] && step != 1 && step != -1) continue;
      expected.insert(d);
    }
    const auto got = s.neighbours(c);  // also for invalid c
    const std::set<Config> got_set(got.begin(), got.end());
    CAPTURE(i);
    REQUIRE(got_set.size() == got.size());
    REQUIRE(got_set == expected);
    // hamming_neighbours: every valid config that differs in exactly one knob, in any way.
    const auto h = s.hamming_neighbours(c);
    REQUIRE(std::set<Config>(h.begin(), h.end()).size() == h.size());
    REQUIRE(std::set<Config>(h.begin(), h.end()) == hamming);
    total_neighbours += got.size();
  }
  CHECK(total_neighbours > 0);
  CHECK(s.count_valid() > 0);
  CHECK(s.count_valid() < s.product_size());
}

// A space with conditional knobs: "blk" is used by layout b only, "rows" by every layout but c,
// and a constraint ties tile to layout; settle's closed form below is the brute force's.
SearchSpace layouts_space() {
  SearchSpace s;
  s.add(Knob::categorical("layout", {"a", "b", "c"}))
      .add(Knob::power_of_two("blk", 1, 8))
      .add(Knob::range("rows", 1, 3))
      .add(Knob::range("tile", 1, 4));
  s.add_inactive("blk", "1", "layout != b", [](const ConfigView& c) { return c["layout"] != 1; });
  s.add_inactive("rows", "1", "layout == c", [](const ConfigView& c) { return c["layout"] == 2; });
  s.add_constraint("layout == c implies tile <= 2", [](const ConfigView& c) { return c["layout"] != 2 || c["tile"] <= 2; });
  return s;
}

Config settled(Config c) {
  if (c[0] != 1) c[1] = 0;  // blk = 1
  if (c[0] == 2) c[2] = 0;  // rows = 1
  return c;
}

TEST_CASE("add_inactive: the valid configs hold an inactive knob at its value only, settle sets it") {
  const SearchSpace s = layouts_space();
  std::size_t valid = 0;
  for (std::uint64_t i = 0; i < s.product_size(); ++i) {
    Config c = s.from_index(i);
    const bool expect = settled(c) == c && (c[0] != 2 || c[3] <= 1);
    CAPTURE(i);
    CHECK(s.is_valid(c) == expect);
    valid += expect;
    s.settle(c);
    CHECK(c == settled(s.from_index(i)));
  }
  // a: 1 x 3 x 4, b: 4 x 3 x 4, c: 1 x 1 x 2.
  CHECK(valid == 12 + 48 + 2);
  CHECK(s.count_valid() == valid);
  CHECK(s.has_inactive());
  CHECK_FALSE(SearchSpace{}.has_inactive());
  CHECK(s.describe_constraints().find("layout != b implies blk == 1 (inactive)") != std::string::npos);
  // Errors name the knob or the value.
  SearchSpace t = layouts_space();
  CHECK_THROWS_WITH_AS(t.add_inactive("depth", "1", "always", [](const ConfigView&) { return true; }),
                       "search space has no knob named 'depth'", std::out_of_range);
  CHECK_THROWS_WITH_AS(t.add_inactive("blk", "3", "always", [](const ConfigView&) { return true; }),
                       "add_inactive: knob 'blk' has no value '3'", std::invalid_argument);
  Config short_config{0, 0};
  CHECK_THROWS_AS(s.settle(short_config), std::invalid_argument);
}

TEST_CASE("add_inactive: neighbours settle each move (brute force): a move that makes knobs inactive lands on "
          "their values, a step of an inactive knob is no move") {
  const SearchSpace s = layouts_space();
  const std::vector<bool> ordered{false, true, true, true};
  std::size_t crossings = 0;
  for (std::uint64_t i = 0; i < s.product_size(); ++i) {
    const Config c = s.from_index(i);
    if (!s.is_valid(c)) continue;
    std::set<Config> expected, hamming;
    for (std::size_t k = 0; k < c.size(); ++k)
      for (std::uint32_t v = 0; v < s.knob(k).size(); ++v) {
        if (v == c[k]) continue;
        Config d = c;
        d[k] = v;
        d = settled(d);
        if (d == c || !s.is_valid(d)) continue;
        hamming.insert(d);
        if (!ordered[k] || v + 1 == c[k] || v == c[k] + 1) expected.insert(d);
      }
    CAPTURE(i);
    const auto n = s.neighbours(c);
    const auto h = s.hamming_neighbours(c);
    REQUIRE(std::set<Config>(n.begin(), n.end()).size() == n.size());
    REQUIRE(std::set<Config>(n.begin(), n.end()) == expected);
    REQUIRE(std::set<Config>(h.begin(), h.end()).size() == h.size());
    REQUIRE(std::set<Config>(h.begin(), h.end()) == hamming);
    // From layout b with blk 8 and rows 3, layout c is one move away (blk and rows settle).
    if (c[0] == 1 && c[1] != 0 && c[2] != 0 && c[3] <= 1) {
      Config to_c = c;
      to_c[0] = 2, to_c[1] = 0, to_c[2] = 0;
      CHECK(std::find(n.begin(), n.end(), to_c) != n.end());
      ++crossings;
    }
  }
  CHECK(crossings > 0);
}

TEST_CASE("ConfigView reads knobs and constants by name") {
  SearchSpace s = mixed_space();
  s.add_constant("KWG", 32);
  const Config c{2, 1, 2, 3, 3};  // a=9, flag=1, layout=nchwc, tile=[4,3], vw=8
  const ConfigView v = s.view(c);
  CHECK(v["a"] == 9);
  CHECK(v["flag"] == 1);
  CHECK(v["layout"] == 2);  // a label's position
  CHECK(v.label("layout") == "nchwc");
  CHECK(v["tile"] == 4);  // a split's first factor
  CHECK(v.factors("tile") == std::vector<std::int64_t>{4, 3});
  CHECK(v["vw"] == 8);
  CHECK(v["KWG"] == 32);
  CHECK(v.flat_index() == s.to_index(c));
  CHECK(v.config() == c);
  CHECK_THROWS_WITH_AS((void)v["missing"], doctest::Contains("'missing'"), std::out_of_range);
  CHECK_THROWS_WITH_AS((void)v.factors("nosplit"), doctest::Contains("'nosplit'"),
                       std::out_of_range);
  CHECK_THROWS_WITH_AS((void)v.label("nolabel"), doctest::Contains("'nolabel'"),
                       std::out_of_range);
  // A constraint that reads an unknown name reports it when evaluated.
  s.add_constraint("uses typo", [](const ConfigView& cv) { return cv["typo"] > 0; });
  CHECK_THROWS_WITH_AS((void)s.is_valid(c), doctest::Contains("'typo'"), std::out_of_range);
}

TEST_CASE("describe() writes name=value pairs in knob order") {
  const SearchSpace s = mixed_space();
  CHECK(s.describe({2, 1, 2, 3, 3}) == "a=9;flag=1;layout=nchwc;tile=[4,3];vw=8");
  CHECK(s.describe({0, 0, 0, 0, 0}) == "a=5;flag=0;layout=nchw;tile=[1,12];vw=1");
  CHECK_THROWS_AS(s.describe({0, 0, 0, 0}), std::invalid_argument);
}

TEST_CASE("Malformed configs: is_valid is false, to_index and friends throw") {
  const SearchSpace s = mixed_space();
  const Config ok{0, 1, 3, 5, 3};
  CHECK(s.is_valid(ok));
  const std::vector<Config> malformed{
      {},                    // empty
      {0, 1, 3, 5},          // too short
      {0, 1, 3, 5, 3, 0},    // too long
      {3, 0, 0, 0, 0},       // a: 3 values
      {0, 2, 0, 0, 0},       // flag: 2 values
      {0, 0, 4, 0, 0},       // layout: 4 labels
      {0, 0, 0, 6, 0},       // tile: 6 lists
      {0, 0, 0, 0, 4},       // vw: 4 values
      {0, 0, 0, 0, std::numeric_limits<std::uint32_t>::max()},
  };
  for (const auto& c : malformed) {
    CAPTURE(c.size());
    CHECK_FALSE(s.is_valid(c));
    CHECK_THROWS_AS((void)s.to_index(c), std::invalid_argument);
    CHECK_THROWS_AS((void)s.neighbours(c), std::invalid_argument);
    CHECK_THROWS_AS((void)s.view(c), std::invalid_argument);
    CHECK_THROWS_AS((void)s.describe(c), std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS((void)s.to_index({0, 0, 0, 6, 0}), doctest::Contains("'tile'"),
                       std::invalid_argument);
}

TEST_CASE("parse() reads what describe() writes, and names what it cannot read") {
  tunekit::SearchSpace s;
  s.add(tunekit::Knob::range("x", 0, 4))
      .add(tunekit::Knob::categorical("order", {"mnk", "nmk"}))
      .add(tunekit::Knob::split("tile", 12, 2))
      .add(tunekit::Knob::boolean("b"));
  for (std::uint64_t i = 0; i < s.product_size(); ++i) {
    const auto c = s.from_index(i);
    CHECK(s.parse(s.describe(c)) == c);
  }
  CHECK_THROWS_WITH_AS(s.parse("x=1;order=mnk;tile=[3,4]"), doctest::Contains("lacks knob 'b'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(s.parse("x=9;order=mnk;tile=[3,4];b=0"), doctest::Contains("'x' has no value '9'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(s.parse("y=1"), doctest::Contains("no knob named 'y'"), std::out_of_range);
  CHECK_THROWS_WITH_AS(s.parse("x"), doctest::Contains("not name=value"), std::invalid_argument);
}

TEST_CASE("difference() names the first way two spaces differ, and nothing for the same space") {
  auto make = [](std::int64_t max_tile, const char* constraint) {
    SearchSpace s;
    s.add(Knob::power_of_two("tile", 1, max_tile)).add(Knob::categorical("order", {"ij", "ji"}));
    s.add_constant("vec", 8);
    s.add_constraint(constraint, [](const ConfigView& c) { return c["tile"] >= 1; });
    return s;
  };
  const SearchSpace a = make(64, "tile >= 1");
  CHECK(a.difference(make(64, "tile >= 1")).empty());
  CHECK(a.difference(make(128, "tile >= 1")) ==
        "knob 'tile' has values {1,2,4,8,16,32,64} against {1,2,4,8,16,32,64,128}");
  CHECK(a.difference(make(64, "tile >= 2")) == "constraints 'tile >= 1' against 'tile >= 2'");
  SearchSpace renamed;
  renamed.add(Knob::power_of_two("tile_m", 1, 64)).add(Knob::categorical("order", {"ij", "ji"}));
  CHECK(a.difference(renamed) == "knob 0 is 'tile' against 'tile_m'");
  SearchSpace fewer;
  fewer.add(Knob::power_of_two("tile", 1, 64));
  CHECK(a.difference(fewer) == "2 knobs against 1");
  SearchSpace wider_vector;
  wider_vector.add(Knob::power_of_two("tile", 1, 64)).add(Knob::categorical("order", {"ij", "ji"}));
  wider_vector.add_constant("vec", 16);
  CHECK(a.difference(wider_vector) == "constant vec=8 against vec=16");
  SearchSpace relabelled;
  relabelled.add(Knob::power_of_two("tile", 1, 64)).add(Knob::categorical("order", {"ji", "ij"}));
  relabelled.add_constant("vec", 8);
  CHECK(a.difference(relabelled) == "knob 'order' has values {ij,ji} against {ji,ij}");
}
