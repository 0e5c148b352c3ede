// Operators' pages: merchants (create, enable/disable, countries and tier, their OAuth applications
// and members), the ledger check and the system's health (job queues, webhook failures). Operators
// see every merchant; the router answers 404 to anyone else on these routes.
#include <boost/json.hpp>

#include <algorithm>

#include "catalog/fx.hpp"
#include "catalog/model.hpp"
#include "catalog/service.hpp"
#include "core/json.hpp"
#include "core/money.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/store.hpp"
#include "dashboard/texts.hpp"
#include "identity/model.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "merchant/merchant.hpp"
#include "payments/ledger.hpp"
#include "store/jobs.hpp"
#include "web/envelope.hpp"
#include "webhooks/registry.hpp"
#include "webhooks/service.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

namespace {
std::string yes_no(const Service::Ctx& c, bool v) {
  return std::string(v ? say(c.locale, "yes") : say(c.locale, "no"));
}
}  // namespace

web::Response Service::merchants(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  std::vector<merchant::Merchant> all;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(all, merchant::list(conn));
    return {};
  });
  if (!read) return error_page(req, read.error());
  std::string body = "<div class=\"scroll\"><table id=\"merchants\"><thead><tr><th>" +
                     std::string(say(c->locale, "matricule")) + "</th><th>" + std::string(say(c->locale, "name")) +
                     "</th><th>" + std::string(say(c->locale, "countries")) + "</th><th>" +
                     std::string(say(c->locale, "tier")) + "</th><th>" + std::string(say(c->locale, "environment")) +
                     "</th><th>" + std::string(say(c->locale, "active")) + "</th></tr></thead><tbody>";
  for (const auto& m : all)
    body += "<tr><td><a href=\"" + escape(path("/operator/merchants/" + web::percent_encode(m.matricule))) + "\">" +
            escape(m.matricule) + "</a></td><td>" + escape(m.name) + "</td><td>" +
            escape(merchant::join_countries(m.countries)) + "</td><td>" + std::to_string(m.tier) + "</td><td>" +
            escape(m.environment) + "</td><td>" + yes_no(*c, m.active) + "</td></tr>";
  body += "</tbody></table></div>";
  body += "<form class=\"card\" method=\"post\" action=\"" + escape(path("/operator/merchants")) + "\"><h2>" +
          std::string(say(c->locale, "new_merchant")) + "</h2>" + c->csrf_field() + "<label for=\"m-name\">" +
          std::string(say(c->locale, "name")) +
          "</label><input id=\"m-name\" name=\"name\" required maxlength=\"120\"><label for=\"m-email\">E-mail</label>"
          "<input id=\"m-email\" name=\"email\" type=\"email\"><label for=\"m-countries\">" +
          std::string(say(c->locale, "countries_iso_alpha_3_codes")) +
          "</label><input id=\"m-countries\" name=\"countries\" required value=\"CMR\"><label for=\"m-env\">" +
          std::string(say(c->locale, "environment")) +
          "</label><select id=\"m-env\" name=\"environment\"><option>sandbox</option><option>prod</option></select>"
          "<button>" +
          std::string(say(c->locale, "create")) + "</button></form>";
  return page(req, *c, std::string(say(c->locale, "merchants")), body);
}

web::Response Service::merchant_create(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  merchant::NewMerchant m;
  m.name = web::field_value(*fields, "name");
  m.email = web::field_value(*fields, "email");
  m.countries = merchant::split_countries(web::field_value(*fields, "countries"));
  m.environment = web::field_value(*fields, "environment");
  json::FieldErrors errors;
  if (m.name.empty() || m.name.size() > 120)
    errors.add("name", reason::with(Reason::required_at_most_chars, "max", "120"));
  if (m.countries.empty()) errors.add("countries", Reason::alpha3_at_least_one);
  for (const auto& code : m.countries)
    if (code.size() != 3 || !std::all_of(code.begin(), code.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; }))
      errors.add("countries", Reason::alpha3_capitals);
  if (m.environment != "sandbox" && m.environment != "prod")
    errors.add("environment", Problem(Reason::either_of, {{"first", "sandbox"}, {"second", "prod"}}));
  if (auto st = errors.status(); !st) return error_page(req, st.error());
  merchant::Merchant created;
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(created, merchant::create(conn, m, now()));
    AuditEntry e{0,
                 now(),
                 c->session.row.user_id,
                 c->session.row.email,
                 created.id,
                 "merchant.create",
                 created.matricule,
                 json::dump(bj::object{{"name", created.name}})};
    return append_audit(conn, e);
  });
  if (!wrote) return error_page(req, wrote.error());
  return see_other("/operator/merchants/" + web::percent_encode(created.matricule));
}

