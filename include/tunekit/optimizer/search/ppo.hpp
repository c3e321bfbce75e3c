#pragma once
/// \file
/// PpoSearch: Chameleon's adaptive exploration (Ahn et al., ICLR 2020, section 4.1), a PPO
/// actor-critic (Schulman et al. 2017; the network in stats/actor_critic.hpp) that walks the
/// search space against the acquisition over the surrogate. A Search of ModelBased.

#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/core/deferred.hpp"
#include "tunekit/optimizer/candidate_list.hpp"
#include "tunekit/stats/actor_critic.hpp"
#include "tunekit/stats/mlp.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

// GCC 12 reports false (maybe-)uninitialized warnings inside Eigen's AVX-512 code
// (-march=native); silence them for the code of this header only. (Eigen's vectorised exp and
// log of doubles are avoided altogether: their AVX-512 instantiations warn outside any pragma.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace tunekit {

/// Parameters of PpoSearch; the PPO hyperparameters are Chameleon's (Table 7/9).
struct PpoParams {
  /// Episodes walked side by side per search, each from a uniformly random valid config (capped
  /// at the size of the space).
  std::size_t episodes = 64;
  /// Steps per episode at most (Chameleon: 500).
  std::size_t max_steps = 500;
  /// Stop the search after this many steps without a change of the top list (as annealing's
  /// early stop; max_steps or more: walk every episode to max_steps).
  std::size_t early_stop = 50;
  /// Steps of every episode between two PPO updates: each update learns from episodes x horizon
  /// transitions.
  std::size_t horizon = 50;
  /// Epochs per update (Chameleon: 3). Each epoch shuffles the transitions and takes
  /// `minibatches_per_epoch` Adam steps on consecutive minibatches of `minibatch` of them
  /// (0: as many as cover all the transitions, a full pass). Chameleon's agent takes one
  /// minibatch per epoch; one keeps an update cheap (the network's cost dominates a round).
  std::size_t epochs = 3;
  std::size_t minibatch = 256;
  std::size_t minibatches_per_epoch = 1;
  /// Units of each hidden layer.
  std::size_t hidden = 32;
  /// Adam's step size (Chameleon: 1e-3).
  double learning_rate = 1e-3;
  /// gamma and lambda of the generalised advantage estimate (Chameleon: 0.9, 0.99).
  double discount = 0.9;
  double gae_lambda = 0.99;
  /// Clip, value and entropy coefficients of the loss (Chameleon: 0.3, 1.0, 0.1).
  PpoLossParams loss{};
  /// Keep the agent's weights (and Adam's moments) from one search (round) to the next.
  bool persistent = true;
  /// Learn while searching (false: walk with the current policy only).
  bool train = true;

  void validate() const {
    if (episodes < 1) throw std::invalid_argument("PpoParams: episodes must be >= 1");
    if (max_steps < 1) throw std::invalid_argument("PpoParams: max_steps must be >= 1");
    if (early_stop < 1) throw std::invalid_argument("PpoParams: early_stop must be >= 1");
    if (horizon < 1) throw std::invalid_argument("PpoParams: horizon must be >= 1");
    if (epochs < 1) throw std::invalid_argument("PpoParams: epochs must be >= 1");
    if (minibatch < 1) throw std::invalid_argument("PpoParams: minibatch must be >= 1");
    if (hidden < 1) throw std::invalid_argument("PpoParams: hidden must be >= 1");
    if (!(discount >= 0 && discount <= 1)) throw std::invalid_argument("PpoParams: discount must be in [0, 1]");
    if (!(gae_lambda >= 0 && gae_lambda <= 1)) throw std::invalid_argument("PpoParams: gae_lambda must be in [0, 1]");
    AdamParams{.learning_rate = learning_rate}.validate();
    loss.validate();
  }
};

namespace detail {

/// Chameleon's adaptive exploration: a PPO agent walks the space to maximise the acquisition.
///
/// The environment: the state is the config's knob indices divided by their knobs' number of
/// values; an action moves every knob at once by -1, 0 or +1 index (clamped to the knob's
/// range); the reward is the acquisition's score (ctx.score) of the config reached. A move that
/// breaks a constraint is repaired knob by knob: the knobs' moves are tried one at a time in a
/// random order and each one kept if the config stays valid; when none can be kept the walker
/// stays where it is and gets the lowest score seen in this search as its reward (a penalty on
/// the acquisition's own scale). Staying put by choice earns the current config's score again.
///
/// Each search starts `episodes` walkers at random valid configs and walks them side by side for
/// up to max_steps steps (one batched forward pass of the policy and one call of ctx.score per
/// step), stopping early when early_stop steps pass without a change of the top list (AutoTVM's
/// rule for annealing). Every config reached is offered to a top list of the best `num`
/// unvisited configs, returned best first. Every `horizon` steps (and at the end) the agent
/// learns from the walked transitions: generalised advantage estimates (gamma 0.9, lambda 0.99;
/// the value of the last state bootstraps the tail, since an episode's end is a time limit, not
/// a terminal state), advantages normalised to zero mean and unit variance, then `epochs` epochs
/// of Adam steps (lr 1e-3) on shuffled minibatches of the PPO loss (ActorCritic::ppo_loss:
/// clip 0.3, value coefficient 1, entropy coefficient 0.1). The network and Adam's state persist
/// from one search to the next (the rounds of one task); a space with another number of knobs
/// starts a new agent. Everything draws from the caller's generator in a fixed order: a seed
/// gives the same search.
template <class Lazy = void>
class PpoSearchImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;
  using RowVectorXd = Deferred<Eigen::RowVectorXd, Lazy>;

