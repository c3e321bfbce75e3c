#pragma once
/// \file
/// ParzenEstimator: a multivariate kernel density over the configs of a search space (TPE's l(x)
/// and g(x); Bergstra et al., NeurIPS 2011, in the multivariate form of Falkner et al., ICML 2018).

#include "tunekit/core/deferred.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/space/search_space.hpp"

#include <boost/random/normal_distribution.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace tunekit {

/// How wide a ParzenEstimator's kernels are.
struct ParzenParams {
  /// Ordered knobs: the Gaussian kernel's standard deviation in value positions is
  /// `width * m * n^(-1/(d + 4))` for a knob of m values, n kernels and d knobs (Scott's rule with
  /// the knob's range as its scale, Optuna's multivariate TPE), and at least `min_width` and
  /// m / min(100, n + 1) (Optuna's "magic clip").
  double width = 0.2;
  double min_width = 0.5;
  /// Unordered knobs (boolean, categorical): the probability that a kernel moves away from its
  /// centre's value is `(m - 1) / m * min(1, change * n^(-1/(d + 4)))` (Aitchison-Aitken kernel,
  /// spread over the other m - 1 values).
  double change = 0.5;

  void validate() const {
    if (!(width > 0) || !(min_width > 0) || !(change > 0))
      throw std::invalid_argument("ParzenParams: width, min_width and change must be positive");
  }
};

namespace detail {

/// A mixture of product kernels centred on some configs, plus a uniform prior over the product
/// of the knobs' values with the weight of one kernel:
///     p(x) = (prior(x) + sum_j w_j prod_k K_k(x_k | c_jk)) / (1 + sum_j w_j).
/// Ordered knobs (ordinal, power-of-two, split) get a Gaussian over value positions, normalised
/// over the knob's values; unordered knobs (boolean, categorical) an Aitchison-Aitken kernel.
/// Used by TreeParzen for the densities of good configs, of the others, and of failures.
template <class Lazy = void>
class ParzenEstimatorImpl {
  // Eigen's types through Lazy: see Deferred.

 public:
  /// Kernels on `centres` with weights (1 each when `weights` is empty).
  ParzenEstimatorImpl(const SearchSpace& space, std::span<const Config> centres, std::span<const double> weights = {},
                  ParzenParams params = {})
      : space_(&space), centres_(centres.begin(), centres.end()) {
    params.validate();
    if (!weights.empty() && weights.size() != centres.size())
      throw std::invalid_argument("ParzenEstimator: " + std::to_string(weights.size()) + " weights for " +
                                  std::to_string(centres.size()) + " centres");
    weights_.assign(centres.size(), 1.0);
    if (!weights.empty()) std::copy(weights.begin(), weights.end(), weights_.begin());
    const std::size_t d = space.dimensions();
    const double n = std::max<double>(1.0, static_cast<double>(centres.size()));
    const double shrink = std::pow(n, -1.0 / (static_cast<double>(d) + 4.0));
    kernels_.resize(d);
    log_prior_ = 0.0;
    for (std::size_t k = 0; k < d; ++k) {
      const Knob& knob = space.knob(k);
      const auto m = knob.size();
      const double dm = static_cast<double>(m);
      log_prior_ -= std::log(dm);
      Kernel& ker = kernels_[k];
      ker.ordered = knob.ordered();
      ker.m = m;
      if (ker.ordered) {
        ker.sigma = std::max({params.width * dm * shrink, params.min_width, dm / std::min(100.0, n + 1.0)});
        ker.norm.resize(m);
        for (std::size_t c = 0; c < m; ++c) {
          double z = 0.0;
          for (std::size_t v = 0; v < m; ++v) z += ker.gauss(c, v);
          ker.norm[c] = 1.0 / z;
        }
      } else {
        ker.change = m > 1 ? (dm - 1.0) / dm * std::min(1.0, params.change * shrink) : 0.0;
      }
      if (m <= Kernel::table_limit) {
        ker.table.resize(m * m);
        for (std::size_t c = 0; c < m; ++c)
          for (std::size_t v = 0; v < m; ++v) ker.table[c * m + v] = ker.compute(c, v);
      }
    }
    total_weight_ = 1.0;
    for (double w : weights_) {
      if (!(w >= 0) || !std::isfinite(w)) throw std::invalid_argument("ParzenEstimator: weights must be finite and >= 0");
      total_weight_ += w;
    }
  }

