#pragma once
/// \file
/// KMeansSampler: Chameleon's adaptive sampling (Ahn et al., ICLR 2020, section 4.2), a pick
/// policy for any model-based optimizer (ModelBased: behind AnnealingSearch or PpoSearch), with
/// its two steps: nearest_valid_config (a centroid rounded to a valid config) and
/// synthesize_sample (Chameleon's sample synthesis).

#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/core/deferred.hpp"
#include "tunekit/stats/kmeans.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// The valid config nearest (Euclidean distance in knob-index space) to a real-valued point,
/// among: the point rounded to the nearest value index of each knob (then settled, see
/// SearchSpace::add_inactive), that config's valid neighbours (SearchSpace::neighbours), and the
/// configs in `fallback` (all valid). The first of these wins a tie. std::nullopt when none of
/// them is valid.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::optional<Config> nearest_valid_config(const SearchSpace& space, const Eigen::RowVectorXd& point,
                                           std::span<const Config> fallback) {
  const std::size_t dims = space.dimensions();
  if (static_cast<std::size_t>(point.size()) != dims)
    throw std::invalid_argument("nearest_valid_config: the point has the wrong number of dimensions");
  Config rounded(dims);
  for (std::size_t k = 0; k < dims; ++k) {
    const double hi = static_cast<double>(space.knob(k).size() - 1);
    rounded[k] = static_cast<std::uint32_t>(std::clamp(std::round(point[static_cast<Eigen::Index>(k)]), 0.0, hi));
  }
  auto dist = [&](const Config& c) {
    double d = 0;
    for (std::size_t k = 0; k < dims; ++k) {
      const double e = static_cast<double>(c[k]) - point[static_cast<Eigen::Index>(k)];
      d += e * e;
    }
    return d;
  };
  std::optional<Config> best;
  double best_d = std::numeric_limits<double>::infinity();
  auto consider = [&](const Config& c) {
    const double d = dist(c);
    if (d < best_d) best_d = d, best = c;
  };
  space.settle(rounded);
  if (space.is_valid(rounded)) consider(rounded);
  for (const auto& c : space.neighbours(rounded)) consider(c);
  for (const auto& c : fallback) consider(c);
  return best;
}

/// Chameleon's sample synthesis: the config whose every knob takes its most frequent value among
/// `members` (a tie goes to the value nearest the mean of the members, then the smaller), made
/// valid and unexcluded: if the mode config is invalid or `excluded(flat index)`, a
/// breadth-first walk over valid neighbours from it (at most `max_repair` configs) takes the
/// first one that is not excluded, and failing that the member, then the `fallback` config,
/// nearest to the mode config that is not excluded. std::nullopt when there is none. Never
/// returns an invalid or excluded config.
template <class Excluded>
std::optional<Config> synthesize_sample(const SearchSpace& space, std::span<const Config> members,
                                        std::span<const Config> fallback, Excluded&& excluded,
                                        std::size_t max_repair = 256) {
  const std::size_t dims = space.dimensions();
  if (members.empty()) return std::nullopt;
  Config mode(dims);
  for (std::size_t k = 0; k < dims; ++k) {
    std::vector<std::size_t> count(space.knob(k).size(), 0);
    double mean = 0;
    for (const auto& m : members) {
      ++count.at(m[k]);
      mean += m[k];
    }
    mean /= static_cast<double>(members.size());
    std::uint32_t best = 0;
    for (std::uint32_t v = 1; v < count.size(); ++v)
      if (count[v] > count[best] ||
          (count[v] == count[best] && std::abs(v - mean) < std::abs(static_cast<double>(best) - mean)))
        best = v;
    mode[k] = best;
  }
  auto fresh = [&](const Config& c) { return space.is_valid(c) && !excluded(space.to_index(c)); };
  if (fresh(mode)) return mode;
  // Breadth-first over valid neighbours.
  std::deque<Config> queue;
  std::unordered_set<std::uint64_t> seen{space.to_index(mode)};
  queue.push_back(mode);
  std::size_t expanded = 0;
  while (!queue.empty() && expanded < max_repair) {
    const Config c = std::move(queue.front());
    queue.pop_front();
    ++expanded;
    for (auto& nb : space.neighbours(c)) {
      if (!seen.insert(space.to_index(nb)).second) continue;
      if (!excluded(space.to_index(nb))) return nb;
      queue.push_back(std::move(nb));
    }
  }
  auto nearest_fresh = [&](std::span<const Config> pool) -> std::optional<Config> {
    std::optional<Config> best;
    std::int64_t best_d = std::numeric_limits<std::int64_t>::max();
    for (const auto& c : pool) {
      if (!fresh(c)) continue;
      std::int64_t d = 0;
      for (std::size_t k = 0; k < dims; ++k) {
        const std::int64_t e = static_cast<std::int64_t>(c[k]) - static_cast<std::int64_t>(mode[k]);
        d += e * e;
      }
      if (d < best_d) best_d = d, best = c;
    }
    return best;
  };
  if (auto m = nearest_fresh(members)) return m;
  return nearest_fresh(fallback);
}

