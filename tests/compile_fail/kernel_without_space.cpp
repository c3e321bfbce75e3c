// A kernel without space(): Tuner::tune refuses it with check_kernel's message.
// expect: tunekit::Kernel: the kernel needs `const tunekit::SearchSpace& space
#include <tunekit/tuner.hpp>

struct NoSpaceKernel {
#ifdef TUNEKIT_COMPILE_FAIL_OK
  tunekit::SearchSpace s;
  const tunekit::SearchSpace& space() const { return s; }
#endif
  double flop() const { return 1.0; }
  tunekit::RunResult run(const tunekit::Config&, std::size_t runs, tunekit::Rng&) {
    return {tunekit::Status::ok, std::vector<double>(runs, 1e-3), {}, -1.0};
  }
};

void tune_it(tunekit::Tuner<>& tuner, NoSpaceKernel& k, tunekit::Rng& rng) { (void)tuner.tune(k, rng); }
