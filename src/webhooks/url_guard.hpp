#pragma once
// Server-side request forgery guard for merchant-supplied URLs. A notification URL must be
// http(s), carry no credentials or fragment, and its host must resolve only to public unicast
// addresses: loopback, RFC 1918, CGNAT, link-local (cloud metadata 169.254.169.254 included),
// IPv6 unique-local, multicast, documentation and other reserved ranges are refused (the rules
// are web/address_policy.hpp's). The outbound client repeats the address check at every
// delivery, after its own DNS resolution (DNS may change).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace sika::webhooks {

// Resolves a host name to its addresses (raw bytes). Tests inject a fake.
class Resolver {
 public:
  virtual ~Resolver() = default;
  // Returns the addresses, or an error naming the failure.
  virtual Result<std::vector<std::string>> resolve(const std::string& host) = 0;
};

// getaddrinfo (system resolver, /etc/hosts included).
class SystemResolver : public Resolver {
 public:
  Result<std::vector<std::string>> resolve(const std::string& host) override;
};

struct UrlPolicy {
  bool allow_private_targets = false;  // development and tests: skip the address check
  std::size_t max_length = 2048;
};

// Checks `url` under `policy`; on refusal returns empty_data with details {"url": problem}.
// Returns the normalized URL (scheme and host lower-cased) on success.
Result<std::string> check_url(std::string_view url, const UrlPolicy& policy, Resolver& resolver);

}  // namespace sika::webhooks
