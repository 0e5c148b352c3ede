#include "payments/airtel_money_wire.hpp"

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <boost/json.hpp>

#include <array>
#include <memory>

#include "core/json.hpp"
#include "core/money.hpp"
#include "core/random.hpp"

namespace sika::payments::airtel {

namespace bj = boost::json;

namespace {

constexpr std::array<Market, 14> kMarkets{{
    {"GA", "GAB", "241", "XAF", 8},
    {"CG", "COG", "242", "XAF", 9},
    {"TD", "TCD", "235", "XAF", 8},
    {"NE", "NER", "227", "XOF", 8},
    {"CD", "COD", "243", "CDF", 9},
    {"MG", "MDG", "261", "MGA", 9},
    {"UG", "UGA", "256", "UGX", 9},
    {"KE", "KEN", "254", "KES", 9},
    {"TZ", "TZA", "255", "TZS", 9},
    {"RW", "RWA", "250", "RWF", 9},
    {"ZM", "ZMB", "260", "ZMW", 9},
    {"MW", "MWI", "265", "MWK", 9},
    {"NG", "NGA", "234", "NGN", 10},
    {"SC", "SYC", "248", "SCR", 7},
}};

constexpr std::size_t kMaxReference = 64;  // characters of `reference`, Airtel's documented bound

bool is_hex(std::string_view s) { return s.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos; }

// A JSON number of major units, exact for every amount in minor units below 2^53.
bj::value major_amount(std::int64_t minor, std::string_view currency) {
  const int e = money::exponent(currency);
  if (e <= 0) return minor;
  double scale = 1;
  for (int i = 0; i < e; ++i) scale *= 10;
  return static_cast<double>(minor) / scale;
}

// `reference` at Airtel: alphanumeric, at most 64 characters (the order's reference).
std::string airtel_reference(const PaymentOrder& order) {
  std::string out;
  for (char c : order.transaction_reference)
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) out.push_back(c);
  if (out.size() < 4) out = transaction_id(order.provider_reference);
  return out.substr(0, kMaxReference);
}

std::string string_of(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  if (!v) return {};
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_int64()) return std::to_string(v->as_int64());
  return {};
}

bool one_of(std::string_view code, std::initializer_list<std::string_view> codes) {
  for (std::string_view c : codes)
    if (c == code) return true;
  return false;
}

}  // namespace

Result<Call> call_for(std::string_view operation) {
  if (operation == "COLLECTION") return Call::collection;
  if (operation == "DISBURSEMENT") return Call::disbursement;
  if (operation == "REFUND") return Call::refund;
  return bad_request("invalid_operation", bj::object{{"operation", "is not one Airtel Money carries"}});
}

const Market* market(std::string_view alpha2) {
  for (const Market& m : kMarkets)
    if (m.alpha2 == alpha2) return &m;
  return nullptr;
}

std::string transaction_id(std::string_view provider_reference) {
  std::string out;
  for (char c : provider_reference)
    if (c != '-') out.push_back(c);
  return out;
}

std::string provider_reference_of(std::string_view id) {
  if (id.size() != 32 || !is_hex(id)) return std::string(id);
  std::string s(id);
  return s.substr(0, 8) + "-" + s.substr(8, 4) + "-" + s.substr(12, 4) + "-" + s.substr(16, 4) + "-" + s.substr(20);
}

Result<std::string> national_msisdn(std::string_view international, const Market& m) {
  const bool digits = !international.empty() && international.find_first_not_of("0123456789") == std::string_view::npos;
  if (!digits || !international.starts_with(m.dialling) ||
      international.size() != m.dialling.size() + static_cast<std::size_t>(m.national_digits))
    return bad_request("invalid_msisdn", bj::object{{"customer_wallet",
                                                     "is not a mobile number of the operator's "
                                                     "country"}});
  return std::string(international.substr(m.dialling.size()));
}

