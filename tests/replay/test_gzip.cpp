// gzip.hpp's gunzip against zlib (an independent DEFLATE implementation: it writes the streams
// and computes the reference CRC-32s), against DEFLATE streams written bit by bit from RFC 1951,
// and the replay readers on gzipped files.

#include <tunekit/replay/gzip.hpp>
#include <tunekit/replay/kernel_tuner_cache.hpp>
#include <tunekit/replay/replay_kernel.hpp>

#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "support/what_of.hpp"
#include "support/zlib_gzip.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using tunekit::test::zlib_gzip;

std::uint32_t zlib_crc32(const std::string& data) {
  return static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

// Random content of four kinds: uniform bytes (incompressible: stored blocks), four letters
// (short Huffman codes, long matches), sparse text, and JSON-like text.
std::string random_content(std::mt19937_64& rng, std::size_t n, int kind) {
  std::string s(n, '\0');
  static const std::string json = "0123456789,:{}\"time\n";
  for (auto& c : s) switch (kind) {
      case 0: c = static_cast<char>(rng()); break;
      case 1: c = "abcd"[rng() % 4]; break;
      case 2: c = rng() % 2 ? ' ' : static_cast<char>('a' + rng() % 26); break;
      default: c = json[rng() % json.size()];
    }
  return s;
}

std::string gzip_error(const std::string& bytes, std::size_t max = std::string::npos) {
  return tunekit::test::what_of<tunekit::GzipError>([&] { (void)tunekit::gunzip(bytes, max); });
}

// A gzip member around raw DEFLATE bits: a minimal header, then the trailer of `content`.
struct DeflateBits {
  std::string bytes;
  int used = 8;  // bits used of the last byte
  // `n` bits of `v`, first bit lowest (DEFLATE's order for everything but Huffman codes).
  void put(unsigned v, int n) {
    for (int i = 0; i < n; ++i) {
      if (used == 8) bytes.push_back('\0'), used = 0;
      bytes.back() = static_cast<char>(static_cast<unsigned char>(bytes.back()) | (((v >> i) & 1u) << used++));
    }
  }
  // To the next byte boundary (a stored block's length follows there).
  void align() { used = 8; }
  // A Huffman code of `n` bits, most significant first (RFC 1951, 3.1.1).
  void code(unsigned v, int n) {
    for (int i = n - 1; i >= 0; --i) put((v >> i) & 1u, 1);
  }
  std::string member(const std::string& content) const {
    std::string m = std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10) + bytes;
    for (const std::uint32_t x : {zlib_crc32(content), static_cast<std::uint32_t>(content.size())})
      for (int b = 0; b < 4; ++b) m.push_back(static_cast<char>((x >> (8 * b)) & 0xffu));
    return m;
  }
};

// Fixed Huffman codes (RFC 1951, 3.2.6): a literal below 144, a length symbol of 257-279.
void fixed_literal(DeflateBits& b, unsigned char c) { b.code(0x30u + c, 8); }
void fixed_length_symbol(DeflateBits& b, unsigned symbol) { b.code(symbol - 256, 7); }

}  // namespace

TEST_CASE("gzip: the CRC-32 is zlib's") {
  std::mt19937_64 rng(7);
  for (const std::size_t n : {0, 1, 3, 100, 65537}) {
    const auto s = random_content(rng, n, 0);
    CHECK(tunekit::detail::crc32(s) == zlib_crc32(s));
    // Continued over two parts, as over a file read in pieces.
    CHECK(tunekit::detail::crc32(s.substr(n / 3), tunekit::detail::crc32(s.substr(0, n / 3))) == zlib_crc32(s));
  }
  CHECK(tunekit::detail::crc32("123456789") == 0xcbf43926u);  // the check value of CRC-32/ISO-HDLC
}

