#pragma once
/// \file
/// The bytes a farm's tuning process and its workers exchange: a job (FarmJob) one way, its
/// measurement and where it was made the other. Shared by LocalFarm (pipes) and MpiFarm
/// (messages); both sides are the same program, so the encoding is the host's.

#include "tunekit/core/farm_job.hpp"
#include "tunekit/evaluator/isolation.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tunekit {

/// A farm that cannot go on (every worker died, a malformed message): what was told before
/// is in the tuner's log, and `--resume` (resume_exact) continues the run from there.
struct FarmError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {

class FarmCodec : ByteCodec {
 public:
  static std::string encode_job(std::uint64_t id, const FarmJob& j) {
    std::string out;
    put(out, id);
    put(out, static_cast<std::uint64_t>(j.task));
    put(out, j.measurement_seed);
    put(out, j.trial);
    put(out, static_cast<std::uint64_t>(j.compile_ahead));
    put_config(out, j.config);
    put(out, static_cast<std::uint64_t>(j.prefetch.size()));
    for (const Config& c : j.prefetch) put_config(out, c);
    return out;
  }

  static bool decode_job(std::string_view in, std::uint64_t& id, FarmJob& j) {
    std::uint64_t task = 0, ahead = 0, n = 0;
    if (!get(in, id) || !get(in, task) || !get(in, j.measurement_seed) || !get(in, j.trial) || !get(in, ahead) ||
        !get_config(in, j.config) || !get(in, n) || n > in.size() / sizeof(std::uint64_t))
      return false;
    j.task = static_cast<std::size_t>(task);
    j.compile_ahead = static_cast<std::size_t>(ahead);
    j.prefetch.assign(static_cast<std::size_t>(n), Config{});
    for (Config& c : j.prefetch)
      if (!get_config(in, c)) return false;
    return in.empty();
  }

  /// A result: the job's id, then the measurement (with its host and device).
  static std::string encode_result(std::uint64_t id, const Measurement& m) {
    std::string out;
    put(out, id);
    put_text(out, m.host);
    put_text(out, m.device);
    out += ResultCodec::encode(m, Rng());
    return out;
  }

  static bool decode_result(std::string_view in, std::uint64_t& id, Measurement& m) {
    std::string host, device;
    if (!get(in, id) || !get_text(in, host) || !get_text(in, device)) return false;
    Rng unused;
    if (!ResultCodec::decode(in, m, unused)) return false;
    m.host = std::move(host);
    m.device = std::move(device);
    return true;
  }

 private:
  static void put_config(std::string& out, const Config& c) {
    put(out, static_cast<std::uint64_t>(c.size()));
    for (auto v : c) put(out, static_cast<std::uint32_t>(v));
  }
  static bool get_config(std::string_view& in, Config& c) {
    std::uint64_t n = 0;
    if (!get(in, n) || n > in.size() / sizeof(std::uint32_t)) return false;
    c.assign(static_cast<std::size_t>(n), 0);
    for (auto& v : c) {
      std::uint32_t x = 0;
      if (!get(in, x)) return false;
      v = x;
    }
    return true;
  }
  static void put_text(std::string& out, const std::string& s) {
    put(out, static_cast<std::uint64_t>(s.size()));
    out += s;
  }
  static bool get_text(std::string_view& in, std::string& s) {
    std::uint64_t n = 0;
    if (!get(in, n) || n > in.size()) return false;
    s.assign(in.data(), static_cast<std::size_t>(n));
    in.remove_prefix(static_cast<std::size_t>(n));
    return true;
  }
};

/// Measures a job with `work` on a worker: an exception becomes a runtime_error measurement;
/// host and device say where.
inline Measurement measure_job(const FarmWork& work, const FarmJob& job, const std::string& host,
                               const std::string& device) {
  Measurement m;
  try {
    m = work(job);
  } catch (const std::exception& e) {
    m = Measurement::failure(Status::runtime_error, e.what());
  } catch (...) {
    m = Measurement::failure(Status::runtime_error, "unknown exception");
  }
  m.host = host;
  m.device = device;
  return m;
}

/// This machine's host name ("unknown" when it has none).
inline std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

}  // namespace detail
}  // namespace tunekit
