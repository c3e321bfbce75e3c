// Fuzz target: gzip decompression (replay/gzip.hpp: gunzip), differential against zlib's inflate.
// Documented error: GzipError. Invariant: gunzip reads a file exactly when zlib does (member by
// member, zeros after the last one ignored, the same size limit) and then the same content.

#include "fuzz_support.hpp"

#include <tunekit/replay/gzip.hpp>

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace {

constexpr std::size_t limit = std::size_t{1} << 20;  // 1 MiB: a 8 KiB input may inflate to 8 MiB

// The content of `bytes` by zlib, read as gunzip reads a file; nullopt where zlib refuses it or
// the content exceeds `limit`.
std::optional<std::string> zlib_gunzip(std::string_view bytes) {
  std::string out;
  std::size_t pos = 0;
  for (int member = 0;; ++member) {
    if (member > 0 && bytes.find_first_not_of('\0', pos) == std::string_view::npos) return out;
    z_stream s{};
    if (inflateInit2(&s, 16 + 15) != Z_OK) return std::nullopt;  // gzip only, a 32 KiB window
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + pos));
    s.avail_in = static_cast<uInt>(bytes.size() - pos);
    int rc = Z_OK;
    char chunk[16384];
    while (rc == Z_OK) {
      s.next_out = reinterpret_cast<Bytef*>(chunk);
      s.avail_out = sizeof chunk;
      rc = inflate(&s, Z_NO_FLUSH);
      out.append(chunk, sizeof chunk - s.avail_out);
      if (out.size() > limit) rc = Z_MEM_ERROR;
      // All input given and no progress possible: a truncated stream.
      if (rc == Z_OK && s.avail_in == 0 && s.avail_out != 0) rc = Z_BUF_ERROR;
    }
    pos += s.total_in;
    inflateEnd(&s);
    if (rc != Z_STREAM_END) return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::optional<std::string> ours;
  try {
    ours = tunekit::gunzip(bytes, limit);
    tunekit::fuzz::require(ours->size() <= limit, "gunzip returned more than its limit");
  } catch (const tunekit::GzipError& e) {
    tunekit::fuzz::require(std::string_view(e.what()).starts_with("gzip: at byte "), "a GzipError names no byte");
  }
  const auto reference = zlib_gunzip(bytes);
  tunekit::fuzz::require(ours.has_value() == reference.has_value(), "gunzip and zlib disagree on accepting the file");
  tunekit::fuzz::require(!ours || *ours == *reference, "gunzip and zlib read different content");
  return 0;
}
