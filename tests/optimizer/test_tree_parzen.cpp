// TreeParzen, tunekit's own search, part by part: its maximin start, its density model, its
// failure model, its sources (the good density's draws, the incumbent's neighbours with their
// two-knob and repair moves, crossovers, a model's pick) and their Thompson-sampled shares, its
// model start and that start's models in turns, its restarts, its growing batches; each against
// random search, its ablation or a brute force on synthetic spaces (the recorded spaces:
// tests/tuner/test_tpe_local.cpp).
#include <tunekit/optimizer/random_search.hpp>
#include <tunekit/optimizer/tree_parzen.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <unordered_set>
#include <vector>

using namespace tunekit;

namespace {

// The time of a config, or nullopt-like infinity for a failure.
using Objective = std::function<double(const Config&)>;

// Drives an optimizer as Tuner::tune does, with noiseless times: asks `plan` configs a round until
// `budget` configs are measured. Returns the times in measurement order (infinity: failed).
// `measured(times)` is called after each round with the times so far.
template <class O, class OnRound = void (*)(const std::vector<double>&)>
std::vector<double> run(O& opt, const SearchSpace& s, const Objective& f, std::size_t budget, std::uint64_t seed,
                        std::size_t plan = 32, OnRound measured = [](const std::vector<double>&) {}) {
  History h;
  std::unordered_set<std::uint64_t> visited;
  Rng rng(seed);
  std::vector<double> times;
  while (h.size() < budget) {
    const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
    const auto batch = opt.propose(ctx, std::min(plan, budget - h.size()), rng);
    if (batch.empty()) break;
    for (const Config& c : batch) {
      REQUIRE(s.is_valid(c));
      const auto idx = s.to_index(c);
      REQUIRE(visited.insert(idx).second);
      const double t = f(c);
      Measurement m = std::isfinite(t) ? Measurement::from_samples({t}, 0.0)
                                       : Measurement::failure(Status::runtime_error, "fails", 0.0);
      h.add(Trial{c, idx, m, 0.0});
      times.push_back(t);
    }
    measured(times);
  }
  return times;
}

// tpe-local's composition (no model start, no restarts) with the sources under test.
template <class... Sources>
using Tpe = TreeParzen<MaximinStart, NoModelStart, CandidateSources<Sources...>, ThompsonMix, NoRestarts>;
using Local = Tpe<GoodDensityDraws, IncumbentNeighbours>;
constexpr std::size_t draws = 0, neighbours = 1, third = 2;  // positions in the sources

double best_of(const std::vector<double>& t, std::size_t first) {
  double b = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < std::min(first, t.size()); ++i) b = std::min(b, t[i]);
  return b;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A search that has measured `incumbent` and every one of its Hamming neighbours (times from f).
struct NeighboursMeasured {
  History history;
  std::unordered_set<std::uint64_t> visited;
  NeighboursMeasured(const SearchSpace& s, const Config& incumbent, const Objective& f) {
    auto measure = [&](const Config& c) {
      const auto idx = s.to_index(c);
      visited.insert(idx);
      history.add(Trial{c, idx, Measurement::from_samples({f(c)}, 0.0), 0.0});
    };
    measure(incumbent);
    for (const Config& c : s.hamming_neighbours(incumbent)) measure(c);
  }
};

// Four ordinal knobs of 16 values with an interaction: 65536 configs, one optimum at
// (11, 4, 13, 6), and a smooth bowl around it with a ridge that couples a and b.
SearchSpace square_bowl_space() {
  SearchSpace s;
  for (const char* n : {"a", "b", "c", "d"}) s.add(Knob::range(n, 0, 15));
  return s;
}
double square_bowl(const Config& c) {
  const double a = c[0] - 11.0, b = c[1] - 4.0, cc = c[2] - 13.0, d = c[3] - 6.0;
  return 1.0 + 0.02 * (a * a + b * b + cc * cc + d * d) + 0.03 * std::abs(a + b);
}

}  // namespace

TEST_CASE("TreeParzen: the start is a maximin design, more spread than random configs") {
  SearchSpace s;
  s.add(Knob::range("x", 0, 63)).add(Knob::range("y", 0, 63));
  auto spread = [&](const std::vector<Config>& cs) {
    double nearest = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < cs.size(); ++i)
      for (std::size_t j = i + 1; j < cs.size(); ++j)
        nearest = std::min(nearest, std::abs(double(cs[i][0]) - cs[j][0]) + std::abs(double(cs[i][1]) - cs[j][1]));
    return nearest;
  };
  std::vector<double> design, random;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    History h;
    std::unordered_set<std::uint64_t> visited;
    const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
    Local tp;
    Rng rng(seed);
    const auto start = tp.propose(ctx, 64, rng);
    REQUIRE(start.size() == MaximinStart{}.size());  // the start only, however many are asked
    CHECK(tp.last_round().design);
    design.push_back(spread(start));
    Rng rr(seed);
    random.push_back(spread(RandomStart{}.design(ctx, start.size(), rr)));
  }
  // Ten points on a 64 x 64 grid: random configs come within ~5 steps of each other (median),
  // the maximin start keeps them several times farther apart.
  MESSAGE("median nearest pair: maximin " << median(design) << ", random " << median(random));
  CHECK(median(design) >= 2.0 * median(random));
  CHECK(*std::min_element(design.begin(), design.end()) >= 8.0);
}

