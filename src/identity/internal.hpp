#pragma once
// Helpers shared by the identity service's translation units (not part of the public API).
#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"
#include "web/message.hpp"

namespace sika::identity {

// An RFC 6749 §5.2 error: message = code, details = {error, error_description}.
Error oauth_error(ErrorKind kind, std::string_view code, std::string_view description);
// 401 invalid_token with details {error: "invalid_token", error_description}.
Error invalid_token(std::string_view description);
// The string value of a body field ("" when absent or not a string).
std::string param(const boost::json::object& o, std::string_view key);
// base64url(SHA-256(verifier)) (RFC 7636 S256).
std::string pkce_s256(std::string_view verifier);
// True iff v is 43..128 characters of [A-Za-z0-9-._~] (RFC 7636 §4.1).
bool valid_pkce_verifier(std::string_view v);
// Cache-Control: no-store and Pragma: no-cache.
void no_store(web::Response& res);
// True iff `s` starts with `prefix`, ignoring ASCII case.
bool iequals_prefix(std::string_view s, std::string_view prefix);
// `s` without leading and trailing spaces and tabs.
std::string_view trim(std::string_view s);

}  // namespace sika::identity
