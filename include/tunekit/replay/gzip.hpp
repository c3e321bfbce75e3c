#pragma once
/// \file
/// gzip (RFC 1952) decompression of DEFLATE data (RFC 1951), header-only and without zlib: how
/// the replay readers load recorded spaces stored gzipped (benchmark_hub's `*.json.gz` caches,
/// a `*.csv.gz` dataset).
///
/// `gunzip` decompresses every member of the file, one after another (as `gzip -d` does), and
/// checks each member's CRC-32 and length. A code is accepted or refused as zlib's inflate does
/// (an incomplete Huffman code only when it is one code of length 1; a code-lengths code must be
/// complete; lengths over 286 literal/length or 30 distance symbols are refused). Zero bytes after
/// the last member are ignored (padding written by tape and block devices); anything else there
/// is an error.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tunekit {

/// A malformed, truncated or corrupted gzip file, or one whose content exceeds the size limit;
/// the message names the byte offset at fault.
struct GzipError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Whether `bytes` begins as a gzip file does (its magic number 1f 8b).
inline bool is_gzip(std::string_view bytes) noexcept {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

namespace detail {

/// The CRC-32 of `bytes` (ISO 3309, reflected polynomial 0xedb88320, as gzip and zlib's crc32),
/// continuing from `crc` (the CRC-32 of the bytes before).
inline std::uint32_t crc32(std::string_view bytes, std::uint32_t crc = 0) noexcept {
  static constexpr auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (const char b : bytes) crc = table[(crc ^ static_cast<unsigned char>(b)) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

/// One DEFLATE stream (RFC 1951) of `in` from byte `pos`, appended to `out`.
template <class = void>
class InflaterImpl {
 public:
  /// `window_start`: where in `out` this stream's output begins (a distance may not reach before
  /// it); `max_out`: the most bytes `out` may hold.
  InflaterImpl(std::string_view in, std::size_t pos, std::string& out, std::size_t max_out)
      : in_(in), pos_(pos), out_(out), window_start_(out.size()), max_out_(max_out) {}

  /// Inflates the stream's blocks up to the final one; returns the offset of the first byte after
  /// the stream. Throws GzipError.
  std::size_t run() {
    bool last = false;
    while (!last) {
      last = bits(1) == 1;
      switch (bits(2)) {
        case 0: stored(); break;
        case 1: codes(fixed_literals(), fixed_distances()); break;
        case 2: dynamic(); break;
        default: fail("a block of the reserved type 3");
      }
    }
    return_whole_bytes();
    return pos_;
  }

 private:
  static constexpr int max_bits = 15;   // the longest DEFLATE code
  static constexpr int table_bits = 9;  // codes up to this long decode by one table lookup

  // A canonical Huffman code: how many codes of each length, the symbols in code order, and a
  // table indexed by the next table_bits input bits giving (symbol, length) of the codes that fit.
  struct Code {
    std::array<std::uint16_t, max_bits + 1> count{};
    std::vector<std::uint16_t> symbol;
    struct Entry {
      std::uint16_t symbol = 0;
      std::uint8_t length = 0;  // 0: no code of at most table_bits bits starts so
    };
    std::array<Entry, 1u << table_bits> table{};
  };

  enum class Kind { code_lengths, literals, distances };

  // The canonical code of `lengths` (one per symbol, 0: unused) into `c`, checked as zlib's
  // inflate_table checks it: never over-subscribed; incomplete only for literals or distances
  // whose longest code has length 1 (one used code). Returns what is wrong, or nullptr.
  static const char* build(Code& c, const std::uint8_t* lengths, int n, Kind kind) {
    for (int s = 0; s < n; ++s) ++c.count[lengths[s]];
    int longest = 0;
    for (int len = 1; len <= max_bits; ++len)
      if (c.count[len]) longest = len;
    std::array<std::uint16_t, max_bits + 2> offset{};
    int left = 1;
    for (int len = 1; len <= max_bits; ++len) {
      left = 2 * left - c.count[len];
      if (left < 0) return "an over-subscribed";
      offset[len + 1] = static_cast<std::uint16_t>(offset[len] + c.count[len]);
    }
    if (longest > 0 && left > 0 && (kind == Kind::code_lengths || longest != 1)) return "an incomplete";
    c.symbol.resize(offset[max_bits + 1]);
    for (int s = 0; s < n; ++s)
      if (lengths[s]) c.symbol[offset[lengths[s]]++] = static_cast<std::uint16_t>(s);
    // The table: each code's bits reversed (DEFLATE sends a code's first bit first, into the
    // buffer's low bit), repeated over every value of the bits after it.
    unsigned code = 0;
    std::size_t index = 0;
    for (int len = 1; len <= table_bits; ++len) {
      for (int k = 0; k < c.count[len]; ++k, ++code, ++index) {
        unsigned reversed = 0;
        for (int b = 0; b < len; ++b) reversed |= ((code >> b) & 1u) << (len - 1 - b);
        for (unsigned fill = reversed; fill < (1u << table_bits); fill += 1u << len)
          c.table[fill] = {c.symbol[index], static_cast<std::uint8_t>(len)};
      }
      code <<= 1;
    }
    return nullptr;
  }
  Code build(const std::uint8_t* lengths, int n, Kind kind, const char* what) const {
    Code c;
    if (const char* wrong = build(c, lengths, n, kind)) fail(std::string(wrong) + " " + what + " code");
    return c;
  }
  // The fixed codes of block type 1 (complete, so never refused).
  static Code fixed(int n, Kind kind) {
    std::array<std::uint8_t, 288> len{};
    for (int s = 0; s < n; ++s)
      len[s] = kind == Kind::distances ? 5 : s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
    Code c;
    build(c, len.data(), n, kind);
    return c;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw GzipError("gzip: at byte " + std::to_string(pos_) + ": " + what);
  }

  // Bits, first in the stream lowest: `have` of them buffered in `buffer`.
  void load(int n) {
    while (have_ < n) {
      if (pos_ >= in_.size()) fail("the compressed data ends early (a truncated file)");
      buffer_ |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_++])) << have_;
      have_ += 8;
    }
  }
  unsigned bits(int n) {
    load(n);
    const auto v = static_cast<unsigned>(buffer_ & ((std::uint64_t{1} << n) - 1));
    buffer_ >>= n;
    have_ -= n;
    return v;
  }
  // The whole bytes still buffered go back to the input (a stored block, or the stream's end, is
  // byte-aligned; the bits of a partly read byte are dropped).
  void return_whole_bytes() {
    pos_ -= static_cast<std::size_t>(have_ / 8);
    buffer_ = 0;
    have_ = 0;
  }

  int decode(const Code& c) {
    while (have_ < table_bits && pos_ < in_.size()) {
      buffer_ |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_++])) << have_;
      have_ += 8;
    }
    if (have_ >= table_bits) {
      const auto e = c.table[buffer_ & ((1u << table_bits) - 1)];
      if (e.length) {
        buffer_ >>= e.length;
        have_ -= e.length;
        return e.symbol;
      }
    }
    // Longer codes (and the last bits of the input): bit by bit, over the canonical code.
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= max_bits; ++len) {
      code |= static_cast<int>(bits(1));
      const int count = c.count[len];
      if (code - first < count) return c.symbol[index + (code - first)];
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
    fail("a bit sequence that is no code of the block");
  }

  void reserve(std::size_t n) const {
    if (n > max_out_ - out_.size())
      fail("the content exceeds the limit of " + std::to_string(max_out_) + " bytes");
  }

  void stored() {
    return_whole_bytes();
    if (in_.size() - pos_ < 4) fail("the compressed data ends early (a truncated file)");
    const auto byte = [&](std::size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(in_[pos_ + i])); };
    const unsigned len = byte(0) | byte(1) << 8, nlen = byte(2) | byte(3) << 8;
    if (len != (~nlen & 0xffffu)) fail("a stored block whose length and its complement disagree");
    pos_ += 4;
    if (in_.size() - pos_ < len) fail("the compressed data ends early (a truncated file)");
    reserve(len);
    out_.append(in_.substr(pos_, len));
    pos_ += len;
  }

  void codes(const Code& literals, const Code& distances) {
    static constexpr std::array<std::uint16_t, 29> length_base{3,  4,  5,  6,  7,  8,  9,  10, 11,  13,
                                                               15, 17, 19, 23, 27, 31, 35, 43, 51,  59,
                                                               67, 83, 99, 115, 131, 163, 195, 227, 258};
    static constexpr std::array<std::uint8_t, 29> length_extra{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                                               2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static constexpr std::array<std::uint16_t, 30> distance_base{
        1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
        193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static constexpr std::array<std::uint8_t, 30> distance_extra{0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                                                 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    for (;;) {
      const int symbol = decode(literals);
      if (symbol < 256) {
        reserve(1);
        out_.push_back(static_cast<char>(symbol));
        continue;
      }
      if (symbol == 256) return;
      const int l = symbol - 257;
      if (l >= 29) fail("the invalid length code " + std::to_string(symbol));
      const std::size_t length = length_base[l] + bits(length_extra[l]);
      const int d = decode(distances);
      if (d >= 30) fail("the invalid distance code " + std::to_string(d));
      const std::size_t distance = distance_base[d] + bits(distance_extra[d]);
      if (distance > out_.size() - window_start_)
        fail("a distance of " + std::to_string(distance) + " bytes, before the start of the data");
      reserve(length);
      // Byte by byte: a copy may overlap what it writes (a run).
      std::size_t from = out_.size() - distance;
      out_.resize(out_.size() + length);
      char* p = out_.data();
      for (std::size_t i = out_.size() - length; i < out_.size(); ++i) p[i] = p[from++];
    }
  }

  static const Code& fixed_literals() {
    static const Code c = fixed(288, Kind::literals);
    return c;
  }
  static const Code& fixed_distances() {
    static const Code c = fixed(32, Kind::distances);
    return c;
  }

  void dynamic() {
    const int n_literals = static_cast<int>(bits(5)) + 257;
    const int n_distances = static_cast<int>(bits(5)) + 1;
    const int n_code_lengths = static_cast<int>(bits(4)) + 4;
    if (n_literals > 286 || n_distances > 30)
      fail("a block of " + std::to_string(n_literals) + " literal/length and " + std::to_string(n_distances) +
           " distance codes (at most 286 and 30)");
    static constexpr std::array<std::uint8_t, 19> order{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    std::array<std::uint8_t, 19> cl{};
    for (int i = 0; i < n_code_lengths; ++i) cl[order[i]] = static_cast<std::uint8_t>(bits(3));
    const Code code_lengths = build(cl.data(), 19, Kind::code_lengths, "code-lengths");

    std::array<std::uint8_t, 286 + 30> len{};
    const int n = n_literals + n_distances;
    for (int i = 0; i < n;) {
      const int symbol = decode(code_lengths);
      if (symbol < 16) {
        len[i++] = static_cast<std::uint8_t>(symbol);
        continue;
      }
      std::uint8_t value = 0;
      int repeat = 0;
      if (symbol == 16) {
        if (i == 0) fail("a repeat of the previous code length at the first one");
        value = len[i - 1];
        repeat = 3 + static_cast<int>(bits(2));
      } else if (symbol == 17) {
        repeat = 3 + static_cast<int>(bits(3));
      } else {
        repeat = 11 + static_cast<int>(bits(7));
      }
      if (i + repeat > n) fail("code lengths repeated past the last code");
      while (repeat--) len[i++] = value;
    }
    if (len[256] == 0) fail("a block without an end-of-block code");
    const Code literals = build(len.data(), n_literals, Kind::literals, "literal/length");
    const Code distances = build(len.data() + n_literals, n_distances, Kind::distances, "distance");
    codes(literals, distances);
  }

  std::string_view in_;
  std::size_t pos_;
  std::string& out_;
  std::size_t window_start_;
  std::size_t max_out_;
  std::uint64_t buffer_ = 0;
  int have_ = 0;
};

/// InflaterImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using Inflater = InflaterImpl<>;

}  // namespace detail

/// The content of the gzip file `bytes`: its members' data, one after another. Throws GzipError
/// (naming the byte offset) for a file that is not gzip, is truncated, holds invalid DEFLATE
/// data, fails its CRC-32 or length check, is followed by bytes other than zeros, or whose
/// content would exceed `max_bytes`.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::string gunzip(std::string_view bytes,
                   std::size_t max_bytes = std::numeric_limits<std::size_t>::max()) {
  std::string out;
  std::size_t pos = 0;
  const auto fail = [&](const std::string& what) -> void {
    throw GzipError("gzip: at byte " + std::to_string(pos) + ": " + what);
  };
  const auto byte = [&](std::size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(bytes[i])); };
  const auto need = [&](std::size_t n) {
    if (bytes.size() - pos < n) fail("the file ends early (a truncated file)");
  };
  for (int member = 0;; ++member) {
    if (member > 0 && bytes.find_first_not_of('\0', pos) == std::string_view::npos) break;
    if (!is_gzip(bytes.substr(pos)))
      fail(member == 0 ? "not a gzip file (it does not begin with 1f 8b)"
                       : "bytes after the data that are neither zeros nor another gzip member");
    const std::size_t header = pos;
    need(10);
    if (byte(pos + 2) != 8) fail("compression method " + std::to_string(byte(pos + 2)) + ", not deflate (8)");
    const unsigned flags = byte(pos + 3);
    if (flags & 0xe0u) fail("reserved header flags set");
    pos += 10;
    if (flags & 4u) {  // FEXTRA: a length, then that many bytes
      need(2);
      const std::size_t extra = byte(pos) | byte(pos + 1) << 8;
      pos += 2;
      need(extra);
      pos += extra;
    }
    for (const unsigned flag : {8u, 16u})  // FNAME, FCOMMENT: zero-terminated
      if (flags & flag) {
        const auto end = bytes.find('\0', pos);
        if (end == std::string_view::npos) fail("the file ends early (a truncated file)");
        pos = end + 1;
      }
    if (flags & 2u) {  // FHCRC: the low 16 bits of the header's CRC-32
      need(2);
      if ((detail::crc32(bytes.substr(header, pos - header)) & 0xffffu) != (byte(pos) | byte(pos + 1) << 8))
        fail("the header's CRC-16 does not match");
      pos += 2;
    }
    const std::size_t start = out.size();
    pos = detail::Inflater(bytes, pos, out, max_bytes).run();
    need(8);
    const std::uint32_t crc = byte(pos) | byte(pos + 1) << 8 | byte(pos + 2) << 16 | byte(pos + 3) << 24;
    const std::uint32_t size = byte(pos + 4) | byte(pos + 5) << 8 | byte(pos + 6) << 16 | byte(pos + 7) << 24;
    const std::string_view data = std::string_view(out).substr(start);
    if (detail::crc32(data) != crc) fail("the data's CRC-32 does not match (a corrupted file)");
    if (static_cast<std::uint32_t>(data.size()) != size) fail("the data's length does not match (a corrupted file)");
    pos += 8;
  }
  return out;
}

}  // namespace tunekit
