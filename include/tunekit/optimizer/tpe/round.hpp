#pragma once
/// \file
/// What the parts of TreeParzen (tunekit's own search) see in a round: TpeRound, the phase's
/// measured configs split into the good group and the others with their densities, and
/// CandidatePool, the configs the candidate sources offered.

#include "tunekit/core/search_context.hpp"
#include "tunekit/stats/parzen.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of TPE's model: the split of the measured configs and the densities.
struct TpeDensityParams {
  /// The good group: the ceil(gamma * n) fastest of the n successful configs, at most max_good.
  double gamma = 0.1;
  std::size_t max_good = 25;
  /// Kernel widths of the densities.
  ParzenParams parzen{};

  void validate() const {
    if (!(gamma > 0 && gamma <= 1)) throw std::invalid_argument("TpeDensityParams: gamma must be in (0, 1]");
    if (max_good == 0) throw std::invalid_argument("TpeDensityParams: max_good must be at least 1");
    parzen.validate();
  }
};

/// One round of TreeParzen past its start: the current phase's successful configs, fastest first,
/// split into the good group (the first `n_good`) and the others, with TPE's densities l(x) of
/// the good ones and g(x) of the others (configs handed out and not measured yet join g(x) as
/// pessimistic lies), and every failed config of the history.
struct TpeRound {
  const SearchContext& ctx;
  /// The first trial (position in the history) of the phase, and the trials measured since.
  std::size_t phase_start = 0;
  std::size_t phase_trials = 0;
  /// The phase's successful trials, fastest first (ties in measurement order).
  std::vector<const Trial*> ok{};
  /// The history's failed configs (of every phase).
  std::vector<Config> failed{};
  /// The good group is ok[0, n_good): at least 1, at most ok.size() - 1.
  std::size_t n_good = 0;
  /// The configs handed out and not measured yet, by flat index.
  std::vector<Config> pending{};
  /// The configs of the others: ok[n_good, ...), then the pending ones.
  std::vector<Config> others{};
  /// Whether the round belongs to the model start (ModelStart::active).
  bool model_start = false;
  ParzenEstimator good_density;
  ParzenEstimator other_density;

  /// The round of the phase starting at `phase_start`; needs at least two successful configs in
  /// the phase.
  TpeRound(const SearchContext& context, std::size_t start, const TpeDensityParams& params)
      : ctx(context),
        phase_start(start),
        phase_trials(context.history.size() - std::min(start, context.history.size())),
        ok(successes(context.history, start)),
        failed(failures(context.history)),
        n_good(good_count(ok.size(), params)),
        pending(pending_configs(context)),
        others(other_configs(ok, n_good, pending)),
        good_density(context.space, good_configs(ok, n_good), {}, params.parzen),
        other_density(context.space, others, {}, params.parzen) {}

  /// The measured time below which a config is in the good group (the slowest good one's).
  double good_time() const { return ok[n_good - 1]->measurement.mean; }
  /// The configs of the first k successful trials (fastest first).
  std::vector<Config> fastest(std::size_t k) const {
    std::vector<Config> out;
    for (std::size_t i = 0; i < std::min(k, ok.size()); ++i) out.push_back(ok[i]->config);
    return out;
  }

