#pragma once
// Why a collection ended without completing, as a customer reads it: decided from its status and
// its typed failure reason code (INSUFFICIENT_FUNDS, REJECTED_BY_CUSTOMER, TIMEOUT, ...), never
// from a message text. The customer pages (hosted checkout, the confirmation page) say it in the
// page's language through the i18n message code.
#include <string_view>

#include "payments/model.hpp"

namespace sika::payments {

enum class FailureReason {
  insufficient_funds,
  declined,
  timeout,
  invalid_account,
  invalid_otp,
  refused,
  limit_exceeded,
  operator_error,
  cancelled,
  other
};

FailureReason failure_reason(const Transaction& tx);
// The i18n message code (fr/en texts in core/i18n.cpp) of a reason: a whole sentence
// ("the payment did not go through: ...").
std::string_view failure_message_code(FailureReason reason);

}  // namespace sika::payments
