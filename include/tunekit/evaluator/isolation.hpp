#pragma once
/// \file
/// Isolated: measure each configuration in a forked child process, so that a configuration that
/// crashes the process (SIGSEGV, SIGABRT, SIGFPE, exit), or hangs, is recorded and the tuning
/// goes on. POSIX only (fork, pipe, poll, waitpid).
///
/// Cost: one fork per measurement (page tables copied, memory shared copy-on-write) plus a thread
/// start in the child; bench/bench_evaluator.cpp measures it (docs/benchmarks.md, "Measurement").

#include "tunekit/concepts/evaluator.hpp"
#include "tunekit/core/child_process.hpp"
#include "tunekit/core/measurement.hpp"
#include "tunekit/evaluator/deterministic.hpp"

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

namespace tunekit {

/// Parameters of Isolated; fill with designated initialisers.
struct IsolationParams {
  /// Wall-clock seconds the child may take for one configuration (preparation, warm-up, runs and
  /// verification) before it is killed with SIGKILL and the configuration recorded as `timeout`.
  double timeout_seconds = 60.0;

  void validate() const {
    if (!(timeout_seconds > 0.0) || !std::isfinite(timeout_seconds))
      throw std::invalid_argument("IsolationParams: timeout_seconds must be finite and > 0");
  }
};

namespace detail {

/// Trivially copyable values as their bytes (both ends are the same program on the same
/// machine kind), for the codecs of the isolation pipe and of the farms (farm/protocol.hpp).
class ByteCodec {
 protected:
  template <class T>
  static void put(std::string& out, const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <class T>
  static bool get(std::string_view& in, T& v) {
    if (in.size() < sizeof v) return false;
    std::memcpy(&v, in.data(), sizeof v);
    in.remove_prefix(sizeof v);
    return true;
  }
};

/// The Measurement and the generator state a child sends back through the pipe.
class ResultCodec : ByteCodec {
 public:
  static_assert(std::is_trivially_copyable_v<Rng>, "the generator state is sent as bytes");

  static std::string encode(const Measurement& m, const Rng& rng) {
    std::string out(magic, sizeof magic);
    put(out, static_cast<std::int32_t>(m.status));
    put(out, m.mean);
    put(out, m.std);
    put(out, m.cost);
    put(out, static_cast<std::uint64_t>(m.samples.size()));
    for (double s : m.samples) put(out, s);
    put(out, static_cast<std::uint64_t>(m.error.size()));
    out += m.error;
    put(out, rng);
    return out;
  }

  /// Decodes a payload into m and rng; false for a truncated or malformed one.
  static bool decode(std::string_view in, Measurement& m, Rng& rng) {
    if (in.size() < sizeof magic || std::memcmp(in.data(), magic, sizeof magic) != 0) return false;
    in.remove_prefix(sizeof magic);
    std::int32_t status = 0;
    std::uint64_t n = 0;
    Measurement r;
    if (!get(in, status) || status < 0 || status > static_cast<std::int32_t>(Status::excluded) ||
        !get(in, r.mean) || !get(in, r.std) || !get(in, r.cost) || !get(in, n) ||
        n > in.size() / sizeof(double))
      return false;
    r.status = static_cast<Status>(status);
    r.samples.resize(n);
    for (double& s : r.samples)
      if (!get(in, s)) return false;
    if (!get(in, n) || n > in.size()) return false;
    r.error.assign(in.data(), n);
    in.remove_prefix(n);
    Rng state;
    if (!get(in, state) || !in.empty()) return false;
    m = std::move(r);
    rng = state;
    return true;
  }

