#include "payments/refund.hpp"

#include <boost/json.hpp>

#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "payments/intent.hpp"
#include "payments/model.hpp"

namespace sika::payments {

namespace bj = boost::json;

bool is_refund_reason(std::string_view reason) {
  for (std::string_view r : kRefundReasons)
    if (r == reason) return true;
  return false;
}

const std::string_view kRefundColumns =
    "id, reference, merchant_id, transaction_id, transaction_reference, environment, refund_uuid, request_hash, "
    "provider_reference, amount, currency, status, reason, description, metadata, failure_reason, "
    "operator_reference, channel, connector, operator_state, expires_at, created_at, updated_at";

Refund refund_from_row(const store::Row& r) {
  Refund f;
  std::size_t i = 0;
  f.id = r.i64(i++);
  f.reference = r.str(i++);
  f.merchant_id = r.i64(i++);
  f.transaction_id = r.i64(i++);
  f.transaction_reference = r.str(i++);
  f.environment = r.str(i++);
  f.refund_uuid = r.str(i++);
  f.request_hash = r.str(i++);
  f.provider_reference = r.str(i++);
  f.amount = r.i64(i++);
  f.currency = r.str(i++);
  f.status = parse_refund_status(r.str(i++)).value_or(RefundStatus::failed);
  f.reason = r.str(i++);
  f.description = r.str(i++);
  f.metadata = r.str(i++);
  f.failure_reason = r.opt_str(i++);
  f.operator_reference = r.opt_str(i++);
  f.channel = r.str(i++);
  f.connector = r.str(i++);
  f.operator_state = r.opt_str(i++).value_or("");
  f.expires_at = r.i64(i++);
  f.created_at = r.i64(i++);
  f.updated_at = r.i64(i++);
  return f;
}

bj::object to_record(const Refund& r) {
  bj::object o;
  o.reserve(14);
  o["refund_reference"] = r.reference;
  o["transaction_reference"] = r.transaction_reference;
  o["refund_uuid"] = r.refund_uuid;
  o["amount"] = r.amount;
  o["currency"] = r.currency;
  o["status"] = to_string(r.status);
  o["reason"] = r.reason;
  if (r.failure_reason)
    o["failure_reason"] = *r.failure_reason;
  else
    o["failure_reason"] = nullptr;
  o["provider_reference"] = r.provider_reference;
  o["created_at"] = iso8601(r.created_at);
  o["updated_at"] = iso8601(r.updated_at);
  // Ours, beyond the contract's fields.
  o["description"] = r.description;
  if (auto md = bj::parse(r.metadata.empty() ? std::string_view("{}") : std::string_view(r.metadata)); md.is_object())
    o["metadata"] = std::move(md);
  else
    o["metadata"] = bj::object{};
  o["channel"] = r.channel;
  return o;
}

namespace {
constexpr std::size_t kMaxRefundDescription = 255;
constexpr std::size_t kMaxRefundMetadataBytes = 4096;
constexpr std::string_view kRefundOperation = "REFUND";
}  // namespace

RefundRequest parse_refund(const bj::object& body, json::FieldErrors& errors) {
  RefundRequest r;
  refuse_unknown_fields(body, {"transaction_reference", "refund_uuid", "amount", "reason", "description", "metadata"},
                        errors);
  r.transaction_reference = json::get_string(body, "transaction_reference", errors, true).value_or("");
  r.refund_uuid = json::get_string(body, "refund_uuid", errors, true).value_or("");
  r.amount = json::get_int(body, "amount", errors);
  r.reason = json::get_string(body, "reason", errors, true).value_or("");
  r.description = json::get_string(body, "description", errors).value_or("");
  const bj::object* metadata = json::get_object(body, "metadata", errors);
  r.metadata = metadata ? bj::serialize(*metadata) : "{}";
  if (!errors.has("transaction_reference") && r.transaction_reference.empty())
    errors.add("transaction_reference", Reason::required);
  if (!errors.has("refund_uuid") && !is_uuid(r.refund_uuid)) errors.add("refund_uuid", Reason::uuid);
  if (!errors.has("amount") && r.amount && *r.amount <= 0) errors.add("amount", Reason::positive_minor_units);
  if (!errors.has("reason") && !is_refund_reason(r.reason)) errors.add("reason", Reason::refund_reason);
  if (r.description.size() > kMaxRefundDescription)
    errors.add("description", reason::at_most_chars(kMaxRefundDescription));
  if (r.metadata.size() > kMaxRefundMetadataBytes)
    errors.add("metadata", reason::with(Reason::at_most_json_bytes, "max", std::to_string(kMaxRefundMetadataBytes)));
  r.fingerprint = body_fingerprint(kRefundOperation, body);
  return r;
}

std::string refund_fingerprint(const RefundRequest& r) {
  bj::object o;
  o["transaction_reference"] = r.transaction_reference;
  o["refund_uuid"] = r.refund_uuid;
  if (r.amount) o["amount"] = *r.amount;
  o["reason"] = r.reason;
  if (!r.description.empty()) o["description"] = r.description;
  if (r.metadata != "{}" && !r.metadata.empty()) o["metadata"] = bj::parse(r.metadata);
  return body_fingerprint(kRefundOperation, o);
}

}  // namespace sika::payments
