#pragma once
/// \file
/// Isolated: measure each configuration in a forked child process, so that a configuration that
/// crashes the process (SIGSEGV, SIGABRT, SIGFPE, exit), or hangs, is recorded and the tuning
/// goes on. POSIX only (fork, pipe, poll, waitpid).
///
/// Cost: one fork per measurement (page tables copied, memory shared copy-on-write) plus a thread
/// start in the child; bench/bench_evaluator.cpp measures it (docs/performance.md).

#include "tunekit/concepts/evaluator.hpp"
#include "tunekit/evaluator/deterministic.hpp"
#include "tunekit/core/measurement.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
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

/// Writes all of `data` to fd (retrying on EINTR and short writes); false on an error.
inline bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t w = ::write(fd, data.data(), data.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(w));
  }
  return true;
}

/// "signal 11 (Segmentation fault)".
inline std::string describe_signal(int sig) {
  const char* text = ::strsignal(sig);
  return "signal " + std::to_string(sig) + " (" + (text ? text : "unknown") + ")";
}

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

    int fds[2];
    if (::pipe(fds) != 0)
      return failure(Status::runtime_error, std::string("isolation: pipe failed: ") + std::strerror(errno));
    std::fflush(nullptr);  // or the child's exit would print buffered output twice
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      ::close(fds[0]);
      ::close(fds[1]);
      return failure(Status::runtime_error, std::string("isolation: fork failed: ") + std::strerror(err));
    }
    if (pid == 0) {
      ::close(fds[0]);
      child(kernel, c, rng, fds[1], parent);  // never returns
    }
    ::close(fds[1]);

    const auto deadline = t0 + std::chrono::duration_cast<clock::duration>(
                                   std::chrono::duration<double>(p_.timeout_seconds));
    std::string payload;
    bool timed_out = false;
    char chunk[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      pollfd pfd{fds[0], POLLIN, 0};
      const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left + 1, INT_MAX)));
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
      const ssize_t got = ::read(fds[0], chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;  // end of file: the child closed the pipe (it is exiting)
      payload.append(chunk, static_cast<std::size_t>(got));
    }
    ::close(fds[0]);

    int status = 0;
    if (timed_out) ::kill(pid, SIGKILL);
    for (;;) {  // reap it, killing it at the deadline
      const pid_t r = ::waitpid(pid, &status, timed_out ? 0 : WNOHANG);
      if (r == pid) break;
      if (r < 0 && errno != EINTR)
        return failure(Status::runtime_error, std::string("isolation: waitpid failed: ") + std::strerror(errno));
      if (timed_out) continue;
      if (clock::now() >= deadline) {
        timed_out = true;
        ::kill(pid, SIGKILL);
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }

    if (timed_out)
      return failure(Status::timeout, "isolated measurement killed after " +
                                          std::to_string(p_.timeout_seconds) + " s");
    if (WIFSIGNALED(status))
      return failure(Status::runtime_error,
                     "isolated measurement killed by " + detail::describe_signal(WTERMSIG(status)));
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    Measurement m;
    if (code != 0 || !detail::ResultCodec::decode(payload, m, rng))
      return failure(Status::runtime_error,
                     code != 0 ? "isolated measurement exited with code " + std::to_string(code)
                               : std::string("isolated measurement exited without a result"));
    return m;
  }

 private:
  template <class K>
  [[noreturn]] void child(K& kernel, const Config& c, Rng rng, int fd, pid_t parent) {
#if defined(__linux__)
    // Should the parent die, a hanging child must not live on.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(112);
#else
    (void)parent;
#endif
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
    const bool sent = detail::write_all(fd, detail::ResultCodec::encode(m, rng));
    std::fflush(nullptr);
    ::_exit(sent ? 0 : 111);
  }

  Inner inner_;
  Params p_;
};

static_assert(Evaluator<Isolated<>>);

}  // namespace tunekit
