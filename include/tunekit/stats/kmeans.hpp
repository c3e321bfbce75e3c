#pragma once
/// \file
/// k-means clustering (Lloyd's algorithm with k-means++ seeding) and the knee rule that picks k
/// (Chameleon's adaptive sampling, Ahn et al., ICLR 2020, section 4.2).

#include "tunekit/core/random.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// GCC 12 reports false (maybe-)uninitialized warnings inside Eigen's AVX-512 code
// (-march=native); silence them for the code of this header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace tunekit {

/// Parameters of kmeans.
struct KMeansParams {
  /// Lloyd iterations at most (it stops earlier when no point changes its cluster).
  std::size_t max_iterations = 100;
  /// Independent k-means++ seedings; the clustering with the lowest loss is kept (a bad seeding
  /// can leave two true clusters merged and another split).
  std::size_t restarts = 3;

  void validate() const {
    if (max_iterations < 1) throw std::invalid_argument("KMeansParams: max_iterations must be >= 1");
    if (restarts < 1) throw std::invalid_argument("KMeansParams: restarts must be >= 1");
  }
};

/// A clustering of n points into k clusters.
struct KMeansResult {
  /// k x dims, one centroid per row.
  Eigen::MatrixXd centroids{};
  /// The cluster of each point.
  std::vector<std::size_t> assignment{};
  /// Sum over the points of the squared Euclidean distance to their centroid (the inertia).
  double loss = 0.0;
  /// Lloyd iterations run.
  std::size_t iterations = 0;

  std::size_t k() const noexcept { return static_cast<std::size_t>(centroids.rows()); }
};

namespace detail {
/// Squared Euclidean distances, points (n x d) to centroids (k x d): n x k.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Eigen::MatrixXd squared_distances(const Eigen::MatrixXd& points, const Eigen::MatrixXd& centroids) {
  // Coefficient-wise product: small matrices, no OpenMP-parallel GEMM.
  Eigen::MatrixXd d = -2.0 * points.lazyProduct(centroids.transpose());
  d.colwise() += points.rowwise().squaredNorm();
  d.rowwise() += centroids.rowwise().squaredNorm().transpose();
  return d.cwiseMax(0.0);
}
}  // namespace detail

/// k-means++ seeding (Arthur & Vassilvitskii 2007): the first centroid is a uniformly random
/// point, each next one a point drawn with probability proportional to its squared distance to
/// the nearest centroid chosen so far (uniformly among the points when all distances are 0).
/// Returns the chosen rows' positions.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::vector<std::size_t> kmeans_plus_plus(const Eigen::MatrixXd& points, std::size_t k, Rng& rng) {
  const auto n = static_cast<std::size_t>(points.rows());
  if (k == 0 || k > n)
    throw std::invalid_argument("kmeans_plus_plus: k must be in [1, number of points]; k = " + std::to_string(k) +
                                ", points = " + std::to_string(n));
  std::vector<std::size_t> chosen{static_cast<std::size_t>(uniform_index(rng, n))};
  Eigen::VectorXd nearest =
      (points.rowwise() - points.row(static_cast<Eigen::Index>(chosen[0]))).rowwise().squaredNorm();
  while (chosen.size() < k) {
    const double total = nearest.sum();
    std::size_t next = n - 1;
    if (total > 0) {
      const double u = uniform_real(rng) * total;
      double acc = 0;
      for (std::size_t i = 0; i < n; ++i) {
        acc += nearest[static_cast<Eigen::Index>(i)];
        if (u < acc) {
          next = i;
          break;
        }
      }
    } else {
      next = static_cast<std::size_t>(uniform_index(rng, n));
    }
    chosen.push_back(next);
    nearest = nearest.cwiseMin(
        (points.rowwise() - points.row(static_cast<Eigen::Index>(next))).rowwise().squaredNorm());
  }
  return chosen;
}

