#pragma once
// The outbound SSRF policy: which resolved addresses an outbound request may connect to
// when private addresses are not allowed. Plain functions, no socket: unit-testable.
#include <array>
#include <string_view>

namespace sika::http {

// Returns true iff the IPv4 address (network byte order) is public unicast: not
// 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12, 192.0.0/24, 192.0.2/24, 192.88.99/24,
// 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24, multicast 224/4, reserved 240/4
// (which includes the broadcast address).
bool is_public_ipv4(const std::array<unsigned char, 4>& a);

// Returns true iff the IPv6 address is public unicast: inside 2000::/3 and not documentation
// (2001:db8::/32, 3fff::/20), Teredo (2001::/32), ORCHID (2001:10::/28, 2001:20::/28) or
// 6to4 (2002::/16). IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::/96) addresses are judged
// by their embedded IPv4 address. Everything else (::, ::1, fe80::/10, fc00::/7, ff00::/8,
// IPv4-compatible ::a.b.c.d, ...) is refused.
bool is_public_ipv6(const std::array<unsigned char, 16>& a);

// Parses an IPv4 or IPv6 literal (no brackets, no zone id) and applies the rules above;
// false when `ip` is not a valid literal.
bool is_public_address(std::string_view ip);

}  // namespace sika::http
