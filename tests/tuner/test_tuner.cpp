#include <tunekit/presets.hpp>
#include <tunekit/tuner.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using tunekit::Config;
using tunekit::Knob;
using tunekit::RunResult;
using tunekit::SearchSpace;
using tunekit::Status;

// A kernel with a known landscape and replay-like noise: each run's time is the config's true
// time times (1 + 2% uniform noise) drawn from the caller's generator; x == 3 fails to build.
struct NoisyBowl {
  SearchSpace s;
  NoisyBowl() {
    s.add(Knob::range("x", 0, 9)).add(Knob::power_of_two("y", 1, 32)).add(Knob::boolean("z"));
    s.add_constraint("x + log2(y) != 12", [](const tunekit::ConfigView& c) {
      return c["x"] + static_cast<std::int64_t>(std::log2(c["y"])) != 12;
    });
  }
  const SearchSpace& space() const { return s; }
  double flop() const { return 1e9; }
  static double true_time(const tunekit::ConfigView& v) {
    return 1e-3 * (1.0 + std::pow(v["x"] - 6, 2) + std::pow(std::log2(v["y"]) - 2, 2) + 0.5 * v["z"]);
  }
  RunResult prepare(const Config& c) {
    if (s.view(c)["x"] == 3) return {Status::build_error, {}, "x == 3 does not compile", 0.5};
    return {Status::ok, {}, {}, 0.5};
  }
  RunResult run(const Config& c, std::size_t runs, tunekit::Rng& rng) {
    RunResult r{Status::ok, {}, {}, 0.0};
    const double t = true_time(s.view(c));
    for (std::size_t i = 0; i < runs; ++i) {
      r.seconds.push_back(t * (1.0 + 0.02 * tunekit::uniform_real(rng)));
      r.simulated_cost += r.seconds.back();
    }
    return r;
  }
};

std::vector<std::pair<std::uint64_t, double>> summary(const tunekit::History& h) {
  std::vector<std::pair<std::uint64_t, double>> out;
  for (const auto& t : h) out.emplace_back(t.index, t.measurement.mean);
  return out;
}

}  // namespace

TEST_CASE("tune() and an ask/tell loop give identical runs for the same seed") {
  NoisyBowl k;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    tunekit::RandomSearchTuner a(k.space(), {.budget = {.trials = 50}, .plan_size = 8});
    tunekit::Rng rng_a(seed);
    a.tune(k, rng_a);

    tunekit::RandomSearchTuner b(k.space(), {.budget = {.trials = 50}, .plan_size = 8});
    tunekit::Deterministic evaluator;
    tunekit::Rng rng_b(seed);
    // tune's first draw seeds the measurement streams; trial i is measured with stream i.
    const std::uint64_t measurement_seed = rng_b();
    while (b.history().size() < 50) {
      const auto batch = b.ask(std::min<std::size_t>(8, 50 - b.history().size()), rng_b);
      REQUIRE(!batch.empty());
      for (const auto& c : batch) {
        tunekit::Rng m = tunekit::RandomSearchTuner::measurement_rng(measurement_seed, b.history().size());
        b.tell(c, evaluator.measure(k, c, m));
      }
    }
    CHECK(summary(a.history()) == summary(b.history()));
    CHECK(a.history().best()->index == b.history().best()->index);
  }
}