namespace detail {
// One k-means++ seeding and Lloyd's iterations.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
KMeansResult lloyd(const Eigen::MatrixXd& points, std::size_t k, Rng& rng, const KMeansParams& params) {
  const auto n = static_cast<std::size_t>(points.rows());
  const auto kk = static_cast<Eigen::Index>(k);
  KMeansResult r;
  r.centroids.resize(kk, points.cols());
  const auto seeds = kmeans_plus_plus(points, k, rng);
  for (Eigen::Index c = 0; c < kk; ++c) r.centroids.row(c) = points.row(static_cast<Eigen::Index>(seeds[static_cast<std::size_t>(c)]));
  r.assignment.assign(n, k);  // k: unassigned
  Eigen::VectorXd dist(static_cast<Eigen::Index>(n));
  for (r.iterations = 0; r.iterations < params.max_iterations;) {
    ++r.iterations;
    const Eigen::MatrixXd d = detail::squared_distances(points, r.centroids);
    bool changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      Eigen::Index best = 0;
      dist[static_cast<Eigen::Index>(i)] = d.row(static_cast<Eigen::Index>(i)).minCoeff(&best);
      if (r.assignment[i] != static_cast<std::size_t>(best)) {
        r.assignment[i] = static_cast<std::size_t>(best);
        changed = true;
      }
    }
    if (!changed) break;
    Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(kk, points.cols());
    std::vector<std::size_t> counts(k, 0);
    for (std::size_t i = 0; i < n; ++i) {
      sums.row(static_cast<Eigen::Index>(r.assignment[i])) += points.row(static_cast<Eigen::Index>(i));
      ++counts[r.assignment[i]];
    }
    for (std::size_t c = 0; c < k; ++c) {
      if (counts[c] > 0) {
        r.centroids.row(static_cast<Eigen::Index>(c)) = sums.row(static_cast<Eigen::Index>(c)) / static_cast<double>(counts[c]);
      } else {
        // An empty cluster takes the point farthest from its centroid (which then moves there).
        Eigen::Index far = 0;
        dist.maxCoeff(&far);
        r.centroids.row(static_cast<Eigen::Index>(c)) = points.row(far);
        dist[far] = 0.0;
      }
    }
  }
  const Eigen::MatrixXd d = detail::squared_distances(points, r.centroids);
  r.loss = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    Eigen::Index best = 0;
    r.loss += d.row(static_cast<Eigen::Index>(i)).minCoeff(&best);
    r.assignment[i] = static_cast<std::size_t>(best);
  }
  return r;
}
}  // namespace detail

/// k-means of the rows of `points` (n x dims): k-means++ seeding, then Lloyd iterations (assign
/// each point to its nearest centroid, the first on a tie; move each centroid to the mean of its
/// points) until no assignment changes or max_iterations. A cluster that loses all its points
/// takes the point farthest from its centroid. Repeated from `restarts` seedings; the lowest
/// loss wins (the first on a tie). Deterministic for a given generator state. Throws
/// std::invalid_argument unless 1 <= k <= n.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
KMeansResult kmeans(const Eigen::MatrixXd& points, std::size_t k, Rng& rng, KMeansParams params = {}) {
  params.validate();
  const auto n = static_cast<std::size_t>(points.rows());
  if (n == 0) throw std::invalid_argument("kmeans: no points");
  if (k == 0 || k > n)
    throw std::invalid_argument("kmeans: k must be in [1, number of points]; k = " + std::to_string(k) +
                                ", points = " + std::to_string(n));
  KMeansResult best = detail::lloyd(points, k, rng, params);
  for (std::size_t r = 1; r < params.restarts; ++r) {
    KMeansResult next = detail::lloyd(points, k, rng, params);
    if (next.loss < best.loss) best = std::move(next);
  }
  return best;
}

/// Parameters of kmeans_knee: k runs over k_start, k_start + k_step, ... up to k_max.
struct KneeParams {
  std::size_t k_start = 8;
  std::size_t k_step = 8;
  std::size_t k_max = 64;
  /// The loss must fall by at least this factor from one k to the next to go on.
  double threshold = 2.5;
  KMeansParams kmeans{};

  void validate() const {
    if (k_start < 1) throw std::invalid_argument("KneeParams: k_start must be >= 1");
    if (k_step < 1) throw std::invalid_argument("KneeParams: k_step must be >= 1");
    if (k_max < 1) throw std::invalid_argument("KneeParams: k_max must be >= 1");
    if (!(threshold >= 1)) throw std::invalid_argument("KneeParams: threshold must be >= 1");
    kmeans.validate();
  }
};

/// Chameleon's choice of k (adaptive sampling): cluster for k = k_start, k_start + k_step, ...
/// (capped at k_max and at the number of points) and stop at the knee of the loss curve, the
/// first k whose loss no longer falls by the threshold factor: threshold * loss_k >=
/// loss_previous. Returns the clustering of the previous k, the last one that still paid for its
/// extra clusters (Chameleon's code returns the one that failed the test, one step past the
/// knee), or of the largest k when the loss keeps falling. With fewer points than k_start it
/// clusters into as many clusters as points.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
KMeansResult kmeans_knee(const Eigen::MatrixXd& points, Rng& rng, KneeParams params = {}) {
  params.validate();
  const auto n = static_cast<std::size_t>(points.rows());
  if (n == 0) throw std::invalid_argument("kmeans_knee: no points");
  const std::size_t k_max = std::min(params.k_max, n);
  std::size_t k = std::min(params.k_start, k_max);
  KMeansResult previous = kmeans(points, k, rng, params.kmeans);
  for (k += params.k_step; k <= k_max; k += params.k_step) {
    KMeansResult current = kmeans(points, k, rng, params.kmeans);
    if (params.threshold * current.loss >= previous.loss) break;
    previous = std::move(current);
  }
  return previous;
}

}  // namespace tunekit

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
