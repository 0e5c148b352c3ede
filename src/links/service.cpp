// Payment-link operations; their gateway handlers are in handlers.cpp, the public page in page.cpp.
#include "links/service.hpp"

#include <boost/json.hpp>

#include "core/crypto.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "links/qr.hpp"
#include "merchant/merchant.hpp"
#include "payments/sandbox.hpp"
#include "payments/store.hpp"
#include "web/envelope.hpp"

namespace sika::links {

namespace bj = boost::json;

namespace {

Error link_not_found(std::string_view field) { return not_found(bj::object{{field, "no such payment link"}}); }

}  // namespace

Service::Service(store::Db& db, payments::Service& payments, payments::CatalogSnapshot catalog, Options options)
    : db_(db),
      payments_(payments),
      catalog_(std::move(catalog)),
      options_(std::move(options)),
      page_views_(100'000, [this] { return now(); }) {}

std::int64_t Service::now() const { return options_.clock ? options_.clock() : now_ms(); }

std::string Service::payment_url(const Link& link) const {
  std::string base = options_.page_base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/pay/" + link.short_code;
}

std::string Service::collection_uuid(const Link& link, std::string_view payer_uuid) {
  return crypto::uuid_from_name("payment-link:" + link.reference + ":" + std::string(payer_uuid));
}

// ---- merchant side ----------------------------------------------------------------------------

Result<Link> Service::create_link(const Acting& merchant, const NewLink& n, json::FieldErrors errors) {
  if (merchant.merchant_id == 0) return forbidden(bj::string("this credential is not bound to a merchant"));
  auto cat = catalog_();
  if (!cat || !cat->loaded()) return unavailable(bj::string("the catalog is not loaded"));
  // The currency must be that of a country the credential may collect in; a named provider
  // must be a usable service of such a country in that currency.
  if (!n.currency.empty()) {
    bool granted = false;
    for (const auto& c : cat->countries())
      if (c.currency == n.currency && c.active && merchant.grants_country(c.code)) granted = true;
    if (!granted) errors.add("currency", Reason::currency_not_allowed);
  }
  if (n.provider) {
    const catalog::PaymentService* s = cat->service(*n.provider);
    if (!s || !cat->usable(*s))
      errors.add("provider", Reason::inactive_service);
    else if (s->currency != n.currency)
      errors.add("provider", reason::with(Reason::not_collecting_in, "currency", n.currency));
  }
  SIKA_TRY(errors.status());
  Link l;
  l.merchant_id = merchant.merchant_id;
  l.environment = merchant.environment;
  l.user_tier = merchant.user_tier;
  l.status = std::string(kActive);
  l.amount = n.amount;
  l.min_amount = n.min_amount;
  l.max_amount = n.max_amount;
  l.currency = n.currency;
  l.provider = n.provider;
  l.channel = n.channel;
  l.fee_bearer = n.fee_bearer;
  l.title = n.title;
  l.description = n.description;
  l.expires_at = n.expires_at;
  l.max_usage = n.max_usage;
  l.metadata = n.metadata;
  l.created_at = l.updated_at = now();
  // A collision of 80-bit references or 59-bit codes is astronomically rare; draw again if one happens.
  for (int attempt = 0; attempt < 5; ++attempt) {
    l.reference = random_reference("PLK-", 16);
    l.short_code = new_short_code();
    std::optional<std::int64_t> id;
    SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(id, tables::insert_link(c, l));
      return {};
    }));
    if (id) {
      l.id = *id;
      return l;
    }
  }
  return internal_error(bj::string("could not draw a free short code"));
}

Result<Link> Service::find(const Acting& merchant, std::string_view reference) {
  std::optional<Link> found;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, tables::by_reference(c, merchant.merchant_id, merchant.environment, reference));
    return {};
  }));
  if (!found) return link_not_found("reference");
  return std::move(*found);
}

Result<std::pair<std::vector<Link>, std::int64_t>> Service::list_links(const Acting& merchant,
                                                                       const tables::ListFilter& filter) {
  std::pair<std::vector<Link>, std::int64_t> out;
  const std::int64_t at = now();
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(out, tables::list(c, merchant.merchant_id, merchant.environment, filter, at));
    return {};
  }));
  return out;
}