web::Response Service::merchant_page(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  return merchant_view(req, *c, req.path_param("matricule"), nullptr, nullptr);
}

namespace {
// The problem the grants form's refusal names for `name`, or "".
std::string problem_of(const Error* refused, std::string_view name) {
  if (!refused || !refused->details.is_object()) return {};
  const auto& d = refused->details.as_object();
  auto it = d.find(name);
  return it != d.end() && it->value().is_string() ? std::string(it->value().as_string()) : std::string();
}

// A labelled input of the grants form, its problem (if any) right below it and tied to it.
std::string grants_input(std::string_view name, std::string_view label, std::string_view attributes,
                         const std::string& value, const std::string& problem) {
  const std::string id = "grants-" + std::string(name);
  std::string h = "<label for=\"" + id + "\">" + std::string(label) + "</label><input id=\"" + id + "\" name=\"" +
                  std::string(name) + "\" " + std::string(attributes) + " value=\"" + escape(value) + "\"";
  if (!problem.empty()) h += " aria-invalid=\"true\" aria-describedby=\"" + id + "-error\"";
  h += ">";
  if (!problem.empty()) h += "<p class=\"error\" id=\"" + id + "-error\">" + escape(problem) + "</p>";
  return h;
}
}  // namespace

web::Response Service::merchant_view(web::Request& req, const Ctx& ctx, const std::string& matricule,
                                     const Error* refused, const web::Fields* submitted) {
  const Ctx* c = &ctx;
  std::optional<merchant::Merchant> m;
  std::vector<identity::Client> apps;
  std::vector<Member> members;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(conn, matricule));
    if (!m) return {};
    SIKA_ASSIGN_OR_RETURN(auto all, identity::list_clients(conn));
    apps.clear();
    for (auto& a : all)
      if (a.merchant_id == m->id) apps.push_back(std::move(a));
    SIKA_ASSIGN_OR_RETURN(members, list_members(conn, m->id));
    return {};
  });
  if (!read) return error_page(req, read.error());
  if (!m) return error_page(req, not_found(bj::object{{"matricule", matricule}}));
  const std::string base = "/operator/merchants/" + web::percent_encode(m->matricule);
  std::string body = "<section class=\"card\"><p id=\"merchant-summary\">" + escape(m->matricule) + " · " +
                     escape(m->environment) + " · " + escape(merchant::join_countries(m->countries)) + " · " +
                     std::string(say(c->locale, "tier_2")) + std::to_string(m->tier) + " · " + escape(m->email) +
                     "</p><p>" + std::string(say(c->locale, "active_2")) + yes_no(*c, m->active) +
                     "</p><form method=\"post\" action=\"" + escape(path(base + (m->active ? "/disable" : "/enable"))) +
                     "\">" + c->csrf_field() + "<button class=\"secondary\">" +
                     std::string(m->active ? say(c->locale, "disable") : say(c->locale, "enable")) +
                     "</button></form></section>";
  // Countries and tier: what the merchant's credentials may do (docs/dashboard.md).
  const std::string countries_value =
      submitted ? web::field_value(*submitted, "countries") : merchant::join_countries(m->countries);
  const std::string tier_value = submitted ? web::field_value(*submitted, "tier") : std::to_string(m->tier);
  body += "<form class=\"card\" id=\"grants\" method=\"post\" action=\"" + escape(path(base + "/grants")) + "\"><h2>" +
          std::string(say(c->locale, "countries_and_tier")) + "</h2>" + c->csrf_field();
  if (refused)
    body += "<p class=\"error\" role=\"alert\">" + std::string(say(c->locale, "correct_the_fields_shown")) + "</p>";
  body += grants_input("countries", say(c->locale, "countries_iso_alpha_3_codes_2"), "required autocomplete=\"off\"",
                       countries_value, problem_of(refused, "countries"));
  body += grants_input("tier", say(c->locale, "tier_0_to_100"), "required inputmode=\"numeric\" pattern=\"[0-9]{1,3}\"",
                       tier_value, problem_of(refused, "tier"));
  body += "<p class=\"muted\">" + std::string(say(c->locale, "its_applications_and_staff_follow")) +
          "</p><button id=\"grants-save\">" + std::string(say(c->locale, "save")) + "</button></form>";
  body += "<section class=\"card\"><h2>" + std::string(say(c->locale, "oauth_applications")) + "</h2>";
  body += "<div class=\"scroll\"><table id=\"apps\"><thead><tr><th>" + std::string(say(c->locale, "name")) +
          "</th><th>client_id</th><th>Scopes</th><th>" + std::string(say(c->locale, "countries")) + "</th><th>" +
          std::string(say(c->locale, "tier")) + "</th></tr></thead><tbody>";
  for (const auto& a : apps)
    body += "<tr><td>" + escape(a.name) + "</td><td><code>" + escape(a.client_id) + "</code></td><td>" +
            escape(identity::join_list(a.scopes)) + "</td><td>" + escape(merchant::join_countries(a.countries)) +
            "</td><td>" + std::to_string(a.user_tier) + "</td></tr>";
  body += "</tbody></table></div></section>";
  body += "<form class=\"card\" method=\"post\" action=\"" + escape(path(base + "/apps")) + "\"><h2>" +
          std::string(say(c->locale, "new_oauth_application")) + "</h2>" + c->csrf_field() +
          "<label for=\"app-name\">" + std::string(say(c->locale, "name")) +
          "</label><input id=\"app-name\" name=\"name\" required maxlength=\"100\"><label for=\"redirect_uris\">" +
          std::string(say(c->locale, "redirect_uris_optional")) +
          "</label><input id=\"redirect_uris\" name=\"redirect_uris\"><button>" +
          std::string(say(c->locale, "create")) + "</button></form>";
  body += "<section class=\"card\"><h2>" + std::string(say(c->locale, "members")) +
          "</h2><div class=\"scroll\"><table id=\"members\"><thead><tr><th>E-mail</th><th>" +
          std::string(say(c->locale, "role")) + "</th></tr></thead><tbody>";
  for (const auto& mb : members)
    body += "<tr><td>" + escape(mb.email) + "</td><td>" + escape(web::role_name(mb.role)) + "</td></tr>";
  body += "</tbody></table></div><form method=\"post\" action=\"" + escape(path(base + "/members")) + "\">" +
          c->csrf_field() +
          "<label for=\"email\">E-mail</label><input id=\"email\" name=\"email\" type=\"email\" required>"
          "<label for=\"role\">" +
          std::string(say(c->locale, "role")) +
          "</label><select id=\"role\" name=\"role\"><option>owner</option><option>developer</option>"
          "<option>viewer</option><option value=\"none\">" +
          std::string(say(c->locale, "remove")) + "</option></select><button>" + std::string(say(c->locale, "save")) +
          "</button></form></section>";
  return page(req, *c, m->name, body, refused ? web::http_status(refused->kind) : 200);
}

