#include "catalog/store.hpp"

#include <cmath>
#include <regex>

#include "catalog/fees.hpp"
#include "core/json.hpp"
#include "core/reason.hpp"
#include "store/read.hpp"

namespace sika::catalog {

namespace bj = boost::json;
using json::FieldErrors;
using store::Conn;
using store::Row;
using store::Value;

std::string_view to_string(Kind kind) {
  switch (kind) {
    case Kind::country: return "country";
    case Kind::provider: return "provider";
    case Kind::service: return "service";
    case Kind::pricing_rule: return "pricing_rule";
  }
  return "?";
}

std::string_view to_string(Change change) {
  switch (change) {
    case Change::created: return "created";
    case Change::updated: return "updated";
    case Change::unchanged: return "unchanged";
  }
  return "?";
}

// ---- rows ------------------------------------------------------------------------------------

namespace {

constexpr std::string_view kCountrySelect =
    "SELECT id, code, alpha2, name_fr, name_en, dialling_code, currency, msisdn_length, msisdn_pattern, active "
    "FROM catalog_countries";
constexpr std::string_view kProviderSelect = "SELECT id, code, name, connector, active FROM catalog_providers";
constexpr std::string_view kServiceSelect =
    "SELECT id, code, name, provider_id, country_id, currency, kind, needs_otp, msisdn_pattern, min_amount, "
    "max_amount, active, otp_helper FROM catalog_services";
constexpr std::string_view kRuleSelect =
    "SELECT id, code, country_id, operation, user_tier, min_amount, max_amount, fee_type, fee_units, reward_value, "
    "sponsor_reward_value, incoming_service_id, outgoing_service_id, active FROM catalog_pricing_rules";

Country country_from(const Row& r) {
  Country c;
  c.id = r.i64(0);
  c.code = r.str(1);
  c.alpha2 = r.str(2);
  c.name_fr = r.str(3);
  c.name_en = r.str(4);
  c.dialling_code = r.str(5);
  c.currency = r.str(6);
  c.msisdn_length = r.i64(7);
  c.msisdn_pattern = r.str(8);
  c.active = r.boolean(9);
  return c;
}

Provider provider_from(const Row& r) {
  Provider p;
  p.id = r.i64(0);
  p.code = r.str(1);
  p.name = r.str(2);
  p.connector = r.str(3);
  p.active = r.boolean(4);
  return p;
}

PaymentService service_from(const Row& r) {
  PaymentService s;
  s.id = r.i64(0);
  s.code = r.str(1);
  s.name = r.str(2);
  s.provider_id = r.i64(3);
  s.country_id = r.i64(4);
  s.currency = r.str(5);
  s.kind = parse_service_kind(r.str(6)).value_or(ServiceKind::mobile_money);
  s.needs_otp = r.boolean(7);
  s.msisdn_pattern = r.str(8);
  s.min_amount = r.opt_i64(9);
  s.max_amount = r.opt_i64(10);
  s.active = r.boolean(11);
  s.otp_helper = r.str(12);
  return s;
}

PricingRule rule_from(const Row& r) {
  PricingRule p;
  p.id = r.i64(0);
  p.code = r.str(1);
  p.country_id = r.i64(2);
  p.operation = parse_operation(r.str(3)).value_or(Operation::collection);
  p.user_tier = r.i64(4);
  p.min_amount = r.opt_i64(5);
  p.max_amount = r.opt_i64(6);
  p.fee_type = parse_fee_type(r.str(7)).value_or(FeeType::fixed);
  p.fee_units = r.i64(8);
  p.reward_value = r.opt_f64(9);
  p.sponsor_reward_value = r.opt_f64(10);
  p.incoming_service_id = r.opt_i64(11);
  p.outgoing_service_id = r.opt_i64(12);
  p.active = r.boolean(13);
  return p;
}

template <class T>
Result<std::vector<T>> select_all(Conn& conn, std::string_view select, T (*from)(const Row&)) {
  return store::read_all(conn, std::string(select) + " ORDER BY id", {}, from);
}

template <class T>
Result<std::optional<T>> select_one(Conn& conn, std::string_view select, std::string_view where, const store::Params& p,
                                    T (*from)(const Row&)) {
  return store::read_one(conn, std::string(select) + " WHERE " + std::string(where), p, from);
}

Value opt_value(const std::optional<std::int64_t>& v) { return v ? Value(*v) : Value(nullptr); }
Value opt_value(const std::optional<double>& v) { return v ? Value(*v) : Value(nullptr); }
Value flag(bool b) { return Value(std::int64_t{b ? 1 : 0}); }

}  // namespace

Result<std::int64_t> read_version(Conn& conn) {
  SIKA_ASSIGN_OR_RETURN(std::optional<Row> row, conn.query_one("SELECT version FROM catalog_version WHERE id = 1"));
  if (!row) return internal_error("catalog_version row is missing");
  return row->i64(0);
}

Status bump_version(Conn& conn, std::int64_t now_ms) {
  SIKA_ASSIGN_OR_RETURN(
      std::int64_t n,
      conn.exec("UPDATE catalog_version SET version = version + 1, updated_at = ? WHERE id = 1", {Value(now_ms)}));
  if (n != 1) return internal_error("catalog_version row is missing");
  return {};
}

Result<std::shared_ptr<const Catalog>> load_catalog(Conn& conn) {
  SIKA_ASSIGN_OR_RETURN(std::int64_t version, read_version(conn));
  SIKA_ASSIGN_OR_RETURN(auto countries, select_all<Country>(conn, kCountrySelect, &country_from));
  SIKA_ASSIGN_OR_RETURN(auto providers, select_all<Provider>(conn, kProviderSelect, &provider_from));
  SIKA_ASSIGN_OR_RETURN(auto services, select_all<PaymentService>(conn, kServiceSelect, &service_from));
  SIKA_ASSIGN_OR_RETURN(auto rules, select_all<PricingRule>(conn, kRuleSelect, &rule_from));
  return std::shared_ptr<const Catalog>(std::make_shared<const Catalog>(
      version, std::move(countries), std::move(providers), std::move(services), std::move(rules)));
}

// ---- records -> entries ----------------------------------------------------------------------

namespace {

const std::regex kAlpha3("[A-Z]{3}");
const std::regex kAlpha2("[A-Z]{2}");
const std::regex kDialling("\\+[1-9][0-9]{0,3}");
const std::regex kProviderCode("[A-Z][A-Z0-9_]{1,31}");
const std::regex kServiceCode("[A-Z][A-Z0-9_]{1,63}");
const std::regex kRuleCode("[A-Z0-9][A-Z0-9_-]{0,63}");
const std::regex kConnector("[a-z][a-z0-9_]{0,31}");

// Reads the fields of one record into an entry, recording each problem by field name.
class Reader {
 public:
  Reader(const bj::object& o, FieldErrors& errors) : o_(o), errors_(errors) {}

