#include "checkout/model.hpp"

#include <boost/url/parse.hpp>

#include <algorithm>
#include <charconv>

#include "catalog/fees.hpp"
#include "catalog/fx.hpp"
#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "web/message.hpp"

namespace sika::checkout {

namespace bj = boost::json;

namespace {

constexpr std::size_t kMaxOrderId = 100;
constexpr std::size_t kMaxDescription = 255;
constexpr std::size_t kMaxShopName = 100;
constexpr std::size_t kMaxUrl = 2000;
constexpr std::size_t kMaxDistribution = 20;
constexpr std::size_t kMaxCustomerField = 200;

// The decimal text of a JSON number, or of a string (a form post's field), as sent ("5000", "10.5").
std::optional<std::string> number_text(const bj::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  return json::number_text(v);
}

bool printable(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7F; });
}

// A required text field: present, a string, not blank, at most `max` bytes, no control characters.
std::string text_field(const bj::object& body, std::string_view key, std::size_t max, json::FieldErrors& errors,
                       bool required = true) {
  auto v = json::get_string(body, key, errors, required);
  if (!v) return "";
  std::string s = *v;
  if (required && s.find_first_not_of(" \t") == std::string::npos)
    errors.add(key, Reason::required);
  else if (s.size() > max)
    errors.add(key, reason::at_most_chars(static_cast<std::int64_t>(max)));
  else if (!printable(s))
    errors.add(key, Reason::control_characters);
  return s;
}

Customer parse_customer(const bj::object& body, json::FieldErrors& errors) {
  Customer c;
  const bj::object* o = json::get_object(body, "customer", errors);
  if (!o) return c;
  for (const auto& [k, v] : *o) {
    const std::string field = "customer." + std::string(k);
    if (k != "name" && k != "email" && k != "phone") {
      errors.add(field, Reason::unknown_customer_field);
      continue;
    }
    if (!v.is_string() && !v.is_null()) {
      errors.add(field, Reason::not_string);
      continue;
    }
    std::string s = v.is_string() ? std::string(v.get_string()) : "";
    if (s.size() > kMaxCustomerField || !printable(s)) {
      errors.add(field, reason::with(Reason::at_most_printable, "max", std::to_string(kMaxCustomerField)));
      continue;
    }
    if (k == "email" && !s.empty() && (s.find('@') == std::string::npos || s.find(' ') != std::string::npos)) {
      errors.add(field, Reason::email);
      continue;
    }
    if (k == "phone" && s.find_first_not_of("+0123456789 ") != std::string::npos) {
      errors.add(field, Reason::phone_digits);
      continue;
    }
    (k == "name" ? c.name : k == "email" ? c.email : c.phone) = s;
  }
  return c;
}

std::vector<payments::SplitLine> parse_distribution(const bj::array& items, json::FieldErrors& errors) {
  std::vector<payments::SplitLine> lines;
  std::int64_t total = 0;
  bool rates_ok = true;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string prefix = "distribution[" + std::to_string(i) + "]";
    if (!items[i].is_object()) {
      errors.add(prefix, Reason::not_object);
      rates_ok = false;
      continue;
    }
    const bj::object& o = items[i].get_object();
    payments::SplitLine line;
    line.position = static_cast<int>(i);
    for (const auto& [k, v] : o)
      if (k != "matricule" && k != "rate" && k != "description")
        errors.add(prefix + "." + std::string(k), Reason::unknown_line_field);
    json::FieldErrors item;
    line.matricule = json::get_string(o, "matricule", item, true).value_or("");
    line.description = json::get_string(o, "description", item).value_or("");
    errors.add_all(prefix + ".", item);
    if (!item.has("matricule") && (line.matricule.empty() || line.matricule.size() > 64))
      errors.add(prefix + ".matricule", Reason::matricule);
    for (const auto& earlier : lines)
      if (!line.matricule.empty() && earlier.matricule == line.matricule)
        errors.add(prefix + ".matricule", Reason::repeated);
    line.metadata = "{}";
    const bj::value* rate = o.if_contains("rate");
    auto text = rate ? number_text(*rate) : std::nullopt;
    auto ppm = text ? catalog::decimal_to_scaled(*text, 4, false, payments::kRateWhole)
                    : Result<std::int64_t>(field_error("", Reason::required));
    if (!ppm || *ppm <= 0) {
      errors.add(prefix + ".rate", Reason::split_rate);
      rates_ok = false;
    } else {
      line.rate_ppm = *ppm;
      total += *ppm;
    }
    lines.push_back(std::move(line));
  }
  if (rates_ok && total > payments::kRateWhole) errors.add("distribution", Reason::rates_beyond_100);
  return lines;
}

