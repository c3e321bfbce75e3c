#pragma once
/// \file
/// TreeParzen: tunekit's own search. A space-filling start over the constrained space, then a
/// multivariate tree-structured Parzen estimator (TPE) whose candidates are its own draws and the
/// neighbourhoods of the best configs, with failures modelled by a density of their own; as an
/// option, a Gaussian process (alone, or in turns with a random forest) picks the first configs
/// after the start.

#include "tunekit/acquisition/expected_improvement.hpp"
#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"
#include "tunekit/stats/parzen.hpp"
#include "tunekit/surrogate/gaussian_process.hpp"
#include "tunekit/surrogate/random_forest.hpp"

#include <Eigen/Core>

#include <boost/random/beta_distribution.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Parameters of TreeParzen. The defaults are the literature's (Optuna's TPE: 10 start-up
/// trials, gamma 0.1 capped at 25, Scott's-rule bandwidths), not fitted to any recorded space.
struct TreeParzenParams {
  /// Configs of the space-filling start (before the densities are fitted).
  std::size_t startup = 10;
  /// Random valid configs each start-up config is chosen from (the one farthest from all
  /// visited configs: greedy maximin).
  std::size_t design_pool = 64;
  /// The good group: the ceil(gamma * n) fastest of the n successful configs, at most max_good.
  double gamma = 0.1;
  std::size_t max_good = 25;
  /// Candidates drawn from the good density l(x) each round.
  std::size_t samples = 64;
  /// The best configs whose unvisited neighbours (SearchSpace::hamming_neighbours: every other
  /// value of one knob) join the candidates.
  std::size_t incumbents = 1;
  /// When every Hamming neighbour of an incumbent was visited, `samples` random valid moves of
  /// two of its knobs at once join the candidates instead (a wider neighbourhood, as in variable
  /// neighbourhood search: a local optimum of one-knob moves need not be one of two-knob moves).
  bool two_knob_moves = true;
  /// When every Hamming neighbour of an incumbent was visited: for each of its one-knob moves that
  /// is invalid (the knob's new value needs others to change with it, as a layout that leaves
  /// knobs unused in a space that pins them by constraints), the unvisited valid config with that
  /// value nearest the incumbent (fewest knobs changed) joins the candidates, before any
  /// two-knob move: a local move across the constraints. Off by default (and in the presets):
  /// measured, it helps recorded spaces whose layouts are islands and is level or a little
  /// below elsewhere (docs/performance.md, "Recorded CPU spaces"). Scans the valid configs, in
  /// spaces whose product SearchSpace enumerates (at most 2^22).
  bool repair_moves = false;
  /// Candidates made each round by crossover (0: none, TreeParzen's default): each a child of two
  /// distinct configs of the good group (of the two best while the group has one), every knob's
  /// value from one parent or the other at random, kept when valid and unvisited. They are a third
  /// source of the mix (step 4), so the run's hits decide how often a pick recombines the good
  /// configs (what Kernel Tuner's genetic algorithm and adaptive_tabu_greywolf do knob by knob).
  /// Not in the Gaussian-process start's rounds. The default preset sets 64.
  std::size_t crossovers = 0;
  /// Trials per extra config in a batch: a round measures 1 + floor(trials / batch_growth)
  /// configs (at most what was asked), so batches grow as the model firms up.
  std::size_t batch_growth = 100;
  /// Whether failed configs are modelled (P(ok | x) in the score); false leaves them out of the
  /// model altogether (an ablation: they are then neither good nor bad).
  bool model_failures = true;
  /// The Gaussian-process start (0: none, TreeParzen's default): while fewer than `gp_trials`
  /// configs were measured, each round's one pick is the candidate of largest expected
  /// improvement of a GaussianProcess fitted on the log times of the successful configs, times
  /// P(ok | x); its candidates are TPE's and `gp_pool` random unvisited valid configs. A smooth
  /// model learns from every measured config, where TPE's good group is one or two configs so
  /// early; it finds the optima of smooth spaces sooner and the needles of rough ones later
  /// (docs/performance.md, "the Gaussian-process start"). The preset `tpe-gp` sets 40.
  std::size_t gp_trials = 0;
  std::size_t gp_pool = 256;
  /// The Gaussian process's automatic relevance determination (GaussianProcessParams::ard_steps:
  /// 0, one length scale for every feature, or the steps of the ascent that gives each feature
  /// its own).
  std::size_t gp_ard_steps = 0;
  /// With gp_ard_steps > 0: each model-start fit of the Gaussian process after the phase's first
  /// starts its ascent from the length scales of the phase's previous fit and takes at most this
  /// many steps (GaussianProcess::fit_from; 0: every fit starts from the common length scale and
  /// takes gp_ard_steps). The length scales of a fit on one more config are near the last ones,
  /// so the model start costs less: a third less in the default's at about its found scores
  /// (docs/performance.md, "The Gaussian process's ascent from its last fit"; no preset sets it).
  std::size_t gp_ard_warm_steps = 0;
  /// The model as a fourth source after the model start (0: none, TreeParzen's default): each
  /// round after the Gaussian-process start (every round past the space-filling start when
  /// gp_trials is 0), the candidate of largest EI(x) P(ok | x) of a GaussianProcess (gp_ard_steps,
  /// the model start's features and candidates' scores) fitted on the log times of the phase's
  /// `model_source` fastest successful configs joins the mix of step 4 as a source of its own,
  /// credited with hits and misses like the others: the run's hits decide how often the smooth
  /// model still picks once TPE's densities have taken over. Its candidates are the round's
  /// (TPE's draws, the neighbours, the crossovers); it adds none. At least 2 when set. The
  /// default preset sets 80 (docs/performance.md, "The model as a fourth source after the model
  /// start").
  std::size_t model_source = 0;
  /// With model_source and gp_ard_steps > 0: each fit of the model source after the phase's
  /// first starts its ascent from the previous round's length scales and takes at most this many
  /// steps (0: every fit takes gp_ard_steps from the common length scale), as gp_ard_warm_steps
  /// does for the model start; the source fits every round, so its cost is what this bounds.
  std::size_t model_source_warm_steps = 5;
  /// The model start in turns (with gp_trials > 0): the rounds with an even number of measured
  /// configs pick by a RandomForest instead of the Gaussian process (the same candidates, the
  /// same EI(x) P(ok | x) on the log times): `forest_trees` bagged regression trees, every
  /// feature tried at each split, the jackknife variance. The trees split on one knob at a time
  /// and model the interactions of a few knobs that a rough space's fastest configs need; the
  /// Gaussian process models a smooth trend. The preset `tpe-gp-rf` sets it.
  bool forest_turns = false;
  std::size_t forest_trees = 50;
  /// Restarts (0: none): the patience of a phase, step 7 of TreeParzen's description.
  std::size_t restart_after = 0;
  /// Kernel widths of the densities.
  ParzenParams parzen{};