  bool has(std::string_view key) const { return o_.contains(key); }
  bool is_null(std::string_view key) const {
    auto it = o_.find(key);
    return it != o_.end() && it->value().is_null();
  }
  // Records "unknown field" for keys outside `known` ("id" is always allowed and ignored).
  void only(std::initializer_list<std::string_view> known) {
    for (const auto& kv : o_) {
      std::string_view k = kv.key();
      if (k == "id") continue;
      if (std::find(known.begin(), known.end(), k) == known.end()) errors_.add(k, Reason::unknown_field_short);
    }
  }
  void require(std::initializer_list<std::string_view> keys) {
    for (std::string_view k : keys)
      if (!has(k) || is_null(k)) errors_.add(k, Reason::required);
  }
  // A string field: sets `out` when present and valid.
  void text(std::string_view key, std::string& out, const std::regex* shape = nullptr,
            Reason shape_reason = Reason::invalid, std::size_t max_len = 200, bool allow_empty = false) {
    auto it = o_.find(key);
    if (it == o_.end()) return;
    if (!it->value().is_string()) return errors_.add(key, Reason::not_string);
    std::string_view v = it->value().get_string();
    if (v.empty() && !allow_empty) return errors_.add(key, Reason::not_empty);
    if (v.size() > max_len) return errors_.add(key, Reason::too_long);
    if (shape && !std::regex_match(v.begin(), v.end(), *shape)) return errors_.add(key, shape_reason);
    out = std::string(v);
  }
  void boolean(std::string_view key, bool& out) {
    auto it = o_.find(key);
    if (it == o_.end()) return;
    if (!it->value().is_bool()) return errors_.add(key, Reason::not_boolean);
    out = it->value().get_bool();
  }
  void integer(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max) {
    std::optional<std::int64_t> v = out;
    opt_integer(key, v, min, max, false);
    if (v) out = *v;
  }
  void opt_integer(std::string_view key, std::optional<std::int64_t>& out, std::int64_t min, std::int64_t max,
                   bool nullable = true) {
    auto it = o_.find(key);
    if (it == o_.end()) return;
    const bj::value& v = it->value();
    if (v.is_null()) {
      if (!nullable) return errors_.add(key, Reason::not_null);
      out.reset();
      return;
    }
    std::int64_t n;
    if (v.is_int64()) {
      n = v.get_int64();
    } else if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
      n = static_cast<std::int64_t>(v.get_uint64());
    } else {
      return errors_.add(key, Reason::not_integer);
    }
    if (n < min || n > max)
      return errors_.add(key, Problem(Reason::between, {{"min", std::to_string(min)}, {"max", std::to_string(max)}}));
    out = n;
  }
  void opt_number(std::string_view key, std::optional<double>& out) {
    auto it = o_.find(key);
    if (it == o_.end()) return;
    const bj::value& v = it->value();
    if (v.is_null()) return out.reset();
    double d;
    if (v.is_int64())
      d = static_cast<double>(v.get_int64());
    else if (v.is_uint64())
      d = static_cast<double>(v.get_uint64());
    else if (v.is_double())
      d = v.get_double();
    else
      return errors_.add(key, Reason::number_or_null);
    if (!std::isfinite(d) || d < 0) return errors_.add(key, Reason::number_not_negative);
    out = d;
  }
  // A reference by code: present string, null (when nullable) or absent.
  enum class Ref { absent, null, code };
  Ref reference(std::string_view key, std::string& code, bool nullable) {
    auto it = o_.find(key);
    if (it == o_.end()) return Ref::absent;
    if (it->value().is_null()) {
      if (!nullable) errors_.add(key, Reason::not_null);
      return Ref::null;
    }
    if (!it->value().is_string() || it->value().get_string().empty()) {
      errors_.add(key, nullable ? Reason::code_or_null : Reason::a_code);
      return Ref::absent;
    }
    code = std::string(it->value().get_string());
    return Ref::code;
  }
  const bj::value* raw(std::string_view key) const {
    auto it = o_.find(key);
    return it == o_.end() ? nullptr : &it->value();
  }
  FieldErrors& errors() { return errors_; }