// The locked quotes as the session's JSON shows them (amounts in minor units, the rate as text).
bj::array quotes_json(const std::vector<Quote>& quotes) {
  bj::array a;
  for (const auto& q : quotes)
    a.push_back(bj::object{{"currency", q.currency},
                           {"amount", q.amount},
                           {"rate", catalog::fx::ratio_text({q.numerator, q.denominator})},
                           {"quoted_at", iso8601(q.quoted_at)}});
  return a;
}

}  // namespace

std::string_view Session::status_at(std::int64_t now) const {
  if (status == kOpen && expires_at <= now) return kExpired;
  return status;
}

const Quote* Session::quote_for(std::string_view c) const {
  for (const auto& q : quotes)
    if (q.currency == c) return &q;
  return nullptr;
}

std::string quotes_text(const std::vector<Quote>& quotes) {
  bj::array a;
  for (const auto& q : quotes)
    a.push_back(bj::object{{"currency", q.currency},
                           {"numerator", q.numerator},
                           {"denominator", q.denominator},
                           {"amount", q.amount},
                           {"quoted_at", q.quoted_at}});
  return json::dump(a);
}

std::vector<Quote> quotes_of(std::string_view text) {
  std::vector<Quote> out;
  auto v = json::parse(text);
  if (!v || !v->is_array()) return out;
  for (const auto& item : v->as_array()) {
    const bj::object* o = item.if_object();
    if (!o) continue;
    auto i64 = [&](std::string_view k) {
      const bj::value* f = o->if_contains(k);
      return f && f->is_int64() ? f->get_int64() : std::int64_t{0};
    };
    const bj::value* c = o->if_contains("currency");
    Quote q{c && c->is_string() ? std::string(c->get_string()) : std::string(), i64("numerator"), i64("denominator"),
            i64("amount"), i64("quoted_at")};
    if (q.currency.empty() || q.numerator <= 0 || q.denominator <= 0 || q.amount <= 0) continue;
    out.push_back(std::move(q));
  }
  return out;
}

bj::object to_json(const Session& s, std::string_view page_url, std::int64_t now) {
  bj::array lines;
  for (const auto& l : s.distribution)
    lines.push_back(bj::object{{"matricule", l.matricule},
                               {"rate", static_cast<double>(l.rate_ppm) / 10'000.0},
                               {"description", l.description}});
  return bj::object{{"reference", s.reference},
                    {"page_url", page_url},
                    {"status", s.status_at(now)},
                    {"orderId", s.order_id},
                    {"amount", s.amount},
                    {"currency", s.currency},
                    {"description", s.description},
                    {"shopName", s.shop_name},
                    {"successUrl", s.success_url},
                    {"failureUrl", s.failure_url},
                    {"feeBearer", s.fee_bearer},
                    {"line", s.line.empty() ? bj::value(nullptr) : bj::value(s.line)},
                    {"area", s.area.empty() ? bj::value(nullptr) : bj::value(s.area)},
                    {"settlement_mode", s.settlement_mode},
                    {"distribution", std::move(lines)},
                    {"quotes", quotes_json(s.quotes)},
                    {"expires_at", iso8601(s.expires_at)},
                    {"created_at", iso8601(s.created_at)}};
}

std::string new_reference() { return "chk_" + random_token(16); }

bool valid_reference(std::string_view text) {
  return text.size() == 26 && text.starts_with("chk_") && std::all_of(text.begin() + 4, text.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
         });
}

