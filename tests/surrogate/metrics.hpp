#pragma once
// Metrics and synthetic data shared by the surrogate tests.

#include <tunekit/core/random.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <vector>

namespace surrogate_test {

// Ranks 0..n-1 ascending, ties given their average rank.
inline Eigen::VectorXd average_ranks(const Eigen::VectorXd& v) {
  const auto n = static_cast<std::size_t>(v.size());
  std::vector<std::size_t> o(n);
  std::iota(o.begin(), o.end(), 0);
  std::stable_sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) {
    return v[static_cast<Eigen::Index>(a)] < v[static_cast<Eigen::Index>(b)];
  });
  Eigen::VectorXd r(v.size());
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && v[static_cast<Eigen::Index>(o[j + 1])] == v[static_cast<Eigen::Index>(o[i])]) ++j;
    for (std::size_t k = i; k <= j; ++k)
      r[static_cast<Eigen::Index>(o[k])] = 0.5 * static_cast<double>(i + j);
    i = j + 1;
  }
  return r;
}

inline double pearson(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  const Eigen::VectorXd x = a.array() - a.mean(), y = b.array() - b.mean();
  return x.dot(y) / std::sqrt(x.squaredNorm() * y.squaredNorm());
}

// Spearman's rank correlation (Pearson's on average ranks).
inline double spearman(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return pearson(average_ranks(a), average_ranks(b));
}

inline double r_squared(const Eigen::VectorXd& truth, const Eigen::VectorXd& pred) {
  return 1.0 - (truth - pred).squaredNorm() / (truth.array() - truth.mean()).matrix().squaredNorm();
}

// Fraction of pairs with different truth that the prediction orders the same way.
inline double pairwise_accuracy(const Eigen::VectorXd& truth, const Eigen::VectorXd& pred) {
  std::size_t agree = 0, total = 0;
  for (Eigen::Index i = 0; i < truth.size(); ++i)
    for (Eigen::Index j = i + 1; j < truth.size(); ++j) {
      if (truth[i] == truth[j]) continue;
      ++total;
      agree += (truth[i] > truth[j]) == (pred[i] > pred[j]) && pred[i] != pred[j];
    }
  return static_cast<double>(agree) / static_cast<double>(total);
}

// n x d uniform points in [0, 1)^d.
inline Eigen::MatrixXd uniform_points(std::size_t n, std::size_t d, tunekit::Rng& rng) {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = tunekit::uniform_real(rng);
  return x;
}

}  // namespace surrogate_test
