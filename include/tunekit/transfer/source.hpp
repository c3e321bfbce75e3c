#pragma once
/// \file
/// TransferSource: what earlier runs measured (tunekit logs, recorded spaces: dataset CSV,
/// Kernel Tuner cache, T4 file, each gzipped or not), matched to the space being tuned, as the
/// training data of a model of earlier runs (AutoTVM's transfer: TransferMargin).
///
/// Matching is by knob name and value. A target knob is *in common* when every source has a knob
/// (or a constant) of its name; the model of the sources sees the target's features of the knobs
/// in common only (their columns of feature_matrix), and a knob that only the target has, or
/// only a source has, is left out of it. A source's value is placed on the target's knob by what
/// its features are:
/// - ordinal, power-of-two, boolean knobs (features: the value): by the value, also one the
///   target lacks (the features of 48 lie between those of 32 and 64); a label, a non-positive
///   value of a power-of-two knob, or a boolean other than 0 and 1 cannot be placed;
/// - categorical and ranked knobs (one-hot; the label's position): by the label (a number is
///   matched as its text); a label the target lacks cannot be placed;
/// - split knobs (each factor and its log2): by the factors, also a list the target lacks, when
///   it has as many factors.
/// A record with a value that cannot be placed is left out (SourceSummary::left_out). Nothing in
/// common (no target knob in every source, or no record placed) is a std::invalid_argument.
///
/// Each source's target is a row's throughput relative to the source's best (best time / time:
/// 1 at its best, 0 for a failure), as Tuner's surrogate target is on the target task, so that
/// sources from slower and faster devices share one scale.