 private:
  const bj::object& o_;
  FieldErrors& errors_;
};

void check_pattern(FieldErrors& errors, std::string_view field, const std::string& pattern) {
  if (!pattern.empty() && !compile_pattern(pattern)) errors.add(field, Reason::regular_expression);
}

// The code of a record: required, of the kind's shape.
Result<std::string> record_code(const bj::object& record, const std::regex& shape, Reason shape_reason) {
  FieldErrors errors;
  std::string code;
  Reader r(record, errors);
  r.require({"code"});
  r.text("code", code, &shape, shape_reason, 64);
  SIKA_TRY(errors.status());
  return code;
}

Error exists_error(Kind kind, const std::string& code) {
  return with_problem(conflict(), "code",
                      Problem(Reason::entry_exists, {{"kind", std::string(to_string(kind))}, {"code", code}}));
}
Error missing_error(Kind kind, std::string_view code) {
  return with_problem(not_found(), "code",
                      Problem(Reason::no_entry, {{"kind", std::string(to_string(kind))}, {"code", std::string(code)}}));
}

// Decides what a mode does with the existing entry. Returns the starting entry, or nullopt when
// the record must be left alone (create_missing over an existing entry).
template <class T>
Result<std::optional<T>> starting_point(Kind kind, Mode mode, const std::string& code,
                                        const std::optional<T>& existing) {
  if (mode == Mode::create && existing) return exists_error(kind, code);
  if (mode == Mode::update && !existing) return missing_error(kind, code);
  if (mode == Mode::create_missing && existing) return std::optional<T>();
  T base = mode == Mode::update ? *existing : T{};
  if (existing) base.id = existing->id;
  base.code = code;
  return std::optional<T>(std::move(base));
}

template <class T>
Result<Outcome> finish(Conn& conn, const std::optional<T>& existing, const T& next, std::int64_t now,
                       const std::function<Result<std::int64_t>()>& insert, const std::function<Status()>& update) {
  Outcome out;
  out.code = next.code;
  if (existing && *existing == next) {
    out.change = Change::unchanged;
    out.id = existing->id;
    return out;
  }
  if (existing) {
    SIKA_TRY(update());
    out.change = Change::updated;
    out.id = existing->id;
  } else {
    SIKA_ASSIGN_OR_RETURN(out.id, insert());
    out.change = Change::created;
  }
  SIKA_TRY(bump_version(conn, now));
  return out;
}

Result<std::int64_t> returned_id(Result<store::Rows> rows) {
  if (!rows) return rows.take_error();
  if (rows->empty()) return internal_error("insert returned no id");
  return rows->front().i64(0);
}

Result<std::optional<std::int64_t>> id_of(Conn& conn, std::string_view table, std::string_view code) {
  SIKA_ASSIGN_OR_RETURN(
      auto row, conn.query_one("SELECT id FROM " + std::string(table) + " WHERE code = ?", {std::string(code)}));
  if (!row) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(row->i64(0));
}

// ---- country ----

Result<Outcome> put_country(Conn& conn, const bj::object& record, Mode mode, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(std::string code, record_code(record, kAlpha3, Reason::alpha3_code));
  SIKA_ASSIGN_OR_RETURN(auto existing, select_one<Country>(conn, kCountrySelect, "code = ?", {code}, &country_from));
  SIKA_ASSIGN_OR_RETURN(auto start, starting_point(Kind::country, mode, code, existing));
  if (!start) return Outcome{Change::unchanged, existing->id, code};
  Country c = std::move(*start);

  FieldErrors errors;
  Reader r(record, errors);
  r.only({"code", "alpha2", "name_fr", "name_en", "dialling_code", "currency", "msisdn_length", "msisdn_pattern",
          "active"});
  if (mode != Mode::update) r.require({"alpha2", "name_fr", "name_en", "dialling_code", "currency", "msisdn_length"});
  r.text("alpha2", c.alpha2, &kAlpha2, Reason::alpha2_code);
  r.text("name_fr", c.name_fr, nullptr, Reason::invalid, 100);
  r.text("name_en", c.name_en, nullptr, Reason::invalid, 100);
  r.text("dialling_code", c.dialling_code, &kDialling, Reason::dialling_code);
  r.text("currency", c.currency, &kAlpha3, Reason::currency_iso_shape);
  r.integer("msisdn_length", c.msisdn_length, 4, 14);
  r.text("msisdn_pattern", c.msisdn_pattern, nullptr, Reason::invalid, 200, true);
  r.boolean("active", c.active);
  check_pattern(errors, "msisdn_pattern", c.msisdn_pattern);
  if (errors.empty() && c.dialling_digits().size() + static_cast<std::size_t>(c.msisdn_length) > 15)
    errors.add("msisdn_length", Reason::e164_length);
  SIKA_TRY(errors.status());

  SIKA_ASSIGN_OR_RETURN(
      auto same_alpha2,
      conn.query_one("SELECT code FROM catalog_countries WHERE alpha2 = ? AND code <> ?", {c.alpha2, c.code}));
  if (same_alpha2)
    return with_problem(conflict(), "alpha2", reason::with(Reason::alpha2_used, "country", same_alpha2->str(0)));
  if (existing && existing->currency != c.currency) {
    SIKA_ASSIGN_OR_RETURN(auto other, conn.query_one("SELECT code FROM catalog_services WHERE country_id = ? "
                                                     "AND currency <> ?",
                                                     {existing->id, c.currency}));
    if (other)
      return field_error(
          "currency", Problem(Reason::currency_in_use, {{"service", other->str(0)}, {"currency", existing->currency}}));
  }
  return finish<Country>(
      conn, existing, c, now,
      [&]() {
        return returned_id(conn.query(
            "INSERT INTO catalog_countries (code, alpha2, name_fr, name_en, dialling_code, currency, msisdn_length, "
            "msisdn_pattern, active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            {c.code, c.alpha2, c.name_fr, c.name_en, c.dialling_code, c.currency, c.msisdn_length, c.msisdn_pattern,
             flag(c.active), now, now}));
      },
      [&]() -> Status {
        SIKA_TRY(
            conn.exec("UPDATE catalog_countries SET alpha2 = ?, name_fr = ?, name_en = ?, dialling_code = ?, "
                      "currency = ?, msisdn_length = ?, msisdn_pattern = ?, active = ?, updated_at = ? "
                      "WHERE id = ?",
                      {c.alpha2, c.name_fr, c.name_en, c.dialling_code, c.currency, c.msisdn_length, c.msisdn_pattern,
                       flag(c.active), now, c.id}));
        return {};
      });
}

