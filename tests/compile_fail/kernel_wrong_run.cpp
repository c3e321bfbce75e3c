// A kernel whose run() returns a double instead of a RunResult.
// expect: tunekit::Kernel: the kernel needs `tunekit::RunResult run
#include <tunekit/tuner.hpp>

struct DoubleRunKernel {
  tunekit::SearchSpace s;
  const tunekit::SearchSpace& space() const { return s; }
  double flop() const { return 1.0; }
#ifdef TUNEKIT_COMPILE_FAIL_OK
  tunekit::RunResult run(const tunekit::Config&, std::size_t runs, tunekit::Rng&) {
    return {tunekit::Status::ok, std::vector<double>(runs, 1e-3), {}, -1.0};
  }
#else
  double run(const tunekit::Config&, std::size_t, tunekit::Rng&) { return 1e-3; }
#endif
};

void tune_it(tunekit::Tuner<>& tuner, DoubleRunKernel& k, tunekit::Rng& rng) { (void)tuner.tune(k, rng); }