TEST_CASE("TreeParzen: finds the optimum of a bowl far sooner than random search") {
  const SearchSpace s = square_bowl_space();
  std::vector<double> tp_best, rs_best;
  std::size_t found = 0;
  for (std::uint64_t seed = 0; seed < 15; ++seed) {
    Local tp;
    const auto t = run(tp, s, square_bowl, 150, seed);
    tp_best.push_back(best_of(t, 150));
    found += best_of(t, 150) == 1.0;
    RandomSearch rs;
    rs_best.push_back(best_of(run(rs, s, square_bowl, 150, seed), 150));
  }
  // 150 of 65536 configs: random search's best is ~1.2 (median); TreeParzen's is at or next to
  // the optimum in most runs.
  MESSAGE("median best after 150: TreeParzen " << median(tp_best) << ", random " << median(rs_best) << "; optimum in "
                                               << found << " of 15");
  CHECK(median(tp_best) <= 1.03);
  CHECK(median(rs_best) >= 1.10);
  CHECK(found >= 8);
}

TEST_CASE("GoodDensityDraws: the good density's draws alone find a bowl's optimum sooner than random search") {
  // TreeParzen with one source, the draws from l(x): after the start, every pick is the draw of
  // largest l(x) / g(x). Over 15 seeds of 150 configs of the bowl, its median best is far below
  // random search's (a source of random configs would be random search).
  const SearchSpace s = square_bowl_space();
  std::vector<double> draws_best, rs_best;
  for (std::uint64_t seed = 0; seed < 15; ++seed) {
    Tpe<GoodDensityDraws> draws;
    draws_best.push_back(best_of(run(draws, s, square_bowl, 150, seed), 150));
    CHECK(draws.last_round().candidates[0] > 0);
    RandomSearch rs;
    rs_best.push_back(best_of(run(rs, s, square_bowl, 150, seed), 150));
  }
  MESSAGE("median best after 150: draws from l(x) " << median(draws_best) << ", random " << median(rs_best));
  CHECK(median(draws_best) <= 1.06);
  CHECK(median(rs_best) >= 1.10);
}

TEST_CASE("ModelStart: a Gaussian process's picks find a bowl's optimum sooner than TPE alone") {
  // The bowl above, 40 configs: after the 10-config start, 30 picks by the Gaussian process's
  // expected improvement (a model start of 40 trials) against 30 of TPE's (its good group is one
  // to three configs so early) and random search.
  using GpStart = TreeParzen<MaximinStart, ModelStart<GaussianProcess>, CandidateSources<GoodDensityDraws, IncumbentNeighbours>,
                             ThompsonMix, NoRestarts>;
  auto gp_start = [](std::size_t trials) {
    return GpStart({}, {.model_start = ModelStart<GaussianProcess>({.trials = trials}, GaussianProcess())});
  };
  const SearchSpace s = square_bowl_space();
  std::vector<double> gp_best, tp_best, rs_best;
  for (std::uint64_t seed = 0; seed < 15; ++seed) {
    GpStart gp = gp_start(40);
    gp_best.push_back(best_of(run(gp, s, square_bowl, 40, seed, 1), 40));
    CHECK(gp.last_round().model_start);
    Local tp;
    tp_best.push_back(best_of(run(tp, s, square_bowl, 40, seed, 1), 40));
    CHECK_FALSE(tp.last_round().model_start);
    RandomSearch rs;
    rs_best.push_back(best_of(run(rs, s, square_bowl, 40, seed), 40));
  }
  MESSAGE("median best after 40: with the model start " << median(gp_best) << ", TPE alone " << median(tp_best)
                                                        << ", random " << median(rs_best));
  CHECK(median(gp_best) < median(tp_best));
  CHECK(median(gp_best) <= 1.02);
  CHECK(median(rs_best) >= 1.15);
  // Past its trials the rounds are TPE's again.
  GpStart gp = gp_start(20);
  run(gp, s, square_bowl, 30, 1, 1);
  CHECK_FALSE(gp.last_round().model_start);
  CHECK_FALSE(gp.last_round().design);
}

TEST_CASE("ModelPick: a Gaussian process's pick keeps the model picking once TPE has taken over") {
  // A third source after the start (no model start here): the largest EI(x) of a Gaussian process
  // on the phase's 40 fastest configs. On the bowl above its picks are hits (in the good group
  // once measured) more often than the other sources' picks, so the Thompson mix takes it in most
  // rounds, and over 15 seeds at 50 configs the run's median best is below TPE's alone (the same
  // candidates, two sources) and far below random search's.
  using WithPick = Tpe<GoodDensityDraws, IncumbentNeighbours, ModelPick<>>;
  const SearchSpace s = square_bowl_space();
  std::vector<double> with_best, without_best, rs_best;
  std::size_t model_picks = 0, other_picks = 0;
  double model_hits = 0.0, model_misses = 0.0, other_hits = 0.0, other_misses = 0.0;
  for (std::uint64_t seed = 0; seed < 15; ++seed) {
    WithPick with({}, {.sources = {GoodDensityDraws(), IncumbentNeighbours(),
                                   ModelPick<>({.fastest = 40}, GaussianProcess({.ard_steps = 20}))}});
    with_best.push_back(best_of(run(with, s, square_bowl, 50, seed, 1,
                                    [&](const std::vector<double>&) {
                                      const TreeParzenRound& r = with.last_round();
                                      if (r.design) return;
                                      model_picks += r.picks[third];
                                      other_picks += 1 - r.picks[third];
                                      CHECK(r.candidates[third] == 0);  // it nominates, adds none
                                    }),
                            50));
    const ThompsonMix& mix = with.parts().mix;
    model_hits += mix.hits(third);
    model_misses += mix.misses(third);
    for (std::size_t q : {draws, neighbours}) other_hits += mix.hits(q), other_misses += mix.misses(q);
    Local without;
    without_best.push_back(best_of(run(without, s, square_bowl, 50, seed, 1), 50));
    RandomSearch rs;
    rs_best.push_back(best_of(run(rs, s, square_bowl, 50, seed), 50));
  }
  const double model_rate = model_hits / (model_hits + model_misses);
  const double other_rate = other_hits / (other_hits + other_misses);
  MESSAGE("model picks " << model_picks << " of " << model_picks + other_picks << ", hit rate " << model_rate
                         << " (the other sources' " << other_rate << "); median best after 50: with the model pick "
                         << median(with_best) << ", without " << median(without_best) << ", random "
                         << median(rs_best));
  CHECK(model_picks >= (model_picks + other_picks) / 2);  // measured 367 of 600
  CHECK(model_rate >= 1.5 * other_rate);
  CHECK(median(with_best) < median(without_best));
  CHECK(median(with_best) <= 1.02);
  CHECK(median(rs_best) >= 1.15);
  CHECK_THROWS_AS(ModelPick<>({.fastest = 1}), std::invalid_argument);
}

