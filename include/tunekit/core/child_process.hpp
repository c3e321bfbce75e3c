#pragma once
/// \file
/// Work in a short-lived child process that answers through a pipe, with a deadline: what the
/// Isolated evaluator (evaluator/isolation.hpp) measures in, and where the CUDA kernels read a
/// device without starting the driver in the tuning process (kernels/cuda/driver.hpp). Also the
/// two POSIX helpers they and the local farm (farm/local.hpp) share: a write that survives EINTR
/// and short writes, and a signal's description. POSIX only (fork, pipe, poll, waitpid).

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
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

namespace tunekit::detail {

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

/// How a child of run_in_child ended.
struct ChildOutcome {
  std::string error;         ///< non-empty: pipe, fork or waitpid failed (no child ran, or it was lost)
  std::string answer;        ///< everything the child wrote to its pipe
  bool timed_out = false;    ///< killed with SIGKILL at the deadline
  int status = 0;            ///< waitpid's status (WIFEXITED, WIFSIGNALED, ...)

  /// "exited with code 3", "killed by signal 11 (Segmentation fault)".
  std::string how_it_ended() const {
    if (WIFSIGNALED(status)) return "killed by " + describe_signal(WTERMSIG(status));
    return "exited with code " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  /// It exited by itself with code 0.
  bool exited_cleanly() const { return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

/// Forks; the child calls body(fd), writes its answer to the pipe `fd`, and leaves with
/// `_exit(body's return value)` (no atexit handlers, no destructors of the parent's objects).
/// This side reads the pipe until the child closes it, then reaps the child; at `deadline` the
/// child is killed (SIGKILL), whether it still writes or hangs after writing. On Linux the child
/// dies with the parent (PR_SET_PDEATHSIG), so a hanging child never outlives it. Buffered output
/// is flushed before the fork, or the child's exit could write it twice.
template <class Body>
ChildOutcome run_in_child(Body&& body, std::chrono::steady_clock::time_point deadline) {
  using clock = std::chrono::steady_clock;
  ChildOutcome out;
  int fds[2];
  if (::pipe(fds) != 0) {
    out.error = std::string("pipe failed: ") + std::strerror(errno);
    return out;
  }
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    out.error = std::string("fork failed: ") + std::strerror(err);
    return out;
  }
  if (pid == 0) {
    ::close(fds[0]);
#if defined(__linux__)
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(112);  // the parent died before the line above
#else
    (void)parent;
#endif
    const int code = body(fds[1]);
    std::fflush(nullptr);
    ::_exit(code);
  }
  ::close(fds[1]);

  char chunk[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      out.timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left + 1, INT_MAX)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;  // interrupted, or the deadline (checked above)
    const ssize_t got = ::read(fds[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end of file: the child closed the pipe (it is exiting)
    out.answer.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);

  if (out.timed_out) ::kill(pid, SIGKILL);
  for (;;) {  // reap it, killing it at the deadline
    const pid_t r = ::waitpid(pid, &out.status, out.timed_out ? 0 : WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      out.error = std::string("waitpid failed: ") + std::strerror(errno);
      return out;
    }
    if (out.timed_out) continue;
    if (clock::now() >= deadline) {
      out.timed_out = true;
      ::kill(pid, SIGKILL);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  return out;
}

}  // namespace tunekit::detail
