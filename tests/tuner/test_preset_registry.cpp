// The preset registry: every listed name reaches its preset, an unknown name is a clear error.
#include <tunekit/preset_registry.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>

using namespace tunekit;

namespace {
template <class T>
bool is(std::string_view name) {
  return with_preset(name, []<class TunerT>() { return std::is_same_v<TunerT, T>; });
}
}  // namespace

TEST_CASE("with_preset: each name gives its preset") {
  CHECK(is<TpeTuner>("tpe"));
  CHECK(is<TpeLocalTuner>("tpe-local"));
  CHECK(is<TpeGpTuner>("tpe-gp"));
  CHECK(is<TpeGpRfTuner>("tpe-gp-rf"));
  CHECK(is<TpeGpRfRestartsTuner>("tpe-gp-rf-restarts"));
  CHECK(is<RandomSearchTuner>("random"));
  CHECK(is<GridSearchTuner>("grid"));
  CHECK(is<AutoTvmTuner>("autotvm"));
  CHECK(is<AdaTuneTuner>("adatune"));
  CHECK(is<RfEiSaTuner>("rfei-sa"));
  CHECK(is<RfEiCsaTuner>("rfei-csa"));
  CHECK(is<ChameleonTuner>("chameleon"));
  CHECK(is<SaAsTuner>("sa-as"));
  CHECK(is<PpoTuner>("ppo"));
  // The list --help shows holds exactly the names with_preset takes, each once, with distinct types.
  std::set<std::string> names, types;
  for (const auto& p : preset_infos) {
    CAPTURE(p.name);
    CHECK(is_preset(p.name));
    CHECK_FALSE(p.description.empty());
    names.insert(std::string(p.name));
    types.insert(with_preset(p.name, []<class TunerT>() { return std::string(typeid(TunerT).name()); }));
  }
  CHECK(names.size() == preset_infos.size());
  CHECK(types.size() == preset_infos.size());
  CHECK(preset_names() ==
        "tpe, tpe-local, tpe-gp, tpe-gp-rf, tpe-gp-rf-restarts, random, grid, autotvm, adatune, rfei-sa, rfei-csa, "
        "chameleon, sa-as, ppo");
  const std::string help = preset_help(4);
  CHECK(static_cast<std::size_t>(std::count(help.begin(), help.end(), '\n')) == preset_infos.size());
  CHECK(help.rfind("    tpe  ", 0) == 0);
}

TEST_CASE("the default preset is tpe, one of the presets") {
  CHECK(default_preset == "tpe");
  CHECK(is_preset(default_preset));
  CHECK(with_preset(default_preset, []<class TunerT>() { return std::is_same_v<TunerT, TpeTuner>; }));
}

TEST_CASE("with_preset: an unknown name throws, naming it and the known ones") {
  const char* const message =
      "unknown tuner preset 'xgb' (available: tpe, tpe-local, tpe-gp, tpe-gp-rf, tpe-gp-rf-restarts, random, grid, autotvm, "
      "adatune, rfei-sa, rfei-csa, chameleon, sa-as, ppo)";
  CHECK_FALSE(is_preset("xgb"));
  CHECK_THROWS_WITH_AS(with_preset("xgb", []<class TunerT>() { return 0; }), message, std::invalid_argument);
  CHECK_THROWS_WITH_AS(check_preset("xgb"), message, std::invalid_argument);
  CHECK_NOTHROW(check_preset("ppo"));
}

TEST_CASE("preset_evaluator: adatune measures adaptively, the others deterministically") {
  const DeterministicParams d{.warmup = 2, .repeat = 7};
  const AdaptiveCVParams a{.max_runs = 30, .batch = 3};
  static_assert(std::is_same_v<decltype(preset_evaluator<AdaTuneTuner>(d, a)), AdaptiveCV>);
  static_assert(std::is_same_v<decltype(preset_evaluator<AutoTvmTuner>(d, a)), Deterministic>);
  CHECK(preset_evaluator<AutoTvmTuner>(d, a).params().repeat == 7);
  CHECK(preset_evaluator<AdaTuneTuner>(d, a).params().max_runs == 30);
}
