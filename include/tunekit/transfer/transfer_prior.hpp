#pragma once
/// \file
/// TransferPrior: what each source of a TransferSource says of a target config, and how far the
/// target's own measurements agree with it (a guard against negative transfer). The parts of
/// tunekit's own transfer (optimizer/tpe/transfer.hpp: TransferStart, TransferModelStart) and
/// the top-first baseline (TopFirst) read it.
///
/// Per source s, its prediction of a target config x is the relative throughput r_s(x) it
/// recorded for x (matched by knob values, transfer/source.hpp; the mean of its records there),
/// or, where it recorded nothing, that of a random forest fitted on its records; as a log time,
/// z_s(x) = -log max(r_s(x), 1e-3) (a failure in the source is a slow config).
///
/// The guard (RankAgreementGuard) weighs each source by how well its z_s ranks the target's
/// measured successful configs: w_s = max(0, lower end of a one-standard-error interval of
/// Spearman's rho between z_s and the measured log times, by Fisher's z with the standard error
/// 1.03 / sqrt(n - 3) of Fieller, Hartley & Pearson 1957), 1 before n = 4 measured configs. A
/// source whose ranking disagrees with the target's (rho <= 0) gets weight 0, and a few
/// agreeing configs weigh less than many.

#include "tunekit/core/history.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/space/features.hpp"
#include "tunekit/surrogate/random_forest.hpp"
#include "tunekit/transfer/source.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <vector>

namespace tunekit {

/// Options of TransferPrior.
struct TransferPriorParams {
  /// Trees of each source's forest (its prediction where it recorded nothing).
  std::size_t trees = 30;
  /// Seed of the forests' fits (a generator of their own: the tuner's draws stay its own).
  std::uint64_t seed = 0;

