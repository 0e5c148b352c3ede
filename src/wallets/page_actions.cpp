// What the wallet page (page.cpp) does to the data and the money: its reads of the payments
// waiting for the user, the execution or cancellation of one of them, and the end of a session.
// The page only reads the form, calls these and renders.
#include <boost/json.hpp>

#include "core/json.hpp"
#include "wallets/service.hpp"
#include "wallets/store.hpp"

namespace sika::wallets {

namespace bj = boost::json;

Result<std::vector<queries::PendingPayment>> Service::pending_payments(const Wallet& wallet,
                                                                       std::string_view reference) {
  std::vector<queries::PendingPayment> found;
  SIKA_TRY(db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, queries::pending_payments(c, wallet, now(), reference));
    return {};
  }));
  return found;
}

Result<std::optional<payments::Transaction>> Service::link_payment(const Wallet& wallet, const Link& link,
                                                                   std::string_view reference) {
  auto partner = payments::acting_merchant(db_, link.partner_id, wallet.environment, 1, "wallet-page");
  if (!partner) return partner.error();
  if (!*partner) return std::optional<payments::Transaction>{};
  auto tx = payments_.find(**partner, reference, payments::kCollection);
  if (!tx || tx->metadata != json::dump(bj::object{{"wallet_link", link.reference}}) ||
      tx->customer_wallet != wallet.msisdn)
    return std::optional<payments::Transaction>{};
  return std::optional<payments::Transaction>{std::move(*tx)};
}

Result<payments::Transaction> Service::decline_link_payment(const payments::Transaction& tx) {
  return payments_.cancel_collection(tx, "wallet-page", "DECLINED_BY_CUSTOMER");
}

Result<payments::Transaction> Service::approve_link_payment(payments::Transaction tx, std::optional<std::string> code) {
  return payments_.execute_collection(std::move(tx), std::move(code), "wallet-page");
}

Status Service::close_session(std::string_view token) {
  return db_.write(
      [&](store::Conn& c) -> Status { return tables::delete_session(c, key_hash("session:" + std::string(token))); });
}

}  // namespace sika::wallets