TEST_CASE("gunzip: zlib's streams of every level and strategy decompress to their input") {
  // Levels 0 (stored blocks), 1, 6, 9; the strategies that favour fixed codes, Huffman-only and
  // run-length blocks; memory levels 1-9 (different block lengths and dynamic codes).
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 24; ++trial) {
    const std::size_t n = trial < 8 ? rng() % 64 : rng() % 150000;
    const auto content = random_content(rng, n, trial % 4);
    for (const int level : {0, 1, 6, 9})
      for (const int strategy : {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED}) {
        const auto gz = zlib_gzip(content, level, strategy, 1 + static_cast<int>(rng() % 9));
        REQUIRE(tunekit::is_gzip(gz));
        CHECK(tunekit::gunzip(gz) == content);
      }
  }
}

TEST_CASE("gunzip: header fields, several members and the padding after them") {
  const std::string a = "first member\n", b(70000, 'x');
  std::string name = "run.json", comment = "a comment";
  std::string extra = "AB\x04\x00wxyz";
  gz_header h{};
  h.name = reinterpret_cast<Bytef*>(name.data());
  h.comment = reinterpret_cast<Bytef*>(comment.data());
  h.extra = reinterpret_cast<Bytef*>(extra.data());
  h.extra_len = static_cast<uInt>(extra.size());
  h.hcrc = 1;
  const auto with_header = zlib_gzip(a, 6, Z_DEFAULT_STRATEGY, 8, &h);
  CHECK(tunekit::gunzip(with_header) == a);
  // The header's CRC-16 is checked: one byte of the name changed.
  auto renamed = with_header;
  renamed[renamed.find("run.json")] = 'R';
  CHECK(gzip_error(renamed).find("the header's CRC-16 does not match") != std::string::npos);

  // Members follow one another (gzip -d writes them in turn); an empty member adds nothing.
  const auto two = with_header + zlib_gzip("", 9) + zlib_gzip(b, 1);
  CHECK(tunekit::gunzip(two) == a + b);
  CHECK(tunekit::gunzip(two + std::string(512, '\0')) == a + b);
  CHECK(gzip_error(two + "\n").find("at byte " + std::to_string(two.size()) +
                                    ": bytes after the data that are neither zeros nor another gzip member") !=
        std::string::npos);
}

TEST_CASE("gunzip: a corrupted, truncated or foreign file is a GzipError naming the byte") {
  std::mt19937_64 rng(3);
  const auto content = random_content(rng, 5000, 3);
  const auto gz = zlib_gzip(content, 9);
  CHECK(gzip_error("{\"cache\": {}}") == "gzip: at byte 0: not a gzip file (it does not begin with 1f 8b)");
  CHECK(gzip_error("") == "gzip: at byte 0: not a gzip file (it does not begin with 1f 8b)");

  auto method = gz;
  method[2] = 7;
  CHECK(gzip_error(method) == "gzip: at byte 0: compression method 7, not deflate (8)");
  auto flags = gz;
  flags[3] = static_cast<char>(0x20);
  CHECK(gzip_error(flags) == "gzip: at byte 0: reserved header flags set");

  // The trailer: CRC-32, then the length modulo 2^32.
  auto crc = gz;
  crc[gz.size() - 8] ^= 1;
  CHECK(gzip_error(crc) == "gzip: at byte " + std::to_string(gz.size() - 8) +
                               ": the data's CRC-32 does not match (a corrupted file)");
  auto length = gz;
  length[gz.size() - 4] ^= 1;
  CHECK(gzip_error(length) == "gzip: at byte " + std::to_string(gz.size() - 8) +
                                  ": the data's length does not match (a corrupted file)");

  // Every cut of the file is an error (and none is read as a shorter content).
  for (std::size_t cut = 0; cut < gz.size(); ++cut) {
    const auto e = gzip_error(gz.substr(0, cut));
    CHECK_MESSAGE(e.find("gzip: at byte ") == 0, "cut at ", cut, ": ", e);
  }
  // A flipped bit anywhere in the compressed data: an error, never other content read silently
  // (a bit that changes nothing, the padding of the last byte, reads the same content).
  int errors = 0;
  for (std::size_t at = 10; at < gz.size() - 8; at += 7) {
    auto flipped = gz;
    flipped[at] ^= static_cast<char>(1u << (at % 8));
    const auto e = gzip_error(flipped);
    if (e.find("gzip: at byte ") == 0) {
      ++errors;
      continue;
    }
    REQUIRE_MESSAGE(e == "(no exception)", "bit flipped at byte ", at, ": ", e);
    CHECK_MESSAGE(tunekit::gunzip(flipped) == content, "bit flipped at byte ", at);
  }
  CHECK(errors > 0);
}

