#pragma once
/// \file
/// Deterministic evaluator: warm-up runs, then a fixed number of timed repeats (AutoTVM's
/// number / repeat / min_repeat_ms).

#include "tunekit/concepts.hpp"
#include "tunekit/evaluator/measurement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
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
  /// `timeout`. Checked between kernel calls: a run that never returns needs isolation.
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

/// Calls one kernel request, turning exceptions into a failure status and adding its cost
/// (simulated if the kernel says so, else wall-clock) to `cost`.
template <class F>
RunResult timed_call(F&& request, Status on_exception, double& cost) {
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r;
  try {
    r = request();
  } catch (const std::exception& e) {
    r = RunResult{.status = on_exception, .seconds = {}, .error = e.what(), .simulated_cost = -1};
  } catch (...) {
    r = RunResult{.status = on_exception, .seconds = {}, .error = "unknown exception",
                  .simulated_cost = -1};
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cost += r.simulated_cost >= 0 ? r.simulated_cost : wall;
  return r;
}

/// Checks that a run request returned `runs` finite positive times; an error text otherwise.
inline std::string check_times(const RunResult& r, std::size_t runs) {
  if (r.seconds.size() != runs)
    return "kernel returned " + std::to_string(r.seconds.size()) + " times for " +
           std::to_string(runs) + " runs";
  for (double s : r.seconds)
    if (!std::isfinite(s) || s <= 0.0)
      return "kernel returned an invalid run time (" + std::to_string(s) + " s)";
  return {};
}

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
/// measure). A failing kernel, an exception, or an invalid time gives a failure status.
class Deterministic {
 public:
  using Params = DeterministicParams;

  explicit Deterministic(Params p = {}) : p_(p) { p_.validate(); }
  const Params& params() const noexcept { return p_; }

  template <Kernel K>
  Measurement measure(K& kernel, const Config& c, Rng& rng) {
    Measurement m;
    auto fail = [&m](const RunResult& r) {
      m.status = r.status == Status::ok ? Status::runtime_error : r.status;
      m.error = r.error;
      m.mean = std::numeric_limits<double>::infinity();
      m.std = 0.0;
      return m;
    };
    auto over_time = [&] { return p_.timeout_seconds > 0 && m.cost > p_.timeout_seconds; };
    auto timeout = [&] {
      return fail({.status = Status::timeout, .seconds = {},
                   .error = "measurement exceeded " + std::to_string(p_.timeout_seconds) + " s",
                   .simulated_cost = -1});
    };

    if constexpr (PreparableKernel<K>) {
      RunResult r = detail::timed_call([&] { return kernel.prepare(c); }, Status::build_error, m.cost);
      if (r.status != Status::ok) return fail(r);
      if (over_time()) return timeout();
    }
    if (p_.warmup > 0) {
      RunResult r = detail::timed_call([&] { return kernel.run(c, p_.warmup, rng); },
                                       Status::runtime_error, m.cost);
      if (r.status != Status::ok) return fail(r);
      if (over_time()) return timeout();
    }
    std::size_t number = p_.number;
    constexpr std::size_t max_number = std::size_t{1} << 24;
    while (m.samples.size() < p_.repeat) {
      RunResult r = detail::timed_call([&] { return kernel.run(c, number, rng); },
                                       Status::runtime_error, m.cost);
      if (r.status != Status::ok) return fail(r);
      if (auto err = detail::check_times(r, number); !err.empty())
        return fail({.status = Status::runtime_error, .seconds = {}, .error = err,
                     .simulated_cost = -1});
      if (over_time()) return timeout();
      double total_ms = 0.0;
      for (double s : r.seconds) total_ms += s * 1e3;
      if (p_.min_repeat_ms > 0 && total_ms < p_.min_repeat_ms && number < max_number) {
        // Too short to time reliably: scale `number` up and take this sample again.
        const double scale = std::max(2.0, std::ceil(p_.min_repeat_ms / total_ms * 1.1));
        // Clamp before converting: a tiny total makes the product exceed any integer.
        number = static_cast<std::size_t>(
            std::min(static_cast<double>(max_number), static_cast<double>(number) * scale));
        continue;
      }
      m.samples.push_back(stats::mean(r.seconds));
    }
    detail::summarise(m);
    return m;
  }

 private:
  Params p_;
};

static_assert(Evaluator<Deterministic>);

}  // namespace tunekit
