// Password sign-in: the throttles taken before a password is compared, and device cookies.
//
// Every attempt is answered the same way whether or not an account has the e-mail typed: the same
// counters (keyed by a hash of the e-mail), the same argon2id work (a dummy hash for unknown and
// disabled accounts), the same 401 page for a wrong password and the same 429 page with
// Retry-After once a throttle applies. Each counter is one upsert in rate_limits, taken before the
// password is compared, so concurrent attempts on any number of nodes never compare more passwords
// than the limits allow. docs/identity.md, "Throttling and lockout", states the policy.
#include <boost/json.hpp>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "identity/internal.hpp"
#include "identity/service.hpp"
#include "identity/store.hpp"
#include "web/cookie.hpp"

namespace sika::identity {

namespace {

constexpr std::string_view kDeviceCookie = "sika_device";
constexpr std::int64_t kAccountWindowMs = 3600 * 1000;
constexpr std::int64_t kAddressWindowMs = 60 * 1000;

// The dummy hash makes a sign-in with an unknown e-mail cost as much as a wrong password.
const std::string& dummy_password_hash() {
  static const std::string h = crypto::password_hash(random_token(16));
  return h;
}

}  // namespace

std::string Service::account_key(std::string_view email) const {
  return base64url_encode(crypto::hmac_sha256(login_key_, "account|" + normalize_email(email))).substr(0, 22);
}

std::string Service::device_cookie_for(std::string_view email) const {
  std::string nonce = random_token(16);
  std::string mac = base64url_encode(crypto::hmac_sha256(login_key_, "device|" + nonce + "|" + account_key(email)));
  return "d1." + nonce + "." + mac;
}

std::string Service::trusted_device(const web::Request& req, std::string_view email) const {
  std::string value = web::cookie(req, kDeviceCookie);
  if (value.size() > 120 || !value.starts_with("d1.")) return {};
  std::size_t dot = value.find('.', 3);
  if (dot == std::string::npos) return {};
  std::string nonce = value.substr(3, dot - 3);
  if (nonce.empty()) return {};
  std::string want = base64url_encode(crypto::hmac_sha256(login_key_, "device|" + nonce + "|" + account_key(email)));
  if (!crypto::constant_time_equal(want, std::string_view(value).substr(dot + 1))) return {};
  return nonce;
}

Service::LoginOutcome Service::attempt_login(const web::Request& req, std::string_view email,
                                             std::string_view password) {
  using Kind = LoginOutcome::Kind;
  const std::string account = account_key(email);
  const std::int64_t window_ms = std::int64_t{opts_.lockout_seconds} * 1000;
  auto throttled = [](const limits::Decision& d) {
    return LoginOutcome{.kind = Kind::throttled,
                        .retry_after_s = std::max<std::int64_t>(1, (d.retry_after_ms + 999) / 1000)};
  };

  // A device cookie of this account, while it has attempts left, is judged by its own count only:
  // failures made elsewhere (other addresses, the account's ceiling) do not stop its owner.
  const std::string device = trusted_device(req, email);
  bool trusted = false;
  if (!device.empty()) {
    auto d = limiter_.hit(
        "login:device:" + device,
        limits::Policy{.limit = opts_.max_failed_logins, .window_ms = window_ms, .name = "login_attempts_per_device"});
    if (!d) return {.kind = Kind::unavailable};
    trusted = d->allowed;  // past its attempts, the cookie counts for nothing until the window ends
  }
  const std::string pair = "login:pair:" + account + ":" + req.remote_ip;
  if (!trusted) {
    struct Step {
      std::string bucket;
      limits::Policy policy;
    };
    const Step steps[] = {
        {"login-ip:" + req.remote_ip,
         {.limit = opts_.login_attempts_per_ip, .window_ms = kAddressWindowMs, .name = "logins_per_address"}},
        {pair, {.limit = opts_.max_failed_logins, .window_ms = window_ms, .name = "logins_per_account_and_address"}},
        {"login:acct:" + account,
         {.limit = opts_.login_failures_per_account, .window_ms = kAccountWindowMs, .name = "logins_per_account"}},
    };
    for (const Step& s : steps) {
      auto d = limiter_.hit(s.bucket, s.policy);
      if (!d) return {.kind = Kind::unavailable};
      if (!d->allowed) return throttled(*d);
    }
  }

  std::optional<User> found;
  Status st = db_.read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(found, find_user_by_email(c, email));
    return {};
  });
  if (!st) return {.kind = Kind::unavailable};
  const bool usable = found && found->active;
  const bool right = crypto::password_verify(password, usable ? found->password_hash : dummy_password_hash());
  if (!usable || !right) return {.kind = Kind::refused};
  // The attempts of this address (or device) start again after a success; the account's
  // ceiling does not: it counts guesses from everywhere.
  (void)limiter_.reset(trusted ? "login:device:" + device : pair);
  return {.kind = Kind::signed_in, .user = std::move(found)};
}

}  // namespace sika::identity
