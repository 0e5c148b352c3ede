#include "web/address_policy.hpp"

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace sika::web {

namespace {
struct Cidr4 {
  std::uint32_t base;
  int bits;
};

constexpr std::uint32_t ip4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

// IANA IPv4 special-purpose registry entries that are not globally reachable, plus multicast
// and the reserved block.
constexpr Cidr4 kBlocked4[] = {
    {ip4(0, 0, 0, 0), 8},        // "this network"
    {ip4(10, 0, 0, 0), 8},       // RFC 1918
    {ip4(100, 64, 0, 0), 10},    // CGNAT (RFC 6598)
    {ip4(127, 0, 0, 0), 8},      // loopback
    {ip4(169, 254, 0, 0), 16},   // link-local, cloud metadata (169.254.169.254)
    {ip4(172, 16, 0, 0), 12},    // RFC 1918
    {ip4(192, 0, 0, 0), 24},     // IETF protocol assignments
    {ip4(192, 0, 2, 0), 24},     // TEST-NET-1
    {ip4(192, 31, 196, 0), 24},  // AS112
    {ip4(192, 52, 193, 0), 24},  // AMT
    {ip4(192, 88, 99, 0), 24},   // 6to4 relay anycast
    {ip4(192, 168, 0, 0), 16},   // RFC 1918
    {ip4(192, 175, 48, 0), 24},  // AS112
    {ip4(198, 18, 0, 0), 15},    // benchmarking
    {ip4(198, 51, 100, 0), 24},  // TEST-NET-2
    {ip4(203, 0, 113, 0), 24},   // TEST-NET-3
    {ip4(224, 0, 0, 0), 4},      // multicast
    {ip4(240, 0, 0, 0), 4},      // reserved, broadcast
};

bool public4(std::uint32_t a) {
  for (const auto& c : kBlocked4) {
    std::uint32_t mask = ~std::uint32_t{0} << (32 - c.bits);
    if ((a & mask) == (c.base & mask)) return false;
  }
  return true;
}

std::uint32_t read4(const unsigned char* p) { return ip4(p[0], p[1], p[2], p[3]); }

bool public6(const unsigned char* b) {
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr unsigned char kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b, kMapped, 12) == 0) return public4(read4(b + 12));  // ::ffff:a.b.c.d
  if (std::memcmp(b, kNat64, 12) == 0) return public4(read4(b + 12));   // 64:ff9b::a.b.c.d
  if (b[0] == 0x20 && b[1] == 0x02) return public4(read4(b + 2));       // 6to4 2002:aabb:ccdd::/48
  // Only global unicast 2000::/3 is reachable; this refuses ::, ::1, fc00::/7, fe80::/10,
  // fec0::/10, ff00::/8, 100::/64 and the rest of the reserved space.
  if ((b[0] & 0xe0) != 0x20) return false;
  if (b[0] == 0x20 && b[1] == 0x01) {
    if (b[2] == 0x0d && b[3] == 0xb8) return false;  // 2001:db8::/32 documentation
    if (b[2] < 0x02) return false;                   // 2001::/23 protocol assignments (Teredo, ORCHID …)
  }
  if (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xf0) == 0) return false;  // 3fff::/20 documentation
  return true;
}
}  // namespace

bool is_public_ipv4(const std::array<unsigned char, 4>& a) { return public4(read4(a.data())); }

bool is_public_ipv6(const std::array<unsigned char, 16>& a) { return public6(a.data()); }

bool is_public_bytes(std::string_view raw) {
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  if (raw.size() == 4) return public4(read4(p));
  if (raw.size() == 16) return public6(p);
  return false;
}

bool is_public_address(std::string_view ip) {
  std::string s(ip);
  unsigned char buf[16];
  if (::inet_pton(AF_INET, s.c_str(), buf) == 1) return public4(read4(buf));
  if (::inet_pton(AF_INET6, s.c_str(), buf) == 1) return public6(buf);
  return false;
}

}  // namespace sika::web