  void validate() const {
    if (startup == 0) throw std::invalid_argument("TreeParzenParams: startup must be at least 1");
    if (design_pool == 0) throw std::invalid_argument("TreeParzenParams: design_pool must be at least 1");
    if (!(gamma > 0 && gamma <= 1)) throw std::invalid_argument("TreeParzenParams: gamma must be in (0, 1]");
    if (max_good == 0) throw std::invalid_argument("TreeParzenParams: max_good must be at least 1");
    if (samples == 0 && incumbents == 0)
      throw std::invalid_argument("TreeParzenParams: samples and incumbents cannot both be 0");
    if (batch_growth == 0) throw std::invalid_argument("TreeParzenParams: batch_growth must be at least 1");
    if (forest_turns && forest_trees < 2)
      throw std::invalid_argument("TreeParzenParams: forest_trees must be at least 2");
    if (model_source == 1)
      throw std::invalid_argument("TreeParzenParams: model_source must be 0 (none) or at least 2");
    parzen.validate();
  }
};

/// What TreeParzen did in its last propose (`last_round()`).
struct TreeParzenRound {
  /// Whether the configs came from the space-filling start (else from the densities).
  bool design = true;
  /// The first trial (position in the history) of the current phase (TreeParzenParams::restart_after).
  std::size_t phase_start = 0;
  /// Whether the pick came from the Gaussian-process start (TreeParzenParams::gp_trials), and
  /// whether its random forest picked it (TreeParzenParams::forest_turns).
  bool gaussian_process = false;
  bool forest = false;
  /// Sizes of the good and the other group, and failures modelled.
  std::size_t good = 0, bad = 0, failed = 0;
  /// Candidates scored: drawn from l(x), neighbours of the incumbents, and crossovers of the good
  /// configs (TreeParzenParams::crossovers).
  std::size_t drawn = 0, neighbours = 0, crossovers = 0;
  /// Configs proposed that were neighbours of an incumbent, that were crossovers, and that the
  /// model source picked (TreeParzenParams::model_source).
  std::size_t local_picks = 0, crossover_picks = 0, model_picks = 0;
  /// The sources of the Thompson mix (step 4 of TreeParzen's description), the indices of hits
  /// and misses.
  static constexpr int global = 0, local = 1, crossover = 2, model = 3, sources = 4;
  /// The sources' hits and misses so far, as the Thompson sampling saw them.
  double hits[sources]{};
  double misses[sources]{};
};

