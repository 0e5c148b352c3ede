#include "identity/jwt.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/crypto.hpp"
#include "core/random.hpp"

namespace sika::identity {

namespace bj = boost::json;

std::string_view alg_name(Alg alg) { return alg == Alg::ES256 ? "ES256" : "RS256"; }

std::optional<Alg> parse_alg(std::string_view name) {
  if (name == "ES256") return Alg::ES256;
  if (name == "RS256") return Alg::RS256;
  return std::nullopt;
}

namespace {

std::string header_b64(Alg alg, std::string_view typ, std::string_view kid) {
  std::string h;
  JsonWriter w(h);
  w.begin();
  w.str("alg", alg_name(alg));
  w.str("typ", typ);
  w.str("kid", kid);
  w.end();
  return base64url_encode(h);
}

std::string bn_b64(const BIGNUM* bn, int pad) {
  std::string out(pad > 0 ? static_cast<std::size_t>(pad) : static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
  if (pad > 0)
    BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), pad);
  else
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  return base64url_encode(out);
}

// DER ECDSA-Sig-Value -> fixed 64-byte r||s (RFC 7518 §3.4).
bool der_to_raw(const unsigned char* der, std::size_t len, std::string& out) {
  const unsigned char* p = der;
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(len));
  if (!sig) return false;
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(sig, &r, &s);
  out.assign(64, '\0');
  bool ok = BN_bn2binpad(r, reinterpret_cast<unsigned char*>(out.data()), 32) == 32 &&
            BN_bn2binpad(s, reinterpret_cast<unsigned char*>(out.data()) + 32, 32) == 32;
  ECDSA_SIG_free(sig);
  return ok;
}

bool raw_to_der(std::string_view raw, std::string& out) {
  if (raw.size() != 64) return false;
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr);
  BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr);
  ECDSA_SIG* sig = ECDSA_SIG_new();
  if (!r || !s || !sig || ECDSA_SIG_set0(sig, r, s) != 1) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return false;
  }
  unsigned char* der = nullptr;
  int len = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (len <= 0) return false;
  out.assign(reinterpret_cast<char*>(der), static_cast<std::size_t>(len));
  OPENSSL_free(der);
  return true;
}

}  // namespace

Jwk::Jwk(Alg alg, std::string kid, evp_pkey_st* pkey, bool has_private)
    : alg_(alg), kid_(std::move(kid)), pkey_(pkey), has_private_(has_private) {
  access_header_ = header_b64(alg_, "at+jwt", kid_);
  id_header_ = header_b64(alg_, "JWT", kid_);
}

Jwk::~Jwk() {
  for (auto* c : sign_pool_) EVP_PKEY_CTX_free(c);
  for (auto* c : verify_pool_) EVP_PKEY_CTX_free(c);
  EVP_PKEY_free(pkey_);
}

Result<std::shared_ptr<Jwk>> Jwk::generate(Alg alg, std::string kid) {
  EVP_PKEY* pkey = alg == Alg::ES256 ? EVP_EC_gen("P-256") : EVP_RSA_gen(2048);
  if (!pkey) return internal_error("key generation failed");
  return std::shared_ptr<Jwk>(new Jwk(alg, std::move(kid), pkey, true));
}

Result<std::shared_ptr<Jwk>> Jwk::from_private_pem(Alg alg, std::string kid, std::string_view pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return internal_error("out of memory");
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!pkey) return internal_error("unreadable signing key");
  bool type_ok = alg == Alg::ES256 ? EVP_PKEY_is_a(pkey, "EC") : EVP_PKEY_is_a(pkey, "RSA");
  if (!type_ok) {
    EVP_PKEY_free(pkey);
    return internal_error("signing key does not match its algorithm");
  }
  return std::shared_ptr<Jwk>(new Jwk(alg, std::move(kid), pkey, true));
}

std::string Jwk::private_pem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  if (!bio) return {};
  std::string out;
  if (PEM_write_bio_PrivateKey(bio, pkey_, nullptr, nullptr, 0, nullptr, nullptr) == 1) {
    char* data = nullptr;
    long len = BIO_get_mem_data(bio, &data);
    out.assign(data, static_cast<std::size_t>(len));
  }
  BIO_free(bio);
  return out;
}