 public:
  PpoSearchImpl() = default;
  explicit PpoSearchImpl(PpoParams params) : params_(params) { params_.validate(); }

  /// The top `num` unvisited configs by score that the walkers reached, best first. Requires
  /// ctx.score.
  std::vector<Candidate> find_maximums(const SearchContext& ctx, std::size_t num, Rng& rng) {
    params_.validate();
    if (!ctx.score) throw std::logic_error("PpoSearch: the context has no score function");
    const std::size_t dims = ctx.space.dimensions();
    if (net_.empty() || net_.dims() != dims || net_.hidden() != params_.hidden || !params_.persistent) {
      net_ = ActorCritic(dims, params_.hidden, rng);
      adam_ = Adam(AdamParams{.learning_rate = params_.learning_rate, .epsilon = 1e-5});
    }
    Walk walk = start(ctx, num, rng);
    double reward_sum = 0;
    std::size_t step = 0, last_change = 0;
    updates_ = 0;
    while (step < params_.max_steps && step < last_change + params_.early_stop) {
      walk.states_of();
      net_.forward(walk.states, walk.log_probs, walk.values);
      const std::size_t t = walk.roll.steps;
      const auto w = static_cast<Eigen::Index>(walk.walkers);
      walk.roll.states.middleCols(static_cast<Eigen::Index>(t) * w, w) = walk.states;
      walk.roll.values.segment(static_cast<Eigen::Index>(t) * w, w) = walk.values;
      act(ctx.space, walk, t, rng);
      if (score_moves(ctx, walk, t)) last_change = step;
      reward_sum += walk.roll.rewards.segment(static_cast<Eigen::Index>(t) * w, w).sum();
      ++walk.roll.steps;
      ++step;
      const bool last = !(step < params_.max_steps && step < last_change + params_.early_stop);
      if (walk.roll.steps == walk.horizon || last) {
        if (params_.train) {
          walk.states_of();
          net_.forward(walk.states, walk.log_probs, walk.values);
          learn(walk.roll, walk.values, rng);
        }
        walk.roll.steps = 0;
      }
    }
    steps_ = step;
    mean_reward_ = step > 0 ? reward_sum / static_cast<double>(step * walk.walkers) : 0.0;
    return walk.top.sorted();
  }

  const PpoParams& params() const noexcept { return params_; }
  /// The agent (its weights persist between searches).
  const ActorCritic& agent() const noexcept { return net_; }
  /// Steps the last search walked, its mean reward per step and walker, and the PPO updates it
  /// made.
  std::size_t steps() const noexcept { return steps_; }
  double mean_reward() const noexcept { return mean_reward_; }
  std::size_t updates() const noexcept { return updates_; }

  /// The repair of a move that breaks a constraint: the knobs' moves from `from` (valid) towards
  /// `to` applied one at a time in a random order, each kept when the config, settled
  /// (SearchSpace::settle: the knobs a move makes inactive take their values), stays valid. So a
  /// move between layouts that makes knobs inactive is kept (where a lone step to the layout
  /// would leave them at values its constraints forbid). Returns `from` when no move can be kept.
  /// `order` is scratch space.
  static Config repair(const SearchSpace& space, const Config& from, const Config& to, std::vector<std::size_t>& order,
                       Rng& rng) {
    order.clear();
    for (std::size_t k = 0; k < from.size(); ++k)
      if (from[k] != to[k]) order.push_back(k);
    for (std::size_t i = 0; i + 1 < order.size(); ++i)
      std::swap(order[i], order[i + uniform_index(rng, order.size() - i)]);
    Config c = from, step;
    for (std::size_t k : order) {
      if (c[k] == to[k]) continue;  // settled there by an earlier step
      step = c;
      step[k] = to[k];
      space.settle(step);
      if (space.is_valid(step)) c = step;
    }
    return c;
  }

