#pragma once
/// \file
/// TreeParzen: tunekit's own search, built from parts (optimizer/tpe/). docs/concepts.md
/// describes it.

#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"
#include "tunekit/optimizer/tpe/candidate_sources.hpp"
#include "tunekit/optimizer/tpe/crossovers.hpp"
#include "tunekit/optimizer/tpe/good_density_draws.hpp"
#include "tunekit/optimizer/tpe/incumbent_neighbours.hpp"
#include "tunekit/optimizer/tpe/model_pick.hpp"
#include "tunekit/optimizer/tpe/model_start.hpp"
#include "tunekit/optimizer/tpe/restarts.hpp"
#include "tunekit/optimizer/tpe/round.hpp"
#include "tunekit/optimizer/tpe/source_mix.hpp"
#include "tunekit/optimizer/tpe/start.hpp"
#include "tunekit/stats/parzen.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of TreeParzen's own steps (its parts have theirs).
struct TreeParzenParams {
  /// The split into good and other configs, and the densities' kernel widths.
  TpeDensityParams density{};
  /// Whether failed configs are modelled: P(ok | x) in every score; false leaves them out of the
  /// model (neither good nor bad).
  bool model_failures = true;
  /// A round measures 1 + floor(trials / batch_growth) configs (at most what was asked), so
  /// batches grow as the model firms up.
  std::size_t batch_growth = 100;
  /// Whether each round proposes at least as many configs as the caller measures at once
  /// (SearchContext::parallel: a farm's workers, the n of a user's ask(n); at most n), so that no
  /// worker idles: the model start then picks that many, each told the ones before as lies. False:
  /// one config a round in the start's last configs and the model start, and the growing batches
  /// alone (the tpe-* presets).
  bool fill_parallel = true;

  void validate() const {
    density.validate();
    if (batch_growth == 0) throw std::invalid_argument("TreeParzenParams: batch_growth must be at least 1");
  }
};

/// What TreeParzen did in its last propose (`last_round()`).
struct TreeParzenRound {
  /// Whether the configs came from the start (StartDesign), and whether from the model start.
  bool design = true;
  bool model_start = false;
  /// The first trial (position in the history) of the current phase (RestartPolicy).
  std::size_t phase_start = 0;
  /// Sizes of the good and the other group (pending lies included), and failures modelled.
  std::size_t good = 0, others = 0, failed = 0;
  /// Per source (its position in the CandidateSources): the candidates it offered, and the configs
  /// the mix took from it.
  std::vector<std::size_t> candidates{}, picks{};
};

/// tunekit's own search, an Optimizer (it needs no surrogate: its models are fitted on the
/// history). Each round:
/// 1. Phase: the restart policy says where the current phase begins (RestartOnStall: after the
///    best has stalled); the steps below see the phase's trials and every failure.
/// 2. Start: until the phase has `StartT::size()` configs and two of them succeeded, the start
///    design proposes (MaximinStart: a space-filling design), at least one config per worker.
/// 3. Model: the phase's successful configs split by measured time into the good ones (the
///    ceil(gamma * n) fastest, at most max_good) and the others (with the pending configs as
///    lies); l(x) and g(x) are their ParzenEstimators, and, once configs failed, f(x) the
///    estimator of the failures and s(x) that of all successes. A candidate x scores
///        log l(x) - log g(x) + log P(ok | x),  P(ok | x) = n_s s(x) / (n_s s(x) + n_f f(x)),
///    TPE's density ratio times the probability that x runs at all.
/// 4. Candidates: the sources offer valid unvisited configs (SourcesT, in stages: around the
///    incumbents, then global, then picks among those).
/// 5. Model start: in its rounds (ModelStartT::active), the model start adds its own candidates
///    and picks the configs measured: one per worker (SearchContext::parallel).
/// 6. Mix: otherwise a batch of 1 + floor(trials / batch_growth) configs, or one per worker when
///    that is more (at most n); each pick
///    comes from a source the mix chooses (MixT: Thompson sampling on the sources' hits), its
///    best-scored candidate (or its nominee), and joins g(x) as a pessimistic lie (constant liar)
///    so that a batch spreads out.
///
/// Every part is a template argument and a default-constructed TreeParzen<> is the recommended
/// search; the mix's statistics and the models' last fits are its only state besides its
/// parameters, and an exact resume (re-execution) rebuilds them.
template <class StartT = MaximinStart, class ModelStartT = ModelStart<>,
          class SourcesT = CandidateSources<GoodDensityDraws, IncumbentNeighbours, Crossovers>,
          class MixT = ThompsonMix, class RestartT = RestartOnStall>
