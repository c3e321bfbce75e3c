#pragma once
/// \file
/// ReplayKernel: a recorded, brute-force-measured tuning space replayed offline.
///
/// Dataset format (shared/datasets/README.md): a header of parameter names, then `time_ms`, then
/// `samples`; one row per valid configuration with its mean time in ms (`inf` for a failed one)
/// and its recorded run times in ms separated by `;`. A gzipped file (`*.csv.gz`) reads the same.

#include "tunekit/concepts/kernel.hpp"
#include "tunekit/core/status.hpp"
#include "tunekit/replay/gzip.hpp"
#include "tunekit/space/search_space.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of a ReplayKernel; fill with designated initialisers.
struct ReplayOptions {
  /// Simulated seconds charged per config on top of its run times (compilation and set-up).
  double overhead_seconds = 1.0;
  /// FLOP per run (for GFLOPS); 0 when unknown.
  double flop = 0.0;
  /// Task name for records; the file's stem when empty.
  std::string name{};
  /// Makes the simulated time take wall time: prepare and run sleep for their simulated cost
  /// times this factor (1: as recorded; 0: not at all). For throughput benchmarks of a farm,
  /// whose workers then spend real time per config as on a device.
  double sleep_scale = 0.0;
  /// The objective the replay answers with: "time" (the recorded run times), or for a Kernel
  /// Tuner cache or T4 results file the name of another of its per-config values ("GFLOP/s",
  /// "energy", "GFLOPS/W", ...; a positive number each). Empty: the file's own (a cache's
  /// "objective", a T4 result's first "objectives"; "time" where it names none). A dataset CSV
  /// records time alone. The reader sets it to the objective it replays.
  std::string objective{};
  /// Whether a higher value of the objective is better; unset: Kernel Tuner's default for its name
  /// (kernel_tuner_higher_is_better: time and energy lower, GFLOP/s and GFLOPS/W higher, ...),
  /// which an objective Kernel Tuner does not know needs set. A better-when-higher objective v is
  /// replayed as 1 / v: tunekit minimises, and the found score (the best / the held) stays the
  /// ratio of the values. The reader sets it to the direction it replays.
  std::optional<bool> higher_is_better{};

  void validate() const {
    if (!(sleep_scale >= 0) || !std::isfinite(sleep_scale))
      throw std::invalid_argument("ReplayOptions: sleep_scale must be finite and >= 0");
    if (!(overhead_seconds >= 0) || !std::isfinite(overhead_seconds))
      throw std::invalid_argument("ReplayOptions: overhead_seconds must be finite and >= 0");
    if (!(flop >= 0) || !std::isfinite(flop))
      throw std::invalid_argument("ReplayOptions: flop must be finite and >= 0");
    if (objective == "time" && higher_is_better.value_or(false))
      throw std::invalid_argument("ReplayOptions: the objective time is better lower, not higher");
  }
};

/// Error in a dataset file; the message names the file and line.
struct DatasetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One recorded configuration of a dataset (ReplayKernel::from_rows).
struct ReplayRow {
  /// The parameters' values, in the order of the parameter names.
  std::vector<std::int64_t> values{};
  /// Mean time in ms; infinity for a configuration that failed.
  double time_ms = 0.0;
  /// The recorded run times in ms; empty for a failed configuration.
  std::vector<double> samples_ms{};
  /// When the samples are not run times (a replay by an objective other than time): the run time
  /// in ms that each run of the configuration costs on the simulated clock; unset: the samples
  /// are the run times.
  std::optional<double> run_ms{};
};

/// The values of a dataset's parameter that are not integers (ReplayKernel::from_rows): the rows
/// hold each value's position among `labels`.
struct ReplayLabels {
  /// The values as text, distinct, in their order; empty for a parameter of integers.
  std::vector<std::string> labels{};
  /// Whether the labels are ordered (numbers, ascending: a ranked knob, Knob::ranked) or not (a
  /// categorical knob).
  bool ordered = false;
};

