#include <tunekit/optimizer/contextual_annealing.hpp>
#include <tunekit/optimizer/random_search.hpp>
#include <tunekit/optimizer/simulated_annealing.hpp>

#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <unordered_set>

namespace {

using tunekit::Config;
using tunekit::SearchSpace;

// Six knobs of 16 values (16.7 million configs), a third of them invalid (sum % 3 == 0), and
// f(x) = -sum_k (x_k - a_k)^2 with its unique maximum 0 at the valid config a.
const Config peak = {3, 12, 7, 9, 1, 14};
constexpr const char* knob_names[] = {"k0", "k1", "k2", "k3", "k4", "k5"};

SearchSpace bowl_space() {
  SearchSpace s;
  for (const char* name : knob_names) s.add(tunekit::Knob::range(name, 0, 15));
  s.add_constraint("sum % 3 != 0", [](const tunekit::ConfigView& v) {
    std::int64_t sum = 0;
    for (const char* name : knob_names) sum += v[name];
    return sum % 3 != 0;
  });
  return s;
}

double bowl(const Config& c) {
  double f = 0;
  for (std::size_t k = 0; k < c.size(); ++k) f -= (double(c[k]) - double(peak[k])) * (double(c[k]) - double(peak[k]));
  return f;
}

std::vector<double> score_bowl(std::span<const Config> cs) {
  std::vector<double> out;
  for (const auto& c : cs) out.push_back(bowl(c));
  return out;
}

struct Fixture {
  SearchSpace space = bowl_space();
  tunekit::History history;
  std::unordered_set<std::uint64_t> visited;
  tunekit::SearchContext ctx() const { return {space, history, visited, score_bowl, 1.0, {}, 1.0}; }
};

}  // namespace

TEST_CASE("annealing finds the maximum of a known function far more often than random sampling") {
  REQUIRE(bowl_space().is_valid(peak));
  Fixture fx;
  const auto ctx = fx.ctx();
  int annealing_hits = 0, random_hits = 0;
  std::size_t max_evaluations = 0;
  const int seeds = 20;
  for (int seed = 0; seed < seeds; ++seed) {
    tunekit::Rng rng(static_cast<std::uint64_t>(seed));
    tunekit::AnnealingSearch sa;
    const auto top = sa.find_maximums(ctx, 64, rng);
    REQUIRE(!top.empty());
    annealing_hits += top.front().config == peak;
    // Random sampling with as many evaluations as the annealing made.
    const std::size_t evaluations = sa.chains().size() * (sa.iterations() + 1);
    max_evaluations = std::max(max_evaluations, evaluations);
    tunekit::Rng rr(static_cast<std::uint64_t>(1000 + seed));
    double best = -std::numeric_limits<double>::infinity();
    Config arg;
    for (std::size_t i = 0; i < evaluations; ++i) {
      Config c = fx.space.sample(rr);
      if (bowl(c) > best) best = bowl(c), arg = c;
    }
    random_hits += arg == peak;
  }
  MESSAGE("annealing found the peak in " << annealing_hits << "/" << seeds << " searches, random sampling in "
                                         << random_hits << " (at most " << max_evaluations << " evaluations)");
  // At most 128 x 501 evaluations of 11.2 million valid configs: random sampling finds the peak
  // with probability below 0.6% per search.
  CHECK(max_evaluations <= 128 * 501);
  CHECK(annealing_hits >= 19);
  CHECK(random_hits <= 2);
}