TEST_CASE("gunzip: the size limit refuses a content larger than it, before writing it") {
  const std::string zeros(1 << 20, '\0');
  const auto gz = zlib_gzip(zeros, 9);  // about 1000:1
  CHECK(gz.size() < 2000);
  CHECK(tunekit::gunzip(gz, zeros.size()) == zeros);
  CHECK(gzip_error(gz, zeros.size() - 1).find("the content exceeds the limit of 1048575 bytes") != std::string::npos);
}

TEST_CASE("gunzip: DEFLATE blocks written bit by bit from RFC 1951") {
  SUBCASE("fixed codes: a literal, then a match that overlaps what it copies") {
    DeflateBits b;
    b.put(1, 1);  // BFINAL
    b.put(1, 2);  // BTYPE 01: fixed codes
    fixed_literal(b, 'a');
    fixed_literal(b, 'b');
    fixed_length_symbol(b, 265);  // lengths 11-12: one extra bit
    b.put(1, 1);                  // length 12
    b.code(1, 5);                 // distance code 1: distance 2
    fixed_length_symbol(b, 256);  // end of block
    CHECK(tunekit::gunzip(b.member("ababababababab")) == "ababababababab");  // "ab", then 12 bytes at distance 2
  }
  SUBCASE("a stored block, then a fixed one") {
    DeflateBits b;
    b.put(0, 1);
    b.put(0, 2);  // BTYPE 00: stored, aligned to the next byte
    b.align();
    for (const unsigned char c : std::string("\x03\x00\xfc\xff" "xyz", 7)) b.put(c, 8);
    b.put(1, 1);
    b.put(1, 2);
    fixed_length_symbol(b, 257);  // length 3
    b.code(2, 5);                 // distance 3
    fixed_length_symbol(b, 256);
    CHECK(tunekit::gunzip(b.member("xyzxyz")) == "xyzxyz");
  }
  SUBCASE("errors") {
    DeflateBits reserved;
    reserved.put(1, 1);
    reserved.put(3, 2);
    CHECK(gzip_error(reserved.member("")).find(": a block of the reserved type 3") != std::string::npos);

    DeflateBits far;
    far.put(1, 1);
    far.put(1, 2);
    fixed_literal(far, 'a');
    fixed_length_symbol(far, 257);
    far.code(1, 5);  // distance 2, but one byte is written
    fixed_length_symbol(far, 256);
    CHECK(gzip_error(far.member("aaaa")).find(": a distance of 2 bytes, before the start of the data") !=
          std::string::npos);

    DeflateBits nlen;
    nlen.put(1, 1);
    nlen.put(0, 2);
    nlen.align();
    for (const unsigned char c : std::string("\x03\x00\xfc\xfe" "xyz", 7)) nlen.put(c, 8);
    CHECK(gzip_error(nlen.member("xyz")).find(": a stored block whose length and its complement disagree") !=
          std::string::npos);

    DeflateBits code_30;  // fixed distance codes 30 and 31 exist but are invalid
    code_30.put(1, 1);
    code_30.put(1, 2);
    fixed_literal(code_30, 'a');
    fixed_length_symbol(code_30, 257);
    code_30.code(30, 5);
    CHECK(gzip_error(code_30.member("")).find(": the invalid distance code 30") != std::string::npos);

    DeflateBits too_many;  // a dynamic block of HLIT 287
    too_many.put(1, 1);
    too_many.put(2, 2);
    too_many.put(30, 5);
    too_many.put(0, 5);
    too_many.put(0, 4);
    CHECK(gzip_error(too_many.member("")).find(": a block of 287 literal/length and 1 distance codes") !=
          std::string::npos);

    DeflateBits incomplete;  // a code-lengths code of one length-1 code (incomplete)
    incomplete.put(1, 1);
    incomplete.put(2, 2);
    incomplete.put(0, 5);
    incomplete.put(0, 5);
    incomplete.put(0, 4);  // 4 code-length code lengths: for 16, 17, 18, 0
    for (const unsigned l : {0u, 0u, 0u, 1u}) incomplete.put(l, 3);
    CHECK(gzip_error(incomplete.member("")).find(": an incomplete code-lengths code") != std::string::npos);
  }
}

