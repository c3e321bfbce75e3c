#pragma once
/// \file
/// confirm_best: re-measures the fastest configs of a finished run side by side, in turns, and
/// ranks them by those measurements. A long search on a noisy machine keeps as its best the
/// config whose one measurement was luckiest (the winner's curse: the minimum of many noisy
/// means lies below the true times); measured again together, in the same conditions, the
/// candidates are ranked by what they do now.

#include "tunekit/concepts/evaluator.hpp"
#include "tunekit/concepts/kernel.hpp"
#include "tunekit/core/history.hpp"
#include "tunekit/core/random.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunekit {

/// Parameters of confirm_best.
struct ConfirmParams {
  /// The candidates: the `top` fastest successful trials by their tuning mean.
  std::size_t top = 5;
  /// Turns: each measures every candidate once with the evaluator, the order rotated by one
  /// candidate each turn so that no candidate always runs first or last.
  std::size_t turns = 3;

  void validate() const {
    if (top == 0) throw std::invalid_argument("ConfirmParams: top must be at least 1");
    if (turns == 0) throw std::invalid_argument("ConfirmParams: turns must be at least 1");
  }
};

/// One candidate of confirm_best.
struct Confirmed {
  /// The trial as the run measured it.
  Trial trial{};
  /// The evaluator's mean time (seconds) of each turn, in turn order (only successful turns).
  std::vector<double> means{};
  /// The median of `means`, the candidate's confirmed time (seconds); infinity when a turn failed.
  double median = std::numeric_limits<double>::infinity();
  /// The first failure of a turn (then `median` is infinity): its status and error text.
  Status status = Status::ok;
  std::string error{};
  /// The seconds its turns' measurements took (Measurement::cost, summed; simulated on replay
  /// kernels).
  double cost = 0.0;
};

/// Re-measures the `p.top` fastest successful trials of `history` with `evaluator`, `p.turns`
/// times each, in turns, and returns them fastest first by the median of their turns' means (ties,
/// and candidates that failed in a turn, in their tuning order, failed ones last). Nothing is
/// added to the history: the run's trials stay as they were measured. Empty when no trial
/// succeeded. The evaluator prepares, warms up and verifies each candidate as it does in tuning.
template <Kernel K, Evaluator E>
std::vector<Confirmed> confirm_best(K& kernel, const History& history, E& evaluator, Rng& rng,
                                    ConfirmParams p = {}) {
  p.validate();
  std::vector<const Trial*> ok;
  for (const Trial& t : history)
    if (t.measurement.ok()) ok.push_back(&t);
  std::stable_sort(ok.begin(), ok.end(),
                   [](const Trial* a, const Trial* b) { return a->measurement.mean < b->measurement.mean; });
  ok.resize(std::min(ok.size(), p.top));
  std::vector<Confirmed> out(ok.size());
  for (std::size_t i = 0; i < ok.size(); ++i) out[i].trial = *ok[i];
  for (std::size_t turn = 0; turn < p.turns; ++turn)
    for (std::size_t j = 0; j < out.size(); ++j) {
      Confirmed& c = out[(turn + j) % out.size()];
      if (c.status != Status::ok) continue;  // failed in an earlier turn: not measured again
      const Measurement m = evaluator.measure(kernel, c.trial.config, rng);
      c.cost += m.cost;
      if (m.ok()) {
        c.means.push_back(m.mean);
      } else {
        c.status = m.status;
        c.error = m.error;
      }
    }
  for (Confirmed& c : out) {
    if (c.status != Status::ok || c.means.empty()) continue;
    std::vector<double> v = c.means;
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    c.median = v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  }
  std::stable_sort(out.begin(), out.end(), [](const Confirmed& a, const Confirmed& b) { return a.median < b.median; });
  return out;
}

/// The candidate to keep from confirm_best's answer: the fastest confirmed one, or nullptr when
/// there is none or it failed in a turn (then the run's own best stands).
inline const Confirmed* first_confirmed(const std::vector<Confirmed>& confirmed) {
  return !confirmed.empty() && confirmed.front().status == Status::ok ? &confirmed.front() : nullptr;
}

}  // namespace tunekit
