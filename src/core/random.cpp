#include "core/random.hpp"

#include "core/time.hpp"

#include <pthread.h>
#include <sodium.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <stdexcept>

namespace sika {

namespace {
struct SodiumInit {
  SodiumInit() {
    if (sodium_init() < 0) throw std::runtime_error("libsodium initialisation failed");
  }
};
void ensure_sodium() { static SodiumInit init; }

// Small requests (request ids, references, tokens) are served from a per-thread block of CSPRNG
// output, so that they cost one getrandom system call per block instead of one each. Bytes are
// wiped as they are handed out, and a forked child drops its parent's blocks (the generation
// changes), so no two processes or calls ever get the same bytes.
constexpr std::size_t kBlock = 512;
constexpr std::size_t kSmall = 64;
std::atomic<std::uint64_t> g_generation{0};

struct Block {
  unsigned char bytes[kBlock];
  std::size_t used = kBlock;
  std::uint64_t generation = 0;
  ~Block() { sodium_memzero(bytes, sizeof bytes); }
};

void take(unsigned char* out, std::size_t n) {
  static const int registered = [] {
    return pthread_atfork(nullptr, nullptr, [] { g_generation.fetch_add(1, std::memory_order_relaxed); });
  }();
  (void)registered;
  thread_local Block block;
  const std::uint64_t generation = g_generation.load(std::memory_order_relaxed);
  if (block.generation != generation || kBlock - block.used < n) {
    randombytes_buf(block.bytes, kBlock);
    block.used = 0;
    block.generation = generation;
  }
  std::memcpy(out, block.bytes + block.used, n);
  sodium_memzero(block.bytes + block.used, n);
  block.used += n;
}
}  // namespace

std::string random_bytes(std::size_t n) {
  ensure_sodium();
  std::string out(n, '\0');
  if (n <= kSmall)
    take(reinterpret_cast<unsigned char*>(out.data()), n);
  else
    randombytes_buf(out.data(), n);
  return out;
}

std::string random_token(std::size_t bytes) { return base64url_encode(random_bytes(bytes)); }

std::uint32_t random_uniform(std::uint32_t bound) {
  ensure_sodium();
  return randombytes_uniform(bound);
}

namespace {
// 16 bytes in the canonical UUID text, with `version` and the RFC 4122 variant set.
std::string uuid_text(std::string b, unsigned version) {
  b[6] = static_cast<char>((b[6] & 0x0F) | (version << 4));
  b[8] = static_cast<char>((b[8] & 0x3F) | 0x80);
  // One allocation: every request without an X-Request-Id gets one.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(36, '-');
  std::size_t o = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    if (o == 8 || o == 13 || o == 18 || o == 23) ++o;
    auto c = static_cast<unsigned char>(b[i]);
    out[o++] = kHex[c >> 4];
    out[o++] = kHex[c & 15];
  }
  return out;
}
}  // namespace

std::string uuid_v4() { return uuid_text(random_bytes(16), 4); }

std::string uuid_v7() {
  std::string b = random_bytes(16);
  auto ms = static_cast<std::uint64_t>(now_ms());
  for (int i = 0; i < 6; ++i) b[i] = static_cast<char>((ms >> (8 * (5 - i))) & 0xFF);
  return uuid_text(std::move(b), 7);
}

bool is_uuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

namespace {
// Ascending in ASCII, so references sort as the numbers they encode.
constexpr std::string_view kAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ";
static_assert(kAlphabet.size() == 32);  // 256 is a multiple of 32: byte % 32 is uniform
}  // namespace

std::string sortable_time_prefix(std::int64_t ms) {
  auto t = static_cast<std::uint64_t>(ms);
  std::string out(8, '2');
  for (int i = 7; i >= 0; --i, t >>= 5) out[static_cast<std::size_t>(i)] = kAlphabet[t & 31];
  return out;
}

std::string sortable_reference(std::string_view prefix, std::size_t n) {
  std::string out = random_reference(prefix, std::max<std::size_t>(n, 12) - 8);
  out.insert(prefix.size(), sortable_time_prefix(now_ms()));
  return out;
}

std::string random_reference(std::string_view prefix, std::size_t n) {
  std::string bytes = random_bytes(n);  // one CSPRNG call for the whole reference
  std::string out(prefix);
  for (unsigned char b : bytes) out.push_back(kAlphabet[b % kAlphabet.size()]);
  return out;
}

std::string base64url_encode(std::string_view bytes) {
  ensure_sodium();
  std::string out(sodium_base64_encoded_len(bytes.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.size() - 1);  // drop the terminating NUL
  return out;
}

namespace {
bool decode(std::string_view text, std::string& out, int variant) {
  ensure_sodium();
  out.assign(text.size(), '\0');
  std::size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(), nullptr,
                        &len, nullptr, variant) != 0)
    return false;
  out.resize(len);
  return true;
}
}  // namespace

bool base64url_decode(std::string_view text, std::string& out) {
  return decode(text, out, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

std::string base64_encode(std::string_view bytes) {
  ensure_sodium();
  std::string out(sodium_base64_encoded_len(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);
  return out;
}

bool base64_decode(std::string_view text, std::string& out) {
  return decode(text, out, sodium_base64_VARIANT_ORIGINAL);
}

std::string hex_encode(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xF]);
  }
  return out;
}

}  // namespace sika
