#include <tunekit/optimizer/model_based.hpp>
#include <tunekit/optimizer/pick/kmeans_sampler.hpp>
#include <tunekit/optimizer/pick/top_pick.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

namespace {

using tunekit::Candidate;
using tunekit::Config;

// A search that finds the first `found` unvisited configs of the row a = 0, best first.
struct RowSearch {
  std::size_t found = 5;
  std::vector<Candidate> find_maximums(const tunekit::SearchContext& ctx, std::size_t num, tunekit::Rng&) {
    std::vector<Candidate> out;
    for (std::uint32_t b = 0; b < ctx.space.knob(1).size() && out.size() < std::min(num, found); ++b) {
      const Config c{0, b};
      const auto idx = ctx.space.to_index(c);
      if (!ctx.visited.contains(idx)) out.push_back({c, idx, -static_cast<double>(b)});
    }
    return out;
  }
};
static_assert(tunekit::Search<RowSearch>);

// TopPick's candidates, but measuring less on purpose: a batch is what it picks plus the random
// share.
struct TopPickMeasuringLess : tunekit::TopPick {
  static constexpr tunekit::Shortfall shortfall = tunekit::Shortfall::measure_less;
};
static_assert(tunekit::PickPolicy<TopPickMeasuringLess>);

}  // namespace

TEST_CASE("a model-based batch: the random share, the pick, and what fills a short pick") {
  tunekit::SearchSpace s;
  s.add(tunekit::Knob::range("a", 0, 31)).add(tunekit::Knob::range("b", 0, 31));
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  const tunekit::SearchContext ctx{s, h, visited, [](std::span<const Config> cs) { return std::vector<double>(cs.size()); },
                                   1.0, {}, 1.0};
  tunekit::Rng rng(4);
  SUBCASE("a pick short of candidates (fill_random): random configs fill the batch to n") {
    tunekit::ModelBased<RowSearch> opt({}, {.epsilon_value = 0.25});
    const auto batch = opt.propose(ctx, 16, rng);
    CHECK(batch.size() == 16);
    const tunekit::BatchReport& r = opt.last_batch();
    CHECK(r.epsilon == 0.25);
    CHECK(r.random == 4);  // 0.25 * 16, an integer: no rounding draw decides it
    CHECK(r.candidates == 5);
    CHECK(r.picked == 5);
    for (std::uint32_t i = 0; i < 5; ++i) CHECK(batch[i] == Config{0, i});
  }
  SUBCASE("a pick that measures less (measure_less): its configs plus the random share") {
    tunekit::ModelBased<RowSearch, tunekit::FixedEpsilon, TopPickMeasuringLess> opt({}, {.epsilon_value = 0.25});
    const auto batch = opt.propose(ctx, 16, rng);
    CHECK(batch.size() == 5 + 4);
    CHECK(opt.last_batch().picked == 5);
    CHECK(opt.last_batch().random == 4);
  }
  SUBCASE("a pick that measures less and picked nothing: the whole batch is random") {
    tunekit::ModelBased<RowSearch, tunekit::FixedEpsilon, TopPickMeasuringLess> opt({}, {.epsilon_value = 0.25});
    opt.search().found = 0;
    const auto batch = opt.propose(ctx, 16, rng);
    CHECK(batch.size() == 16);
    CHECK(opt.last_batch().candidates == 0);
    CHECK(opt.last_batch().picked == 0);
  }
  SUBCASE("without a model the whole batch is random") {
    const tunekit::SearchContext no_model{s, h, visited};
    tunekit::ModelBased<RowSearch> opt;
    const auto batch = opt.propose(no_model, 16, rng);
    CHECK(batch.size() == 16);
    CHECK(opt.last_batch().epsilon == 1.0);
    CHECK(opt.last_batch().random == 16);
    CHECK(opt.last_batch().candidates == 0);
  }
}
