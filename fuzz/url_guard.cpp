// Webhook URLs a merchant registers: check_url on any text, with a resolver that answers from
// the input (so name hosts resolve to public, private or mapped addresses), and the address
// classification on the raw bytes. A URL accepted under the default policy never resolved to a
// non-public address.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "web/address_policy.hpp"
#include "webhooks/url_guard.hpp"

namespace {

// Resolves every name to the addresses chosen by the input.
class FakeResolver : public sika::webhooks::Resolver {
 public:
  explicit FakeResolver(std::vector<std::string> addresses) : addresses_(std::move(addresses)) {}
  sika::Result<std::vector<std::string>> resolve(const std::string&) override {
    called = true;
    if (addresses_.empty()) return sika::empty_data(boost::json::object{{"url", "host does not resolve"}});
    return addresses_;
  }
  bool called = false;

 private:
  std::vector<std::string> addresses_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // First byte: how many raw address bytes follow (0, 4 or 16 bytes are addresses), then the URL.
  const std::size_t address_size = data[0] % 3 == 0 ? 0 : (data[0] % 3 == 1 ? 4 : 16);
  if (size < 1 + address_size) return 0;
  std::string address(reinterpret_cast<const char*>(data + 1), address_size);
  std::string_view url(reinterpret_cast<const char*>(data + 1 + address_size), size - 1 - address_size);

  (void)sika::web::is_public_address(url);
  std::vector<std::string> addresses;
  if (!address.empty()) {
    (void)sika::web::is_public_bytes(address);
    addresses.push_back(address);
  }
  FakeResolver resolver(addresses);
  sika::webhooks::UrlPolicy strict;
  auto checked = sika::webhooks::check_url(url, strict, resolver);
  // Accepted under the default policy after resolving a name: the answer must have been public.
  if (checked && resolver.called && !sika::web::is_public_bytes(address)) std::abort();
  sika::webhooks::UrlPolicy open;
  open.allow_private_targets = true;
  (void)sika::webhooks::check_url(url, open, resolver);
  return 0;
}
