#pragma once
/// \file
/// Brute-force recording of a kernel's tuning space as a replay dataset: every selected valid
/// configuration measured, written in the format of shared/datasets (README.md there), which
/// ReplayKernel::from_csv and tunekit-replay read back. A recorded space is ground truth for
/// search-efficiency benchmarks on the machine it was recorded on.

#include "tunekit/concepts/kernel.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/evaluator/deterministic.hpp"
#include "tunekit/replay/replay_kernel.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace tunekit {

/// Options of record_dataset; fill with designated initialisers.
struct RecordOptions {
  /// How each configuration is measured: its samples are the dataset's samples (the timed
  /// repeats, each the mean of `number` runs), after `warmup` untimed runs; a failure (status
  /// other than ok: wrong result, timeout, error) is recorded as `inf`.
  DeterministicParams evaluator{.warmup = 1, .number = 1, .repeat = 8, .min_repeat_ms = 0.0,
                                .timeout_seconds = 0.0};
  /// Seed of the measurement order. The configurations are measured in a random order, so that a
  /// slow spell of the machine falls on scattered configurations rather than on a run of
  /// neighbours in knob space; the file is written in lexicographic order at the end.
  std::uint64_t seed = 1;
  /// Which valid configurations to record (every one when empty).
  std::function<bool(const SearchSpace&, const Config&)> keep{};
  /// Called after each configuration is measured and written: (configs done, configs in all,
  /// the measurement). It may throw to stop the recording; what was written stays (see resume).
  std::function<void(std::size_t, std::size_t, const Measurement&)> progress{};
  /// For a kernel that compiles ahead (PrefetchingKernel: the CUDA kernels), how many configs it
  /// is handed at a time: when the i-th config of the order is next and i is a multiple of this,
  /// configs i to i + 2 compile_ahead - 1 go to `prefetch`, so the next block compiles on other
  /// threads while this one is measured. 0: never (each config compiles when it is measured).
  std::size_t compile_ahead = 32;
};

namespace detail {

/// A dataset column holds a knob's numeric value (Knob::value: a categorical knob's index), which
/// a split knob's first factor does not identify.
inline void check_recordable(const SearchSpace& s) {
  for (const auto& k : s.knobs())
    if (k.kind() == KnobKind::split)
      throw std::invalid_argument("record_dataset: knob '" + k.name() +
                                  "' is a split knob, which a dataset column cannot hold");
}

inline std::string record_header(const SearchSpace& s) {
  std::string h;
  for (const auto& k : s.knobs()) h += k.name() + ",";
  for (const auto& c : s.constants()) h += c.name + ",";
  return h + "time_ms,samples";
}

inline std::string record_row(const SearchSpace& s, const Config& c, const Measurement& m) {
  std::string row;
  char buf[64];
  for (std::size_t i = 0; i < c.size(); ++i) row += std::to_string(s.knob(i).value(c[i])) + ",";
  for (const auto& k : s.constants()) row += std::to_string(k.value) + ",";
  if (!m.ok() || m.samples.empty()) return row + "inf,";
  double sum = 0.0;
  std::string samples;
  for (std::size_t i = 0; i < m.samples.size(); ++i) {
    sum += m.samples[i];
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? ";" : "", m.samples[i] * 1e3);
    samples += buf;
  }
  std::snprintf(buf, sizeof buf, "%.9g,", sum / static_cast<double>(m.samples.size()) * 1e3);
  return row + buf + samples;
}

/// The config of a row written by record_row (its first dimensions() fields).
inline Config record_config(const SearchSpace& s, std::string_view line, const std::string& where) {
  Config c(s.dimensions());
  for (std::size_t i = 0; i < s.dimensions(); ++i) {
    const auto comma = line.find(',');
    if (comma == std::string_view::npos) throw DatasetError(where + ": too few fields");
    const std::string_view field = line.substr(0, comma);
    line.remove_prefix(comma + 1);
    const Knob& k = s.knob(i);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec != std::errc() || end != field.data() + field.size())
      throw DatasetError(where + ": knob " + k.name() + " is not an integer: '" + std::string(field) + "'");
    const std::size_t idx = k.index_of(v);  // a categorical knob's values are its indices
    if (idx >= k.size()) throw DatasetError(where + ": knob " + k.name() + " has no value " + std::string(field));
    c[i] = static_cast<std::uint32_t>(idx);
  }
  return c;
}