  void validate() const {
    if (trees < 2) throw std::invalid_argument("TransferPriorParams: trees must be at least 2");
  }
};

/// Spearman's rank correlation of two equally long samples (average ranks for ties); 0 when
/// either is constant or they have fewer than two values.
inline double spearman(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size()) throw std::invalid_argument("spearman: samples of different lengths");
  const std::size_t n = a.size();
  if (n < 2) return 0.0;
  auto ranks = [n](std::span<const double> v) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return v[i] < v[j]; });
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n;) {
      std::size_t j = i;
      while (j + 1 < n && v[order[j + 1]] == v[order[i]]) ++j;
      for (std::size_t k = i; k <= j; ++k) r[order[k]] = 0.5 * static_cast<double>(i + j);
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double m = 0.5 * static_cast<double>(n - 1);
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sab += (ra[i] - m) * (rb[i] - m);
    saa += (ra[i] - m) * (ra[i] - m);
    sbb += (rb[i] - m) * (rb[i] - m);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

/// The sources' knowledge of a target space (see the file comment). Copies share the fitted
/// models (they are never changed after construction). Default-constructed: no source.
class TransferPrior {
 public:
  using Params = TransferPriorParams;

  TransferPrior() = default;

  /// Reads `source` (matched to `space`): per source its records by target features and a forest
  /// fitted on them, and the target configs its records name (those whose every target knob it
  /// has and whose values are valid there).
  TransferPrior(const SearchSpace& space, const TransferSource& source, Params params = {}) {
    params.validate();
    if (source.rows() == 0) return;
    auto d = std::make_shared<Data>();
    d->features = source.target_features();
    d->columns = source.columns();
    const std::size_t ns = source.sources().size();
    d->sources.resize(ns);
    const auto& x = source.features();
    const auto& y = source.targets();
    // Per source: its rows, their mean relative throughput per feature row.
    std::vector<std::vector<Eigen::Index>> rows_of(ns);
    for (std::size_t r = 0; r < source.rows(); ++r) rows_of[source.row_sources()[r]].push_back(static_cast<Eigen::Index>(r));
    Rng rng(params.seed);
    for (std::size_t s = 0; s < ns; ++s) {
      PerSource& ps = d->sources[s];
      std::map<std::vector<double>, std::pair<double, std::size_t>> sum;
      Eigen::MatrixXd xs(static_cast<Eigen::Index>(rows_of[s].size()), x.cols());
      Eigen::VectorXd ys(xs.rows());
      for (std::size_t i = 0; i < rows_of[s].size(); ++i) {
        const Eigen::Index r = rows_of[s][i];
        xs.row(static_cast<Eigen::Index>(i)) = x.row(r);
        ys(static_cast<Eigen::Index>(i)) = y(r);
        std::vector<double> key(static_cast<std::size_t>(x.cols()));
        for (Eigen::Index c = 0; c < x.cols(); ++c) key[static_cast<std::size_t>(c)] = x(r, c);
        auto& [total, count] = sum[key];
        total += y(r);
        ++count;
      }
      for (const auto& [key, v] : sum) ps.recorded.emplace(key, v.first / static_cast<double>(v.second));
      if (xs.rows() >= 2) {
        ps.forest = RandomForest({.n_trees = params.trees, .max_features = 1.0});
        ps.forest->fit(xs, ys, rng);
      }
    }
    d->configs = matched_configs(space, source);
    data_ = std::move(d);
  }

  /// Whether there is a source.
  bool empty() const noexcept { return !data_; }
  std::size_t sources() const noexcept { return data_ ? data_->sources.size() : 0; }

  /// Each source's predicted log time of each config (z_s(x), see the file comment): one column
  /// per source.
  Eigen::MatrixXd log_times(const SearchSpace& space, std::span<const Config> configs) const {
    if (!data_) return Eigen::MatrixXd(static_cast<Eigen::Index>(configs.size()), 0);
    const Eigen::MatrixXd full = feature_matrix(space, configs);
    if (static_cast<std::size_t>(full.cols()) != data_->features)
      throw std::invalid_argument("TransferPrior: a space of " + std::to_string(full.cols()) +
                                  " features; the sources were matched to one of " + std::to_string(data_->features));
    Eigen::MatrixXd x(full.rows(), static_cast<Eigen::Index>(data_->columns.size()));
    for (std::size_t c = 0; c < data_->columns.size(); ++c) x.col(static_cast<Eigen::Index>(c)) = full.col(data_->columns[c]);
    Eigen::MatrixXd z(x.rows(), static_cast<Eigen::Index>(data_->sources.size()));
    for (std::size_t s = 0; s < data_->sources.size(); ++s) {
      const PerSource& ps = data_->sources[s];
      std::vector<Eigen::Index> unknown;
      for (Eigen::Index r = 0; r < x.rows(); ++r) {
        std::vector<double> key(static_cast<std::size_t>(x.cols()));
        for (Eigen::Index c = 0; c < x.cols(); ++c) key[static_cast<std::size_t>(c)] = x(r, c);
        const auto it = ps.recorded.find(key);
        if (it != ps.recorded.end()) z(r, static_cast<Eigen::Index>(s)) = it->second;
        else unknown.push_back(r);
      }
      if (!unknown.empty()) {
        Eigen::MatrixXd xu(static_cast<Eigen::Index>(unknown.size()), x.cols());
        for (std::size_t i = 0; i < unknown.size(); ++i) xu.row(static_cast<Eigen::Index>(i)) = x.row(unknown[i]);
        const Eigen::VectorXd p = ps.forest ? ps.forest->predict(xu) : Eigen::VectorXd::Zero(xu.rows());
        for (std::size_t i = 0; i < unknown.size(); ++i)
          z(unknown[i], static_cast<Eigen::Index>(s)) = p(static_cast<Eigen::Index>(i));
      }
    }
    return -(z.array().max(1e-3)).log().matrix();
  }

  /// The weighted mean of the sources' log times (weights as the guard's, summing to > 0).
  Eigen::VectorXd combined_log_times(const SearchSpace& space, std::span<const Config> configs,
                                     std::span<const double> weights) const {
    const Eigen::MatrixXd z = log_times(space, configs);
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    if (!(total > 0)) throw std::invalid_argument("TransferPrior::combined_log_times: no source has weight");
    Eigen::VectorXd out = Eigen::VectorXd::Zero(z.rows());
    for (Eigen::Index s = 0; s < z.cols(); ++s) out += (weights[static_cast<std::size_t>(s)] / total) * z.col(s);
    return out;
  }

  /// The target configs the sources recorded (valid in the target, each once, in the order the
  /// sources give them).
  std::span<const Config> recorded_configs() const noexcept {
    return data_ ? std::span<const Config>(data_->configs) : std::span<const Config>();
  }

  /// recorded_configs() fastest first by the sources' weighted log times (stable).
  std::vector<Config> ranked_configs(const SearchSpace& space, std::span<const double> weights) const {
    const auto configs = recorded_configs();
    if (configs.empty()) return {};
    const Eigen::VectorXd z = combined_log_times(space, configs, weights);
    std::vector<std::size_t> order(configs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return z(static_cast<Eigen::Index>(a)) < z(static_cast<Eigen::Index>(b));
    });
    std::vector<Config> out;
    out.reserve(order.size());
    for (std::size_t i : order) out.push_back(configs[i]);
    return out;
  }

 private:
  struct PerSource {
    std::map<std::vector<double>, double> recorded{};
    std::optional<RandomForest> forest{};
  };
  struct Data {
    std::size_t features = 0;
    std::vector<Eigen::Index> columns{};
    std::vector<PerSource> sources{};
    std::vector<Config> configs{};
  };

  // The target configs of the source's records: those placed on every target knob (a knob some
  // source lacks leaves every record out) whose values the target's knobs have, valid there.
  static std::vector<Config> matched_configs(const SearchSpace& space, const TransferSource& source) {
    if (!source.target_only_knobs().empty()) return {};
    const auto cols = detail::knob_feature_columns(space);
    // Each knob's values' features (its columns of write_features).
    std::vector<std::vector<std::vector<double>>> value_features(space.dimensions());
    std::vector<double> buf(feature_count(space));
    Config c(space.dimensions(), 0);
    for (std::size_t k = 0; k < space.dimensions(); ++k) {
      for (std::size_t i = 0; i < space.knob(k).size(); ++i) {
        c[k] = static_cast<std::uint32_t>(i);
        write_features(space, c, buf);
        value_features[k].emplace_back(buf.begin() + static_cast<std::ptrdiff_t>(cols[k].first),
                                       buf.begin() + static_cast<std::ptrdiff_t>(cols[k].first + cols[k].second));
      }
      c[k] = 0;
    }
    std::vector<Config> out;
    std::unordered_set<std::uint64_t> seen;
    const auto& x = source.features();
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
      Config config(space.dimensions());
      bool placed = true;
      std::size_t col = 0;  // knobs in common are in space order in features()
      for (std::size_t k = 0; k < space.dimensions() && placed; ++k) {
        const std::size_t n = cols[k].second;
        const auto& values = value_features[k];
        std::size_t found = values.size();
        for (std::size_t i = 0; i < values.size() && found == values.size(); ++i) {
          bool same = true;
          for (std::size_t j = 0; j < n && same; ++j) same = values[i][j] == x(r, static_cast<Eigen::Index>(col + j));
          if (same) found = i;
        }
        col += n;
        placed = found < values.size();
        if (placed) config[k] = static_cast<std::uint32_t>(found);
      }
      if (!placed || !space.is_valid(config)) continue;
      if (seen.insert(space.to_index(config)).second) out.push_back(std::move(config));
    }
    return out;
  }

  std::shared_ptr<const Data> data_{};
};

