#pragma once
// Signing keys persisted in the database (table identity_keys), private keys encrypted
// under a key derived from the server's secret key (XSalsa20-Poly1305). One active key per
// algorithm signs; retired keys stay published in the JWKS until `publish_until`, i.e.
// until the last token they signed has expired.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "identity/jwt.hpp"
#include "store/db.hpp"

namespace sika::identity {

struct KeyInfo {
  std::string kid;
  std::string alg;
  std::string status;  // "active" or "retired"
  std::int64_t created_at = 0;
  std::int64_t retired_at = 0;
  std::int64_t publish_until = 0;  // 0 while active
};

// An immutable snapshot of the published keys.
class KeyRing {
 public:
  // The active signer of `alg` (the newest active key), or nullptr.
  const Jwk* signer(Alg alg) const { return alg == Alg::ES256 ? es256_.get() : rs256_.get(); }
  // A published key by kid, or nullptr.
  const Jwk* find(std::string_view kid) const;
  // The JWKS document {"keys":[...]}.
  const std::string& jwks_json() const { return jwks_json_; }
  std::size_t size() const { return keys_.size(); }

 private:
  friend Result<std::shared_ptr<const KeyRing>> load_keys(store::Db&, std::string_view, std::int64_t, bool);
  std::vector<std::shared_ptr<Jwk>> keys_;
  std::shared_ptr<Jwk> es256_;
  std::shared_ptr<Jwk> rs256_;
  std::string jwks_json_;
};

// Loads published keys; when `create_missing`, first creates an active key for each
// algorithm that has none. Fails when a stored key cannot be decrypted (wrong secret key).
Result<std::shared_ptr<const KeyRing>> load_keys(store::Db& db, std::string_view pepper, std::int64_t now_ms,
                                                 bool create_missing);
// Retires the active keys (kept published for `publish_seconds`) and creates new ones.
Result<std::vector<KeyInfo>> rotate_keys(store::Db& db, std::string_view pepper, std::int64_t publish_seconds,
                                         std::int64_t now_ms);
Result<std::vector<KeyInfo>> list_keys(store::Conn& c);
// Deletes retired keys past their publication window; returns how many.
Result<std::int64_t> purge_retired_keys(store::Conn& c, std::int64_t now_ms);

// Encrypts / decrypts a private key for storage under the server's secret key.
std::string seal_private_key(std::string_view pepper, std::string_view pem);
Result<std::string> open_private_key(std::string_view pepper, std::string_view sealed);

}  // namespace sika::identity
