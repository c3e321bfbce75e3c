#pragma once
/// \file
/// MpiFarm: a measurement farm of MPI ranks. Rank 0 tunes, every other rank measures. Every rank
/// runs the same program: a rank's `tune(kernel, farm, rng)` serves rank 0's jobs until rank 0
/// finishes the run, then returns no trials; so the program loads its kernels on every rank and
/// prints and writes on rank 0 only. Needs MPI (the target tunekit::mpi); the rest of tunekit
/// does not.
///
///     tunekit::MpiEnvironment mpi(argc, argv);
///     tunekit::MpiFarm farm;
///     tuner.tune(kernel, farm, rng, tunekit::LogToFile("run.jsonl"));  // log on rank 0 only
///     // mpirun -np 5 ./program   or   srun -n 5 ./program
///
/// Faults: a rank that dies takes the MPI job with it (mpirun ends the other ranks; without
/// MPI's fault-tolerance extensions rank 0 could not learn that the rank is gone), so the run
/// stops; what rank 0 told is in its log, and an exact resume (`resume_exact`, --resume)
/// continues it (tests/farm/kill_rank.sh). A configuration that crashes or hangs is isolated inside the worker rank by
/// an Isolated evaluator as in a serial run, or by the farm's own `timeout_seconds`.

#include "tunekit/concepts/farm.hpp"
#include "tunekit/evaluator/isolation.hpp"
#include "tunekit/farm/job_queue.hpp"
#include "tunekit/farm/protocol.hpp"

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdlib.h>
#include <deque>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit {

/// MPI_Init and MPI_Finalize around a program, when it runs under an MPI launcher (mpirun,
/// srun: the launcher's rank variables are set); otherwise nothing, and `active()` is false,
/// so the program also runs serially without MPI's start-up.
class MpiEnvironment {
 public:
  MpiEnvironment(int& argc, char**& argv) {
    if (!launched()) return;
    int done = 0;
    MPI_Initialized(&done);
    if (!done) {
      if (MPI_Init(&argc, &argv) != MPI_SUCCESS) throw FarmError("MPI_Init failed");
      owned_ = true;
    }
  }
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;
  ~MpiEnvironment() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Finalize();
  }

  /// Whether MPI is initialised (by this or by the program) with more than one rank.
  static bool active() {
    int done = 0, finalized = 0;
    MPI_Initialized(&done);
    MPI_Finalized(&finalized);
    if (!done || finalized) return false;
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size > 1;
  }
  /// This process's rank in MPI_COMM_WORLD (0 when MPI is not initialised).
  static int rank() {
    int done = 0;
    MPI_Initialized(&done);
    if (!done) return 0;
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
  /// Whether an MPI launcher started this process (Open MPI, MPICH/Hydra, PMIx, Slurm).
  static bool launched() {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"})
      if (std::getenv(v)) return true;
    return false;
  }

 private:
  bool owned_ = false;
};

/// Parameters of MpiFarm; fill with designated initialisers.
struct MpiFarmOptions {
  /// Give each worker rank one GPU: the worker ranks on a host are numbered 0, 1, ... and rank
  /// number l sets CUDA_VISIBLE_DEVICES=l (recorded as device "cuda:l") when the farm is made
  /// (a collective call: every rank makes its MpiFarm), before it measures. Off: the device is
  /// "rank:r".
  bool gpu_per_rank = false;
  /// A worker rank measures each job in a child process killed after this many seconds (the
  /// job recorded as `timeout`, the rank serving on): rank 0 cannot kill a remote rank, so a
  /// configuration that hangs is timed out where it runs. Infinity (default): in the rank.
  double timeout_seconds = std::numeric_limits<double>::infinity();

  void validate() const {
    if (!(timeout_seconds > 0)) throw std::invalid_argument("MpiFarmOptions: timeout_seconds must be positive");
  }
};

