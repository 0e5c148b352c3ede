#include "webhooks/url_guard.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>
#include <cstring>

#include "web/message.hpp"

namespace sika::webhooks {

namespace {

struct Cidr4 {
  std::uint32_t base;
  int bits;
};

constexpr std::uint32_t ip4(int a, int b, int c, int d) {
  return (static_cast<std::uint32_t>(a) << 24) | (static_cast<std::uint32_t>(b) << 16) |
         (static_cast<std::uint32_t>(c) << 8) | static_cast<std::uint32_t>(d);
}

// IANA IPv4 special-purpose registry entries that are not globally reachable, plus multicast.
constexpr std::array<Cidr4, 19> kBlocked4 = {{
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
    {ip4(255, 255, 255, 255), 32},
}};

bool public4(std::uint32_t a) {
  for (const auto& c : kBlocked4) {
    std::uint32_t mask = c.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - c.bits);
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
    if (b[2] < 0x02) return false;                   // 2001::/23 protocol assignments (Teredo, ORCHID...)
  }
  if (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xf0) == 0) return false;  // 3fff::/20 documentation
  return true;
}

Error refused(std::string problem) {
  boost::json::object details;
  details["url"] = std::move(problem);
  return empty_data(std::move(details));
}

bool valid_host_name(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
          c == '_'))
      return false;
  return true;
}

}  // namespace

bool is_public_address(std::string_view raw) {
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  if (raw.size() == 4) return public4(read4(p));
  if (raw.size() == 16) return public6(p);
  return false;
}

bool is_public_ip(std::string_view text) {
  std::string s(text);
  unsigned char buf[16];
  if (::inet_pton(AF_INET, s.c_str(), buf) == 1)
    return is_public_address(std::string_view(reinterpret_cast<char*>(buf), 4));
  if (::inet_pton(AF_INET6, s.c_str(), buf) == 1)
    return is_public_address(std::string_view(reinterpret_cast<char*>(buf), 16));
  return false;
}

Result<std::vector<std::string>> SystemResolver::resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) return refused("host '" + host + "' does not resolve (" + ::gai_strerror(rc) + ")");
  std::vector<std::string> out;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      const auto* sa = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
      out.emplace_back(reinterpret_cast<const char*>(&sa->sin_addr), 4);
    } else if (ai->ai_family == AF_INET6) {
      const auto* sa = reinterpret_cast<const sockaddr_in6*>(ai->ai_addr);
      out.emplace_back(reinterpret_cast<const char*>(&sa->sin6_addr), 16);
    }
  }
  ::freeaddrinfo(res);
  if (out.empty()) return refused("host '" + host + "' has no address");
  return out;
}

Result<std::string> check_url(std::string_view text, const UrlPolicy& policy, Resolver& resolver) {
  if (text.empty()) return refused("is required");
  if (text.size() > policy.max_length)
    return refused("is longer than " + std::to_string(policy.max_length) + " characters");
  auto parsed = boost::urls::parse_absolute_uri(text);
  if (!parsed) return refused("is not an absolute URL");
  boost::urls::url u(*parsed);
  u.normalize_scheme();
  if (u.scheme() != "https" && u.scheme() != "http") return refused("must use http or https");
  if (u.has_userinfo()) return refused("must not contain credentials");
  if (u.has_fragment()) return refused("must not contain a fragment");
  if (!u.has_authority() || u.encoded_host().empty()) return refused("must name a host");
  if (u.has_port() && !web::valid_port(u.port())) return refused("has an invalid port");
  u.normalize_authority();

  std::vector<std::string> addresses;
  std::string host;
  switch (u.host_type()) {
    case boost::urls::host_type::ipv4: {
      auto a = u.host_ipv4_address().to_bytes();
      addresses.emplace_back(reinterpret_cast<const char*>(a.data()), a.size());
      host = u.host_ipv4_address().to_string();
      break;
    }
    case boost::urls::host_type::ipv6: {
      auto a = u.host_ipv6_address().to_bytes();
      addresses.emplace_back(reinterpret_cast<const char*>(a.data()), a.size());
      host = u.host_ipv6_address().to_string();
      break;
    }
    case boost::urls::host_type::name: {
      host = u.host();  // percent-decoded
      if (!valid_host_name(host)) return refused("has an invalid host name");
      break;
    }
    default: return refused("has an unsupported host");
  }
  if (!policy.allow_private_targets) {
    // One answer for a name that does not resolve and one that resolves to a non-public
    // address, without the address: the endpoint must not be a probe of internal DNS.
    static constexpr std::string_view kNotAllowed =
        "is not an allowed target (only public internet hosts are accepted)";
    if (addresses.empty()) {
      // Resolving also catches numeric spellings getaddrinfo accepts ("2130706433", "0x7f.1").
      auto resolved = resolver.resolve(host);
      if (!resolved) return refused(std::string(kNotAllowed));
      addresses = std::move(resolved).value();
    }
    for (const auto& a : addresses)
      if (!is_public_address(a)) return refused(std::string(kNotAllowed));
  }
  return std::string(u.buffer());
}

}  // namespace sika::webhooks
