// Sampling a valid config of the GEMM space (shared/datasets: 17956 valid of 82944): rejection
// sampling (what SearchSpace::sample does) against the reference of picking from the enumerated
// valid set, side by side.
#include <tunekit/space/search_space.hpp>

#include <benchmark/benchmark.h>

namespace {

tunekit::SearchSpace gemm_space() {
  using tunekit::Knob;
  tunekit::SearchSpace s;
  s.add(Knob::power_of_two("MWG", 16, 128)).add(Knob::power_of_two("NWG", 16, 128));
  for (const char* n : {"MDIMC", "NDIMC", "MDIMA", "NDIMB"}) s.add(Knob::power_of_two(n, 8, 32));
  s.add(Knob::power_of_two("VWM", 1, 8)).add(Knob::power_of_two("VWN", 1, 8));
  s.add(Knob::boolean("SA")).add(Knob::boolean("SB")).add_constant("KWG", 32);
  s.add_constraint("MWG % (MDIMC*VWM) == 0", [](const tunekit::ConfigView& c) { return c["MWG"] % (c["MDIMC"] * c["VWM"]) == 0; });
  s.add_constraint("NWG % (NDIMC*VWN) == 0", [](const tunekit::ConfigView& c) { return c["NWG"] % (c["NDIMC"] * c["VWN"]) == 0; });
  s.add_constraint("MWG % (MDIMA*VWM) == 0", [](const tunekit::ConfigView& c) { return c["MWG"] % (c["MDIMA"] * c["VWM"]) == 0; });
  s.add_constraint("NWG % (NDIMB*VWN) == 0", [](const tunekit::ConfigView& c) { return c["NWG"] % (c["NDIMB"] * c["VWN"]) == 0; });
  s.add_constraint("KWG % ((MDIMC*NDIMC)/MDIMA) == 0", [](const tunekit::ConfigView& c) { return c["KWG"] % ((c["MDIMC"] * c["NDIMC"]) / c["MDIMA"]) == 0; });
  s.add_constraint("KWG % ((MDIMC*NDIMC)/NDIMB) == 0", [](const tunekit::ConfigView& c) { return c["KWG"] % ((c["MDIMC"] * c["NDIMC"]) / c["NDIMB"]) == 0; });
  return s;
}

void BM_sample_rejection(benchmark::State& state) {
  const auto s = gemm_space();
  tunekit::Rng rng(1);
  for (auto _ : state) benchmark::DoNotOptimize(s.sample(rng));
}
BENCHMARK(BM_sample_rejection);

void BM_sample_enumerated_reference(benchmark::State& state) {
  const auto s = gemm_space();
  const auto valid = s.valid_indices();  // enumerated once, outside the loop
  tunekit::Rng rng(1);
  for (auto _ : state)
    benchmark::DoNotOptimize(s.from_index(valid[tunekit::uniform_index(rng, valid.size())]));
}
BENCHMARK(BM_sample_enumerated_reference);

void BM_enumerate_valid(benchmark::State& state) {
  for (auto _ : state) {
    auto s = gemm_space();  // fresh space: no cached enumeration
    benchmark::DoNotOptimize(s.count_valid());
  }
}
BENCHMARK(BM_enumerate_valid)->Unit(benchmark::kMillisecond);

}  // namespace