namespace detail {

/// tunekit's own search (an Optimizer; needs no surrogate: its model is fitted on the history).
///
/// 1. Start: `startup` configs chosen one by one, each the farthest (mean per-knob distance:
///    value positions over the knob's range for ordered knobs, 0/1 for the others) from every
///    visited config among `design_pool` random valid ones: a maximin design over the constrained
///    space, so the model starts from configs that cover it. The start goes on while fewer than
///    two configs succeeded.
/// 2. Model: the successful configs split by measured time into the good ones (the
///    ceil(gamma * n) fastest, at most max_good) and the others; l(x) and g(x) are their
///    ParzenEstimators, and, once configs failed, f(x) the estimator of the failures and s(x) that
///    of all successes. A candidate x scores
///        log l(x) - log g(x) + log P(ok | x),  P(ok | x) = n_s s(x) / (n_s s(x) + n_f f(x)),
///    TPE's density ratio (expected improvement up to a monotone map) times the probability that
///    x runs at all: failures are a class of their own, never a huge time.
/// 3. Candidates: `samples` draws from l(x) (global moves, toward where the good configs are)
///    and the unvisited Hamming neighbours of the `incumbents` best configs (local moves: another
///    value of one knob), all valid and unvisited. Once an incumbent's Hamming neighbours are all
///    visited, the nearest valid configs across its invalid one-knob moves (`repair_moves`, off by
///    default) or else `samples` random moves of two of its knobs stand in for them
///    (`two_knob_moves`). With `crossovers` > 0, that many uniform crossovers of two good configs
///    are a third kind (recombinations).
/// 4. The mix: each pick comes from one source, global, local, (with `crossovers`) crossover or
///    (with `model_source`) the Gaussian process's pick among the candidates, chosen by Thompson
///    sampling: a draw from Beta(1 + hits, 1 + misses) per source that has a candidate left,
///    where a hit is a config of that source that was measured and is in the good group at the
///    next round; the source with the largest draw gives its best-scored candidate (the model
///    source: its one pick). What the run has seen decides how much it searches near the
///    incumbent, how much it recombines, and how much the smooth model still picks.
/// 5. Batch: 1 + floor(trials / batch_growth) configs (at most n); after each pick the pick joins
///    g(x) as a pessimistic lie (constant liar), so a batch spreads out. Configs handed out and
///    not yet measured are lies in g(x) too.
///
/// 6. Optional Gaussian-process start (`gp_trials` > 0): while fewer than gp_trials configs were
///    measured, the round picks one config: the largest EI(x) P(ok | x) among the candidates of
///    3. and `gp_pool` random unvisited ones, EI of a GaussianProcess on the log times of the
///    successful configs (features: the knobs' value positions over their range for ordered
///    knobs, one-hot scaled by 1/sqrt 2 for the others, so that any one-knob change of a
///    categorical knob is distance 1 like an end-to-end move of an ordered one). With
///    `forest_turns`, every other such round a RandomForest on the same features picks instead.
/// 7. Optional restarts (`restart_after` > 0): the history is cut into phases; a phase ends once
///    its best time has not improved for max(restart_after, the trials the phase took to reach it)
///    trials, and 1.-6. then use the trials of the current phase alone (the failures of the whole
///    history aside), so that the search starts over away from the basin it locked into: its
///    start keeps away from every visited config, and no visited config is proposed again. The
///    hits and misses of 4. carry over from phase to phase (reset at each restart instead, the
///    search was level: docs/performance.md, "Restarts").
///
/// The source statistics and the Gaussian processes' last length scales (gp_ard_warm_steps,
/// model_source_warm_steps) are the optimizer's only state besides its parameters; an exact
/// resume (re-execution) rebuilds them. The phases are derived from the history at each round.
template <class = void>
class TreeParzenImpl {
 public:
  TreeParzenImpl() = default;
  explicit TreeParzenImpl(TreeParzenParams params) : params_(std::move(params)) { params_.validate(); }