TEST_CASE("ModelPick: each fit from the last one's length scales picks as well as a full ascent") {
  // warm_steps: each fit of the model pick after the first takes at most 5 steps of the Gaussian
  // process's ARD ascent from the length scales of the one before (a tenth of the 50 from the
  // common length scale; the likelihoods: tests/surrogate/test_gaussian_process.cpp). Over 15
  // seeds of the bowl at 50 configs, the median best is the full ascent's within 1%.
  using WithPick = Tpe<GoodDensityDraws, IncumbentNeighbours, ModelPick<>>;
  auto with_pick = [](std::size_t warm_steps) {
    return WithPick({}, {.sources = {GoodDensityDraws(), IncumbentNeighbours(),
                                     ModelPick<>({.fastest = 40, .warm_steps = warm_steps})}});
  };
  const SearchSpace s = square_bowl_space();
  std::vector<double> warm_best, full_best;
  int other_trials = 0;
  for (std::uint64_t seed = 0; seed < 15; ++seed) {
    WithPick warm = with_pick(5), full = with_pick(0);
    const std::vector<double> w = run(warm, s, square_bowl, 50, seed, 1);
    const std::vector<double> f = run(full, s, square_bowl, 50, seed, 1);
    warm_best.push_back(best_of(w, 50));
    full_best.push_back(best_of(f, 50));
    other_trials += w != f;
  }
  MESSAGE("median best after 50: ARD from the last fit " << median(warm_best) << ", full ARD " << median(full_best)
                                                         << "; runs with other trials " << other_trials);
  CHECK(other_trials >= 5);  // the warm start is taken: it moves the picks
  CHECK(median(warm_best) <= 1.01 * median(full_best));
}

TEST_CASE("ModelStart: in its forest turns, a random forest's picks exploit the steps of a space") {
  // A step function of four ordered knobs (thresholds, as the trees split): 9.4% of the configs
  // are on the lowest step (1.0), a random config takes 1.425 on average. With a RandomForest and
  // a GaussianProcess in turns (InTurns, turn = the phase's trials), the rounds with an even
  // number of measured configs (10, 12, ..., 38: 15 per run) pick by the forest's EI, the others
  // by the Gaussian process's.
  using Turns = InTurns<RandomForest, GaussianProcess>;
  using RfGpStart = TreeParzen<MaximinStart, ModelStart<Turns>, CandidateSources<GoodDensityDraws, IncumbentNeighbours>,
                               ThompsonMix, NoRestarts>;
  const SearchSpace s = square_bowl_space();
  auto steps = [](const Config& c) {
    return 1.0 + 0.4 * (c[0] < 8) + 0.3 * (c[1] >= 12) + 0.2 * (c[2] < 4 || c[2] >= 12) + 0.1 * (c[3] >= 8);
  };
  double forest_sum = 0.0, random_sum = 0.0;
  std::size_t forest_picks = 0, gp_picks = 0, random_picks = 0;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    RfGpStart opt({}, {.model_start = ModelStart<Turns>({.trials = 40},
                                                        Turns(TpeModel<RandomForest>::make(), GaussianProcess()))});
    run(opt, s, steps, 40, seed, 1, [&](const std::vector<double>& t) {
      const TreeParzenRound& r = opt.last_round();
      if (r.design) return;
      CHECK(r.model_start);
      const bool forest = opt.parts().model_start.model().fitted() == 0;
      CHECK(forest == ((t.size() - 1) % 2 == 0));
      if (forest) forest_sum += t.back(), ++forest_picks;
      gp_picks += !forest;
    });
    RandomSearch rs;
    for (double t : run(rs, s, steps, 30, seed)) random_sum += t, ++random_picks;
  }
  const double forest_mean = forest_sum / double(forest_picks), random_mean = random_sum / double(random_picks);
  MESSAGE("mean time of the forest's picks " << forest_mean << ", of random configs " << random_mean);
  CHECK(forest_picks == 150);
  CHECK(gp_picks == 150);
  CHECK(forest_mean <= 1.20);  // measured 1.107 (random configs 1.448)
  CHECK(random_mean >= 1.35);
}