  /// The density p(x) of a config.
  double density(const Config& x) const {
    double sum = std::exp(log_prior_);
    for (std::size_t j = 0; j < centres_.size(); ++j) sum += weights_[j] * kernel(centres_[j], x);
    return sum / total_weight_;
  }

  /// log p(x).
  double log_density(const Config& x) const { return std::log(density(x)); }

  /// The product kernel of a centre at x (the density of x under that one kernel).
  double kernel(const Config& centre, const Config& x) const {
    double p = 1.0;
    for (std::size_t k = 0; k < kernels_.size(); ++k) p *= kernels_[k](centre[k], x[k]);
    return p;
  }

  /// A draw from the mixture, in the product of the knobs' values (it may violate the space's
  /// constraints): the prior with probability 1 / (1 + sum w), else kernel j with probability
  /// w_j / (1 + sum w), each knob drawn from its kernel.
  Config sample(Rng& rng) const {
    const std::size_t d = kernels_.size();
    Config x(d);
    double u = uniform_real(rng) * total_weight_ - 1.0;
    std::size_t j = centres_.size();
    for (std::size_t i = 0; i < centres_.size() && u >= 0; ++i) {
      u -= weights_[i];
      if (u < 0) j = i;
    }
    for (std::size_t k = 0; k < d; ++k) {
      const auto m = space_->knob(k).size();
      if (j == centres_.size()) {
        x[k] = static_cast<std::uint32_t>(uniform_index(rng, m));
        continue;
      }
      // Inverse CDF over the kernel's normalised row.
      const std::size_t c = centres_[j][k];
      double r = uniform_real(rng);
      std::size_t v = 0;
      while (v + 1 < m && (r -= kernels_[k](c, v)) >= 0) ++v;
      x[k] = static_cast<std::uint32_t>(v);
    }
    return x;
  }

  /// 1 + the sum of the kernels' weights: p(x) * total_weight() is the mixture's unnormalised sum.
  double total_weight() const noexcept { return total_weight_; }
  /// The kernels' centres.
  const std::vector<Config>& centres() const noexcept { return centres_; }
  /// The standard deviation (value positions) of an ordered knob's kernel; 0 for unordered knobs.
  double sigma(std::size_t knob) const { return kernels_.at(knob).sigma; }
  /// The change probability of an unordered knob's kernel; 0 for ordered knobs.
  double change(std::size_t knob) const { return kernels_.at(knob).change; }

 private:
  // One knob's kernel K(v | c), normalised over the knob's m values: tabulated for small m.
  struct Kernel {
    static constexpr std::size_t table_limit = 64;
    bool ordered = true;
    std::size_t m = 0;
    double sigma = 0.0;
    double change = 0.0;
    std::vector<double> norm{};   // ordered: 1 / sum_v gauss(c, v), per centre value c
    std::vector<double> table{};  // table[c * m + v], when m <= table_limit

    double gauss(std::size_t c, std::size_t v) const {
      const double t = (static_cast<double>(v) - static_cast<double>(c)) / sigma;
      return std::exp(-0.5 * t * t);
    }
    double compute(std::size_t c, std::size_t v) const {
      if (ordered) return gauss(c, v) * norm[c];
      return v == c ? 1.0 - change : change / static_cast<double>(m - 1);
    }
    double operator()(std::size_t c, std::size_t v) const { return table.empty() ? compute(c, v) : table[c * m + v]; }
  };

  const SearchSpace* space_;
  std::vector<Config> centres_;
  std::vector<double> weights_;
  std::vector<Kernel> kernels_;
  double log_prior_ = 0.0;
  double total_weight_ = 1.0;
};
}  // namespace detail

/// detail::ParzenEstimatorImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using ParzenEstimator = detail::ParzenEstimatorImpl<>;

}  // namespace tunekit
