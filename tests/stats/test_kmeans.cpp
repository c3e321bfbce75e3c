#include <tunekit/stats/kmeans.hpp>

#include <boost/random/normal_distribution.hpp>
#include <doctest/doctest.h>

#include <set>
#include <stdexcept>
#include <vector>

namespace {

// `clusters` Gaussian blobs (sd `sd`, `per` points each) centred on a grid with spacing 10 in
// `dims` dimensions; returns the points and the true cluster of each.
Eigen::MatrixXd planted(std::size_t clusters, std::size_t per, std::size_t dims, double sd, tunekit::Rng& rng,
                        std::vector<std::size_t>& truth, Eigen::MatrixXd& centres) {
  boost::random::normal_distribution<double> noise(0.0, sd);
  centres.resize(static_cast<Eigen::Index>(clusters), static_cast<Eigen::Index>(dims));
  for (std::size_t c = 0; c < clusters; ++c) {
    std::size_t code = c;
    for (std::size_t k = 0; k < dims; ++k) {
      centres(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(k)) = 10.0 * static_cast<double>(code % 4);
      code /= 4;
    }
  }
  Eigen::MatrixXd x(static_cast<Eigen::Index>(clusters * per), static_cast<Eigen::Index>(dims));
  truth.clear();
  for (std::size_t c = 0; c < clusters; ++c)
    for (std::size_t i = 0; i < per; ++i) {
      const auto row = static_cast<Eigen::Index>(truth.size());
      for (std::size_t k = 0; k < dims; ++k)
        x(row, static_cast<Eigen::Index>(k)) = centres(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(k)) + noise(rng);
      truth.push_back(c);
    }
  return x;
}

}  // namespace

TEST_CASE("k-means recovers planted clusters") {
  tunekit::Rng rng(5);
  std::vector<std::size_t> truth;
  Eigen::MatrixXd centres;
  const Eigen::MatrixXd x = planted(6, 40, 2, 0.8, rng, truth, centres);
  const auto r = tunekit::kmeans(x, 6, rng);
  REQUIRE(r.k() == 6);
  // Every true cluster maps to one found cluster, and the mapping is a bijection.
  std::vector<std::set<std::size_t>> found(6);
  for (std::size_t i = 0; i < truth.size(); ++i) found[truth[i]].insert(r.assignment[i]);
  std::set<std::size_t> images;
  for (const auto& f : found) {
    CHECK(f.size() == 1);
    images.insert(*f.begin());
  }
  CHECK(images.size() == 6);
  // Each centroid lies within 0.5 of its true centre (the blobs' means are within ~0.13 of it).
  for (std::size_t c = 0; c < 6; ++c) {
    const std::size_t j = *found[c].begin();
    CHECK((r.centroids.row(static_cast<Eigen::Index>(j)) - centres.row(static_cast<Eigen::Index>(c))).norm() < 0.5);
  }
  // The loss is the sum of squared distances: about n * dims * sd^2 = 240 * 2 * 0.64.
  CHECK(r.loss == doctest::Approx(240 * 2 * 0.64).epsilon(0.2));
}

TEST_CASE("k-means is deterministic per seed and rejects a bad k") {
  tunekit::Rng a(9), b(9), c(9);
  std::vector<std::size_t> truth;
  Eigen::MatrixXd centres;
  const Eigen::MatrixXd x = planted(5, 10, 3, 3.0, c, truth, centres);
  const auto ra = tunekit::kmeans(x, 7, a);
  const auto rb = tunekit::kmeans(x, 7, b);
  CHECK(ra.assignment == rb.assignment);
  CHECK(ra.centroids == rb.centroids);
  CHECK_THROWS_AS(tunekit::kmeans(x, 0, a), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::kmeans(x, 51, a), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::kmeans(x, 3, a, {.max_iterations = 0}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::kmeans_knee(x, a, {.threshold = 0.5}), std::invalid_argument);
  // k-means++ picks distinct points while they are distinct.
  const auto seeds = tunekit::kmeans_plus_plus(x, 10, a);
  CHECK(std::set<std::size_t>(seeds.begin(), seeds.end()).size() == 10);
}

TEST_CASE("the knee rule picks the planted number of clusters") {
  // 8 and 16 planted blobs of 8 points in 3 dimensions; k runs over 8, 16, ..., 64 and stops
  // where the loss no longer falls by 2.5x. (The rule finds a planted k only when the step
  // before it lowers the loss enough: with 24 blobs, going from 8 to 16 clusters removes 8 of 16
  // merges, about a 2x drop, and the rule stops at 8.)
  for (std::size_t planted_k : {8u, 16u}) {
    tunekit::Rng rng(planted_k);
    std::vector<std::size_t> truth;
    Eigen::MatrixXd centres;
    const Eigen::MatrixXd x = planted(planted_k, 8, 3, 0.7, rng, truth, centres);
    const auto r = tunekit::kmeans_knee(x, rng, {.k_start = 8, .k_step = 8, .k_max = 64, .threshold = 2.5});
    MESSAGE("planted " << planted_k << ", knee at k = " << r.k() << ", loss " << r.loss);
    CHECK(r.k() == planted_k);
  }
  // Fewer points than k_start: one cluster per point, loss 0.
  tunekit::Rng rng(1);
  Eigen::MatrixXd few(5, 2);
  few << 0, 0, 1, 0, 0, 1, 3, 3, 7, 2;
  const auto r = tunekit::kmeans_knee(few, rng);
  CHECK(r.k() == 5);
  CHECK(r.loss == doctest::Approx(0.0));
}
