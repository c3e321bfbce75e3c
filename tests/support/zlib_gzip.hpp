#pragma once
// zlib's deflate as a reference gzip writer of the tests (an implementation independent of
// tunekit's reader, replay/gzip.hpp).

#include <zlib.h>

#include <stdexcept>
#include <string>

namespace tunekit::test {

// `data` as zlib's deflate writes a gzip member: compression level, strategy and memory level
// as given; the header's name, comment and extra field (and its CRC-16) when `header` is set.
inline std::string zlib_gzip(const std::string& data, int level = 6, int strategy = Z_DEFAULT_STRATEGY,
                             int mem_level = 8, gz_header* header = nullptr) {
  z_stream s{};
  if (deflateInit2(&s, level, Z_DEFLATED, 16 + 15, mem_level, strategy) != Z_OK)
    throw std::runtime_error("deflateInit2");
  if (header && deflateSetHeader(&s, header) != Z_OK) throw std::runtime_error("deflateSetHeader");
  std::string out(deflateBound(&s, data.size()) + 1024, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&s, Z_FINISH);
  out.resize(s.total_out);
  deflateEnd(&s);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  return out;
}

}  // namespace tunekit::test
