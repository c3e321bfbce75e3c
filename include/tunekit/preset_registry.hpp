#pragma once
/// \file
/// The tuner presets (presets.hpp) by name, for programs that take one on the command line.

#include "tunekit/evaluator/adaptive_cv.hpp"
#include "tunekit/evaluator/deterministic.hpp"
#include "tunekit/presets.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace tunekit {

/// A preset's name on the command line and a one-line description for --help.
struct PresetInfo {
  std::string_view name;
  std::string_view description;
};

/// Every preset with_preset accepts, in the order --help lists them (presets.hpp has their
/// types: TpeTuner, TpeLocalTuner, TpeGpTuner, TpeGpRfTuner, TpeGpRfRestartsTuner,
/// RandomSearchTuner, GridSearchTuner, AutoTvmTuner, AdaTuneTuner, RfEiSaTuner,
/// RfEiCsaTuner, ChameleonTuner, SaAsTuner, PpoTuner).
inline constexpr std::array<PresetInfo, 14> preset_infos{{
    {"tpe", "tunekit's search, TreeParzen<> (docs/concepts.md): the default"},
    {"tpe-local", "tunekit's search: maximin start, TPE with local moves, failure model"},
    {"tpe-gp", "tpe-local with a Gaussian process picking up to 40 configs"},
    {"tpe-gp-rf", "tpe-gp with a random forest and the GP picking in turns"},
    {"tpe-gp-rf-restarts", "tpe's parts and a GP's pick among the sources, the default before tpe"},
    {"random", "random search without replacement"},
    {"grid", "every valid config in lexicographic order"},
    {"autotvm", "AutoTVM's XGBTuner: boosted trees, simulated annealing"},
    {"adatune", "AdaTune: forest, EI, contextual annealing, adaptive measuring"},
    {"rfei-sa", "AdaTune's ablation: forest, EI, simulated annealing"},
    {"rfei-csa", "AdaTune's ablation: rfei-sa with contextual annealing"},
    {"chameleon", "Chameleon: boosted trees, PPO, adaptive sampling"},
    {"sa-as", "Chameleon's ablation: autotvm with adaptive sampling"},
    {"ppo", "Chameleon's ablation: autotvm with PPO for the annealing"},
}};

/// The preset of tunekit-replay, the tuning programs and the Python bindings when none is named:
/// tpe, TreeParzen<> (docs/concepts.md).
inline constexpr std::string_view default_preset = "tpe";

/// The preset names, comma-separated: "random, grid, autotvm, ...".
inline std::string preset_names() {
  std::string names;
  for (const auto& p : preset_infos) (names += names.empty() ? "" : ", ") += p.name;
  return names;
}

/// The --help lines of the presets: one per preset, `indent` spaces, the name padded to one
/// column, its description.
inline std::string preset_help(std::size_t indent) {
  std::size_t width = 0;
  for (const auto& p : preset_infos) width = std::max(width, p.name.size());
  std::string text;
  for (const auto& p : preset_infos) {
    text.append(indent, ' ');
    text += p.name;
    text.append(width + 2 - p.name.size(), ' ');
    text += p.description;
    text += '\n';
  }
  return text;
}

namespace detail {
inline std::invalid_argument unknown_preset(std::string_view name) {
  return std::invalid_argument("unknown tuner preset '" + std::string(name) + "' (available: " + preset_names() +
                               ")");
}
}  // namespace detail

/// Whether with_preset knows this name.
inline bool is_preset(std::string_view name) {
  for (const auto& p : preset_infos)
    if (p.name == name) return true;
  return false;
}

/// Throws with_preset's std::invalid_argument for a name it does not know (the name and the known
/// ones), for programs that check their options before they start.
inline void check_preset(std::string_view name) {
  if (!is_preset(name)) throw detail::unknown_preset(name);
}

/// Calls `f.template operator()<TunerT>()` with the preset of this name (see preset_infos) and
/// returns its result, e.g. `with_preset(name, [&]<class T>() { return run<T>(kernel); })`.
/// Every preset is instantiated. Throws std::invalid_argument naming the unknown name and the
/// known ones.
template <class F>
decltype(auto) with_preset(std::string_view name, F&& f) {
  if (name == "tpe") return f.template operator()<TpeTuner>();
  if (name == "tpe-local") return f.template operator()<TpeLocalTuner>();
  if (name == "tpe-gp") return f.template operator()<TpeGpTuner>();
  if (name == "tpe-gp-rf") return f.template operator()<TpeGpRfTuner>();
  if (name == "tpe-gp-rf-restarts") return f.template operator()<TpeGpRfRestartsTuner>();
  if (name == "random") return f.template operator()<RandomSearchTuner>();
  if (name == "grid") return f.template operator()<GridSearchTuner>();
  if (name == "autotvm") return f.template operator()<AutoTvmTuner>();
  if (name == "adatune") return f.template operator()<AdaTuneTuner>();
  if (name == "rfei-sa") return f.template operator()<RfEiSaTuner>();
  if (name == "rfei-csa") return f.template operator()<RfEiCsaTuner>();
  if (name == "chameleon") return f.template operator()<ChameleonTuner>();
  if (name == "sa-as") return f.template operator()<SaAsTuner>();
  if (name == "ppo") return f.template operator()<PpoTuner>();
  throw detail::unknown_preset(name);
}

/// The evaluator of preset TunerT with a program's measurement parameters: AdaptiveCV(adaptive)
/// for a preset that measures adaptively (adatune), Deterministic(deterministic) for the others.
template <class TunerT>
typename TunerT::Evaluator preset_evaluator(const DeterministicParams& deterministic,
                                            const AdaptiveCVParams& adaptive) {
  using E = typename TunerT::Evaluator;
  static_assert(std::is_same_v<E, Deterministic> || std::is_same_v<E, AdaptiveCV>,
                "preset_evaluator: a preset measures with Deterministic or AdaptiveCV");
  if constexpr (std::is_same_v<E, AdaptiveCV>)
    return AdaptiveCV(adaptive);
  else
    return Deterministic(deterministic);
}

}  // namespace tunekit