std::string collection_uuid(std::string_view reference, std::int64_t attempt) {
  return crypto::uuid_from_name("checkout:" + std::string(reference) + ":" + std::to_string(attempt));
}

bj::object form_to_object(const bj::object& form, json::FieldErrors& errors) {
  bj::object out;
  bj::object customer;
  for (const auto& [k, v] : form) {
    std::string_view key = k;
    if (key.starts_with("customer[") && key.ends_with("]")) {
      customer[key.substr(9, key.size() - 10)] = v;
    } else if ((key == "distribution" || key == "customer") && v.is_string()) {
      if (v.get_string().empty()) continue;
      auto parsed = json::parse(v.get_string());
      if (!parsed)
        errors.add(key, Reason::json_in_form);
      else
        out[key] = std::move(parsed).value();
    } else {
      out[key] = v;
    }
  }
  if (!customer.empty() && !out.contains("customer")) out["customer"] = std::move(customer);
  return out;
}

NewSession parse_new_session(const bj::object& body, json::FieldErrors& errors) {
  static constexpr std::string_view kKnown[] = {
      "apiKey",   "amount", "currency", "orderId",         "description",  "shopName",  "successUrl", "failureUrl",
      "customer", "line",   "area",     "settlement_mode", "distribution", "feeBearer", "signature"};
  for (const auto& [k, v] : body)
    if (std::find(std::begin(kKnown), std::end(kKnown), std::string_view(k)) == std::end(kKnown))
      errors.add(k, Reason::unknown_field);
  NewSession n;
  n.api_key = json::get_string(body, "apiKey", errors, true).value_or("");
  n.currency = json::get_string(body, "currency", errors, true).value_or("");
  if (!errors.has("currency") && !money::is_currency_code(n.currency)) errors.add("currency", Reason::currency_upper);
  const bj::value* amount = body.if_contains("amount");
  if (!amount || amount->is_null() || (amount->is_string() && amount->get_string().empty())) {
    errors.add("amount", Reason::required);
  } else if (auto text = number_text(*amount); !text) {
    errors.add("amount", Reason::not_number);
  } else if (money::is_currency_code(n.currency)) {
    auto minor = money::parse_decimal(*text, n.currency);
    const int exp = money::exponent(n.currency);
    if (!minor)
      errors.add("amount",
                 exp == 0 ? reason::with(Reason::whole_number_of, "currency", n.currency)
                          : Problem(Reason::decimals_in, {{"max", std::to_string(exp)}, {"currency", n.currency}}));
    else if (*minor <= 0)
      errors.add("amount", Reason::greater_than_zero);
    else
      n.amount = *minor;
  }
  n.order_id = text_field(body, "orderId", kMaxOrderId, errors);
  n.description = text_field(body, "description", kMaxDescription, errors);
  n.shop_name = text_field(body, "shopName", kMaxShopName, errors);
  for (auto [key, target] : {std::pair{"successUrl", &n.success_url}, std::pair{"failureUrl", &n.failure_url}}) {
    *target = text_field(body, key, kMaxUrl, errors);
    if (!target->empty() && !errors.has(key))
      if (auto problem = return_url_problem(*target)) errors.add(key, *problem);
  }
  n.customer = parse_customer(body, errors);
  n.line = json::get_string(body, "line", errors).value_or("");
  if (!n.line.empty() && n.line != "up") errors.add("line", Reason::line_up);
  n.area = json::get_string(body, "area", errors).value_or("");
  std::transform(n.area.begin(), n.area.end(), n.area.begin(), [](unsigned char c) { return std::toupper(c); });
  if (!n.area.empty() && (n.area.size() < 2 || n.area.size() > 3 ||
                          !std::all_of(n.area.begin(), n.area.end(), [](char c) { return c >= 'A' && c <= 'Z'; })))
    errors.add("area", Reason::area_code);
  n.fee_bearer = json::get_string(body, "feeBearer", errors).value_or("CUSTOMER");
  if (n.fee_bearer != "CUSTOMER" && n.fee_bearer != "MERCHANT") errors.add("feeBearer", Reason::fee_bearer);
  n.settlement_mode = json::get_string(body, "settlement_mode", errors).value_or(std::string(payments::kDirect));
  if (n.settlement_mode.empty()) n.settlement_mode = std::string(payments::kDirect);
  if (n.settlement_mode != payments::kDirect && n.settlement_mode != payments::kSplit)
    errors.add("settlement_mode", Reason::settlement_mode);
  const bj::array* distribution = json::get_array(body, "distribution", errors);
  const bool split = n.settlement_mode == payments::kSplit;
  if (split && (!distribution || distribution->empty()))
    errors.add("distribution", Reason::split_needs_distribution);
  else if (!split && distribution && !distribution->empty())
    errors.add("distribution", Reason::split_only);
  else if (distribution && distribution->size() > kMaxDistribution)
    errors.add("distribution", reason::at_most_items(kMaxDistribution));
  else if (split)
    n.distribution = parse_distribution(*distribution, errors);
  n.signature = json::get_string(body, "signature", errors).value_or("");
  std::transform(n.signature.begin(), n.signature.end(), n.signature.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (!n.signature.empty() &&
      (n.signature.size() != 64 || n.signature.find_first_not_of("0123456789abcdef") != std::string::npos))
    errors.add("signature", Reason::hmac_hex);
  return n;
}

std::optional<Reason> return_url_problem(std::string_view url) {
  auto u = boost::urls::parse_absolute_uri(url);
  if (!u) return Reason::absolute_http_url;
  std::string scheme(u->scheme());
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "https" && scheme != "http") return Reason::http_or_https;
  if (!u->has_authority() || u->encoded_host().empty()) return Reason::has_host;
  if (u->has_userinfo()) return Reason::no_credentials;
  if (u->has_fragment()) return Reason::no_fragment;
  if (u->has_port() && !web::valid_port(u->port())) return Reason::invalid_port;
  return std::nullopt;
}

