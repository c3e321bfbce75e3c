// Fuzz target: a whole tuning log file (records/log.hpp: read_records, log_tasks, and
// RecordWriter's repair of a cut-off last line). Documented error of read_records: RecordError;
// log_tasks and RecordWriter's repair throw nothing on any content. Invariants: a log opened by a
// RecordWriter is empty or ends in a newline, and reads the same records as before.

#include "fuzz_support.hpp"

#include <tunekit/records/log.hpp>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace {

const std::filesystem::path& log_path() {
  static const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("tunekit_fuzz_log_" + std::to_string(::getpid()) + ".jsonl");
  return p;
}

std::optional<std::vector<tunekit::Record>> read(const std::string& task) {
  try {
    return tunekit::read_records(log_path(), tunekit::fuzz::record_space(), task, nullptr);
  } catch (const tunekit::RecordError&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunekit;
  {
    std::ofstream out(log_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const auto all = read("");
  const auto one = read("gemm_4096");
  (void)log_tasks(log_path());

  // A writer opening the log repairs a cut-off last line; what read before reads the same after.
  { RecordWriter writer(log_path(), nullptr); }
  std::ifstream in(log_path(), std::ios::binary);
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fuzz::require(content.empty() || content.back() == '\n', "a log opened for writing ends in a newline");
  const auto after = read("");
  if (all) {
    fuzz::require(after.has_value(), "a readable log stays readable once opened for writing");
    fuzz::require(after->size() == all->size(), "opening a log for writing keeps its records");
  }
  (void)one;
  return 0;
}
