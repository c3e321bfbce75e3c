#pragma once
/// \file
/// Helpers of the bundled CPU kernels: aligned buffers, random inputs, result checks, timing.

#include "tunekit/core/random.hpp"

#include <boost/random/uniform_real_distribution.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

namespace tunekit::cpu {

struct FreeDeleter {
  void operator()(float* p) const noexcept { std::free(p); }
};

/// A 64-byte aligned float array (uninitialised).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t n) : n_(n) {
    if (n == 0) return;
    const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    p_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!p_) throw std::bad_alloc();
  }
  float* data() noexcept { return p_.get(); }
  const float* data() const noexcept { return p_.get(); }
  std::size_t size() const noexcept { return n_; }
  float& operator[](std::size_t i) noexcept { return p_.get()[i]; }
  float operator[](std::size_t i) const noexcept { return p_.get()[i]; }

 private:
  std::unique_ptr<float[], FreeDeleter> p_;
  std::size_t n_ = 0;
};

/// Fills with uniform values in [-1, 1) from the generator.
inline void fill_uniform(AlignedBuffer& b, Rng& rng) {
  boost::random::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = d(rng);
}

/// Largest absolute difference between a result and a reference of the same size; infinity
/// when the result holds a NaN or an infinity.
inline double max_abs_difference(const float* result, const float* reference, std::size_t n) {
  double worst = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::abs(static_cast<double>(result[i]) - static_cast<double>(reference[i]));
    if (!std::isfinite(d)) return HUGE_VAL;
    worst = std::max(worst, d);
  }
  return worst;
}

/// Seconds taken by f().
template <class F>
double seconds_of(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tunekit::cpu