std::string check_return_url(std::string_view url) {
  auto problem = return_url_problem(url);
  return problem ? reason::text(*problem, i18n::Locale::en) : std::string();
}

std::string url_host(std::string_view url) {
  auto u = boost::urls::parse_absolute_uri(url);
  if (!u) return "";
  std::string host(u->encoded_host());
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  return host;
}

bool host_in_domain(std::string_view host, std::string_view domain) {
  if (domain.empty()) return false;
  if (host == domain) return true;
  return host.size() > domain.size() && host.ends_with(domain) && host[host.size() - domain.size() - 1] == '.';
}

std::string fingerprint(const NewSession& n) {
  bj::array lines;
  for (const auto& l : n.distribution)
    lines.push_back(bj::object{{"matricule", l.matricule}, {"rate_ppm", l.rate_ppm}, {"description", l.description}});
  bj::object o{{"amount", n.amount},
               {"currency", n.currency},
               {"orderId", n.order_id},
               {"description", n.description},
               {"shopName", n.shop_name},
               {"successUrl", n.success_url},
               {"failureUrl", n.failure_url},
               {"line", n.line},
               {"area", n.area},
               {"feeBearer", n.fee_bearer},
               {"settlement_mode", n.settlement_mode},
               {"distribution", std::move(lines)}};
  return hex_encode(crypto::sha256(payments::canonical_json(o)));
}

bool sets_money_fields(const NewSession& n) {
  return n.settlement_mode != payments::kDirect || !n.distribution.empty() || n.fee_bearer != "CUSTOMER";
}

