// A scheduler whose next_task() lacks the generator: MultiTaskTuner refuses it with
// check_scheduler's message.
// expect: tunekit::Scheduler: the scheduler needs `std::size_t next_task
#include <tunekit/multi_task_tuner.hpp>

struct FirstTask {
#ifdef TUNEKIT_COMPILE_FAIL_OK
  std::size_t next_task(std::span<const tunekit::TaskProgress>, tunekit::Rng&) { return 0; }
#else
  std::size_t next_task(std::span<const tunekit::TaskProgress>) { return 0; }
#endif
};

using T = tunekit::MultiTaskTuner<FirstTask, tunekit::Tuner<>>;
T make() { return T(); }