/// Writes the header and the rows (in key order) to a new file renamed over `path`, so that a
/// crash while writing leaves the old file whole.
inline void record_write(const std::filesystem::path& path, const std::string& header,
                         const std::map<std::uint64_t, std::string>& rows) {
  const std::filesystem::path tmp = path.string() + ".writing";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << header << '\n';
    for (const auto& [i, line] : rows) out << line << '\n';
    if (!out) throw std::runtime_error("record_dataset: cannot write '" + tmp.string() + "'");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace detail

/// The flat indices (SearchSpace::to_index) of the valid configurations that `keep` selects, in
/// ascending (lexicographic) order: the rows a recording of the space writes.
inline std::vector<std::uint64_t> record_selection(const SearchSpace& s, const RecordOptions& o = {}) {
  std::vector<std::uint64_t> idx = s.valid_indices();
  if (o.keep) std::erase_if(idx, [&](std::uint64_t i) { return !o.keep(s, s.from_index(i)); });
  return idx;
}

/// Measures every valid configuration of `kernel.space()` that `options.keep` selects and writes
/// the dataset to `path`: one column per knob (its value; a categorical knob's index) and per
/// constant, then `time_ms` (the mean of the samples, `inf` for a failure) and `samples` (ms,
/// `;`-separated). Returns the number of rows.
///
/// Nothing measured is lost when the recording stops (a crash, a kill, `progress` throwing): each
/// row is appended and flushed as it is measured, and a call with the same `path` resumes, keeping
/// the rows there and measuring only the rest (it throws DatasetError if the file's header is not
/// this space's). When every row is there the file is rewritten in lexicographic order.
template <Kernel K>
std::size_t record_dataset(K& kernel, const std::filesystem::path& path, const RecordOptions& options = {}) {
  const SearchSpace& s = kernel.space();
  detail::check_recordable(s);
  const std::vector<std::uint64_t> selection = record_selection(s, options);
  if (selection.empty()) throw std::invalid_argument("record_dataset: no valid configuration is selected");
  const std::string header = detail::record_header(s);

  // The rows already recorded (a resumed recording), by flat index.
  std::map<std::uint64_t, std::string> rows;
  if (std::filesystem::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // A last line without its newline was cut short by a crash: it is measured again.
    text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    const auto fields = [](std::string_view l) { return std::count(l.begin(), l.end(), ',') + 1; };
    std::string_view rest = text;
    std::size_t line_no = 0;
    while (!rest.empty()) {
      const std::string_view line = rest.substr(0, rest.find('\n'));
      rest.remove_prefix(line.size() + 1);
      const std::string where = path.string() + ":" + std::to_string(++line_no);
      if (line_no == 1) {
        if (line != header)
          throw DatasetError(where + ": not a recording of this space (its header differs: " + header + ")");
        continue;
      }
      if (fields(line) != fields(header))
        throw DatasetError(where + ": " + std::to_string(fields(line)) + " fields, the header has " +
                           std::to_string(fields(header)));
      const Config c = detail::record_config(s, line, where);
      if (!std::binary_search(selection.begin(), selection.end(), s.to_index(c)))
        throw DatasetError(where + ": configuration " + s.describe(c) + " is not one this recording selects");
      rows[s.to_index(c)] = std::string(line);
    }
    if (line_no == 0) throw DatasetError(path.string() + ": no header (not a recording of this space)");
  }

  std::vector<std::uint64_t> order;
  for (const std::uint64_t i : selection)
    if (!rows.contains(i)) order.push_back(i);
  Rng rng(options.seed);
  for (std::size_t i = order.size(); i > 1; --i)  // Fisher-Yates
    std::swap(order[i - 1], order[uniform_index(rng, i)]);

  if (!order.empty()) {
    detail::record_write(path, header, rows);  // what is kept, without a torn last line
    std::ofstream out(path, std::ios::app);     // then each row as it is measured
    Deterministic evaluator(options.evaluator);
    for (std::size_t j = 0; j < order.size(); ++j) {
      if constexpr (PrefetchingKernel<K>) {
        if (options.compile_ahead > 0 && j % options.compile_ahead == 0) {
          std::vector<Config> ahead;
          for (std::size_t a = j; a < std::min(order.size(), j + 2 * options.compile_ahead); ++a)
            ahead.push_back(s.from_index(order[a]));
          kernel.prefetch(ahead);
        }
      }
      const std::uint64_t i = order[j];
      const Config c = s.from_index(i);
      const Measurement m = evaluator.measure(kernel, c, rng);
      std::string line = detail::record_row(s, c, m);
      out << line << '\n' << std::flush;
      if (!out) throw std::runtime_error("record_dataset: cannot write '" + path.string() + "'");
      rows[i] = std::move(line);
      if (options.progress) options.progress(rows.size(), selection.size(), m);
    }
  }

  detail::record_write(path, header, rows);  // every row is there: in lexicographic order
  return rows.size();
}

}  // namespace tunekit
