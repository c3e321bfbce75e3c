#include <tunekit/optimizer/pick/kmeans_sampler.hpp>
#include <tunekit/optimizer/simulated_annealing.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <unordered_set>
#include <vector>

namespace {

using tunekit::Candidate;
using tunekit::Config;
using tunekit::SearchSpace;

// Four knobs of 12 values; a config is valid when its sum is not a multiple of 5.
SearchSpace constrained_space() {
  SearchSpace s;
  for (const char* name : {"a", "b", "c", "d"}) s.add(tunekit::Knob::range(name, 0, 11));
  s.add_constraint("sum % 5 != 0", [](const tunekit::ConfigView& v) { return (v["a"] + v["b"] + v["c"] + v["d"]) % 5 != 0; });
  return s;
}

// `clusters` tight groups of valid configs (each within +-1 of a centre), best scores first.
std::vector<Candidate> clustered_candidates(const SearchSpace& s, std::size_t clusters, std::size_t per,
                                            tunekit::Rng& rng) {
  std::vector<Candidate> out;
  std::unordered_set<std::uint64_t> seen;
  for (std::size_t c = 0; c < clusters; ++c) {
    // Centres on a coarse grid: 1 or 6 (or 10) per knob, so groups are far apart.
    const Config centre = {static_cast<std::uint32_t>(1 + 5 * (c % 2)), static_cast<std::uint32_t>(1 + 5 * (c / 2 % 2)),
                           static_cast<std::uint32_t>(1 + 5 * (c / 4 % 2)), static_cast<std::uint32_t>(1 + 9 * (c / 8 % 2))};
    std::size_t added = 0;
    while (added < per) {
      Config x = centre;
      for (auto& v : x) v = static_cast<std::uint32_t>(static_cast<int>(v) + static_cast<int>(tunekit::uniform_index(rng, 3)) - 1);
      if (!s.is_valid(x) || !seen.insert(s.to_index(x)).second) continue;
      out.push_back({x, s.to_index(x), 0.0});
      ++added;
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) out[i].score = 1.0 - 0.001 * static_cast<double>(i);
  return out;
}

}  // namespace

TEST_CASE("the k-means sampler measures one config per planted cluster") {
  const SearchSpace s = constrained_space();
  tunekit::Rng rng(2);
  const auto cands = clustered_candidates(s, 8, 8, rng);
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  const tunekit::SearchContext ctx{s, h, visited, [](std::span<const Config> cs) { return std::vector<double>(cs.size()); },
                                   1.0, {}, 1.0};
  tunekit::KMeansSampler sampler;
  CHECK(sampler.candidates(64) == 64);
  const auto picks = sampler.pick(ctx, cands, 64, rng);
  // 8 tight clusters of 8 among 64 candidates: the knee is at k = 8 (k = 16 only splits them).
  CHECK(sampler.last_pick().k == 8);
  CHECK(picks.size() == 8);
  std::set<std::uint64_t> distinct;
  for (const auto& c : picks) {
    CHECK(s.is_valid(c));
    distinct.insert(s.to_index(c));
  }
  CHECK(distinct.size() == picks.size());
  // One pick near each centre (within +-1 per knob): every cluster is represented.
  std::set<std::size_t> clusters_hit;
  for (const auto& c : picks)
    clusters_hit.insert((c[0] > 3) + 2 * (c[1] > 3) + 4 * (c[2] > 3) + 8 * (c[3] > 5));
  CHECK(clusters_hit.size() == 8);
}

TEST_CASE("the k-means sampler replaces measured centroids by synthesized unmeasured configs") {
  const SearchSpace s = constrained_space();
  tunekit::Rng rng(4);
  const auto cands = clustered_candidates(s, 8, 8, rng);
  tunekit::History h;
  // Everything within +-1 of every cluster centre that is not a candidate is measured, and so are
  // the rounded centroids of a first pass: the sampler must synthesize and repair.
  std::unordered_set<std::uint64_t> visited;
  {
    const tunekit::SearchContext ctx{s, h, visited, {}, 1.0, {}, 1.0};
    tunekit::KMeansSampler first;
    tunekit::Rng r1(4);
    for (const auto& c : first.pick(ctx, cands, 64, r1)) visited.insert(s.to_index(c));
  }
  const tunekit::SearchContext ctx{s, h, visited, {}, 1.0, {}, 1.0};
  tunekit::KMeansSampler sampler;
  tunekit::Rng r2(4);
  const auto picks = sampler.pick(ctx, cands, 64, r2);
  CHECK(sampler.last_pick().synthesized > 0);
  CHECK(picks.size() == sampler.last_pick().k);
  std::set<std::uint64_t> distinct;
  for (const auto& c : picks) {
    CHECK(s.is_valid(c));
    CHECK(!visited.contains(s.to_index(c)));
    distinct.insert(s.to_index(c));
  }
  CHECK(distinct.size() == picks.size());
}

TEST_CASE("sample synthesis never returns an invalid, measured or excluded config") {
  const SearchSpace s = constrained_space();
  tunekit::Rng rng(8);
  std::size_t synthesized = 0, none = 0;
  for (int trial = 0; trial < 300; ++trial) {
    // A random group of members around a random centre and a random large excluded set (up to
    // 90% of the space), sometimes including every member.
    std::vector<Config> members;
    const Config centre = s.sample(rng);
    for (int i = 0; i < 6; ++i) {
      Config x = centre;
      for (auto& v : x) v = static_cast<std::uint32_t>(std::clamp<int>(static_cast<int>(v) + static_cast<int>(tunekit::uniform_index(rng, 3)) - 1, 0, 11));
      if (s.is_valid(x)) members.push_back(x);
    }
    if (members.empty()) continue;
    const double density = 0.9 * tunekit::uniform_real(rng);
    std::unordered_set<std::uint64_t> excluded;
    for (std::uint64_t i = 0; i < s.product_size(); ++i)
      if (tunekit::uniform_real(rng) < density) excluded.insert(i);
    if (trial % 3 == 0)
      for (const auto& m : members) excluded.insert(s.to_index(m));
    const auto out = tunekit::synthesize_sample(s, members, members,
                                                [&](std::uint64_t idx) { return excluded.contains(idx); });
    if (!out) {
      ++none;
      // Nothing returned only when the members are all excluded and the repair found nothing.
      for (const auto& m : members) CHECK(excluded.contains(s.to_index(m)));
      continue;
    }
    ++synthesized;
    CHECK(s.is_valid(*out));
    CHECK(!excluded.contains(s.to_index(*out)));
  }
  MESSAGE("synthesized " << synthesized << ", none " << none);
  CHECK(synthesized > 250);
}

TEST_CASE("annealing with the k-means sampler hands out fewer, valid, unvisited configs") {
  const SearchSpace s = constrained_space();
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  auto score = [](std::span<const Config> cs) {
    std::vector<double> v;
    for (const auto& c : cs) v.push_back(-std::abs(double(c[0]) - 3) - std::abs(double(c[1]) - 8) - std::abs(double(c[2]) - 5));
    return v;
  };
  tunekit::Rng rng(6);
  tunekit::Annealing<tunekit::FixedEpsilon, tunekit::KMeansSampler> opt;
  std::size_t total = 0;
  for (int round = 0; round < 4; ++round) {
    const tunekit::SearchContext ctx{s, h, visited, score, 1.0, {}, 1.0};
    const auto batch = opt.propose(ctx, 64, rng);
    REQUIRE(!batch.empty());
    CHECK(batch.size() <= 64);
    CHECK(batch.size() == opt.pick().last_pick().k + opt.last_batch().random);
    for (const auto& c : batch) {
      CHECK(s.is_valid(c));
      CHECK(visited.insert(s.to_index(c)).second);
    }
    total += batch.size();
  }
  MESSAGE("4 rounds of plan size 64 handed out " << total << " configs");
  CHECK(total < 4 * 64);
  CHECK_THROWS_AS(tunekit::KMeansSampler({.threshold = 0.5}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::KMeansSampler({.candidate_ratio = 0.5}), std::invalid_argument);
}
