// Tunes a small synthetic kernel whose best config is known, through the public header only.
#include <tunekit/tunekit.hpp>

#include <cstdio>

struct Quadratic {
  tunekit::SearchSpace s;
  Quadratic() {
    s.add(tunekit::Knob::range("x", 0, 15)).add(tunekit::Knob::power_of_two("tile", 1, 64));
    s.add_constraint("x % 2 == 0", [](const tunekit::ConfigView& c) { return c["x"] % 2 == 0; });
  }
  const tunekit::SearchSpace& space() const { return s; }
  double flop() const { return 1e6; }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t runs, tunekit::Rng&) {
    const auto v = s.view(c);
    const double t = 1e-3 * (1.0 + (v["x"] - 6) * (v["x"] - 6) + (v["tile"] - 8) * (v["tile"] - 8) / 64.0);
    return {tunekit::Status::ok, std::vector<double>(runs, t), {}, -1.0};
  }
};

int main() {
  Quadratic k;
  tunekit::Rng rng(7);
  tunekit::RandomSearchTuner tuner(k.space(), {.budget = {.trials = 100}});
  const auto r = tuner.tune(k, rng);
  if (!r.best) return 1;
  const auto best = k.space().view(r.best->config);
  std::printf("best x=%lld tile=%lld after %zu trials (%s)\n", static_cast<long long>(best["x"]),
              static_cast<long long>(best["tile"]), r.trials, tunekit::to_string(r.reason));
  // 8 x 7 = 56 valid configs: random search exhausts them and must find x=6, tile=8.
  return best["x"] == 6 && best["tile"] == 8 && r.trials == 56 ? 0 : 1;
}
