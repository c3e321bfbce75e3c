// The ask/tell interface as another auto-tuner embeds it: measurements built from run times,
// mistakes refused with a clear error, the budget kept, pending configs, logging and resume.
#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/records/log.hpp>

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace {

using tunekit::Config;
using tunekit::Knob;
using tunekit::Measurement;
using tunekit::SearchSpace;
using tunekit::Status;

// 20 x 15 = 300 configs.
SearchSpace grid_space() {
  SearchSpace s;
  s.add(Knob::range("x", 0, 19)).add(Knob::range("y", 0, 14));
  return s;
}

// Run times of a config: 1 ms plus its distance from (7, 3), three runs.
std::vector<double> run_times(const SearchSpace& s, const Config& c) {
  const auto v = s.view(c);
  const double t = 1e-3 * (1.0 + std::abs(v["x"] - 7) + std::abs(v["y"] - 3));
  return {t, 1.1 * t, 0.9 * t};
}

}  // namespace

TEST_CASE("Measurement::from_samples and ::failure build what tell accepts") {
  const Measurement m = Measurement::from_samples({1e-3, 2e-3, 3e-3});
  CHECK(m.ok());
  CHECK(m.mean == doctest::Approx(2e-3));
  CHECK(m.std == doctest::Approx(1e-3));  // sample std of 1, 2, 3 ms
  CHECK(m.cost == doctest::Approx(6e-3));  // the runs' sum when no cost is given
  CHECK(Measurement::from_samples({1e-3}, 0.5).cost == 0.5);
  CHECK_THROWS_WITH_AS(Measurement::from_samples({}), "Measurement::from_samples: no samples", std::invalid_argument);
  CHECK_THROWS_AS(Measurement::from_samples({1e-3, std::numeric_limits<double>::quiet_NaN()}), std::invalid_argument);
  CHECK_THROWS_AS(Measurement::from_samples({1e-3, -1e-3}), std::invalid_argument);
  const Measurement f = Measurement::failure(Status::build_error, "no such register", 0.25);
  CHECK(f.status == Status::build_error);
  CHECK(f.error == "no such register");
  CHECK(f.cost == 0.25);
  CHECK_THROWS_AS(Measurement::failure(Status::ok, "?"), std::invalid_argument);
}

