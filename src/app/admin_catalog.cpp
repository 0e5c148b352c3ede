// `sika admin catalog ...`: the operator's tools for countries, providers, payment services and
// pricing rules (add / update / activate / deactivate / list), whole-catalog import and export,
// and a fee quote to check a pricing change. Every change goes through catalog::Service (one write
// unit, catalog_version bumped) so running servers pick it up within catalog.refresh_ms.
#include <boost/json.hpp>

#include <charconv>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "app/admin.hpp"
#include "catalog/fees.hpp"
#include "catalog/service.hpp"
#include "core/json.hpp"
#include "core/reason.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

enum class FieldType {
  text,              // a string
  integer,           // a whole number
  nullable_integer,  // a whole number, or "none" to clear
  boolean,           // true or false
  nullable_number,   // a decimal number, or "none" to clear
  decimal_text,      // kept as text: converted exactly by the catalog (fee_value)
  nullable_code,     // a code, or "none" to clear
};

struct FieldSpec {
  const char* option;  // "--name-fr"
  const char* key;     // "name_fr"
  FieldType type;
  const char* help;
};

struct KindSpec {
  catalog::Kind kind;
  const char* command;  // "country"
  const char* what;     // "a country"
  const char* plural;   // "countries"
  const char* code_help;
  std::vector<FieldSpec> fields;
};

const std::vector<KindSpec>& kinds() {
  using T = FieldType;
  static const std::vector<KindSpec> kKinds = {
      {catalog::Kind::country,
       "country",
       "a country",
       "countries",
       "ISO 3166-1 alpha-3 code, e.g. CMR",
       {{"--alpha2", "alpha2", T::text, "ISO 3166-1 alpha-2 code, e.g. CM"},
        {"--name-fr", "name_fr", T::text, "name in French"},
        {"--name-en", "name_en", T::text, "name in English"},
        {"--dialling-code", "dialling_code", T::text, "international dialling code, e.g. +237"},
        {"--currency", "currency", T::text, "ISO 4217 currency of every service of the country, e.g. XAF"},
        {"--msisdn-length", "msisdn_length", T::integer, "digits of a national mobile number (after the code)"},
        {"--msisdn-pattern", "msisdn_pattern", T::text, "regex the whole national number must match, e.g. 6\\d{8}"}}},
      {catalog::Kind::provider,
       "provider",
       "a provider",
       "providers",
       "provider code, e.g. MTN",
       {{"--name", "name", T::text, "display name"},
        {"--connector", "connector", T::text, "payments connector that talks to it: sandbox, wallet, ..."}}},
      {catalog::Kind::service,
       "service",
       "a payment service",
       "payment services",
       "service code, e.g. MTN_MOMO_CMR",
       {{"--name", "name", T::text, "display name, e.g. MTN Mobile Money"},
        {"--provider", "provider", T::text, "provider code"},
        {"--country", "country", T::text, "country alpha-3 code (fixed once created)"},
        {"--kind", "kind", T::text, "mobile_money or wallet"},
        {"--needs-otp", "needs_otp", T::boolean, "true when the customer confirms with a one-time code"},
        {"--msisdn-pattern", "msisdn_pattern", T::text, "regex on the national number (\"\" = the country's)"},
        {"--min-amount", "min_amount", T::nullable_integer, "smallest amount in minor units (none = no bound)"},
        {"--max-amount", "max_amount", T::nullable_integer, "largest amount in minor units (none = no bound)"}}},
      {catalog::Kind::pricing_rule,
       "rule",
       "a pricing rule",
       "pricing rules",
       "rule code, e.g. CMR_MTN_COLLECTION_T1",
       {{"--country", "country", T::text, "country alpha-3 code (default: the named service's)"},
        {"--operation", "operation", T::text, "COLLECTION or DISBURSEMENT"},
        {"--user-tier", "user_tier", T::integer, "user tier the rule applies to (exact match)"},
        {"--fee-type", "fee_type", T::text, "FIXED (minor units) or PERCENTAGE"},
        {"--fee-value", "fee_value", T::decimal_text, "fee: minor units, or a percentage such as 1.5"},
        {"--min-amount", "min_amount", T::nullable_integer, "inclusive lower bound of the amount (none = open)"},
        {"--max-amount", "max_amount", T::nullable_integer, "inclusive upper bound of the amount (none = open)"},
        {"--incoming-service", "incoming_service", T::nullable_code, "service paid from (none = any)"},
        {"--outgoing-service", "outgoing_service", T::nullable_code, "service paid to (none = any)"},
        {"--reward-value", "reward_value", T::nullable_number, "reward carried with the quote (none = null)"},
        {"--sponsor-reward-value", "sponsor_reward_value", T::nullable_number,
         "sponsor reward carried with the quote (none = null)"}}},
  };
  return kKinds;
}

