// A pick policy that does not say what fills a batch it leaves short: ModelBased refuses it with
// check_pick's message.
// expect: tunekit::PickPolicy: the pick policy needs `static constexpr tunekit::Shortfall shortfall`
#include <tunekit/optimizer/simulated_annealing.hpp>
#include <tunekit/tuner.hpp>

#include <algorithm>

struct FirstHalf {
#ifdef TUNEKIT_COMPILE_FAIL_OK
  static constexpr tunekit::Shortfall shortfall = tunekit::Shortfall::measure_less;
#endif
  std::size_t candidates(std::size_t n) const { return n; }
  std::vector<tunekit::Config> pick(const tunekit::SearchContext&, std::span<const tunekit::Candidate> best_first,
                                    std::size_t n, tunekit::Rng&) {
    std::vector<tunekit::Config> out;
    for (std::size_t i = 0; i < std::min(n / 2, best_first.size()); ++i) out.push_back(best_first[i].config);
    return out;
  }
};

using T = tunekit::Tuner<tunekit::NoSurrogate, tunekit::PredictedMean, tunekit::Annealing<tunekit::FixedEpsilon, FirstHalf>>;
T make(tunekit::SearchSpace s) { return T(std::move(s)); }
