#include <tunekit/optimizer/pick/kmeans_sampler.hpp>
#include <tunekit/optimizer/policy_gradient.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <unordered_set>
#include <vector>

namespace {

using tunekit::Config;
using tunekit::SearchSpace;

// Four knobs of 16 values and a score in [0, 1] that falls linearly with the L1 distance to a
// summit: 1 at the peak, 0 at the farthest corner.
const Config summit = {3, 12, 7, 10};

SearchSpace grid4() {
  SearchSpace s;
  for (const char* name : {"a", "b", "c", "d"}) s.add(tunekit::Knob::range(name, 0, 15));
  return s;
}

double peak_score(const Config& c) {
  double d = 0;
  for (std::size_t k = 0; k < 4; ++k) d += std::abs(double(c[k]) - double(summit[k]));
  return 1.0 - d / 48.0;  // the farthest corner is 12 + 12 + 8 + 10 = 42 away; 48 bounds it
}

std::vector<double> score_peak(std::span<const Config> cs) {
  std::vector<double> out;
  for (const auto& c : cs) out.push_back(peak_score(c));
  return out;
}

// The same walk with uniformly random actions: `walkers` walkers from random starts, each knob
// moved by -1, 0 or +1 (clamped) per step; the mean score per step and walker.
double random_walk_reward(const SearchSpace& s, std::size_t walkers, std::size_t steps, tunekit::Rng& rng) {
  double sum = 0;
  for (std::size_t w = 0; w < walkers; ++w) {
    Config c = s.sample(rng);
    for (std::size_t t = 0; t < steps; ++t) {
      for (auto& v : c) v = static_cast<std::uint32_t>(std::clamp<std::int64_t>(std::int64_t{v} + static_cast<std::int64_t>(tunekit::uniform_index(rng, 3)) - 1, 0, 15));
      sum += peak_score(c);
    }
  }
  return sum / static_cast<double>(walkers * steps);
}

}  // namespace

TEST_CASE("the PPO agent learns to walk towards high scores") {
  const SearchSpace s = grid4();
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  const tunekit::SearchContext ctx{s, h, visited, score_peak, 1.0, {}, 1.0};
  const std::size_t walkers = 32, steps = 100;
  tunekit::PpoSearch agent({.episodes = walkers, .max_steps = steps, .early_stop = steps, .horizon = 20});
  tunekit::Rng rng(17);
  std::vector<double> rewards;
  for (int search = 0; search < 12; ++search) {
    (void)agent.find_maximums(ctx, 16, rng);
    CHECK(agent.steps() == steps);
    rewards.push_back(agent.mean_reward());
  }
  tunekit::Rng rr(17);
  const double random = random_walk_reward(s, walkers, steps, rr);
  MESSAGE("PPO mean reward per step by search: first " << rewards.front() << ", last " << rewards.back()
                                                       << "; random walk " << random);
  // A walk that reaches the peak and stays there earns about 0.9 over 100 steps from a random
  // start; a random walk about the mean score of the space (~0.6).
  CHECK(rewards.back() > random + 0.15);
  CHECK(agent.updates() == steps / 20);
}

TEST_CASE("the PPO search is deterministic per seed and proposes valid unvisited configs") {
  // A constrained space (sum % 3 != 0) with a third of the configs invalid.
  SearchSpace s;
  for (const char* name : {"a", "b", "c"}) s.add(tunekit::Knob::range(name, 0, 9));
  s.add_constraint("sum % 3 != 0", [](const tunekit::ConfigView& v) { return (v["a"] + v["b"] + v["c"]) % 3 != 0; });
  tunekit::History h;
  auto score = [](std::span<const Config> cs) {
    std::vector<double> v;
    for (const auto& c : cs) v.push_back(-std::abs(double(c[0]) - 7) - std::abs(double(c[1]) - 2) - std::abs(double(c[2]) - 5));
    return v;
  };
  auto run = [&](std::uint64_t seed) {
    tunekit::Rng rng(seed);
    tunekit::PolicyGradient opt(tunekit::PpoParams{.episodes = 16, .max_steps = 60});
    std::vector<Config> all;
    std::unordered_set<std::uint64_t> seen;
    for (int round = 0; round < 3; ++round) {
      const tunekit::SearchContext ctx{s, h, seen, score, 1.0, {}, 1.0};
      const auto batch = opt.propose(ctx, 32, rng);
      CHECK(batch.size() == 32);
      for (const auto& c : batch) {
        CHECK(s.is_valid(c));
        CHECK(seen.insert(s.to_index(c)).second);
        all.push_back(c);
      }
    }
    return all;
  };
  const auto a = run(5), b = run(5), c = run(6);
  CHECK(a == b);
  CHECK(a != c);
  // The agent's best candidate of the first round is the peak (7, 2, 5) or next to it.
  CHECK(score(std::span<const Config>(a).first(1))[0] >= -1.0);
}

