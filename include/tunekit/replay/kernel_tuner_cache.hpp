#pragma once
/// \file
/// Kernel Tuner cache files (the `cache=` option of kernel_tuner.tune_kernel), and T4 results
/// files (below), replayed as a ReplayKernel.
///
/// Format (Kernel Tuner's util.py: process_cache, store_cache, read_cache), one JSON object:
///
///     {"device_name": "...", "kernel_name": "...", "problem_size": [...],
///      "tune_params_keys": ["block_size_x", ...], "tune_params": {"block_size_x": [16, 32], ...},
///      "objective": "time",
///      "cache": {"16,1,...": {"block_size_x": 16, ..., "time": 1.25, "times": [1.3, 1.2, ...], ...},
///                "32,1,...": {"block_size_x": 32, ..., "time": "CompilationFailedConfig", ...}}}
///
/// Kernel Tuner writes the header up to `"cache": {`, appends one `"key": {...},` line per
/// measured configuration, and closes the file (drops the last comma, appends "}\n}") when
/// tune_kernel returns. A file of a session that is still running or was killed lacks the
/// closing; it is read as Kernel Tuner reads it (read_cache): the trailing comma dropped and the
/// brackets appended. A last line cut off in the middle of its write (which Kernel Tuner itself
/// cannot read) is dropped with a warning.
///
/// The replay's rows: one per cache entry, sorted by parameter values. "time" is the mean time in
/// ms; "times" the recorded run times in ms (when absent, "time" is the only sample). An entry
/// with a value "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig" or "ErrorConfig"
/// is a failed configuration (a runtime_error when replayed, like `inf` in a dataset CSV), as
/// Kernel Tuner's read_cache tells one: its "__error__" from Kernel Tuner 1.0 on, its "time"
/// before.
///
/// The objective replayed is the file's "objective" ("time" when it names none; a list of several,
/// as Kernel Tuner 1.4 writes for a multi-objective run, needs one chosen), or the one
/// ReplayOptions::objective names. For an objective other than time each entry's value of it (a
/// finite positive number; a failure name for a failed configuration) is the config's one
/// sample, as it is or, better higher, as 1 / it (ReplayOptions::higher_is_better), and "time"
/// is the run time the simulated clock is charged (none where it is absent).
///
/// A parameter of integers (true and false read as 1 and 0) is a knob as a CSV column is
/// (ReplayKernel); one of other numbers (floats) a ranked knob (Knob::ranked: ordered by value,
/// written by its values' JSON text); one of strings, or of a mix, a categorical knob over its
/// values (a string's text, any other value's JSON text) in the order tune_params lists them. Each
/// entry's value must be one of tune_params' (when present; else the values are those of the
/// entries). A cache of a brute-force run replays the whole space; a cache of a partial search
/// replays only the configurations it measured. The other per-entry fields (compile_time, ...) are
/// not used. Python's NaN, Infinity and -Infinity (not JSON; Kernel Tuner's json.dumps writes them
/// for non-finite floats) read as null. A gzipped file (benchmark_hub's `*.json.gz`) reads the
/// same.
///
/// A file in the T4 format (the "Open Autotuning Results Schema" of the autotuning methodology,
/// which Kernel Tuner's store_output_file and KTT write; told from a cache by its "results" list)
/// is read too: one row per result, the parameters those of the first result's "configuration",
/// in its order, their values as above (the results' values, there are no tune_params). A result
/// whose "invalidity" is "correct" has as samples its "times"."runtimes" (in metadata.timeunit,
/// milliseconds when absent) and as mean time its measurement named "time" (in its "unit", or the
/// time unit when that is empty), else the runtimes' mean; "compile", "runtime", "timeout",
/// "correctness" and "constraints" are failed configurations (as Kernel Tuner's InvalidConfig is
/// in a cache). The objective is the first result's first "objectives" ("time" when it has
/// none) or the options'; another than time is the measurement of its name, replayed as a
/// cache's is, the time charged the mean time.

#include "tunekit/replay/replay_kernel.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tunekit {

