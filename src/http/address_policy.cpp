#include "http/address_policy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace sika::http {

namespace {
bool in_v4(const std::array<unsigned char, 4>& a, unsigned b0, unsigned b1, unsigned b2, unsigned b3, int bits) {
  std::uint32_t addr = (std::uint32_t{a[0]} << 24) | (std::uint32_t{a[1]} << 16) | (std::uint32_t{a[2]} << 8) | a[3];
  std::uint32_t net = (b0 << 24) | (b1 << 16) | (b2 << 8) | b3;
  std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return (addr & mask) == (net & mask);
}

// True iff the first `bits` bits of `a` equal those of `prefix` (missing prefix bytes are 0).
bool in_v6(const std::array<unsigned char, 16>& a, std::initializer_list<unsigned char> prefix, int bits) {
  for (int i = 0; 8 * i < bits; ++i) {
    int take = std::min(8, bits - 8 * i);
    auto idx = static_cast<std::size_t>(i);
    unsigned char p = idx < prefix.size() ? prefix.begin()[idx] : 0;
    auto mask = static_cast<unsigned char>(0xff << (8 - take));
    if ((a[idx] & mask) != (p & mask)) return false;
  }
  return true;
}

std::array<unsigned char, 4> tail_v4(const std::array<unsigned char, 16>& a) { return {a[12], a[13], a[14], a[15]}; }
}  // namespace

bool is_public_ipv4(const std::array<unsigned char, 4>& a) {
  struct Block {
    unsigned b0, b1, b2, b3;
    int bits;
  };
  static constexpr Block kBlocked[] = {
      {0, 0, 0, 0, 8},        // "this network", 0.0.0.0
      {10, 0, 0, 0, 8},       // RFC 1918
      {100, 64, 0, 0, 10},    // CGNAT (RFC 6598)
      {127, 0, 0, 0, 8},      // loopback
      {169, 254, 0, 0, 16},   // link-local, cloud metadata 169.254.169.254
      {172, 16, 0, 0, 12},    // RFC 1918
      {192, 0, 0, 0, 24},     // IETF protocol assignments
      {192, 0, 2, 0, 24},     // TEST-NET-1
      {192, 88, 99, 0, 24},   // 6to4 relay anycast
      {192, 168, 0, 0, 16},   // RFC 1918
      {198, 18, 0, 0, 15},    // benchmarking
      {198, 51, 100, 0, 24},  // TEST-NET-2
      {203, 0, 113, 0, 24},   // TEST-NET-3
      {224, 0, 0, 0, 4},      // multicast
      {240, 0, 0, 0, 4},      // reserved, broadcast
  };
  for (const auto& b : kBlocked)
    if (in_v4(a, b.b0, b.b1, b.b2, b.b3, b.bits)) return false;
  return true;
}

bool is_public_ipv6(const std::array<unsigned char, 16>& a) {
  // ::ffff:a.b.c.d
  if (in_v6(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96)) return is_public_ipv4(tail_v4(a));
  // 64:ff9b::/96 NAT64
  if (in_v6(a, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0}, 96)) return is_public_ipv4(tail_v4(a));
  if (!in_v6(a, {0x20}, 3)) return false;                    // only global unicast 2000::/3
  if (in_v6(a, {0x20, 0x01, 0x0d, 0xb8}, 32)) return false;  // documentation
  if (in_v6(a, {0x3f, 0xff}, 20)) return false;              // documentation (RFC 9637)
  if (in_v6(a, {0x20, 0x01, 0x00, 0x00}, 32)) return false;  // Teredo
  if (in_v6(a, {0x20, 0x01, 0x00, 0x10}, 28)) return false;  // ORCHID
  if (in_v6(a, {0x20, 0x01, 0x00, 0x20}, 28)) return false;  // ORCHIDv2
  if (in_v6(a, {0x20, 0x02}, 16)) return false;              // 6to4
  return true;
}

bool is_public_address(std::string_view ip) {
  std::string s(ip);
  std::array<unsigned char, 4> v4{};
  if (inet_pton(AF_INET, s.c_str(), v4.data()) == 1) return is_public_ipv4(v4);
  std::array<unsigned char, 16> v6{};
  if (inet_pton(AF_INET6, s.c_str(), v6.data()) == 1) return is_public_ipv6(v6);
  return false;
}

}  // namespace sika::http
