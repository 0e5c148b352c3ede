#include "payments/model.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <numeric>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/time.hpp"

namespace sika::payments {

namespace bj = boost::json;

__extension__ using Int128 = __int128;

bool is_terminal(TxStatus s) { return s != TxStatus::initiated && s != TxStatus::pending; }

bool legal_move(TxStatus from, TxStatus to) {
  if (from == kWalletDebitMove.from && to == kWalletDebitMove.to) return false;
  return kTxStatus.legal(from, to);
}

bool legal_move(const Transaction& tx, TxStatus to) {
  if (to == TxStatus::refunded) return tx.operation == kCollection && legal_move(tx.status, to);
  if (tx.status == kWalletDebitMove.from && to == kWalletDebitMove.to)
    return tx.operation == kCollection && tx.channel == kChannelWallet;
  return legal_move(tx.status, to);
}

const std::string_view kTransactionColumns =
    "id, reference, merchant_id, environment, operation, transaction_uuid, request_hash, invoice_reference, "
    "provider_reference, status, channel, service_code, country, connector, customer_wallet, amount, currency, "
    "fee, required_total, confirmation_method, confirmation_url, settlement_mode, split_reference, split_status, "
    "description, metadata, needs_otp, otp_failures, failure_reason, operator_reference, submitted_at, expires_at, "
    "created_at, updated_at, customer_url, operator_state, refunded_amount, refunding_amount";

Transaction transaction_from_row(const store::Row& r) {
  Transaction t;
  std::size_t i = 0;
  t.id = r.i64(i++);
  t.reference = r.str(i++);
  t.merchant_id = r.i64(i++);
  t.environment = r.str(i++);
  t.operation = r.str(i++);
  t.transaction_uuid = r.str(i++);
  t.request_hash = r.str(i++);
  t.invoice_reference = r.str(i++);
  t.provider_reference = r.str(i++);
  t.status = parse_status(r.str(i++)).value_or(TxStatus::failed);
  t.channel = r.str(i++);
  t.service_code = r.str(i++);
  t.country = r.str(i++);
  t.connector = r.str(i++);
  t.customer_wallet = r.str(i++);
  t.amount = r.i64(i++);
  t.currency = r.str(i++);
  t.fee = r.i64(i++);
  t.required_total = r.i64(i++);
  t.confirmation_method = r.str(i++);
  t.confirmation_url = r.str(i++);
  t.settlement_mode = r.str(i++);
  t.split_reference = r.str(i++);
  t.split_status = r.str(i++);
  t.description = r.str(i++);
  t.metadata = r.str(i++);
  t.needs_otp = r.boolean(i++);
  t.otp_failures = r.i64(i++);
  t.failure_reason = r.opt_str(i++);
  t.operator_reference = r.opt_str(i++);
  t.submitted_at = r.opt_i64(i++);
  t.expires_at = r.i64(i++);
  t.created_at = r.i64(i++);
  t.updated_at = r.i64(i++);
  t.customer_url = r.opt_str(i++).value_or("");
  t.operator_state = r.opt_str(i++).value_or("");
  t.refunded_amount = r.i64(i++);
  t.refunding_amount = r.i64(i++);
  return t;
}

bj::object to_record(const Transaction& tx) {
  bj::object o;
  o.reserve(26);
  o["transaction_reference"] = tx.reference;
  o["environment"] = tx.environment;
  o["invoice_reference"] = tx.invoice_reference;
  o["provider_reference"] = tx.provider_reference;
  o["status"] = to_string(tx.status);
  o["operation"] = tx.operation;
  o["channel"] = tx.channel;
  o["amount"] = tx.amount;
  o["currency"] = tx.currency;
  o["confirmation_method"] = tx.confirmation_method;
  o["confirmation_url"] = tx.confirmation_url;
  o["fee"] = tx.fee;
  o["required_total"] = tx.required_total;
  o["settlement_mode"] = tx.settlement_mode;
  o["split_reference"] = tx.split_reference;
  o["split_status"] = tx.split_status;
  o["created_at"] = iso8601(tx.created_at);
  o["updated_at"] = iso8601(tx.updated_at);
  // Ours, beyond the spec's fields.
  o["transaction_uuid"] = tx.transaction_uuid;
  o["provider"] = tx.service_code;
  o["customer_wallet"] = tx.customer_wallet;
  o["description"] = tx.description;
  if (auto md = bj::parse(tx.metadata.empty() ? std::string_view("{}") : std::string_view(tx.metadata)); md.is_object())
    o["metadata"] = std::move(md);
  else
    o["metadata"] = bj::object{};
  if (tx.failure_reason)
    o["failure_reason"] = *tx.failure_reason;
  else
    o["failure_reason"] = nullptr;
  o["expires_at"] = iso8601(tx.expires_at);
  o["refunded_amount"] = tx.refunded_amount;
  return o;
}

bj::object event_payload(const Transaction& tx) {
  bj::object o;
  o["transaction_reference"] = tx.reference;
  o["invoice_reference"] = tx.invoice_reference;
  o["provider_reference"] = tx.provider_reference;
  o["operation"] = tx.operation;
  o["status"] = to_string(tx.status);
  o["amount"] = tx.amount;
  o["currency"] = tx.currency;
  o["updated_at"] = iso8601(tx.updated_at);
  return o;
}

std::vector<std::int64_t> allocate_split(std::int64_t amount, const std::vector<std::int64_t>& rates_ppm) {
  std::vector<std::int64_t> shares(rates_ppm.size(), 0);
  std::vector<std::int64_t> fractions(rates_ppm.size(), 0);
  std::int64_t given = 0;
  for (std::size_t i = 0; i < rates_ppm.size(); ++i) {
    // amount <= ~9.2e12 keeps amount * 1e6 within int64; use 128-bit to be safe for any amount.
    Int128 product = static_cast<Int128>(amount) * rates_ppm[i];
    shares[i] = static_cast<std::int64_t>(product / kRateWhole);
    fractions[i] = static_cast<std::int64_t>(product % kRateWhole);
    given += shares[i];
  }
  std::int64_t left = amount - given;
  std::vector<std::size_t> order(rates_ppm.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return fractions[a] > fractions[b]; });
  for (std::size_t k = 0; left > 0 && !order.empty(); k = (k + 1) % order.size(), --left) shares[order[k]] += 1;
  return shares;
}