/// Whether Kernel Tuner counts a higher value of the objective `name` as better (its
/// objective_default_map, kernel_tuner/util.py); nullopt for a name it has no default for.
inline std::optional<bool> kernel_tuner_higher_is_better(std::string_view name) {
  for (const std::string_view lower : {"time", "energy", "cost", "loss"})
    if (name == lower) return false;
  for (const std::string_view higher :
       {"fitness", "GFLOP/s", "TFLOP/s", "GB/s", "TB/s", "GFLOPS/W", "TFLOPS/W", "GFLOP/J", "TFLOP/J"})
    if (name == higher) return true;
  return std::nullopt;
}

namespace detail {

/// The text of a cache file as Kernel Tuner's read_cache sees it: whitespace trimmed, a trailing
/// comma dropped and "}\n}" appended when the file was not closed.
inline std::string close_kernel_tuner_cache(std::string_view text) {
  constexpr std::string_view space = " \t\r\n\f\v";
  const auto first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  text = text.substr(first, text.find_last_not_of(space) - first + 1);
  if (text.ends_with("}\n}") || text.ends_with("}}}")) return std::string(text);
  if (text.ends_with(',')) text.remove_suffix(1);
  return std::string(text) + "}\n}";
}

/// The text with Python's non-JSON number literals (json.dumps writes NaN, Infinity and
/// -Infinity for non-finite floats, e.g. an observer's metric) outside strings replaced by null.
inline std::string python_literals_to_null(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const std::string_view literal : {"NaN", "Infinity", "-Infinity"})
      if (text.substr(i).starts_with(literal)) {
        out += "null";
        i += literal.size() - 1;
        replaced = true;
        break;
      }
    if (!replaced) out += c;
  }
  return out;
}

