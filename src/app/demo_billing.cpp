// Demo world of subscriptions: for the first demo merchant, one subscription in each status
// (ACTIVE waiting for its consent payment, SUSPENDED, CANCELLED, EXPIRED), moved there by the
// same operations the API uses, and one ACTIVE whose customer approved a wallet mandate. Each is found again by its
// `demo` metadata mark, so restarts never add subscriptions.
#include <boost/json.hpp>

#include "app/demo.hpp"
#include "billing/service.hpp"
#include "catalog/service.hpp"
#include "links/service.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

// The demo subscription of `merchant_id` carrying `mark` as its metadata (seeded by an earlier start).
Result<std::optional<std::string>> marked(Context& ctx, std::int64_t merchant_id, const std::string& mark) {
  std::optional<std::string> reference;
  SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT reference FROM bil_subscriptions WHERE merchant_id = ? "
                                                "AND metadata = ? ORDER BY id LIMIT 1",
                                                {merchant_id, mark}));
    if (row) reference = row->str(0);
    return {};
  }));
  return reference;
}

// The demo wallet every sandbox code reaches (demo_wallets.cpp funds it).
constexpr std::string_view kDemoWallet = "237690000100";

// A demo subscription, found again by its mark (n.metadata) on restarts or created now
// (`payment_url`, the consent link, only then).
struct Seeded {
  billing::Subscription subscription;
  std::string payment_url;
  bool created = false;
};
Result<Seeded> find_or_subscribe(Context& ctx, const Acting& p, billing::NewSubscription n) {
  SIKA_ASSIGN_OR_RETURN(auto reference, marked(ctx, p.merchant_id, n.metadata));
  Seeded out;
  if (reference) {
    SIKA_ASSIGN_OR_RETURN(out.subscription, ctx.billing->find(p, *reference));
    return out;
  }
  n.request_hash = n.metadata;
  SIKA_ASSIGN_OR_RETURN(auto created, ctx.billing->create(p, n));
  out.subscription = std::move(created.subscription);
  out.payment_url = std::move(created.payment_url);
  out.created = true;
  return out;
}

// A subscription's entry in demo.json.
bj::object demo_entry(const Acting& p, const billing::Subscription& s) {
  return bj::object{{"merchant", p.merchant}, {"reference", s.reference},
                    {"status", s.status},     {"amount", s.amount},
                    {"currency", s.currency}, {"frequency", billing::to_string(s.frequency)}};
}

// A sandbox subscription whose customer approved a wallet mandate on the demo wallet (with the
// sandbox's fixed code, as the page would): its cycles are debited from that wallet once its
// consent payment is made (`payment_url`). Found again by its mark on restarts.
Result<std::optional<bj::object>> seed_mandate_demo(Context& ctx, const Acting& p, const std::string& currency) {
  if (p.environment != "sandbox") return std::optional<bj::object>{};
  billing::NewSubscription n;
  n.customer_email = "client.mandate@example.com";
  n.customer_phone = std::string(kDemoWallet);
  n.amount = 2'500;
  n.currency = currency;
  n.frequency = billing::Frequency::monthly;
  n.description = "Demo plan (wallet mandate)";
  n.metadata = R"({"demo":"MANDATE"})";
  SIKA_ASSIGN_OR_RETURN(Seeded seeded, find_or_subscribe(ctx, p, std::move(n)));
  const billing::Subscription& s = seeded.subscription;
  if (seeded.created) {
    billing::MandateRequest r;
    r.wallet = std::string(kDemoWallet);
    SIKA_ASSIGN_OR_RETURN(auto made, ctx.billing->request_mandate(p, s.reference, r));
    const std::string token = made.second.substr(made.second.rfind('/') + 1);
    SIKA_TRY(ctx.billing->send_mandate_code(token, i18n::Locale::fr));
    SIKA_TRY(ctx.billing->approve_mandate(token, ctx.config.get_string("payments.sandbox_otp")));
  }
  SIKA_ASSIGN_OR_RETURN(auto mandate, ctx.billing->mandate_of(s));
  bj::object entry = demo_entry(p, s);
  if (mandate) entry["mandate"] = billing::mandate_json(*mandate);
  if (!seeded.payment_url.empty()) entry["payment_url"] = seeded.payment_url;
  return std::optional<bj::object>(std::move(entry));
}

}  // namespace

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
  const Acting p = Acting::system(m->id, m->matricule, m->environment, "demo", 1, m->countries);
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
    billing::NewSubscription n;
    n.customer_email = "client." + std::string(w.status) + "@example.com";
    for (auto& ch : n.customer_email) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    n.customer_phone = "237690000000";
    n.amount = 2'500;
    n.currency = country->currency;
    n.frequency = w.frequency;
    n.description = std::string("Demo plan (") + w.status + ")";
    n.metadata = std::string(R"({"demo":")") + w.status + R"("})";
    SIKA_ASSIGN_OR_RETURN(Seeded seeded, find_or_subscribe(ctx, p, std::move(n)));
    billing::Subscription s = std::move(seeded.subscription);
    std::string payment_url = std::move(seeded.payment_url);
    if (seeded.created && w.move) {
      billing::MoveRequest r;
      r.reason = w.reason;
      SIKA_ASSIGN_OR_RETURN(s, ctx.billing->apply(p, s.reference, *w.move, r));
    }
    bj::object entry = demo_entry(p, s);
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
  SIKA_ASSIGN_OR_RETURN(auto mandated, seed_mandate_demo(ctx, p, country->currency));
  if (mandated) out.push_back(std::move(*mandated));
  demo["subscriptions"] = std::move(out);
  return {};
}

}  // namespace sika::app
