#pragma once
/// \file
/// LocalFarm: a measurement farm of worker processes on this machine, one per device (a GPU, or
/// a set of CPU cores), forked by the tuning process. POSIX (fork, socketpair, poll, waitpid);
/// CPU pinning on Linux.
///
///     tunekit::LocalFarm farm({.devices = tunekit::cuda_workers({0, 1, 2, 3})});
///     tuner.tune(kernel, farm, rng, tunekit::LogToFile("run.jsonl"));
///
/// Each worker is a fork of the tuning process made when the run starts (`start`), so it holds
/// a copy of the kernel and the evaluator as they were then; it measures the jobs it is sent
/// and sends each measurement back with its host and device. A kernel that needs a device
/// context should create it lazily (on its first prepare or run), in the worker, after the
/// worker set its device's environment (CUDA_VISIBLE_DEVICES): never before the fork.

#include "tunekit/concepts/farm.hpp"
#include "tunekit/core/child_process.hpp"
#include "tunekit/farm/job_queue.hpp"
#include "tunekit/farm/protocol.hpp"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
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
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace tunekit {

/// What one worker of a LocalFarm owns.
struct WorkerDevice {
  /// Recorded as the device of its measurements ("cuda:1", "cpu:0-3").
  std::string name{};
  /// The CPU cores the worker runs on (Linux sched_setaffinity); empty: not pinned.
  std::vector<int> cpus{};
  /// Environment variables the worker sets before it measures anything, e.g.
  /// {"CUDA_VISIBLE_DEVICES", "1"} or {"OMP_NUM_THREADS", "4"}.
  std::vector<std::pair<std::string, std::string>> environment{};
};

/// `workers` workers on the CPU: with `cores_per_worker` > 0, worker i is pinned to cores
/// [i*c, (i+1)*c) with OMP_NUM_THREADS=c and named "cpu:first-last"; with 0, unpinned, named
/// "cpu-worker:i".
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::vector<WorkerDevice> cpu_workers(std::size_t workers, std::size_t cores_per_worker = 0) {
  std::vector<WorkerDevice> out;
  for (std::size_t i = 0; i < workers; ++i) {
    WorkerDevice d;
    if (cores_per_worker == 0) {
      d.name = "cpu-worker:" + std::to_string(i);
    } else {
      const auto first = static_cast<int>(i * cores_per_worker);
      const auto last = static_cast<int>((i + 1) * cores_per_worker - 1);
      for (int c = first; c <= last; ++c) d.cpus.push_back(c);
      d.name = "cpu:" + std::to_string(first) + (last > first ? "-" + std::to_string(last) : "");
      d.environment.emplace_back("OMP_NUM_THREADS", std::to_string(cores_per_worker));
    }
    out.push_back(std::move(d));
  }
  return out;
}

/// One worker per GPU: worker i sees only GPU gpus[i] (CUDA_VISIBLE_DEVICES), named "cuda:g".
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::vector<WorkerDevice> cuda_workers(const std::vector<int>& gpus) {
  std::vector<WorkerDevice> out;
  for (int g : gpus) out.push_back({"cuda:" + std::to_string(g), {}, {{"CUDA_VISIBLE_DEVICES", std::to_string(g)}}});
  return out;
}

/// Parameters of LocalFarm; fill with designated initialisers.
struct LocalFarmOptions {
  /// One worker process per device.
  std::vector<WorkerDevice> devices{};
  /// Wall-clock seconds a worker may take for one job before it is killed (SIGKILL) and
  /// restarted, the job recorded as `timeout`. Infinity: no limit (an Isolated evaluator in the
  /// worker still times out a configuration that hangs, and the worker lives on).
  double timeout_seconds = std::numeric_limits<double>::infinity();
  /// A job whose worker died (killed, crashed) is measured again on a restarted worker, and
  /// recorded as a runtime_error once its workers died this many times.
  std::size_t attempts = 2;
  /// Workers restarted over the farm's life, at most; when none is left alive the run stops
  /// with a FarmError (what was told is in the log: resume it).
  std::size_t restarts = 16;

  void validate() const {
    if (devices.empty()) throw std::invalid_argument("LocalFarmOptions: no devices (one worker per device)");
    for (const auto& d : devices)
      if (d.name.empty()) throw std::invalid_argument("LocalFarmOptions: a device has no name");
    if (!(timeout_seconds > 0)) throw std::invalid_argument("LocalFarmOptions: timeout_seconds must be > 0");
    if (attempts == 0) throw std::invalid_argument("LocalFarmOptions: attempts must be at least 1");
  }
};

namespace detail {

/// A MeasurementFarm of local worker processes, one per device (see the file comment). Jobs are
/// handed out one at a time to each idle worker, in order, or in lanes with the configs each
/// worker compiles ahead (detail::JobQueue, FarmJob::compile_ahead); results are handed to the
/// sink in job order. A worker that dies while measuring (SIGKILL, a crash outside an Isolated
/// evaluator) is restarted and its job measured again (`attempts`); one that passes
/// `timeout_seconds` is killed and restarted, its job recorded as `timeout`. Warnings go to
/// `warnings`.
template <class = void>
class LocalFarmImpl {
 public:
  explicit LocalFarmImpl(LocalFarmOptions options, std::ostream* warnings = &std::cerr)
      : options_(std::move(options)), warnings_(warnings) {
    options_.validate();
  }
  LocalFarmImpl(const LocalFarmImpl&) = delete;
  LocalFarmImpl& operator=(const LocalFarmImpl&) = delete;
  ~LocalFarmImpl() { finish(); }

  /// The number of workers (one per device).
  std::size_t workers() const noexcept { return options_.devices.size(); }

  /// Forks the workers, which measure with `work`. Returns true (this process tunes).
  bool start(const FarmWork& work) {
    if (started_) throw std::logic_error("LocalFarm::start: the farm runs already (finish it first)");
    work_ = work;
    host_ = detail::host_name();
    workers_.assign(options_.devices.size(), Worker{});
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      workers_[i].device = i;
      if (!spawn(workers_[i])) {
        const std::string why = std::strerror(errno);
        finish();
        throw FarmError("LocalFarm: cannot start worker " + options_.devices[i].name + ": " + why);
      }
    }
    started_ = true;
    return true;
  }

  /// Measures the jobs on the workers; sink(i, m) in job order (see MeasurementFarm).
  void measure(std::span<const FarmJob> jobs, const FarmSink& sink) { measure(jobs, sink, FarmMore()); }

  /// As measure(jobs, sink), and after each result handed to the sink `more()` gives jobs to
  /// append to the batch (StreamingFarm): idle workers take them at once.
  void measure(std::span<const FarmJob> first, const FarmSink& sink, const FarmMore& more) {
    if (!started_) throw std::logic_error("LocalFarm::measure: start the farm first");
    std::vector<FarmJob> jobs(first.begin(), first.end());
    std::size_t n = jobs.size();
    std::vector<std::optional<Measurement>> results(n);
    std::vector<std::size_t> deaths(n, 0);
    queue_ = detail::JobQueue(jobs, workers_.size());
    std::vector<Config> prefetch;
    std::size_t next = 0;
    bool cancelled = false;
    for (;;) {
      while (!cancelled && next < n && results[next]) {
        Measurement m = std::move(*results[next]);
        results[next].reset();
        try {
          cancelled = !sink(next, std::move(m));
          if (!cancelled && more) {
            std::vector<FarmJob> extra = more();
            jobs.insert(jobs.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
            n = jobs.size();
            results.resize(n);
            deaths.resize(n, 0);
            queue_.grow(jobs);
          }
        } catch (...) {
          abandon();
          throw;
        }
        ++next;
      }
      if (cancelled || next == n) queue_.clear();
      const bool busy = std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.job >= 0; });
      if (queue_.empty() && !busy) {
        if (!cancelled && next < n) throw std::logic_error("LocalFarm::measure: a job was lost");
        return;
      }
      for (auto& w : workers_) {
        if (queue_.empty()) break;
        if (w.pid <= 0 || w.job >= 0) continue;
        const std::size_t j = *queue_.take(w.device, prefetch);
        if (!send_frame(w.fd, detail::FarmCodec::encode_job(j, detail::handed_job(jobs[j], prefetch)))) {
          queue_.put_back(j);  // it was dead before it got the job
          lost(w, true, results, deaths);
          continue;
        }
        w.job = static_cast<long long>(j);
        w.since = clock::now();
      }
      if (std::none_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.pid > 0; }))
        throw FarmError("LocalFarm: every worker died (" + std::to_string(restarted_) +
                        " restarts); the measurements told so far are in the log: resume the run from it");
      wait(results, deaths, cancelled);
    }
  }

  /// Stops the workers (they exit once their socket closes) and reaps them.
  void finish() noexcept {
    for (auto& w : workers_) {
      if (w.fd >= 0) ::close(w.fd);
      w.fd = -1;
    }
    const auto deadline = clock::now() + std::chrono::seconds(2);
    for (auto& w : workers_) {
      if (w.pid <= 0) continue;
      int status = 0;
      for (;;) {
        const pid_t r = ::waitpid(w.pid, &status, WNOHANG);
        if (r == w.pid || (r < 0 && errno != EINTR)) break;
        if (clock::now() >= deadline) {
          ::kill(w.pid, SIGKILL);
          ::waitpid(w.pid, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      w.pid = -1;
    }
    workers_.clear();
    started_ = false;
  }

  /// The process ids of the live workers (e.g. to watch or signal them).
  std::vector<pid_t> worker_pids() const {
    std::vector<pid_t> out;
    for (const auto& w : workers_)
      if (w.pid > 0) out.push_back(w.pid);
    return out;
  }
  /// Workers restarted so far (after a death or a timeout).
  std::size_t restarts() const noexcept { return restarted_; }
  const LocalFarmOptions& options() const noexcept { return options_; }

 private:
  using clock = std::chrono::steady_clock;

  struct Worker {
    std::size_t device = 0;
    pid_t pid = -1;
    int fd = -1;
    std::string buffer{};
    long long job = -1;  // the job it measures, -1: idle
    clock::time_point since{};
  };

  static bool send_frame(int fd, const std::string& payload) {
    std::string frame(sizeof(std::uint32_t), '\0');
    const auto len = static_cast<std::uint32_t>(payload.size());
    std::memcpy(frame.data(), &len, sizeof len);
    frame += payload;
    std::string_view rest = frame;
    while (!rest.empty()) {
      const ssize_t w = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      rest.remove_prefix(static_cast<std::size_t>(w));
    }
    return true;
  }

  // Reads exactly n bytes (blocking); false at end of file or on an error.
  static bool read_exact(int fd, char* out, std::size_t n) {
    while (n > 0) {
      const ssize_t r = ::read(fd, out, n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      out += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }

  // Forks a worker for w.device; false (errno set) when that failed.
  bool spawn(Worker& w) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return false;
    std::fflush(nullptr);  // or the child's buffered output would be printed twice
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      errno = err;
      return false;
    }
    if (pid == 0) {
      ::close(sv[0]);
      for (const auto& other : workers_)
        if (other.fd >= 0) ::close(other.fd);
      worker_main(sv[1], options_.devices[w.device], parent);  // never returns
    }
    ::close(sv[1]);
    w.pid = pid;
    w.fd = sv[0];
    w.buffer.clear();
    w.job = -1;
    return true;
  }

  [[noreturn]] void worker_main(int fd, const WorkerDevice& device, pid_t parent) {
#if defined(__linux__)
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a worker must not outlive the tuning process
    if (::getppid() != parent) ::_exit(112);
    if (!device.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : device.cpus)
        if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
      if (::sched_setaffinity(0, sizeof set, &set) != 0)
        std::fprintf(stderr, "tunekit: warning: farm worker %s: cannot pin to its cores: %s\n", device.name.c_str(),
                     std::strerror(errno));
    }
#else
    (void)parent;
#endif
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS}) ::signal(sig, SIG_DFL);
    for (const auto& [name, value] : device.environment) ::setenv(name.c_str(), value.c_str(), 1);
    auto serve = [&] {
      for (;;) {
        std::uint32_t len = 0;
        if (!read_exact(fd, reinterpret_cast<char*>(&len), sizeof len)) return;
        std::string payload(len, '\0');
        if (!read_exact(fd, payload.data(), len)) return;
        std::uint64_t id = 0;
        FarmJob job;
        Measurement m;
        if (detail::FarmCodec::decode_job(payload, id, job))
          m = detail::measure_job(work_, job, host_, device.name);
        else
          m = Measurement::failure(Status::runtime_error, "farm worker: malformed job");
        if (!send_frame(fd, detail::FarmCodec::encode_result(id, m))) return;
      }
    };
    try {
      std::thread(serve).join();  // a fresh thread: a fresh OpenMP pool (see evaluator/isolation.hpp)
    } catch (const std::system_error&) {
      serve();
    }
    std::fflush(nullptr);
    ::_exit(0);
  }

  // Waits for results, deaths and timeouts of the busy workers.
  void wait(std::vector<std::optional<Measurement>>& results,
            std::vector<std::size_t>& deaths, bool cancelled) {
    std::vector<pollfd> fds;
    std::vector<Worker*> who;
    auto wait_ms = std::numeric_limits<long long>::max();
    const auto now = clock::now();
    for (auto& w : workers_) {
      if (w.job < 0) continue;
      fds.push_back({w.fd, POLLIN, 0});
      who.push_back(&w);
      if (std::isfinite(options_.timeout_seconds)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              w.since + std::chrono::duration<double>(options_.timeout_seconds) - now)
                              .count();
        wait_ms = std::min<long long>(wait_ms, std::max<long long>(left + 1, 0));
      }
    }
    if (fds.empty()) return;
    const int timeout = wait_ms == std::numeric_limits<long long>::max()
                            ? -1
                            : static_cast<int>(std::min<long long>(wait_ms, INT_MAX));
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR) throw FarmError(std::string("LocalFarm: poll failed: ") + std::strerror(errno));
    for (std::size_t i = 0; i < fds.size() && ready > 0; ++i) {
      if (fds[i].revents == 0) continue;
      Worker& w = *who[i];
      char chunk[65536];
      const ssize_t got = ::read(w.fd, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        lost(w, true, results, deaths, cancelled);
        continue;
      }
      w.buffer.append(chunk, static_cast<std::size_t>(got));
      take_results(w, results, cancelled);
    }
    if (std::isfinite(options_.timeout_seconds)) {
      const auto late = clock::now();
      for (auto& w : workers_) {
        if (w.job < 0 || late - w.since < std::chrono::duration<double>(options_.timeout_seconds)) continue;
        const auto j = static_cast<std::size_t>(w.job);
        ::kill(w.pid, SIGKILL);
        if (!cancelled) {
          Measurement m = Measurement::failure(
              Status::timeout,
              "farm worker " + options_.devices[w.device].name + " killed after " +
                  std::to_string(options_.timeout_seconds) + " s on this job",
              std::chrono::duration<double>(late - w.since).count());
          m.host = host_;
          m.device = options_.devices[w.device].name;
          results[j] = std::move(m);
        }
        w.job = -1;
        lost(w, false, results, deaths, cancelled);
      }
    }
  }

  // Kills the busy workers and starts them afresh (not counted as restarts): the batch was given
  // up (the sink threw), and their results must not reach a later batch.
  void abandon() noexcept {
    queue_.clear();
    for (auto& w : workers_) {
      if (w.job < 0 || w.pid <= 0) continue;
      ::kill(w.pid, SIGKILL);
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      ::close(w.fd);
      w.fd = -1;
      w.pid = -1;
      w.job = -1;
      if (!spawn(w) && warnings_)
        *warnings_ << "tunekit: warning: farm worker " << options_.devices[w.device].name
                   << " cannot be restarted: " << std::strerror(errno) << "\n";
    }
  }

  // Takes the complete results in w's buffer.
  void take_results(Worker& w, std::vector<std::optional<Measurement>>& results, bool cancelled) {
    for (;;) {
      std::uint32_t len = 0;
      if (w.buffer.size() < sizeof len) return;
      std::memcpy(&len, w.buffer.data(), sizeof len);
      if (w.buffer.size() < sizeof len + len) return;
      std::uint64_t id = 0;
      Measurement m;
      if (!detail::FarmCodec::decode_result(std::string_view(w.buffer).substr(sizeof len, len), id, m) ||
          static_cast<long long>(id) != w.job)
        throw FarmError("LocalFarm: worker " + options_.devices[w.device].name + " sent a malformed result");
      w.buffer.erase(0, sizeof len + len);
      if (!cancelled) results[id] = std::move(m);
      w.job = -1;
    }
  }

  // A worker is gone (`died`; else killed by the farm): reaps it, puts its job back in the queue
  // or records it as failed, and restarts it while restarts are left.
  void lost(Worker& w, bool died, std::vector<std::optional<Measurement>>& results,
            std::vector<std::size_t>& deaths, bool cancelled = false) {
    ::kill(w.pid, SIGKILL);  // closed its socket: make sure it is gone
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(w.fd);
    w.fd = -1;
    w.pid = -1;
    const std::string& name = options_.devices[w.device].name;
    const std::string how = WIFSIGNALED(status) ? "killed by " + detail::describe_signal(WTERMSIG(status))
                                                : "exited with code " + std::to_string(WEXITSTATUS(status));
    if (died && w.job < 0 && warnings_)
      *warnings_ << "tunekit: warning: farm worker " << name << " " << how << " while idle\n";
    if (died && w.job >= 0) {
      const auto j = static_cast<std::size_t>(w.job);
      if (!cancelled) {
        ++deaths[j];
        if (deaths[j] >= options_.attempts) {
          Measurement m = Measurement::failure(Status::runtime_error, "farm worker " + name + " died measuring it " +
                                                                          std::to_string(deaths[j]) + " times (" +
                                                                          how + ")");
          m.host = host_;
          m.device = name;
          results[j] = std::move(m);
        } else {
          queue_.put_back(j);
        }
      }
      if (warnings_)
        *warnings_ << "tunekit: warning: farm worker " << name << " " << how << " while measuring; "
                   << (cancelled ? "its job was dropped" : deaths[j] >= options_.attempts ? "its job is recorded as failed"
                                                                                           : "its job is measured again")
                   << "\n";
    }
    w.job = -1;
    queue_.release(w.device);  // what it compiled ahead died with it
    if (restarted_ >= options_.restarts) {
      if (warnings_) *warnings_ << "tunekit: warning: farm worker " << name << " is not restarted (no restarts left)\n";
      return;
    }
    ++restarted_;
    if (!spawn(w) && warnings_)
      *warnings_ << "tunekit: warning: farm worker " << name << " cannot be restarted: " << std::strerror(errno) << "\n";
  }

  LocalFarmOptions options_;
  std::ostream* warnings_ = nullptr;
  FarmWork work_{};
  std::string host_{};
  std::vector<Worker> workers_{};
  bool started_ = false;
  std::size_t restarted_ = 0;
  detail::JobQueue queue_{};  // the jobs of `measure` not handed out yet
};
}  // namespace detail

/// detail::LocalFarmImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using LocalFarm = detail::LocalFarmImpl<>;

static_assert(MeasurementFarm<LocalFarm>);

}  // namespace tunekit
