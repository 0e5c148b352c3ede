#include "payments/failure.hpp"

namespace sika::payments {

FailureReason failure_reason(const Transaction& tx) {
  const std::string_view code = tx.failure_reason ? std::string_view(*tx.failure_reason) : std::string_view();
  if (code == "INSUFFICIENT_FUNDS") return FailureReason::insufficient_funds;
  if (code == "REJECTED_BY_CUSTOMER" || code == "DECLINED_BY_CUSTOMER") return FailureReason::declined;
  if (code == "TIMEOUT" || code == "EXPIRED" || tx.status == TxStatus::expired) return FailureReason::timeout;
  if (code == "INVALID_ACCOUNT") return FailureReason::invalid_account;
  if (code == "INVALID_OTP") return FailureReason::invalid_otp;
  if (code == "OPERATOR_REFUSED") return FailureReason::refused;
  if (code == "LIMIT_EXCEEDED") return FailureReason::limit_exceeded;
  if (code == "OPERATOR_ERROR") return FailureReason::operator_error;
  if (tx.status == TxStatus::cancelled) return FailureReason::cancelled;
  return FailureReason::other;
}

std::string_view failure_message_code(FailureReason reason) {
  switch (reason) {
    case FailureReason::insufficient_funds: return "checkout_failed_insufficient_funds";
    case FailureReason::declined: return "checkout_failed_declined";
    case FailureReason::timeout: return "checkout_failed_timeout";
    case FailureReason::invalid_account: return "checkout_failed_invalid_account";
    case FailureReason::invalid_otp: return "checkout_failed_invalid_otp";
    case FailureReason::refused: return "checkout_failed_refused";
    case FailureReason::limit_exceeded: return "checkout_failed_limit";
    case FailureReason::operator_error: return "checkout_failed_operator_error";
    case FailureReason::cancelled: return "checkout_failed_cancelled";
    case FailureReason::other: break;
  }
  return "checkout_failed";
}

}  // namespace sika::payments
