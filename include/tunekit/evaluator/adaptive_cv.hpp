#pragma once
/// \file
/// AdaTune's adaptive evaluator (Li et al., "AdaTune", NeurIPS 2020, section 4.1 and Algorithm 1,
/// lines 10-15): runs in micro-batches until the measured throughput has settled.

#include "tunekit/concepts/evaluator.hpp"
#include "tunekit/core/measurement.hpp"
#include "tunekit/evaluator/session.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunekit {

/// Parameters of AdaptiveCV (defaults: the paper's n = 500, B = 50, threshold 0.1); fill with
/// designated initialisers.
struct AdaptiveCVParams {
  /// n: the most timed runs of one config.
  std::size_t max_runs = 500;
  /// B: runs per micro-batch (the last one is shorter when B does not divide n).
  std::size_t batch = 50;
  /// Stop once std/mean of Perf_1..Perf_i falls below this.
  double threshold = 0.1;
  /// Micro-batches before the first stopping test (at least 2: one value has no spread).
  std::size_t min_batches = 2;
  /// Untimed runs before the first micro-batch (the recorded datasets show first runs up to 6%
  /// slower than the rest).
  std::size_t warmup = 1;
  /// If > 0, a config whose measurement exceeds this many seconds (preparation included) is a
  /// `timeout`. Checked between kernel calls: a run that never returns needs `Isolated`.
  double timeout_seconds = 0.0;

  void validate() const {
    if (batch == 0) throw std::invalid_argument("AdaptiveCVParams: batch must be >= 1");
    if (min_batches < 2) throw std::invalid_argument("AdaptiveCVParams: min_batches must be >= 2");
    if (max_runs < batch * min_batches)
      throw std::invalid_argument("AdaptiveCVParams: max_runs must be >= batch * min_batches (" +
                                  std::to_string(batch * min_batches) + ")");
    if (!(threshold > 0.0) || !std::isfinite(threshold))
      throw std::invalid_argument("AdaptiveCVParams: threshold must be finite and > 0");
    if (!(timeout_seconds >= 0.0))
      throw std::invalid_argument("AdaptiveCVParams: timeout_seconds must be >= 0");
  }
};

/// Measures a config in micro-batches of B runs, up to n runs. After micro-batch i it computes
/// Perf_i = (runs so far) * FLOP / Time(i), Time(i) being the run time accumulated since the
/// measurement began, and stops as soon as i >= min_batches and the coefficient of variation
/// std/mean (sample std) of Perf_1..Perf_i is below the threshold. A config whose throughput
/// settles quickly is measured with few runs; a noisy one gets up to n. FLOP cancels in the
/// coefficient of variation, so kernels without a FLOP count work too.
///
/// The Measurement holds every timed run as a sample; its mean is Time / runs (the cumulative
/// estimate the stopping rule tested) and its std the sample std of the runs. Failures as in
/// Deterministic.
class AdaptiveCV {
 public:
  using Params = AdaptiveCVParams;

  explicit AdaptiveCV(Params p = {}) : p_(p) { p_.validate(); }
  const Params& params() const noexcept { return p_; }

  template <Kernel K>
  Measurement measure(K& kernel, const Config& c, Rng& rng) {
    detail::MeasureSession<K> session(kernel, c, rng, p_.timeout_seconds);
    Measurement& m = session.measurement();
    if (!session.start(p_.warmup)) return m;
    double elapsed = 0.0;
    std::vector<double> perf;  // runs per second after each micro-batch
    while (m.samples.size() < p_.max_runs) {
      const std::size_t runs = std::min(p_.batch, p_.max_runs - m.samples.size());
      const std::vector<double>* seconds = session.run(runs);
      if (!seconds) return m;
      for (double s : *seconds) elapsed += s;
      m.samples.insert(m.samples.end(), seconds->begin(), seconds->end());
      perf.push_back(static_cast<double>(m.samples.size()) / elapsed);
      if (perf.size() >= p_.min_batches && stats::stddev(perf) / stats::mean(perf) < p_.threshold)
        break;
    }
    m.mean = elapsed / static_cast<double>(m.samples.size());
    m.std = stats::stddev(m.samples);
    return m;
  }

 private:
  Params p_;
};

static_assert(Evaluator<AdaptiveCV>);

}  // namespace tunekit