TEST_CASE("the annealing's top list is sorted, unvisited, distinct and valid, and the chains persist") {
  Fixture fx;
  tunekit::Rng rng(3);
  tunekit::AnnealingSearch sa;
  fx.visited.insert(fx.space.to_index(peak));  // the peak is taken: never proposed
  const auto top = sa.find_maximums(fx.ctx(), 64, rng);
  REQUIRE(top.size() == 64);
  std::set<std::uint64_t> seen;
  for (std::size_t i = 0; i < top.size(); ++i) {
    CHECK(fx.space.is_valid(top[i].config));
    CHECK(top[i].index == fx.space.to_index(top[i].config));
    CHECK(top[i].score == bowl(top[i].config));
    CHECK(!fx.visited.contains(top[i].index));
    CHECK(seen.insert(top[i].index).second);
    if (i > 0) CHECK(top[i - 1].score >= top[i].score);
  }
  // The second best configs of the bowl score -1: the peak's valid neighbours at distance 1.
  CHECK(top.front().score == -1.0);
  const auto chains = sa.chains();
  CHECK(chains.size() == 128);
  for (const auto& c : chains) CHECK(fx.space.is_valid(c));
  // A persistent search continues from where the chains stopped: they start near the peak.
  tunekit::AnnealingSearch fresh;
  tunekit::Rng r1(4), r2(4);
  (void)sa.find_maximums(fx.ctx(), 64, r1);
  (void)fresh.find_maximums(fx.ctx(), 64, r2);
  CHECK(sa.iterations() < fresh.iterations());
}

TEST_CASE("the annealing is identical for 1 and 2 threads, in parallel or not") {
  Fixture fx;
  auto run = [&](int threads, double parallel_min_seconds) {
    omp_set_num_threads(threads);
    tunekit::AnnealingSearch sa({.parallel_min_seconds = parallel_min_seconds});
    tunekit::Rng rng(11);
    std::vector<Config> out;
    for (int round = 0; round < 2; ++round)
      for (const auto& c : sa.find_maximums(fx.ctx(), 16, rng)) out.push_back(c.config);
    out.insert(out.end(), sa.chains().begin(), sa.chains().end());
    return out;
  };
  const int saved = omp_get_max_threads();
  const auto serial = run(1, 0.0);
  const auto parallel = run(2, 0.0);
  const auto unforced = run(2, std::numeric_limits<double>::infinity());
  omp_set_num_threads(saved);
  CHECK(serial == parallel);
  CHECK(serial == unforced);
}

TEST_CASE("a neighbour differs in exactly one knob and is valid") {
  const SearchSpace s = bowl_space();
  tunekit::AnnealingSearch sa;
  tunekit::Rng rng(5);
  Config c = s.sample(rng);
  for (int i = 0; i < 1000; ++i) {
    const Config n = sa.random_walk(s, c, rng);
    int diff = 0;
    for (std::size_t k = 0; k < c.size(); ++k) diff += n[k] != c[k];
    CHECK(diff == 1);
    CHECK(s.is_valid(n));
    c = n;
  }
  // A config whose every neighbour is invalid stays put.
  SearchSpace lonely;
  lonely.add(tunekit::Knob::range("a", 0, 3)).add(tunekit::Knob::range("b", 0, 3));
  lonely.add_constraint("a == b", [](const tunekit::ConfigView& v) { return v["a"] == v["b"]; });
  CHECK(sa.random_walk(lonely, Config{2, 2}, rng) == Config{2, 2});
}

TEST_CASE("a random step that makes knobs inactive settles them, so one step crosses between layouts") {
  // "blk" is used by layout 1 only: from layout 1 with blk 8, the step to layout 0 lands on blk 1;
  // a step of blk in layout 0 is no move, so every step the walk takes is a real one.
  SearchSpace s;
  s.add(tunekit::Knob::categorical("layout", {"plain", "blocked"})).add(tunekit::Knob::power_of_two("blk", 1, 8));
  s.add_inactive("blk", "1", "layout == plain", [](const tunekit::ConfigView& v) { return v["layout"] == 0; });
  tunekit::AnnealingSearch sa;
  tunekit::Rng rng(3);
  std::size_t crossed = 0;
  for (int i = 0; i < 200; ++i) {
    const Config n = sa.random_walk(s, Config{1, 3}, rng);
    CHECK(s.is_valid(n));
    CHECK(n != Config{1, 3});
    crossed += n == Config{0, 0};
  }
  // Four moves (blk 1, 2, 4 within the layout, or the crossing), uniform over knob then value:
  // the crossing is drawn with probability 1/2 per try.
  CHECK(crossed > 60);
  CHECK(crossed < 140);
  for (int i = 0; i < 50; ++i) CHECK(sa.random_walk(s, Config{0, 0}, rng) == Config{1, 0});
}