TEST_CASE("tell refuses a success without a finite mean and a cost that is not finite") {
  tunekit::RandomSearchTuner t(grid_space());
  tunekit::Rng rng(1);
  const auto batch = t.ask(3, rng);
  // Samples without mean and std: the mistake that made 24 successes of throughput 0.
  Measurement samples_only;
  samples_only.samples = {1e-3, 2e-3};
  CHECK_THROWS_WITH_AS(t.tell(batch[0], samples_only), doctest::Contains("needs a finite positive mean"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(t.tell(batch[0], samples_only), doctest::Contains("Measurement::from_samples"),
                       std::invalid_argument);
  Measurement negative_cost = Measurement::from_samples({1e-3});
  negative_cost.cost = -1;
  CHECK_THROWS_WITH_AS(t.tell(batch[0], negative_cost), doctest::Contains("has cost -1"), std::invalid_argument);
  CHECK(t.history().empty());
  // A failure needs no mean; a success built from samples is taken.
  t.tell(batch[0], Measurement::failure(Status::runtime_error, "crashed"));
  t.tell(batch[1], Measurement::from_samples(run_times(t.space(), batch[1])));
  CHECK(t.history().size() == 2);
  CHECK(t.history().best() == &t.history()[1]);
}

TEST_CASE("ask keeps the trial and time budgets, counting pending configs") {
  tunekit::RandomSearchTuner t(grid_space(), {.budget = {.trials = 10, .seconds = 100}});
  tunekit::Rng rng(2);
  auto batch = t.ask(16, rng);
  CHECK(batch.size() == 10);  // the budget has 10 trials
  CHECK(t.pending() == 10);
  CHECK(t.ask(16, rng).empty());  // all 10 are out
  for (std::size_t i = 0; i < 4; ++i) t.tell(batch[i], Measurement::from_samples(run_times(t.space(), batch[i])));
  CHECK(t.pending() == 6);
  CHECK(t.ask(16, rng).empty());  // 4 told + 6 pending = 10
  t.forget_pending();
  CHECK(t.pending() == 0);
  batch = t.ask(16, rng);
  CHECK(batch.size() == 6);
  for (const auto& c : batch) t.tell(c, Measurement::from_samples(run_times(t.space(), c)));
  CHECK(t.budget_spent());
  CHECK(t.ask(16, rng).empty());

  // The time budget: measurements that cost 60 s each spend 100 s after two.
  tunekit::RandomSearchTuner timed(grid_space(), {.budget = {.trials = 100, .seconds = 100}});
  for (const auto& c : timed.ask(2, rng)) timed.tell(c, Measurement::from_samples({1e-3}, 60.0));
  CHECK(timed.budget_spent());
  CHECK(timed.ask(4, rng).empty());
}

TEST_CASE("pending configs stay reserved until told or forgotten") {
  // The embedding that lost half the space: 288 asked, 144 told, then nothing more to ask.
  tunekit::RandomSearchTuner t(grid_space());
  tunekit::Rng rng(3);
  const auto asked = t.ask(288, rng);
  REQUIRE(asked.size() == 288);
  for (std::size_t i = 0; i < 144; ++i) t.tell(asked[i], Measurement::from_samples(run_times(t.space(), asked[i])));
  CHECK(t.pending() == 144);
  const auto rest = t.ask(300, rng);  // only the 12 configs never handed out
  CHECK(rest.size() == 12);
  CHECK(t.pending() == 156);
  CHECK(t.ask(300, rng).empty());
  t.forget_pending();  // the 156 never told come back
  const auto again = t.ask(300, rng);
  CHECK(again.size() == 156);
  std::set<std::uint64_t> told;
  for (const auto& tr : t.history()) told.insert(tr.index);
  for (const auto& c : again) CHECK(!told.contains(t.space().to_index(c)));
}

TEST_CASE("an ask/tell loop logs with tell's callbacks and resumes from its log") {
  tunekit::test::TempDir dir;
  const auto log = dir.path / "asktell.jsonl";
  const SearchSpace space = grid_space();
  auto loop = [&](tunekit::RandomSearchTuner& t, std::size_t trials, std::uint64_t seed) {
    tunekit::Rng rng(seed);
    tunekit::LogToFile logger(log);
    while (t.history().size() < trials) {
      const auto batch = t.ask(8, rng);
      if (batch.empty()) break;
      for (const auto& c : batch) t.tell(c, Measurement::from_samples(run_times(t.space(), c)), logger);
    }
  };
  {
    tunekit::RandomSearchTuner first(space, {.budget = {.trials = 40}, .task = "asktell"});
    loop(first, 24, 4);  // "killed" after 24 trials
    CHECK(first.history().size() == 24);
  }
  tunekit::RandomSearchTuner second(space, {.budget = {.trials = 40}, .task = "asktell"});
  CHECK(tunekit::resume(second, log, "asktell") == 24);
  loop(second, 40, 5);
  CHECK(second.history().size() == 40);
  CHECK(second.budget_spent());
  // The log holds each of the 40 configs once, the resumed ones not written again.
  const auto records = tunekit::read_records(log, space, "asktell");
  CHECK(records.size() == 40);
  std::set<std::uint64_t> configs;
  for (const auto& r : records) configs.insert(space.to_index(r.config));
  CHECK(configs.size() == 40);
}

TEST_CASE("tune refuses a kernel whose space differs from the tuner's, naming the difference") {
  struct Kernel {
    SearchSpace s;
    const SearchSpace& space() const { return s; }
    double flop() const { return 1; }
    tunekit::RunResult run(const Config& c, std::size_t runs, tunekit::Rng&) {
      return {Status::ok, std::vector<double>(runs, run_times(s, c)[0]), {}, -1.0};
    }
  };
  SearchSpace wider;
  wider.add(Knob::range("x", 0, 29)).add(Knob::range("y", 0, 14));  // same knobs, other values
  Kernel k{wider};
  tunekit::RandomSearchTuner t(grid_space(), {.budget = {.trials = 5}});
  tunekit::Rng rng(6);
  CHECK_THROWS_WITH_AS(t.tune(k, rng), doctest::Contains("the kernel's space differs from the tuner's: knob 'x' has values"),
                       std::invalid_argument);
  CHECK(t.history().empty());
  Kernel same{grid_space()};
  CHECK(t.tune(same, rng).trials == 5);
}

TEST_CASE("ask/tell: with TunerOptions::parallel W, tunekit's search hands out W configs a round") {
  // A caller that measures four configs at once says so (a farm's `tune` says it by itself):
  // each ask(4) of TreeParzen<> returns 4 configs, the start's, the model start's and the mix's.
  tunekit::SearchSpace s;
  for (const char* n : {"a", "b", "c"}) s.add(tunekit::Knob::range(n, 0, 15));
  tunekit::Tuner<tunekit::NoSurrogate, tunekit::PredictedMean, tunekit::TreeParzen<>> tuner(
      s, {.budget = {.trials = 120}, .parallel = 4});
  tunekit::Rng rng(3);
  std::size_t rounds = 0;
  for (auto batch = tuner.ask(4, rng); !batch.empty(); batch = tuner.ask(4, rng), ++rounds) {
    CHECK(batch.size() == 4);
    for (const auto& c : batch)
      tuner.tell(c, tunekit::Measurement::from_samples({1.0 + c[0] + 0.5 * c[1] + 0.25 * c[2]}, 0.0));
  }
  CHECK(rounds == 30);
  CHECK(tunekit::detail::farm_workers(tunekit::detail::NoFarm{}) == 1);
}
