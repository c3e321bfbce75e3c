#pragma once
// Sets the OpenMP thread count for a scope and restores it on exit (an exception included).

#include <omp.h>

namespace tunekit::test {

struct OmpThreads {
  int saved = omp_get_max_threads();
  explicit OmpThreads(int n) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(saved); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;
};

}  // namespace tunekit::test