/// The guard of TreeParzen's transfer parts: each source's weight from its rank agreement with
/// the target's measured successful configs (see the file comment). A TransferGuard:
/// `std::vector<double> weights(const TransferPrior&, const SearchSpace&, const History&) const`,
/// one weight in [0, 1] per source.
struct RankAgreementGuard {
  /// Measured successful configs before which every source has weight 1.
  std::size_t min_trials = 4;
  /// Standard errors of Fisher's z below rho the weight is taken at.
  double standard_errors = 1.0;

  std::vector<double> weights(const TransferPrior& prior, const SearchSpace& space, const History& history) const {
    std::vector<Config> configs;
    std::vector<double> y;
    for (std::size_t i = 0; i < history.size(); ++i)
      if (history[i].measurement.ok()) {
        configs.push_back(history[i].config);
        y.push_back(std::log(history[i].measurement.mean));
      }
    std::vector<double> w(prior.sources(), 1.0);
    const std::size_t n = configs.size();
    if (n < std::max<std::size_t>(min_trials, 4)) return w;
    const Eigen::MatrixXd z = prior.log_times(space, configs);
    for (std::size_t s = 0; s < w.size(); ++s) {
      const Eigen::VectorXd col = z.col(static_cast<Eigen::Index>(s));
      const double rho = spearman(std::span<const double>(col.data(), n), y);
      const double fz = std::atanh(std::clamp(rho, -0.999, 0.999));
      const double lower = std::tanh(fz - standard_errors * 1.03 / std::sqrt(static_cast<double>(n) - 3.0));
      w[s] = rho > 0 ? std::max(0.0, lower) : 0.0;
    }
    return w;
  }
};

/// No guard: every source keeps weight 1 (the ablation of RankAgreementGuard).
struct NoTransferGuard {
  std::vector<double> weights(const TransferPrior& prior, const SearchSpace&, const History&) const {
    return std::vector<double>(prior.sources(), 1.0);
  }
};

/// A guard: `std::vector<double> weights(const TransferPrior&, const SearchSpace&, const History&)
/// const`, one weight in [0, 1] per source (RankAgreementGuard, NoTransferGuard).
template <class G>
concept TransferGuard = requires(const G& g, const TransferPrior& p, const SearchSpace& s, const History& h) {
  { g.weights(p, s, h) } -> std::same_as<std::vector<double>>;
};

static_assert(TransferGuard<RankAgreementGuard>);
static_assert(TransferGuard<NoTransferGuard>);

}  // namespace tunekit
