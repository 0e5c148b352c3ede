#include "webhooks/url_guard.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>
#include <cstring>

#include "core/reason.hpp"
#include "web/address_policy.hpp"
#include "web/message.hpp"

namespace sika::webhooks {

namespace {

Error refused(Problem problem) { return field_error("url", std::move(problem)); }

bool valid_host_name(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
          c == '_'))
      return false;
  return true;
}

}  // namespace

Result<std::vector<std::string>> SystemResolver::resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) return refused(Problem(Reason::host_unresolved, {{"host", host}, {"cause", ::gai_strerror(rc)}}));
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
  if (out.empty()) return refused(reason::with(Reason::host_no_address, "host", host));
  return out;
}

Result<std::string> check_url(std::string_view text, const UrlPolicy& policy, Resolver& resolver) {
  if (text.empty()) return refused(Reason::required);
  if (text.size() > policy.max_length)
    return refused(reason::with(Reason::longer_than, "max", std::to_string(policy.max_length)));
  auto parsed = boost::urls::parse_absolute_uri(text);
  if (!parsed) return refused(Reason::not_absolute_url);
  boost::urls::url u(*parsed);
  u.normalize_scheme();
  if (u.scheme() != "https" && u.scheme() != "http") return refused(Reason::http_or_https);
  if (u.has_userinfo()) return refused(Reason::no_credentials);
  if (u.has_fragment()) return refused(Reason::no_fragment);
  if (!u.has_authority() || u.encoded_host().empty()) return refused(Reason::names_host);
  if (u.has_port() && !web::valid_port(u.port())) return refused(Reason::invalid_port);
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
      if (!valid_host_name(host)) return refused(Reason::invalid_host_name);
      break;
    }
    default: return refused(Reason::unsupported_host);
  }
  if (!policy.allow_private_targets) {
    // One answer for a name that does not resolve and one that resolves to a non-public
    // address, without the address: the endpoint must not be a probe of internal DNS.
    if (addresses.empty()) {
      // Resolving also catches numeric spellings getaddrinfo accepts ("2130706433", "0x7f.1").
      auto resolved = resolver.resolve(host);
      if (!resolved) return refused(Reason::not_public_target);
      addresses = std::move(resolved).value();
    }
    for (const auto& a : addresses)
      if (!web::is_public_bytes(a)) return refused(Reason::not_public_target);
  }
  return std::string(u.buffer());
}

}  // namespace sika::webhooks