TEST_CASE("PPO's repair settles each step, so a repaired move can switch layout and make knobs inactive") {
  // blk is used by the blocked layout only (inactive at 1 in plain); u must stay at most 1. From
  // (blocked, blk 8, u 0) the target (plain, blk 1, u 3) is invalid (u). The repair tries the
  // three knobs' moves in a random order: u's is never valid, and the layout's, settled (blk
  // goes to 1 with it), is valid whatever came before, so every repair lands on (plain, 1, 0).
  // Without settling, the layout's step alone (plain, blk 8) breaks the inactive constraint and
  // is kept only where blk's step came first: in half of the orders.
  SearchSpace s;
  s.add(tunekit::Knob::categorical("layout", {"plain", "blocked"}))
      .add(tunekit::Knob::power_of_two("blk", 1, 8))
      .add(tunekit::Knob::range("u", 0, 3));
  s.add_inactive("blk", "1", "layout == plain", [](const tunekit::ConfigView& v) { return v["layout"] == 0; });
  s.add_constraint("u <= 1", [](const tunekit::ConfigView& v) { return v["u"] <= 1; });
  const Config from{1, 3, 0}, to{0, 0, 3};
  REQUIRE(s.is_valid(from));
  REQUIRE(!s.is_valid(to));
  tunekit::Rng rng(4);
  std::vector<std::size_t> order;
  for (int i = 0; i < 40; ++i) CHECK(tunekit::PpoSearch::repair(s, from, to, order, rng) == Config{0, 0, 0});
  // A target none of whose steps is valid: the walker stays.
  SearchSpace t;
  t.add(tunekit::Knob::range("a", 0, 3)).add(tunekit::Knob::range("b", 0, 3));
  t.add_constraint("a == b", [](const tunekit::ConfigView& v) { return v["a"] == v["b"]; });
  CHECK(tunekit::PpoSearch::repair(t, Config{1, 1}, Config{2, 0}, order, rng) == Config{1, 1});
}

TEST_CASE("PPO with the k-means sampler measures less than a plan per round") {
  const SearchSpace s = grid4();
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  tunekit::Ppo<tunekit::FixedEpsilon, tunekit::KMeansSampler> opt(tunekit::PpoParams{.episodes = 32, .max_steps = 100});
  tunekit::Rng rng(3);
  for (int round = 0; round < 3; ++round) {
    const tunekit::SearchContext ctx{s, h, visited, score_peak, 1.0, {}, 1.0};
    const auto batch = opt.propose(ctx, 64, rng);
    REQUIRE(!batch.empty());
    CHECK(batch.size() < 64);
    CHECK(batch.size() == opt.pick().last_pick().k + opt.last_batch().random);
    for (const auto& c : batch) CHECK(visited.insert(s.to_index(c)).second);
  }
}

TEST_CASE("PPO parameters are validated") {
  CHECK_THROWS_AS(tunekit::PpoSearch({.episodes = 0}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::PpoSearch({.discount = 1.5}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::PpoSearch({.learning_rate = -1.0}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::PpoSearch({.loss = {.clip = 0.0}}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::PpoSearch({.hidden = 0}), std::invalid_argument);
  const SearchSpace s = grid4();
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  const tunekit::SearchContext no_model{s, h, visited, {}, 0.0, {}, 0.0};
  tunekit::PpoSearch agent;
  tunekit::Rng rng(1);
  CHECK_THROWS_AS(agent.find_maximums(no_model, 8, rng), std::logic_error);
}
