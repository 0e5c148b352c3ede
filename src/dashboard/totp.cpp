#include "dashboard/totp.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>

#include "core/crypto.hpp"
#include "web/message.hpp"

namespace sika::dashboard::totp {

namespace {
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
}  // namespace

std::string base32_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 8 + 4) / 5);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char b : bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kAlphabet[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (5 - bits)) & 31]);
  return out;
}

std::optional<std::string> base32_decode(std::string_view text) {
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char ch : text) {
    if (ch == ' ' || ch == '=' || ch == '-') continue;
    char up = (ch >= 'a' && ch <= 'z') ? static_cast<char>(ch - 'a' + 'A') : ch;
    auto pos = kAlphabet.find(up);
    if (pos == std::string_view::npos) return std::nullopt;
    buffer = (buffer << 5) | static_cast<std::uint32_t>(pos);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<char>((buffer >> (bits - 8)) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

std::string hotp(std::string_view key, std::uint64_t counter, int digits) {
  std::array<unsigned char, 8> msg{};
  for (int i = 7; i >= 0; --i) {
    msg[static_cast<std::size_t>(i)] = static_cast<unsigned char>(counter & 0xff);
    counter >>= 8;
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  HMAC(EVP_sha1(), key.data(), static_cast<int>(key.size()), msg.data(), msg.size(), mac.data(), &len);
  const unsigned offset = mac[len - 1] & 0x0f;
  std::uint32_t bin = (static_cast<std::uint32_t>(mac[offset] & 0x7f) << 24) |
                      (static_cast<std::uint32_t>(mac[offset + 1]) << 16) |
                      (static_cast<std::uint32_t>(mac[offset + 2]) << 8) | static_cast<std::uint32_t>(mac[offset + 3]);
  std::uint32_t mod = 1;
  for (int i = 0; i < digits; ++i) mod *= 10;
  std::string code = std::to_string(bin % mod);
  return std::string(static_cast<std::size_t>(digits) - code.size(), '0') + code;
}

std::int64_t step_of(std::int64_t epoch_ms) { return epoch_ms / 1000 / kPeriodSeconds; }

std::string code_at(std::string_view key, std::int64_t epoch_ms, int digits) {
  return hotp(key, static_cast<std::uint64_t>(step_of(epoch_ms)), digits);
}

std::optional<std::int64_t> match(std::string_view key, std::string_view code, std::int64_t now_ms) {
  if (code.size() != static_cast<std::size_t>(kDigits)) return std::nullopt;
  const std::int64_t now_step = step_of(now_ms);
  std::optional<std::int64_t> found;
  // Every candidate is computed and compared, so the time taken says nothing about which matched.
  for (std::int64_t step = now_step - 1; step <= now_step + 1; ++step)
    if (crypto::constant_time_equal(hotp(key, static_cast<std::uint64_t>(step)), code) && !found) found = step;
  return found;
}

std::string otpauth_uri(std::string_view issuer, std::string_view account, std::string_view secret_base32) {
  std::string label = web::percent_encode(issuer) + ":" + web::percent_encode(account);
  return "otpauth://totp/" + label + "?secret=" + std::string(secret_base32) +
         "&issuer=" + web::percent_encode(issuer) + "&algorithm=SHA1&digits=6&period=30";
}

}  // namespace sika::dashboard::totp
