#pragma once
// Read models of wallets, shared by the link API, the wallet page and the admin CLI. Each runs
// inside the caller's read unit.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"
#include "wallets/model.hpp"

namespace sika::wallets::queries {

// A wallet's balance in one currency (its ledger account customer:<msisdn>, kind available).
struct Balance {
  std::string currency;
  std::int64_t available = 0;
};
// Every currency the wallet holds money in; the home currency first (0 when it has none yet).
Result<std::vector<Balance>> balances(store::Conn& c, const Wallet& wallet);

// One movement of the wallet's money: a ledger entry of its accounts with its journal and, when
// a transaction caused it, the transaction and its merchant.
struct Movement {
  std::int64_t entry_id = 0;
  std::string kind;  // the journal's kind: COLLECTION (paid from the wallet), PAYOUT (paid into it), WALLET_FUNDING
  std::string currency;
  std::int64_t amount = 0;  // signed: positive in, negative out
  std::string memo;
  std::optional<std::string> transaction_reference, merchant, merchant_name, description;
  std::int64_t at = 0;
};
struct History {
  std::vector<Movement> items;       // newest first
  std::optional<std::int64_t> next;  // pass as `before` for the following page
};
// The wallet's movements, newest first, `limit` (1..100) per page, before the cursor `before`.
Result<History> history(store::Conn& c, const Wallet& wallet, std::optional<std::int64_t> before, int limit);

boost::json::object to_json(const Movement& m);

// A link/init payment waiting for the user's approval: a WALLET collection from the wallet's
// number started through a wallet link (its metadata names the link, as link/approve checks),
// INITIATED, waiting for its code and not yet expired.
struct PendingPayment {
  std::string reference;
  std::string link;  // the wallet link's reference
  std::string partner_name;
  std::string currency;
  std::string description;
  std::int64_t amount = 0;
  std::int64_t fee = 0;
  std::int64_t expires_at = 0;
};
// The wallet's pending link payments at `at`, newest first (at most 20), or only the one of
// `reference`.
Result<std::vector<PendingPayment>> pending_payments(store::Conn& c, const Wallet& wallet, std::int64_t at,
                                                     std::string_view reference = {});

}  // namespace sika::wallets::queries
