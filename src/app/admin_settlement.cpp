// `sika admin settlement ...`: what the operator's settlement page does, on the command line
// (docs/settlement.md): a merchant's refund reserve, its batches, the pending bank batches and
// their pain.001 file, a bank batch marked paid. Each change commits with its dashboard audit
// entry (`settlement.reserve`, `settlement.paid`) in one write unit, as the page's do.
#include <boost/json.hpp>

#include <algorithm>
#include <iostream>
#include <memory>

#include "app/admin.hpp"
#include "core/json.hpp"
#include "core/money.hpp"
#include "core/time.hpp"
#include "dashboard/store.hpp"
#include "statements/service.hpp"
#include "statements/settlement.hpp"

namespace sika::app {

namespace bj = boost::json;
namespace stl = statements::settlement;

namespace {

bj::object batch_json(const stl::Batch& b) {
  auto opt_time = [](const std::optional<std::int64_t>& t) { return t ? bj::value(iso8601(*t)) : bj::value(nullptr); };
  return bj::object{{"reference", b.reference},
                    {"period", b.period},
                    {"environment", b.environment},
                    {"currency", b.currency},
                    {"destination", b.destination},
                    {"gross", b.gross},
                    {"fees", b.fees},
                    {"net", b.net},
                    {"status", b.status},
                    {"payout_reference", b.payout_reference ? bj::value(*b.payout_reference) : bj::value(nullptr)},
                    {"created_at", iso8601(b.created_at)},
                    {"paid_at", opt_time(b.paid_at)},
                    {"failed_at", opt_time(b.failed_at)}};
}

std::string batch_human(const stl::Batch& b) {
  return b.reference + " " + b.period + " " + b.destination + " net " + money::format(b.net, b.currency) + " (gross " +
         money::format(b.gross, b.currency) + ", fees " + money::format(b.fees, b.currency) + ") " + b.status +
         (b.paid_at ? " " + iso8601(*b.paid_at) : "");
}

// The audit entry of a change made on the command line: no dashboard user (id 0), the actor named.
dashboard::AuditEntry audit_entry(std::int64_t at, const std::string& actor, std::int64_t merchant_id,
                                  std::string action, std::string object, const bj::object& details) {
  return dashboard::AuditEntry{0, at, 0, actor, merchant_id, std::move(action), std::move(object), json::dump(details)};
}

bool currency_code(const std::string& c) {
  return c.size() == 3 && std::all_of(c.begin(), c.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
}

}  // namespace

void add_settlement_admin(CLI::App& admin, AdminEnv& env) {
  auto* group = admin.add_subcommand("settlement",
                                     "Settlement: a merchant's reserve, its batches, bank batches and marking paid");
  group->require_subcommand(1);
  {
    auto* cmd = add_command(*group, env, "reserve",
                            "Set the refund reserve kept on a merchant's available balance in a currency (audited "
                            "settlement.reserve)");
    struct Args {
      std::string merchant, currency, actor = "sika admin";
      std::int64_t amount = 0;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "the merchant's matricule")->required();
    cmd->add_option("--currency", a->currency, "the settlement's currency (ISO 4217)")->required();
    cmd->add_option("--amount", a->amount, "the reserve, in minor units (0 or more)")->required();
    cmd->add_option("--actor", a->actor, "who sets it (kept in the audit log)");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      if (!currency_code(a->currency)) check(Status(empty_data(bj::object{{"currency", "must be an ISO 4217 code"}})));
      if (a->amount < 0) check(Status(empty_data(bj::object{{"amount", "must be zero or more (minor units)"}})));
      const merchant::Merchant m = merchant_named(ctx, a->merchant);
      const std::int64_t at = now_ms();
      check(ctx.db->write([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(bool found, stl::set_reserve(c, m.id, m.environment, a->currency, a->amount, at));
        if (!found)
          return not_found(bj::object{{"currency", "the merchant has no settlement settings in this currency"}});
        return dashboard::append_audit(c, audit_entry(at, a->actor, m.id, "settlement.reserve", m.matricule,
                                                      bj::object{{"currency", a->currency}, {"reserve", a->amount}}));
      }));
      print_result(env,
                   bj::object{{"merchant", m.matricule},
                              {"environment", m.environment},
                              {"currency", a->currency},
                              {"reserve", a->amount}},
                   m.matricule + " " + a->currency + " reserve " + money::format(a->amount, a->currency));
    });
  }
  {
    auto* cmd = add_command(*group, env, "batches", "A merchant's settlement batches, newest first");
    struct Args {
      std::string merchant;
      int limit = 20;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "the merchant's matricule")->required();
    cmd->add_option("--limit", a->limit, "at most this many (1 to 200)")->check(CLI::Range(1, 200));
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      const merchant::Merchant m = merchant_named(ctx, a->merchant);
      std::vector<stl::Batch> batches;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(batches, stl::list_batches(c, m.id, m.environment, a->limit));
        return {};
      }));
      bj::array data;
      std::string human;
      for (const auto& b : batches) data.push_back(batch_json(b)), human += batch_human(b) + "\n";
      if (human.empty()) human = "no batch\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
  {
    auto* cmd = add_command(*group, env, "pending-bank",
                            "The PENDING bank batches of an environment with where each goes, oldest first (what the "
                            "pain.001 file pays)");
    auto environment = std::make_shared<std::string>("prod");
    cmd->add_option("--environment", *environment, "prod or sandbox")->check(CLI::IsMember({"prod", "sandbox"}));
    cmd->callback([&env, environment] {
      Context& ctx = env.context();
      std::vector<stl::BankTransfer> pending;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(pending, stl::pending_bank_transfers(c, *environment));
        return {};
      }));
      bj::array data;
      std::string human;
      for (const auto& t : pending) {
        bj::object o = batch_json(t.batch);
        o["iban"] = t.iban;
        o["bic"] = t.bic;
        o["holder"] = t.holder;
        data.push_back(std::move(o));
        human += batch_human(t.batch) + " to " + t.holder + " " + t.iban + " " + t.bic + "\n";
      }
      if (human.empty()) human = "no pending bank batch\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
  {
    auto* cmd = add_command(*group, env, "bank-file",
                            "The pain.001.001.03 file of an environment's PENDING bank batches, on standard output");
    auto environment = std::make_shared<std::string>("prod");
    cmd->add_option("--environment", *environment, "prod or sandbox")->check(CLI::IsMember({"prod", "sandbox"}));
    cmd->callback([&env, environment] {
      Context& ctx = env.context();
      if (!ctx.statements) check(Status(unavailable(bj::string("settlement is not configured"))));
      auto file = check(ctx.statements->bank_file(*environment));
      if (env.json)
        print_result(env, bj::object{{"transfers", file.second}, {"xml", file.first}}, "");
      else
        std::cout << file.first;
    });
  }
  {
    auto* cmd = add_command(*group, env, "mark-paid",
                            "Mark a PENDING bank batch paid (its money leaves the settlement account, settlement.paid "
                            "is sent; audited settlement.paid)");
    struct Args {
      std::string reference, actor = "sika admin";
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("reference", a->reference, "the batch's reference (ST-...)")->required();
    cmd->add_option("--actor", a->actor, "who marks it (kept in the audit log)");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      const std::int64_t at = now_ms();
      std::optional<stl::Batch> batch;
      payments::ledger::Learned learned;
      check(ctx.db->write([&](store::Conn& c) -> Status {
        learned.clear();
        SIKA_ASSIGN_OR_RETURN(batch, stl::find_batch(c, a->reference));
        if (!batch || batch->destination != "BANK") return not_found(bj::object{{"reference", "no such bank batch"}});
        SIKA_ASSIGN_OR_RETURN(bool paid, stl::mark_paid(c, a->reference, at, learned));
        if (!paid)
          return make_error(ErrorKind::conflict, "conflict", bj::object{{"status", "the batch is not PENDING"}});
        return dashboard::append_audit(c, audit_entry(at, a->actor, batch->merchant_id, "settlement.paid", a->reference,
                                                      bj::object{{"net", batch->net}}));
      }));
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(batch, stl::find_batch(c, a->reference));
        return {};
      }));
      print_result(env, batch_json(*batch), batch_human(*batch));
    });
  }
}

}  // namespace sika::app
