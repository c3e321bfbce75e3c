#pragma once
/// \file
/// The random number generator every stochastic part of tunekit draws from.
///
/// tunekit uses Boost.Random's engines and distributions because their output sequences are
/// specified and identical on every platform and standard library (the distributions of <random>
/// are not), so a seed reproduces a tuning run anywhere.

#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_01.hpp>
#include <boost/random/uniform_int_distribution.hpp>

#include <cstdint>
#include <utility>

namespace tunekit {

/// The engine type that every stochastic part takes by reference. The caller seeds it.
using Rng = boost::random::mt19937_64;

/// A uniformly distributed integer in [0, n), n > 0.
inline std::uint64_t uniform_index(Rng& rng, std::uint64_t n) {
  return boost::random::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng);
}

/// A uniformly distributed real in [0, 1).
inline double uniform_real(Rng& rng) { return boost::random::uniform_01<double>()(rng); }

/// Two distinct positions in [0, n), n >= 2, drawn uniformly (two draws).
inline std::pair<std::uint64_t, std::uint64_t> distinct_pair(Rng& rng, std::uint64_t n) {
  const std::uint64_t a = uniform_index(rng, n);
  const std::uint64_t b = uniform_index(rng, n - 1);
  return {a, b >= a ? b + 1 : b};
}

/// The generator of stream `stream` under the seed `base`: an independent generator for each
/// stream id (a parallel chain, a thread, a trial), a function of (base, stream) only.
inline Rng derive_stream(std::uint64_t base, std::uint64_t stream) {
  // splitmix64 finaliser of base + stream: decorrelates neighbouring stream ids.
  std::uint64_t z = base + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return Rng(z ^ (z >> 31));
}

/// An independent generator derived from `rng` for stream `stream` (a parallel chain or a
/// thread). It consumes one draw of `rng` (the base of derive_stream(base, stream)), so the
/// derived streams depend on the caller's seed and not on the number of threads.
inline Rng derive_stream(Rng& rng, std::uint64_t stream) { return derive_stream(std::uint64_t{rng()}, stream); }

}  // namespace tunekit