class TreeParzen {
  static_assert(check_start_design<StartT>());
  static_assert(check_model_start<ModelStartT>());
  static_assert(check_source_mix<MixT>());
  static_assert(check_restart_policy<RestartT>());

 public:
  /// The parts, each default-constructed unless given.
  struct Parts {
    StartT start{};
    ModelStartT model_start{};
    SourcesT sources{};
    MixT mix{};
    RestartT restarts{};
  };

  TreeParzen() = default;
  explicit TreeParzen(TreeParzenParams params, Parts parts = {}) : params_(params), parts_(std::move(parts)) {
    params_.validate();
  }

  const TreeParzenParams& params() const noexcept { return params_; }
  const Parts& parts() const noexcept { return parts_; }
  /// What the last propose did.
  const TreeParzenRound& last_round() const noexcept { return report_; }
  /// Whether it fills the configs measured at once (TreeParzenParams::fill_parallel): `tune` then
  /// keeps them in flight (TunerOptions::parallel).
  bool fills_parallel() const noexcept { return params_.fill_parallel; }

  std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng& rng) {
    report_ = {};
    if (n == 0) return {};
    const std::size_t phase = parts_.restarts.phase_start(ctx.history);
    report_.phase_start = phase;
    const std::size_t parallel = params_.fill_parallel ? std::clamp<std::size_t>(ctx.parallel, 1, n) : 1;
    if (const std::size_t want = start_configs(ctx, phase, parallel); want > 0)
      return parts_.start.design(ctx, std::min(n, want), rng);
    report_.design = false;

    TpeRound round(ctx, phase, params_.density);
    round.model_start = parts_.model_start.active(round);
    parts_.mix.credit(round);
    CandidatePool pool = candidates(round, rng);
    if (round.model_start && !pool.empty()) {
      report_.model_start = true;
      const std::span<const Config> lies = params_.fill_parallel ? round.pending : std::span<const Config>();
      std::vector<Config> out;
      for (std::size_t i : parts_.model_start.pick(round, pool, parallel, lies, rng)) out.push_back(pool[i]);
      return out;
    }
    parts_.sources.add(SourceStage::pick, round, pool, rng);
    return batch(round, pool, std::min(n, std::max(parallel, 1 + ctx.history.size() / params_.batch_growth)), rng);
  }

 private:
  // How many configs the start still proposes in the phase beginning at `phase` (0: it is over):
  // what it lacks of its size (at least `parallel`), or `parallel` while fewer than two configs of
  // the phase succeeded.
  std::size_t start_configs(const SearchContext& ctx, std::size_t phase, std::size_t parallel) const {
    const std::size_t visited = ctx.visited.size() > phase ? ctx.visited.size() - phase : 0;
    std::size_t successes = 0;
    for (std::size_t i = phase; i < ctx.history.size(); ++i) successes += ctx.history[i].measurement.ok();
    if (visited < parts_.start.size()) return std::max(parts_.start.size() - visited, parallel);
    return successes < 2 ? parallel : 0;
  }

  // Steps 4-5: the local and global sources' candidates (and the model start's), with their
  // log P(ok | x).
  CandidatePool candidates(const TpeRound& round, Rng& rng) {
    CandidatePool pool(round.ctx);
    parts_.sources.add(SourceStage::local, round, pool, rng);
    parts_.sources.add(SourceStage::global, round, pool, rng);
    if (round.model_start) {
      pool.set_source(CandidatePool::no_source);
      parts_.model_start.add(round, pool, rng);
    }
    pool.set_log_ok(log_ok(round, pool));
    report_.good = round.n_good;
    report_.others = round.others.size();
    report_.failed = round.failed.size();
    report_.candidates.assign(SourcesT::count, 0);
    for (std::size_t i = 0; i < pool.size(); ++i)
      if (pool.source(i) < SourcesT::count) ++report_.candidates[pool.source(i)];
    return pool;
  }

  // log P(ok | x) of the candidates (step 3): 0 while nothing failed or without the failure model.
  std::vector<double> log_ok(const TpeRound& round, const CandidatePool& pool) const {
    std::vector<double> out(pool.size(), 0.0);
    if (!params_.model_failures || round.failed.empty()) return out;
    const std::vector<Config> successes = round.fastest(round.ok.size());
    const ParzenEstimator s(round.ctx.space, successes, {}, params_.density.parzen);
    const ParzenEstimator f(round.ctx.space, round.failed, {}, params_.density.parzen);
    const double ns = static_cast<double>(successes.size()), nf = static_cast<double>(round.failed.size());
    for (std::size_t i = 0; i < pool.size(); ++i) {
      const double ps = ns * s.density(pool[i]), pf = nf * f.density(pool[i]);
      out[i] = std::log(ps / (ps + pf));
    }
    return out;
  }

  // Step 6: `size` picks, each from the source the mix chooses, each a lie in g(x) for the next;
  // random unvisited configs when no candidate is left.
  std::vector<Config> batch(const TpeRound& round, const CandidatePool& pool, std::size_t size, Rng& rng) {
    constexpr std::size_t sources = SourcesT::count;
    const std::size_t m = pool.size();
    std::vector<double> log_l(m), g_sum(m);
    for (std::size_t i = 0; i < m; ++i) {
      log_l[i] = round.good_density.log_density(pool[i]);
      g_sum[i] = round.other_density.density(pool[i]) * round.other_density.total_weight();
    }
    double g_weight = round.other_density.total_weight();
    std::vector<bool> used(m, false);
    std::vector<Config> out;
    std::unordered_set<std::uint64_t> taken;
    report_.picks.assign(sources, 0);
    while (out.size() < size) {
      // Each source's best-scored unused candidate, or its unused nominee.
      std::array<std::size_t, sources> best_in;
      std::array<double, sources> best_score{};
      best_in.fill(m);
      for (std::size_t i = 0; i < m; ++i) {
        const std::size_t q = pool.source(i);
        if (used[i] || q >= sources) continue;
        const double score = log_l[i] - std::log(g_sum[i] / g_weight) + pool.log_ok()[i];
        if (best_in[q] == m || score > best_score[q]) best_in[q] = i, best_score[q] = score;
      }
      std::array<bool, sources> offers{};
      for (std::size_t q = 0; q < sources; ++q) {
        if (const std::size_t c = pool.nominee(q); c != CandidatePool::no_source && !used[c]) best_in[q] = c;
        offers[q] = best_in[q] != m;
      }
      if (std::none_of(offers.begin(), offers.end(), [](bool o) { return o; })) break;
      const std::size_t src = parts_.mix.choose(std::span<const bool>(offers), rng);
      const std::size_t best = best_in[src];
      used[best] = true;
      ++report_.picks[src];
      const std::uint64_t index = round.ctx.space.to_index(pool[best]);
      parts_.mix.chosen(index, src);
      taken.insert(index);
      for (std::size_t i = 0; i < m; ++i)
        if (!used[i]) g_sum[i] += round.other_density.kernel(pool[best], pool[i]);
      g_weight += 1.0;
      out.push_back(pool[best]);
    }
    if (out.size() < size) draw_unvisited(round.ctx, size - out.size(), rng, taken, out);
    return out;
  }

  TreeParzenParams params_{};
  Parts parts_{};
  TreeParzenRound report_{};
};

static_assert(Optimizer<TreeParzen<>>);

}  // namespace tunekit
