// An optimizer whose propose() lacks the generator: Tuner refuses it with check_optimizer's message.
// expect: tunekit::Optimizer: the optimizer needs `std::vector<tunekit::Config> propose
#include <tunekit/tuner.hpp>

struct NoRngOptimizer {
#ifdef TUNEKIT_COMPILE_FAIL_OK
  std::vector<tunekit::Config> propose(const tunekit::SearchContext&, std::size_t, tunekit::Rng&) { return {}; }
#else
  std::vector<tunekit::Config> propose(const tunekit::SearchContext&, std::size_t) { return {}; }
#endif
};

using T = tunekit::Tuner<tunekit::NoSurrogate, tunekit::PredictedMean, NoRngOptimizer>;
T make(tunekit::SearchSpace s) { return T(std::move(s)); }