TEST_CASE("random search measures distinct valid configs, records failures and exhausts the space") {
  NoisyBowl k;
  const auto valid = k.space().count_valid();
  tunekit::RandomSearchTuner t(k.space(), {.budget = {.trials = 10'000}});
  tunekit::Rng rng(5);
  const auto r = t.tune(k, rng);
  CHECK(r.reason == tunekit::StopReason::space_exhausted);
  CHECK(r.trials == valid);
  std::set<std::uint64_t> seen;
  std::size_t build_errors = 0;
  for (const auto& tr : t.history()) {
    CHECK(k.space().is_valid(tr.config));
    CHECK(seen.insert(tr.index).second);
    if (tr.measurement.status == Status::build_error) {
      ++build_errors;
      CHECK(k.space().view(tr.config)["x"] == 3);
      CHECK(tr.measurement.error == "x == 3 does not compile");
    }
  }
  std::size_t x3 = 0;
  for (auto idx : k.space().valid_indices()) x3 += k.space().view(k.space().from_index(idx))["x"] == 3;
  CHECK(build_errors == x3);
  // Exhaustive search finds the true optimum: x = 6, y = 4, z = 0 (noise is 2%, the runner-up is
  // 50% slower).
  const auto best = k.space().view(r.best->config);
  CHECK(best["x"] == 6);
  CHECK(best["y"] == 4);
  CHECK(best["z"] == 0);
}

TEST_CASE("the trial budget and the tuning-clock budget stop the loop") {
  NoisyBowl k;
  {
    tunekit::RandomSearchTuner t(k.space(), {.budget = {.trials = 37}, .plan_size = 10});
    tunekit::Rng rng(1);
    const auto r = t.tune(k, rng);
    CHECK(r.reason == tunekit::StopReason::trial_budget);
    CHECK(t.history().size() == 37);
  }
  {
    // Each config costs 0.5 s of simulated preparation plus its runs: 10 s buys about 19.
    tunekit::RandomSearchTuner t(k.space(), {.budget = {.trials = 1000, .seconds = 10.0}});
    tunekit::Rng rng(1);
    const auto r = t.tune(k, rng);
    CHECK(r.reason == tunekit::StopReason::time_budget);
    CHECK(t.measurement_seconds() >= 10.0);
    CHECK(t.measurement_seconds() - t.history().trials().back().measurement.cost < 10.0);
    CHECK(t.history().size() >= 15);
    CHECK(t.history().size() <= 20);
  }
}

TEST_CASE("grid search visits the valid configs in lexicographic order") {
  NoisyBowl k;
  tunekit::GridSearchTuner t(k.space(), {.budget = {.trials = 1000}, .plan_size = 7});
  tunekit::Rng rng(1);
  t.tune(k, rng);
  const auto valid = k.space().valid_indices();
  REQUIRE(t.history().size() == valid.size());
  for (std::size_t i = 0; i < valid.size(); ++i) CHECK(t.history()[i].index == valid[i]);
}

TEST_CASE("tell rejects configs measured before or invalid, ask never repeats") {
  NoisyBowl k;
  tunekit::RandomSearchTuner t(k.space());
  tunekit::Rng rng(3);
  const auto batch = t.ask(20, rng);
  std::set<std::uint64_t> seen;
  for (const auto& c : batch) CHECK(seen.insert(k.space().to_index(c)).second);
  tunekit::Measurement m{.status = Status::ok, .samples = {1e-3}, .mean = 1e-3, .std = 0, .cost = 1, .error = {}};
  t.tell(batch[0], m);
  CHECK_THROWS_AS(t.tell(batch[0], m), std::invalid_argument);
  Config invalid = k.space().from_index(0);
  invalid[0] = 99;
  CHECK_THROWS_AS(t.tell(invalid, m), std::invalid_argument);
  // Pending configs are not proposed again until forgotten.
  const auto next = t.ask(1000, rng);
  for (const auto& c : next) CHECK(!seen.contains(k.space().to_index(c)));
  CHECK(next.size() + batch.size() == k.space().count_valid());
  t.forget_pending();
  CHECK(t.ask(1000, rng).size() == k.space().count_valid() - 1);
}

TEST_CASE("bad options are rejected") {
  NoisyBowl k;
  CHECK_THROWS_AS(tunekit::RandomSearchTuner(k.space(), {.budget = {.trials = 0}}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::RandomSearchTuner(k.space(), {.plan_size = 0}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::RandomSearchTuner(k.space(), {.budget = {.trials = 5, .seconds = -1}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(tunekit::RandomSearchTuner(SearchSpace{}), std::invalid_argument);
}

namespace {

// A surrogate that remembers the throughputs it was fitted on and predicts the throughput of the
// nearest fitted row: lets the test see what the tuner feeds the model and what it scores.
struct NearestNeighbour {
  Eigen::MatrixXd x;
  Eigen::VectorXd y;
  int fits = 0;
  void fit(const Eigen::MatrixXd& xs, const Eigen::VectorXd& ys, tunekit::Rng&) {
    x = xs;
    y = ys;
    ++fits;
  }
  Eigen::VectorXd predict(const Eigen::MatrixXd& q) const {
    Eigen::VectorXd out(q.rows());
    for (Eigen::Index i = 0; i < q.rows(); ++i) {
      Eigen::Index best = 0;
      (x.rowwise() - q.row(i)).rowwise().squaredNorm().minCoeff(&best);
      out[i] = y[best];
    }
    return out;
  }
};
static_assert(tunekit::Surrogate<NearestNeighbour>);

// Proposes the n best-scored of all unvisited valid configs (random ones before a model exists).
struct GreedyOverAll {
  int scored_rounds = 0;
  std::vector<Config> propose(const tunekit::SearchContext& ctx, std::size_t n, tunekit::Rng& rng) {
    std::vector<Config> cands;
    for (auto idx : ctx.space.valid_indices())
      if (!ctx.visited.contains(idx)) cands.push_back(ctx.space.from_index(idx));
    if (!ctx.score) return tunekit::RandomSearch().propose(ctx, n, rng);
    ++scored_rounds;
    const auto s = ctx.score(cands);
    std::vector<std::size_t> order(cands.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return s[a] > s[b]; });
    std::vector<Config> out;
    for (std::size_t i = 0; i < std::min(n, order.size()); ++i) out.push_back(cands[order[i]]);
    return out;
  }
};

}  // namespace

TEST_CASE("a model-based tuner fits the surrogate on all history, failures as zero throughput") {
  NoisyBowl k;
  using ModelTuner = tunekit::Tuner<NearestNeighbour, tunekit::PredictedMean, GreedyOverAll>;
  ModelTuner t(k.space(), {.budget = {.trials = 40}, .plan_size = 10});
  tunekit::Rng rng(11);
  t.tune(k, rng);
  CHECK(t.history().size() == 40);
  CHECK(t.surrogate().fits == 3);  // rounds 2, 3, 4 (the first had no measurement)
  CHECK(t.optimizer().scored_rounds == 3);
  // The last fit saw the first 30 trials, failures at 0, successes at their throughput relative
  // to the best of the 30: best mean time / mean time.
  REQUIRE(t.surrogate().y.size() == 30);
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < 30; ++i)
    if (t.history()[i].measurement.ok()) best = std::min(best, t.history()[i].measurement.mean);
  for (std::size_t i = 0; i < 30; ++i) {
    const auto& m = t.history()[i].measurement;
    CHECK(t.surrogate().y[static_cast<Eigen::Index>(i)] == doctest::Approx(m.ok() ? best / m.mean : 0.0));
  }
  CHECK(t.surrogate().y.maxCoeff() == 1.0);
  // Greedy on a nearest-neighbour model of a smooth bowl beats the median random config.
  CHECK(NoisyBowl::true_time(k.space().view(t.history().best()->config)) <= 2.5e-3);
}

namespace {

// NoisyBowl counting the configs it prepares (each measurement prepares its config once).
struct CountingBowl : NoisyBowl {
  std::vector<std::uint64_t> prepared;
  RunResult prepare(const Config& c) {
    prepared.push_back(s.to_index(c));
    return NoisyBowl::prepare(c);
  }
};

// Counts the trials callbacks see as replayed, and checks they all come first.
struct ReplayCounter {
  std::size_t replayed = 0, measured = 0;
  bool replayed_after_measured = false;
  void on_measured(const tunekit::TuningState& s, const tunekit::Trial&) {
    if (s.replayed) {
      ++replayed;
      replayed_after_measured |= measured > 0;
    } else {
      ++measured;
    }
  }
};

std::vector<std::pair<Config, tunekit::Measurement>> first_trials(const tunekit::History& h, std::size_t n) {
  std::vector<std::pair<Config, tunekit::Measurement>> out;
  for (std::size_t i = 0; i < n; ++i) out.emplace_back(h[i].config, h[i].measurement);
  return out;
}

// Exact resume of tuner type T: the first `cut` trials of a run replayed into a fresh tuner give
// the whole run again, measuring only the rest.
template <class T>
void check_exact_resume(const std::string& name) {
  CAPTURE(name);
  constexpr std::size_t budget = 40;
  constexpr std::uint64_t seed = 7;
  const tunekit::TunerOptions options{.budget = {.trials = budget}, .plan_size = 8};
  CountingBowl k0;
  T reference(k0.space(), options);
  tunekit::Rng rng0(seed);
  REQUIRE(reference.tune(k0, rng0).trials == budget);

  for (const std::size_t cut : {std::size_t{0}, std::size_t{13}, std::size_t{16}, budget}) {
    CAPTURE(cut);
    CountingBowl k;
    T resumed(k.space(), options);
    std::ostringstream warn;
    resumed.set_recorded(first_trials(reference.history(), cut), "test", &warn);
    CHECK(resumed.recorded_left() == cut);
    tunekit::Rng rng(seed);
    ReplayCounter counter;
    const auto r = resumed.tune(k, rng, counter);
    CHECK(r.trials == budget);
    CHECK(resumed.recorded_left() == 0);
    CHECK(warn.str().empty());
    CHECK(summary(resumed.history()) == summary(reference.history()));
    CHECK(r.best->index == reference.history().best()->index);
    // Only the configs after the cut were measured, in the reference's order.
    REQUIRE(k.prepared.size() == budget - cut);
    for (std::size_t i = cut; i < budget; ++i) CHECK(k.prepared[i - cut] == reference.history()[i].index);
    CHECK(counter.replayed == cut);
    CHECK(counter.measured == budget - cut);
    CHECK_FALSE(counter.replayed_after_measured);
    // Replayed trials count their recorded cost on the tuning clock.
    CHECK(resumed.measurement_seconds() == doctest::Approx(reference.measurement_seconds()).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("exact resume: replaying the first trials of a run gives the same run (random, AutoTVM, PPO)") {
  check_exact_resume<tunekit::RandomSearchTuner>("random");
  check_exact_resume<tunekit::AutoTvmTuner>("autotvm");
  check_exact_resume<tunekit::PpoTuner>("ppo");
}

TEST_CASE("exact resume: records of another run are all taken, with one warning") {
  CountingBowl k0;
  const tunekit::TunerOptions options{.budget = {.trials = 40}, .plan_size = 8};
  tunekit::AutoTvmTuner other(k0.space(), options);
  tunekit::Rng rng0(8);
  other.tune(k0, rng0);

  SUBCASE("another seed: the first config the run proposes is not recorded") {
    CountingBowl k;
    tunekit::AutoTvmTuner t(k.space(), options);
    std::ostringstream warn;
    t.set_recorded(first_trials(other.history(), 20), "other.jsonl", &warn);
    tunekit::Rng rng(7);
    ReplayCounter counter;
    CHECK(t.tune(k, rng, counter).trials == 40);
    CHECK(t.recorded_left() == 0);
    const std::string w = warn.str();
    CHECK(std::count(w.begin(), w.end(), '\n') == 1);
    CHECK(w.find("other.jsonl") != std::string::npos);
    CHECK(w.find("not recorded") != std::string::npos);
    // Every recorded trial is in the history, none measured again, nothing twice.
    std::set<std::uint64_t> in_history, distinct(k.prepared.begin(), k.prepared.end());
    for (const auto& tr : t.history()) CHECK(in_history.insert(tr.index).second);
    for (std::size_t i = 0; i < 20; ++i) {
      CHECK(in_history.count(other.history()[i].index) == 1);
      CHECK(distinct.count(other.history()[i].index) == 0);
    }
    // 40 = the 20 recorded (replayed before the divergence, or taken at it) + 20 measured.
    CHECK(t.history().size() == 40);
    CHECK(k.prepared.size() == 20);
  }
  SUBCASE("a smaller budget: the records beyond it are taken when the run stops") {
    CountingBowl k;
    tunekit::AutoTvmTuner t(k.space(), {.budget = {.trials = 30}, .plan_size = 8});
    std::ostringstream warn;
    t.set_recorded(first_trials(other.history(), 40), "other.jsonl", &warn);
    tunekit::Rng rng(8);
    CHECK(t.tune(k, rng).reason == tunekit::StopReason::trial_budget);
    CHECK(k.prepared.empty());
    std::set<std::uint64_t> taken, recorded;
    for (const auto& tr : t.history()) taken.insert(tr.index);
    for (const auto& tr : other.history()) recorded.insert(tr.index);
    CHECK(t.history().size() == 40);
    CHECK(taken == recorded);
    // The warning says why: the run either stopped at 30 with 10 unused (the usual case) or its
    // last, shorter batch (6 asked instead of 8) already left the recorded path.
    const std::string w = warn.str();
    CHECK(std::count(w.begin(), w.end(), '\n') == 1);
    CHECK(w.find("other.jsonl") != std::string::npos);
  }
  SUBCASE("set_recorded needs a fresh tuner and distinct valid configs") {
    tunekit::AutoTvmTuner t(k0.space(), options);
    auto twice = first_trials(other.history(), 2);
    twice.push_back(twice.front());
    CHECK_THROWS_AS(t.set_recorded(twice), std::invalid_argument);
    t.tell(other.history()[0].config, other.history()[0].measurement);
    CHECK_THROWS_AS(t.set_recorded(first_trials(other.history(), 2)), std::invalid_argument);
  }
}
