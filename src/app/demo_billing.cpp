// Demo world of subscriptions: for the first demo merchant, one subscription in each status
// (ACTIVE waiting for its consent payment, SUSPENDED, CANCELLED, EXPIRED), moved there by the
// same operations the API uses. Each is found again by its `demo` metadata mark, so restarts
// never add subscriptions.
#include <boost/json.hpp>

#include "app/demo.hpp"
#include "billing/service.hpp"
#include "catalog/service.hpp"
#include "links/service.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

Status seed_billing_demo(Context& ctx, bj::object& demo) {
  if (!ctx.billing || !ctx.catalog) return {};
  const auto* merchants = demo.if_contains("merchants");
  if (!merchants || !merchants->is_array() || merchants->as_array().empty()) return {};
  std::string matricule(merchants->as_array().front().at("matricule").as_string());
  std::optional<merchant::Merchant> m;
  SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, matricule));
    return {};
  }));
  if (!m || m->countries.empty()) return {};
  const catalog::Country* country = ctx.catalog->snapshot()->country(m->countries.front());
  if (!country) return {};
  web::Principal p;
  p.merchant = m->matricule;
  p.merchant_id = m->id;
  p.countries = m->countries;
  p.environment = m->environment;
  struct Wanted {
    const char* status;
    billing::Frequency frequency;
    std::optional<billing::Move> move;
    const char* reason;
  };
  const Wanted wanted[] = {
      {"ACTIVE", billing::Frequency::monthly, std::nullopt, nullptr},
      {"SUSPENDED", billing::Frequency::weekly, billing::Move::suspend, "paused at the customer's request"},
      {"CANCELLED", billing::Frequency::daily, billing::Move::cancel, "the customer moved away"},
      {"EXPIRED", billing::Frequency::yearly, billing::Move::expire, "the subscription reached its end"},
  };
  bj::array out;
  for (const auto& w : wanted) {
    const std::string mark = std::string(R"({"demo":")") + w.status + R"("})";
    std::optional<std::string> reference;
    SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT reference FROM bil_subscriptions WHERE merchant_id = ? "
                                                  "AND metadata = ? ORDER BY id LIMIT 1",
                                                  {m->id, mark}));
      if (row) reference = row->str(0);
      return {};
    }));
    billing::Subscription s;
    std::string payment_url;
    if (reference) {
      SIKA_ASSIGN_OR_RETURN(s, ctx.billing->find(p, *reference));
    } else {
      billing::NewSubscription n;
      n.customer_email = "client." + std::string(w.status) + "@example.com";
      for (auto& ch : n.customer_email) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      n.customer_phone = "237690000000";
      n.amount = 2'500;
      n.currency = country->currency;
      n.frequency = w.frequency;
      n.description = std::string("Demo plan (") + w.status + ")";
      n.metadata = mark;
      n.request_hash = mark;
      SIKA_ASSIGN_OR_RETURN(auto created, ctx.billing->create(p, n));
      s = created.subscription;
      payment_url = created.payment_url;
      if (w.move) {
        billing::MoveRequest r;
        r.reason = w.reason;
        SIKA_ASSIGN_OR_RETURN(s, ctx.billing->apply(p, s.reference, *w.move, r));
      }
    }
    bj::object entry{{"merchant", m->matricule}, {"reference", s.reference},
                     {"status", s.status},       {"amount", s.amount},
                     {"currency", s.currency},   {"frequency", billing::to_string(s.frequency)}};
    // The consent link, while the first cycle waits for it.
    if (s.status == billing::kActive && payment_url.empty()) {
      SIKA_ASSIGN_OR_RETURN(auto first, ctx.billing->list_payments(s, 1, s.next_cycle - 1));
      if (!first.first.empty() && first.first.front().payment_link_reference &&
          first.first.front().status == billing::kPayPending)
        if (auto link = ctx.links->find(p, *first.first.front().payment_link_reference))
          payment_url = ctx.links->payment_url(*link);
    }
    if (!payment_url.empty()) entry["payment_url"] = payment_url;
    out.push_back(std::move(entry));
  }
  demo["subscriptions"] = std::move(out);
  return {};
}

}  // namespace sika::app
