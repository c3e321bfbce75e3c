// Feature vectors: count, names, values per knob kind, and the feature matrix.
#include <tunekit/space/features.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

using tunekit::Config;
using tunekit::Knob;
using tunekit::SearchSpace;

namespace {

std::vector<double> features(const SearchSpace& s, const Config& c) {
  std::vector<double> out(tunekit::feature_count(s));
  tunekit::write_features(s, c, out);
  return out;
}

// Exact comparison (the features are small integers and exact log2 values) except where a
// tolerance is stated.
void check_equal(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("features of an ordinal knob: its value") {
  SearchSpace s;
  s.add(Knob::ordinal("o", {3, 7, -2}));
  CHECK(tunekit::feature_count(s) == 1);
  CHECK(tunekit::feature_names(s) == std::vector<std::string>{"o"});
  check_equal(features(s, {0}), {3.0});
  check_equal(features(s, {1}), {7.0});
  check_equal(features(s, {2}), {-2.0});
}

TEST_CASE("features of a power-of-two knob: its value and log2") {
  SearchSpace s;
  s.add(Knob::power_of_two("MWG", 16, 128));
  CHECK(tunekit::feature_count(s) == 2);
  CHECK(tunekit::feature_names(s) == std::vector<std::string>{"MWG", "log2(MWG)"});
  check_equal(features(s, {0}), {16.0, 4.0});
  check_equal(features(s, {3}), {128.0, 7.0});
  SearchSpace one;
  one.add(Knob::power_of_two("v", std::vector<std::int64_t>{1, 1024}));
  check_equal(features(one, {0}), {1.0, 0.0});
  check_equal(features(one, {1}), {1024.0, 10.0});
}

TEST_CASE("features of a boolean knob: 0 or 1") {
  SearchSpace s;
  s.add(Knob::boolean("SA"));
  CHECK(tunekit::feature_count(s) == 1);
  CHECK(tunekit::feature_names(s) == std::vector<std::string>{"SA"});
  check_equal(features(s, {0}), {0.0});
  check_equal(features(s, {1}), {1.0});
}

TEST_CASE("features of a categorical knob: one-hot over its labels") {
  SearchSpace s;
  s.add(Knob::categorical("layout", {"nchw", "nhwc", "nchwc"}));
  CHECK(tunekit::feature_count(s) == 3);
  CHECK(tunekit::feature_names(s) ==
        std::vector<std::string>{"layout=nchw", "layout=nhwc", "layout=nchwc"});
  check_equal(features(s, {0}), {1.0, 0.0, 0.0});
  check_equal(features(s, {1}), {0.0, 1.0, 0.0});
  check_equal(features(s, {2}), {0.0, 0.0, 1.0});
}

TEST_CASE("features of a split knob: the factors, then log2 of each") {
  SearchSpace s;
  s.add(Knob::split("tile", 12, 3));
  CHECK(tunekit::feature_count(s) == 6);
  CHECK(tunekit::feature_names(s) == std::vector<std::string>{"tile[0]", "tile[1]", "tile[2]",
                                                              "log2(tile[0])", "log2(tile[1])",
                                                              "log2(tile[2])"});
  const auto& k = s.knob(0);
  const auto i = k.index_of_factors({2, 3, 2});
  REQUIRE(i < k.size());
  check_equal(features(s, {static_cast<std::uint32_t>(i)}),
              {2.0, 3.0, 2.0, 1.0, 1.584962500721156, 1.0});
  check_equal(features(s, {0}), {1.0, 1.0, 12.0, 0.0, 0.0, 3.584962500721156});
}

TEST_CASE("features of a mixed space are the knobs' features concatenated in knob order") {
  SearchSpace s;
  s.add(Knob::ordinal("o", {3, 7, -2}))
      .add(Knob::power_of_two("p", 1, 16))
      .add(Knob::boolean("b"))
      .add(Knob::categorical("c", {"x", "y", "z"}))
      .add(Knob::split("s", 8, 2));
  s.add_constant("K", 99);  // constants are no features
  CHECK(tunekit::feature_count(s) == 1 + 2 + 1 + 3 + 4);
  CHECK(tunekit::feature_names(s) ==
        std::vector<std::string>{"o", "p", "log2(p)", "b", "c=x", "c=y", "c=z", "s[0]", "s[1]",
                                 "log2(s[0])", "log2(s[1])"});
  // o=-2, p=8, b=1, c=y, s=[4,2]  (splits of 8: [1,8],[2,4],[4,2],[8,1])
  const Config c{2, 3, 1, 1, 2};
  check_equal(features(s, c), {-2.0, 8.0, 3.0, 1.0, 0.0, 1.0, 0.0, 4.0, 2.0, 2.0, 1.0});

  // A buffer of the wrong size is refused.
  std::vector<double> small(10), large(12);
  CHECK_THROWS_AS(tunekit::write_features(s, c, small), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::write_features(s, c, large), std::invalid_argument);

  SUBCASE("feature_matrix has one row per config, equal to write_features") {
    const std::vector<Config> configs{{0, 0, 0, 0, 0}, c, {1, 4, 0, 2, 3}};
    const Eigen::MatrixXd x = tunekit::feature_matrix(s, configs);
    REQUIRE(x.rows() == 3);
    REQUIRE(x.cols() == 11);
    for (std::size_t r = 0; r < configs.size(); ++r) {
      const auto row = features(s, configs[r]);
      for (std::size_t j = 0; j < row.size(); ++j) {
        CAPTURE(r);
        CAPTURE(j);
        CHECK(x(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j)) == row[j]);
      }
    }
    // Hand-computed rows for the first and last config.
    const std::vector<double> first{3, 1, 0, 0, 1, 0, 0, 1, 8, 0, 3};
    const std::vector<double> last{7, 16, 4, 0, 0, 0, 1, 8, 1, 3, 0};
    for (std::size_t j = 0; j < 11; ++j) {
      CAPTURE(j);
      CHECK(x(0, static_cast<Eigen::Index>(j)) == first[j]);
      CHECK(x(2, static_cast<Eigen::Index>(j)) == last[j]);
    }
  }
  SUBCASE("an empty set of configs gives an empty matrix with the feature columns") {
    const Eigen::MatrixXd x = tunekit::feature_matrix(s, std::vector<Config>{});
    CHECK(x.rows() == 0);
    CHECK(x.cols() == 11);
  }
}

TEST_CASE("position features: an ordered knob's position over its range, one-hot / sqrt 2 for the others") {
  SearchSpace s;
  s.add(Knob::ordinal("o", {3, 7, -2}))
      .add(Knob::power_of_two("p", 1, 16))
      .add(Knob::boolean("b"))
      .add(Knob::categorical("c", {"x", "y", "z"}))
      .add(Knob::ordinal("one", {5}))  // one value: no column
      .add(Knob::split("s", 8, 2));
  // o: 1, p: 1, b: 2 (one-hot), c: 3, one: 0, s: 1 (its four factorisations in order).
  CHECK(tunekit::position_feature_count(s) == 8);
  const std::vector<Config> configs{{0, 0, 0, 0, 0, 0}, {2, 3, 1, 1, 0, 2}};
  const Eigen::MatrixXd x = tunekit::position_features(s, configs);
  REQUIRE(x.rows() == 2);
  REQUIRE(x.cols() == 8);
  const double h = std::sqrt(0.5);
  // Hand-computed: positions i / (m - 1); the one-hot columns scaled by 1 / sqrt 2.
  const std::vector<double> first{0.0, 0.0, h, 0.0, h, 0.0, 0.0, 0.0};
  const std::vector<double> second{1.0, 0.75, 0.0, h, 0.0, h, 0.0, 2.0 / 3.0};
  for (std::size_t j = 0; j < 8; ++j) {
    CAPTURE(j);
    CHECK(x(0, static_cast<Eigen::Index>(j)) == doctest::Approx(first[j]).epsilon(1e-15));
    CHECK(x(1, static_cast<Eigen::Index>(j)) == doctest::Approx(second[j]).epsilon(1e-15));
  }
  // Any change of one unordered knob moves a config as far as an end-to-end ordered move.
  CHECK((x.row(0).segment(2, 2) - x.row(1).segment(2, 2)).norm() == doctest::Approx(1.0));
  CHECK(tunekit::position_features(s, std::vector<Config>{}).cols() == 8);
}

TEST_CASE("a space without knobs has no features") {
  const SearchSpace s;
  CHECK(tunekit::feature_count(s) == 0);
  CHECK(tunekit::feature_names(s).empty());
}