/// Parameters of KMeansSampler; defaults are Chameleon's.
struct KMeansSamplerParams {
  /// Candidates asked from the search per config of the batch (Chameleon clusters the search's
  /// plan_size best configs: 1).
  double candidate_ratio = 1.0;
  /// k runs over k_start, k_start + k_step, ... up to the batch size (Chameleon: 8, 8).
  std::size_t k_start = 8;
  std::size_t k_step = 8;
  /// The knee: stop when threshold * loss_k >= loss_previous (Chameleon: 2.5).
  double threshold = 2.5;
  /// Lloyd iterations per clustering.
  std::size_t max_iterations = 100;
  /// Configs the breadth-first repair of a synthesized sample may expand.
  std::size_t max_repair = 256;

  void validate() const {
    if (!(candidate_ratio >= 1) || !std::isfinite(candidate_ratio))
      throw std::invalid_argument("KMeansSamplerParams: candidate_ratio must be >= 1");
    if (k_start < 1) throw std::invalid_argument("KMeansSamplerParams: k_start must be >= 1");
    if (k_step < 1) throw std::invalid_argument("KMeansSamplerParams: k_step must be >= 1");
    if (!(threshold >= 1)) throw std::invalid_argument("KMeansSamplerParams: threshold must be >= 1");
    if (max_iterations < 1) throw std::invalid_argument("KMeansSamplerParams: max_iterations must be >= 1");
  }
};

/// What KMeansSampler did in its last pick.
struct KMeansPickReport {
  /// The k of the clustering (0: no candidates), and how many of the configs picked were
  /// synthesized rather than rounded centroids.
  std::size_t k = 0;
  std::size_t synthesized = 0;
};

namespace detail {

/// Chameleon's adaptive sampling: instead of measuring the search's n best candidates, cluster
/// them with k-means in knob-index space for k = 8, 16, ... up to n and stop at the knee
/// (kmeans_knee: threshold * loss_k >= loss_previous), then measure one config per cluster:
/// - its centroid, rounded to the nearest valid config (nearest_valid_config, among the rounded
///   centroid, its valid neighbours and the candidates);
/// - when that config was measured, handed out, or already picked this round, sample synthesis
///   instead (synthesize_sample over the cluster's candidates: the per-knob mode, repaired to a
///   valid config that was neither measured nor picked).
/// Clusters go best first (by the best score among their candidates). It returns k configs,
/// usually fewer than n: similar candidates cost one measurement, which is where Chameleon saves
/// measurements (Shortfall::measure_less: the batch is these configs plus the exploration's
/// random share).
template <class Lazy = void>
class KMeansSamplerImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;

 public:
  static constexpr Shortfall shortfall = Shortfall::measure_less;

  KMeansSamplerImpl() = default;
  explicit KMeansSamplerImpl(KMeansSamplerParams params) : params_(params) { params_.validate(); }

  std::size_t candidates(std::size_t n) const {
    params_.validate();
    return static_cast<std::size_t>(std::ceil(params_.candidate_ratio * static_cast<double>(n)));
  }

  std::vector<Config> pick(const SearchContext& ctx, std::span<const Candidate> best_first, std::size_t n,
                           Rng& rng) {
    params_.validate();
    last_ = {};
    std::vector<Config> out;
    if (best_first.empty() || n == 0) return out;
    const SearchSpace& space = ctx.space;
    const std::size_t dims = space.dimensions();
    MatrixXd points(static_cast<Eigen::Index>(best_first.size()), static_cast<Eigen::Index>(dims));
    std::vector<Config> configs;
    configs.reserve(best_first.size());
    for (std::size_t i = 0; i < best_first.size(); ++i) {
      configs.push_back(best_first[i].config);
      for (std::size_t k = 0; k < dims; ++k)
        points(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) = best_first[i].config[k];
    }
    const KMeansResult km = kmeans_knee(points, rng,
                                        {.k_start = params_.k_start,
                                         .k_step = params_.k_step,
                                         .k_max = n,
                                         .threshold = params_.threshold,
                                         .kmeans = {.max_iterations = params_.max_iterations}});
    last_.k = km.k();
    // Clusters best first: the position of their best candidate.
    std::vector<std::size_t> first_member(km.k(), best_first.size());
    std::vector<std::vector<Config>> members(km.k());
    for (std::size_t i = 0; i < best_first.size(); ++i) {
      const std::size_t c = km.assignment[i];
      first_member[c] = std::min(first_member[c], i);
      members[c].push_back(configs[i]);
    }
    std::vector<std::size_t> order(km.k());
    for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return first_member[a] < first_member[b]; });
    std::unordered_set<std::uint64_t> taken;
    auto excluded = [&](std::uint64_t idx) { return ctx.visited.contains(idx) || taken.contains(idx); };
    for (std::size_t c : order) {
      if (out.size() == n) break;
      if (members[c].empty()) continue;
      std::optional<Config> chosen = nearest_valid_config(space, km.centroids.row(static_cast<Eigen::Index>(c)), members[c]);
      if (!chosen || excluded(space.to_index(*chosen))) {
        chosen = synthesize_sample(space, members[c], configs, excluded, params_.max_repair);
        if (!chosen) continue;
        ++last_.synthesized;
      }
      taken.insert(space.to_index(*chosen));
      out.push_back(std::move(*chosen));
    }
    return out;
  }

  const KMeansSamplerParams& params() const noexcept { return params_; }
  /// What the last pick did.
  const KMeansPickReport& last_pick() const noexcept { return last_; }

 private:
  KMeansSamplerParams params_{};
  KMeansPickReport last_{};
};
}  // namespace detail

/// detail::KMeansSamplerImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using KMeansSampler = detail::KMeansSamplerImpl<>;

static_assert(PickPolicy<KMeansSampler>);

}  // namespace tunekit
