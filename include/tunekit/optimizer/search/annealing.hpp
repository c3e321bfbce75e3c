#pragma once
/// \file
/// AnnealingSearch: simulated annealing over the acquisition (AutoTVM's
/// SimulatedAnnealingOptimizer). A Search of ModelBased.

#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/core/parallel_gate.hpp"
#include "tunekit/optimizer/candidate_list.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <span>
#include <stdexcept>
#include <vector>

namespace tunekit {

/// Parameters of AnnealingSearch; defaults are AutoTVM's (autotvm/tuner/sa_model_optimizer.py).
struct AnnealingParams {
  /// Markov chains walked side by side (capped at the size of the space).
  std::size_t parallel_size = 128;
  /// Iterations per search.
  std::size_t n_iter = 500;
  /// The temperature falls linearly from temp_start towards temp_end over n_iter + 1 steps.
  double temp_start = 1.0;
  double temp_end = 0.0;
  /// Stop after this many iterations without a change of the top list.
  std::size_t early_stop = 50;
  /// Keep the chains' positions between searches (rounds).
  bool persistent = true;
  /// Draws of a neighbour before a chain gives up and stays put for the iteration (a constraint
  /// may reject neighbours; AutoTVM's spaces have none).
  std::size_t max_walk_tries = 64;
  /// Chains walked and scored together (one call of the score function).
  std::size_t block_size = 16;
  /// Parallelise over blocks only when scoring all chains once takes at least this long.
  double parallel_min_seconds = 1e-3;

  void validate() const {
    if (parallel_size < 1) throw std::invalid_argument("AnnealingParams: parallel_size must be >= 1");
    if (early_stop < 1) throw std::invalid_argument("AnnealingParams: early_stop must be >= 1");
    if (!std::isfinite(temp_start) || !std::isfinite(temp_end))
      throw std::invalid_argument("AnnealingParams: temperatures must be finite");
    if (max_walk_tries < 1) throw std::invalid_argument("AnnealingParams: max_walk_tries must be >= 1");
    if (block_size < 1) throw std::invalid_argument("AnnealingParams: block_size must be >= 1");
  }
};

namespace detail {

/// AutoTVM's model optimizer: parallel_size Markov chains over the space maximise the
/// acquisition score. Each iteration moves every chain to a random neighbour (one random knob
/// set to a random other value, valid under the constraints), accepts it with probability
///     exp(min((score_new - score_old) / (t + 1e-5), 1)),
/// lowers t linearly, and offers every new point to a top list of the best `num` configs that
/// are not visited. It stops after n_iter iterations or early_stop iterations without a change of
/// the top list. The chains persist to the next search. (AutoTVM also drops top-list entries
/// with a negative score; tunekit keeps them, since scores such as a rank model's are only
/// meaningful in their order.)
///
/// Each iteration walks and scores the chains in fixed blocks of block_size, in parallel over the
/// blocks with OpenMP (ctx.score is then called concurrently) when scoring all chains once took
/// at least parallel_min_seconds (below that, a barrier per iteration costs more than it saves,
/// and much more on a loaded machine) and the iterations' ParallelGate finds parallel
/// iterations faster than serial ones (it does not when another process holds a core). Every chain draws from its own generator, derived from
/// the caller's in chain order, and the blocks do not depend on the threads: a seed gives the
/// same search for any thread count.
template <class = void>
class AnnealingSearchImpl {
 public:
  AnnealingSearchImpl() = default;
  explicit AnnealingSearchImpl(AnnealingParams params) : params_(params) { params_.validate(); }

  /// The top `num` unvisited configs by score, best first (fewer when the chains met fewer).
  /// Requires ctx.score.
  std::vector<Candidate> find_maximums(const SearchContext& ctx, std::size_t num, Rng& rng) {
    params_.validate();
    if (!ctx.score) throw std::logic_error("AnnealingSearch: the context has no score function");
    const SearchSpace& space = ctx.space;
    const std::size_t chains =
        static_cast<std::size_t>(std::min<std::uint64_t>(params_.parallel_size, space.product_size()));
    if (!params_.persistent || points_.size() != chains ||
        (!points_.empty() && points_.front().size() != space.dimensions())) {
      points_.clear();
      for (std::size_t i = 0; i < chains; ++i) points_.push_back(space.sample(rng));
    }
    std::vector<Rng> chain_rng;
    chain_rng.reserve(chains);
    for (std::size_t i = 0; i < chains; ++i) chain_rng.push_back(derive_stream(rng, i));

    CandidateList top(num, ctx.visited);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> scores = ctx.score(points_);
    const double initial_scoring_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t i = 0; i < chains; ++i) top.offer(points_[i], space.to_index(points_[i]), scores[i]);