std::string collection_body(const PaymentOrder& order, const Market& m, std::string_view national) {
  bj::object o;
  o["reference"] = airtel_reference(order);
  o["subscriber"] = bj::object{{"country", m.alpha2}, {"currency", order.currency}, {"msisdn", national}};
  o["transaction"] = bj::object{{"amount", major_amount(order.amount, order.currency)},
                                {"country", m.alpha2},
                                {"currency", order.currency},
                                {"id", transaction_id(order.provider_reference)}};
  return bj::serialize(o);
}

std::string disbursement_body(const PaymentOrder& order, std::string_view national, std::string_view encrypted_pin) {
  bj::object o;
  o["payee"] = bj::object{{"msisdn", national}, {"wallet_type", "NORMAL"}};
  o["reference"] = airtel_reference(order);
  o["pin"] = encrypted_pin;
  o["transaction"] = bj::object{{"amount", major_amount(order.amount, order.currency)},
                                {"id", transaction_id(order.provider_reference)},
                                {"type", "B2C"}};
  return bj::serialize(o);
}

std::string refund_body(std::string_view airtel_money_id) {
  return bj::serialize(bj::object{{"transaction", bj::object{{"airtel_money_id", airtel_money_id}}}});
}

std::string token_body(std::string_view client_id, std::string_view client_secret) {
  return bj::serialize(
      bj::object{{"client_id", client_id}, {"client_secret", client_secret}, {"grant_type", "client_credentials"}});
}

Answer read_answer(std::string_view body) {
  Answer a;
  auto o = json::parse_object(body);
  if (!o) return a;
  a.readable = true;
  if (const bj::value* s = o->if_contains("status"); s && s->is_object()) {
    const bj::object& st = s->as_object();
    if (const bj::value* ok = st.if_contains("success"); ok && ok->is_bool()) a.success = ok->as_bool();
    a.result_code = string_of(st, "result_code");
    a.response_code = string_of(st, "response_code");
    a.message = string_of(st, "message");
  }
  if (const bj::value* d = o->if_contains("data"); d && d->is_object())
    if (const bj::value* t = d->as_object().if_contains("transaction"); t && t->is_object()) {
      const bj::object& tx = t->as_object();
      a.status = string_of(tx, "status");
      a.id = string_of(tx, "id");
      a.airtel_money_id = string_of(tx, "airtel_money_id");
      a.transaction_message = string_of(tx, "message");
    }
  return a;
}

Verdict submission_verdict(Call call, int http, const Answer& a) {
  // Airtel already holds this id: ESB000041 (collections), DP00900001017 (disbursements).
  if (a.result_code == "ESB000041" || a.response_code == "DP00900001017") return Verdict::duplicate;
  if (http == 408 || http == 429 || http >= 500 || !a.readable) return Verdict::unknown;
  // Errors of the gateway or of fetching a status: the request may or may not have been taken.
  if (one_of(a.result_code, {"ESB000001", "ESB000004", "ESB000014"})) return Verdict::unknown;
  // Still processing or ambiguous: taken, the status query tells the outcome.
  if (one_of(a.response_code, {"DP00800001000", "DP00800001006", "DP00900001000", "DP00900001006", "DP00900001014"}))
    return Verdict::accepted;
  if (a.response_code == "DP00800001010" || a.response_code == "DP00900001012" || a.result_code == "ROUTER001")
    return Verdict::invalid_account;
  if (http >= 200 && http < 300 && a.success) return Verdict::accepted;
  if (call == Call::disbursement && a.response_code.starts_with("DP009")) return Verdict::refused;
  if (call != Call::disbursement && a.response_code.starts_with("DP008")) return Verdict::refused;
  // Field validation, MSISDN, country, currency, vendor configuration, PIN, headers.
  if (a.result_code.starts_with("ESB") || a.result_code.starts_with("ROUTER")) return Verdict::refused;
  if (http >= 400 && http < 500 && http != 404) return Verdict::refused;
  return Verdict::unknown;
}

bool unknown_transaction(int http, const Answer& a) {
  if (a.status == "TS" || a.status == "TF" || a.status == "TA" || a.status == "TIP") return false;
  return http == 404 || a.result_code == "ESB000045" || a.response_code == "DP00800001025" ||
         a.response_code == "DP00900001015";
}

