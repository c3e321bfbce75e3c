#pragma once
/// \file
/// Deterministic evaluator: warm-up runs, then a fixed number of timed repeats (AutoTVM's
/// number / repeat / min_repeat_ms).

#include "tunekit/concepts/evaluator.hpp"
#include "tunekit/core/measurement.hpp"
#include "tunekit/evaluator/session.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunekit {

/// Parameters of the Deterministic evaluator; fill with designated initialisers.
struct DeterministicParams {
  /// Untimed runs before the first repeat.
  std::size_t warmup = 1;
  /// Runs averaged into one sample.
  std::size_t number = 1;
  /// Samples taken.
  std::size_t repeat = 3;
  /// If > 0, `number` grows until one sample's runs last at least this long (AutoTVM).
  double min_repeat_ms = 0.0;
  /// If > 0, a config whose measurement exceeds this many seconds (preparation included) is a
  /// `timeout`. Checked between kernel calls: a run that never returns needs `Isolated`.
  double timeout_seconds = 0.0;

  void validate() const {
    if (repeat == 0) throw std::invalid_argument("DeterministicParams: repeat must be >= 1");
    if (number == 0) throw std::invalid_argument("DeterministicParams: number must be >= 1");
    if (!(min_repeat_ms >= 0.0) || !std::isfinite(min_repeat_ms))
      throw std::invalid_argument("DeterministicParams: min_repeat_ms must be finite and >= 0");
    if (!(timeout_seconds >= 0.0))
      throw std::invalid_argument("DeterministicParams: timeout_seconds must be >= 0");
  }
};

namespace detail {

/// Mean and standard deviation of the samples with the minimum and maximum dropped when there
/// are more than two (AutoTVM).
inline void summarise(Measurement& m) {
  std::vector<double> kept = m.samples;
  if (kept.size() > 2) {
    std::sort(kept.begin(), kept.end());
    kept = std::vector<double>(kept.begin() + 1, kept.end() - 1);
  }
  m.mean = stats::mean(kept);
  m.std = stats::stddev(kept);
}

}  // namespace detail

/// Measures a config with `warmup` untimed runs and `repeat` samples of `number` runs each; the
/// mean drops the fastest and slowest sample when there are more than two (AutoTVM's
/// measure). A failing kernel, an exception, an invalid time or a wrong output (VerifiableKernel)
/// gives a failure status.
class Deterministic {
 public:
  using Params = DeterministicParams;

  explicit Deterministic(Params p = {}) : p_(p) { p_.validate(); }
  const Params& params() const noexcept { return p_; }

  template <Kernel K>
  Measurement measure(K& kernel, const Config& c, Rng& rng) {
    detail::MeasureSession<K> session(kernel, c, rng, p_.timeout_seconds);
    Measurement& m = session.measurement();
    if (!session.start(p_.warmup)) return m;
    std::size_t number = p_.number;
    constexpr std::size_t max_number = std::size_t{1} << 24;
    while (m.samples.size() < p_.repeat) {
      const std::vector<double>* seconds = session.run(number);
      if (!seconds) return m;
      double total_ms = 0.0;
      for (double s : *seconds) total_ms += s * 1e3;
      if (p_.min_repeat_ms > 0 && total_ms < p_.min_repeat_ms && number < max_number) {
        // Too short to time reliably: scale `number` up and take this sample again.
        const double scale = std::max(2.0, std::ceil(p_.min_repeat_ms / total_ms * 1.1));
        // Clamp before converting: a tiny total makes the product exceed any integer.
        number = static_cast<std::size_t>(
            std::min(static_cast<double>(max_number), static_cast<double>(number) * scale));
        continue;
      }
      m.samples.push_back(stats::mean(*seconds));
    }
    detail::summarise(m);
    return m;
  }

 private:
  Params p_;
};

static_assert(Evaluator<Deterministic>);

}  // namespace tunekit