namespace detail {

/// The most bytes a gzipped recorded space may decompress to (1 GiB: far above the largest
/// brute-force caches, and a bound on what a damaged or hostile file makes tunekit allocate).
inline constexpr std::size_t max_recorded_bytes = std::size_t{1} << 30;

/// The content of a recorded space's file, decompressed when it is gzipped (told by its first
/// bytes, not its name). Throws DatasetError naming `what` and the file.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::string read_recorded_file(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DatasetError("cannot open " + what + " '" + path.string() + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DatasetError("cannot read " + what + " '" + path.string() + "'");
  if (!is_gzip(bytes)) return bytes;
  try {
    return gunzip(bytes, max_recorded_bytes);
  } catch (const GzipError& e) {
    throw DatasetError(path.string() + ": " + e.what());
  }
}

/// The name of the file a recorded space's file holds: without its `.gz`, if any (`run.json` of
/// `run.json.gz` and of `run.json`).
inline std::filesystem::path without_gz(const std::filesystem::path& path) {
  return path.extension() == ".gz" ? path.stem() : path.filename();
}

}  // namespace detail

/// The task name of a recorded space's file: its name without its extension, nor `.gz` before
/// that (`run` of `run.json` and of `run.json.gz`).
inline std::string recorded_space_name(const std::filesystem::path& path) {
  return detail::without_gz(path).stem().string();
}

namespace detail {

/// A kernel that answers from a recorded dataset. Its space has one knob per parameter with more
/// than one value (values sorted ascending; {0,1} is boolean, three or more powers of two are
/// power_of_two, the rest ordinal; labelled values, ReplayLabels, ranked or categorical over the
/// labels that occur), one constant per single-valued parameter, and a membership constraint that
/// admits exactly the recorded rows. Each run returns one of the config's recorded samples, drawn
/// uniformly with the caller's generator, so replayed noise is real. A row recorded as `inf` is a
/// runtime_error. Simulated cost: the overhead per config plus the returned run times (the
/// recorded run times, ReplayRow::run_ms, where the replay's objective is not time). The times
/// in ms below (recorded_ms, optimum_ms, ...) are the objective's values where it is another one
/// (ReplayOptions::objective: the value, or 1 / the value where higher is better).
template <class = void>
class ReplayKernelImpl {
 public:
  /// Reads a dataset file (gzipped or not); the task name is recorded_space_name(path) unless
  /// `options.name` is set.
  static ReplayKernelImpl from_csv(const std::filesystem::path& path, ReplayOptions options = {}) {
    std::istringstream in(detail::read_recorded_file(path, "dataset"));
    if (options.name.empty()) options.name = recorded_space_name(path);
    return from_stream(in, path.string(), std::move(options));
  }

  /// Reads a dataset from a stream; `source` names it in error messages.
  static ReplayKernelImpl from_stream(std::istream& in, const std::string& source,
                                  ReplayOptions options = {}) {
    options.validate();
    if (!options.objective.empty() && options.objective != "time")
      throw DatasetError(source + ": a dataset CSV records time alone, not the objective '" + options.objective + "'");
    if (options.higher_is_better.value_or(false))
      throw DatasetError(source + ": a dataset CSV records time, which is better lower, not higher");
    options.objective = "time";
    options.higher_is_better = false;
    ReplayKernelImpl k;
    k.options_ = std::move(options);
    k.load(in, source);
    return k;
  }

  /// A dataset given as rows (for readers of other formats, e.g. kernel_tuner_cache.hpp);
  /// `source` names it in error messages. `labels`, empty or one per parameter, names the values
  /// of the parameters that are not integers. Throws DatasetError as the CSV readers do.
  static ReplayKernelImpl from_rows(const std::vector<std::string>& parameters, std::vector<ReplayRow> rows,
                                const std::string& source, ReplayOptions options = {},
                                const std::vector<ReplayLabels>& labels = {}) {
    options.validate();
    if (!labels.empty() && labels.size() != parameters.size())
      throw DatasetError(source + ": labels for " + std::to_string(labels.size()) + " parameters, expected " +
                         std::to_string(parameters.size()));
    ReplayKernelImpl k;
    k.options_ = std::move(options);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string where = source + ": row " + std::to_string(i + 1);
      check_row(rows[i], where);
      for (std::size_t p = 0; p < labels.size() && p < rows[i].values.size(); ++p)
        if (!labels[p].labels.empty() &&
            (rows[i].values[p] < 0 || static_cast<std::uint64_t>(rows[i].values[p]) >= labels[p].labels.size()))
          throw DatasetError(where + ": parameter '" + parameters[p] + "' has no label " +
                             std::to_string(rows[i].values[p]));
    }
    k.build(parameters, std::move(rows), source, labels);
    return k;
  }

