#pragma once
// Merchants (identified publicly by their matricule) and their API keys. An API key is a
// random secret shown once; only its keyed hash is stored, so lookup is by hash.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::merchant {

struct Merchant {
  std::int64_t id = 0;
  std::string matricule;  // e.g. "MCH-CM-0001"
  std::string name;
  std::string email;
  std::vector<std::string> countries;  // ISO alpha-3
  std::string environment;             // "sandbox" or "prod"
  bool active = true;
  std::int64_t created_at = 0;
  std::int64_t tier = 1;            // pricing tier of its OAuth applications and staff
  std::int64_t grants_version = 0;  // moves at every change of countries, tier or status
  std::string time_zone;            // a zone of core/time_zone ("Africa/Douala"); "" = its first country's
};

// The zone a merchant's times are shown in: its setting, else the zone of its first country,
// else UTC.
std::string time_zone_of(const Merchant& m);
// Sets a merchant's time zone ("" goes back to the default); false when no merchant has this
// id. The caller checks the name against tz::find.
Result<bool> set_time_zone(store::Conn& c, std::int64_t id, std::string_view zone);

enum class KeyKind { merchant, link };  // merchant: checkout and plugins; link: wallet link API

struct IssuedKey {
  std::int64_t id = 0;
  std::string key;  // plaintext, returned once
};

struct NewMerchant {
  std::string matricule;  // generated when empty
  std::string name;
  std::string email;
  std::vector<std::string> countries;
  std::string environment = "sandbox";
};

// Creates a merchant; 409 conflict when the matricule exists.
Result<Merchant> create(store::Conn& c, const NewMerchant& m, std::int64_t now);
Result<std::optional<Merchant>> find_by_matricule(store::Conn& c, std::string_view matricule);
Result<std::optional<Merchant>> find_by_id(store::Conn& c, std::int64_t id);
Result<std::vector<Merchant>> list(store::Conn& c);
// Enables or disables a merchant (a disabled merchant's credentials stop working: the grants
// version moves, so its access tokens are refused too); returns false when no merchant has this id.
Result<bool> set_active(store::Conn& c, std::int64_t id, bool active);
// Sets a merchant's countries and tier and moves its grants version; returns false when no
// merchant has this id. Unchecked: identity::set_merchant_grants checks and carries the change
// to the merchant's credentials.
Result<bool> set_grants(store::Conn& c, std::int64_t id, const std::vector<std::string>& countries, std::int64_t tier);

// Issues a key ("sk_sandbox_..." / "sk_prod_..." for merchant keys, "lk_..." for link keys).
Result<IssuedKey> issue_key(store::Conn& c, std::string_view pepper, std::int64_t merchant_id, KeyKind kind,
                            std::string_view environment, std::int64_t now);
// Registers a key whose plaintext the caller chose (demo world: derived from the server secret);
// does nothing when that key is already registered.
Result<std::int64_t> register_key(store::Conn& c, std::string_view pepper, std::int64_t merchant_id, KeyKind kind,
                                  std::string_view environment, std::string_view key, std::int64_t now);
// Returns the active merchant owning this key of this kind, or nullopt.
Result<std::optional<Merchant>> authenticate_key(store::Conn& c, std::string_view pepper, std::string_view key,
                                                 KeyKind kind);
Status revoke_key(store::Conn& c, std::int64_t key_id, std::int64_t now);
// A key as listed: never its secret, only the first characters that tell keys apart.
struct KeyInfo {
  std::int64_t id = 0;
  KeyKind kind = KeyKind::merchant;
  std::string display_prefix;
  std::string environment;
  std::int64_t created_at = 0;
  std::optional<std::int64_t> revoked_at;
};
// A merchant's keys, newest first.
Result<std::vector<KeyInfo>> list_keys(store::Conn& c, std::int64_t merchant_id);

// "sk_test_" / "sk_live_" for merchant keys, "lk_test_" / "lk_live_" for link keys.
std::string key_prefix(KeyKind kind, std::string_view environment);

std::string join_countries(const std::vector<std::string>& countries);
std::vector<std::string> split_countries(std::string_view csv);

}  // namespace sika::merchant
