// Query strings and application/x-www-form-urlencoded bodies: parse_form and percent_decode on
// any bytes, and percent_encode -> percent_decode giving back the original text.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "web/message.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto fields = sika::web::parse_form(text)) {
    for (const auto& [k, v] : *fields) (void)sika::web::percent_encode(k + "=" + v);
  }
  (void)sika::web::percent_decode(text, true);
  (void)sika::web::percent_decode(text, false);
  if (text.find('\0') == std::string_view::npos) {
    std::string encoded = sika::web::percent_encode(text);
    for (bool plus : {false, true}) {
      auto decoded = sika::web::percent_decode(encoded, plus);
      if (!decoded || *decoded != text) std::abort();  // encoding lost or changed bytes
    }
  }
  return 0;
}