/// Reads a JSON text no further than the first of the top-level keys "cache" and "results" (SAX
/// events, no document built): which one that is tells a cache from a T4 results file before
/// the one full parse, into the document type each one needs. `first` stays empty where neither
/// key comes before the text ends or turns out malformed.
struct FirstKeyScan {
  using Json = nlohmann::json;
  std::size_t depth = 0;
  std::string first{};

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(Json::number_integer_t) { return true; }
  bool number_unsigned(Json::number_unsigned_t) { return true; }
  bool number_float(Json::number_float_t, const Json::string_t&) { return true; }
  bool string(Json::string_t&) { return true; }
  bool binary(Json::binary_t&) { return true; }
  bool start_object(std::size_t) { return ++depth, true; }
  bool end_object() { return --depth, true; }
  bool start_array(std::size_t) { return ++depth, true; }
  bool end_array() { return --depth, true; }
  bool key(Json::string_t& k) {
    if (depth == 1 && (k == "cache" || k == "results")) {
      first = k;
      return false;  // stop: that key decides
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }
};

/// A parameter value as an integer; nullopt for a value that is not one.
template <class Json>
std::optional<std::int64_t> kernel_tuner_integer(const Json& v) {
  if (v.is_boolean()) return v.template get<bool>() ? 1 : 0;
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.template get<std::int64_t>();
  if (v.is_number_unsigned()) {
    const auto u = v.template get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_float()) {
    const double d = v.template get<double>();
    // [-2^63, 2^63): the doubles that convert to int64 without overflow.
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == std::floor(d))
      return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

/// A time of the file in milliseconds: `x` (a finite positive number) times `ms_per_unit`. Throws
/// DatasetError "<where>: <what> holds <x>, not a finite positive time" otherwise.
template <class Json>
double positive_time_ms(const Json& x, double ms_per_unit, const std::string& where, const std::string& what) {
  if (!x.is_number() || !(x.template get<double>() > 0) || !std::isfinite(x.template get<double>()))
    throw DatasetError(where + ": " + what + " holds " + x.dump() + ", not a finite positive time");
  return x.template get<double>() * ms_per_unit;
}

/// Whether `name` is one of Kernel Tuner's failure names (util.py: ErrorConfig and its subclasses
/// as a cache writes them).
inline bool kernel_tuner_failure(std::string_view name) {
  return name == "InvalidConfig" || name == "CompilationFailedConfig" || name == "RuntimeFailedConfig" ||
         name == "ErrorConfig";
}

/// Sets `options`' objective and direction to those a file is replayed by: the options' own, else
/// the file's (`file_objective`; "time" when empty), better higher or lower as the options say,
/// else as Kernel Tuner's default for the name says. Throws DatasetError (prefixed by `source`)
/// when neither says, and for a flop with another objective than time.
inline void resolve_objective(ReplayOptions& options, const std::string& file_objective, const std::string& source) {
  if (options.objective.empty()) options.objective = file_objective.empty() ? "time" : file_objective;
  if (!options.higher_is_better) options.higher_is_better = kernel_tuner_higher_is_better(options.objective);
  if (!options.higher_is_better)
    throw DatasetError(source + ": Kernel Tuner knows no direction for the objective '" + options.objective +
                       "'; say whether higher is better (ReplayOptions::higher_is_better, tunekit-replay "
                       "--higher-is-better yes|no)");
  if (options.objective == "time" && *options.higher_is_better)
    throw DatasetError(source + ": the objective time is better lower, not higher");
  if (options.objective != "time" && options.flop > 0)
    throw DatasetError(source + ": flop (GFLOPS of the run times) is for the objective time, not '" +
                       options.objective + "'");
}

/// The replay's value of the objective value `v` (a finite positive number): v, or 1 / v where
/// higher is better. Throws DatasetError "<where>: '<name>' holds <v>, ..." otherwise.
template <class Json>
double objective_value(const Json& v, bool higher_is_better, const std::string& where, const std::string& name) {
  const double x = v.is_number() ? v.template get<double>() : 0.0;
  const double y = higher_is_better ? 1.0 / x : x;
  if (!v.is_number() || !(x > 0) || !std::isfinite(x) || !(y > 0) || !std::isfinite(y))
    throw DatasetError(where + ": '" + name + "' holds " + v.dump() +
                       ", not a finite positive value (tunekit replays an objective's positive values)");
  return y;
}

/// The values a Kernel Tuner parameter takes and how the replay's rows hold them: integers (true
/// and false as 1 and 0) as they are; other finite numbers by their rank (ascending), each
/// labelled by its JSON text (0.25); anything else (strings, or a mix) by their position in the
/// order first listed, a string labelled by its text and any other value by its JSON text. A
/// label may not hold ',', ';' or a line break (config text and tunekit-replay's CSV use them).
template <class Json = nlohmann::json>
class KernelTunerParameter {
 public:
  /// The parameter over `values` (in the order listed, repeats allowed); throws DatasetError
  /// (prefixed by `where`) when two of them would be labelled alike, or a label holds ',', ';' or
  /// a line break.
  KernelTunerParameter(const std::vector<Json>& values, const std::string& where) {
    for (const auto& v : values) {
      const auto x = kernel_tuner_integer(v);
      if (!x) break;
      integers_.push_back(*x);
    }
    if (integers_.size() == values.size()) {
      std::sort(integers_.begin(), integers_.end());
      integers_.erase(std::unique(integers_.begin(), integers_.end()), integers_.end());
      return;
    }
    integers_.clear();
    for (const auto& v : values)
      if (std::none_of(values_.begin(), values_.end(), [&](const auto& w) { return same(v, w); }))
        values_.push_back(v);
    labels_.ordered = std::all_of(values_.begin(), values_.end(), [](const auto& v) { return v.is_number(); });
    if (labels_.ordered)
      std::sort(values_.begin(), values_.end(),
                [](const auto& a, const auto& b) { return a.template get<double>() < b.template get<double>(); });
    for (const auto& v : values_) {
      labels_.labels.push_back(v.is_string() ? v.template get<std::string>() : v.dump());
      if (labels_.labels.back().find_first_of(",;\n\r") != std::string::npos)
        throw DatasetError(where + ": its value " + v.dump() +
                           " holds a ',', ';' or line break, which a config's text cannot hold");
    }
    std::vector<std::string> sorted = labels_.labels;
    std::sort(sorted.begin(), sorted.end());
    if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
      throw DatasetError(where + ": two of its values are both written '" + *twice + "'");
  }

  /// The labels of the values (none for integers).
  const ReplayLabels& labels() const noexcept { return labels_; }

  /// What the replay's rows hold for the value `v`: the integer, or the position of its label;
  /// nullopt for a value the parameter does not take.
  std::optional<std::int64_t> encode(const Json& v) const {
    if (labels_.labels.empty()) {
      const auto x = kernel_tuner_integer(v);
      if (!x || !std::binary_search(integers_.begin(), integers_.end(), *x)) return std::nullopt;
      return x;
    }
    for (std::size_t i = 0; i < values_.size(); ++i)
      if (same(v, values_[i])) return static_cast<std::int64_t>(i);
    return std::nullopt;
  }

 private:
  // Numbers by value (1 and 1.0 alike, as Python compares them), anything else as JSON.
  static bool same(const Json& a, const Json& b) {
    if (a.is_number() && b.is_number()) return a.template get<double>() == b.template get<double>();
    return a == b;
  }

  std::vector<std::int64_t> integers_;  // distinct, ascending, when every value is an integer
  std::vector<Json> values_;            // otherwise: distinct, in the order of the labels
  ReplayLabels labels_;
};

/// The ReplayKernel of the rows a file gave, sorted by their values, with the parameters' labels.
template <class Json>
ReplayKernel replay_of_rows(const std::vector<std::string>& names, std::vector<ReplayRow> rows,
                            const std::vector<KernelTunerParameter<Json>>& params, const std::string& source,
                            ReplayOptions options) {
  std::sort(rows.begin(), rows.end(),
            [](const ReplayRow& a, const ReplayRow& b) { return a.values < b.values; });
  std::vector<ReplayLabels> labels;
  for (const auto& p : params) labels.push_back(p.labels());
  return ReplayKernel::from_rows(names, std::move(rows), source, std::move(options), labels);
}

/// Milliseconds per unit of a T4 file's time unit ("milliseconds", "ms", ...); nullopt for a name
/// it does not know.
inline std::optional<double> t4_unit_ms(std::string_view unit) {
  if (unit == "nanoseconds" || unit == "ns") return 1e-6;
  if (unit == "microseconds" || unit == "us") return 1e-3;
  if (unit == "milliseconds" || unit == "ms") return 1.0;
  if (unit == "seconds" || unit == "s") return 1e3;
  return std::nullopt;
}

/// A ReplayKernel of a T4 results file (see the file comment), parsed with its keys in file
/// order. Throws DatasetError naming the result at fault.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
ReplayKernel from_t4_results(const nlohmann::ordered_json& doc, const std::string& source,
                             ReplayOptions options) {
  using Json = nlohmann::ordered_json;
  const auto& results = doc.at("results");
  if (!results.is_array()) throw DatasetError(source + ": 'results' is not a list");
  if (results.empty()) throw DatasetError(source + ": no rows");
  // The unit of the runtimes and of a measurement without one (the schema's metadata.timeunit).
  double unit_ms = 1.0;
  if (const auto md = doc.find("metadata"); md != doc.end() && md->is_object())
    if (const auto tu = md->find("timeunit"); tu != md->end()) {
      const auto u = tu->is_string() ? t4_unit_ms(tu->get_ref<const std::string&>()) : std::nullopt;
      if (!u) throw DatasetError(source + ": 'timeunit' " + tu->dump() + " is not a time unit");
      unit_ms = *u;
    }
  auto where = [&](std::size_t i) { return source + ": result " + std::to_string(i + 1); };
  // The objective: the options', else the first result's first "objectives".
  std::string file_objective;
  if (const auto& first = results[0]; first.is_object())
    if (const auto o = first.find("objectives"); o != first.end() && o->is_array() && !o->empty() &&
                                                  o->front().is_string())
      file_objective = o->front().get<std::string>();
  resolve_objective(options, file_objective, source);
  const std::string objective = options.objective;
  const bool higher_is_better = *options.higher_is_better;
  auto configuration = [&](std::size_t i) -> const Json& {
    const auto& r = results[i];
    if (!r.is_object()) throw DatasetError(where(i) + ": not an object");
    const auto c = r.find("configuration");
    if (c == r.end() || !c->is_object()) throw DatasetError(where(i) + ": lacks 'configuration'");
    return *c;
  };

  // The parameters: the first result's, in its order; each one's values: the results'.
  std::vector<std::string> names;
  for (const auto& [name, value] : configuration(0).items()) names.push_back(name);
  if (names.empty()) throw DatasetError(where(0) + ": 'configuration' is empty");
  std::vector<std::vector<Json>> values(names.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& c = configuration(i);
    if (c.size() != names.size())
      throw DatasetError(where(i) + ": " + std::to_string(c.size()) + " parameters, result 1 has " +
                         std::to_string(names.size()));
    for (std::size_t p = 0; p < names.size(); ++p) {
      const auto v = c.find(names[p]);
      if (v == c.end()) throw DatasetError(where(i) + ": lacks parameter '" + names[p] + "'");
      values[p].push_back(*v);
    }
  }
  std::vector<KernelTunerParameter<Json>> params;
  for (std::size_t p = 0; p < names.size(); ++p)
    params.emplace_back(values[p], source + ": parameter '" + names[p] + "'");

  std::vector<ReplayRow> rows;
  rows.reserve(results.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    ReplayRow row;
    for (std::size_t p = 0; p < names.size(); ++p) row.values.push_back(*params[p].encode(values[p][i]));
    const auto invalidity = r.find("invalidity");
    if (invalidity == r.end() || !invalidity->is_string())
      throw DatasetError(where(i) + ": lacks 'invalidity'");
    const auto& status = invalidity->get_ref<const std::string&>();
    if (status != "correct") {
      if (status != "compile" && status != "runtime" && status != "timeout" && status != "correctness" &&
          status != "constraints")
        throw DatasetError(where(i) + ": 'invalidity' is the unknown " + invalidity->dump());
      row.time_ms = std::numeric_limits<double>::infinity();
      rows.push_back(std::move(row));
      continue;
    }
    if (const auto times = r.find("times"); times != r.end() && times->is_object())
      if (const auto runtimes = times->find("runtimes"); runtimes != times->end()) {
        if (!runtimes->is_array()) throw DatasetError(where(i) + ": 'runtimes' is not a list");
        for (const auto& t : *runtimes)
          row.samples_ms.push_back(positive_time_ms(t, unit_ms, where(i), "'runtimes'"));
      }
    // The result's first measurement named `name`; nullptr when it has none.
    auto measurement = [&](const std::string& name) -> const Json* {
      if (const auto ms = r.find("measurements"); ms != r.end() && ms->is_array())
        for (const auto& m : *ms)
          if (m.is_object() && m.value("name", Json()) == name) return &m;
      return nullptr;
    };
    // The mean time: the measurement named "time", else the runtimes' mean.
    std::optional<double> time_ms;
    if (const Json* m = measurement("time")) {
      const auto unit = m->find("unit");
      const bool none = unit == m->end() || (unit->is_string() && unit->get_ref<const std::string&>().empty());
      const auto per = none ? std::optional<double>(unit_ms)
                            : unit->is_string() ? t4_unit_ms(unit->get_ref<const std::string&>()) : std::nullopt;
      if (!per)
        throw DatasetError(where(i) + ": the 'time' measurement's unit " + unit->dump() + " is not a time unit");
      time_ms = positive_time_ms(m->value("value", Json()), *per, where(i), "the 'time' measurement");
    }
    if (!time_ms && !row.samples_ms.empty())
      time_ms = std::accumulate(row.samples_ms.begin(), row.samples_ms.end(), 0.0) /
                static_cast<double>(row.samples_ms.size());
    if (objective == "time") {
      if (!time_ms) throw DatasetError(where(i) + ": a correct result needs a 'time' measurement or runtimes");
      row.time_ms = *time_ms;
      if (row.samples_ms.empty()) row.samples_ms.push_back(row.time_ms);
    } else {  // the measurement named by the objective, its one sample; the time is the clock's
      const Json* value = measurement(objective);
      if (!value) throw DatasetError(where(i) + ": lacks a measurement named '" + objective + "'");
      row.time_ms = objective_value(value->value("value", Json()), higher_is_better, where(i), objective);
      row.samples_ms.assign(1, row.time_ms);
      row.run_ms = time_ms.value_or(0.0);
    }
    rows.push_back(std::move(row));
  }
  return replay_of_rows(names, std::move(rows), params, source, std::move(options));
}

}  // namespace detail

/// A ReplayKernel of the text of a Kernel Tuner cache file, or of a T4 results file; `source`
/// names it in error messages, which name the key and the cache entry (the result) at fault.
/// Throws DatasetError.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
ReplayKernel from_kernel_tuner_cache_text(std::string_view text_as_written, const std::string& source,
                                          ReplayOptions options = {},
                                          std::ostream* warnings = &std::cerr) {
  const std::string json_text = detail::python_literals_to_null(text_as_written);
  const std::string_view text = json_text;
  // A T4 results file (its "results" before any "cache"): parsed once, keys in file order.
  detail::FirstKeyScan scan;
  nlohmann::json::sax_parse(text, &scan);
  if (scan.first == "results") {
    const auto ordered = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!ordered.is_discarded() && ordered.is_object() && !ordered.contains("cache"))
      return detail::from_t4_results(ordered, source, std::move(options));
  }
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) doc = nlohmann::json::parse(detail::close_kernel_tuner_cache(text), nullptr, false);
  if (doc.is_discarded()) {
    // A last entry cut off mid-write: drop that line, close the rest.
    const std::string closed = detail::close_kernel_tuner_cache(text);
    const auto nl = closed.size() > 3 ? closed.rfind('\n', closed.size() - 4) : std::string::npos;
    if (nl != std::string::npos) {
      doc = nlohmann::json::parse(detail::close_kernel_tuner_cache(std::string_view(closed).substr(0, nl)),
                                  nullptr, false);
      if (!doc.is_discarded() && warnings)
        *warnings << "tunekit: warning: " << source
                  << ": ignoring a cut-off last cache entry (the file was being written)\n";
    }
  }
  if (doc.is_discarded()) {
    std::string why;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      why = e.what();
    }
    throw DatasetError(source + ": not a Kernel Tuner cache file (malformed JSON: " + why + ")");
  }
  if (!doc.is_object()) throw DatasetError(source + ": not a Kernel Tuner cache file (not a JSON object)");
  if (doc.contains("results") && !doc.contains("cache")) {  // a T4 results file the scan missed: keys in order
    const auto ordered = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (ordered.is_discarded()) throw DatasetError(source + ": not a T4 results file (malformed JSON)");
    return detail::from_t4_results(ordered, source, std::move(options));
  }

  const auto keys_it = doc.find("tune_params_keys");
  if (keys_it == doc.end() || !keys_it->is_array())
    throw DatasetError(source + ": 'tune_params_keys' is missing or not a list");
  std::vector<std::string> names;
  for (const auto& k : *keys_it) {
    if (!k.is_string()) throw DatasetError(source + ": 'tune_params_keys' holds a non-string " + k.dump());
    names.push_back(k.get<std::string>());
  }
  if (names.empty()) throw DatasetError(source + ": 'tune_params_keys' is empty");

  const auto cache = doc.find("cache");
  if (cache == doc.end() || !cache->is_object())
    throw DatasetError(source + ": 'cache' is missing or not an object");
  // The file's objective: a name, or (Kernel Tuner 1.4 with several objectives) a list of them.
  std::string file_objective;
  if (const auto o = doc.find("objective"); o != doc.end() && !o->is_null()) {
    if (o->is_string()) {
      file_objective = o->get<std::string>();
    } else if (o->is_array() && !o->empty() &&
               std::all_of(o->begin(), o->end(), [](const auto& x) { return x.is_string(); })) {
      file_objective = o->front().get<std::string>();
      if (o->size() > 1 && options.objective.empty())
        throw DatasetError(source + ": it was tuned for the objectives " + o->dump() +
                           "; say which one to replay (ReplayOptions::objective, tunekit-replay --objective)");
    } else {
      throw DatasetError(source + ": 'objective' is neither a name nor a list of names: " + o->dump());
    }
  }
  detail::resolve_objective(options, file_objective, source);

  // Each parameter's values: those of tune_params, when present (the values it may take), else
  // those of the entries.
  const auto tp = doc.find("tune_params");
  const bool has_tune_params = tp != doc.end();
  if (has_tune_params && !tp->is_object()) throw DatasetError(source + ": 'tune_params' is not an object");
  std::vector<detail::KernelTunerParameter<>> params;
  for (const auto& name : names) {
    std::vector<nlohmann::json> values;
    if (has_tune_params) {
      const auto list = tp->find(name);
      if (list == tp->end() || !list->is_array())
        throw DatasetError(source + ": 'tune_params' has no list of values for '" + name + "'");
      values.assign(list->begin(), list->end());
    } else {
      for (const auto& [key, entry] : cache->items()) {
        if (!entry.is_object()) continue;  // an error the entries' pass below reports
        if (const auto v = entry.find(name); v != entry.end()) values.push_back(*v);
      }
    }
    params.emplace_back(values, source + ": parameter '" + name + "'");
  }

  std::vector<ReplayRow> rows;
  rows.reserve(cache->size());
  for (const auto& [key, entry] : cache->items()) {
    const std::string where = source + ": cache entry '" + key + "'";
    if (!entry.is_object()) throw DatasetError(where + ": not an object");
    ReplayRow r;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const auto v = entry.find(names[i]);
      if (v == entry.end()) throw DatasetError(where + ": lacks parameter '" + names[i] + "'");
      const auto x = params[i].encode(*v);
      if (!x)
        throw DatasetError(where + ": parameter '" + names[i] + "' = " + v->dump() +
                           " is not among its tune_params values");
      r.values.push_back(*x);
    }
    // A failure: any value a failure name, as Kernel Tuner's read_cache tells one ("__error__" from
    // Kernel Tuner 1.0 on, "time" or the objective's value before).
    if (std::any_of(entry.begin(), entry.end(), [](const auto& v) {
          return v.is_string() && detail::kernel_tuner_failure(v.template get_ref<const std::string&>());
        })) {
      r.time_ms = std::numeric_limits<double>::infinity();
      rows.push_back(std::move(r));
      continue;
    }
    for (const char* field : {"__error__", "time"})
      if (const auto f = entry.find(field); f != entry.end() && f->is_string())
        throw DatasetError(where + ": '" + field + "' is the unknown failure " + f->dump());
    const auto time = entry.find("time");
    if (time != entry.end() && !time->is_number())
      throw DatasetError(where + ": 'time' is neither a number nor a failure name: " + time->dump());
    if (options.objective == "time") {
      if (time == entry.end()) throw DatasetError(where + ": lacks 'time'");
      r.time_ms = detail::positive_time_ms(*time, 1.0, where, "'time'");
      if (const auto times = entry.find("times"); times != entry.end()) {
        if (!times->is_array()) throw DatasetError(where + ": 'times' is not a list");
        for (const auto& t : *times) r.samples_ms.push_back(detail::positive_time_ms(t, 1.0, where, "'times'"));
        if (r.samples_ms.empty()) throw DatasetError(where + ": 'times' is empty");
      } else {
        r.samples_ms.push_back(r.time_ms);
      }
    } else {  // the objective's value, its one sample; the time is the clock's
      const auto value = entry.find(options.objective);
      if (value == entry.end()) throw DatasetError(where + ": lacks '" + options.objective + "'");
      r.time_ms = detail::objective_value(*value, *options.higher_is_better, where, options.objective);
      r.samples_ms.push_back(r.time_ms);
      r.run_ms = time == entry.end() ? 0.0 : detail::positive_time_ms(*time, 1.0, where, "'time'");
    }
    rows.push_back(std::move(r));
  }
  return detail::replay_of_rows(names, std::move(rows), params, source, std::move(options));
}