TEST_CASE("without a model the annealing optimizer proposes exactly what random search does") {
  Fixture fx;
  tunekit::SearchContext ctx{fx.space, fx.history, fx.visited};
  tunekit::SimulatedAnnealing sa;
  tunekit::Rng a(9), b(9);
  CHECK(sa.propose(ctx, 20, a) == tunekit::RandomSearch{}.propose(ctx, 20, b));
}

TEST_CASE("epsilon-greedy: a fraction epsilon of each batch is random, the rest the annealing's best") {
  Fixture fx;
  const auto ctx = fx.ctx();
  SUBCASE("epsilon 0: every pick is one of the annealing's best") {
    tunekit::Annealing<tunekit::FixedEpsilon> sa({}, {.epsilon_value = 0.0});
    tunekit::Rng rng(1);
    const auto batch = sa.propose(ctx, 32, rng);
    REQUIRE(batch.size() == 32);
    CHECK(sa.last_batch().random == 0);
    CHECK(batch.front() == peak);
    // The 32 best configs of the bowl are within squared distance 3 of the peak.
    for (const auto& c : batch) CHECK(bowl(c) >= -3.0);
  }
  SUBCASE("epsilon 1: every pick is random") {
    tunekit::Annealing<tunekit::FixedEpsilon> sa({}, {.epsilon_value = 1.0});
    tunekit::Rng rng(1);
    const auto batch = sa.propose(ctx, 32, rng);
    CHECK(sa.last_batch().random == 32);
    std::size_t near = 0;
    for (const auto& c : batch) near += bowl(c) >= -3.0;
    CHECK(near == 0);
  }
  SUBCASE("AutoTVM's 0.05 of a 64-config plan: 3 or 4 random configs, 3.2 on average") {
    tunekit::SimulatedAnnealing sa({.n_iter = 20});
    tunekit::Rng rng(2);
    double total = 0;
    for (int i = 0; i < 200; ++i) {
      const auto batch = sa.propose(ctx, 64, rng);
      CHECK(batch.size() == 64);
      CHECK((sa.last_batch().random == 3 || sa.last_batch().random == 4));
      total += static_cast<double>(sa.last_batch().random);
    }
    CHECK(total / 200 == doctest::Approx(3.2).epsilon(0.1));
  }
  SUBCASE("a batch never holds a visited or repeated config") {
    fx.visited.insert(fx.space.to_index(peak));
    tunekit::SimulatedAnnealing sa;
    tunekit::Rng rng(3);
    const auto batch = sa.propose(fx.ctx(), 64, rng);
    std::set<Config> distinct(batch.begin(), batch.end());
    CHECK(distinct.size() == batch.size());
    CHECK(!distinct.contains(peak));
  }
}

TEST_CASE("bad annealing parameters are rejected") {
  CHECK_THROWS_AS(tunekit::AnnealingSearch({.parallel_size = 0}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::AnnealingSearch({.early_stop = 0}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::AnnealingSearch({.block_size = 0}), std::invalid_argument);
  Fixture fx;
  tunekit::Annealing<tunekit::FixedEpsilon> sa({}, {.epsilon_value = 1.5});
  tunekit::Rng rng(1);
  CHECK_THROWS_AS((void)sa.propose(fx.ctx(), 4, rng), std::invalid_argument);
}

TEST_CASE("an exception from the score function reaches the caller, in parallel or not") {
  Fixture fx;
  tunekit::SearchContext ctx{fx.space, fx.history, fx.visited,
                             [](std::span<const Config> cs) -> std::vector<double> {
                               if (cs.size() < 128) throw std::runtime_error("model broke");
                               return std::vector<double>(cs.size(), 0.0);
                             },
                             1.0, {}, 1.0};
  for (double parallel_min_seconds : {0.0, std::numeric_limits<double>::infinity()}) {
    tunekit::AnnealingSearch sa({.parallel_min_seconds = parallel_min_seconds});
    tunekit::Rng rng(1);
    CHECK_THROWS_WITH_AS((void)sa.find_maximums(ctx, 8, rng), "model broke", std::runtime_error);
  }
}
