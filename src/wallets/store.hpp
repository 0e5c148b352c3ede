#pragma once
// Every statement on the wallets tables (wlt_wallets, wlt_links, wlt_sessions), each run inside
// the caller's unit. Same SQL on both backends.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"
#include "wallets/model.hpp"

namespace sika::wallets::tables {

// The wallet of (environment, msisdn), created with `fresh`'s matricule, country, currency and
// e-mail when there is none (INSERT ... ON CONFLICT DO NOTHING, then read: concurrent calls get
// one wallet).
Result<Wallet> find_or_create_wallet(store::Conn& c, const Wallet& fresh);
Result<std::optional<Wallet>> find_wallet(store::Conn& c, std::string_view environment, std::string_view msisdn);
Result<std::optional<Wallet>> wallet_by_id(store::Conn& c, std::int64_t id);

// Links, with their wallet and partner joined.
Result<std::optional<Link>> link_of(store::Conn& c, std::int64_t partner_id, std::int64_t wallet_id);
Result<std::optional<Link>> link_by_key_hash(store::Conn& c, std::string_view key_hash);
Result<std::optional<Link>> link_by_reference(store::Conn& c, std::string_view reference);
Result<std::vector<Link>> links_of_wallet(store::Conn& c, std::int64_t wallet_id);
// A partner's links to wallets of `environment`, newest first: at most `limit` with id < before.
Result<std::vector<Link>> links_of_partner(store::Conn& c, std::int64_t partner_id, std::string_view environment,
                                           std::optional<std::int64_t> before, int limit);

// A new PENDING link; nullopt when (partner, wallet) already has one (a concurrent call made it).
Result<std::optional<std::int64_t>> insert_link(store::Conn& c, const Link& link, std::string_view key_hash,
                                                std::string_view nonce);
// Makes an UNLINKED link PENDING again with a new key and limits (conditional on UNLINKED).
Result<bool> relink(store::Conn& c, std::int64_t id, const Limits& limits, std::string_view key_hash,
                    std::string_view nonce, std::int64_t now);
// Changes a PENDING link's limits (conditional on PENDING).
Result<bool> set_pending_limits(store::Conn& c, std::int64_t id, const Limits& limits, std::int64_t now);
// The key nonce of a link (the key is derived from it and the server secret).
Result<std::string> key_nonce(store::Conn& c, std::int64_t id);
// PENDING -> ACTIVE, on the condition that the stored limits are still `limits` (those the code's
// message or the page stated): ONE conditional UPDATE, so limits changed by a concurrent link/new
// make it change nothing. False when the link was not PENDING with exactly these limits.
// `effects` give its wallet_link.activated event.
Result<bool> activate(store::Conn& c, std::int64_t id, const Limits& limits, std::int64_t now,
                      const store::Effects& effects);
// PENDING|ACTIVE -> UNLINKED by `by`; false when it was already UNLINKED.
// `effects` give its wallet_link.unlinked event.
Result<bool> unlink(store::Conn& c, std::int64_t id, std::string_view by, std::int64_t now,
                    const store::Effects& effects);

// Takes `amount` from the current window of a link ACTIVE under the key of `key_hash`, starting a
// new window at `now` when the stored one has ended; ONE conditional UPDATE, so concurrent charges
// never spend past period_limit and a key unlinked or replaced (relink) meanwhile takes nothing.
// Returns the window's start, or nullopt when refused (not ACTIVE, another key, or over).
Result<std::optional<std::int64_t>> take_budget(store::Conn& c, std::int64_t id, std::string_view key_hash,
                                                std::int64_t amount, std::int64_t now);

// Wallet page sessions (only the token's hash is stored).
Status insert_session(store::Conn& c, std::string_view token_hash, std::int64_t wallet_id, std::int64_t expires_at,
                      std::int64_t now);
Result<std::optional<std::int64_t>> session_wallet(store::Conn& c, std::string_view token_hash, std::int64_t now);
Status delete_session(store::Conn& c, std::string_view token_hash);

}  // namespace sika::wallets::tables