// Options of one add/update command, bound to strings and converted when it runs.
struct Bound {
  std::string code;
  bool inactive = false;
  std::vector<std::pair<CLI::Option*, std::shared_ptr<std::string>>> values;
};

bool is_none(const std::string& v) { return v == "none" || v == "null"; }

// Builds the record from the options given on the command line.
Result<bj::object> record_from(const KindSpec& spec, const Bound& bound) {
  json::FieldErrors errors;
  bj::object record{{"code", bound.code}};
  for (std::size_t i = 0; i < spec.fields.size(); ++i) {
    const FieldSpec& f = spec.fields[i];
    const auto& [option, value] = bound.values[i];
    if (option->count() == 0) continue;
    const std::string& v = *value;
    switch (f.type) {
      case FieldType::text:
      case FieldType::decimal_text: record[f.key] = v; break;
      case FieldType::nullable_code: record[f.key] = is_none(v) ? bj::value(nullptr) : bj::value(v); break;
      case FieldType::boolean:
        if (v == "true" || v == "false")
          record[f.key] = v == "true";
        else
          errors.add(f.key, Problem(Reason::either_of, {{"first", "true"}, {"second", "false"}}));
        break;
      case FieldType::integer:
      case FieldType::nullable_integer: {
        if (f.type == FieldType::nullable_integer && is_none(v)) {
          record[f.key] = nullptr;
          break;
        }
        std::int64_t n = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || p != v.data() + v.size())
          errors.add(f.key, Reason::not_integer);
        else
          record[f.key] = n;
        break;
      }
      case FieldType::nullable_number: {
        if (is_none(v)) {
          record[f.key] = nullptr;
          break;
        }
        auto parsed = json::parse(v);
        if (!parsed || !parsed->is_number())
          errors.add(f.key, Reason::number_or_none);
        else
          record[f.key] = *parsed;
        break;
      }
    }
  }
  SIKA_TRY(errors.status());
  return record;
}

// A JSON scalar for people: strings unquoted, doubles in their shortest decimal form (1.95, not 1.95E0).
std::string human_value(const bj::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_double()) {
    char buf[64];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v.get_double());
    if (ec == std::errc()) return std::string(buf, p);
  }
  return bj::serialize(v);
}

std::string human_record(const bj::object& record) {
  std::string out;
  for (const auto& kv : record) {
    if (!out.empty()) out += "  ";
    out += std::string(kv.key()) + "=" + human_value(kv.value());
  }
  return out;
}

// The stored record of one entry, read from this process's fresh snapshot.
bj::value current_record(catalog::Service& svc, catalog::Kind kind, const std::string& code) {
  auto cat = svc.snapshot();
  switch (kind) {
    case catalog::Kind::country:
      if (auto* c = cat->country(code)) return catalog::to_record(*cat, *c);
      break;
    case catalog::Kind::provider:
      if (auto* p = cat->provider(code)) return catalog::to_record(*cat, *p);
      break;
    case catalog::Kind::service:
      if (auto* s = cat->service(code)) return catalog::to_record(*cat, *s);
      break;
    case catalog::Kind::pricing_rule:
      if (auto* r = cat->rule(code)) return catalog::to_record(*cat, *r);
      break;
  }
  return nullptr;
}

void report_change(const AdminEnv& env, catalog::Service& svc, const KindSpec& spec, const catalog::Outcome& out) {
  bj::value record = current_record(svc, spec.kind, out.code);
  std::string human = std::string(catalog::to_string(out.change)) + " " + spec.command + " " + out.code + " (id " +
                      std::to_string(out.id) + ")";
  if (record.is_object()) human += "\n  " + human_record(record.as_object());
  print_result(env, bj::object{{"change", catalog::to_string(out.change)}, {"record", record}}, human);
}