  const SearchSpace& space() const noexcept { return space_; }
  double flop() const noexcept { return options_.flop; }
  std::string name() const { return options_.name; }
  std::string device() const { return "replay"; }

  /// Charges the per-config overhead; a failed row is a runtime_error, a config that is not a
  /// row is excluded.
  RunResult prepare(const Config& c) const {
    const Row* r = find(c);
    if (!r) return {Status::excluded, {}, "config is not in the recorded dataset", 0.0};
    sleep_for(options_.overhead_seconds);
    if (r->samples.empty())
      return {Status::runtime_error, {}, "recorded as failed (inf) in the dataset",
              options_.overhead_seconds};
    return {Status::ok, {}, {}, options_.overhead_seconds};
  }

  /// `runs` recorded samples of the config, drawn uniformly with replacement.
  RunResult run(const Config& c, std::size_t runs, Rng& rng) const {
    const Row* r = find(c);
    if (!r) return {Status::excluded, {}, "config is not in the recorded dataset", 0.0};
    if (r->samples.empty())
      return {Status::runtime_error, {}, "recorded as failed (inf) in the dataset", 0.0};
    RunResult out{Status::ok, {}, {}, 0.0};
    out.seconds.reserve(runs);
    for (std::size_t i = 0; i < runs; ++i) {
      const double s = r->samples[uniform_index(rng, r->samples.size())] * 1e-3;
      out.seconds.push_back(s);
      out.simulated_cost += r->run_ms ? *r->run_ms * 1e-3 : s;
    }
    sleep_for(out.simulated_cost);
    return out;
  }

  const ReplayOptions& options() const noexcept { return options_; }