// ---- provider ----

Result<Outcome> put_provider(Conn& conn, const bj::object& record, Mode mode, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(std::string code, record_code(record, kProviderCode, Reason::provider_code));
  SIKA_ASSIGN_OR_RETURN(auto existing, select_one<Provider>(conn, kProviderSelect, "code = ?", {code}, &provider_from));
  SIKA_ASSIGN_OR_RETURN(auto start, starting_point(Kind::provider, mode, code, existing));
  if (!start) return Outcome{Change::unchanged, existing->id, code};
  Provider p = std::move(*start);

  FieldErrors errors;
  Reader r(record, errors);
  r.only({"code", "name", "connector", "active"});
  if (mode != Mode::update) r.require({"name", "connector"});
  r.text("name", p.name, nullptr, Reason::invalid, 100);
  r.text("connector", p.connector, &kConnector, Reason::connector_name);
  r.boolean("active", p.active);
  SIKA_TRY(errors.status());
  return finish<Provider>(
      conn, existing, p, now,
      [&]() {
        return returned_id(
            conn.query("INSERT INTO catalog_providers (code, name, connector, active, created_at, "
                       "updated_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                       {p.code, p.name, p.connector, flag(p.active), now, now}));
      },
      [&]() -> Status {
        SIKA_TRY(
            conn.exec("UPDATE catalog_providers SET name = ?, connector = ?, active = ?, updated_at = ? "
                      "WHERE id = ?",
                      {p.name, p.connector, flag(p.active), now, p.id}));
        return {};
      });
}

// ---- service ----

Result<Outcome> put_service(Conn& conn, const bj::object& record, Mode mode, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(std::string code, record_code(record, kServiceCode, Reason::service_code_shape));
  SIKA_ASSIGN_OR_RETURN(auto existing,
                        select_one<PaymentService>(conn, kServiceSelect, "code = ?", {code}, &service_from));
  SIKA_ASSIGN_OR_RETURN(auto start, starting_point(Kind::service, mode, code, existing));
  if (!start) return Outcome{Change::unchanged, existing->id, code};
  PaymentService s = std::move(*start);

  FieldErrors errors;
  Reader r(record, errors);
  r.only({"code", "name", "provider", "country", "currency", "kind", "needs_otp", "otp_helper", "msisdn_pattern",
          "min_amount", "max_amount", "active"});
  if (mode != Mode::update) r.require({"name", "provider", "country", "kind"});
  r.text("name", s.name, nullptr, Reason::invalid, 100);
  std::string kind_text, provider_code, country_code, currency;
  r.text("kind", kind_text);
  if (!kind_text.empty()) {
    if (auto k = parse_service_kind(kind_text))
      s.kind = *k;
    else
      errors.add("kind", Reason::service_kind);
  }
  r.boolean("needs_otp", s.needs_otp);
  r.text("otp_helper", s.otp_helper, nullptr, Reason::invalid, 200, true);
  r.text("msisdn_pattern", s.msisdn_pattern, nullptr, Reason::invalid, 200, true);
  check_pattern(errors, "msisdn_pattern", s.msisdn_pattern);
  r.opt_integer("min_amount", s.min_amount, 0, INT64_MAX);
  r.opt_integer("max_amount", s.max_amount, 0, INT64_MAX);
  r.boolean("active", s.active);
  r.text("currency", currency, &kAlpha3, Reason::currency_iso_shape);
  if (r.reference("provider", provider_code, false) == Reader::Ref::code) {
    SIKA_ASSIGN_OR_RETURN(auto id, id_of(conn, "catalog_providers", provider_code));
    if (!id)
      errors.add("provider", Reason::unknown_provider);
    else
      s.provider_id = *id;
  }
  if (r.reference("country", country_code, false) == Reader::Ref::code) {
    SIKA_ASSIGN_OR_RETURN(auto country,
                          select_one<Country>(conn, kCountrySelect, "code = ?", {country_code}, &country_from));
    if (!country) {
      errors.add("country", Reason::unknown_country);
    } else if (existing && existing->country_id != country->id) {
      errors.add("country", Reason::country_fixed);
    } else {
      s.country_id = country->id;
      s.currency = country->currency;  // one currency per country
    }
  }
  if (errors.empty() && !currency.empty() && currency != s.currency)
    errors.add("currency", reason::with(Reason::country_currency, "currency", s.currency));
  if (s.min_amount && s.max_amount && *s.min_amount > *s.max_amount)
    errors.add("max_amount", Reason::at_least_min_amount);
  SIKA_TRY(errors.status());
  return finish<PaymentService>(
      conn, existing, s, now,
      [&]() {
        return returned_id(
            conn.query("INSERT INTO catalog_services (code, name, provider_id, country_id, currency, kind, needs_otp, "
                       "otp_helper, msisdn_pattern, min_amount, max_amount, active, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                       {s.code, s.name, s.provider_id, s.country_id, s.currency, std::string(to_string(s.kind)),
                        flag(s.needs_otp), s.otp_helper, s.msisdn_pattern, opt_value(s.min_amount),
                        opt_value(s.max_amount), flag(s.active), now, now}));
      },
      [&]() -> Status {
        SIKA_TRY(conn.exec(
            "UPDATE catalog_services SET name = ?, provider_id = ?, currency = ?, kind = ?, "
            "needs_otp = ?, otp_helper = ?, msisdn_pattern = ?, min_amount = ?, max_amount = ?, "
            "active = ?, updated_at = ? WHERE id = ?",
            {s.name, s.provider_id, s.currency, std::string(to_string(s.kind)), flag(s.needs_otp), s.otp_helper,
             s.msisdn_pattern, opt_value(s.min_amount), opt_value(s.max_amount), flag(s.active), now, s.id}));
        return {};
      });
}

// ---- pricing rule ----

// A pricing rule's own fields from its record (no database): operation, tier, amounts, rewards,
// fee type and value, active. Problems go to `errors`.
void read_rule_fields(Reader& r, Mode mode, const std::optional<PricingRule>& existing, PricingRule& p,
                      FieldErrors& errors) {
  r.only({"code", "country", "operation", "user_tier", "min_amount", "max_amount", "fee_type", "fee_value",
          "reward_value", "sponsor_reward_value", "incoming_service", "outgoing_service", "active"});
  if (mode != Mode::update) r.require({"operation", "user_tier", "fee_type", "fee_value"});
  std::string operation, fee_type;
  r.text("operation", operation);
  if (!operation.empty()) {
    if (auto op = parse_operation(operation))
      p.operation = *op;
    else
      errors.add("operation", Reason::operation);
  }
  r.integer("user_tier", p.user_tier, 1, 1'000'000);
  r.opt_integer("min_amount", p.min_amount, 0, INT64_MAX);
  r.opt_integer("max_amount", p.max_amount, 0, INT64_MAX);
  r.opt_number("reward_value", p.reward_value);
  r.opt_number("sponsor_reward_value", p.sponsor_reward_value);
  r.boolean("active", p.active);
  r.text("fee_type", fee_type);
  bool fee_type_changed = false;
  if (!fee_type.empty()) {
    if (auto t = parse_fee_type(fee_type)) {
      fee_type_changed = existing && t != existing->fee_type;
      p.fee_type = *t;
    } else {
      errors.add("fee_type", Reason::fee_type);
    }
  }
  if (const bj::value* v = r.raw("fee_value"); v && !v->is_null()) {
    const bool fixed = p.fee_type == FeeType::fixed;
    Result<std::int64_t> units = field_error("", Reason::not_number);
    if (v->is_string())
      units = fixed ? fixed_to_units(v->get_string()) : percent_to_ppm(v->get_string());
    else if (v->is_int64())
      units = fixed ? fixed_to_units(std::to_string(v->get_int64())) : percent_to_ppm(std::to_string(v->get_int64()));
    else if (v->is_uint64())
      units = fixed ? fixed_to_units(std::to_string(v->get_uint64())) : percent_to_ppm(std::to_string(v->get_uint64()));
    else if (v->is_double())
      units = fixed ? fixed_to_units(v->get_double()) : percent_to_ppm(v->get_double());
    if (units)
      p.fee_units = *units;
    else
      errors.add_error(units.error(), "fee_value");
  } else if (fee_type_changed && mode == Mode::update) {
    errors.add("fee_value", Reason::fee_value_required);
  }
}

// The rule's country: given (never another than the rule's), kept, or the named services'.
Status resolve_rule_country(Conn& conn, Reader& r, const std::optional<PricingRule>& existing,
                            const std::optional<PaymentService>& in_service,
                            const std::optional<PaymentService>& out_service, bool named_service, PricingRule& p,
                            FieldErrors& errors) {
  std::string country_code;
  if (r.reference("country", country_code, false) == Reader::Ref::code) {
    SIKA_ASSIGN_OR_RETURN(auto country, id_of(conn, "catalog_countries", country_code));
    if (!country)
      errors.add("country", Reason::unknown_country);
    else if (existing && existing->country_id != *country)
      errors.add("country", Reason::unchangeable);
    else
      p.country_id = *country;
  } else if (existing) {
    p.country_id = existing->country_id;  // a rule never moves to another country
  } else if (!r.has("country")) {
    if (in_service)
      p.country_id = in_service->country_id;
    else if (out_service)
      p.country_id = out_service->country_id;
    else if (!named_service)
      errors.add("country", Reason::country_needed);
  }
  return {};
}

// Every named service must belong to the rule's country (its FIXED fee is in that currency).
Status check_rule_services(Conn& conn, const PricingRule& p, FieldErrors& errors) {
  for (auto [field, id] :
       {std::pair{"incoming_service", p.incoming_service_id}, std::pair{"outgoing_service", p.outgoing_service_id}}) {
    if (!id) continue;
    SIKA_ASSIGN_OR_RETURN(auto s, select_one<PaymentService>(conn, kServiceSelect, "id = ?", {*id}, &service_from));
    if (s && s->country_id != p.country_id) errors.add(field, Reason::rule_country_service);
  }
  return {};
}

Result<Outcome> put_rule(Conn& conn, const bj::object& record, Mode mode, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(std::string code, record_code(record, kRuleCode, Reason::rule_code));
  SIKA_ASSIGN_OR_RETURN(auto existing, select_one<PricingRule>(conn, kRuleSelect, "code = ?", {code}, &rule_from));
  SIKA_ASSIGN_OR_RETURN(auto start, starting_point(Kind::pricing_rule, mode, code, existing));
  if (!start) return Outcome{Change::unchanged, existing->id, code};
  PricingRule p = std::move(*start);

  FieldErrors errors;
  Reader r(record, errors);
  read_rule_fields(r, mode, existing, p, errors);

  // Services, then the country (given, or the services').
  std::optional<PaymentService> in_service, out_service;
  bool named_service = false;
  auto service_ref = [&](std::string_view field, std::optional<std::int64_t>& id,
                         std::optional<PaymentService>& found) -> Status {
    std::string ref;
    switch (r.reference(field, ref, true)) {
      case Reader::Ref::absent: break;
      case Reader::Ref::null: id.reset(); break;
      case Reader::Ref::code: {
        named_service = true;
        SIKA_ASSIGN_OR_RETURN(found,
                              select_one<PaymentService>(conn, kServiceSelect, "code = ?", {ref}, &service_from));
        if (!found)
          errors.add(field, Reason::unknown_service_key);
        else
          id = found->id;
        break;
      }
    }
    return {};
  };
  SIKA_TRY(service_ref("incoming_service", p.incoming_service_id, in_service));
  SIKA_TRY(service_ref("outgoing_service", p.outgoing_service_id, out_service));
  SIKA_TRY(resolve_rule_country(conn, r, existing, in_service, out_service, named_service, p, errors));
  if (errors.empty()) SIKA_TRY(check_rule_services(conn, p, errors));
  if (p.min_amount && p.max_amount && *p.min_amount > *p.max_amount)
    errors.add("max_amount", Reason::at_least_min_amount);
  if (p.fee_type == FeeType::percentage && p.fee_units > kMaxPpm) errors.add("fee_value", Reason::percentage);
  SIKA_TRY(errors.status());

  std::string op_text(to_string(p.operation)), type_text(to_string(p.fee_type));
  return finish<PricingRule>(
      conn, existing, p, now,
      [&]() {
        return returned_id(conn.query(
            "INSERT INTO catalog_pricing_rules (code, country_id, operation, user_tier, min_amount, max_amount, "
            "fee_type, fee_units, reward_value, sponsor_reward_value, incoming_service_id, outgoing_service_id, "
            "active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            {p.code, p.country_id, op_text, p.user_tier, opt_value(p.min_amount), opt_value(p.max_amount), type_text,
             p.fee_units, opt_value(p.reward_value), opt_value(p.sponsor_reward_value),
             opt_value(p.incoming_service_id), opt_value(p.outgoing_service_id), flag(p.active), now, now}));
      },
      [&]() -> Status {
        SIKA_TRY(conn.exec(
            "UPDATE catalog_pricing_rules SET operation = ?, user_tier = ?, min_amount = ?, max_amount = ?, "
            "fee_type = ?, fee_units = ?, reward_value = ?, sponsor_reward_value = ?, incoming_service_id = ?, "
            "outgoing_service_id = ?, active = ?, updated_at = ? WHERE id = ?",
            {op_text, p.user_tier, opt_value(p.min_amount), opt_value(p.max_amount), type_text, p.fee_units,
             opt_value(p.reward_value), opt_value(p.sponsor_reward_value), opt_value(p.incoming_service_id),
             opt_value(p.outgoing_service_id), flag(p.active), now, p.id}));
        return {};
      });
}

