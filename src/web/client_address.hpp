#pragma once
// The client address of a request behind reverse proxies.
//
// Request::remote_ip is the client address every route sees; Request::peer_ip is the TCP peer.
// They differ only when the peer is a trusted proxy (the `trusted_proxies` setting): then the
// forwarding header the proxies write (X-Forwarded-For by default, or RFC 7239 Forwarded) is
// walked from right to left, past every trusted hop, and the first untrusted address is the
// client. Addresses a client wrote itself sit to the left of those its proxies appended, so a
// client can never choose its own address. A hop that is not an IP address (`unknown`, an
// obfuscated name) stops the walk: the last trusted hop is then taken as the client. Addresses
// are returned in canonical text form, IPv4-mapped IPv6 addresses as plain IPv4.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "web/message.hpp"

namespace sika::web {

enum class ForwardedHeader { x_forwarded_for, forwarded };

class TrustedProxies {
 public:
  TrustedProxies() = default;
  // Parses a list of addresses and CIDR blocks separated by commas or spaces
  // ("10.0.0.0/8, 192.0.2.7, 2001:db8::/32"); the error names the bad entry.
  static Result<TrustedProxies> parse(std::string_view list, ForwardedHeader header = ForwardedHeader::x_forwarded_for);

  bool empty() const { return nets_.empty(); }
  // Returns true iff `ip` (an address literal) is inside one of the blocks.
  bool trusts(std::string_view ip) const;
  // The client address of a request whose TCP peer is `peer` (see the rules above).
  std::string client_address(std::string_view peer, const Request& req) const;

 private:
  struct Net {
    std::array<unsigned char, 16> addr{};  // IPv4 as IPv4-mapped IPv6
    int bits = 128;
  };
  bool contains(const std::array<unsigned char, 16>& a) const;

  std::vector<Net> nets_;
  ForwardedHeader header_ = ForwardedHeader::x_forwarded_for;
};

// Parses an address literal: IPv4, IPv6, optionally in brackets, with a port or a zone id, or
// quoted (as in Forwarded). nullopt when it is not an address.
std::optional<std::array<unsigned char, 16>> parse_ip(std::string_view text);
// Canonical text of an address (IPv4-mapped as IPv4).
std::string ip_text(const std::array<unsigned char, 16>& a);

}  // namespace sika::web