namespace detail {
/// An evaluator that measures one farm job with the worker's work, for Isolated: the job
/// carries the config and the stream, the work the kernel and the evaluator.
struct FarmJobEvaluator {
  const FarmWork* work;
  const FarmJob* job;
  template <Kernel K>
  Measurement measure(K&, const Config&, Rng&) {
    return (*work)(*job);
  }
};
}  // namespace detail

/// A MeasurementFarm over the ranks of an MPI communicator (see the file comment): rank 0 hands
/// jobs out one at a time to each idle rank, in order, or in lanes with the configs each rank
/// compiles ahead (detail::JobQueue, FarmJob::compile_ahead), and gives the results to the sink
/// in job order.
class MpiFarm {
 public:
  explicit MpiFarm(MpiFarmOptions options = {}, MPI_Comm comm = MPI_COMM_WORLD) : options_(options), comm_(comm) {
    options_.validate();
    int done = 0;
    MPI_Initialized(&done);
    if (!done) throw FarmError("MpiFarm: MPI is not initialised (MpiEnvironment, or MPI_Init)");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (size_ < 2)
      throw FarmError("MpiFarm: " + std::to_string(size_) +
                      " rank; rank 0 tunes and the others measure: run it with mpirun -np N, N >= 2");
    if (options_.gpu_per_rank) assign_gpu();
  }

  int rank() const noexcept { return rank_; }
  /// The ranks that measure.
  int workers() const noexcept { return size_ - 1; }

  /// Rank 0: returns true (it tunes). Other ranks: serve jobs with `work` until rank 0 finishes
  /// the run, then return false.
  bool start(const FarmWork& work) {
    if (rank_ == 0) return true;
    serve(work);
    return false;
  }