Result<Link> Service::update_link(const Acting& merchant, std::string_view reference, const LinkUpdate& u) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(merchant, reference));
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(tables::update(c, l.id, u, now()));
    return {};
  }));
  return find(merchant, reference);
}

Result<Link> Service::set_status(const Acting& merchant, std::string_view reference, std::string_view status) {
  SIKA_ASSIGN_OR_RETURN(Link l, find(merchant, reference));
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(tables::set_status(c, l.id, status, now()));
    return {};
  }));
  return find(merchant, reference);
}

// ---- paying -----------------------------------------------------------------------------------

Result<Link> Service::by_code(std::string_view short_code) {
  if (!valid_short_code(short_code)) return field_error("shortCode", Reason::short_code);
  std::optional<Link> found;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, tables::by_short_code(c, short_code));
    return {};
  }));
  if (!found) return link_not_found("shortCode");
  return std::move(*found);
}

std::optional<std::string> Service::otp_step(const Link& link, std::string_view provider, bool has_otp) const {
  if (has_otp) return std::nullopt;
  auto cat = catalog_();
  const catalog::PaymentService* service = cat ? cat->service(link.provider.value_or(std::string(provider))) : nullptr;
  if (!service || !service->needs_otp) return std::nullopt;
  return service->otp_helper.empty() ? options_.otp_helper : service->otp_helper;
}

Status Service::throttle(const web::Request& req, std::string_view short_code) {
  if (!options_.limiter) return {};
  SIKA_ASSIGN_OR_RETURN(auto by_address, options_.limiter->hit("links:pay:ip:" + req.remote_ip, options_.per_address));
  if (!by_address.allowed) return limits::refusal(by_address, "payments per address per minute");
  SIKA_ASSIGN_OR_RETURN(auto by_link,
                        options_.limiter->hit("links:pay:code:" + std::string(short_code), options_.per_link));
  if (!by_link.allowed) return limits::refusal(by_link, "payments per link per minute");
  return {};
}

Result<Acting> Service::merchant_of(const Link& link) {
  SIKA_ASSIGN_OR_RETURN(auto p, payments::acting_merchant(db_, link.merchant_id, link.environment, link.user_tier,
                                                          "payment-link:" + link.reference));
  if (!p) return link_not_found("shortCode");
  return std::move(*p);
}

Status Service::release(const Link& link, std::int64_t attempt_id) {
  return db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(tables::release_attempt(c, link.id, attempt_id));
    return {};
  });
}

Result<bool> Service::release_ended_uses(const Link& link, std::int64_t at) {
  std::int64_t released = 0;
  SIKA_TRY(db_.write([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(released, tables::release_ended(c, link, at - options_.stale_reservation_ms));
    return {};
  }));
  return released > 0;
}

Result<payments::Transaction> Service::collect(const Link& link, std::string_view payer_uuid,
                                               const payments::IntentRequest& intent, const Acting& merchant,
                                               std::optional<std::string> otp) {
  // Two tries: when the link looks used up, uses held by attempts that ended without
  // completing are given back (in their own unit) and the use is asked for once more.
  for (int round = 0;; ++round) {
    const std::int64_t at = now();
    std::optional<std::int64_t> attempt_id;
    bool used_up = false;
    // The use is taken in the unit that creates the collection (and submits it, when the
    // service needs no code): the payment and its use commit together or not at all.
    const payments::Service::CreationStep take_use = [&](store::Conn& c, const payments::Transaction&) -> Status {
      used_up = false;
      SIKA_ASSIGN_OR_RETURN(attempt_id, tables::insert_attempt(c, link.id, payer_uuid, intent.transaction_uuid, at));
      if (!attempt_id) {
        // This payer's attempt without its collection (recorded apart by an earlier version):
        // a RESERVED one already holds its use.
        SIKA_ASSIGN_OR_RETURN(auto earlier, tables::find_attempt(c, link.id, payer_uuid));
        if (earlier && earlier->state == "RESERVED") {
          attempt_id = earlier->id;
          return {};
        }
        return conflict(
            bj::object{{"transaction_uuid", "this attempt ended without a payment; use a new transaction_uuid"}});
      }
      SIKA_ASSIGN_OR_RETURN(bool taken, tables::take_use(c, link.id, at));
      if (taken) return {};
      used_up = true;
      return bad_request("link_used_up", bj::object{{"shortCode", "this payment link has no use left"}});
    };
    auto tx = payments_.collect(intent, merchant, payments::Service::How::present(otp, "payment-link", take_use));
    if (!tx && used_up && round == 0) {
      SIKA_ASSIGN_OR_RETURN(bool released, release_ended_uses(link, at));
      if (released) continue;
    }
    if (tx) {
      // A collection that ended at once without completing (the operator refused it) gives
      // its use back; release_ended does the same for those that end later.
      if (attempt_id && payments::is_terminal(tx->status) && !payments::was_paid(tx->status))
        (void)release(link, *attempt_id);
      return tx;
    }
    // A refused execution: a collection that ended gives its use back; one still INITIATED (a
    // wrong code with attempts left) keeps it until the payer retries or it expires.
    if (!used_up && attempt_id) {
      std::optional<payments::Transaction> stored;
      Status read = db_.read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(
            stored, payments::tables::find_by_uuid(c, link.merchant_id, link.environment, intent.transaction_uuid));
        return {};
      });
      if (read && stored && payments::is_terminal(stored->status) && !payments::was_paid(stored->status))
        (void)release(link, *attempt_id);
    }
    return tx;
  }
}

