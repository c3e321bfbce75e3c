#pragma once
/// \file
/// CandidateList: the best configs a search has met, excluding visited ones (AutoTVM's heap of
/// the model optimizer's maximums).

#include "tunekit/core/search_context.hpp"

#include <algorithm>
#include <cstdint>
#include <queue>
#include <unordered_set>
#include <vector>

namespace tunekit {

namespace detail {

/// The best `capacity` (score, config) pairs offered to it, excluding the configs in `visited`
/// and duplicates; a new config enters only with a score strictly above the worst kept one.
/// Holds a reference to `visited`: use it while that set is alive and unchanged.
template <class = void>
class CandidateListImpl {
 public:
  CandidateListImpl(std::size_t capacity, const std::unordered_set<std::uint64_t>& visited)
      : capacity_(capacity), visited_(visited) {}

  /// Offers a config; returns whether the list changed.
  bool offer(const Config& c, std::uint64_t index, double score) {
    if (capacity_ == 0 || visited_.contains(index) || members_.contains(index)) return false;
    if (heap_.size() == capacity_) {
      if (!(score > heap_.top().score)) return false;
      members_.erase(heap_.top().index);
      heap_.pop();
    }
    heap_.push(Candidate{c, index, score});
    members_.insert(index);
    return true;
  }

  std::size_t size() const noexcept { return heap_.size(); }

  /// The kept candidates, best first; empties the list.
  std::vector<Candidate> sorted() {
    std::vector<Candidate> out;
    out.reserve(heap_.size());
    while (!heap_.empty()) {
      out.push_back(heap_.top());
      heap_.pop();
    }
    std::reverse(out.begin(), out.end());
    members_.clear();
    return out;
  }

 private:
  struct Worse {
    bool operator()(const Candidate& a, const Candidate& b) const { return a.score > b.score; }
  };
  std::size_t capacity_;
  const std::unordered_set<std::uint64_t>& visited_;
  std::unordered_set<std::uint64_t> members_;
  std::priority_queue<Candidate, std::vector<Candidate>, Worse> heap_;
};
}  // namespace detail

/// detail::CandidateListImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using CandidateList = detail::CandidateListImpl<>;

}  // namespace tunekit
