#pragma once
/// \file
/// Status of a measurement, and what a kernel returns from one run request.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tunekit {

/// Outcome of measuring one configuration. Anything but `ok` is a failure that is recorded and
/// never chosen as best; a failure never stops the tuning.
enum class Status {
  ok,             ///< ran and returned times
  build_error,    ///< failed to compile or set up
  runtime_error,  ///< failed while running (also: a crash, or an invalid time)
  timeout,        ///< exceeded the per-configuration time limit
  wrong_result,   ///< output differs from the reference beyond the tolerance
  excluded        ///< not part of the space (e.g. absent from a recorded dataset)
};

inline constexpr std::string_view to_string(Status s) noexcept {
  switch (s) {
    case Status::ok: return "ok";
    case Status::build_error: return "build_error";
    case Status::runtime_error: return "runtime_error";
    case Status::timeout: return "timeout";
    case Status::wrong_result: return "wrong_result";
    case Status::excluded: return "excluded";
  }
  return "unknown";
}

/// Parses a status name; std::nullopt for an unknown one.
inline std::optional<Status> parse_status(std::string_view s) noexcept {
  for (Status st : {Status::ok, Status::build_error, Status::runtime_error, Status::timeout,
                    Status::wrong_result, Status::excluded})
    if (to_string(st) == s) return st;
  return std::nullopt;
}

/// What a kernel returns for a request to prepare or run a configuration.
struct RunResult {
  Status status = Status::ok;
  /// Seconds per run (empty for a preparation or a failure).
  std::vector<double> seconds{};
  /// Why it failed, for a status other than ok.
  std::string error{};
  /// The cost in seconds that this request stands for when the kernel simulates time (replay);
  /// negative: the evaluator counts the wall-clock time instead.
  double simulated_cost = -1.0;
};

}  // namespace tunekit
