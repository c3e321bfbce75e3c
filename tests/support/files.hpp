#pragma once
// Small helpers of the tests that read files and recorded datasets.

#include <tunekit/replay/replay_kernel.hpp>

#include "support/what_of.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

namespace tunekit::test {

/// The recorded datasets (shared/datasets beside the checkout; CMake's TUNEKIT_DATASETS).
inline const std::string datasets = TUNEKIT_DATASETS;

/// The whole content of a file (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A replay kernel of a dataset given as CSV text (named "mem.csv").
inline tunekit::ReplayKernel replay_from_text(const std::string& text, tunekit::ReplayOptions o = {}) {
  std::istringstream in(text);
  return tunekit::ReplayKernel::from_stream(in, "mem.csv", std::move(o));
}

/// The message of the DatasetError that reading this CSV text as the file `name` throws, or
/// "(no exception)" when it reads.
inline std::string dataset_error(const std::string& text, const std::string& name = "mem.csv") {
  std::istringstream in(text);
  return what_of<tunekit::DatasetError>([&] { (void)tunekit::ReplayKernel::from_stream(in, name); });
}

}  // namespace tunekit::test