Result<payments::Transaction> Service::pay_link(std::string_view short_code, const PayRequest& p) {
  SIKA_ASSIGN_OR_RETURN(Link link, by_code(short_code));
  const std::string_view status = link.status_at(now());
  if (status == kDisabled)
    return bad_request("link_disabled", bj::object{{"shortCode", "this payment link is disabled"}});
  if (status == kExpired)
    return bad_request("link_expired", bj::object{{"shortCode", "this payment link has expired"}});

  json::FieldErrors errors;
  std::int64_t amount = 0;
  if (link.amount) {
    amount = *link.amount;
    if (p.amount && *p.amount != *link.amount)
      errors.add("amount", reason::with(Reason::fixed_amount, "amount", money::format(*link.amount, link.currency)));
  } else if (!p.amount) {
    errors.add("amount", Reason::payer_amount);
  } else {
    amount = *p.amount;
    if (link.min_amount && amount < *link.min_amount)
      errors.add("amount",
                 reason::with(Reason::at_least_amount, "min", money::format(*link.min_amount, link.currency)));
    if (link.max_amount && amount > *link.max_amount)
      errors.add("amount", reason::with(Reason::at_most, "max", money::format(*link.max_amount, link.currency)));
  }
  std::string provider;
  if (link.provider) {
    provider = *link.provider;
    if (p.provider && *p.provider != *link.provider)
      errors.add("provider", reason::with(Reason::paid_with, "service", *link.provider));
  } else if (!p.provider) {
    errors.add("provider", Reason::choose_service);
  } else {
    provider = *p.provider;
  }
  SIKA_TRY(errors.status());

  SIKA_ASSIGN_OR_RETURN(Acting merchant, merchant_of(link));
  payments::IntentRequest intent;
  intent.amount = amount;
  intent.currency = link.currency;
  intent.fee_bearer = link.fee_bearer;
  intent.transaction_uuid = collection_uuid(link, p.transaction_uuid);
  intent.provider = provider;
  intent.channel = p.channel.value_or(link.channel);
  intent.customer_wallet = p.customer_phone;
  intent.description = link.title.empty() ? "Payment link " + link.reference : link.title;
  bj::object meta;
  if (auto payer = json::parse(p.metadata); payer && payer->is_object()) meta = payer->as_object();
  meta["payment_link_reference"] = link.reference;
  if (!p.customer_name.empty()) meta["customer_name"] = p.customer_name;
  if (!p.customer_email.empty()) meta["customer_email"] = p.customer_email;
  intent.metadata = bj::serialize(meta);

  // The channel the payment takes (AUTO resolved as the collection would resolve it): a Sika
  // wallet's code comes from the platform, an operator's from the payer's operator.
  SIKA_ASSIGN_OR_RETURN(payments::IntentPlan plan, payments_.plan(intent, merchant));
  if (plan.channel == payments::kChannelWallet) return pay_from_wallet(link, p, std::move(intent), merchant, plan);

  // The OTP step comes before any use is taken: a payer without the code holds nothing.
  if (auto helper = otp_step(link, provider, p.otp.has_value())) {
    Error e = with_problem(bad_request("otp_required"), "otp", Reason::otp_by_operator);
    e.details.as_object()["otp_helper"] = *helper;  // not a problem: the operator's hint
    return e;
  }

  // New or replayed (the same payer's transaction_uuid): the collection of (link, uuid) as it is now.
  return collect(link, p.transaction_uuid, intent, merchant, p.otp);
}