 private:
  // The transitions of one horizon, step-major: column t * walkers + i is walker i at step t.
  struct Rollout {
    Rollout(std::size_t dims, std::size_t walkers, std::size_t horizon)
        : walkers(walkers),
          states(static_cast<Eigen::Index>(dims), static_cast<Eigen::Index>(walkers * horizon)),
          actions(static_cast<Eigen::Index>(dims), static_cast<Eigen::Index>(walkers * horizon)),
          old_log_prob(static_cast<Eigen::Index>(walkers * horizon)),
          values(static_cast<Eigen::Index>(walkers * horizon)),
          rewards(static_cast<Eigen::Index>(walkers * horizon)) {}
    std::size_t walkers;
    std::size_t steps = 0;
    MatrixXd states;
    Eigen::MatrixXi actions;
    RowVectorXd old_log_prob, values, rewards;
  };

  // One search's walkers: where they are, their scores, the rollout of the current horizon, the
  // top list, and the network's last outputs.
  struct Walk {
    Walk(const SearchSpace& s, std::size_t num, std::size_t walker_count, std::size_t horizon_steps,
         const std::unordered_set<std::uint64_t>& visited)
        : space(&s),
          walkers(walker_count),
          horizon(horizon_steps),
          roll(s.dimensions(), walker_count, horizon_steps),
          top(num, visited),
          inv_size(static_cast<Eigen::Index>(s.dimensions())),
          order(s.dimensions()) {
      for (std::size_t k = 0; k < s.dimensions(); ++k)
        inv_size[static_cast<Eigen::Index>(k)] = 1.0 / static_cast<double>(s.knob(k).size());
    }
    const SearchSpace* space;
    std::size_t walkers, horizon;
    Rollout roll;
    CandidateList top;
    RowVectorXd inv_size;
    std::vector<Config> points{}, moved{};
    std::vector<std::size_t> moved_walker{}, order;
    std::vector<double> scores{};
    double lowest = std::numeric_limits<double>::infinity();
    MatrixXd states{}, log_probs{};
    RowVectorXd values{};

    // The walkers' states: knob indices over their knobs' sizes, one column per walker.
    void states_of() {
      const auto d = inv_size.size();
      states.resize(d, static_cast<Eigen::Index>(walkers));
      for (std::size_t i = 0; i < walkers; ++i)
        for (Eigen::Index k = 0; k < d; ++k)
          states(k, static_cast<Eigen::Index>(i)) = points[i][static_cast<std::size_t>(k)] * inv_size[k];
    }
  };

  // The walkers at random valid configs, scored and offered to the top list.
  Walk start(const SearchContext& ctx, std::size_t num, Rng& rng) const {
    const std::size_t walkers =
        static_cast<std::size_t>(std::min<std::uint64_t>(params_.episodes, ctx.space.product_size()));
    Walk walk(ctx.space, num, walkers, std::min(params_.horizon, params_.max_steps), ctx.visited);
    walk.points.reserve(walkers);
    for (std::size_t i = 0; i < walkers; ++i) walk.points.push_back(ctx.space.sample(rng));
    walk.scores = checked_scores(ctx, walk.points);
    for (std::size_t i = 0; i < walkers; ++i) {
      walk.top.offer(walk.points[i], ctx.space.to_index(walk.points[i]), walk.scores[i]);
      walk.lowest = std::min(walk.lowest, walk.scores[i]);
    }
    return walk;
  }

  // Step t's actions: each walker's action per knob drawn from its softmax, the move clamped,
  // settled and repaired; a walker that stays is rewarded with its score (or the lowest seen, when
  // its move could not be repaired), the others' moves go to walk.moved to be scored.
  void act(const SearchSpace& space, Walk& walk, std::size_t t, Rng& rng) const {
    walk.moved.clear();
    walk.moved_walker.clear();
    for (std::size_t i = 0; i < walk.walkers; ++i) {
      const auto col = static_cast<Eigen::Index>(t * walk.walkers + i);
      double log_pi = 0;
      Config target = walk.points[i];
      for (std::size_t k = 0; k < space.dimensions(); ++k) {
        const double u = uniform_real(rng);
        int act = 2;
        double acc = 0;
        for (int a = 0; a < 2; ++a) {
          acc += std::exp(walk.log_probs(static_cast<Eigen::Index>(3 * k) + a, static_cast<Eigen::Index>(i)));
          if (u < acc) {
            act = a;
            break;
          }
        }
        walk.roll.actions(static_cast<Eigen::Index>(k), col) = act;
        log_pi += walk.log_probs(static_cast<Eigen::Index>(3 * k) + act, static_cast<Eigen::Index>(i));
        const auto size = static_cast<std::int64_t>(space.knob(k).size());
        target[k] = static_cast<std::uint32_t>(std::clamp<std::int64_t>(std::int64_t{target[k]} + act - 1, 0, size - 1));
      }
      walk.roll.old_log_prob[col] = log_pi;
      space.settle(target);  // knobs the moves made inactive take their values (SearchSpace::add_inactive)
      if (target == walk.points[i]) {
        walk.roll.rewards[col] = walk.scores[i];
        continue;
      }
      if (!space.is_valid(target)) target = repair(space, walk.points[i], target, walk.order, rng);
      if (target == walk.points[i]) {
        walk.roll.rewards[col] = walk.lowest;
        continue;
      }
      walk.moved.push_back(std::move(target));
      walk.moved_walker.push_back(i);
    }
  }