namespace {
Result<merchant::Merchant> merchant_named(store::Db& db, const std::string& matricule) {
  std::optional<merchant::Merchant> m;
  SIKA_TRY(db.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(conn, matricule));
    return {};
  }));
  if (!m) return not_found(bj::object{{"matricule", matricule}});
  return *m;
}
}  // namespace

web::Response Service::merchant_status(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  const std::string action = req.path.ends_with("/enable") ? "enable" : "disable";
  auto m = merchant_named(db_, req.path_param("matricule"));
  if (!m) return error_page(req, m.error());
  auto wrote = db_.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(bool found, merchant::set_active(conn, m->id, action == "enable"));
    if (!found) return not_found(bj::object{{"matricule", m->matricule}});
    AuditEntry e{0,   now(), c->session.row.user_id, c->session.row.email, m->id, "merchant." + action, m->matricule,
                 "{}"};
    return append_audit(conn, e);
  });
  if (!wrote) return error_page(req, wrote.error());
  return see_other("/operator/merchants/" + web::percent_encode(m->matricule));
}

Result<merchant::Merchant> change_merchant_grants(store::Db& db, const catalog::Catalog& catalog,
                                                  std::string_view matricule, const std::vector<std::string>& countries,
                                                  std::int64_t tier, std::int64_t user_id, const std::string& actor,
                                                  std::int64_t now) {
  auto problems = identity::check_merchant_grants(countries, tier, [&](std::string_view code) {
    const catalog::Country* k = catalog.country(code);
    return k && k->active;
  });
  SIKA_TRY(problems.status());
  std::optional<merchant::Merchant> after;
  SIKA_TRY(db.write([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto m, merchant::find_by_matricule(conn, matricule));
    if (!m) return not_found(bj::object{{"matricule", std::string(matricule)}});
    SIKA_ASSIGN_OR_RETURN(auto before, identity::set_merchant_grants(conn, m->id, countries, tier, now));
    SIKA_ASSIGN_OR_RETURN(after, merchant::find_by_id(conn, m->id));
    if (after->grants_version == before.grants_version) return {};  // nothing changed: nothing to audit
    bj::object details{{"countries", merchant::join_countries(countries)},
                       {"tier", tier},
                       {"countries_before", merchant::join_countries(before.countries)},
                       {"tier_before", before.tier}};
    return append_audit(
        conn, AuditEntry{0, now, user_id, actor, m->id, "merchant.grants", m->matricule, json::dump(details)});
  }));
  return *after;
}