void add_kind_commands(CLI::App& group, AdminEnv& env, const KindSpec& spec) {
  CLI::App* kind_cmd = group.add_subcommand(spec.command, std::string("Manage ") + spec.plural);
  kind_cmd->require_subcommand(1);
  kind_cmd->fallthrough();

  for (bool adding : {true, false}) {
    CLI::App* cmd =
        add_command(*kind_cmd, env, adding ? "add" : "update",
                    adding ? std::string("Add ") + spec.what : std::string("Change the given fields of ") + spec.what);
    auto bound = std::make_shared<Bound>();
    cmd->add_option("code", bound->code, spec.code_help)->required();
    for (const FieldSpec& f : spec.fields) {
      auto value = std::make_shared<std::string>();
      CLI::Option* option = cmd->add_option(f.option, *value, f.help);
      bound->values.emplace_back(option, value);
    }
    if (adding) cmd->add_flag("--inactive", bound->inactive, "create it inactive");
    cmd->callback([&env, &spec, bound, adding] {
      Context& ctx = env.context();
      bj::object record = check(record_from(spec, *bound));
      if (adding && bound->inactive) record["active"] = false;
      auto out = check(ctx.catalog->put(spec.kind, record, adding ? catalog::Mode::create : catalog::Mode::update));
      report_change(env, *ctx.catalog, spec, out);
    });
  }
  for (bool activating : {true, false}) {
    CLI::App* cmd = add_command(*kind_cmd, env, activating ? "activate" : "deactivate",
                                std::string(activating ? "Activate " : "Deactivate (retire) ") + spec.what);
    auto code = std::make_shared<std::string>();
    cmd->add_option("code", *code, spec.code_help)->required();
    cmd->callback([&env, &spec, code, activating] {
      Context& ctx = env.context();
      auto out = check(ctx.catalog->set_active(spec.kind, *code, activating));
      report_change(env, *ctx.catalog, spec, out);
    });
  }
  {
    CLI::App* cmd =
        add_command(*kind_cmd, env, "list", std::string("List the ") + spec.plural + " (inactive ones too)");
    auto country = std::make_shared<std::string>();
    if (spec.kind == catalog::Kind::service || spec.kind == catalog::Kind::pricing_rule)
      cmd->add_option("--country", *country, "only this country (alpha-3)");
    cmd->callback([&env, &spec, country] {
      Context& ctx = env.context();
      auto cat = ctx.catalog->snapshot();
      if (!cat->loaded()) fail(unavailable(bj::string("the catalog could not be loaded")));
      const catalog::Country* only = nullptr;
      if (!country->empty()) {
        only = cat->country(*country);
        if (!only) fail(not_found(bj::object{{"country", "unknown country " + *country}}));
      }
      bj::array records;
      auto add = [&](bj::object r) { records.push_back(std::move(r)); };
      switch (spec.kind) {
        case catalog::Kind::country:
          for (const auto& c : cat->countries()) add(catalog::to_record(*cat, c));
          break;
        case catalog::Kind::provider:
          for (const auto& p : cat->providers()) add(catalog::to_record(*cat, p));
          break;
        case catalog::Kind::service:
          for (const auto& s : cat->services())
            if (!only || s.country_id == only->id) add(catalog::to_record(*cat, s));
          break;
        case catalog::Kind::pricing_rule:
          for (const auto& r : cat->rules())
            if (!only || r.country_id == only->id) add(catalog::to_record(*cat, r));
          break;
      }
      std::string human;
      for (const auto& r : records) human += human_record(r.as_object()) + "\n";
      if (human.empty()) human = "none\n";
      human.pop_back();
      print_result(env, records, human);
    });
  }
}

Result<bj::value> read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(bj::string("cannot read " + path));
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

}  // namespace