    const double cool = (params_.temp_start - params_.temp_end) / static_cast<double>(params_.n_iter + 1);
    double t = params_.temp_start;
    std::vector<Config> next(chains);
    std::vector<double> next_scores(chains);
    const std::size_t blocks = (chains + params_.block_size - 1) / params_.block_size;
    const bool may_parallel = blocks > 1 && detail::max_threads() > 1 &&
                              initial_scoring_seconds >= params_.parallel_min_seconds;
    std::size_t k = 0, k_last_modify = 0;
    while (k < params_.n_iter && k < k_last_modify + params_.early_stop) {
      // The chains are walked and scored in fixed blocks, in parallel when that pays. An
      // exception may not leave an OpenMP region: the first one is kept and rethrown after it.
      std::exception_ptr error;
      static detail::ParallelGate gate;
      const bool parallel = may_parallel && gate.choose();
      const detail::GatedRun timed(gate, parallel, static_cast<double>(chains), may_parallel);
#pragma omp parallel for schedule(static) if (parallel)
      for (std::ptrdiff_t b = 0; b < static_cast<std::ptrdiff_t>(blocks); ++b) {
        try {
          const std::size_t lo = static_cast<std::size_t>(b) * params_.block_size;
          const std::size_t hi = std::min(chains, lo + params_.block_size);
          for (std::size_t c = lo; c < hi; ++c) next[c] = random_walk(space, points_[c], chain_rng[c]);
          const auto block_scores = ctx.score(std::span<const Config>(next).subspan(lo, hi - lo));
          if (block_scores.size() != hi - lo)
            throw std::logic_error("AnnealingSearch: the score function returned the wrong number of scores");
          std::copy(block_scores.begin(), block_scores.end(), next_scores.begin() + static_cast<std::ptrdiff_t>(lo));
        } catch (...) {
#pragma omp critical(tunekit_annealing_error)
          if (!error) error = std::current_exception();
        }
      }
      if (error) std::rethrow_exception(error);
      for (std::size_t i = 0; i < chains; ++i) {
        const double accept = std::exp(std::min((next_scores[i] - scores[i]) / (t + 1e-5), 1.0));
        if (uniform_real(chain_rng[i]) < accept) {
          points_[i] = next[i];
          scores[i] = next_scores[i];
        }
      }
      for (std::size_t i = 0; i < chains; ++i)
        if (top.offer(next[i], space.to_index(next[i]), next_scores[i])) k_last_modify = k;
      ++k;
      t -= cool;
    }
    iterations_ = k;
    return top.sorted();
  }

  const AnnealingParams& params() const noexcept { return params_; }
  /// The chains' current positions.
  const std::vector<Config>& chains() const noexcept { return points_; }
  /// Iterations the last search ran.
  std::size_t iterations() const noexcept { return iterations_; }

  /// One random knob set to a random other value, valid under the constraints; `c` itself when
  /// max_walk_tries draws found no valid neighbour (or no knob has two values).
  Config random_walk(const SearchSpace& space, const Config& c, Rng& rng) const {
    std::size_t free_knobs = 0;
    for (std::size_t k = 0; k < space.dimensions(); ++k) free_knobs += space.knob(k).size() > 1;
    if (free_knobs == 0) return c;
    Config n = c;
    for (std::size_t tries = 0; tries < params_.max_walk_tries; ++tries) {
      std::size_t k;
      do k = static_cast<std::size_t>(uniform_index(rng, space.dimensions()));
      while (space.knob(k).size() < 2);
      // A uniformly random value other than the current one.
      auto v = static_cast<std::uint32_t>(uniform_index(rng, space.knob(k).size() - 1));
      if (v >= c[k]) ++v;
      n[k] = v;
      space.settle(n);  // a knob this step made inactive takes its value (SearchSpace::add_inactive)
      if (n != c && space.is_valid(n)) return n;
      n = c;
    }
    return c;
  }

 private:
  AnnealingParams params_{};
  std::vector<Config> points_;
  std::size_t iterations_ = 0;
};
}  // namespace detail

/// detail::AnnealingSearchImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using AnnealingSearch = detail::AnnealingSearchImpl<>;

static_assert(Search<AnnealingSearch>);

}  // namespace tunekit