std::string_view table_of(Kind kind) {
  switch (kind) {
    case Kind::country: return "catalog_countries";
    case Kind::provider: return "catalog_providers";
    case Kind::service: return "catalog_services";
    case Kind::pricing_rule: return "catalog_pricing_rules";
  }
  return "";
}

}  // namespace

Result<Outcome> put(Conn& conn, Kind kind, const bj::object& record, Mode mode, std::int64_t now_ms) {
  switch (kind) {
    case Kind::country: return put_country(conn, record, mode, now_ms);
    case Kind::provider: return put_provider(conn, record, mode, now_ms);
    case Kind::service: return put_service(conn, record, mode, now_ms);
    case Kind::pricing_rule: return put_rule(conn, record, mode, now_ms);
  }
  return internal_error("unknown catalog kind");
}

Result<Outcome> set_active(Conn& conn, Kind kind, std::string_view code, bool active, std::int64_t now_ms) {
  std::string table(table_of(kind));
  SIKA_ASSIGN_OR_RETURN(auto row,
                        conn.query_one("SELECT id, active FROM " + table + " WHERE code = ?", {std::string(code)}));
  if (!row) return missing_error(kind, code);
  Outcome out{Change::unchanged, row->i64(0), std::string(code)};
  if (row->boolean(1) == active) return out;
  SIKA_TRY(
      conn.exec("UPDATE " + table + " SET active = ?, updated_at = ? WHERE id = ?", {flag(active), now_ms, out.id}));
  SIKA_TRY(bump_version(conn, now_ms));
  out.change = Change::updated;
  return out;
}