OperatorStatus status_of(Call call, std::string_view status, std::string_view response_code,
                         std::string_view airtel_money_id) {
  OperatorStatus out;
  if (status == "TS") {
    out.state = OperatorStatus::State::succeeded;
    out.operator_reference = std::string(airtel_money_id);
  } else if (status == "TF") {
    out.state = OperatorStatus::State::failed;
    out.reason = std::string(failure_reason(call, response_code));
    out.operator_reference = std::string(airtel_money_id);
  }
  return out;  // TA (ambiguous: asked again), TIP, and every status Airtel does not document as final
}

std::string_view failure_reason(Call call, std::string_view code) {
  if (call == Call::disbursement) {
    if (code == "DP00900001003") return "LIMIT_EXCEEDED";
    if (code == "DP00900001007") return "INSUFFICIENT_FUNDS";
    if (code == "DP00900001012") return "INVALID_ACCOUNT";
    if (code == "DP00900001014") return "TIMEOUT";
    if (one_of(code, {"DP00900001004", "DP00900001009", "DP00900001010", "DP00900001011", "DP00900001013",
                      "DP00900001016", "DP00900001018"}))
      return "OPERATOR_REFUSED";
    return "OPERATOR_ERROR";
  }
  if (code == "DP00800001002") return "REJECTED_BY_CUSTOMER";
  if (code == "DP00800001003") return "LIMIT_EXCEEDED";
  if (code == "DP00800001005" || code == "DP00800001024" || code == "DP00800001029") return "TIMEOUT";
  if (code == "DP00800001007") return "INSUFFICIENT_FUNDS";
  if (code == "DP00800001010") return "INVALID_ACCOUNT";
  if (one_of(code, {"DP00800001004", "DP00800001008", "DP00800001009", "DP00800001026"})) return "OPERATOR_REFUSED";
  return "OPERATOR_ERROR";
}

Result<CallbackReport> parse_callback_body(std::string_view body) {
  auto o = json::parse_object(body);
  if (!o) return o.take_error();
  const bj::value* t = o->if_contains("transaction");
  if (!t || !t->is_object()) return bad_request("empty_data", bj::object{{"transaction", "is required"}});
  const bj::object& tx = t->as_object();
  const std::string id = string_of(tx, "id");
  if (id.empty() || id.size() > 64) return bad_request("empty_data", bj::object{{"transaction.id", "is required"}});
  CallbackReport report;
  report.provider_reference = provider_reference_of(id);
  // The callback does not say which operation it is; its status_code is TS or TF, and the reason
  // of a TF is read again from the status query before anything moves.
  report.status = status_of(Call::collection, string_of(tx, "status_code"), "", string_of(tx, "airtel_money_id"));
  return report;
}

Result<std::string> encrypt_pin(std::string_view pin, std::string_view public_key_base64) {
  auto bad = [](std::string_view why) {
    return make_error(ErrorKind::invalid, "bad_public_key", bj::object{{"public_key", why}});
  };
  std::string der;
  if (public_key_base64.empty() || !base64_decode(public_key_base64, der))
    return bad("is not base64 (the DER public key Airtel gives)");
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())),
                                                          &EVP_PKEY_free);
  if (!key || EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) return bad("is not an RSA public key");
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new(key.get(), nullptr),
                                                                  &EVP_PKEY_CTX_free);
  std::size_t size = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(pin.data());
  if (!ctx || EVP_PKEY_encrypt_init(ctx.get()) <= 0 ||
      EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_PADDING) <= 0 ||
      EVP_PKEY_encrypt(ctx.get(), nullptr, &size, in, pin.size()) <= 0)
    return bad("cannot encrypt with this key");
  std::string out(size, '\0');
  if (EVP_PKEY_encrypt(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &size, in, pin.size()) <= 0)
    return bad("cannot encrypt with this key");
  out.resize(size);
  return base64_encode(out);
}

}  // namespace sika::payments::airtel
