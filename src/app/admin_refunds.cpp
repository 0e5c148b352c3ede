// `sika admin refunds ...`: refunds of a collection made by an operator (for support), one refund,
// and a list of refunds (docs/refunds.md). A refund is created by the same payments operation as
// POST /collection/refund, on behalf of the collection's merchant in its environment, and audited
// (`refund.create`, actor `sika admin`) in the unit that creates it.
#include <boost/json.hpp>

#include <memory>

#include "app/admin.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "dashboard/store.hpp"
#include "merchant/merchant.hpp"
#include "payments/refund_store.hpp"
#include "payments/service.hpp"
#include "payments/store.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

std::string line(const payments::Refund& r) {
  return r.reference + " " + r.transaction_reference + " " + std::string(payments::to_string(r.status)) + " " +
         std::to_string(r.amount) + " " + r.currency + " " + r.channel + " " + r.reason +
         (r.failure_reason ? " (" + *r.failure_reason + ")" : std::string());
}

}  // namespace

void add_refunds_admin(CLI::App& admin, AdminEnv& env) {
  auto* group = admin.add_subcommand("refunds", "Refunds of collections: create, show, list");
  group->require_subcommand(1);
  {
    auto* cmd = add_command(*group, env, "create",
                            "Refund (part of) a COMPLETED collection for its merchant, as the API does (audited)");
    struct Args {
      std::string transaction, reason, description, refund_uuid;
      std::int64_t amount = 0;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--transaction", a->transaction, "the collection's transaction_reference")->required();
    cmd->add_option("--amount", a->amount, "minor units (absent: everything still refundable)");
    cmd->add_option("--reason", a->reason, "REQUESTED_BY_CUSTOMER, DUPLICATE, FRAUDULENT or OTHER")->required();
    cmd->add_option("--description", a->description, "at most 255 characters");
    cmd->add_option("--refund-uuid", a->refund_uuid, "idempotency key (a UUID; a new one when absent)");
    cmd->callback([&env, a, cmd] {
      Context& ctx = env.context();
      if (!ctx.payments) fail(unavailable(bj::string("payments is not configured")));
      // The same validation as the API's body.
      bj::object body{{"transaction_reference", a->transaction},
                      {"refund_uuid", a->refund_uuid.empty() ? uuid_v4() : a->refund_uuid},
                      {"reason", a->reason}};
      if (cmd->count("--amount") > 0) body["amount"] = a->amount;
      if (!a->description.empty()) body["description"] = a->description;
      json::FieldErrors errors;
      payments::RefundRequest request = payments::parse_refund(body, errors);
      check(errors.status());
      // The collection's merchant and environment, as its own credential would carry them.
      payments::Transaction tx;
      std::optional<merchant::Merchant> owner;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(tx, payments::tables::load(c, a->transaction));
        SIKA_ASSIGN_OR_RETURN(owner, merchant::find_by_id(c, tx.merchant_id));
        return {};
      }));
      if (!owner) fail(not_found(bj::object{{"transaction_reference", "no such transaction"}}));
      const Acting p = Acting::operator_for(tx.merchant_id, owner->matricule, tx.environment, "sika admin");
      const std::int64_t at = now_ms();
      auto audit = [&](store::Conn& c, const payments::Refund& r) -> Status {
        bj::object details{{"transaction_reference", r.transaction_reference},
                           {"amount", r.amount},
                           {"currency", r.currency},
                           {"reason", r.reason},
                           {"environment", r.environment}};
        return dashboard::append_audit(c, dashboard::AuditEntry{0, at, 0, "sika admin", r.merchant_id, "refund.create",
                                                                r.reference, json::dump(details)});
      };
      payments::Refund made = check(ctx.payments->refund(request, p, audit));
      print_result(env, payments::to_record(made), line(made));
    });
  }
  {
    auto* cmd = add_command(*group, env, "show", "Show a refund");
    auto reference = std::make_shared<std::string>();
    cmd->add_option("reference", *reference, "the refund's reference (RF-...)")->required();
    cmd->callback([&env, reference] {
      Context& ctx = env.context();
      payments::Refund r;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(r, payments::tables::load_refund(c, *reference));
        return {};
      }));
      print_result(env, payments::to_record(r), line(r));
    });
  }
  {
    auto* cmd = add_command(*group, env, "list", "List refunds, newest first");
    struct Args {
      std::string merchant, environment, status, transaction;
      std::int64_t limit = 100;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "only this merchant's (its matricule)");
    cmd->add_option("--environment", a->environment, "sandbox or prod")->check(CLI::IsMember({"sandbox", "prod"}));
    cmd->add_option("--status", a->status, "PENDING, PROCESSING, COMPLETED or FAILED");
    cmd->add_option("--transaction", a->transaction, "only the refunds of this collection");
    cmd->add_option("--limit", a->limit, "at most this many (1 to 500)")->check(CLI::Range(1, 500));
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      payments::tables::RefundFilter f;
      f.environment = a->environment;
      f.transaction_reference = a->transaction;
      f.limit = a->limit;
      if (!a->status.empty()) {
        f.status = payments::parse_refund_status(a->status);
        if (!f.status) fail(empty_data(bj::object{{"status", "must be PENDING, PROCESSING, COMPLETED or FAILED"}}));
      }
      if (!a->merchant.empty()) f.merchant_id = merchant_named(ctx, a->merchant).id;
      std::pair<std::vector<payments::Refund>, std::int64_t> found;
      check(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(found, payments::tables::list_refunds(c, f));
        return {};
      }));
      bj::array data;
      std::string human;
      for (const auto& r : found.first) {
        data.push_back(payments::to_record(r));
        human += line(r) + "\n";
      }
      if (human.empty()) human = "no refund\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
}

}  // namespace sika::app
