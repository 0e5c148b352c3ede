#include "store/migrations/all.hpp"

namespace sika::store::migrations {

// Per-client choice of the client_credentials answer: 0 gives the spec's five fields (access,
// refresh and ID token), 1 the access token alone (RFC 6749 §4.4.3).
extern const Migration k0007IdentityClientCredentials{7, "identity_client_credentials", R"SQL(
ALTER TABLE oauth_clients ADD COLUMN strict_client_credentials INTEGER NOT NULL DEFAULT 0
)SQL"};

}  // namespace sika::store::migrations