TEST_CASE("replay readers: a gzipped cache or dataset reads as the file it holds") {
  const tunekit::test::TempDir dir;
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.path / name, std::ios::binary) << bytes;
    return dir.path / name;
  };
  const std::string cache =
      R"({"tune_params_keys": ["x", "y"], "tune_params": {"x": [1, 2], "y": ["a", "b"]}, "objective": "time", )"
      R"("cache": {"1,a": {"x": 1, "y": "a", "time": 2.0, "times": [1.5, 2.5]}, "1,b": {"x": 1, "y": "b", "time": 3.0},)"
      R"( "2,a": {"x": 2, "y": "a", "time": "InvalidConfig"}, "2,b": {"x": 2, "y": "b", "time": 1.25}}})";
  const std::string csv = tunekit::test::slurp(tunekit::test::datasets + "/convolution_A4000.csv");
  REQUIRE(!csv.empty());

  const auto same = [](const tunekit::ReplayKernel& a, const tunekit::ReplayKernel& b) {
    CHECK(a.space().dimensions() == b.space().dimensions());
    CHECK(a.space().product_size() == b.space().product_size());
    CHECK(a.row_count() == b.row_count());
    CHECK(a.recorded_times_ms() == b.recorded_times_ms());
    CHECK(a.optimum_ms() == b.optimum_ms());
  };
  const auto plain_json = tunekit::replay_from_file(write("run.json", cache));
  const auto gz_json = tunekit::replay_from_file(write("run.json.gz", zlib_gzip(cache, 6)));
  same(plain_json, gz_json);
  CHECK(gz_json.name() == "run");
  CHECK(gz_json.optimum_ms() == 1.25);

  const auto plain_csv = tunekit::replay_from_file(write("conv.csv", csv));
  const auto gz_csv = tunekit::replay_from_file(write("conv.csv.gz", zlib_gzip(csv, 9)));
  same(plain_csv, gz_csv);
  CHECK(gz_csv.name() == "conv");
  // Told gzipped by its bytes, not its name.
  same(plain_csv, tunekit::ReplayKernel::from_csv(write("conv_gzipped.csv", zlib_gzip(csv, 1))));

  // A damaged file: the DatasetError names it, then the byte at fault.
  auto damaged = zlib_gzip(cache, 6);
  damaged[damaged.size() - 5] ^= 1;  // the CRC-32's last byte
  const auto path = write("damaged.json.gz", damaged);
  CHECK(tunekit::test::what_of<tunekit::DatasetError>([&] { (void)tunekit::replay_from_file(path); }) ==
        path.string() + ": gzip: at byte " + std::to_string(damaged.size() - 8) +
            ": the data's CRC-32 does not match (a corrupted file)");
  CHECK(tunekit::recorded_space_name("a/b/run.json.gz") == "run");
  CHECK(tunekit::recorded_space_name("run.csv") == "run");
}
