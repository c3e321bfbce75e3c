// An evaluator whose measure() is not callable with (kernel, config, generator): Tuner refuses it
// with check_evaluator's message.
// expect: tunekit::Evaluator: the evaluator needs `template <tunekit::Kernel K> tunekit::Measurement measure
#include <tunekit/tuner.hpp>

struct TwoArgEvaluator {
#ifdef TUNEKIT_COMPILE_FAIL_OK
  template <tunekit::Kernel K>
  tunekit::Measurement measure(K&, const tunekit::Config&, tunekit::Rng&) { return {}; }
#else
  template <tunekit::Kernel K>
  tunekit::Measurement measure(K&, const tunekit::Config&) { return {}; }
#endif
};

using T = tunekit::Tuner<tunekit::NoSurrogate, tunekit::PredictedMean, tunekit::RandomSearch, TwoArgEvaluator>;
T make(tunekit::SearchSpace s) { return T(std::move(s)); }
