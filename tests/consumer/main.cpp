// A user's program, built with -Wall -Wextra -Wpedantic -Werror (tests/consumer/CMakeLists.txt):
// tunekit's headers and every template the program instantiates must compile warning-free in a
// user's build. Tunes a small synthetic kernel whose best config is known with several presets,
// an isolated evaluator, a log with exact resume and a multi-task run, through the public header
// (the add_subdirectory build: random search, its log and the exact resume only).
#include <tunekit/tunekit.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

struct Quadratic {
  tunekit::SearchSpace s;
  Quadratic() {
    s.add(tunekit::Knob::range("x", 0, 15)).add(tunekit::Knob::power_of_two("tile", 1, 64));
    s.add_constraint("x % 2 == 0", [](const tunekit::ConfigView& c) { return c["x"] % 2 == 0; });
  }
  const tunekit::SearchSpace& space() const { return s; }
  double flop() const { return 1e6; }
  std::string name() const { return "quadratic"; }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t runs, tunekit::Rng&) {
    const auto v = s.view(c);
    const double t = 1e-3 * (1.0 + (v["x"] - 6) * (v["x"] - 6) + (v["tile"] - 8) * (v["tile"] - 8) / 64.0);
    return {tunekit::Status::ok, std::vector<double>(runs, t), {}, -1.0};
  }
};

// A preset over the whole space (56 valid configs) must find the optimum x=6, tile=8. The
// options use designated initialisers that leave fields out, as the docs do.
template <class TunerT, class... Callbacks>
bool finds_optimum(const char* name, typename TunerT::Parts parts = {}, Callbacks&&... callbacks) {
  Quadratic k;
  tunekit::Rng rng(7);
  TunerT tuner(k.space(), {.budget = {.trials = 56}, .plan_size = 8}, std::move(parts));
  const auto r = tuner.tune(k, rng, std::forward<Callbacks>(callbacks)...);
  if (!r.best) return false;
  const auto best = k.space().view(r.best->config);
  std::printf("%s: best x=%lld tile=%lld after %zu trials (%s)\n", name, static_cast<long long>(best["x"]),
              static_cast<long long>(best["tile"]), r.trials, tunekit::to_string(r.reason));
  return best["x"] == 6 && best["tile"] == 8 && r.trials == 56;
}

int main(int, char** argv) {
  namespace fs = std::filesystem;
  // Next to the program: the two consumer builds (find_package, add_subdirectory) run at once.
  const fs::path log = fs::absolute(argv[0]).parent_path() / "tunekit_consumer.jsonl";
  fs::remove(log);
  bool ok = finds_optimum<tunekit::RandomSearchTuner>("random", {}, tunekit::LogToFile(log));
  {
    // Exact resume of the finished run: nothing is measured again, the same best comes out.
    tunekit::RandomSearchTuner again(Quadratic().space(), {.budget = {.trials = 56}, .plan_size = 8});
    ok = tunekit::resume_exact(again, log, "quadratic") == 56 && ok;
  }
  fs::remove(log);
#if defined(TUNEKIT_CONSUMER_SMALL)
  return ok ? 0 : 1;
#else
  ok = finds_optimum<tunekit::AutoTvmTuner>("autotvm") && ok;
  ok = finds_optimum<tunekit::AdaTuneTuner>("adatune", {.evaluator = tunekit::AdaptiveCV({.max_runs = 8, .batch = 2})}) && ok;
  ok = finds_optimum<tunekit::ChameleonTuner>("chameleon") && ok;
  ok = finds_optimum<tunekit::WithEvaluator<tunekit::RandomSearchTuner, tunekit::Isolated<tunekit::Deterministic>>>(
           "random, isolated") && ok;

  // Two tasks in slots given out by DynaTune's bandit.
  std::vector<Quadratic> kernels(2);
  tunekit::MultiTaskTuner<tunekit::AnyScheduler, tunekit::AutoTvmTuner> mt(tunekit::make_scheduler("bandit"),
                                                                           {.budget = {.trials = 112}, .slot_trials = 8});
  mt.add_task(kernels[0], {.name = "a"});
  mt.add_task(kernels[1], {.name = "b", .weight = 2.0});
  tunekit::Rng rng(3);
  const auto r = mt.tune(kernels, rng);
  std::printf("multi-task: %zu trials in %zu slots, objective %.3f ms\n", r.trials, r.slots, r.objective * 1e3);
  ok = r.trials == 112 && std::abs(r.objective - 3e-3) < 1e-12 && ok;
  return ok ? 0 : 1;
#endif
}
