// `sika admin` commands of payments: the ledger check, balances, wallet funding, a transaction's
// history and the callbacks that arrived too late (for reconciliation with the operator).
#include <boost/json.hpp>

#include <iostream>
#include <memory>

#include "app/admin.hpp"
#include "core/time.hpp"
#include "payments/ledger.hpp"
#include "payments/model.hpp"
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
          SIKA_ASSIGN_OR_RETURN(auto m, c.query_one("SELECT id FROM merchants WHERE matricule = ?", {who}));
          if (!m) return not_found(bj::object{{"merchant", "unknown matricule " + who}});
          who = "merchant:" + m->str(0);
        }
        SIKA_ASSIGN_OR_RETURN(
            auto rows,
            c.query("SELECT a.owner, a.environment, a.currency, a.kind, a.balance, m.matricule FROM ledger_accounts a "
                    "LEFT JOIN merchants m ON a.owner = 'merchant:' || CAST(m.id AS TEXT) "
                    "WHERE (? = '' OR a.owner = ?) AND (? = '' OR a.environment = ?) "
                    "ORDER BY a.environment, a.currency, a.owner, a.kind",
                    {who, who, *environment, *environment}));
        for (const auto& r : rows) {
          bj::object o{{"owner", r.str(0)},    {"environment", r.str(1)}, {"currency", r.str(2)},
                       {"kind", r.str(3)},     {"balance", r.i64(4)}};
          if (!r.is_null(5)) o["matricule"] = r.str(5);
          accounts.push_back(std::move(o));
          human += r.str(1) + " " + r.str(2) + " " + r.str(0) + (r.is_null(5) ? "" : " (" + r.str(5) + ")") + " " +
                   r.str(3) + ": " + r.str(4) + "\n";
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
      std::int64_t balance =
          check(ctx.payments->account_balance(payments::ledger::customer_wallet(a->msisdn, a->environment, a->currency)));
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
        SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT " + std::string(payments::kTransactionColumns) +
                                                        " FROM pay_transactions WHERE reference = ?",
                                                    {*reference}));
        if (!row) return not_found(bj::object{{"transaction_reference", "no such transaction"}});
        payments::Transaction tx = payments::transaction_from_row(*row);
        out["record"] = payments::to_record(tx);
        human = tx.reference + " " + tx.operation + " " + std::string(payments::to_string(tx.status)) + " " +
                std::to_string(tx.amount) + " " + tx.currency + " (fee " + std::to_string(tx.fee) + ")\n";
        bj::array history;
        SIKA_ASSIGN_OR_RETURN(auto moves, c.query("SELECT from_status, to_status, source, reason, at FROM "
                                                  "pay_transitions WHERE transaction_id = ? ORDER BY id",
                                                  {tx.id}));
        for (const auto& m : moves) {
          history.push_back(bj::object{{"from", m.str(0)}, {"to", m.str(1)}, {"source", m.str(2)},
                                       {"reason", m.is_null(3) ? bj::value(nullptr) : bj::value(m.str(3))},
                                       {"at", iso8601(m.i64(4))}});
          human += "  " + iso8601(m.i64(4)) + " " + m.str(0) + " -> " + m.str(1) + " (" + m.str(2) +
                   (m.is_null(3) ? "" : ", " + m.str(3)) + ")\n";
        }
        out["transitions"] = std::move(history);
        bj::array callbacks;
        SIKA_ASSIGN_OR_RETURN(auto cbs, c.query("SELECT reported_status, reason, outcome, received_at FROM "
                                                "pay_callbacks WHERE transaction_id = ? ORDER BY id",
                                                {tx.id}));
        for (const auto& cb : cbs) {
          callbacks.push_back(bj::object{{"reported_status", cb.str(0)},
                                         {"reason", cb.is_null(1) ? bj::value(nullptr) : bj::value(cb.str(1))},
                                         {"outcome", cb.str(2)},
                                         {"received_at", iso8601(cb.i64(3))}});
          human += "  callback " + cb.str(0) + " -> " + cb.str(2) + " at " + iso8601(cb.i64(3)) + "\n";
        }
        out["callbacks"] = std::move(callbacks);
        return {};
      }));
      human.pop_back();
      print_result(env, out, human);
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
        SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT t.reference, t.status, c.reported_status, c.reason, "
                                                 "c.received_at, c.connector FROM pay_callbacks c "
                                                 "JOIN pay_transactions t ON t.id = c.transaction_id "
                                                 "WHERE c.outcome = 'late' ORDER BY c.id"));
        for (const auto& r : rows) {
          list.push_back(bj::object{{"transaction_reference", r.str(0)}, {"status", r.str(1)},
                                    {"reported_status", r.str(2)},
                                    {"reason", r.is_null(3) ? bj::value(nullptr) : bj::value(r.str(3))},
                                    {"received_at", iso8601(r.i64(4))}, {"connector", r.str(5)}});
          human += r.str(0) + " is " + r.str(1) + ", operator " + r.str(5) + " reported " + r.str(2) + " at " +
                   iso8601(r.i64(4)) + "\n";
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