  /// Rank 0: measures the jobs on the other ranks; sink(i, m) in job order.
  void measure(std::span<const FarmJob> jobs, const FarmSink& sink) {
    if (rank_ != 0) throw std::logic_error("MpiFarm::measure: on rank 0 only");
    const std::size_t n = jobs.size();
    std::vector<std::optional<Measurement>> results(n);
    std::vector<long long> busy(static_cast<std::size_t>(size_), -1);
    // Worker rank r is the queue's worker r - 1. A rank that measures each job in a child
    // process (timeout_seconds) would lose what it compiled ahead: none is handed out.
    detail::JobQueue queue(jobs, static_cast<std::size_t>(size_ - 1), !std::isfinite(options_.timeout_seconds));
    std::vector<Config> prefetch;
    std::size_t next = 0, in_flight = 0;
    bool cancelled = false;
    for (;;) {
      while (!cancelled && next < n && results[next]) {
        Measurement m = std::move(*results[next]);
        results[next].reset();
        cancelled = !sink(next, std::move(m));
        ++next;
      }
      if (cancelled || next == n) queue.clear();  // hand out nothing more
      if (queue.empty() && in_flight == 0) return;
      for (int r = 1; r < size_ && !queue.empty(); ++r) {
        if (busy[static_cast<std::size_t>(r)] >= 0) continue;
        const std::size_t j = *queue.take(static_cast<std::size_t>(r - 1), prefetch);
        const std::string msg = detail::FarmCodec::encode_job(j, detail::handed_job(jobs[j], prefetch));
        check(MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_BYTE, r, job_tag, comm_), "MPI_Send");
        busy[static_cast<std::size_t>(r)] = static_cast<long long>(j);
        ++in_flight;
      }
      MPI_Status status;
      check(MPI_Probe(MPI_ANY_SOURCE, result_tag, comm_, &status), "MPI_Probe");
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::string msg(static_cast<std::size_t>(count), '\0');
      check(MPI_Recv(msg.data(), count, MPI_BYTE, status.MPI_SOURCE, result_tag, comm_, MPI_STATUS_IGNORE),
            "MPI_Recv");
      std::uint64_t id = 0;
      Measurement m;
      const auto src = static_cast<std::size_t>(status.MPI_SOURCE);
      if (!detail::FarmCodec::decode_result(msg, id, m) || static_cast<long long>(id) != busy[src])
        throw FarmError("MpiFarm: rank " + std::to_string(status.MPI_SOURCE) + " sent a malformed result");
      busy[src] = -1;
      --in_flight;
      if (!cancelled) results[id] = std::move(m);
    }
  }

  /// Rank 0: ends the run; the other ranks' `start` returns.
  void finish() {
    if (rank_ != 0) return;
    for (int r = 1; r < size_; ++r) MPI_Send(nullptr, 0, MPI_BYTE, r, stop_tag, comm_);
  }

 private:
  static constexpr int job_tag = 7301, result_tag = 7302, stop_tag = 7303;

  static void check(int rc, const char* what) {
    if (rc != MPI_SUCCESS) throw FarmError(std::string("MpiFarm: ") + what + " failed");
  }

  void serve(const FarmWork& work) {
    const std::string host = processor_name();
    const std::string device = device_name();
    for (;;) {
      MPI_Status status;
      check(MPI_Probe(0, MPI_ANY_TAG, comm_, &status), "MPI_Probe");
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::string msg(static_cast<std::size_t>(count), '\0');
      check(MPI_Recv(msg.data(), count, MPI_BYTE, 0, status.MPI_TAG, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
      if (status.MPI_TAG == stop_tag) return;
      std::uint64_t id = 0;
      FarmJob job;
      const Measurement m = detail::FarmCodec::decode_job(msg, id, job)
                                ? measure_job(work, job, host, device)
                                : Measurement::failure(Status::runtime_error, "farm worker: malformed job");
      const std::string out = detail::FarmCodec::encode_result(id, m);
      check(MPI_Send(out.data(), static_cast<int>(out.size()), MPI_BYTE, 0, result_tag, comm_), "MPI_Send");
    }
  }

  // A job measured in this rank, or with timeout_seconds in a child process (Isolated).
  Measurement measure_job(const FarmWork& work, const FarmJob& job, const std::string& host,
                          const std::string& device) const {
    if (!std::isfinite(options_.timeout_seconds)) return detail::measure_job(work, job, host, device);
    Isolated<detail::FarmJobEvaluator> isolated(detail::FarmJobEvaluator{&work, &job},
                                                {.timeout_seconds = options_.timeout_seconds});
    detail::KernelArchetype unused_kernel;  // the work holds the kernel; Isolated never calls this one
    Rng unused_rng;                         // the job carries its stream
    const FarmWork in_child = [&](const FarmJob&) { return isolated.measure(unused_kernel, job.config, unused_rng); };
    return detail::measure_job(in_child, job, host, device);
  }

  static std::string processor_name() {
    char buf[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    if (MPI_Get_processor_name(buf, &len) != MPI_SUCCESS || len <= 0) return detail::host_name();
    return std::string(buf, static_cast<std::size_t>(len));
  }

  // The worker ranks on this host, in rank order, are numbered 0, 1, ... (rank 0, the tuner,
  // takes no GPU): a collective call of every rank, in the constructor.
  void assign_gpu() {
    MPI_Comm local;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
    int local_rank = 0;
    MPI_Comm_rank(local, &local_rank);
    int has_tuner = 0, is_tuner = rank_ == 0 ? 1 : 0;
    MPI_Allreduce(&is_tuner, &has_tuner, 1, MPI_INT, MPI_MAX, local);
    MPI_Comm_free(&local);
    if (rank_ == 0) return;
    const int gpu = local_rank - has_tuner;
    ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(gpu).c_str(), 1);
    device_ = "cuda:" + std::to_string(gpu);
  }

  std::string device_name() const { return device_.empty() ? "rank:" + std::to_string(rank_) : device_; }

  MpiFarmOptions options_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::string device_{};
};

static_assert(MeasurementFarm<MpiFarm>);

}  // namespace tunekit
