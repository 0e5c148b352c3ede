#include "web/client_address.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace sika::web {

namespace {
bool is_v4_mapped(const std::array<unsigned char, 16>& a) {
  for (int i = 0; i < 10; ++i)
    if (a[static_cast<std::size_t>(i)] != 0) return false;
  return a[10] == 0xff && a[11] == 0xff;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Splits on `sep`, ignoring separators inside double quotes.
std::vector<std::string_view> split_unquoted(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  bool quoted = false;
  std::size_t from = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') quoted = !quoted;
    if (s[i] == sep && !quoted) {
      out.push_back(trim(s.substr(from, i - from)));
      from = i + 1;
    }
  }
  out.push_back(trim(s.substr(from)));
  return out;
}

// The hops a forwarding header lists, left (farthest) to right (nearest), over all its lines.
std::vector<std::string_view> forwarded_hops(const Request& req, ForwardedHeader header) {
  std::vector<std::string_view> hops;
  std::string_view name = header == ForwardedHeader::forwarded ? "forwarded" : "x-forwarded-for";
  for (const auto& [n, value] : req.headers) {
    if (n != name) continue;
    for (std::string_view element : split_unquoted(value, ',')) {
      if (header == ForwardedHeader::x_forwarded_for) {
        hops.push_back(element);
        continue;
      }
      std::string_view for_value;  // an element without for= is an unknown hop
      for (std::string_view pair : split_unquoted(element, ';')) {
        std::size_t eq = pair.find('=');
        if (eq != std::string_view::npos && iequals(trim(pair.substr(0, eq)), "for"))
          for_value = trim(pair.substr(eq + 1));
      }
      hops.push_back(for_value);
    }
  }
  return hops;
}
}  // namespace

std::optional<std::array<unsigned char, 16>> parse_ip(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  if (!s.empty() && s.front() == '[') {
    std::size_t close = s.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return std::nullopt;
    s = s.substr(1, close - 1);
  } else if (std::count(s.begin(), s.end(), ':') == 1) {
    s = s.substr(0, s.find(':'));  // IPv4 with a port
  }
  if (std::size_t zone = s.find('%'); zone != std::string_view::npos) s = s.substr(0, zone);
  if (s.empty() || s.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string text(s);
  std::array<unsigned char, 16> out{};
  unsigned char v4[4];
  if (::inet_pton(AF_INET, text.c_str(), v4) == 1) {
    out[10] = 0xff;
    out[11] = 0xff;
    std::copy(v4, v4 + 4, out.begin() + 12);
    return out;
  }
  if (::inet_pton(AF_INET6, text.c_str(), out.data()) == 1) return out;
  return std::nullopt;
}

std::string ip_text(const std::array<unsigned char, 16>& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_v4_mapped(a))
    ::inet_ntop(AF_INET, a.data() + 12, buf, sizeof buf);
  else
    ::inet_ntop(AF_INET6, a.data(), buf, sizeof buf);
  return buf;
}

Result<TrustedProxies> TrustedProxies::parse(std::string_view list, ForwardedHeader header) {
  TrustedProxies out;
  out.header_ = header;
  std::string normalized(list);
  std::replace(normalized.begin(), normalized.end(), ',', ' ');
  std::string_view rest = normalized;
  while (!rest.empty()) {
    std::size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    std::string_view entry = rest.substr(0, rest.find_first_of(" \t"));
    rest.remove_prefix(entry.size());
    auto bad = [&] { return bad_request("bad_config", std::string(entry) + ": not an IP address or CIDR block"); };
    std::size_t slash = entry.find('/');
    std::string_view addr = entry.substr(0, slash);
    // Plain literals only: no brackets, quotes, zone or port.
    if (addr.find_first_of("[]\"%") != std::string_view::npos || std::count(addr.begin(), addr.end(), ':') == 1)
      return bad();
    auto ip = parse_ip(addr);
    if (!ip) return bad();
    bool v4 = addr.find(':') == std::string_view::npos;
    Net net{*ip, 128};
    if (slash != std::string_view::npos) {
      std::string_view len = entry.substr(slash + 1);
      int bits = -1;
      auto [p, ec] = std::from_chars(len.data(), len.data() + len.size(), bits);
      if (ec != std::errc() || p != len.data() + len.size() || bits < 0 || bits > (v4 ? 32 : 128)) return bad();
      net.bits = v4 ? bits + 96 : bits;
    }
    out.nets_.push_back(net);
  }
  return out;
}

bool TrustedProxies::contains(const std::array<unsigned char, 16>& a) const {
  for (const auto& n : nets_) {
    bool inside = true;
    for (int i = 0; 8 * i < n.bits && inside; ++i) {
      int take = std::min(8, n.bits - 8 * i);
      auto mask = static_cast<unsigned char>(0xff << (8 - take));
      auto idx = static_cast<std::size_t>(i);
      inside = (a[idx] & mask) == (n.addr[idx] & mask);
    }
    if (inside) return true;
  }
  return false;
}

bool TrustedProxies::trusts(std::string_view ip) const {
  auto a = parse_ip(ip);
  return a && contains(*a);
}

std::string TrustedProxies::client_address(std::string_view peer, const Request& req) const {
  auto peer_ip = parse_ip(peer);
  if (!peer_ip) return std::string(peer);
  std::string client = ip_text(*peer_ip);
  if (!contains(*peer_ip)) return client;
  auto hops = forwarded_hops(req, header_);
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    auto hop = parse_ip(*it);
    if (!hop) return client;  // the nearest trusted hop could not say who sent it the request
    client = ip_text(*hop);
    if (!contains(*hop)) return client;
  }
  return client;
}

}  // namespace sika::web