  /// The recorded mean time in ms (infinity for a failed row). Throws for a config not recorded.
  double recorded_ms(const Config& c) const {
    const Row* r = find(c);
    if (!r) throw std::out_of_range("config is not in the recorded dataset: " + space_.describe(c));
    return r->time_ms;
  }
  /// The recorded mean times in ms of every row, in file order.
  std::vector<double> recorded_times_ms() const {
    std::vector<double> t;
    t.reserve(rows_.size());
    for (const auto& r : rows_) t.push_back(r.time_ms);
    return t;
  }
  /// The config of every row, in file order (the order of recorded_times_ms).
  std::vector<Config> recorded_configs() const {
    std::vector<Config> c;
    c.reserve(rows_.size());
    for (const auto& r : rows_) c.push_back(space_.from_index(r.index));
    return c;
  }
  /// The lowest recorded mean time in ms.
  double optimum_ms() const noexcept { return optimum_ms_; }
  std::size_t row_count() const noexcept { return rows_.size(); }
  /// Number of rows recorded as failed.
  std::size_t failed_count() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(rows_.begin(), rows_.end(), [](const Row& r) { return r.samples.empty(); }));
  }

 private:
  void sleep_for(double simulated_seconds) const {
    if (options_.sleep_scale > 0 && simulated_seconds > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(simulated_seconds * options_.sleep_scale));
  }

  struct Row {
    std::uint64_t index{};
    double time_ms{};
    std::vector<double> samples{};  // ms; empty for a failed row
    std::optional<double> run_ms{};  // ReplayRow::run_ms
  };

  ReplayKernelImpl() = default;

  const Row* find(const Config& c) const {
    if (!space_.is_valid(c)) return nullptr;
    const auto idx = space_.to_index(c);
    auto it = std::lower_bound(by_index_.begin(), by_index_.end(), idx,
                               [this](std::size_t row, std::uint64_t i) { return rows_[row].index < i; });
    if (it == by_index_.end() || rows_[*it].index != idx) return nullptr;
    return &rows_[*it];
  }

  static std::vector<std::string_view> split_csv(std::string_view line) {
    std::vector<std::string_view> f;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= line.size(); ++i)
      if (i == line.size() || line[i] == ',') {
        f.push_back(line.substr(start, i - start));
        start = i + 1;
      }
    return f;
  }

  static double parse_double(std::string_view s, const std::string& where) {
    if (s == "inf" || s == "Infinity") return std::numeric_limits<double>::infinity();
    double v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || std::isnan(v))
      throw DatasetError(where + ": not a number: '" + std::string(s) + "'");
    return v;
  }

  void load(std::istream& in, const std::string& source) {
    std::string line;
    if (!std::getline(in, line)) throw DatasetError(source + ": empty dataset (no header)");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> header;
    for (auto f : split_csv(line)) header.emplace_back(f);
    if (header.size() < 3 || header[header.size() - 2] != "time_ms" || header.back() != "samples")
      throw DatasetError(source + ":1: header must be the parameters, then time_ms, then samples");
    const std::size_t n_params = header.size() - 2;
    header.resize(n_params);
    for (const auto& name : header)
      if (name.empty()) throw DatasetError(source + ":1: empty parameter name");
    if (const auto twice = duplicate_name(header))
      throw DatasetError(source + ":1: parameter '" + *twice + "' appears twice");

    std::vector<ReplayRow> rows;
    std::size_t line_no = 1;
    while (std::getline(in, line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      const std::string where = source + ":" + std::to_string(line_no);
      const auto f = split_csv(line);
      if (f.size() != n_params + 2)
        throw DatasetError(where + ": " + std::to_string(f.size()) + " fields, header has " +
                           std::to_string(n_params + 2));
      ReplayRow r{std::vector<std::int64_t>(n_params), 0.0, {}};
      for (std::size_t i = 0; i < n_params; ++i) {
        const auto [p, ec] = std::from_chars(f[i].data(), f[i].data() + f[i].size(), r.values[i]);
        if (ec != std::errc() || p != f[i].data() + f[i].size())
          throw DatasetError(where + ": parameter " + header[i] + " is not an integer: '" +
                             std::string(f[i]) + "'");
      }
      r.time_ms = parse_double(f[n_params], where);
      if (std::isfinite(r.time_ms)) {
        std::string_view s = f[n_params + 1];
        while (!s.empty()) {
          const auto semi = s.find(';');
          r.samples_ms.push_back(parse_double(s.substr(0, semi), where));
          s = semi == std::string_view::npos ? std::string_view{} : s.substr(semi + 1);
        }
      }
      check_row(r, where);
      rows.push_back(std::move(r));
    }
    build(header, std::move(rows), source);
  }

  /// A name that occurs more than once.
  static std::optional<std::string> duplicate_name(const std::vector<std::string>& names) {
    std::set<std::string_view> seen;
    for (const auto& n : names)
      if (!seen.insert(n).second) return n;
    return std::nullopt;
  }

  /// Throws DatasetError (prefixed by `where`) for a row the replay cannot use.
  static void check_row(const ReplayRow& r, const std::string& where) {
    if (!(r.time_ms > 0)) throw DatasetError(where + ": time_ms must be positive");
    if (!std::isfinite(r.time_ms)) return;
    if (r.samples_ms.empty()) throw DatasetError(where + ": a finite time_ms needs samples");
    for (const double x : r.samples_ms)
      if (!(x > 0) || !std::isfinite(x))
        throw DatasetError(where + ": sample times must be finite and positive");
    if (r.run_ms && !(*r.run_ms >= 0 && std::isfinite(*r.run_ms)))
      throw DatasetError(where + ": the run time must be finite and >= 0");
  }

  /// The knob of a parameter over its distinct values (ascending): of integers, {0, 1} boolean,
  /// three or more powers of two power_of_two, the rest ordinal; of labelled values (positions
  /// among `l.labels`), ranked or categorical over the labels that occur, in their order.
  static Knob knob_of_values(const std::string& name, const std::vector<std::int64_t>& distinct,
                             const ReplayLabels& l) {
    if (!l.labels.empty()) {
      std::vector<std::string> present;
      for (const auto x : distinct) present.push_back(l.labels[static_cast<std::size_t>(x)]);
      return l.ordered ? Knob::ranked(name, std::move(present)) : Knob::categorical(name, std::move(present));
    }
    if (distinct == std::vector<std::int64_t>{0, 1}) return Knob::boolean(name);
    const bool pow2 = std::all_of(distinct.begin(), distinct.end(),
                                  [](std::int64_t x) { return x > 0 && (x & (x - 1)) == 0; });
    if (pow2 && distinct.size() >= 3) return Knob::power_of_two(name, distinct);
    return Knob::ordinal(name, distinct);
  }

  void build(const std::vector<std::string>& header, std::vector<ReplayRow> rows, const std::string& source,
             const std::vector<ReplayLabels>& labels = {}) {
    const std::size_t n_params = header.size();
    if (n_params == 0) throw DatasetError(source + ": no parameters");
    for (const auto& name : header)
      if (name.empty()) throw DatasetError(source + ": empty parameter name");
    if (const auto twice = duplicate_name(header))
      throw DatasetError(source + ": parameter '" + *twice + "' appears twice");
    if (rows.empty()) throw DatasetError(source + ": no rows");
    std::vector<std::vector<std::int64_t>> values;  // per row, per parameter
    values.reserve(rows.size());
    for (auto& r : rows) {
      if (r.values.size() != n_params)
        throw DatasetError(source + ": a row has " + std::to_string(r.values.size()) +
                           " parameter values, expected " + std::to_string(n_params));
      values.push_back(std::move(r.values));
      rows_.push_back({0, r.time_ms, std::move(r.samples_ms), r.run_ms});
    }

    // The space: a knob per varying parameter, a constant per fixed one.
    std::vector<int> knob_of(n_params, -1);
    for (std::size_t i = 0; i < n_params; ++i) {
      std::vector<std::int64_t> distinct;
      for (const auto& v : values) distinct.push_back(v[i]);
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      if (distinct.size() == 1) {  // a constant (a labelled parameter's value: its label's position)
        space_.add_constant(header[i], distinct[0]);
        continue;
      }
      knob_of[i] = static_cast<int>(space_.dimensions());
      try {
        space_.add(knob_of_values(header[i], distinct, i < labels.size() ? labels[i] : ReplayLabels{}));
      } catch (const std::overflow_error& e) {
        throw DatasetError(source + ": too many parameter values for one space (" + e.what() + ")");
      }
      if (i < labels.size() && !labels[i].labels.empty())  // positions among the labels that occur
        for (auto& v : values) v[i] = std::lower_bound(distinct.begin(), distinct.end(), v[i]) - distinct.begin();
    }
    if (space_.dimensions() == 0) throw DatasetError(source + ": no parameter takes two values");

    std::vector<std::uint64_t> members;
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      Config c(space_.dimensions());
      for (std::size_t i = 0; i < n_params; ++i)
        if (knob_of[i] >= 0)
          c[static_cast<std::size_t>(knob_of[i])] = static_cast<std::uint32_t>(
              space_.knob(static_cast<std::size_t>(knob_of[i])).index_of(values[r][i]));
      rows_[r].index = space_.to_index(c);
      members.push_back(rows_[r].index);
    }
    by_index_.resize(rows_.size());
    for (std::size_t i = 0; i < rows_.size(); ++i) by_index_[i] = i;
    std::sort(by_index_.begin(), by_index_.end(),
              [this](std::size_t a, std::size_t b) { return rows_[a].index < rows_[b].index; });
    for (std::size_t i = 1; i < by_index_.size(); ++i)
      if (rows_[by_index_[i]].index == rows_[by_index_[i - 1]].index)
        throw DatasetError(source + ": duplicate rows for " +
                           space_.describe(space_.from_index(rows_[by_index_[i]].index)));
    space_.add_constraint(membership("recorded in " + source, std::move(members)));

    optimum_ms_ = std::numeric_limits<double>::infinity();
    for (const auto& r : rows_) optimum_ms_ = std::min(optimum_ms_, r.time_ms);
    if (!std::isfinite(optimum_ms_)) throw DatasetError(source + ": every row is recorded as failed");
  }

  ReplayOptions options_;
  SearchSpace space_;
  std::vector<Row> rows_;
  std::vector<std::size_t> by_index_;  // row ids sorted by flat index
  double optimum_ms_ = 0.0;
};
}  // namespace detail

/// detail::ReplayKernelImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using ReplayKernel = detail::ReplayKernelImpl<>;

static_assert(PreparableKernel<ReplayKernel>);

}  // namespace tunekit