TEST_CASE("TreeParzen: failures are a class of their own, and it learns to avoid them") {
  // Half the space fails (a >= 8); the best times are at a = 2, b = 9, c = 3.
  SearchSpace s;
  for (const char* n : {"a", "b", "c"}) s.add(Knob::range(n, 0, 15));
  auto f = [](const Config& c) {
    if (c[0] >= 8) return std::numeric_limits<double>::infinity();
    return 1.0 + 0.05 * std::abs(double(c[0]) - 2) + 0.02 * std::abs(double(c[1]) - 9) +
           0.02 * std::abs(double(c[2]) - 3);
  };
  // Of the configs proposed after the start, the share that failed.
  auto failed_share = [&](auto make, std::vector<double>& best) {
    std::size_t failed = 0, proposed = 0;
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
      auto opt = make();
      const auto t = run(opt, s, f, 100, seed);
      for (std::size_t i = MaximinStart{}.size(); i < t.size(); ++i) failed += !std::isfinite(t[i]), ++proposed;
      best.push_back(best_of(t, 100));
    }
    return double(failed) / double(proposed);
  };
  std::vector<double> tp_best, blind_best, rs_best;
  const double tp = failed_share([] { return Local{}; }, tp_best);
  const double blind = failed_share([] { return Local({.model_failures = false}); }, blind_best);
  const double rs = failed_share([] { return RandomSearch{}; }, rs_best);
  MESSAGE("failed after the start: TreeParzen " << tp << ", without its failure model " << blind << ", random "
                                                << rs);
  CHECK(rs > 0.4);
  CHECK(tp < 0.5 * blind);  // measured 0.14 against 0.56
  CHECK(tp < 0.4 * rs);  // measured 0.14 against 0.49
  CHECK(median(tp_best) <= median(rs_best));
}

TEST_CASE("TreeParzen: local moves around the incumbent, their share decided by Thompson sampling") {
  const SearchSpace s = square_bowl_space();
  Local tp;
  History h;
  std::unordered_set<std::uint64_t> visited;
  Rng rng(3);
  std::size_t local = 0, rounds = 0, with_neighbours = 0;
  while (h.size() < 120) {
    const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
    const auto batch = tp.propose(ctx, 1, rng);
    REQUIRE(batch.size() == 1);
    if (!tp.last_round().design) {
      ++rounds;
      local += tp.last_round().picks[neighbours];
      with_neighbours += tp.last_round().candidates[neighbours] > 0;
      CHECK(tp.last_round().candidates[draws] > 0);
    }
    const auto idx = s.to_index(batch[0]);
    visited.insert(idx);
    h.add(Trial{batch[0], idx, Measurement::from_samples({square_bowl(batch[0])}, 0.0), 0.0});
  }
  const ThompsonMix& mix = tp.parts().mix;
  const double hg = mix.hits(draws), mg = mix.misses(draws), hl = mix.hits(neighbours), ml = mix.misses(neighbours);
  // Every measured pick of the model phase but the last is credited to one source.
  CHECK(hg + mg + hl + ml == doctest::Approx(double(rounds - 1)));
  MESSAGE("local picks " << local << " of " << rounds << "; hits/misses global " << hg << "/" << mg << ", local "
                         << hl << "/" << ml);
  // On a smooth bowl the incumbent's neighbours keep landing among the good configs: the local
  // source earns the larger share.
  CHECK(with_neighbours > rounds / 2);  // none once the incumbent's 60 neighbours are all measured
  CHECK(local > rounds / 3);
  CHECK(local < rounds);
  CHECK(hl / (hl + ml) > hg / (hg + mg + 1));
}

TEST_CASE("TreeParzen: two-knob moves once the incumbent's Hamming neighbours are all measured") {
  // Three ridges: six knobs of six values, each pair (a, b), (c, d), (e, g) costs 0.2 per step
  // apart and 0.01 per step below 5, so moving one knob of a pair off the ridge costs more than a
  // step up it gains: along a ridge, one-knob moves find no better config, two-knob moves do.
  SearchSpace s;
  for (const char* n : {"a", "b", "c", "d", "e", "g"}) s.add(Knob::range(n, 0, 5));
  auto ridges = [](const Config& x) {
    double t = 1.0;
    for (std::size_t p = 0; p < 6; p += 2) t += 0.2 * std::abs(double(x[p]) - x[p + 1]) + 0.01 * (5.0 - x[p]);
    return t;
  };
  auto no_two_knob_moves = [] {
    return Local({}, {.sources = {GoodDensityDraws(), IncumbentNeighbours({.two_knob_moves = 0})}});
  };
  SUBCASE("the mechanism: the incumbent's 30 Hamming neighbours measured, two-knob moves stand in") {
    const Config incumbent{2, 2, 3, 3, 1, 1};
    const NeighboursMeasured m(s, incumbent, ridges);
    const SearchContext ctx{s, m.history, m.visited, {}, 0.0, {}, 0.0};
    auto differing = [&](const Config& c) {
      std::size_t n = 0;
      for (std::size_t k = 0; k < c.size(); ++k) n += c[k] != incumbent[k];
      return n;
    };
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
      Local tp;
      Rng rng(seed);
      const auto pick = tp.propose(ctx, 1, rng);
      REQUIRE(pick.size() == 1);
      CHECK(tp.last_round().candidates[neighbours] == IncumbentNeighboursParams{}.two_knob_moves);
      if (tp.last_round().picks[neighbours] == 1) CHECK(differing(pick[0]) == 2);
      Local without = no_two_knob_moves();
      Rng rng2(seed);
      without.propose(ctx, 1, rng2);
      CHECK(without.last_round().candidates[neighbours] == 0);
    }
  }
  SUBCASE("the search: nearer the optimum than without them, and than random search") {
    std::vector<double> with, without, random;
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
      Local a, b = no_two_knob_moves();
      RandomSearch r;
      with.push_back(best_of(run(a, s, ridges, 150, seed), 150) - 1.0);
      without.push_back(best_of(run(b, s, ridges, 150, seed), 150) - 1.0);
      random.push_back(best_of(run(r, s, ridges, 150, seed), 150) - 1.0);
    }
    const auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
    // Measured (seeds 0-39, 150 of 46656 configs): mean excess over the optimum 0.014 with
    // two-knob moves, 0.021 without, 0.16 for random search (with and without -march=native).
    MESSAGE("mean excess after 150: two-knob moves " << mean(with) << ", without " << mean(without) << ", random "
                                                     << mean(random));
    CHECK(mean(with) <= 0.85 * mean(without));
    CHECK(median(with) <= median(without));
    CHECK(mean(with) <= 0.3 * mean(random));
  }
}

