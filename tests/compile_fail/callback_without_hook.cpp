// A callback with a misspelt hook (on_finish, not on_end): Tuner::tune refuses it with
// check_callback's message rather than ignoring it.
// expect: tunekit::Callback: a callback needs at least one of on_begin
#include <tunekit/tuner.hpp>

struct Kernel {
  tunekit::SearchSpace s;
  const tunekit::SearchSpace& space() const { return s; }
  double flop() const { return 1.0; }
  tunekit::RunResult run(const tunekit::Config&, std::size_t runs, tunekit::Rng&) {
    return {tunekit::Status::ok, std::vector<double>(runs, 1e-3), {}, -1.0};
  }
};

struct Misspelt {
  int calls = 0;
#ifdef TUNEKIT_COMPILE_FAIL_OK
  void on_end(const tunekit::TuningState&) { ++calls; }
#else
  void on_finish(const tunekit::TuningState&) { ++calls; }
#endif
};

void tune_it(tunekit::Tuner<>& tuner, Kernel& k, tunekit::Rng& rng, Misspelt& cb) {
  (void)tuner.tune(k, rng, cb);
}
