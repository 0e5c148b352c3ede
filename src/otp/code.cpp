#include "otp/code.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "core/reason.hpp"

namespace sika::otp {

namespace {
bool all_digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

std::optional<std::string> code_from_text(std::string_view text, std::optional<Reason>* problem) {
  if (text.size() < kMinCodeDigits || text.size() > kMaxCodeDigits || !all_digits(text)) {
    if (problem) *problem = Reason::otp_shape;
    return std::nullopt;
  }
  return std::string(text);
}

std::optional<std::string> read_code(const boost::json::object& body, std::string_view field, int code_length,
                                     json::FieldErrors& errors) {
  const boost::json::value* v = body.if_contains(field);
  if (!v || v->is_null()) return std::nullopt;
  std::string digits;
  if (v->is_string()) {
    std::optional<Reason> problem;
    auto code = code_from_text(v->get_string(), &problem);
    if (!code) errors.add(field, *problem);
    return code;
  }
  if (v->is_int64() && v->get_int64() >= 0)
    digits = std::to_string(v->get_int64());
  else if (v->is_uint64())
    digits = std::to_string(v->get_uint64());
  else {
    errors.add(field, Reason::otp_shape);
    return std::nullopt;
  }
  const std::size_t length = std::clamp<std::size_t>(code_length, kMinCodeDigits, kMaxCodeDigits);
  if (digits.size() < length) digits.insert(0, length - digits.size(), '0');
  if (digits.size() > kMaxCodeDigits) {
    errors.add(field, Reason::otp_too_long);
    return std::nullopt;
  }
  return digits;
}

}  // namespace sika::otp
