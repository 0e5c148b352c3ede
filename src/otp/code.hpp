#pragma once
// Reading a one-time code from a request: the one reader every route that takes an `otp` uses.
//
// A code is digits, and leading zeros are part of it ("076300"). A request may carry it as a JSON
// string of digits or, as the interface types it, a non-negative JSON integer, which has lost its
// leading zeros: an integer is written in decimal and left-padded with zeros to the configured code
// length (76300 with 6-digit codes is "076300"). Anything else is refused with a 400 naming the
// field, before any attempt of the code is taken.
#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "core/json.hpp"

namespace sika::otp {

// Digits a code may have: the configured length is 4 to 8, and operators' codes are too.
inline constexpr std::size_t kMinCodeDigits = 4;
inline constexpr std::size_t kMaxCodeDigits = 8;

// The code in a form field or query value (text): nullopt and `problem` set when it is not 4 to 8
// digits. Form values are text, so no padding applies.
std::optional<std::string> code_from_text(std::string_view text, std::optional<Reason>* problem = nullptr);

// The code of JSON field `field` of `body`, for codes of `code_length` digits: nullopt when the
// field is absent or null; a string of 4 to 8 digits as it is; an integer from 0 to 99999999
// left-padded with zeros to code_length. Anything else (an empty string, other characters, a
// negative, fractional or larger number, a boolean, an object) records the problem under `field`
// in `errors` and gives nullopt.
std::optional<std::string> read_code(const boost::json::object& body, std::string_view field, int code_length,
                                     json::FieldErrors& errors);

}  // namespace sika::otp
