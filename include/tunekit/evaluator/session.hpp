#pragma once
/// \file
/// What every evaluator does around its timed runs: prepare the configuration, run the warm-up,
/// verify the output, check the times, count the cost and enforce the time limit. Deterministic
/// and AdaptiveCV differ only in how many runs they ask for.

#include "tunekit/concepts/evaluator.hpp"
#include "tunekit/core/measurement.hpp"

#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <string>
#include <vector>

namespace tunekit {
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

/// One measurement of one configuration in progress. `start` prepares the configuration (a
/// PreparableKernel) and runs the warm-up; `run` asks for timed runs. The output of the first
/// run request (the warm-up, or the first timed runs when there is none) is checked with the
/// kernel's `verify` when it is a VerifiableKernel. Any failure (a failure status, an exception,
/// an invalid time, a wrong result, the cost passing `timeout_seconds` when that is > 0) ends the
/// session: `failed()` turns true and `measurement()` holds the status and the error.
template <Kernel K>
class MeasureSession {
 public:
  MeasureSession(K& kernel, const Config& config, Rng& rng, double timeout_seconds)
      : kernel_(kernel), config_(config), rng_(rng), timeout_(timeout_seconds) {}

  /// Prepares and warms up; false when that failed.
  bool start(std::size_t warmup) {
    if constexpr (PreparableKernel<K>) {
      const RunResult r =
          timed_call([&] { return kernel_.prepare(config_); }, Status::build_error, m_.cost);
      if (r.status != Status::ok) return fail(r);
      if (over_time()) return timeout();
    }
    if (warmup > 0) {
      const RunResult r = timed_call([&] { return kernel_.run(config_, warmup, rng_); },
                                     Status::runtime_error, m_.cost);
      if (r.status != Status::ok) return fail(r);
      if (!verified() || over_time()) return fail_or_timeout();
    }
    return true;
  }

  /// `runs` timed runs: their seconds, or nullptr when the session failed.
  const std::vector<double>* run(std::size_t runs) {
    last_ = timed_call([&] { return kernel_.run(config_, runs, rng_); }, Status::runtime_error,
                       m_.cost);
    if (last_.status != Status::ok) {
      fail(last_);
      return nullptr;
    }
    if (auto err = check_times(last_, runs); !err.empty()) {
      fail({.status = Status::runtime_error, .seconds = {}, .error = err, .simulated_cost = -1});
      return nullptr;
    }
    if (!verified() || over_time()) {
      fail_or_timeout();
      return nullptr;
    }
    return &last_.seconds;
  }

  bool failed() const noexcept { return m_.status != Status::ok; }
  Measurement& measurement() noexcept { return m_; }

 private:
  // Verifies once, after the first run request; false (and failed) for a wrong output.
  bool verified() {
    if constexpr (VerifiableKernel<K>) {
      if (verify_done_) return true;
      verify_done_ = true;
      const RunResult r =
          timed_call([&] { return kernel_.verify(config_); }, Status::wrong_result, m_.cost);
      if (r.status != Status::ok) {
        fail(r);
        return false;
      }
    }
    return true;
  }

  bool over_time() const { return timeout_ > 0 && m_.cost > timeout_; }

  bool fail_or_timeout() { return failed() ? false : timeout(); }

  bool timeout() {
    return fail({.status = Status::timeout, .seconds = {},
                 .error = "measurement exceeded " + std::to_string(timeout_) + " s",
                 .simulated_cost = -1});
  }

  bool fail(const RunResult& r) {
    m_.status = r.status == Status::ok ? Status::runtime_error : r.status;
    m_.error = r.error;
    m_.mean = std::numeric_limits<double>::infinity();
    m_.std = 0.0;
    return false;
  }

  K& kernel_;
  const Config& config_;
  Rng& rng_;
  double timeout_;
  Measurement m_;
  RunResult last_;
  bool verify_done_ = false;
};

}  // namespace detail
}  // namespace tunekit