// ---- import / export -------------------------------------------------------------------------

bool ImportReport::changed() const {
  for (const Counts* c : {&countries, &providers, &services, &pricing_rules})
    if (c->created || c->updated) return true;
  return false;
}

bj::object ImportReport::to_json() const {
  auto counts = [](const Counts& c) {
    return bj::object{{"created", c.created}, {"updated", c.updated}, {"unchanged", c.unchanged}};
  };
  return bj::object{{"countries", counts(countries)},
                    {"providers", counts(providers)},
                    {"services", counts(services)},
                    {"pricing_rules", counts(pricing_rules)}};
}

namespace {
// Re-keys an error's details under a record's position: {"country": x} -> {"services[2].country": x}.
Error at_position(Error e, const std::string& where) {
  bj::object keyed;
  if (e.details.is_object()) {
    for (const auto& kv : e.details.as_object()) keyed[where + "." + std::string(kv.key())] = kv.value();
  } else {
    keyed[where] = e.details;
  }
  e.details = std::move(keyed);
  for (auto& p : e.problems) p.field = p.field.empty() ? where : where + "." + p.field;
  return e;
}
}  // namespace

Result<ImportReport> import_catalog(Conn& conn, const bj::value& document, Mode mode, std::int64_t now_ms) {
  if (mode != Mode::upsert && mode != Mode::create_missing)
    return internal_error("import runs in upsert or create_missing mode");
  if (!document.is_object()) return field_error("", Reason::catalog_not_object);
  const bj::object& doc = document.as_object();
  {
    FieldErrors errors;
    for (const auto& kv : doc) {
      std::string_view k = kv.key();
      if (k == "version") continue;  // written by export_catalog, ignored here
      if (k != "countries" && k != "providers" && k != "services" && k != "pricing_rules")
        errors.add(k, Reason::unknown_section);
      else if (!kv.value().is_array())
        errors.add(k, Reason::not_array);
    }
    SIKA_TRY(errors.status());
  }
  ImportReport report;
  struct Section {
    std::string_view name;
    Kind kind;
    ImportReport::Counts* counts;
  };
  const Section sections[] = {{"countries", Kind::country, &report.countries},
                              {"providers", Kind::provider, &report.providers},
                              {"services", Kind::service, &report.services},
                              {"pricing_rules", Kind::pricing_rule, &report.pricing_rules}};
  for (const Section& section : sections) {
    auto it = doc.find(section.name);
    if (it == doc.end()) continue;
    const bj::array& items = it->value().as_array();
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::string where = std::string(section.name) + "[" + std::to_string(i) + "]";
      if (!items[i].is_object()) return field_error(where, Reason::not_object);
      auto outcome = put(conn, section.kind, items[i].as_object(), mode, now_ms);
      if (!outcome) return at_position(outcome.take_error(), where);
      switch (outcome->change) {
        case Change::created: ++section.counts->created; break;
        case Change::updated: ++section.counts->updated; break;
        case Change::unchanged: ++section.counts->unchanged; break;
      }
    }
  }
  return report;
}