TEST_CASE("Crossovers: recombine the good configs, a third source of the Thompson mix") {
  using WithCrossovers = Tpe<GoodDensityDraws, IncumbentNeighbours, Crossovers>;
  SUBCASE("the mechanism: every knob of a crossover pick is the value of one of the best configs") {
    const SearchSpace s = square_bowl_space();
    History h;
    std::unordered_set<std::uint64_t> visited;
    Rng draw(5);
    while (h.size() < 30) {  // 30 random configs: the good group is the 3 fastest
      Config c(4);
      for (auto& v : c) v = static_cast<std::uint32_t>(uniform_index(draw, 16));
      const auto idx = s.to_index(c);
      if (!visited.insert(idx).second) continue;
      h.add(Trial{c, idx, Measurement::from_samples({square_bowl(c)}, 0.0), 0.0});
    }
    std::vector<Config> best;
    for (const Trial& t : h) best.push_back(t.config);
    std::sort(best.begin(), best.end(), [](const Config& a, const Config& b) { return square_bowl(a) < square_bowl(b); });
    best.resize(3);
    const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
    std::size_t picks = 0;
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
      WithCrossovers with;
      Rng rng(seed);
      const auto pick = with.propose(ctx, 1, rng);
      REQUIRE(pick.size() == 1);
      CHECK(with.last_round().candidates[third] > 0);
      if (with.last_round().picks[third] == 0) continue;
      ++picks;
      CHECK_FALSE(visited.contains(s.to_index(pick[0])));
      for (std::size_t k = 0; k < 4; ++k)
        CHECK(std::any_of(best.begin(), best.end(), [&](const Config& b) { return b[k] == pick[0][k]; }));
    }
    MESSAGE("crossover picks: " << picks << " of 40");
    CHECK(picks > 0);  // no source has hits or misses yet: each is drawn from Beta(1, 1)
  }
  SUBCASE("the search: deceptive traps, solved in different good configs, are combined") {
    // Six blocks of three boolean knobs, each a deceptive trap (Goldberg): 0 when all three are
    // 1, else 0.5 + 0.2 per knob at 1, so one-knob moves lead every block away from its optimum.
    // A random config solves a block with probability 1/8; a child of two configs that solved
    // different blocks can have both.
    SearchSpace s;
    for (int k = 0; k < 18; ++k) s.add(Knob::range("k" + std::to_string(k), 0, 1));
    auto traps = [](const Config& x) {
      double t = 1.0;
      for (std::size_t b = 0; b < 18; b += 3) {
        const int ones = int(x[b] + x[b + 1] + x[b + 2]);
        t += ones == 3 ? 0.0 : 0.5 + 0.2 * ones;
      }
      return t;
    };
    auto solved = [](double t) { return 6.0 - std::floor((t - 1.0) / 0.5 + 1e-9); };  // blocks at 0
    std::vector<double> with, without, random;
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      WithCrossovers a;
      Local b;
      RandomSearch r;
      with.push_back(solved(best_of(run(a, s, traps, 150, seed), 150)));
      without.push_back(solved(best_of(run(b, s, traps, 150, seed), 150)));
      random.push_back(solved(best_of(run(r, s, traps, 150, seed), 150)));
    }
    const auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
    MESSAGE("blocks solved after 150: crossovers " << mean(with) << ", without " << mean(without) << ", random "
                                                   << mean(random));
    CHECK(mean(with) >= mean(without) + 0.5);
    CHECK(mean(with) >= mean(random) + 1.0);
  }
}

TEST_CASE("IncumbentNeighbours: repair moves cross the constraints that pin the knobs another layout leaves unused") {
  // Two layouts: "direct" uses u, v and w (1056 configs, a bowl of 1.0 at u=3, v=4, w=8);
  // "blocked" uses w only and the constraint pins u = v = 0 (32 configs, 0.6 at w=8, but far worse
  // than the direct bowl a few steps of w away). From the direct optimum, blocked is one knob away
  // in meaning and three in the space: the one-knob move is invalid.
  SearchSpace s;
  s.add(Knob::categorical("layout", {"direct", "blocked"}))
      .add(Knob::range("u", 0, 7))
      .add(Knob::range("v", 0, 7))
      .add(Knob::range("w", 0, 31));
  s.add_constraint("layout == blocked implies u == 0 and v == 0",
                   [](const ConfigView& c) { return c["layout"] == 0 || (c["u"] == 0 && c["v"] == 0); });
  auto layouts = [](const Config& c) {
    const double w = c[3] - 8.0;
    if (c[0] == 1) return 0.6 + 0.05 * w * w;
    const double u = c[1] - 3.0, v = c[2] - 4.0;
    return 1.0 + 0.01 * (u * u + v * v + w * w);
  };
  auto neighbours_with = [](IncumbentNeighboursParams p) {
    return Local({}, {.sources = {GoodDensityDraws(), IncumbentNeighbours(p)}});
  };
  SUBCASE("the mechanism: the incumbent's Hamming neighbours measured, the nearest blocked config stands in") {
    const Config incumbent{0, 3, 4, 8};
    const NeighboursMeasured m(s, incumbent, layouts);
    const SearchContext ctx{s, m.history, m.visited, {}, 0.0, {}, 0.0};
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
      Local with = neighbours_with({.two_knob_moves = 0, .repair_moves = true});
      Local without = neighbours_with({.two_knob_moves = 0});
      Rng rng(seed), rng2(seed);
      const auto pick = with.propose(ctx, 1, rng);
      REQUIRE(pick.size() == 1);
      CHECK(with.last_round().candidates[neighbours] == 1);  // layout = blocked with u = v = 0, w kept
      if (with.last_round().picks[neighbours] == 1) CHECK(pick[0] == Config{1, 0, 0, 8});
      without.propose(ctx, 1, rng2);
      CHECK(without.last_round().candidates[neighbours] == 0);
    }
  }
  SUBCASE("the search: finds the blocked optimum where TPE alone and random search rarely do") {
    int with = 0, without = 0, random = 0;
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
      Local a = neighbours_with({.repair_moves = true}), b;
      RandomSearch r;
      with += best_of(run(a, s, layouts, 100, seed), 100) < 0.9;
      without += best_of(run(b, s, layouts, 100, seed), 100) < 0.9;
      random += best_of(run(r, s, layouts, 100, seed), 100) < 0.9;
    }
    // Measured (seeds 0-39, 100 of 1088 configs): blocked below 0.9 found in 39 runs with repair
    // moves, 7 without, 7 for random search.
    MESSAGE("runs that found the blocked optimum: repair moves " << with << ", without " << without << ", random "
                                                                 << random);
    CHECK(with >= 30);
    CHECK(with >= without + 15);
    CHECK(with >= random + 15);
  }
}

