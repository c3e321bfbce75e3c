// An acquisition whose score() takes no best value: Tuner refuses it with check_acquisition's
// message.
// expect: tunekit::Acquisition: the acquisition needs `double score
#include <tunekit/tuner.hpp>

struct MeanOnly {
#ifdef TUNEKIT_COMPILE_FAIL_OK
  double score(double mean, double, double) const { return mean; }
#else
  double score(double mean, double) const { return mean; }
#endif
};

using T = tunekit::Tuner<tunekit::NoSurrogate, MeanOnly>;
T make(tunekit::SearchSpace s) { return T(std::move(s)); }