bj::object to_record(const Catalog&, const Country& c) {
  return bj::object{{"id", c.id},
                    {"code", c.code},
                    {"alpha2", c.alpha2},
                    {"name_fr", c.name_fr},
                    {"name_en", c.name_en},
                    {"dialling_code", c.dialling_code},
                    {"currency", c.currency},
                    {"msisdn_length", c.msisdn_length},
                    {"msisdn_pattern", c.msisdn_pattern},
                    {"active", c.active}};
}

bj::object to_record(const Catalog&, const Provider& p) {
  return bj::object{{"id", p.id}, {"code", p.code}, {"name", p.name}, {"connector", p.connector}, {"active", p.active}};
}

namespace {
bj::value opt_json(const std::optional<std::int64_t>& v) { return v ? bj::value(*v) : bj::value(nullptr); }
bj::value opt_json(const std::optional<double>& v) { return v ? bj::value(*v) : bj::value(nullptr); }
bj::value service_code(const Catalog& cat, const std::optional<std::int64_t>& id) {
  if (!id) return nullptr;
  const PaymentService* s = cat.service_by_id(*id);
  return s ? bj::value(s->code) : bj::value(nullptr);
}
}  // namespace

bj::object to_record(const Catalog& cat, const PaymentService& s) {
  const Provider* p = cat.provider_by_id(s.provider_id);
  const Country* c = cat.country_by_id(s.country_id);
  return bj::object{{"id", s.id},
                    {"code", s.code},
                    {"name", s.name},
                    {"provider", p ? p->code : ""},
                    {"country", c ? c->code : ""},
                    {"currency", s.currency},
                    {"kind", to_string(s.kind)},
                    {"needs_otp", s.needs_otp},
                    {"otp_helper", s.otp_helper},
                    {"msisdn_pattern", s.msisdn_pattern},
                    {"min_amount", opt_json(s.min_amount)},
                    {"max_amount", opt_json(s.max_amount)},
                    {"active", s.active}};
}