/// A ReplayKernel of a Kernel Tuner cache file or a T4 results file (see the file comment); the
/// task name is the file's stem unless `options.name` is set. Throws DatasetError naming the file, the key and
/// the cache entry at fault.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
ReplayKernel from_kernel_tuner_cache(const std::filesystem::path& path, ReplayOptions options = {},
                                     std::ostream* warnings = &std::cerr) {
  const std::string text = detail::read_recorded_file(path, "Kernel Tuner cache");
  if (options.name.empty()) options.name = recorded_space_name(path);
  return from_kernel_tuner_cache_text(text, path.string(), std::move(options), warnings);
}

/// A ReplayKernel of any recorded space tunekit reads, told by the file's extension (after a
/// `.gz`, which is read gzipped): `.json` a Kernel Tuner cache file or T4 results file
/// (from_kernel_tuner_cache), anything else a dataset CSV (ReplayKernel::from_csv). Throws
/// DatasetError.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
ReplayKernel replay_from_file(const std::filesystem::path& path, ReplayOptions options = {},
                              std::ostream* warnings = &std::cerr) {
  if (detail::without_gz(path).extension() == ".json") return from_kernel_tuner_cache(path, std::move(options), warnings);
  return ReplayKernel::from_csv(path, std::move(options));
}

}  // namespace tunekit
