#pragma once
// A fresh directory under the system temp dir, removed (with its contents) when it goes out of
// scope. Unique per process and per instance.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

namespace tunekit::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<unsigned> counter{0};
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path = std::filesystem::temp_directory_path() /
           ("tunekit_test_" + std::to_string(::getpid()) + "_" + std::to_string(stamp) + "_" +
            std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace tunekit::test
