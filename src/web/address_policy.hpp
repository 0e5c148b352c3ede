#pragma once
// The one answer to "may the server connect to this address?" for outbound requests to URLs that
// merchants supply (webhook endpoints, checks made at registration and again at every delivery).
// Plain functions, no socket: unit-testable and fuzzable.
#include <array>
#include <string_view>

namespace sika::web {

// Returns true iff the IPv4 address (network byte order) is public unicast: not in the IANA
// special-purpose ranges that are not globally reachable (0/8, 10/8, 100.64/10, 127/8,
// 169.254/16 with the cloud metadata address, 172.16/12, 192.0.0/24, 192.0.2/24, 192.31.196/24,
// 192.52.193/24, 192.88.99/24, 192.168/16, 192.175.48/24, 198.18/15, 198.51.100/24,
// 203.0.113/24), nor multicast 224/4, nor reserved 240/4 (broadcast included).
bool is_public_ipv4(const std::array<unsigned char, 4>& a);

// Returns true iff the IPv6 address is public unicast: inside 2000::/3 and not documentation
// (2001:db8::/32, 3fff::/20) nor 2001::/23 (protocol assignments: Teredo, ORCHID …).
// IPv4 carried inside IPv6 is judged as that IPv4 address: mapped (::ffff:a.b.c.d), NAT64
// (64:ff9b::/96) and 6to4 (2002:aabb:ccdd::/48). Everything else (::, ::1, fe80::/10,
// fc00::/7, ff00::/8, IPv4-compatible ::a.b.c.d …) is refused.
bool is_public_ipv6(const std::array<unsigned char, 16>& a);

// The same for 4 or 16 raw network-order bytes (as a resolver returns them); false otherwise.
bool is_public_bytes(std::string_view raw);

// Parses an IPv4 or IPv6 literal (no brackets, no zone id) and applies the rules above;
// false when `ip` is not a valid literal.
bool is_public_address(std::string_view ip);

}  // namespace sika::web