bj::object to_record(const Catalog& cat, const PricingRule& r) {
  const Country* c = cat.country_by_id(r.country_id);
  // fee_value as exact decimal text would also import; a number keeps the file natural.
  bj::value fee = r.fee_type == FeeType::fixed ? bj::value(r.fee_units) : bj::value(r.fee_value());
  return bj::object{{"id", r.id},
                    {"code", r.code},
                    {"country", c ? c->code : ""},
                    {"operation", to_string(r.operation)},
                    {"user_tier", r.user_tier},
                    {"min_amount", opt_json(r.min_amount)},
                    {"max_amount", opt_json(r.max_amount)},
                    {"fee_type", to_string(r.fee_type)},
                    {"fee_value", fee},
                    {"reward_value", opt_json(r.reward_value)},
                    {"sponsor_reward_value", opt_json(r.sponsor_reward_value)},
                    {"incoming_service", service_code(cat, r.incoming_service_id)},
                    {"outgoing_service", service_code(cat, r.outgoing_service_id)},
                    {"active", r.active}};
}

bj::object export_catalog(const Catalog& cat) {
  bj::array countries, providers, services, rules;
  for (const auto& c : cat.countries()) countries.push_back(to_record(cat, c));
  for (const auto& p : cat.providers()) providers.push_back(to_record(cat, p));
  for (const auto& s : cat.services()) services.push_back(to_record(cat, s));
  for (const auto& r : cat.rules()) rules.push_back(to_record(cat, r));
  return bj::object{{"version", cat.version()},
                    {"countries", std::move(countries)},
                    {"providers", std::move(providers)},
                    {"services", std::move(services)},
                    {"pricing_rules", std::move(rules)}};
}

}  // namespace sika::catalog