bj::object Jwk::public_jwk() const {
  bj::object o;
  if (alg_ == Alg::ES256) {
    unsigned char pub[65];
    std::size_t len = 0;
    o["kty"] = "EC";
    o["crv"] = "P-256";
    if (EVP_PKEY_get_octet_string_param(pkey_, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub, &len) == 1 && len == 65) {
      o["x"] = base64url_encode(std::string_view(reinterpret_cast<char*>(pub) + 1, 32));
      o["y"] = base64url_encode(std::string_view(reinterpret_cast<char*>(pub) + 33, 32));
    }
  } else {
    BIGNUM* n = nullptr;
    BIGNUM* e = nullptr;
    o["kty"] = "RSA";
    if (EVP_PKEY_get_bn_param(pkey_, OSSL_PKEY_PARAM_RSA_N, &n) == 1 &&
        EVP_PKEY_get_bn_param(pkey_, OSSL_PKEY_PARAM_RSA_E, &e) == 1) {
      o["n"] = bn_b64(n, 0);
      o["e"] = bn_b64(e, 0);
    }
    BN_free(n);
    BN_free(e);
  }
  o["kid"] = kid_;
  o["alg"] = alg_name(alg_);
  o["use"] = "sig";
  return o;
}

evp_pkey_ctx_st* Jwk::acquire(bool for_sign) const {
  {
    sika::MutexLock lock(pool_mu_);
    auto& pool = for_sign ? sign_pool_ : verify_pool_;
    if (!pool.empty()) {
      EVP_PKEY_CTX* c = pool.back();
      pool.pop_back();
      return c;
    }
  }
  EVP_PKEY_CTX* c = EVP_PKEY_CTX_new_from_pkey(nullptr, pkey_, nullptr);
  if (!c) return nullptr;
  int ok = for_sign ? EVP_PKEY_sign_init(c) : EVP_PKEY_verify_init(c);
  if (ok == 1 && alg_ == Alg::RS256) ok = EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_PADDING);
  if (ok == 1) ok = EVP_PKEY_CTX_set_signature_md(c, EVP_sha256());
  if (ok != 1) {
    EVP_PKEY_CTX_free(c);
    return nullptr;
  }
  return c;
}

void Jwk::release(evp_pkey_ctx_st* ctx, bool for_sign) const {
  sika::MutexLock lock(pool_mu_);
  auto& pool = for_sign ? sign_pool_ : verify_pool_;
  if (pool.size() < 64)
    pool.push_back(ctx);
  else
    EVP_PKEY_CTX_free(ctx);
}

std::string Jwk::sign_raw(std::string_view signing_input) const {
  if (!has_private_) return {};
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), digest);
  EVP_PKEY_CTX* ctx = acquire(true);
  if (!ctx) return {};
  unsigned char sig[512];
  std::size_t siglen = sizeof sig;
  int rc = EVP_PKEY_sign(ctx, sig, &siglen, digest, sizeof digest);
  release(ctx, true);
  if (rc != 1) return {};
  if (alg_ == Alg::RS256) return std::string(reinterpret_cast<char*>(sig), siglen);
  std::string raw;
  if (!der_to_raw(sig, siglen, raw)) return {};
  return raw;
}

void append_base64url(std::string& out, std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size(), i = 0;
  out.reserve(out.size() + (n + 2) / 3 * 4);
  for (; i + 3 <= n; i += 3) {
    std::uint32_t v = (std::uint32_t{p[i]} << 16) | (std::uint32_t{p[i + 1]} << 8) | p[i + 2];
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (n - i == 1) {
    std::uint32_t v = std::uint32_t{p[i]} << 16;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
  } else if (n - i == 2) {
    std::uint32_t v = (std::uint32_t{p[i]} << 16) | (std::uint32_t{p[i + 1]} << 8);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
  }
}

std::string Jwk::sign(std::string_view header, std::string_view payload_json) const {
  std::string out;
  out.reserve(header.size() + payload_json.size() * 4 / 3 + 400);
  out.append(header);
  out.push_back('.');
  append_base64url(out, payload_json);
  std::string sig = sign_raw(out);
  if (sig.empty()) return {};
  out.push_back('.');
  append_base64url(out, sig);
  return out;
}

bool Jwk::verify(std::string_view signing_input, std::string_view signature) const {
  std::string der;
  std::string_view sig = signature;
  if (alg_ == Alg::ES256) {
    if (!raw_to_der(signature, der)) return false;
    sig = der;
  } else if (signature.size() < 256) {
    return false;
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), digest);
  EVP_PKEY_CTX* ctx = acquire(false);
  if (!ctx) return false;
  int rc = EVP_PKEY_verify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(), digest, sizeof digest);
  release(ctx, false);
  return rc == 1;
}

