#pragma once
/// \file
/// Kernel: what is tuned, and what a run returns.
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/core/random.hpp"
#include "tunekit/core/status.hpp"
#include "tunekit/space/search_space.hpp"

#include <concepts>
#include <cstddef>
#include <vector>

namespace tunekit {

/// A tunable kernel: its search space, its FLOP count per run, and a way to run a configuration
/// `runs` times and return the seconds of each run (or a failure status).
///
/// Required: `const SearchSpace& space() const`, `double flop() const`,
/// `RunResult run(const Config&, std::size_t runs, Rng&)` (the generator is for kernels that
/// simulate time, like replay; real kernels ignore it). Optional: `RunResult prepare(const
/// Config&)` (compile or set up; called once per config before any run), `std::string name()
/// const` and `std::string device() const` (for records).
template <class K>
concept Kernel = requires(K& k, const K& ck, const Config& c, std::size_t runs, Rng& rng) {
  { ck.space() } -> std::convertible_to<const SearchSpace&>;
  { ck.flop() } -> std::convertible_to<double>;
  { k.run(c, runs, rng) } -> std::same_as<RunResult>;
};

template <class K>
concept PreparableKernel = Kernel<K> && requires(K& k, const Config& c) {
  { k.prepare(c) } -> std::same_as<RunResult>;
};

/// A kernel that checks its own output: `RunResult verify(const Config&)` returns ok, or
/// `wrong_result` (with the error in the text) when the output of the last run differs from a
/// reference beyond the kernel's tolerance. Evaluators call it once per measurement, after the
/// first run request (the warm-up, or the first timed runs), so a wrong configuration costs one
/// run and is never chosen as best.
template <class K>
concept VerifiableKernel = Kernel<K> && requires(K& k, const Config& c) {
  { k.verify(c) } -> std::same_as<RunResult>;
};

/// A kernel that compiles its configurations and can start compiling some ahead of their
/// measurement: `prefetch(const std::vector<Config>&)` starts their compilation on other threads
/// and returns at once (the CUDA kernels: ProgramCache::prefetch). A serial `tune` calls it with
/// the next configs of its round (TunerOptions::compile_ahead) before it measures the current
/// one, so that the host compiles while the device runs; a farm's worker calls it with the
/// configs of the jobs it will measure next (FarmJob::prefetch).
template <class K>
concept PrefetchingKernel = Kernel<K> && requires(K& k, const std::vector<Config>& configs) {
  k.prefetch(configs);
};

template <class K>
constexpr bool check_kernel() {
  static_assert(requires(const K& k) { { k.space() } -> std::convertible_to<const SearchSpace&>; },
                "tunekit::Kernel: the kernel needs `const tunekit::SearchSpace& space() const`");
  static_assert(requires(const K& k) { { k.flop() } -> std::convertible_to<double>; },
                "tunekit::Kernel: the kernel needs `double flop() const` (FLOP per run)");
  static_assert(requires(K& k, const Config& c, std::size_t n, Rng& r) {
                  { k.run(c, n, r) } -> std::same_as<RunResult>;
                },
                "tunekit::Kernel: the kernel needs `tunekit::RunResult run(const tunekit::Config&, "
                "std::size_t runs, tunekit::Rng&)`");
  return Kernel<K>;
}

namespace detail {
/// The least kernel there is: checks that an evaluator works with any Kernel.
struct KernelArchetype {
  const SearchSpace& space() const;
  double flop() const;
  RunResult run(const Config&, std::size_t, Rng&);
};
}  // namespace detail

}  // namespace tunekit