  const TreeParzenParams& params() const noexcept { return params_; }
  /// What the last propose did.
  const TreeParzenRound& last_round() const noexcept { return last_; }

  std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng& rng) {
    last_ = {};
    std::vector<Config> out;
    if (n == 0) return out;
    std::unordered_set<std::uint64_t> taken;
    std::vector<const Trial*> ok;
    std::vector<Config> failed;
    const std::size_t start = phase_start(ctx.history);
    last_.phase_start = start;
    for (std::size_t i = 0; i < ctx.history.size(); ++i) {
      const Trial& t = ctx.history[i];
      if (!t.measurement.ok())
        failed.push_back(t.config);
      else if (i >= start)
        ok.push_back(&t);
    }
    // Measured in the phase, and handed out (visited holds the history).
    const std::size_t phase_visited = ctx.visited.size() > start ? ctx.visited.size() - start : 0;
    const std::size_t phase_trials = ctx.history.size() - start;
    if (phase_visited < params_.startup || ok.size() < 2) {
      const std::size_t want = phase_visited < params_.startup ? params_.startup - phase_visited : 1;
      design(ctx, std::min(n, want), rng, taken, out);
      return out;
    }
    last_.design = false;

    // The groups: good, the others (with the configs handed out and not measured as lies), failed.
    std::stable_sort(ok.begin(), ok.end(),
                     [](const Trial* a, const Trial* b) { return a->measurement.mean < b->measurement.mean; });
    const auto n_good = std::clamp<std::size_t>(
        static_cast<std::size_t>(std::ceil(params_.gamma * static_cast<double>(ok.size()))), 1,
        std::min(params_.max_good, ok.size() - 1));
    std::vector<Config> good, bad, successes;
    for (std::size_t i = 0; i < ok.size(); ++i) {
      (i < n_good ? good : bad).push_back(ok[i]->config);
      successes.push_back(ok[i]->config);
    }
    std::vector<std::uint64_t> pending;  // ascending, so that sums do not depend on hashing order
    for (std::uint64_t idx : ctx.visited)
      if (!ctx.history.contains(idx)) pending.push_back(idx);
    std::sort(pending.begin(), pending.end());
    for (std::uint64_t idx : pending) bad.push_back(ctx.space.from_index(idx));
    // Credit the sources of the configs this optimizer proposed and that were measured since:
    // a success when the config is in the good group now.
    const double good_time = ok[n_good - 1]->measurement.mean;
    for (std::size_t i = start; i < ctx.history.size(); ++i) {
      const Trial& t = ctx.history[i];
      const auto it = source_.find(t.index);
      if (it == source_.end()) continue;
      const bool hit = t.measurement.ok() && t.measurement.mean <= good_time;
      (hit ? hits_ : misses_)[it->second] += 1.0;
      source_.erase(it);
    }
    std::copy(std::begin(hits_), std::end(hits_), last_.hits);
    std::copy(std::begin(misses_), std::end(misses_), last_.misses);
    last_.good = good.size();
    last_.bad = bad.size();
    last_.failed = failed.size();
    const ParzenEstimator l(ctx.space, good, {}, params_.parzen);
    const ParzenEstimator g(ctx.space, bad, {}, params_.parzen);

    // Candidates: neighbours of the incumbents, draws from l(x), then crossovers of the good
    // configs (after the model start) or the model start's random configs.
    std::vector<Config> cands;
    std::vector<int> source;  // kGlobal, kLocal or kCrossover
    std::unordered_set<std::uint64_t> seen;
    auto consider = [&](Config c, int from) {
      const auto idx = ctx.space.to_index(c);
      if (ctx.visited.contains(idx) || !seen.insert(idx).second) return false;
      cands.push_back(std::move(c));
      source.push_back(from);
      return true;
    };
    for (std::size_t i = 0; i < std::min(params_.incumbents, ok.size()); ++i) {
      std::size_t found = 0;
      for (Config& c : ctx.space.hamming_neighbours(ok[i]->config)) found += consider(std::move(c), kLocal);
      if (found == 0 && params_.repair_moves) found = repair_moves(ctx, ok[i]->config, rng, consider);
      if (found == 0 && params_.two_knob_moves) found = two_knob_moves(ctx, ok[i]->config, rng, consider);
      last_.neighbours += found;
    }
    const std::size_t max_attempts = 32 * params_.samples;
    for (std::size_t attempt = 0; last_.drawn < params_.samples && attempt < max_attempts; ++attempt) {
      Config c = l.sample(rng);
      ctx.space.settle(c);
      if (ctx.space.is_valid(c)) last_.drawn += consider(std::move(c), kGlobal);
    }
    const bool gp_round = phase_trials < params_.gp_trials;
    if (gp_round) {  // the Gaussian process's random candidates (global ones)
      std::vector<Config> extra;
      std::unordered_set<std::uint64_t> drawn = seen;
      draw_unvisited(ctx, params_.gp_pool, rng, drawn, extra);
      for (Config& c : extra) consider(std::move(c), kGlobal);
    } else {
      last_.crossovers = crossovers(ctx, ok, std::max<std::size_t>(n_good, 2), rng, consider);
    }

    // Scores: log P(ok), then (the Gaussian-process start's rounds aside) log l - log g.
    const std::size_t m = cands.size();
    std::vector<double> log_ok(m, 0.0);
    if (params_.model_failures && !failed.empty()) {
      const ParzenEstimator s(ctx.space, successes, {}, params_.parzen);
      const ParzenEstimator f(ctx.space, failed, {}, params_.parzen);
      const double ns = static_cast<double>(successes.size()), nf = static_cast<double>(failed.size());
      for (std::size_t i = 0; i < m; ++i) {
        const double ps = ns * s.density(cands[i]), pf = nf * f.density(cands[i]);
        log_ok[i] = std::log(ps / (ps + pf));
      }
    }
    if (gp_round && m > 0) {
      last_.gaussian_process = true;
      last_.forest = params_.forest_turns && phase_trials % 2 == 0;
      out.push_back(cands[model_pick(ctx.space, ok, successes, cands, log_ok, last_.forest, start_warm_,
                                     params_.gp_ard_warm_steps, start, rng)]);
      return out;
    }
    std::vector<double> log_l(m), g_sum(m);
    for (std::size_t i = 0; i < m; ++i) {
      log_l[i] = l.log_density(cands[i]);
      g_sum[i] = g.density(cands[i]) * g.total_weight();
    }
    // The model source's one pick (m: none), of a Gaussian process on the phase's fastest configs.
    std::size_t model_idx = m;
    if (params_.model_source > 0 && m > 0) {
      const std::size_t k = std::min(params_.model_source, ok.size());
      model_idx = model_pick(ctx.space, std::span(ok).first(k), std::span(successes).first(k), cands, log_ok, false,
                             source_warm_, params_.model_source_warm_steps, start, rng);
    }

    // The batch, best first, each pick a lie in g(x).
    const std::size_t batch =
        std::min(n, 1 + ctx.history.size() / params_.batch_growth);
    double g_weight = g.total_weight();
    std::vector<bool> used(m, false);
    while (out.size() < batch) {
      // The source by Thompson sampling over each Beta(1 + hits, 1 + misses) of the sources with
      // a candidate left, then its best-scored candidate.
      std::size_t best_in[kSources];
      std::fill(std::begin(best_in), std::end(best_in), m);
      double best_score[kSources]{};
      for (std::size_t i = 0; i < m; ++i) {
        if (used[i]) continue;
        const double score = log_l[i] - std::log(g_sum[i] / g_weight) + log_ok[i];
        const int src = source[i];
        if (best_in[src] == m || score > best_score[src]) {
          best_in[src] = i;
          best_score[src] = score;
        }
      }
      if (model_idx < m && !used[model_idx]) best_in[kModel] = model_idx;
      int src = -1, left = 0;
      for (int q = 0; q < kSources; ++q)
        if (best_in[q] != m) src = q, ++left;
      if (left == 0) break;
      if (left > 1) {
        double top = -1.0;
        for (int q = 0; q < kSources; ++q) {
          if (best_in[q] == m) continue;
          const double t = boost::random::beta_distribution<double>(1.0 + hits_[q], 1.0 + misses_[q])(rng);
          if (t > top) top = t, src = q;
        }
      }
      const std::size_t best = best_in[src];
      used[best] = true;
      last_.local_picks += source[best] == kLocal;
      last_.crossover_picks += source[best] == kCrossover;
      last_.model_picks += src == kModel;
      source_[ctx.space.to_index(cands[best])] = src;
      taken.insert(ctx.space.to_index(cands[best]));
      for (std::size_t i = 0; i < m; ++i)
        if (!used[i]) g_sum[i] += g.kernel(cands[best], cands[i]);
      g_weight += 1.0;
      out.push_back(cands[best]);
    }
    // No candidate left (the space is nearly exhausted): random unvisited configs.
    if (out.size() < batch) draw_unvisited(ctx, batch - out.size(), rng, taken, out);
    return out;
  }