TEST_CASE("RestartOnStall: a new phase begins once the phase's best has stalled") {
  using Restarting = TreeParzen<MaximinStart, NoModelStart, CandidateSources<GoodDensityDraws, IncumbentNeighbours>,
                                ThompsonMix, RestartOnStall>;
  SearchSpace s;
  for (const char* n : {"a", "b", "c"}) s.add(Knob::range(n, 0, 15));
  // A history of these times (infinity: failed), one distinct config each, and the round after it.
  struct After {
    std::vector<Config> proposed;
    TreeParzenRound round;
  };
  auto after = [&](const std::vector<double>& times, std::size_t restart_after) {
    History h;
    std::unordered_set<std::uint64_t> visited;
    for (std::size_t i = 0; i < times.size(); ++i) {
      const std::uint64_t idx = i * 97 % s.product_size();
      REQUIRE(visited.insert(idx).second);
      const Measurement m = std::isfinite(times[i]) ? Measurement::from_samples({times[i]}, 0.0)
                                                    : Measurement::failure(Status::runtime_error, "fails", 0.0);
      h.add(Trial{s.from_index(idx), idx, m, 0.0});
    }
    const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
    Rng rng(1);
    After a;
    if (restart_after > 0) {
      Restarting tp({}, {.restarts = RestartOnStall(restart_after)});
      a = {tp.propose(ctx, 64, rng), tp.last_round()};
    } else {
      Local tp;
      a = {tp.propose(ctx, 64, rng), tp.last_round()};
    }
    for (const Config& c : a.proposed) CHECK_FALSE(visited.contains(s.to_index(c)));
    return a;
  };
  auto times = [](std::initializer_list<std::pair<std::size_t, double>> runs) {
    std::vector<double> t;
    for (const auto& [count, time] : runs) t.insert(t.end(), count, time);
    return t;
  };
  SUBCASE("the best at the first trial, then 20 trials without improvement: the phase ends") {
    // Trials 1-20 do not improve on trial 0: the second phase starts at trial 21, whose four
    // trials are part of its space-filling start (10 configs).
    const After a = after(times({{1, 1.0}, {24, 2.0}}), 20);
    CHECK(a.round.phase_start == 21);
    CHECK(a.round.design);
    CHECK(a.proposed.size() == MaximinStart{}.size() - 4);
    // One trial less and the first phase goes on.
    const After b = after(times({{1, 1.0}, {19, 2.0}}), 20);
    CHECK(b.round.phase_start == 0);
    CHECK_FALSE(b.round.design);
    // Without restarts, never.
    CHECK(after(times({{1, 1.0}, {24, 2.0}}), 0).round.phase_start == 0);
  }
  SUBCASE("a phase that took 50 trials to reach its best waits 50 trials without improvement") {
    std::vector<double> t;
    for (int i = 0; i < 50; ++i) t.push_back(3.0 - 0.01 * i);  // improving up to trial 49
    t.insert(t.end(), 49, 5.0);
    CHECK(after(t, 20).round.phase_start == 0);  // 49 trials without improvement
    t.push_back(5.0);
    const After a = after(t, 20);
    CHECK(a.round.phase_start == 100);
    CHECK(a.proposed.size() == MaximinStart{}.size());
  }
  SUBCASE("the model of a new phase: its own successes, and the failures of every phase") {
    // Trial 0 is the best, trial 1 failed; the second phase starts at 21 and has 12 trials.
    auto t = times({{1, 1.0}, {1, std::numeric_limits<double>::infinity()}, {31, 2.0}});
    const After a = after(t, 20);
    CHECK(a.round.phase_start == 21);
    CHECK_FALSE(a.round.design);
    CHECK(a.round.good + a.round.others == 12);
    CHECK(a.round.failed == 1);
  }
}