namespace {
constexpr std::string_view kWalletPaymentPurpose = "payment_link_wallet";
}  // namespace

Result<payments::Transaction> Service::pay_from_wallet(const Link& link, const PayRequest& p,
                                                       payments::IntentRequest intent, const Acting& merchant,
                                                       const payments::IntentPlan& plan) {
  // A replay of this payer's attempt: its collection as it is now, whatever the body brings.
  std::optional<payments::Transaction> stored;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto attempt, tables::find_attempt(c, link.id, p.transaction_uuid));
    if (!attempt) return {};
    SIKA_ASSIGN_OR_RETURN(
        stored, payments::tables::find_by_uuid(c, link.merchant_id, link.environment, attempt->transaction_uuid));
    return {};
  }));
  if (stored) return payments_.current(std::move(*stored), "payment-link");
  if (!options_.otp) return unavailable(bj::string("wallet one-time codes are not configured"));

  // The code is good for this payment only: this link, this payer's attempt, this amount, this wallet.
  const std::string subject =
      link.reference + ":" + p.transaction_uuid + ":" + std::to_string(intent.amount) + ":" + plan.msisdn;
  if (!p.otp || p.otp->empty()) {
    otp::IssueRequest r;
    r.purpose = std::string(kWalletPaymentPurpose);
    r.subject = subject;
    r.destination = "+" + plan.msisdn;
    r.sandbox_code = link.environment == "sandbox" && payments::sandbox_fixed_code(plan.msisdn);
    r.context = money::format(plan.required_total, plan.currency) + ", " + link.reference;
    auto issued = options_.otp->issue(r);
    if (!issued && !issued.error().is(ErrorKind::rate_limited)) return issued.take_error();
    Error e = with_problem(bad_request("otp_required"), "otp",
                           issued ? Reason::otp_sent_wallet : Reason::otp_already_sent_wallet);
    e.details.as_object()["otp_helper"] = options_.wallet_otp_helper;  // not a problem: the wallet's hint
    return e;
  }
  SIKA_ASSIGN_OR_RETURN(otp::Verification v, options_.otp->verify(kWalletPaymentPurpose, subject, *p.otp));
  if (v.outcome == otp::Outcome::not_found)
    return with_problem(bad_request("invalid_otp"), "otp", Reason::otp_not_sent);
  if (!v.ok()) return otp::verification_error(v, "otp");

  // The code is the payer's approval: the collection, its use and the debit in one unit.
  intent.channel = std::string(payments::kChannelWallet);
  intent.preauthorized = true;
  for (int round = 0;; ++round) {
    const std::int64_t at = now();
    bool used_up = false;
    const payments::Service::ChargeCheck take_use =
        [&](store::Conn& c, const payments::Transaction&,
            bool covered) -> Result<std::optional<payments::Service::Refusal>> {
      used_up = false;
      SIKA_ASSIGN_OR_RETURN(auto attempt_id,
                            tables::insert_attempt(c, link.id, p.transaction_uuid, intent.transaction_uuid, at));
      if (!attempt_id)
        return conflict(
            bj::object{{"transaction_uuid", "this attempt ended without a payment; use a new transaction_uuid"}});
      SIKA_ASSIGN_OR_RETURN(bool taken, tables::take_use(c, link.id, at));
      if (!taken) {
        used_up = true;
        return bad_request("link_used_up", bj::object{{"shortCode", "this payment link has no use left"}});
      }
      // A short balance FAILS the payment in this unit: its use goes back in the same unit.
      if (!covered) SIKA_TRY(tables::release_attempt(c, link.id, *attempt_id));
      return std::optional<payments::Service::Refusal>{};
    };
    auto tx = payments_.collect(intent, merchant, payments::Service::How::preauthorized(take_use, "payment-link"));
    if (!tx && used_up && round == 0) {
      SIKA_ASSIGN_OR_RETURN(bool released, release_ended_uses(link, at));
      if (released) continue;
    }
    return tx;
  }
}

}  // namespace sika::links