 private:
  // The sources of the candidates (step 4 of the class's description).
  static constexpr int kGlobal = TreeParzenRound::global, kLocal = TreeParzenRound::local,
                       kCrossover = TreeParzenRound::crossover, kModel = TreeParzenRound::model,
                       kSources = TreeParzenRound::sources;

  // The first trial (position in the history) of the current phase (step 7 of the class's
  // description), derived from the history alone, so that a resumed run restarts where the
  // original did.
  std::size_t phase_start(const History& history) const {
    if (params_.restart_after == 0) return 0;
    std::size_t start = 0, best_at = 0;
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < history.size(); ++i) {
      const Measurement& m = history[i].measurement;
      if (m.ok() && m.mean < best) {
        best = m.mean;
        best_at = i;
      } else if (i + 1 - best_at > std::max(params_.restart_after, best_at + 1 - start)) {
        start = i + 1;
        best_at = start;
        best = std::numeric_limits<double>::infinity();
      }
    }
    return start;
  }

  // Greedy maximin: each config the farthest from every visited and chosen one among
  // design_pool random unvisited valid configs.
  void design(const SearchContext& ctx, std::size_t count, Rng& rng, std::unordered_set<std::uint64_t>& taken,
              std::vector<Config>& out) const {
    const SearchSpace& space = ctx.space;
    const std::size_t d = space.dimensions();
    std::vector<Config> placed;
    for (std::uint64_t idx : ctx.visited) placed.push_back(space.from_index(idx));
    auto distance = [&](const Config& a, const Config& b) {
      double s = 0.0;
      for (std::size_t k = 0; k < d; ++k) {
        const Knob& knob = space.knob(k);
        if (a[k] == b[k]) continue;
        if (knob.ordered() && knob.size() > 1)
          s += std::abs(static_cast<double>(a[k]) - static_cast<double>(b[k])) / static_cast<double>(knob.size() - 1);
        else
          s += 1.0;
      }
      return s / static_cast<double>(d);
    };
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<Config> pool;
      std::unordered_set<std::uint64_t> pool_taken = taken;
      draw_unvisited(ctx, params_.design_pool, rng, pool_taken, pool);
      if (pool.empty()) return;
      std::size_t best = 0;
      double best_d = -1.0;
      for (std::size_t j = 0; j < pool.size(); ++j) {
        double nearest = std::numeric_limits<double>::infinity();
        for (const Config& p : placed) nearest = std::min(nearest, distance(pool[j], p));
        if (nearest > best_d) {
          best_d = nearest;
          best = j;
        }
      }
      taken.insert(space.to_index(pool[best]));
      placed.push_back(pool[best]);
      out.push_back(std::move(pool[best]));
    }
  }

  // A Gaussian process's last fit: its phase, its number of configs and its log kernel weights,
  // where the next fit's ascent starts (gp_ard_warm_steps, model_source_warm_steps).
  struct WarmStart {
    std::size_t phase = 0, trials = std::numeric_limits<std::size_t>::max();
    Eigen::VectorXd log_weights{};
  };

  // The model's pick (the model start's, or the model source's): the candidate of largest
  // log EI + log P(ok), EI of the model's (the Gaussian process's, or the forest's) log time below
  // the best log time of `ok` (measured times are positive: Measurement). The Gaussian process's
  // ascent starts from `warm`, the last fit of the phase (`phase`: its first trial) on no more
  // configs, for at most `warm_steps` steps (0: a full ascent), and leaves this fit there.
  std::size_t model_pick(const SearchSpace& space, std::span<const Trial* const> ok,
                         std::span<const Config> successes, const std::vector<Config>& cands,
                         const std::vector<double>& log_ok, bool forest, WarmStart& warm,
                         std::size_t warm_steps, std::size_t phase, Rng& rng) {
    Eigen::VectorXd y(static_cast<Eigen::Index>(ok.size()));
    for (std::size_t i = 0; i < ok.size(); ++i) y(static_cast<Eigen::Index>(i)) = std::log(ok[i]->measurement.mean);
    Eigen::VectorXd mean, sd;
    if (forest) {
      RandomForest rf({.n_trees = params_.forest_trees, .max_features = 1.0});
      rf.fit(model_features(space, successes), y, rng);
      rf.predict(model_features(space, cands), mean, sd);
      // The jackknife variance is 0 where the trees agree: a floor keeps EI ordered by the mean.
      sd = sd.cwiseMax(1e-9);
    } else {
      GaussianProcess gp({.ard_steps = params_.gp_ard_steps});
      // The phase's previous fit (on no more of its successful configs) starts the ascent.
      const bool from_last = warm_steps > 0 && warm.phase == phase && warm.trials <= ok.size();
      gp.fit_from(model_features(space, successes), y, from_last ? warm.log_weights : Eigen::VectorXd(),
                  warm_steps);
      if (warm_steps > 0) warm = {phase, ok.size(), gp.log_weights()};
      gp.predict(model_features(space, cands), mean, sd);
    }
    const double best = y.minCoeff();
    std::size_t pick = 0;
    double pick_score = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const auto r = static_cast<Eigen::Index>(i);
      // Minimising: EI of -log time above -best.
      const double ei = ExpectedImprovement{}.score(-mean(r), sd(r), -best);
      const double score = std::log(std::max(ei, std::numeric_limits<double>::min())) + log_ok[i];
      if (score > pick_score) {
        pick_score = score;
        pick = i;
      }
    }
    return pick;
  }

  // The models' features: per knob of more than one value, its value's position over
  // the range (ordered knobs) or one-hot scaled by 1/sqrt 2 (the others).
  static Eigen::MatrixXd model_features(const SearchSpace& space, std::span<const Config> configs) {
    std::size_t columns = 0;
    for (std::size_t k = 0; k < space.dimensions(); ++k) {
      const Knob& knob = space.knob(k);
      if (knob.size() > 1) columns += knob.ordered() ? 1 : knob.size();
    }
    Eigen::MatrixXd X = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(configs.size()),
                                              static_cast<Eigen::Index>(columns));
    const double one_hot = std::sqrt(0.5);
    for (std::size_t r = 0; r < configs.size(); ++r) {
      Eigen::Index col = 0;
      for (std::size_t k = 0; k < space.dimensions(); ++k) {
        const Knob& knob = space.knob(k);
        if (knob.size() < 2) continue;
        const auto row = static_cast<Eigen::Index>(r);
        if (knob.ordered()) {
          X(row, col++) = static_cast<double>(configs[r][k]) / static_cast<double>(knob.size() - 1);
        } else {
          X(row, col + static_cast<Eigen::Index>(configs[r][k])) = one_hot;
          col += static_cast<Eigen::Index>(knob.size());
        }
      }
    }
    return X;
  }

  // Up to `samples` random valid configs that differ from `c` in exactly two knobs (32 attempts
  // each), offered to `consider`; returns how many it took.
  template <class Consider>
  std::size_t two_knob_moves(const SearchContext& ctx, const Config& c, Rng& rng, Consider& consider) const {
    std::vector<std::size_t> movable;
    for (std::size_t k = 0; k < ctx.space.dimensions(); ++k)
      if (ctx.space.knob(k).size() > 1) movable.push_back(k);
    if (movable.size() < 2) return 0;
    std::size_t taken = 0;
    for (std::size_t attempt = 0; taken < params_.samples && attempt < 32 * params_.samples; ++attempt) {
      Config x = c;
      const auto [a, b] = distinct_pair(rng, movable.size());
      for (const std::size_t k : {movable[a], movable[b]}) {
        auto v = static_cast<std::uint32_t>(uniform_index(rng, ctx.space.knob(k).size() - 1));
        x[k] = v >= c[k] ? v + 1 : v;  // any value but c's
      }
      ctx.space.settle(x);
      if (x != c && ctx.space.is_valid(x)) taken += consider(std::move(x), kLocal);
    }
    return taken;
  }

  // For each one-knob move (k, v) of `c` that is invalid, the unvisited valid configs with value
  // v at k that differ from `c` in the fewest knobs (one of them, drawn uniformly when several
  // tie), offered to `consider`; returns how many it took. Scans the valid configs (spaces whose
  // product SearchSpace enumerates only).
  template <class Consider>
  std::size_t repair_moves(const SearchContext& ctx, const Config& c, Rng& rng, Consider& consider) const {
    const SearchSpace& s = ctx.space;
    if (s.product_size() > SearchSpace::enumeration_limit) return 0;
    const std::size_t d = s.dimensions();
    std::vector<std::size_t> offset(d + 1, 0);  // (k, v) -> offset[k] + v
    for (std::size_t k = 0; k < d; ++k) offset[k + 1] = offset[k] + s.knob(k).size();
    std::vector<char> blocked(offset[d], 0);
    bool any = false;
    for (std::size_t k = 0; k < d; ++k)
      for (std::uint32_t v = 0; v < s.knob(k).size(); ++v) {
        if (v == c[k]) continue;
        Config x = c;
        x[k] = v;
        s.settle(x);
        if (!s.is_valid(x)) {
          blocked[offset[k] + v] = 1;
          any = true;
        }
      }
    if (!any) return 0;
    std::vector<std::size_t> best(offset[d], d + 1), ties(offset[d], 0);
    std::vector<std::uint64_t> pick(offset[d], 0);
    std::vector<std::size_t> diff;
    s.for_each_valid([&](std::uint64_t idx) {
      if (ctx.visited.contains(idx)) return;
      const Config x = s.from_index(idx);
      diff.clear();
      for (std::size_t k = 0; k < d; ++k)
        if (x[k] != c[k]) diff.push_back(k);
      for (const std::size_t k : diff) {
        const std::size_t slot = offset[k] + x[k];
        if (!blocked[slot] || diff.size() > best[slot]) continue;
        if (diff.size() < best[slot]) best[slot] = diff.size(), ties[slot] = 0;
        if (uniform_index(rng, ++ties[slot]) == 0) pick[slot] = idx;  // reservoir: uniform among ties
      }
    });
    std::size_t taken = 0;
    for (std::size_t slot = 0; slot < offset[d]; ++slot)
      if (blocked[slot] && ties[slot] > 0) taken += consider(s.from_index(pick[slot]), kLocal);
    return taken;
  }

  // Two distinct positions in [0, n), n >= 2, drawn uniformly.
  static std::pair<std::size_t, std::size_t> distinct_pair(Rng& rng, std::size_t n) {
    const std::size_t a = uniform_index(rng, n);
    const std::size_t b = uniform_index(rng, n - 1);
    return {a, b >= a ? b + 1 : b};
  }

  // Up to `crossovers` children of two distinct configs among the `parents` best of `ok` (sorted,
  // fastest first), each knob's value from either parent, offered to `consider`; returns how many
  // it took.
  template <class Consider>
  std::size_t crossovers(const SearchContext& ctx, const std::vector<const Trial*>& ok, std::size_t parents,
                         Rng& rng, Consider& consider) const {
    parents = std::min(parents, ok.size());
    if (params_.crossovers == 0 || parents < 2) return 0;
    std::size_t taken = 0;
    for (std::size_t attempt = 0; taken < params_.crossovers && attempt < 32 * params_.crossovers; ++attempt) {
      const auto [a, b] = distinct_pair(rng, parents);
      Config x = ok[a]->config;
      for (std::size_t k = 0; k < x.size(); ++k)
        if (uniform_index(rng, 2) == 1) x[k] = ok[b]->config[k];
      ctx.space.settle(x);
      if (ctx.space.is_valid(x)) taken += consider(std::move(x), kCrossover);
    }
    return taken;
  }

  TreeParzenParams params_{};
  TreeParzenRound last_{};
  // The last fits of the model start's and the model source's Gaussian processes.
  WarmStart start_warm_{}, source_warm_{};
  // The source (kGlobal, kLocal, kCrossover, kModel) of each proposed config not measured yet,
  // and each source's hits and misses so far.
  std::unordered_map<std::uint64_t, int> source_{};
  double hits_[kSources]{};
  double misses_[kSources]{};
};
}  // namespace detail

/// detail::TreeParzenImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using TreeParzen = detail::TreeParzenImpl<>;

static_assert(Optimizer<TreeParzen>);

}  // namespace tunekit