TEST_CASE("RestartOnStall: restarts give a run that locked into the worse layout more chances") {
  using Restarting = TreeParzen<MaximinStart, NoModelStart, CandidateSources<GoodDensityDraws, IncumbentNeighbours>,
                                ThompsonMix, RestartOnStall>;
  // Two layouts, each a bowl over three knobs of 32 values: "wide" 1.0 at (8, 8, 8), "deep" 0.8
  // at (24, 24, 24), twice as steep (a random config takes ~3.5 in wide, ~6 in deep). Which layout
  // a TPE run settles in depends on its first good configs; once its good group is all of one
  // layout it rarely measures the other near that layout's optimum. A restart after 50 trials
  // without improvement starts over, and the new phase may settle in the other layout.
  SearchSpace s;
  s.add(Knob::categorical("layout", {"wide", "deep"}));
  for (const char* n : {"x", "y", "z"}) s.add(Knob::range(n, 0, 31));
  auto layouts = [](const Config& c) {
    const bool deep = c[0] == 1;
    const double o = deep ? 24.0 : 8.0;
    const double d2 = (c[1] - o) * (c[1] - o) + (c[2] - o) * (c[2] - o) + (c[3] - o) * (c[3] - o);
    return deep ? 0.8 + 0.02 * d2 : 1.0 + 0.01 * d2;
  };
  int with = 0, without = 0, random = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    Restarting a({}, {.restarts = RestartOnStall(50)});
    Local b;
    RandomSearch r;
    with += best_of(run(a, s, layouts, 400, seed), 400) < 0.95;
    without += best_of(run(b, s, layouts, 400, seed), 400) < 0.95;
    random += best_of(run(r, s, layouts, 400, seed), 400) < 0.95;
  }
  MESSAGE("runs that found the deep layout's optimum (below 0.95) in 400 trials: restarts " << with << ", without "
                                                                                       << without << ", random "
                                                                                       << random);
  // Measured (seeds 0-39): 39 with restarts, 10 without, 20 for random search.
  CHECK(with >= 32);
  CHECK(with >= without + 15);
  CHECK(with >= random + 10);
}

TEST_CASE("TreeParzen: batches grow with the trials, spread by the constant liar") {
  const SearchSpace s = square_bowl_space();
  Local tp({.batch_growth = 50});
  History h;
  std::unordered_set<std::uint64_t> visited;
  Rng rng(5);
  // 120 configs measured by random search first.
  RandomSearch rs;
  {
    const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
    for (const Config& c : rs.propose(ctx, 120, rng)) {
      const auto idx = s.to_index(c);
      visited.insert(idx);
      h.add(Trial{c, idx, Measurement::from_samples({square_bowl(c)}, 0.0), 0.0});
    }
  }
  const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
  const auto batch = tp.propose(ctx, 64, rng);
  CHECK(batch.size() == 1 + 120 / 50);
  CHECK(std::set<Config>(batch.begin(), batch.end()).size() == batch.size());
  // Asked for fewer, it gives fewer.
  CHECK(tp.propose(ctx, 1, rng).size() == 1);
  // The configs handed out and not measured are lies: asking again gives other configs.
  for (const Config& c : batch) visited.insert(s.to_index(c));
  const SearchContext pending{s, h, visited, {}, 0.0, {}, 0.0};
  for (const Config& c : tp.propose(pending, 64, rng)) CHECK_FALSE(visited.contains(s.to_index(c)));
}

TEST_CASE("TreeParzen: on W workers every round proposes W configs, from its first round on") {
  // SearchContext::parallel = 4 (a farm's workers) and asked for 4: the start (10 configs, then 2
  // more to fill the third round), the model start and the mix each propose 4 distinct configs a
  // round; the tpe-* presets' composition without fill_parallel, asked for 16, proposes its start
  // at once and then one config a round in its model start.
  const SearchSpace s = square_bowl_space();
  auto rounds = [&](auto& opt, std::size_t n) {
    History h;
    std::unordered_set<std::uint64_t> visited;
    Rng rng(2);
    std::vector<std::size_t> sizes;
    while (h.size() < 120) {
      SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
      ctx.parallel = 4;
      const auto batch = opt.propose(ctx, n, rng);
      REQUIRE_FALSE(batch.empty());
      sizes.push_back(batch.size());
      for (const Config& c : batch) {
        const auto idx = s.to_index(c);
        REQUIRE(visited.insert(idx).second);
        h.add(Trial{c, idx, Measurement::from_samples({square_bowl(c)}, 0.0), 0.0});
      }
    }
    return sizes;
  };
  TreeParzen<> filling;
  for (std::size_t size : rounds(filling, 4)) CHECK(size == 4);
  TreeParzen<> serial({.fill_parallel = false});
  const auto sizes = rounds(serial, 16);
  CHECK(sizes[0] == 10);  // the start, as asked (at most 16)
  CHECK(std::count(sizes.begin(), sizes.end(), std::size_t{1}) >= 50);  // the model start, one a round
}