bool looks_like_jwt(std::string_view token) {
  int dots = 0;
  for (char c : token) {
    if (c == '.') {
      ++dots;
    } else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
      return false;
    }
  }
  return dots == 2;
}

Result<ParsedJwt> parse_jwt(std::string_view token) {
  if (token.size() > 16384 || !looks_like_jwt(token)) return bad_request("invalid_token", "not a compact JWS");
  std::size_t d1 = token.find('.');
  std::size_t d2 = token.find('.', d1 + 1);
  ParsedJwt p;
  p.signing_input = token.substr(0, d2);
  std::string header_json, payload_json;
  if (!base64url_decode(token.substr(0, d1), header_json) ||
      !base64url_decode(token.substr(d1 + 1, d2 - d1 - 1), payload_json) ||
      !base64url_decode(token.substr(d2 + 1), p.signature))
    return bad_request("invalid_token", "bad base64url");
  boost::system::error_code ec;
  bj::value h = bj::parse(header_json, ec);
  if (ec || !h.is_object()) return bad_request("invalid_token", "bad header");
  bj::value b = bj::parse(payload_json, ec);
  if (ec || !b.is_object()) return bad_request("invalid_token", "bad payload");
  p.header = std::move(h.as_object());
  p.payload = std::move(b.as_object());
  auto field = [&](std::string_view k) -> std::string {
    auto it = p.header.find(k);
    return it != p.header.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
  };
  p.alg = field("alg");
  p.kid = field("kid");
  p.typ = field("typ");
  if (p.header.contains("crit")) return bad_request("invalid_token", "unsupported critical header");
  return p;
}

std::string half_hash(std::string_view value) {
  std::string d = crypto::sha256(value);
  return base64url_encode(std::string_view(d).substr(0, d.size() / 2));
}

namespace {

// True iff one of the 8 bytes is below 0x20, '"' or '\\'. The borrow tricks below may mark a
// byte next to a real match, never one in a word without any, so the answer is exact.
bool needs_escape8(std::uint64_t v) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  std::uint64_t quote = v ^ (kOnes * '"');
  std::uint64_t slash = v ^ (kOnes * '\\');
  std::uint64_t below = (v - kOnes * 0x20) & ~v;
  std::uint64_t is_quote = (quote - kOnes) & ~quote;
  std::uint64_t is_slash = (slash - kOnes) & ~slash;
  return ((below | is_quote | is_slash) & kHighs) != 0;
}

}  // namespace

void JsonWriter::escape(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  // Runs of characters that need no escaping (nearly all of a token's claims, and whole tokens)
  // are appended at once; they are found 8 bytes at a time.
  const std::size_t n = s.size();
  std::size_t run = 0, i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      std::uint64_t v;
      std::memcpy(&v, s.data() + i, 8);
      if (!needs_escape8(v)) {
        i += 8;
        continue;
      }
    }
    for (std::size_t end = std::min(n, i + 8); i < end; ++i) {
      auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      out.append(s.data() + run, i - run);
      run = i + 1;
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default:
          out.append("\\u00");
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
      }
    }
  }
  out.append(s.data() + run, n - run);
  out.push_back('"');
}

void JsonWriter::key(std::string_view k) {
  if (!first_) out_.push_back(',');
  first_ = false;
  escape(out_, k);
  out_.push_back(':');
}

void JsonWriter::str(std::string_view k, std::string_view v) {
  key(k);
  escape(out_, v);
}

void JsonWriter::num(std::string_view k, std::int64_t v) {
  key(k);
  out_.append(std::to_string(v));
}

void JsonWriter::boolean(std::string_view k, bool v) {
  key(k);
  out_.append(v ? "true" : "false");
}

void JsonWriter::str_array(std::string_view k, const std::vector<std::string>& v) {
  key(k);
  out_.push_back('[');
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out_.push_back(',');
    escape(out_, v[i]);
  }
  out_.push_back(']');
}

}  // namespace sika::identity