#include "tunekit/records/log.hpp"
#include "tunekit/records/record.hpp"
#include "tunekit/replay/kernel_tuner_cache.hpp"
#include "tunekit/core/deferred.hpp"
#include "tunekit/space/features.hpp"

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tunekit {

/// A knob's value as a source records it: a number (booleans as 0 and 1), a label (categorical
/// and ranked knobs), or a split knob's factors.
using SourceValue = std::variant<std::int64_t, std::string, std::vector<std::int64_t>>;

/// Which records a source is: its file as given, the task its records are of (a log's task, a
/// recorded space's name), and a hash of the file's bytes as stored (FNV-1a, 64 bits, 16 hex
/// digits), so that a run can record which sources it used and a resume check them.
struct SourceIdentity {
  std::string file{};
  std::string task{};
  std::string hash{};

  friend bool operator==(const SourceIdentity&, const SourceIdentity&) = default;
};

/// One source's records by knob name, before matching: a row per record, its values in the order
/// of `knobs` and its mean time (any unit, lower better; infinity for a failed record).
struct SourceTable {
  SourceIdentity identity{};
  std::vector<std::string> knobs{};
  std::vector<std::vector<SourceValue>> rows{};
  std::vector<double> times{};
};

/// What matching made of one source (TransferSource::sources()).
struct SourceSummary {
  SourceIdentity identity{};
  /// Records the source holds, and those left out (a value that cannot be placed on the target).
  std::size_t records = 0;
  std::size_t left_out = 0;
  /// The source's knobs that the target lacks (not used).
  std::vector<std::string> unused_knobs{};
};

/// The FNV-1a hash (64 bits) of `bytes` as 16 hex digits.
inline std::string content_hash(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace detail {

// The bytes of a file as stored, for its identity.
template <class = void>
std::string source_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("transfer source: cannot open '" + path.string() + "'");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A log's config value as a SourceValue; nullopt for a value no knob holds.
template <class = void>
std::optional<SourceValue> source_value_of_json(const nlohmann::ordered_json& v) {
  if (v.is_boolean()) return SourceValue(std::int64_t{v.get<bool>() ? 1 : 0});
  if (v.is_number_integer()) return SourceValue(v.get<std::int64_t>());
  if (v.is_string()) return SourceValue(v.get<std::string>());
  if (v.is_number()) return SourceValue(v.dump());  // a float: a ranked knob's label is its text
  if (v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number_integer(); }))
    return SourceValue(v.get<std::vector<std::int64_t>>());
  return std::nullopt;
}

// The features of `v` on the target's knob `k` into `out` (the knob's feature_count columns, in
// write_features' layout); false when `v` cannot be placed on it (see the file comment).
inline bool place_source_value(const Knob& k, const SourceValue& v, std::span<double> out) {
  const auto* number = std::get_if<std::int64_t>(&v);
  const auto* label = std::get_if<std::string>(&v);
  const auto* factors = std::get_if<std::vector<std::int64_t>>(&v);
  switch (k.kind()) {
    case KnobKind::ordinal:
    case KnobKind::boolean:
      if (k.labelled()) {  // ranked: the label's position
        const std::size_t i = label ? k.index_of_label(*label) : number ? k.index_of_label(std::to_string(*number)) : k.size();
        if (i >= k.size()) return false;
        out[0] = static_cast<double>(k.value(i));
        return true;
      }
      if (!number) return false;
      if (k.kind() == KnobKind::boolean && *number != 0 && *number != 1) return false;
      out[0] = static_cast<double>(*number);
      return true;
    case KnobKind::power_of_two:
      if (!number || *number <= 0) return false;
      out[0] = static_cast<double>(*number);
      out[1] = std::log2(static_cast<double>(*number));
      return true;
    case KnobKind::categorical: {
      const std::size_t i = label ? k.index_of_label(*label) : number ? k.index_of_label(std::to_string(*number)) : k.size();
      if (i >= k.size()) return false;
      for (std::size_t j = 0; j < k.size(); ++j) out[j] = j == i ? 1.0 : 0.0;
      return true;
    }
    case KnobKind::split: {
      if (!factors || factors->size() != k.parts()) return false;
      if (std::any_of(factors->begin(), factors->end(), [](std::int64_t f) { return f <= 0; })) return false;
      const std::size_t p = k.parts();
      for (std::size_t j = 0; j < p; ++j) {
        out[j] = static_cast<double>((*factors)[j]);
        out[p + j] = std::log2(static_cast<double>((*factors)[j]));
      }
      return true;
    }
  }
  return false;
}

// Feature columns of each knob of the space: [first, first + count) in feature_matrix.
inline std::vector<std::pair<std::size_t, std::size_t>> knob_feature_columns(const SearchSpace& space) {
  std::vector<std::pair<std::size_t, std::size_t>> cols;
  std::size_t first = 0;
  for (const Knob& k : space.knobs()) {
    std::size_t n = 0;
    switch (k.kind()) {
      case KnobKind::ordinal:
      case KnobKind::boolean: n = 1; break;
      case KnobKind::power_of_two: n = 2; break;
      case KnobKind::categorical: n = k.size(); break;
      case KnobKind::split: n = 2 * k.parts(); break;
    }
    cols.emplace_back(first, n);
    first += n;
  }
  return cols;
}

/// The measurements of earlier runs matched to a target space (see the file comment).
template <class Lazy = void>
class TransferSourceImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;
  using VectorXd = Deferred<Eigen::VectorXd, Lazy>;

 public:
  /// No source: nothing to transfer (rows() == 0).
  TransferSourceImpl() = default;

  /// Matches `tables` (one or more sources) to `target`. Throws std::invalid_argument when there
  /// is no table, a table has no successful record, or nothing is in common.
  TransferSourceImpl(const SearchSpace& target, std::vector<SourceTable> tables) {
    if (tables.empty()) throw std::invalid_argument("TransferSource: no source");
    features_ = feature_count(target);
    const auto knob_cols = knob_feature_columns(target);
    // Each target knob's position in each table (a knob in common is in all of them).
    std::vector<std::size_t> common;
    std::vector<std::vector<std::size_t>> at(tables.size());
    for (std::size_t k = 0; k < target.dimensions(); ++k) {
      bool everywhere = true;
      std::vector<std::size_t> pos;
      for (const auto& t : tables) {
        const auto it = std::find(t.knobs.begin(), t.knobs.end(), target.knob(k).name());
        if (it == t.knobs.end()) everywhere = false;
        pos.push_back(static_cast<std::size_t>(it - t.knobs.begin()));
      }
      if (!everywhere) {
        target_only_.push_back(target.knob(k).name());
        continue;
      }
      common.push_back(k);
      common_.push_back(target.knob(k).name());
      for (std::size_t s = 0; s < tables.size(); ++s) at[s].push_back(pos[s]);
      for (std::size_t c = 0; c < knob_cols[k].second; ++c)
        columns_.push_back(static_cast<Eigen::Index>(knob_cols[k].first + c));
    }
    if (common.empty()) {
      std::string have;
      for (const auto& t : tables) {
        have += "; '" + t.identity.file + "' has";
        for (const auto& n : t.knobs) have += " " + n;
      }
      std::string want;
      for (const Knob& k : target.knobs()) want += " " + k.name();
      throw std::invalid_argument("TransferSource: no knob of the target (" + want.substr(1) +
                                  ") is in every source" + have);
    }

    std::vector<double> rows, ys;
    std::vector<double> knob_features(features_);
    for (std::size_t s = 0; s < tables.size(); ++s) {
      const SourceTable& t = tables[s];
      if (t.rows.size() != t.times.size())
        throw std::invalid_argument("TransferSource: source '" + t.identity.file + "' has " +
                                    std::to_string(t.rows.size()) + " rows and " + std::to_string(t.times.size()) +
                                    " times");
      double best = std::numeric_limits<double>::infinity();
      for (const double x : t.times)
        if (std::isfinite(x) && x > 0) best = std::min(best, x);
      if (!std::isfinite(best))
        throw std::invalid_argument("TransferSource: source '" + t.identity.file + "' (task '" + t.identity.task +
                                    "') has no successful record");
      SourceSummary summary{.identity = t.identity, .records = t.rows.size()};
      for (const auto& n : t.knobs)
        if (std::none_of(target.knobs().begin(), target.knobs().end(), [&](const Knob& k) { return k.name() == n; }))
          summary.unused_knobs.push_back(n);
      for (std::size_t r = 0; r < t.rows.size(); ++r) {
        if (t.rows[r].size() != t.knobs.size())
          throw std::invalid_argument("TransferSource: source '" + t.identity.file + "' row " + std::to_string(r + 1) +
                                      " has " + std::to_string(t.rows[r].size()) + " values for " +
                                      std::to_string(t.knobs.size()) + " knobs");
        bool placed = true;
        for (std::size_t c = 0; c < common.size() && placed; ++c) {
          const auto [first, n] = knob_cols[common[c]];
          placed = place_source_value(target.knob(common[c]), t.rows[r][at[s][c]],
                                      std::span<double>(knob_features.data() + first, n));
        }
        if (!placed) {
          ++summary.left_out;
          continue;
        }
        for (const auto col : columns_) rows.push_back(knob_features[static_cast<std::size_t>(col)]);
        row_sources_.push_back(s);
        const double time = t.times[r];
        ys.push_back(std::isfinite(time) && time > 0 ? best / time : 0.0);
      }
      sources_.push_back(std::move(summary));
    }
    if (ys.empty()) {
      std::string why;
      for (const auto& s : sources_) why += "; '" + s.identity.file + "': " + std::to_string(s.left_out) + " of " +
                                            std::to_string(s.records) + " records left out";
      throw std::invalid_argument("TransferSource: no source record has values the target can take" + why);
    }
    const auto n = static_cast<Eigen::Index>(ys.size());
    const auto d = static_cast<Eigen::Index>(columns_.size());
    x_ = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(rows.data(), n, d);
    y_ = Eigen::Map<const Eigen::VectorXd>(ys.data(), n);
  }

  /// The placed records: one row each, the target's features of the knobs in common (columns()).
  const MatrixXd& features() const noexcept { return x_; }
  /// Each placed record's throughput relative to its source's best (0 for a failure).
  const VectorXd& targets() const noexcept { return y_; }
  std::size_t rows() const noexcept { return static_cast<std::size_t>(y_.size()); }
  /// The source (its position in sources()) of each placed record.
  const std::vector<std::size_t>& row_sources() const noexcept { return row_sources_; }
  /// The columns of the target's feature_matrix that features() holds, in order.
  const std::vector<Eigen::Index>& columns() const noexcept { return columns_; }
  /// feature_count of the target space.
  std::size_t target_features() const noexcept { return features_; }
  /// The target's knobs in common with every source, and those some source lacks.
  const std::vector<std::string>& common_knobs() const noexcept { return common_; }
  const std::vector<std::string>& target_only_knobs() const noexcept { return target_only_; }
  /// Per source, in the order given: its identity and what matching left out.
  const std::vector<SourceSummary>& sources() const noexcept { return sources_; }

  /// The columns() of a target feature matrix (feature_matrix of the target space): the input
  /// of a model fitted on features().
  MatrixXd common_features(const MatrixXd& target_x) const {
    if (static_cast<std::size_t>(target_x.cols()) != features_)
      throw std::invalid_argument("TransferSource: a feature matrix of " + std::to_string(target_x.cols()) +
                                  " columns, the target space has " + std::to_string(features_));
    MatrixXd out(target_x.rows(), static_cast<Eigen::Index>(columns_.size()));
    for (std::size_t c = 0; c < columns_.size(); ++c) out.col(static_cast<Eigen::Index>(c)) = target_x.col(columns_[c]);
    return out;
  }

 private:
  MatrixXd x_{};
  VectorXd y_{};
  std::vector<Eigen::Index> columns_{};
  std::vector<std::size_t> row_sources_{};
  std::size_t features_ = 0;
  std::vector<std::string> common_{}, target_only_{};
  std::vector<SourceSummary> sources_{};
};

}  // namespace detail