TEST_CASE("ModelStart: a batch's picks are spread by the constant liar") {
  // A history of 30 random configs of the bowl; among 256 random candidates, the model start's
  // four picks (each fitted with the ones before as lies at the slowest time) against the four
  // candidates of largest expected improvement of the one fit: the liar's picks are farther apart
  // (mean pairwise distance over 10 seeds), as a batch for four workers should be.
  const SearchSpace s = square_bowl_space();
  double liar = 0.0, top = 0.0;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    History h;
    std::unordered_set<std::uint64_t> visited;
    Rng rng(seed);
    const SearchContext empty{s, h, visited, {}, 0.0, {}, 0.0};
    for (const Config& c : RandomSearch{}.propose(empty, 30, rng)) {
      const auto idx = s.to_index(c);
      visited.insert(idx);
      h.add(Trial{c, idx, Measurement::from_samples({square_bowl(c)}, 0.0), 0.0});
    }
    const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
    const TpeRound round(ctx, 0, {});
    CandidatePool pool(ctx);
    ModelStart<GaussianProcess> start({.pool = 256}, GaussianProcess());
    start.add(round, pool, rng);
    pool.set_log_ok(std::vector<double>(pool.size(), 0.0));
    auto spread = [&](const std::vector<std::size_t>& picks) {
      double d = 0.0;
      for (std::size_t i = 0; i < picks.size(); ++i)
        for (std::size_t j = i + 1; j < picks.size(); ++j) d += MaximinStart::distance(s, pool[picks[i]], pool[picks[j]]);
      return d / 6.0;
    };
    const auto picks = start.pick(round, pool, 4, {}, rng);
    REQUIRE(picks.size() == 4);
    CHECK(std::set<std::size_t>(picks.begin(), picks.end()).size() == 4);
    // The four best of the first fit: picks one at a time with the earlier ones excluded, no lies.
    std::vector<std::size_t> best;
    for (int i = 0; i < 4; ++i) {
      GaussianProcess gp;
      detail::WarmStart none;
      detail::fit_log_times(gp, s, detail::log_times(round.ok), 0, none, 0, rng);
      best.push_back(detail::best_by_acquisition(gp, ExpectedImprovement{}, std::log(round.ok[0]->measurement.mean), s,
                                                 pool, best));
    }
    CHECK(best[0] == picks[0]);  // the first pick is the one fit's
    liar += spread(picks) / 10.0;
    top += spread(best) / 10.0;
  }
  MESSAGE("mean pairwise distance of a batch of 4: constant liar " << liar << ", top 4 of one fit " << top);
  CHECK(liar >= 1.3 * top);
}

TEST_CASE("TreeParzen: same seed, same proposals, and a small space exhausted exactly") {
  const SearchSpace s = square_bowl_space();
  TreeParzen<> a, b;
  CHECK(run(a, s, square_bowl, 80, 11) == run(b, s, square_bowl, 80, 11));
  SearchSpace tiny;
  tiny.add(Knob::range("a", 0, 4)).add(Knob::boolean("b"));
  tiny.add_constraint("a + b != 3", [](const ConfigView& c) { return c["a"] + c["b"] != 3; });
  TreeParzen<> t;
  const auto times = run(t, tiny, [](const Config& c) { return 1.0 + c[0] + c[1]; }, 100, 1, 4);
  CHECK(times.size() == tiny.count_valid());
}

TEST_CASE("ThompsonMix: the source whose picks land in the good group gets most picks") {
  // 40 configs of a one-knob space measured, 20 of them handed out for source 0 (times 1 to 20)
  // and 20 for source 1 (times 101 to 120): the good group is the 4 fastest (gamma 0.1), all
  // source 0's, so source 0 has 4 hits and 16 misses, source 1 20 misses. Its draws from
  // Beta(5, 17) and Beta(1, 21) favour source 0 in about 19 of 20 picks; a uniform mix in half.
  SearchSpace s;
  s.add(Knob::range("x", 0, 99));
  History h;
  std::unordered_set<std::uint64_t> visited;
  ThompsonMix thompson;
  for (std::uint32_t i = 0; i < 40; ++i) {
    const Config c{i};
    const std::uint64_t idx = s.to_index(c);
    thompson.chosen(idx, i % 2);
    visited.insert(idx);
    const double t = i % 2 == 0 ? 1.0 + i / 2 : 101.0 + i / 2;
    h.add(Trial{c, idx, Measurement::from_samples({t}, 0.0), 0.0});
  }
  const SearchContext ctx{s, h, visited, {}, 0.0, {}, 0.0};
  const TpeRound round(ctx, 0, {});
  thompson.credit(round);
  CHECK(thompson.hits(0) == 4.0);
  CHECK(thompson.misses(0) == 16.0);
  CHECK(thompson.hits(1) == 0.0);
  CHECK(thompson.misses(1) == 20.0);
  Rng rng(7);
  const std::array<bool, 2> both{true, true};
  std::size_t first = 0, uniform_first = 0;
  UniformMix uniform;
  for (int i = 0; i < 1000; ++i) {
    first += thompson.choose(both, rng) == 0;
    uniform_first += uniform.choose(both, rng) == 0;
  }
  MESSAGE("source 0 chosen " << first << " of 1000 (uniform: " << uniform_first << ")");
  CHECK(first >= 900);
  CHECK(uniform_first >= 420);
  CHECK(uniform_first <= 580);
  // One source on offer: that source, with no draw.
  const std::array<bool, 2> second{false, true};
  const Rng before = rng;
  CHECK(thompson.choose(second, rng) == 1);
  CHECK(rng == before);
}

TEST_CASE("TreeParzen: every part's options are checked") {
  CHECK_THROWS_AS(MaximinStart({.configs = 0}), std::invalid_argument);
  CHECK_THROWS_AS(MaximinStart({.pool = 0}), std::invalid_argument);
  CHECK_THROWS_AS(RandomStart(0), std::invalid_argument);
  CHECK_THROWS_AS(Local({.density = {.gamma = 0.0}}), std::invalid_argument);
  CHECK_THROWS_AS(Local({.density = {.gamma = 1.5}}), std::invalid_argument);
  CHECK_THROWS_AS(Local({.density = {.max_good = 0}}), std::invalid_argument);
  CHECK_THROWS_AS(Local({.density = {.parzen = {.min_width = -1.0}}}), std::invalid_argument);
  CHECK_THROWS_AS(Local({.batch_growth = 0}), std::invalid_argument);
  CHECK_NOTHROW(Local({.model_failures = false}));
  CHECK_THROWS_AS(GoodDensityDraws(0), std::invalid_argument);
  CHECK_THROWS_AS(IncumbentNeighbours({.incumbents = 0}), std::invalid_argument);
  CHECK_THROWS_AS(Crossovers(0), std::invalid_argument);
  CHECK_THROWS_AS(RestartOnStall(0), std::invalid_argument);
}
