// `sika admin` commands of payments: the ledger check, balances, wallet funding, transaction
// lists, a transaction's history and the callbacks that arrived too late (for reconciliation
// with the operator). The reads are payments' read models (payments/queries.hpp).
#include <boost/json.hpp>

#include <iostream>
#include <memory>
#include <tuple>

#include "app/admin.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "payments/ledger.hpp"
#include "payments/model.hpp"
#include "payments/queries.hpp"
#include "payments/service.hpp"

namespace sika::app {

namespace bj = boost::json;

void add_payments_admin(CLI::App& admin, AdminEnv& env) {
  {
    auto* cmd = add_command(admin, env, "check-ledger",
                            "Verify the ledger (balanced journals and currencies, balances equal to their entries, "
                            "no wallet below zero, one journal per money move); exit 1 on any violation");
    cmd->callback([&env] {
      Context& ctx = env.context();
      auto report = check(payments::ledger::check(*ctx.db));
      std::string human = "accounts " + std::to_string(report.accounts) + ", journals " +
                          std::to_string(report.journals) + ", entries " + std::to_string(report.entries);
      for (const auto& t : report.totals)
        human += "\n  " + t.environment + " " + t.currency + ": debits " + std::to_string(t.debits) + ", credits " +
                 std::to_string(t.credits);
      if (report.ok()) {
        human += "\nledger OK: no violation";
      } else {
        human += "\n" + std::to_string(report.violations.size()) + " violation(s):";
        for (const auto& v : report.violations) human += "\n  " + v.rule + ": " + v.subject + ": " + v.detail;
      }
      print_result(env, report.to_json(), human);
      if (!report.ok()) throw CLI::RuntimeError(1);
    });
  }
  {
    auto* cmd = add_command(admin, env, "balances", "List ledger accounts and their balances");
    auto owner = std::make_shared<std::string>();
    auto environment = std::make_shared<std::string>();
    cmd->add_option("--owner", *owner, "only this owner (merchant:<id>, customer:<msisdn>, platform:fees, ...)");
    cmd->add_option("--merchant", *owner, "only this merchant (its matricule)")->excludes("--owner");
    cmd->add_option("--environment", *environment, "sandbox or prod");
    cmd->callback([&env, owner, environment] {
      Context& ctx = env.context();
      bj::array accounts;
      std::string human;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        std::string who = *owner;
        if (!who.empty() && who.find(':') == std::string::npos) {
          SIKA_ASSIGN_OR_RETURN(who, payments::queries::merchant_owner(c, who));
        }
        SIKA_ASSIGN_OR_RETURN(auto rows, payments::queries::account_balances(c, who, *environment));
        for (const auto& b : rows) {
          bj::object o{{"owner", b.owner},
                       {"environment", b.environment},
                       {"currency", b.currency},
                       {"kind", b.kind},
                       {"balance", b.balance}};
          if (b.matricule) o["matricule"] = *b.matricule;
          accounts.push_back(std::move(o));
          human += b.environment + " " + b.currency + " " + b.owner + (b.matricule ? " (" + *b.matricule + ")" : "") +
                   " " + b.kind + ": " + std::to_string(b.balance) + "\n";
        }
        return {};
      }));
      if (human.empty()) human = "no account\n";
      human.pop_back();
      print_result(env, accounts, human);
    });
  }
  {
    auto* cmd = add_command(admin, env, "fund-wallet", "Credit a customer's platform wallet (from platform:funding)");
    struct Args {
      std::string msisdn, currency, environment = "sandbox", memo = "operator funding";
      std::int64_t amount = 0;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--msisdn", a->msisdn, "international digits, e.g. 237690000100")->required();
    cmd->add_option("--currency", a->currency, "e.g. XAF")->required();
    cmd->add_option("--amount", a->amount, "minor units")->required();
    cmd->add_option("--environment", a->environment, "sandbox or prod")->check(CLI::IsMember({"sandbox", "prod"}));
    cmd->add_option("--memo", a->memo, "journal memo");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      if (!ctx.payments) fail(unavailable(bj::string("payments is not configured")));
      check(ctx.payments->fund_wallet(a->environment, a->msisdn, a->currency, a->amount, a->memo));
      std::int64_t balance = check(
          ctx.payments->account_balance(payments::ledger::customer_wallet(a->msisdn, a->environment, a->currency)));
      print_result(env, bj::object{{"msisdn", a->msisdn}, {"currency", a->currency}, {"balance", balance}},
                   "wallet " + a->msisdn + " balance: " + std::to_string(balance) + " " + a->currency);
    });
  }
  {
    auto* cmd = add_command(admin, env, "transaction", "Show a transaction, its status history and its callbacks");
    auto reference = std::make_shared<std::string>();
    cmd->add_option("reference", *reference, "transaction_reference")->required();
    cmd->callback([&env, reference] {
      Context& ctx = env.context();
      bj::object out;
      std::string human;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(auto t, payments::queries::timeline(c, *reference));
        out = payments::queries::to_json(t);
        const payments::Transaction& tx = t.tx;
        human = tx.reference + " " + tx.operation + " " + std::string(payments::to_string(tx.status)) + " " +
                std::to_string(tx.amount) + " " + tx.currency + " (fee " + std::to_string(tx.fee) + ")\n";
        for (const auto& m : t.steps)
          human += "  " + iso8601(m.at) + " " + m.from + " -> " + m.to + " (" + m.source +
                   (m.reason ? ", " + *m.reason : "") + ")\n";
        for (const auto& e : t.entries)
          human += "  " + e.journal_kind + " " + e.owner + " " + e.kind + (e.debit ? " debit " : " credit ") +
                   std::to_string(e.debit ? e.debit : e.credit) + " " + e.currency + "\n";
        for (const auto& cb : t.callbacks)
          human += "  callback " + cb.reported_status + " -> " + cb.outcome + " at " + iso8601(cb.received_at) + "\n";
        return {};
      }));
      human.pop_back();
      print_result(env, out, human);
    });
  }
  {
    auto* cmd = add_command(admin, env, "transactions",
                            "List transactions, newest first (filters; --before with the previous page's next)");
    struct Args {
      std::string merchant, environment, status, operation, channel, provider, from, to, search;
      std::int64_t before = 0;
      int limit = 50;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "only this merchant (its matricule)");
    cmd->add_option("--environment", a->environment, "sandbox or prod")->check(CLI::IsMember({"sandbox", "prod"}));
    cmd->add_option("--status", a->status, "INITIATED, PENDING, COMPLETED, FAILED, EXPIRED or CANCELLED");
    cmd->add_option("--operation", a->operation, "COLLECTION or DISBURSEMENT")
        ->check(CLI::IsMember({"COLLECTION", "DISBURSEMENT"}));
    cmd->add_option("--channel", a->channel, "PROVIDER or WALLET")->check(CLI::IsMember({"PROVIDER", "WALLET"}));
    cmd->add_option("--provider", a->provider, "service code, e.g. MTN_MOMO_CMR");
    cmd->add_option("--from", a->from, "created at or after (ISO 8601, e.g. 2026-11-01T00:00:00Z)");
    cmd->add_option("--to", a->to, "created before (ISO 8601)");
    cmd->add_option("--search", a->search,
                    "a transaction, invoice or provider reference, or the end of a phone number");
    cmd->add_option("--before", a->before, "the next cursor of the previous page");
    cmd->add_option("--limit", a->limit, "page size (1-500)")->check(CLI::Range(1, 500));
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      payments::queries::TransactionFilter f;
      f.environment = a->environment;
      f.operation = a->operation;
      f.channel = a->channel;
      f.provider = a->provider;
      f.search = a->search;
      f.limit = a->limit;
      if (a->before > 0) f.before = a->before;
      if (!a->status.empty()) {
        f.status = payments::parse_status(a->status);
        if (!f.status) fail(empty_data(bj::object{{"status", "is not a transaction status"}}));
      }
      for (auto [text, bound, name] : {std::tuple{&a->from, &f.created_from, "from"}, {&a->to, &f.created_to, "to"}}) {
        if (text->empty()) continue;
        *bound = parse_iso8601(*text);
        if (!*bound) fail(empty_data(bj::object{{name, "must be an ISO 8601 time"}}));
      }
      payments::queries::TransactionPage page;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        if (!a->merchant.empty()) {
          SIKA_ASSIGN_OR_RETURN(auto m, merchant::find_by_matricule(c, a->merchant));
          if (!m) return not_found(bj::object{{"merchant", "unknown matricule " + a->merchant}});
          f.merchant_id = m->id;
        }
        SIKA_ASSIGN_OR_RETURN(page, payments::queries::list_transactions(c, f));
        return {};
      }));
      bj::array items;
      std::string human;
      for (const auto& tx : page.items) {
        items.push_back(payments::to_record(tx));
        human += iso8601(tx.created_at) + " " + tx.reference + " " + tx.operation + " " + tx.channel + " " +
                 tx.service_code + " " + std::string(payments::to_string(tx.status)) + " " + std::to_string(tx.amount) +
                 " " + tx.currency + " " + tx.customer_wallet + "\n";
      }
      if (page.next) human += "next: --before " + std::to_string(*page.next) + "\n";
      if (human.empty()) human = "no transaction\n";
      human.pop_back();
      print_result(
          env,
          bj::object{{"items", std::move(items)}, {"next", page.next ? bj::value(*page.next) : bj::value(nullptr)}},
          human);
    });
  }
  {
    auto* cmd = add_command(admin, env, "late-callbacks",
                            "List operator callbacks that arrived after their transaction ended differently "
                            "(to reconcile with the operator; they never moved money)");
    cmd->callback([&env] {
      Context& ctx = env.context();
      bj::array list;
      std::string human;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(auto rows, payments::queries::late_callbacks(c));
        for (const auto& r : rows) {
          list.push_back(bj::object{{"transaction_reference", r.transaction_reference},
                                    {"status", r.status},
                                    {"reported_status", r.reported_status},
                                    {"reason", r.reason ? bj::value(*r.reason) : bj::value(nullptr)},
                                    {"received_at", iso8601(r.received_at)},
                                    {"connector", r.connector}});
          human += r.transaction_reference + " is " + r.status + ", operator " + r.connector + " reported " +
                   r.reported_status + " at " + iso8601(r.received_at) + "\n";
        }
        return {};
      }));
      if (human.empty()) human = "no late callback\n";
      human.pop_back();
      print_result(env, list, human);
    });
  }
}

}  // namespace sika::app