namespace {
void canonical_into(const bj::value& v, std::string& out) {
  switch (v.kind()) {
    case bj::kind::object: {
      const auto& o = v.get_object();
      std::vector<std::pair<std::string_view, const bj::value*>> items;
      items.reserve(o.size());
      for (const auto& kv : o) items.emplace_back(kv.key(), &kv.value());
      std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out.push_back('{');
      bool first = true;
      for (const auto& [k, val] : items) {
        if (!first) out.push_back(',');
        first = false;
        out += bj::serialize(bj::value(bj::string(k)));
        out.push_back(':');
        canonical_into(*val, out);
      }
      out.push_back('}');
      break;
    }
    case bj::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        canonical_into(e, out);
      }
      out.push_back(']');
      break;
    }
    case bj::kind::double_: {
      // 80.0 and 80 are the same rate: integral doubles print as integers.
      double d = v.get_double();
      if (d == static_cast<double>(static_cast<std::int64_t>(d)) && d > -9e15 && d < 9e15)
        out += std::to_string(static_cast<std::int64_t>(d));
      else
        out += bj::serialize(v);
      break;
    }
    default: out += bj::serialize(v);
  }
}
}  // namespace

std::string canonical_json(const bj::value& v) {
  std::string out;
  canonical_into(v, out);
  return out;
}

std::string body_fingerprint(std::string_view operation, const bj::value& body) {
  return hex_encode(crypto::sha256(std::string(operation) + "\n" + canonical_json(body)));
}

}  // namespace sika::payments
