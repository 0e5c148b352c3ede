#pragma once
// Message codes that code decides on, named once: `err.is(codes::invalid_otp)` cannot be
// misspelled the way `err.code == "invalid_otp"` can.
#include "core/result.hpp"

namespace sika::codes {

inline constexpr Code bad_config{"bad_config"};
inline constexpr Code empty_data{"empty_data"};
inline constexpr Code insufficient_funds{"insufficient_funds"};
inline constexpr Code invalid_otp{"invalid_otp"};
inline constexpr Code limit_exceeded{"limit_exceeded"};
inline constexpr Code not_refundable{"not_refundable"};
inline constexpr Code otp_required{"otp_required"};
inline constexpr Code refund_in_progress{"refund_in_progress"};
inline constexpr Code settlement_conflict{"settlement_conflict"};

}  // namespace sika::codes
