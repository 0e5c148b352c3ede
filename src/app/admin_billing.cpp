// `sika admin billing ...`: a merchant's subscriptions, one subscription with its payments, and
// the merchant's moves for support (suspend, reactivate, cancel), applied exactly as the API does.
#include <boost/json.hpp>

#include <memory>

#include "app/admin.hpp"
#include "billing/service.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

// The operator at the command line, acting for the subscription's merchant.
Acting owner_of(const billing::Subscription& s) {
  return Acting::operator_for(s.merchant_id, s.merchant, s.environment, "cli");
}

std::string line(const billing::Subscription& s) {
  return s.reference + " " + s.status + " " + std::to_string(s.amount) + " " + s.currency + " " +
         std::string(billing::to_string(s.frequency)) + " " + s.customer_email + " next " +
         (s.next_payment_at ? iso8601(*s.next_payment_at) : std::string("-")) +
         (s.status_reason ? " (" + *s.status_reason + ")" : std::string());
}

billing::Subscription by_reference(Context& ctx, const std::string& reference) {
  std::optional<billing::Subscription> found;
  check(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, billing::tables::by_reference_any(c, reference));
    return {};
  }));
  if (!found) fail(not_found(bj::object{{"reference", "no such subscription"}}));
  return *found;
}

}  // namespace

void add_billing_admin(CLI::App& admin, AdminEnv& env) {
  auto* group =
      admin.add_subcommand("billing", "Subscriptions: list, show, suspend, reactivate, cancel, revoke-mandate");
  group->require_subcommand(1);
  {
    auto* cmd = add_command(*group, env, "list", "List a merchant's subscriptions, newest first");
    struct Args {
      std::string merchant, status, email;
      std::int64_t limit = 100;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "the merchant's matricule")->required();
    cmd->add_option("--status", a->status, "ACTIVE, SUSPENDED, CANCELLED or EXPIRED");
    cmd->add_option("--customer-email", a->email, "only this customer's");
    cmd->add_option("--limit", a->limit, "at most this many (1 to 100)")->check(CLI::Range(1, 100));
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      const merchant::Merchant m = merchant_named(ctx, a->merchant);
      billing::tables::ListFilter f;
      if (!a->status.empty()) f.status = a->status;
      if (!a->email.empty()) f.customer_email = a->email;
      f.limit = a->limit;
      const Acting p = Acting::operator_for(m.id, m.matricule, m.environment, "cli");
      auto found = check(ctx.billing->list_subscriptions(p, f));
      bj::array data;
      std::string human;
      for (const auto& s : found.first) {
        data.push_back(billing::summary_json(s));
        human += line(s) + "\n";
      }
      if (human.empty()) human = "no subscription\n";
      human.pop_back();
      print_result(env, data, human);
    });
  }
  {
    auto* cmd = add_command(*group, env, "show", "Show a subscription and its latest payments");
    auto reference = std::make_shared<std::string>();
    cmd->add_option("reference", *reference, "the subscription's reference (SUB-...)")->required();
    cmd->callback([&env, reference] {
      Context& ctx = env.context();
      auto s = by_reference(ctx, *reference);
      auto page = check(ctx.billing->list_payments(s, 20, 0));
      std::string human = line(s);
      for (const auto& p : page.first)
        human += "\n  " + p.reference + " " + p.status + " due " + iso8601(p.due_at) + " attempts " +
                 std::to_string(p.attempts) + (p.failure_reason ? " " + *p.failure_reason : std::string());
      auto mandate = check(ctx.billing->mandate_of(s));
      if (mandate)
        human += "\n  mandate " + mandate->reference + " " + mandate->status + " wallet " + mandate->wallet + " cap " +
                 std::to_string(mandate->cap) + " debits " + std::to_string(mandate->debits);
      print_result(env, billing::detail_json(s, page.first, true, mandate ? &*mandate : nullptr), human);
    });
  }
  {
    auto* cmd = add_command(*group, env, "revoke-mandate", "Revoke a subscription's wallet mandate (no more debits)");
    auto reference = std::make_shared<std::string>();
    cmd->add_option("reference", *reference, "the subscription's reference (SUB-...)")->required();
    cmd->callback([&env, reference] {
      Context& ctx = env.context();
      auto s = by_reference(ctx, *reference);
      auto m = check(ctx.billing->revoke_mandate_of(s.id, "operator"));
      print_result(env, billing::mandate_json(m), m.reference + " " + m.status);
    });
  }
  auto mover = [&env](CLI::App& parent, const std::string& name, const std::string& description, billing::Move move) {
    auto* cmd = add_command(parent, env, name, description);
    auto reference = std::make_shared<std::string>();
    auto reason = std::make_shared<std::string>();
    auto at_period_end = std::make_shared<bool>(false);
    cmd->add_option("reference", *reference, "the subscription's reference (SUB-...)")->required();
    cmd->add_option("--reason", *reason, "why (shown to the merchant)");
    if (move == billing::Move::cancel)
      cmd->add_flag("--at-period-end", *at_period_end, "end when the current period ends instead of now");
    cmd->callback([&env, reference, reason, at_period_end, move] {
      Context& ctx = env.context();
      auto s = by_reference(ctx, *reference);
      billing::MoveRequest r;
      if (!reason->empty()) r.reason = *reason;
      r.at_period_end = *at_period_end;
      auto after = check(ctx.billing->apply(owner_of(s), s.reference, move, r));
      print_result(env, billing::summary_json(after), line(after));
    });
  };
  mover(*group, "suspend", "Suspend an ACTIVE subscription", billing::Move::suspend);
  mover(*group, "reactivate", "Reactivate a SUSPENDED subscription (overdue cycles are asked for first)",
        billing::Move::reactivate);
  mover(*group, "cancel", "Cancel a subscription now, or at its period's end", billing::Move::cancel);
}

}  // namespace sika::app