void add_catalog_admin(CLI::App& admin, AdminEnv& env) {
  CLI::App* group =
      admin.add_subcommand("catalog",
                           "Countries, providers, payment services and pricing rules (changes reach every node within "
                           "catalog.refresh_ms)");
  group->require_subcommand(1);
  group->fallthrough();
  for (const KindSpec& spec : kinds()) add_kind_commands(*group, env, spec);

  {
    CLI::App* cmd = add_command(*group, env, "import",
                                "Apply a catalog file {countries, providers, services, pricing_rules} in one unit: "
                                "entries are created or replaced by code; nothing changes if any entry is invalid");
    auto file = std::make_shared<std::string>();
    auto only_missing = std::make_shared<bool>(false);
    cmd->add_option("file", *file, "JSON file (the format of `catalog export`)")->required();
    cmd->add_flag("--only-missing", *only_missing, "create absent entries only; leave existing ones untouched");
    cmd->callback([&env, file, only_missing] {
      Context& ctx = env.context();
      bj::value document = check(read_json_file(*file));
      auto report =
          check(ctx.catalog->import(document, *only_missing ? catalog::Mode::create_missing : catalog::Mode::upsert));
      bj::object out = report.to_json();
      std::string human;
      for (const char* section : {"countries", "providers", "services", "pricing_rules"}) {
        const auto& c = out.at(section).as_object();
        human += std::string(section) + ": " + std::to_string(c.at("created").as_int64()) + " created, " +
                 std::to_string(c.at("updated").as_int64()) + " updated, " +
                 std::to_string(c.at("unchanged").as_int64()) + " unchanged\n";
      }
      out["version"] = ctx.catalog->snapshot()->version();
      human += "catalog version " + std::to_string(ctx.catalog->snapshot()->version());
      print_result(env, out, human);
    });
  }
  {
    CLI::App* cmd = add_command(*group, env, "export", "Print the whole catalog in the import format");
    cmd->callback([&env] {
      Context& ctx = env.context();
      auto cat = ctx.catalog->snapshot();
      if (!cat->loaded()) fail(unavailable(bj::string("the catalog could not be loaded")));
      // The export is JSON whatever --json says: it is meant to be edited and imported back.
      std::cout << bj::serialize(catalog::export_catalog(*cat)) << std::endl;
    });
  }
  {
    CLI::App* cmd = add_command(*group, env, "quote", "Show the pricing rule and fee an operation would get");
    struct QuoteArgs {
      std::string operation = "COLLECTION", incoming, outgoing;
      std::int64_t amount = 0, tier = 1;
    };
    auto a = std::make_shared<QuoteArgs>();
    cmd->add_option("--operation", a->operation, "COLLECTION or DISBURSEMENT")
        ->check(CLI::IsMember({"COLLECTION", "DISBURSEMENT"}));
    cmd->add_option("--incoming-service", a->incoming, "service paid from (collections)");
    cmd->add_option("--outgoing-service", a->outgoing, "service paid to (disbursements)");
    cmd->add_option("--amount", a->amount, "amount in minor units")->required();
    cmd->add_option("--tier", a->tier, "user tier");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      auto cat = ctx.catalog->snapshot();
      auto op = *catalog::parse_operation(a->operation);
      std::optional<catalog::ServiceKey> in, out;
      if (!a->incoming.empty()) in = catalog::ServiceKey{a->incoming};
      if (!a->outgoing.empty()) out = catalog::ServiceKey{a->outgoing};
      auto q = check(catalog::quote_fee(*cat, op, in, out, a->amount, a->tier));
      bj::object o{
          {"rule_id", q.rule_id},
          {"rule_code", q.rule_code},
          {"operation", catalog::to_string(q.operation)},
          {"user_tier", q.user_tier},
          {"amount", q.amount},
          {"fee", q.fee},
          {"total", q.total},
          {"currency", q.currency},
          {"fee_type", catalog::to_string(q.fee_type)},
          {"fee_value", q.fee_value},
          {"reward_value", q.reward_value ? bj::value(*q.reward_value) : bj::value(nullptr)},
          {"sponsor_reward_value", q.sponsor_reward_value ? bj::value(*q.sponsor_reward_value) : bj::value(nullptr)}};
      print_result(env, o,
                   "rule " + q.rule_code + " (" + std::string(catalog::to_string(q.fee_type)) + " " +
                       human_value(bj::value(q.fee_value)) + "): fee " + std::to_string(q.fee) + " " + q.currency +
                       " on " + std::to_string(q.amount) + ", total " + std::to_string(q.total));
    });
  }
}

}  // namespace sika::app
