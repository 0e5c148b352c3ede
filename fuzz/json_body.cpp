// Request bodies as JSON: the strict parser every JSON route uses, then the typed field readers
// over every member (as a handler validates a body), the error details they build, and
// re-serialization.
#include <cstdint>
#include <string_view>

#include "core/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto any = sika::json::parse(text);
  if (any) (void)sika::json::dump(*any);
  auto body = sika::json::parse_object(text);
  if (!body) return 0;
  sika::json::FieldErrors errors;
  for (const auto& member : *body) {
    std::string_view key = member.key();
    (void)sika::json::get_string(*body, key, errors, true);
    (void)sika::json::get_int(*body, key, errors);
    (void)sika::json::get_number(*body, key, errors);
    (void)sika::json::get_bool(*body, key, errors);
    if (const auto* o = sika::json::get_object(*body, key, errors)) (void)sika::json::dump(*o);
    if (const auto* a = sika::json::get_array(*body, key, errors)) (void)a->size();
  }
  (void)sika::json::get_string(*body, "missing", errors, true);
  (void)errors.status();
  (void)sika::json::dump(*body);
  return 0;
}