 private:
  static constexpr char magic[4] = {'T', 'K', 'M', '1'};
};

}  // namespace detail

/// Runs the Inner evaluator in a forked child process for every configuration; the child sends
/// the Measurement back through a pipe. A child that is killed by a signal or exits without a
/// result gives `runtime_error` with the signal or the exit code in the error text; one that
/// takes longer than `timeout_seconds` is killed and gives `timeout`. Either way the tuning goes
/// on.
///
/// The child restores the default action of the crash signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
/// SIGABRT, SIGTRAP, SIGSYS) before it measures, so handlers installed in the parent do not run
/// there. Everything the child does to the kernel (buffers, caches) is lost when it exits; the
/// generator's state comes back with the result, so Isolated<E> draws the same numbers as E and
/// replays identically. The cost of a measurement is the child's (simulated for replay); for a
/// killed or crashed child it is the wall-clock time until it was reaped. The fork itself is not
/// charged.
///
/// OpenMP: GNU libgomp is not fork-safe; a child's first parallel region from the forking thread
/// waits forever for the parent's pool threads, which do not exist in the child. The child
/// therefore measures on a new thread, which builds its own OpenMP pool.
template <class Inner = Deterministic>
class Isolated {
 public:
  using Params = IsolationParams;
  /// It measures in a forked child: a Tuner does not compile ahead for it (a compilation on a
  /// thread of the parent is not in the child; TunerOptions::compile_ahead).
  static constexpr bool measures_in_child = true;

  Isolated() : Isolated(Inner(), Params()) {}
  explicit Isolated(Inner inner, Params p = {}) : inner_(std::move(inner)), p_(p) {
    static_assert(check_evaluator<Inner>());
    p_.validate();
  }
  const Params& params() const noexcept { return p_; }
  Inner& inner() noexcept { return inner_; }
  const Inner& inner() const noexcept { return inner_; }

  template <Kernel K>
  Measurement measure(K& kernel, const Config& c, Rng& rng) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    auto failure = [&](Status s, std::string why) {
      Measurement m;
      m.status = s;
      m.error = std::move(why);
      m.cost = std::chrono::duration<double>(clock::now() - t0).count();
      return m;
    };

    const auto deadline = t0 + std::chrono::duration_cast<clock::duration>(
                                   std::chrono::duration<double>(p_.timeout_seconds));
    const detail::ChildOutcome child_end =
        detail::run_in_child([&](int fd) { return child(kernel, c, rng, fd); }, deadline);
    if (!child_end.error.empty()) return failure(Status::runtime_error, "isolation: " + child_end.error);
    if (child_end.timed_out)
      return failure(Status::timeout, "isolated measurement killed after " +
                                          std::to_string(p_.timeout_seconds) + " s");
    if (!child_end.exited_cleanly())
      return failure(Status::runtime_error, "isolated measurement " + child_end.how_it_ended());
    Measurement m;
    if (!detail::ResultCodec::decode(child_end.answer, m, rng))
      return failure(Status::runtime_error, "isolated measurement exited without a result");
    return m;
  }

 private:
  // In the child (run_in_child): measures on a fresh thread and writes the result and the
  // generator's state to fd; returns the child's exit code.
  template <class K>
  int child(K& kernel, const Config& c, Rng rng, int fd) {
    // A crash ends the child with its signal, whatever handlers the parent installed (a test
    // framework's, a crash reporter's): the parent reads the signal from the exit status.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS})
      ::signal(sig, SIG_DFL);
    Measurement m;
    auto work = [&] {
      try {
        m = inner_.measure(kernel, c, rng);
      } catch (const std::exception& e) {
        m = Measurement::failure(Status::runtime_error, e.what());
      } catch (...) {
        m = Measurement::failure(Status::runtime_error, "unknown exception");
      }
    };
    try {
      std::thread(work).join();  // a fresh thread: a fresh OpenMP pool (see the class comment)
    } catch (const std::system_error&) {
      work();
    }
    return detail::write_all(fd, detail::ResultCodec::encode(m, rng)) ? 0 : 111;
  }

  Inner inner_;
  Params p_;
};

static_assert(Evaluator<Isolated<>>);

}  // namespace tunekit
