#include "identity/keys.hpp"

#include <sodium.h>

#include <boost/json.hpp>

#include "core/random.hpp"
#include "identity/model.hpp"

namespace sika::identity {

namespace bj = boost::json;

namespace {

constexpr std::string_view kSealPrefix = "v1:";

std::string sealing_key(std::string_view pepper) {
  (void)random_bytes(0);  // sodium_init
  static constexpr std::string_view kContext = "sika.identity.signing-keys.v1";
  unsigned char key[crypto_secretbox_KEYBYTES];
  crypto_generichash(key, sizeof key, reinterpret_cast<const unsigned char*>(kContext.data()), kContext.size(),
                     reinterpret_cast<const unsigned char*>(pepper.data()),
                     std::min<std::size_t>(pepper.size(), crypto_generichash_KEYBYTES_MAX));
  return std::string(reinterpret_cast<char*>(key), sizeof key);
}

std::string new_kid(Alg alg) { return std::string(alg == Alg::ES256 ? "es" : "rs") + "-" + random_token(12); }

Status insert_key(store::Conn& c, std::string_view pepper, const Jwk& key, std::int64_t now_ms) {
  return c.exec("INSERT INTO identity_keys (kid, alg, private_key, status, created_at) VALUES (?, ?, ?, 'active', ?)",
                {key.kid(), std::string(alg_name(key.alg())), seal_private_key(pepper, key.private_pem()), now_ms})
                 .ok()
             ? Status{}
             : Status{internal_error("could not store signing key")};
}

}  // namespace

std::string seal_private_key(std::string_view pepper, std::string_view pem) {
  std::string key = sealing_key(pepper);
  std::string nonce = random_bytes(crypto_secretbox_NONCEBYTES);
  std::string box(pem.size() + crypto_secretbox_MACBYTES, '\0');
  crypto_secretbox_easy(
      reinterpret_cast<unsigned char*>(box.data()), reinterpret_cast<const unsigned char*>(pem.data()), pem.size(),
      reinterpret_cast<const unsigned char*>(nonce.data()), reinterpret_cast<const unsigned char*>(key.data()));
  sodium_memzero(key.data(), key.size());
  return std::string(kSealPrefix) + base64_encode(nonce + box);
}

Result<std::string> open_private_key(std::string_view pepper, std::string_view sealed) {
  std::string raw;
  if (!sealed.starts_with(kSealPrefix) || !base64_decode(sealed.substr(kSealPrefix.size()), raw) ||
      raw.size() < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES)
    return internal_error("malformed stored signing key");
  std::string key = sealing_key(pepper);
  std::string pem(raw.size() - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES, '\0');
  int rc = crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(pem.data()),
                                      reinterpret_cast<const unsigned char*>(raw.data()) + crypto_secretbox_NONCEBYTES,
                                      raw.size() - crypto_secretbox_NONCEBYTES,
                                      reinterpret_cast<const unsigned char*>(raw.data()),
                                      reinterpret_cast<const unsigned char*>(key.data()));
  sodium_memzero(key.data(), key.size());
  if (rc != 0) return internal_error("stored signing key does not open with this server secret key");
  return pem;
}

const Jwk* KeyRing::find(std::string_view kid) const {
  for (const auto& k : keys_)
    if (k->kid() == kid) return k.get();
  return nullptr;
}

Result<std::shared_ptr<const KeyRing>> load_keys(store::Db& db, std::string_view pepper, std::int64_t now_ms,
                                                 bool create_missing) {
  if (create_missing) {
    bool have[2] = {false, false};
    SIKA_TRY(db.read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT alg FROM identity_keys WHERE status = 'active'"));
      for (const auto& r : rows) {
        if (r.str(0) == "ES256") have[0] = true;
        if (r.str(0) == "RS256") have[1] = true;
      }
      return {};
    }));
    for (Alg alg : {Alg::ES256, Alg::RS256}) {
      if (have[alg == Alg::ES256 ? 0 : 1]) continue;
      SIKA_ASSIGN_OR_RETURN(auto key, Jwk::generate(alg, new_kid(alg)));
      std::string sealed = seal_private_key(pepper, key->private_pem());
      // Inserted only if no other node created one meanwhile.
      SIKA_TRY(db.write([&](store::Conn& c) -> Status {
        SIKA_TRY(
            c.exec("INSERT INTO identity_keys (kid, alg, private_key, status, created_at) "
                   "SELECT ?, ?, ?, 'active', ? WHERE NOT EXISTS "
                   "(SELECT 1 FROM identity_keys WHERE alg = ? AND status = 'active')",
                   {key->kid(), std::string(alg_name(alg)), sealed, now_ms, std::string(alg_name(alg))}));
        return {};
      }));
    }
  }
  auto ring = std::make_shared<KeyRing>();
  bj::array published;
  SIKA_TRY(db.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT kid, alg, private_key, status FROM identity_keys "
                                             "WHERE status = 'active' OR publish_until > ? ORDER BY id DESC",
                                             {now_ms}));
    for (const auto& r : rows) {
      auto alg = parse_alg(r.str(1));
      if (!alg) continue;
      SIKA_ASSIGN_OR_RETURN(auto pem, open_private_key(pepper, r.str(2)));
      SIKA_ASSIGN_OR_RETURN(auto key, Jwk::from_private_pem(*alg, r.str(0), pem));
      sodium_memzero(pem.data(), pem.size());
      if (r.str(3) == "active") {
        auto& slot = *alg == Alg::ES256 ? ring->es256_ : ring->rs256_;
        if (!slot) slot = key;  // newest active key signs
      }
      published.push_back(key->public_jwk());
      ring->keys_.push_back(std::move(key));
    }
    return {};
  }));
  bj::object doc;
  doc["keys"] = std::move(published);
  ring->jwks_json_ = bj::serialize(doc);
  return std::shared_ptr<const KeyRing>(std::move(ring));
}

Result<std::vector<KeyInfo>> rotate_keys(store::Db& db, std::string_view pepper, std::int64_t publish_seconds,
                                         std::int64_t now_ms) {
  SIKA_ASSIGN_OR_RETURN(auto es, Jwk::generate(Alg::ES256, new_kid(Alg::ES256)));
  SIKA_ASSIGN_OR_RETURN(auto rs, Jwk::generate(Alg::RS256, new_kid(Alg::RS256)));
  std::vector<KeyInfo> out;
  SIKA_TRY(db.write([&](store::Conn& c) -> Status {
    SIKA_TRY(store::transition_all(
        c, kKeyStatus, {KeyStatus::active}, KeyStatus::retired,
        {"retired_at = ?, publish_until = ?", {now_ms, now_ms + publish_seconds * 1000}, "", {}}));
    SIKA_TRY(insert_key(c, pepper, *es, now_ms));
    SIKA_TRY(insert_key(c, pepper, *rs, now_ms));
    SIKA_ASSIGN_OR_RETURN(out, list_keys(c));
    return {};
  }));
  return out;
}

Result<std::vector<KeyInfo>> list_keys(store::Conn& c) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT kid, alg, status, created_at, retired_at, publish_until "
                                           "FROM identity_keys ORDER BY id"));
  std::vector<KeyInfo> out;
  for (const auto& r : rows) out.push_back(KeyInfo{r.str(0), r.str(1), r.str(2), r.i64(3), r.i64(4), r.i64(5)});
  return out;
}

Result<std::int64_t> purge_retired_keys(store::Conn& c, std::int64_t now_ms) {
  return c.exec("DELETE FROM identity_keys WHERE status = 'retired' AND publish_until < ?", {now_ms});
}

}  // namespace sika::identity
