#include <tunekit/kernels/cpu/simd.hpp>

#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

// load_first and store_first at the end of a readable, writable page followed by one that may not
// be touched (PROT_NONE): they read and write the first n lanes only, on every target (AVX-512 and
// AVX masked loads, element loops otherwise).
TEST_CASE("simd: load_first and store_first touch no float past the n they are given") {
  constexpr auto W = static_cast<std::size_t>(tunekit::cpu::simd_width);
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(map != MAP_FAILED);
  REQUIRE(mprotect(static_cast<char*>(map) + page, page, PROT_NONE) == 0);
  float* base = static_cast<float*>(map);
  const std::size_t floats = page / sizeof(float);
  for (std::size_t i = 0; i < floats; ++i) base[i] = static_cast<float>(i) + 0.5f;
  float* end = base + floats;
  for (std::size_t n = 0; n <= W; ++n) {
    CAPTURE(n);
    const tunekit::cpu::vfloat v = tunekit::cpu::load_first(end - n, n);
    for (std::size_t j = 0; j < W; ++j) CHECK(v[j] == (j < n ? *(end - n + j) : 0.0f));
    tunekit::cpu::vfloat w{};
    for (std::size_t j = 0; j < W; ++j) w[j] = -static_cast<float>(j) - 1.0f;
    tunekit::cpu::store_first(end - n, w, n);
    for (std::size_t j = 0; j < n; ++j) CHECK(*(end - n + j) == -static_cast<float>(j) - 1.0f);
    if (n < W) CHECK(*(end - n - 1) == static_cast<float>(floats - n - 1) + 0.5f);
  }
  CHECK(munmap(map, 2 * page) == 0);
}
