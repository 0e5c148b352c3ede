#include "identity/model.hpp"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>

#include "core/json.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "web/message.hpp"

namespace sika::identity {

namespace bj = boost::json;

bool is_known_scope(std::string_view scope) {
  for (auto s : kApiScopes)
    if (s == scope) return true;
  for (auto s : kOidcScopes)
    if (s == scope) return true;
  return false;
}

Problem unknown_scope(std::string_view scope) {
  return Problem(Reason::unknown_scope, {{"scope", std::string(scope)}});
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ' || text[pos] == ',') {
      ++pos;
      continue;
    }
    std::size_t end = text.find_first_of(" ,", pos);
    if (end == std::string_view::npos) end = text.size();
    std::string item(text.substr(pos, end - pos));
    if (!contains(out, item)) out.push_back(std::move(item));
    pos = end;
  }
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out.push_back(' ');
    out += s;
  }
  return out;
}

bool contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

std::string normalize_email(std::string_view email) {
  std::string out;
  std::size_t b = email.find_first_not_of(" \t");
  std::size_t e = email.find_last_not_of(" \t");
  if (b == std::string_view::npos) return out;
  for (char c : email.substr(b, e - b + 1))
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

namespace {

bool is_loopback_host(std::string_view host) {
  return host == "127.0.0.1" || host == "[::1]" || host == "localhost" || host.starts_with("127.");
}

// Returns "" when acceptable, else the problem.
std::optional<Problem> check_redirect_uri(std::string_view uri, bool confidential, std::string_view environment) {
  auto problem = [uri](Reason r) { return Problem(r, {{"uri", std::string(uri)}}); };
  auto u = boost::urls::parse_absolute_uri(uri);
  if (!u) return problem(Reason::redirect_absolute);
  if (u->has_fragment()) return problem(Reason::redirect_fragment);
  if (u->has_port() && !web::valid_port(u->port())) return problem(Reason::redirect_port);
  std::string scheme(u->scheme());
  if (scheme == "https")
    return u->encoded_host().empty() ? std::optional(problem(Reason::redirect_host)) : std::nullopt;
  if (scheme == "http") {
    if (u->encoded_host().empty()) return problem(Reason::redirect_host);
    if (is_loopback_host(u->encoded_host()) || environment == "sandbox") return std::nullopt;
    return problem(Reason::redirect_https_loopback);
  }
  // Private-use URI schemes of native apps (RFC 8252 §7.1): reverse domain names.
  if (!confidential && scheme.find('.') != std::string::npos) return std::nullopt;
  return problem(Reason::redirect_https);
}

Problem chars_at_most(std::size_t max) { return Problem(Reason::at_most_chars, {{"max", std::to_string(max)}}); }
Problem tier_range(Reason r) { return Problem(r, {{"min", "0"}, {"max", "100"}}); }
Problem either(std::string_view first, std::string_view second) {
  return Problem(Reason::either_of, {{"first", std::string(first)}, {"second", std::string(second)}});
}

bool valid_alpha3(std::string_view c) {
  return c.size() == 3 && std::all_of(c.begin(), c.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
}

}  // namespace

json::FieldErrors check_client_spec(ClientSpec& s) {
  json::FieldErrors errors;
  if (s.client_id.empty()) s.client_id = "sika_" + hex_encode(random_bytes(12));
  if (s.client_id.size() > 100 || !std::all_of(s.client_id.begin(), s.client_id.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
      }))
    errors.add("client_id", Reason::client_id_shape);
  if (s.name.empty()) s.name = s.client_id;
  if (s.name.size() > 200) errors.add("name", chars_at_most(200));
  if (s.environment != "sandbox" && s.environment != "prod") errors.add("environment", either("sandbox", "prod"));
  if (s.grant_types.empty()) {
    if (s.confidential)
      s.grant_types = {"client_credentials"};
    else
      s.grant_types = {"authorization_code", "refresh_token"};
    if (s.confidential && !s.redirect_uris.empty()) {
      s.grant_types.push_back("authorization_code");
      s.grant_types.push_back("refresh_token");
    }
  }
  for (const auto& g : s.grant_types) {
    if (g != "client_credentials" && g != "authorization_code" && g != "refresh_token")
      errors.add("grant_types",
                 Problem(Reason::allowed_values, {{"allowed", "client_credentials authorization_code refresh_token"}}));
    if (g == "client_credentials" && !s.confidential) errors.add("grant_types", Reason::public_client_grant);
  }
  if (s.scopes.empty()) s.scopes.assign(std::begin(kApiScopes), std::end(kApiScopes));
  for (const auto& sc : s.scopes)
    if (!is_known_scope(sc)) errors.add("scopes", unknown_scope(sc));
  bool code_flow = contains(s.grant_types, "authorization_code");
  if (code_flow && s.redirect_uris.empty())
    errors.add("redirect_uris", Problem(Reason::required_for, {{"what", "authorization_code"}}));
  for (const auto& u : s.redirect_uris)
    if (auto problem = check_redirect_uri(u, s.confidential, s.environment)) errors.add("redirect_uris", *problem);
  for (const auto& ct : s.countries)
    if (!valid_alpha3(ct)) errors.add("countries", Reason::alpha3_upper);
  if (s.user_tier < 0 || s.user_tier > 100) errors.add("user_tier", tier_range(Reason::between));
  if (s.id_token_alg != "RS256" && s.id_token_alg != "ES256") errors.add("id_token_alg", either("RS256", "ES256"));
  if (s.secret && !s.confidential) errors.add("secret", Reason::public_client_secret);
  if (s.secret && s.secret->size() < 43) errors.add("secret", Problem(Reason::at_least_chars, {{"min", "43"}}));
  return errors;
}

bool Client::redirect_uri_registered(std::string_view uri) const {
  for (const auto& r : redirect_uris)
    if (r == uri) return true;
  // RFC 8252 §7.3: loopback redirect URIs of native apps may use any port.
  auto given = boost::urls::parse_absolute_uri(uri);
  if (!given || given->scheme() != "http" || !is_loopback_host(given->encoded_host()) || given->has_fragment())
    return false;
  for (const auto& r : redirect_uris) {
    auto reg = boost::urls::parse_absolute_uri(r);
    if (!reg || reg->scheme() != "http" || !is_loopback_host(reg->encoded_host())) continue;
    if (reg->encoded_host() == given->encoded_host() && reg->encoded_path() == given->encoded_path() &&
        reg->encoded_query() == given->encoded_query() && reg->has_query() == given->has_query())
      return true;
  }
  return false;
}

json::FieldErrors check_merchant_grants(const std::vector<std::string>& countries, std::int64_t tier,
                                        const std::function<bool(std::string_view)>& enabled_country) {
  json::FieldErrors errors;
  if (countries.empty()) errors.add("countries", Reason::alpha3_at_least_one);
  for (std::size_t i = 0; i < countries.size(); ++i) {
    const std::string& ct = countries[i];
    if (!valid_alpha3(ct))
      errors.add("countries", Reason::alpha3_upper_example);
    else if (!enabled_country(ct))
      errors.add("countries", Problem(Reason::country_not_enabled, {{"country", ct}}));
    else if (std::find(countries.begin(), countries.begin() + static_cast<std::ptrdiff_t>(i), ct) !=
             countries.begin() + static_cast<std::ptrdiff_t>(i))
      errors.add("countries", Problem(Reason::given_twice, {{"value", ct}}));
  }
  if (tier < 0 || tier > 100) errors.add("tier", tier_range(Reason::integer_between));
  return errors;
}

Status validate_user(const UserSpec& spec) {
  json::FieldErrors errors;
  std::string email = normalize_email(spec.email);
  auto at = email.find('@');
  if (email.size() > 254 || at == std::string::npos || at == 0 || at + 1 >= email.size() ||
      email.find('.', at) == std::string::npos || email.find_first_of(" \t\r\n<>\"'") != std::string::npos)
    errors.add("email", Reason::email);
  if (spec.password.size() < 10) errors.add("password", Problem(Reason::at_least_chars, {{"min", "10"}}));
  if (spec.password.size() > 256) errors.add("password", chars_at_most(256));
  if (!spec.phone.empty() &&
      (spec.phone.size() > 20 || spec.phone.find_first_not_of("+0123456789") != std::string::npos))
    errors.add("phone", Reason::digits_leading_plus);
  if (spec.name.size() > 200) errors.add("name", chars_at_most(200));
  if (spec.user_tier < 0 || spec.user_tier > 100) errors.add("user_tier", tier_range(Reason::between));
  for (const auto& ct : spec.countries)
    if (!valid_alpha3(ct)) errors.add("countries", Reason::alpha3_upper);
  return errors.status();
}

}  // namespace sika::identity