/// detail::TransferSourceImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using TransferSource = detail::TransferSourceImpl<>;

/// The records of a recorded space (replay_from_file: dataset CSV, Kernel Tuner cache or T4
/// file, gzipped or not) as a source: one row per recorded configuration, its knobs and
/// constants by name (a labelled knob's value is its label), its recorded time (or objective,
/// lower better; `options` as for replay_from_file). Throws DatasetError for a file it cannot read.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
SourceTable source_from_recorded_space(const std::filesystem::path& path, ReplayOptions options = {},
                                       std::ostream* warnings = &std::cerr) {
  const ReplayKernel k = replay_from_file(path, std::move(options), warnings);
  const SearchSpace& s = k.space();
  SourceTable t;
  t.identity = {.file = path.string(), .task = k.name(), .hash = content_hash(detail::source_file_bytes(path))};
  for (const Knob& knob : s.knobs()) t.knobs.push_back(knob.name());
  for (const Constant& c : s.constants()) t.knobs.push_back(c.name);
  const std::vector<Config> configs = k.recorded_configs();
  t.times = k.recorded_times_ms();
  t.rows.reserve(configs.size());
  for (const Config& c : configs) {
    std::vector<SourceValue> row;
    row.reserve(t.knobs.size());
    for (std::size_t i = 0; i < s.dimensions(); ++i) {
      const Knob& knob = s.knob(i);
      if (knob.kind() == KnobKind::split) row.emplace_back(knob.factors(c[i]));
      else if (knob.labelled()) row.emplace_back(knob.label(c[i]));
      else row.emplace_back(knob.value(c[i]));
    }
    for (const Constant& cst : s.constants()) row.emplace_back(cst.value);
    t.rows.push_back(std::move(row));
  }
  return t;
}