  // Scores step t's moves, rewards them, moves their walkers and offers them to the top list;
  // returns whether the top list changed.
  static bool score_moves(const SearchContext& ctx, Walk& walk, std::size_t t) {
    if (walk.moved.empty()) return false;
    bool changed = false;
    const std::vector<double> s = checked_scores(ctx, walk.moved);
    for (std::size_t m = 0; m < walk.moved.size(); ++m) {
      const std::size_t i = walk.moved_walker[m];
      walk.roll.rewards[static_cast<Eigen::Index>(t * walk.walkers + i)] = s[m];
      walk.lowest = std::min(walk.lowest, s[m]);
      if (walk.top.offer(walk.moved[m], ctx.space.to_index(walk.moved[m]), s[m])) changed = true;
      walk.points[i] = std::move(walk.moved[m]);
      walk.scores[i] = s[m];
    }
    return changed;
  }

  static std::vector<double> checked_scores(const SearchContext& ctx, std::span<const Config> cs) {
    std::vector<double> s = ctx.score(cs);
    if (s.size() != cs.size())
      throw std::logic_error("PpoSearch: the score function returned the wrong number of scores");
    return s;
  }

  // GAE over the rollout (bootstrapped with `last_values`, the values of the states after its
  // last step), then `epochs` passes of minibatch Adam on the PPO loss.
  void learn(const Rollout& roll, const RowVectorXd& last_values, Rng& rng) {
    const std::size_t walkers = roll.walkers;
    const std::size_t n = roll.steps * walkers;
    if (n == 0) return;
    RowVectorXd adv(static_cast<Eigen::Index>(n));
    const double gamma = params_.discount, lambda = params_.gae_lambda;
    for (std::size_t i = 0; i < walkers; ++i) {
      double next_value = last_values[static_cast<Eigen::Index>(i)];
      double gae = 0;
      for (std::size_t t = roll.steps; t-- > 0;) {
        const auto col = static_cast<Eigen::Index>(t * walkers + i);
        const double delta = roll.rewards[col] + gamma * next_value - roll.values[col];
        gae = delta + gamma * lambda * gae;
        adv[col] = gae;
        next_value = roll.values[col];
      }
    }
    const auto nn = static_cast<Eigen::Index>(n);
    const RowVectorXd target = adv + roll.values.head(nn);
    const double mean = adv.mean();
    const double sd = std::sqrt((adv.array() - mean).square().mean());
    adv = ((adv.array() - mean) / (sd > 1e-12 ? sd : 1.0)).matrix();

    std::vector<Eigen::Index> perm(n);
    for (std::size_t i = 0; i < n; ++i) perm[i] = static_cast<Eigen::Index>(i);
    const std::vector<ParameterBlock> blocks = net_.parameters();
    PpoBatch batch;
    for (std::size_t epoch = 0; epoch < params_.epochs; ++epoch) {
      for (std::size_t i = 0; i + 1 < n; ++i) std::swap(perm[i], perm[i + uniform_index(rng, n - i)]);
      const std::size_t steps = params_.minibatches_per_epoch;
      for (std::size_t lo = 0, m = 0; lo < n && (steps == 0 || m < steps); lo += params_.minibatch, ++m) {
        const std::vector<Eigen::Index> idx(perm.begin() + static_cast<std::ptrdiff_t>(lo),
                                            perm.begin() + static_cast<std::ptrdiff_t>(std::min(n, lo + params_.minibatch)));
        batch.states = roll.states(Eigen::all, idx);
        batch.actions = roll.actions(Eigen::all, idx);
        batch.old_log_prob = roll.old_log_prob(idx);
        batch.advantage = adv(idx);
        batch.target = target(idx);
        net_.ppo_loss(batch, params_.loss, true);
        adam_.step(blocks);
      }
    }
    ++updates_;
  }

  PpoParams params_{};
  ActorCritic net_{};
  Adam adam_{};
  std::size_t steps_ = 0;
  double mean_reward_ = 0.0;
  std::size_t updates_ = 0;
};
}  // namespace detail

/// detail::PpoSearchImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using PpoSearch = detail::PpoSearchImpl<>;

static_assert(Search<PpoSearch>);

}  // namespace tunekit

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
