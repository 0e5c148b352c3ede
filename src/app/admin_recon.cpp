// `sika admin recon ...`: operator reconciliation (docs/reconciliation.md). import reads an
// operator's statement into a run and prints its report; report, items, decide, close and
// closings are the dashboard's reconciliation pages on the command line.
#include <boost/json.hpp>

#include <fstream>
#include <memory>
#include <sstream>

#include "app/admin.hpp"
#include "core/money.hpp"
#include "core/time.hpp"
#include "payments/recon.hpp"

namespace sika::app {

namespace bj = boost::json;
namespace recon = payments::recon;

namespace {

bj::object closing_json(const recon::Closing& k) {
  return bj::object{{"connector", k.connector},         {"day", k.day},
                    {"currency", k.currency},           {"run", k.run_id ? bj::value(*k.run_id) : bj::value(nullptr)},
                    {"sika_clearing", k.sika_clearing}, {"operator_balance", k.operator_balance},
                    {"open_items", k.open_items},       {"open_count", k.open_count},
                    {"operator_fees", k.operator_fees}, {"unexplained", k.unexplained},
                    {"entered_by", k.entered_by},       {"computed_at", iso8601(k.computed_at)}};
}

bj::object summary_json(const recon::Summary& s) {
  bj::object kinds, states;
  for (auto k : recon::kKinds) kinds[k] = s.kinds.contains(std::string(k)) ? s.kinds.at(std::string(k)) : 0;
  for (auto k : recon::kStates) states[k] = s.states.contains(std::string(k)) ? s.states.at(std::string(k)) : 0;
  bj::object o{{"run", s.run_id},
               {"replayed", s.replayed},
               {"connector", s.connector},
               {"environment", s.environment},
               {"format", s.format},
               {"file_name", s.file_name},
               {"file_hash", s.file_hash},
               {"status", s.status},
               {"period_start", iso8601(s.period_start)},
               {"period_end", iso8601(s.period_end)},
               {"lines", s.lines},
               {"kinds", std::move(kinds)},
               {"states", std::move(states)},
               {"imported_by", s.imported_by},
               {"created_at", iso8601(s.created_at)}};
  o["closing"] = s.closing ? bj::value(closing_json(*s.closing)) : bj::value(nullptr);
  return o;
}

std::string closing_human(const recon::Closing& k) {
  return "closing " + k.connector + " " + k.day + ": operator " + money::format(k.operator_balance, k.currency) +
         ", Sika clearing " + money::format(k.sika_clearing, k.currency) + ", open items " +
         money::format(k.open_items, k.currency) + " (" + std::to_string(k.open_count) + "), operator fees " +
         money::format(k.operator_fees, k.currency) + ", unexplained " + money::format(k.unexplained, k.currency);
}

std::string summary_human(const recon::Summary& s) {
  std::string h = "run " + std::to_string(s.run_id) + (s.replayed ? " (this file was imported before)" : "") + ": " +
                  s.connector + " " + s.format + ", " + std::to_string(s.lines) + " lines, " + iso8601(s.period_start) +
                  " to " + iso8601(s.period_end) + ", " + s.status;
  for (auto k : recon::kKinds) {
    auto it = s.kinds.find(std::string(k));
    h += "\n  " + std::string(k) + ": " + std::to_string(it == s.kinds.end() ? 0 : it->second);
  }
  std::string states;
  for (auto k : recon::kStates) {
    auto it = s.states.find(std::string(k));
    states +=
        (states.empty() ? "" : ", ") + std::string(k) + " " + std::to_string(it == s.states.end() ? 0 : it->second);
  }
  h += "\n  items: " + states;
  if (s.closing) h += "\n  " + closing_human(*s.closing);
  return h;
}

bj::object item_json(const recon::Item& i) {
  auto opt = [](const std::optional<std::int64_t>& v) { return v ? bj::value(*v) : bj::value(nullptr); };
  return bj::object{
      {"id", i.id},
      {"run", i.run_id},
      {"reference", i.reference},
      {"transaction_reference", i.transaction_reference},
      {"kind", i.kind},
      {"state", i.state},
      {"sika_currency", i.sika_currency},
      {"sika_amount", opt(i.sika_amount)},
      {"sika_status", i.sika_status},
      {"operator_currency", i.operator_currency},
      {"operator_amount", opt(i.operator_amount)},
      {"operator_status", i.operator_status},
      {"difference_held", i.operator_held - i.sika_held},
      {"journal", opt(i.journal_id)},
      {"decided_by", i.decided_by},
      {"decided_at", i.decided_at ? bj::value(iso8601(*i.decided_at)) : bj::value(nullptr)},
      {"reason", i.decision_reason},
      {"operator_live_status", i.operator_live_status.empty() ? bj::value(nullptr) : bj::value(i.operator_live_status)},
      {"live_checked_at", i.live_checked_at ? bj::value(iso8601(*i.live_checked_at)) : bj::value(nullptr)}};
}

std::string item_human(const recon::Item& i) {
  auto amount = [](const std::optional<std::int64_t>& v, const std::string& c) {
    return v ? money::format(*v, c) : std::string("-");
  };
  return "#" + std::to_string(i.id) + " " + i.kind + " " + i.state + " " + i.reference +
         (i.transaction_reference.empty() ? "" : " (" + i.transaction_reference + ")") + ": Sika " +
         amount(i.sika_amount, i.sika_currency) + " " + (i.sika_status.empty() ? "-" : i.sika_status) + ", operator " +
         amount(i.operator_amount, i.operator_currency) + " " + (i.operator_status.empty() ? "-" : i.operator_status) +
         (i.operator_live_status.empty() ? "" : ", operator live " + i.operator_live_status) +
         (i.decided_by.empty() ? "" : ", by " + i.decided_by + ": " + i.decision_reason);
}

recon::Reconciler& reconciler(Context& ctx) {
  if (!ctx.recon) check(Status(unavailable(bj::string("reconciliation is not configured"))));
  return *ctx.recon;
}

}  // namespace

void add_recon_admin(CLI::App& admin, AdminEnv& env) {
  auto* group = admin.add_subcommand("recon", "Operator reconciliation: import, runs, report, items, decide, close");
  group->require_subcommand(1);
  {
    auto* cmd = add_command(*group, env, "import",
                            "Import an operator's statement (CSV) and match it with the connector's payments; the same "
                            "file again answers its run");
    struct Args {
      std::string connector, file, format = "normalised", service;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--connector", a->connector, "the connector instance (e.g. mtn_momo)")->required();
    cmd->add_option("--file", a->file, "the statement (CSV)")->required();
    std::vector<std::string> kinds;
    for (const auto& f : recon::formats()) kinds.emplace_back(f.kind);
    cmd->add_option("--format", a->format, "normalised or the connector kind's export")->check(CLI::IsMember(kinds));
    cmd->add_option("--service", a->service,
                    "the catalog service whose clearing account takes lines Sika does not know (default: the "
                    "service of the connector's latest payment)");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      std::ifstream in(a->file, std::ios::binary);
      if (!in) check(Status(empty_data(bj::object{{"file", "cannot be read"}})));
      std::ostringstream text;
      text << in.rdbuf();
      recon::ImportRequest req;
      req.connector = a->connector;
      req.format = a->format;
      req.file_name =
          a->file.substr(a->file.find_last_of('/') == std::string::npos ? 0 : a->file.find_last_of('/') + 1);
      req.text = std::move(text).str();
      req.service_code = a->service;
      req.actor = "sika admin";
      auto s = check(reconciler(ctx).import(req));
      print_result(env, summary_json(s), summary_human(s));
    });
  }
  {
    auto* cmd = add_command(*group, env, "runs", "List the imported statements, newest first");
    auto limit = std::make_shared<int>(20);
    cmd->add_option("--limit", *limit, "at most this many (1 to 200)")->check(CLI::Range(1, 200));
    cmd->callback([&env, limit] {
      auto runs = check(reconciler(env.context()).runs(*limit));
      bj::array data;
      std::string human;
      for (const auto& s : runs) {
        data.push_back(summary_json(s));
        human += summary_human(s) + "\n";
      }
      if (human.empty()) human = "no run\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
  {
    auto* cmd = add_command(*group, env, "report", "A run's report (what has settled since is resolved first)");
    auto run = std::make_shared<std::int64_t>(0);
    cmd->add_option("run", *run, "the run's number")->required();
    cmd->callback([&env, run] {
      auto s = check(reconciler(env.context()).report(*run));
      print_result(env, summary_json(s), summary_human(s));
    });
  }
  {
    auto* cmd = add_command(*group, env, "items", "A run's items, by kind and state");
    struct Args {
      std::int64_t run = 0;
      std::string kind, state;
      int limit = 100;
      std::int64_t after = 0;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("run", a->run, "the run's number")->required();
    std::vector<std::string> kinds(std::begin(recon::kKinds), std::end(recon::kKinds));
    std::vector<std::string> states(std::begin(recon::kStates), std::end(recon::kStates));
    cmd->add_option("--kind", a->kind, "only this kind")->check(CLI::IsMember(kinds));
    cmd->add_option("--state", a->state, "only this state")->check(CLI::IsMember(states));
    cmd->add_option("--limit", a->limit, "at most this many (1 to 500)")->check(CLI::Range(1, 500));
    cmd->add_option("--after", a->after, "after this item id");
    cmd->callback([&env, a] {
      auto items = check(reconciler(env.context())
                             .items(a->run, {.kind = a->kind,
                                             .state = a->state,
                                             .after_id = a->after > 0 ? std::optional(a->after) : std::nullopt,
                                             .limit = a->limit}));
      bj::array data;
      std::string human;
      for (const auto& i : items) {
        data.push_back(item_json(i));
        human += item_human(i) + "\n";
      }
      if (human.empty()) human = "no item\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
  {
    auto* cmd = add_command(*group, env, "decide",
                            "Decide an open item: --accept the operator's figure (an adjustment journal) or "
                            "--investigate");
    struct Args {
      std::int64_t item = 0;
      bool accept = false, investigate = false;
      std::string reason, actor = "sika admin";
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("item", a->item, "the item's number")->required();
    auto* acc = cmd->add_flag("--accept", a->accept, "accept the operator's figure");
    cmd->add_flag("--investigate", a->investigate, "mark it under investigation")->excludes(acc);
    cmd->add_option("--reason", a->reason, "why (kept with the decision)")->required();
    cmd->add_option("--actor", a->actor, "who decides (kept with the decision)");
    cmd->callback([&env, a] {
      if (!a->accept && !a->investigate)
        check(Status(empty_data(bj::object{{"decision", "--accept or --investigate is required"}})));
      auto i = check(reconciler(env.context())
                         .decide(a->item, a->accept ? recon::Decision::accept : recon::Decision::investigate, a->actor,
                                 a->reason));
      print_result(env, item_json(i), item_human(i));
    });
  }
  {
    auto* cmd = add_command(*group, env, "close",
                            "The day's closing of a connector: Sika's clearing against the operator's closing balance");
    struct Args {
      std::string connector, day, currency, balance;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--connector", a->connector, "the connector instance")->required();
    cmd->add_option("--day", a->day, "the day (YYYY-MM-DD, UTC)")->required();
    cmd->add_option("--currency", a->currency, "the account's currency")->required();
    cmd->add_option("--balance", a->balance, "the operator's closing balance (major units, e.g. 1500 or -12.50)")
        ->required();
    cmd->callback([&env, a] {
      std::string_view text = a->balance;
      const bool negative = !text.empty() && text[0] == '-';
      if (negative) text.remove_prefix(1);
      auto v = money::parse_decimal(text, a->currency);
      if (!v) check(Status(empty_data(bj::object{{"balance", "is not an exact amount of the currency"}})));
      auto k = check(
          reconciler(env.context()).close_day(a->connector, a->day, a->currency, negative ? -*v : *v, "sika admin"));
      print_result(env, closing_json(k), closing_human(k));
    });
  }
}

}  // namespace sika::app