/// The records of a tunekit log (JSON lines, records/record.hpp; gzipped or not) as sources, one
/// per task (in the order the tasks first appear), or of `task` alone when it is not empty. A
/// record's knobs are its config's keys (a record without a key of the others' lacks that knob:
/// it is left out of matching), its time its mean (infinity unless its status is ok). A truncated
/// last line is skipped with a warning; another malformed line, or a log without records (of
/// `task`), is a RecordError naming the file.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::vector<SourceTable> sources_from_log(const std::filesystem::path& path, const std::string& task = {},
                                          std::ostream* warnings = &std::cerr) {
  std::string content;
  try {
    content = detail::read_recorded_file(path, "tuning log");
  } catch (const DatasetError& e) {
    throw RecordError(e.what());
  }
  const std::string hash = content_hash(detail::source_file_bytes(path));
  std::vector<SourceTable> tables;
  std::map<std::string, std::size_t> table_of;
  // Ordered: a source's knobs in the order the log writes them (the space's).
  detail::for_each_log_line<nlohmann::ordered_json>(content, path, warnings, [&](const nlohmann::ordered_json& j) {
    const std::string record_task = j.at("task").get<std::string>();
    if (!task.empty() && record_task != task) return;
    const auto status = parse_status(j.at("status").get<std::string>());
    if (!status) throw RecordError("unknown status " + j.at("status").dump());
    const double time = *status == Status::ok ? j.at("mean").get<double>() : std::numeric_limits<double>::infinity();
    const auto& config = j.at("config");
    if (!config.is_object()) throw RecordError("config is not an object");
    auto [it, fresh] = table_of.emplace(record_task, tables.size());
    if (fresh) {
      tables.push_back(SourceTable{.identity = {.file = path.string(), .task = record_task, .hash = hash}});
      for (const auto& [name, v] : config.items()) tables.back().knobs.push_back(name);
    }
    SourceTable& t = tables[it->second];
    std::vector<SourceValue> row;
    row.reserve(t.knobs.size());
    bool whole = config.size() == t.knobs.size();
    for (std::size_t i = 0; i < t.knobs.size() && whole; ++i) {
      const auto v = config.find(t.knobs[i]);
      if (v == config.end()) {
        whole = false;
        break;
      }
      const auto value = detail::source_value_of_json(*v);
      if (!value) throw RecordError("knob '" + t.knobs[i] + "' has the value " + v->dump() + ", which no knob holds");
      row.push_back(*value);
    }
    if (!whole)
      throw RecordError("config's knobs differ from those of the task's first record (" + config.dump() + ")");
    t.rows.push_back(std::move(row));
    t.times.push_back(time);
  });
  if (tables.empty())
    throw RecordError("log '" + path.string() + "' holds no records" + (task.empty() ? "" : " of task '" + task + "'"));
  return tables;
}

/// The sources of several files, each told by its name (after a `.gz`): `.jsonl` a tunekit log
/// (every task of it, sources_from_log), anything else a recorded space
/// (source_from_recorded_space: `.json` a Kernel Tuner cache or T4 file, else a dataset CSV).
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::vector<SourceTable> sources_from_files(const std::vector<std::filesystem::path>& paths,
                                            std::ostream* warnings = &std::cerr) {
  std::vector<SourceTable> tables;
  for (const auto& p : paths) {
    if (detail::without_gz(p).extension() == ".jsonl") {
      for (auto& t : sources_from_log(p, {}, warnings)) tables.push_back(std::move(t));
    } else {
      tables.push_back(source_from_recorded_space(p, {}, warnings));
    }
  }
  return tables;
}

/// The sources a TransferSource was made of, for a log's or a report's record of a run: per
/// source its file, task, hash, records and records left out.
template <class Lazy>
nlohmann::ordered_json sources_to_json(const detail::TransferSourceImpl<Lazy>& source) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : source.sources())
    out.push_back({{"file", s.identity.file},
                   {"task", s.identity.task},
                   {"hash", s.identity.hash},
                   {"records", s.records},
                   {"left_out", s.left_out}});
  return out;
}

}  // namespace tunekit