web::Response Service::merchant_grants(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  if (!parts_.catalog) return error_page(req, unavailable(bj::string("catalog not configured")));
  const std::string matricule = req.path_param("matricule");
  std::vector<std::string> countries;
  for (auto& code : merchant::split_countries(web::field_value(*fields, "countries"))) {
    const auto first = code.find_first_not_of(' ');
    if (first != std::string::npos) countries.push_back(code.substr(first, code.find_last_not_of(' ') - first + 1));
  }
  // Anything but a plain number is out of range, so the tier's problem is the range's.
  const std::string tier_text = web::field_value(*fields, "tier");
  std::int64_t tier = -1;
  if (!tier_text.empty() && tier_text.size() <= 3 &&
      std::all_of(tier_text.begin(), tier_text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    tier = std::stoll(tier_text);
  auto changed = change_merchant_grants(db_, *parts_.catalog->snapshot(), matricule, countries, tier,
                                        c->session.row.user_id, c->session.row.email, now());
  if (!changed && changed.error().is(ErrorKind::invalid))
    return merchant_view(req, *c, matricule, &changed.error(), &*fields);
  if (!changed) return error_page(req, changed.error());
  // This node's token endpoint issues from the new record at once; other nodes within
  // identity.client_cache_seconds, and the gateway refuses what they issue before.
  if (parts_.identity) parts_.identity->invalidate_client_cache();
  return see_other("/operator/merchants/" + web::percent_encode(changed->matricule));
}

web::Response Service::merchant_app_create(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto m = merchant_named(db_, req.path_param("matricule"));
  if (!m) return error_page(req, m.error());
  return create_app(req, *c, m->id, "/operator/merchants/" + web::percent_encode(m->matricule));
}

web::Response Service::merchant_member(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto m = merchant_named(db_, req.path_param("matricule"));
  if (!m) return error_page(req, m.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  auto st = put_membership(*c, m->id, web::field_value(*fields, "email"), web::field_value(*fields, "role"));
  if (!st) return error_page(req, st.error());
  return see_other("/operator/merchants/" + web::percent_encode(m->matricule));
}

web::Response Service::ledger(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto report = payments::ledger::check(db_);
  if (!report) return error_page(req, report.error());
  std::string body =
      "<section class=\"card\"><p id=\"ledger-status\" class=\"" + std::string(report->ok() ? "" : "error") + "\">" +
      std::string(report->ok() ? say(c->locale, "ledger_ok_no_violation") : say(c->locale, "violations_found")) +
      "</p><p>" + std::to_string(report->accounts) + " " + std::string(say(c->locale, "accounts")) + ", " +
      std::to_string(report->journals) + " " + std::string(say(c->locale, "journals")) + ", " +
      std::to_string(report->entries) + " " + std::string(say(c->locale, "entries")) + "</p></section>";
  body += "<div class=\"scroll\"><table><thead><tr><th>Env.</th><th>" + std::string(say(c->locale, "currency")) +
          "</th><th class=\"num\">" + std::string(say(c->locale, "debits")) + "</th><th class=\"num\">" +
          std::string(say(c->locale, "credits")) + "</th></tr></thead><tbody>";
  for (const auto& t : report->totals)
    body += "<tr><td>" + escape(t.environment) + "</td><td>" + escape(t.currency) + "</td><td class=\"num\">" +
            escape(money::format(t.debits, t.currency)) + "</td><td class=\"num\">" +
            escape(money::format(t.credits, t.currency)) + "</td></tr>";
  body += "</tbody></table></div>";
  if (!report->ok()) {
    body += "<ul class=\"card\">";
    for (const auto& v : report->violations)
      body += "<li><strong>" + escape(v.rule) + "</strong> " + escape(v.subject) + ": " + escape(v.detail) + "</li>";
    body += "</ul>";
  }
  return page(req, *c, std::string(say(c->locale, "ledger_check")), body);
}

web::Response Service::health(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  std::string body =
      operators_health(*c) + "<section class=\"card\"><h2>" + std::string(say(c->locale, "job_queues")) + "</h2>";
  std::map<std::string, std::map<std::string, int>> per_queue;
  for (std::string state : {"pending", "running", "dead"}) {
    store::JobFilter f;
    f.state = state;
    f.limit = 1000;
    auto jobs = store::list_jobs(db_, f);
    if (!jobs) return error_page(req, jobs.error());
    for (const auto& j : *jobs) ++per_queue[j.queue][state];
  }
  if (per_queue.empty())
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_job")) + "</p>";
  else {
    body += "<div class=\"scroll\"><table><thead><tr><th>" + std::string(say(c->locale, "queue")) +
            "</th><th class=\"num\">pending</th><th class=\"num\">running</th><th class=\"num\">dead</th></tr></thead>"
            "<tbody>";
    for (auto& [q, states] : per_queue)
      body += "<tr><td>" + escape(q) + "</td><td class=\"num\">" + std::to_string(states["pending"]) +
              "</td><td class=\"num\">" + std::to_string(states["running"]) + "</td><td class=\"num\">" +
              std::to_string(states["dead"]) + "</td></tr>";
    body += "</tbody></table></div>";
  }
  body += "</section><section class=\"card\"><h2>" + std::string(say(c->locale, "failed_webhooks")) + "</h2>";
  if (parts_.webhooks) {
    webhooks::DeliveryFilter df;
    df.status = "failed";
    auto failed = parts_.webhooks->registry().list_deliveries(std::nullopt, df, 20, 0);
    if (!failed) return error_page(req, failed.error());
    body += "<p id=\"webhook-failures\">" + std::to_string(failed->total) + " " +
            std::string(say(c->locale, "failed_deliveries")) + "</p><ul>";
    for (const auto& d : failed->items)
      body += "<li>" + when(d.created_at, c->zone) + " " + escape(d.url) + " — " + escape(d.last_error.value_or("")) +
              "</li>";
    body += "</ul>";
  }
  body += "</section>";
  // The outbox's lag (events not yet fanned out to endpoints) and how the last attempts ended.
  constexpr int kRecentAttempts = 1000;
  OutboxLag lag;
  std::vector<std::pair<std::string, std::int64_t>> outcomes;
  auto read = db_.read([&](store::Conn& conn) -> Status {
    SIKA_ASSIGN_OR_RETURN(lag, outbox_lag(conn));
    SIKA_ASSIGN_OR_RETURN(outcomes, recent_attempt_outcomes(conn, kRecentAttempts));
    return {};
  });
  if (!read) return error_page(req, read.error());
  const std::int64_t lag_s = lag.oldest_at ? std::max<std::int64_t>(0, now() - *lag.oldest_at) / 1000 : 0;
  body +=
      "<section class=\"card\"><h2>" + std::string(say(c->locale, "outbox_lag")) + "</h2><p id=\"outbox-lag\">" +
      std::to_string(lag.waiting) + " " + std::string(say(c->locale, "event_s_waiting")) +
      (lag.oldest_at ? ", " + std::string(say(c->locale, "the_oldest_for")) + " " + std::to_string(lag_s) + " s" : "") +
      "</p></section>";
  std::int64_t attempts = 0, succeeded = 0;
  for (const auto& [outcome, n] : outcomes) {
    attempts += n;
    if (outcome == "succeeded") succeeded += n;
  }
  body += "<section class=\"card\"><h2>" + std::string(say(c->locale, "webhook_failure_rate")) +
          "</h2><p id=\"webhook-failure-rate\">";
  if (attempts == 0) {
    body += std::string(say(c->locale, "no_delivery_attempt")) + "</p>";
  } else {
    const std::int64_t permille = (attempts - succeeded) * 1000 / attempts;
    body += std::to_string(permille / 10) + std::string(say(c->locale, "text")) + std::to_string(permille % 10) +
            " % " + std::string(say(c->locale, "of_the")) + " " + std::to_string(attempts) + " " +
            std::string(say(c->locale, "last_attempts")) + "</p><table><thead><tr><th>" +
            std::string(say(c->locale, "outcome")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "attempts")) + "</th></tr></thead><tbody>";
    for (const auto& [outcome, n] : outcomes)
      body += "<tr><td>" + escape(outcome) + "</td><td class=\"num\">" + std::to_string(n) + "</td></tr>";
    body += "</tbody></table>";
  }
  body += "</section>";
  return page(req, *c, std::string(say(c->locale, "system_health")), body);
}

namespace {

// A pricing rule's fee: an amount, or parts per million of the amount shown as a percentage
// without floating point.
std::string fee_text(const catalog::PricingRule& r, const std::string& currency) {
  if (r.fee_type == catalog::FeeType::fixed) return money::format(r.fee_units, currency);
  std::string frac = std::to_string(r.fee_units % 10000);
  frac = std::string(4 - frac.size(), '0') + frac;
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return std::to_string(r.fee_units / 10000) + (frac.empty() ? "" : "." + frac) + " %";
}

// The country of a catalog id; nullptr when none.
const catalog::Country* country_by_id(const catalog::Catalog& cat, std::int64_t id) {
  for (const auto& k : cat.countries())
    if (k.id == id) return &k;
  return nullptr;
}

// The catalog page's forms: a new FX rate (posted to `fx_action`), and any entry by its record
// (posted to `put_action`).
std::string catalog_forms_html(const Service::Ctx& c, const std::string& fx_action, const std::string& put_action) {
  std::string body =
      "<form method=\"post\" action=\"" + escape(fx_action) + "\">" + c.csrf_field() + "<label for=\"fx-base\">" +
      std::string(say(c.locale, "order_currency")) +
      "</label><input id=\"fx-base\" name=\"base\" required maxlength=\"3\" autocomplete=\"off\">" +
      "<label for=\"fx-quote\">" + std::string(say(c.locale, "paid_currency")) +
      "</label><input id=\"fx-quote\" name=\"quote\" required maxlength=\"3\" autocomplete=\"off\">" +
      "<label for=\"fx-rate\">" + std::string(say(c.locale, "rate_e_g_655_957")) +
      "</label><input id=\"fx-rate\" name=\"rate\" required autocomplete=\"off\"><button id=\"fx-put\">" +
      std::string(say(c.locale, "save_the_rate")) + "</button></form></section>";
  // Any entry by its record (the admin CLI's and the import's format, docs/catalog.md): the
  // catalog service validates it and names the field it refuses.
  body += "<section class=\"card\" aria-labelledby=\"put\"><h2 id=\"put\">" +
          std::string(say(c.locale, "create_or_change_an_entry")) +
          "</h2><form method=\"post\" "
          "action=\"" +
          escape(put_action) + "\">" + c.csrf_field() + "<label for=\"kind\">" + std::string(say(c.locale, "kind")) +
          "</label><select id=\"kind\" name=\"kind\">";
  for (auto k : {"country", "provider", "service", "pricing_rule"}) body += std::string("<option>") + k + "</option>";
  body += "</select><label for=\"mode\">" + std::string(say(c.locale, "mode")) +
          "</label><select id=\"mode\" name=\"mode\"><option value=\"update\">" +
          std::string(say(c.locale, "update_the_given_fields")) + "</option><option value=\"create\">" +
          std::string(say(c.locale, "create_2")) + "</option><option value=\"upsert\">" +
          std::string(say(c.locale, "replace")) + "</option></select><label for=\"record\">" +
          std::string(say(c.locale, "record_json")) +
          "</label><textarea id=\"record\" name=\"record\" rows=\"6\" required "
          "placeholder='{\"code\": \"CMR_MTN_COLLECTION_T1\", \"fee_value\": 1.75}'></textarea><button "
          "id=\"catalog-put\">" +
          std::string(say(c.locale, "save")) + "</button></form></section>";
  return body;
}

}  // namespace

web::Response Service::catalog_page(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (!parts_.catalog) return error_page(req, unavailable(bj::string("catalog not configured")));
  // The snapshot every payment is priced from (at most catalog.refresh_ms old).
  auto cat = parts_.catalog->snapshot();
  const auto yes = [&](bool v) { return yes_no(*c, v); };
  // The button that turns an entry on or off.
  const auto toggle = [&](std::string_view kind, const std::string& code, bool active) {
    return " <form class=\"inline\" method=\"post\" action=\"" +
           escape(path("/operator/catalog/" + std::string(kind) + "/" + web::percent_encode(code) +
                       (active ? "/disable" : "/enable"))) +
           "\">" + c->csrf_field() + "<button class=\"secondary\" aria-label=\"" +
           escape(std::string(active ? say(c->locale, "disable") : say(c->locale, "enable")) + " " + code) + "\">" +
           std::string(active ? say(c->locale, "disable") : say(c->locale, "enable")) + "</button></form>";
  };
  std::string body = "<section class=\"card\"><h2>" + std::string(say(c->locale, "countries")) +
                     "</h2><div class=\"scroll\"><table id=\"countries\"><thead><tr><th>Code</th><th>" +
                     std::string(say(c->locale, "name")) + "</th><th>" + std::string(say(c->locale, "dialling_code")) +
                     "</th><th>" + std::string(say(c->locale, "currency")) + "</th><th>" +
                     std::string(say(c->locale, "active")) + "</th></tr></thead><tbody>";
  for (const auto& k : cat->countries())
    body += "<tr><td>" + escape(k.code) + "</td><td>" + escape(c->fr() ? k.name_fr : k.name_en) + "</td><td>" +
            escape(k.dialling_code) + "</td><td>" + escape(k.currency) + "</td><td>" + yes(k.active) +
            toggle("country", k.code, k.active) + "</td></tr>";
  body += "</tbody></table></div></section><section class=\"card\"><h2>" + std::string(say(c->locale, "services")) +
          "</h2><div class=\"scroll\"><table id=\"services\"><thead><tr><th>Code</th><th>" +
          std::string(say(c->locale, "name")) + "</th><th>" + std::string(say(c->locale, "country")) + "</th><th>" +
          std::string(say(c->locale, "kind")) + "</th><th>OTP</th><th>" + std::string(say(c->locale, "active")) +
          "</th></tr></thead><tbody>";
  for (const auto& sv : cat->services()) {
    const auto* k = country_by_id(*cat, sv.country_id);
    body += "<tr><td>" + escape(sv.code) + "</td><td>" + escape(sv.name) + "</td><td>" + (k ? escape(k->code) : "") +
            "</td><td>" + escape(catalog::to_string(sv.kind)) + "</td><td>" + yes(sv.needs_otp) + "</td><td>" +
            yes(sv.active) + toggle("service", sv.code, sv.active) + "</td></tr>";
  }
  body += "</tbody></table></div></section><section class=\"card\"><h2>" + std::string(say(c->locale, "providers")) +
          "</h2><div class=\"scroll\"><table id=\"providers\"><thead><tr><th>Code</th><th>" +
          std::string(say(c->locale, "name")) + "</th><th>Connector</th><th>" + std::string(say(c->locale, "active")) +
          "</th></tr></thead><tbody>";
  for (const auto& p : cat->providers())
    body += "<tr><td>" + escape(p.code) + "</td><td>" + escape(p.name) + "</td><td>" + escape(p.connector) +
            "</td><td>" + yes(p.active) + toggle("provider", p.code, p.active) + "</td></tr>";
  body += "</tbody></table></div></section><section class=\"card\"><h2>" +
          std::string(say(c->locale, "pricing_rules")) +
          "</h2><div class=\"scroll\"><table id=\"rules\"><thead><tr><th>Code</th><th>" +
          std::string(say(c->locale, "country")) + "</th><th>" + std::string(say(c->locale, "operation")) +
          "</th><th>" + std::string(say(c->locale, "tier")) + "</th><th>" + std::string(say(c->locale, "amounts")) +
          "</th><th class=\"num\">" + std::string(say(c->locale, "fee")) + "</th><th>" +
          std::string(say(c->locale, "active")) + "</th></tr></thead><tbody>";
  for (const auto& r : cat->rules()) {
    const auto* k = country_by_id(*cat, r.country_id);
    const std::string currency = k ? k->currency : "";
    const std::string fee = fee_text(r, currency);
    const std::string bounds = (r.min_amount ? money::format(*r.min_amount, currency) : std::string("0")) + " – " +
                               (r.max_amount ? money::format(*r.max_amount, currency) : std::string("∞"));
    body += "<tr><td>" + escape(r.code) + "</td><td>" + (k ? escape(k->code) : "") + "</td><td>" +
            escape(catalog::to_string(r.operation)) + "</td><td>" + std::to_string(r.user_tier) + "</td><td>" +
            escape(bounds) + "</td><td class=\"num\">" + escape(fee) + "</td><td>" + yes(r.active) +
            toggle("pricing_rule", r.code, r.active) + "</td></tr>";
  }
  body += "</tbody></table></div></section>";
  // FX rates for hosted checkout's line=up (docs/checkout.md): the rate in force per pair, and a
  // new rate, which applies to sessions opened from now on (an open session keeps its quote).
  auto rates = catalog::fx::list_rates(db_, now());
  if (!rates) return error_page(req, rates.error());
  body += "<section class=\"card\" aria-labelledby=\"fx\"><h2 id=\"fx\">" +
          std::string(say(c->locale, "exchange_rates")) + "</h2><table id=\"fx-rates\"><thead><tr><th>" +
          std::string(say(c->locale, "from_party")) + "</th><th>" + std::string(say(c->locale, "to_party")) +
          "</th><th>" + std::string(say(c->locale, "rate")) + "</th><th>" + std::string(say(c->locale, "since")) +
          "</th><th>" + std::string(say(c->locale, "by")) + "</th></tr></thead><tbody>";
  for (const auto& r : *rates)
    body += "<tr><td>" + escape(r.base) + "</td><td>" + escape(r.quote) + "</td><td>" +
            escape(catalog::fx::ratio_text(r.rate)) + "</td><td>" + escape(iso8601(r.valid_from)) + "</td><td>" +
            escape(r.set_by) + "</td></tr>";
  body += "</tbody></table>" + catalog_forms_html(*c, path("/operator/catalog/fx"), path("/operator/catalog"));
  return page(req, *c, std::string(say(c->locale, "catalog")), body);
}

namespace {
std::optional<catalog::Kind> catalog_kind(std::string_view name) {
  for (auto k : {catalog::Kind::country, catalog::Kind::provider, catalog::Kind::service, catalog::Kind::pricing_rule})
    if (catalog::to_string(k) == name) return k;
  return std::nullopt;
}
}  // namespace

web::Response Service::catalog_active(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (!parts_.catalog) return error_page(req, unavailable(bj::string("catalog not configured")));
  if (auto fields = form_of(req); !fields) return error_page(req, fields.error());
  const std::string kind_name = req.path_param("kind");
  const std::string code = req.path_param("code");
  auto kind = catalog_kind(kind_name);
  if (!kind) return error_page(req, with_problem(not_found(), "kind", Reason::catalog_kind));
  const bool enable = req.path.ends_with("/enable");
  auto changed = parts_.catalog->set_active(*kind, code, enable);
  if (!changed) return error_page(req, changed.error());
  (void)record(*c, std::nullopt, enable ? "catalog.enable" : "catalog.disable", kind_name + ":" + code);
  return see_other("/operator/catalog");
}

web::Response Service::catalog_put(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  if (!parts_.catalog) return error_page(req, unavailable(bj::string("catalog not configured")));
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  const std::string kind_name = web::field_value(*fields, "kind");
  auto kind = catalog_kind(kind_name);
  if (!kind) return error_page(req, with_problem(bad_request("invalid_request"), "kind", Reason::catalog_kind));
  const std::string mode_name = web::field_value(*fields, "mode");
  catalog::Mode mode;
  if (mode_name == "create")
    mode = catalog::Mode::create;
  else if (mode_name == "update")
    mode = catalog::Mode::update;
  else if (mode_name == "upsert")
    mode = catalog::Mode::upsert;
  else
    return error_page(req, with_problem(bad_request("invalid_request"), "mode", Reason::import_mode));
  auto parsed = json::parse_object(web::field_value(*fields, "record"));
  if (!parsed) return error_page(req, with_problem(bad_request("invalid_request"), "record", Reason::catalog_record));
  auto put = parts_.catalog->put(*kind, *parsed, mode);
  if (!put) return error_page(req, put.error());
  (void)record(*c, std::nullopt, "catalog." + mode_name, kind_name + ":" + put->code, bj::serialize(*parsed));
  return see_other("/operator/catalog");
}

web::Response Service::fx_put(web::Request& req) {
  auto c = context(req);
  if (!c) return error_page(req, c.error());
  auto fields = form_of(req);
  if (!fields) return error_page(req, fields.error());
  catalog::fx::NewRate rate;
  rate.base = web::field_value(*fields, "base");
  rate.quote = web::field_value(*fields, "quote");
  rate.rate = web::field_value(*fields, "rate");
  rate.set_by = c->session.row.email;
  // set_rate refuses a bad field by name (400 empty_data), shown on the error page.
  auto set = catalog::fx::set_rate(db_, rate, now());
  if (!set) return error_page(req, set.error());
  (void)record(*c, std::nullopt, "fx.set", set->base + "/" + set->quote,
               bj::serialize(bj::object{{"rate", catalog::fx::ratio_text(set->rate)}}));
  return see_other("/operator/catalog");
}

}  // namespace sika::dashboard
