#pragma once
/// \file
/// Which job of a batch a farm hands to which worker, and which configs the worker is given to
/// compile ahead with it (FarmJob::compile_ahead, FarmJob::prefetch). Shared by LocalFarm and
/// MpiFarm.

#include "tunekit/core/farm_job.hpp"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <optional>
#include <span>
#include <vector>

namespace tunekit::detail {

/// The jobs of one `measure` call that are not handed out yet, in the order a farm hands them
/// to its workers.
///
/// Without compilation ahead (every job's compile_ahead is 0) that is job order, to whichever
/// worker is idle. With it, each worker has a lane: when it is handed a job it is also given the
/// next jobs of the same task that no worker holds yet, as configs to compile ahead
/// (FarmJob::prefetch), so that it holds compile_ahead of them (at most its share of the batch
/// less one, ceil(jobs / workers) - 1, so that the first lanes of a batch are alike); an idle
/// worker is handed the first job it holds, else the first job nobody holds, else (every job
/// left is held) the first job left, which another worker held and compiled for nothing. So each worker measures mostly jobs it
/// compiled while it measured the one before, as a serial run compiles its next configs, and no
/// worker waits while a job is left. The order jobs are handed out in changes no result: a job
/// carries its config and stream, and the farm tells results in job order.
///
/// A job put back (its worker died before it finished) is handed to the next worker that asks,
/// before any other.
template <class = void>
class JobQueueImpl {
 public:
  JobQueueImpl() = default;
  /// The jobs of a batch for `workers` workers; `compile_ahead` false: no job is compiled ahead
  /// (a farm that measures each job in a child process, whose compilations would be lost).
  JobQueueImpl(std::span<const FarmJob> jobs, std::size_t workers, bool compile_ahead = true)
      : jobs_(jobs), held_by_(jobs.size(), free), waiting_(jobs.size(), true), held_(workers, 0),
        left_(jobs.size()),
        most_held_(compile_ahead && workers > 0 ? (jobs.size() + workers - 1) / workers - 1 : 0) {}

  /// The batch grew: `jobs` is the batch so far (its first jobs those before), the new jobs wait.
  void grow(std::span<const FarmJob> jobs) {
    const std::size_t old = jobs_.size();
    jobs_ = jobs;
    held_by_.resize(jobs.size(), free);
    waiting_.resize(jobs.size(), true);
    left_ += jobs.size() - old;
  }

  /// Whether no job is left to hand out.
  bool empty() const noexcept { return left_ == 0; }

  /// Hands out nothing more (the batch was stopped).
  void clear() noexcept {
    std::fill(waiting_.begin(), waiting_.end(), false);
    std::fill(held_by_.begin(), held_by_.end(), free);
    std::fill(held_.begin(), held_.end(), std::size_t{0});
    retry_.clear();
    left_ = 0;
  }

  /// The next job for worker w (nullopt when none is left); `prefetch` gets the configs of the
  /// jobs w is given to compile ahead with it.
  std::optional<std::size_t> take(std::size_t w, std::vector<Config>& prefetch) {
    prefetch.clear();
    if (left_ == 0) return std::nullopt;
    std::size_t j = jobs_.size();
    if (!retry_.empty()) {
      j = retry_.front();
      retry_.pop_front();
    } else {
      j = first([&](std::size_t i) { return held_by_[i] == w; });
      if (j == jobs_.size()) j = first([&](std::size_t i) { return held_by_[i] == free; });
      if (j == jobs_.size()) j = first([](std::size_t) { return true; });
    }
    if (held_by_[j] != free) --held_[held_by_[j]];
    held_by_[j] = free;
    waiting_[j] = false;
    --left_;
    {
      const std::size_t most = std::min(most_held_, jobs_[j].compile_ahead);
      for (std::size_t i = 0; i < jobs_.size() && held_[w] < most; ++i) {
        if (!waiting_[i] || held_by_[i] != free || jobs_[i].task != jobs_[j].task || is_retry(i)) continue;
        held_by_[i] = w;
        ++held_[w];
        prefetch.push_back(jobs_[i].config);
      }
    }
    return j;
  }

  /// Puts job j back (its worker died before it finished): the next worker that asks gets it.
  void put_back(std::size_t j) {
    if (waiting_[j]) return;
    waiting_[j] = true;
    ++left_;
    retry_.push_front(j);
  }

  /// Forgets what worker w holds (it was restarted: what it compiled is gone); those jobs go to
  /// whoever asks, as if nobody held them.
  void release(std::size_t w) {
    for (auto& h : held_by_)
      if (h == w) h = free;
    held_[w] = 0;
  }

 private:
  static constexpr std::size_t free = static_cast<std::size_t>(-1);

  // The first waiting job that is not put back and satisfies `pred` (jobs_.size() if none).
  template <class Pred>
  std::size_t first(Pred pred) const {
    for (std::size_t i = 0; i < jobs_.size(); ++i)
      if (waiting_[i] && !is_retry(i) && pred(i)) return i;
    return jobs_.size();
  }
  bool is_retry(std::size_t i) const { return std::find(retry_.begin(), retry_.end(), i) != retry_.end(); }

  std::span<const FarmJob> jobs_{};
  std::vector<std::size_t> held_by_{};  // per job: the worker that holds it, or free
  std::vector<bool> waiting_{};         // per job: not handed out yet
  std::vector<std::size_t> held_{};     // per worker: the waiting jobs it holds
  std::deque<std::size_t> retry_{};     // jobs put back, handed out first
  std::size_t left_ = 0;
  std::size_t most_held_ = 0;  // jobs a worker holds at most (its share less one; 0: no compiling ahead)
};

/// JobQueueImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using JobQueue = JobQueueImpl<>;

/// A job as a worker is handed it: with the configs it compiles ahead (JobQueue::take).
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
FarmJob handed_job(const FarmJob& job, const std::vector<Config>& prefetch) {
  FarmJob out = job;
  out.prefetch = prefetch;
  return out;
}

}  // namespace tunekit::detail