 private:
  static std::vector<const Trial*> successes(const History& history, std::size_t start) {
    std::vector<const Trial*> ok;
    for (std::size_t i = start; i < history.size(); ++i)
      if (history[i].measurement.ok()) ok.push_back(&history[i]);
    if (ok.size() < 2) throw std::logic_error("TpeRound: the phase needs two successful configs");
    std::stable_sort(ok.begin(), ok.end(),
                     [](const Trial* a, const Trial* b) { return a->measurement.mean < b->measurement.mean; });
    return ok;
  }
  static std::vector<Config> failures(const History& history) {
    std::vector<Config> failed;
    for (std::size_t i = 0; i < history.size(); ++i)
      if (!history[i].measurement.ok()) failed.push_back(history[i].config);
    return failed;
  }
  static std::size_t good_count(std::size_t n, const TpeDensityParams& p) {
    return std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(p.gamma * static_cast<double>(n))), 1,
                                   std::min(p.max_good, n - 1));
  }
  static std::vector<Config> good_configs(const std::vector<const Trial*>& ok, std::size_t n_good) {
    std::vector<Config> good;
    for (std::size_t i = 0; i < n_good; ++i) good.push_back(ok[i]->config);
    return good;
  }
  static std::vector<Config> pending_configs(const SearchContext& ctx) {
    std::vector<std::uint64_t> pending;  // ascending, so that sums do not depend on hashing order
    for (std::uint64_t idx : ctx.visited)
      if (!ctx.history.contains(idx)) pending.push_back(idx);
    std::sort(pending.begin(), pending.end());
    std::vector<Config> configs;
    for (std::uint64_t idx : pending) configs.push_back(ctx.space.from_index(idx));
    return configs;
  }
  static std::vector<Config> other_configs(const std::vector<const Trial*>& ok, std::size_t n_good,
                                           const std::vector<Config>& pending) {
    std::vector<Config> others;
    for (std::size_t i = n_good; i < ok.size(); ++i) others.push_back(ok[i]->config);
    others.insert(others.end(), pending.begin(), pending.end());
    return others;
  }
};

/// The candidates of a round: valid configs, none visited, no two alike, each with the source
/// that offered it (its position in TreeParzen's CandidateSources), its log P(ok | x) once the
/// failure model has scored it, and at most one nominee per source (a source that picks among
/// the others' candidates, ModelPick, nominates one instead of adding).
class CandidatePool {
 public:
  /// The source of candidates that no source offered (the model start's random ones).
  static constexpr std::size_t no_source = std::numeric_limits<std::size_t>::max();

  explicit CandidatePool(const SearchContext& ctx) : ctx_(&ctx) {}

  /// The source the next `add` and `nominate` calls are made for.
  void set_source(std::size_t source) noexcept { source_ = source; }

  /// Adds `c` (valid) as a candidate of the current source unless it was visited or is in the
  /// pool already; returns whether it was added.
  bool add(Config c) {
    const auto idx = ctx_->space.to_index(c);
    if (ctx_->visited.contains(idx) || !indices_.insert(idx).second) return false;
    configs_.push_back(std::move(c));
    sources_.push_back(source_);
    return true;
  }

  /// Makes candidate i the current source's nominee (its pick among the pool).
  void nominate(std::size_t i) {
    if (i >= configs_.size()) throw std::out_of_range("CandidatePool::nominate: no candidate " + std::to_string(i));
    if (source_ >= nominees_.size()) nominees_.resize(source_ + 1, no_source);
    nominees_[source_] = i;
  }
  /// The nominee of a source, or no_source.
  std::size_t nominee(std::size_t source) const noexcept {
    return source < nominees_.size() ? nominees_[source] : no_source;
  }

  std::size_t size() const noexcept { return configs_.size(); }
  bool empty() const noexcept { return configs_.empty(); }
  const Config& operator[](std::size_t i) const { return configs_[i]; }
  std::span<const Config> configs() const noexcept { return configs_; }
  /// The source that offered candidate i.
  std::size_t source(std::size_t i) const { return sources_[i]; }
  /// The candidates' flat indices (for draw_unvisited's `taken`).
  const std::unordered_set<std::uint64_t>& indices() const noexcept { return indices_; }

  /// log P(ok | x) of each candidate (0 where no config failed): set by TreeParzen before the
  /// sources that pick among the candidates run.
  std::span<const double> log_ok() const noexcept { return log_ok_; }
  void set_log_ok(std::vector<double> log_ok) {
    if (log_ok.size() != configs_.size()) throw std::invalid_argument("CandidatePool::set_log_ok: one per candidate");
    log_ok_ = std::move(log_ok);
  }

 private:
  const SearchContext* ctx_;
  std::size_t source_ = no_source;
  std::vector<Config> configs_{};
  std::vector<std::size_t> sources_{};
  std::unordered_set<std::uint64_t> indices_{};
  std::vector<std::size_t> nominees_{};
  std::vector<double> log_ok_{};
};

}  // namespace tunekit