std::string request_canonical(const NewSession& n) {
  std::string lines;
  for (const auto& l : n.distribution) {
    if (!lines.empty()) lines += ',';
    lines += l.matricule + ":" + std::to_string(l.rate_ppm);
  }
  return "sika-checkout-v1\norderId=" + n.order_id + "\namount=" + std::to_string(n.amount) +
         "\ncurrency=" + n.currency + "\nsettlement_mode=" + n.settlement_mode + "\ndistribution=" + lines +
         "\nfeeBearer=" + n.fee_bearer;
}

std::vector<payments::SplitLine> settlement_lines(const std::vector<payments::SplitLine>& lines,
                                                  std::string_view merchant_matricule) {
  std::vector<payments::SplitLine> out = lines;
  std::int64_t total = 0;
  for (const auto& l : lines) total += l.rate_ppm;
  if (total >= payments::kRateWhole || out.empty()) return out;
  for (auto& l : out)
    if (l.matricule == merchant_matricule) {
      l.rate_ppm += payments::kRateWhole - total;
      return out;
    }
  payments::SplitLine own;
  own.position = static_cast<int>(out.size());
  own.matricule = std::string(merchant_matricule);
  own.rate_ppm = payments::kRateWhole - total;
  own.description = "merchant's share";
  own.metadata = "{}";
  out.push_back(std::move(own));
  return out;
}

std::string service_data(const ReturnData& d) {
  bj::object o{{"transaction_reference", d.transaction_reference},
               {"reference", d.reference},
               {"invoice_reference", d.invoice_reference},
               {"provider_reference", d.provider_reference},
               {"status", d.status},
               {"success", d.status == "COMPLETED"},
               {"operation", d.operation},
               {"channel", d.channel},
               {"amount", d.amount},
               {"currency", d.currency},
               {"checkout_reference", d.checkout_reference},
               {"issued_at", d.issued_at},
               {"kid", d.kid}};
  bj::array lines;
  for (const auto& l : d.distribution)
    lines.push_back(bj::object{{"matricule", l.matricule}, {"rate", static_cast<double>(l.rate_ppm) / 10'000.0}});
  o["settlement_mode"] = d.settlement_mode;
  o["distribution"] = std::move(lines);
  o["fee_bearer"] = d.fee_bearer;
  o["fee"] = d.fee;
  o["credited_amount"] = d.credited_amount;
  o["refunded_amount"] = d.refunded_amount;
  o["refund_state"] = d.refund_state;
  if (!d.charged_currency.empty()) {
    o["charged_amount"] = d.charged_amount;
    o["charged_currency"] = d.charged_currency;
    o["rate"] = d.rate;
  }
  return json::dump(o);
}

std::string merchant_secret(std::string_view server_key, std::string_view matricule) {
  return "cks_" + base64url_encode(crypto::hmac_sha256(server_key, "checkout-secret:" + std::string(matricule)));
}

std::string merchant_secret(std::string_view server_key, std::string_view matricule, std::int64_t version,
                            std::string_view salt) {
  if (version <= 1) return merchant_secret(server_key, matricule);
  return "cks_" +
         base64url_encode(crypto::hmac_sha256(server_key, "checkout-secret:v" + std::to_string(version) + ":" +
                                                              std::string(matricule) + ":" + std::string(salt)));
}

std::string sign(std::string_view secret, std::string_view data) {
  return hex_encode(crypto::hmac_sha256(secret, data));
}

bool verify(std::string_view secret, std::string_view data, std::string_view signature) {
  return crypto::constant_time_equal(sign(secret, data), signature);
}

std::string return_url(std::string_view base, std::string_view data, std::string_view signature) {
  std::string url(base);
  const std::size_t hash = url.find('#');
  if (hash != std::string::npos) url.resize(hash);
  url += url.find('?') == std::string::npos ? '?' : '&';
  url += "service_data=" + web::percent_encode(data) + "&signature=" + std::string(signature);
  return url;
}

}  // namespace sika::checkout
