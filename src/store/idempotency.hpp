#pragma once
// Creation under an idempotency key (docs/architecture.md, "Idempotency keys"). The caller's
// table holds the key under a unique (scope..., key) and the request's hash; its insert is
//   INSERT ... ON CONFLICT (scope..., key) DO NOTHING
// in the caller's write unit. When that insert wrote nothing, the row holding the key is read in
// the same unit: the same request hash is a replay (the stored row is the answer), another hash a
// 409 naming the key's field. The normal path is the insert alone: no read before it, no
// allocation of its own.
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::store {

// How one creation's key answers; a constant per caller.
struct IdempotencyKey {
  std::string_view field;            // the key's field, named by a 409: "transaction_uuid"
  std::string_view reused;           // its text there: "was already used for a different request"
  std::string_view reference_field;  // the stored row's reference, also in the 409 ("": not named)
  Error (*in_flight)();              // the key is held by a row this unit cannot read yet
};

// What a stored row says of the request that created it.
struct Stored {
  std::string_view request_hash;
  std::string_view reference;
};

// Nothing when the stored row was created by a request of hash `request_hash`; otherwise the 409
// {key.field: key.reused[, key.reference_field: stored.reference]}.
Status same_request(const IdempotencyKey& key, std::string_view request_hash, const Stored& stored);

// The outcome of an insert under a key: exactly one of id (this request created the row) and
// stored (the row that already held the key) is set.
template <class Row>
struct Keyed {
  std::optional<std::int64_t> id;
  std::optional<Row> stored;
};

// Runs `insert(c)` (Result<std::optional<std::int64_t>>: the new row's id, nullopt when the key is
// taken); when it wrote nothing, `find(c)` (Result<std::optional<Row>>: the row holding the key).
// A key taken by a row `find` does not see answers key.in_flight().
template <class Row, class Insert, class Find>
Result<Keyed<Row>> insert_or_fetch(Conn& c, const IdempotencyKey& key, Insert&& insert, Find&& find) {
  Keyed<Row> out;
  SIKA_ASSIGN_OR_RETURN(out.id, insert(c));
  if (out.id) return out;
  SIKA_ASSIGN_OR_RETURN(out.stored, find(c));
  if (!out.stored) return key.in_flight();
  return out;
}

// insert_or_fetch, then same_request on the stored row (`describe(row)` gives its Stored): a
// stored row returned is a replay of this very request.
template <class Row, class Insert, class Find, class Describe>
Result<Keyed<Row>> insert_or_replay(Conn& c, const IdempotencyKey& key, std::string_view request_hash, Insert&& insert,
                                    Find&& find, Describe&& describe) {
  SIKA_ASSIGN_OR_RETURN(Keyed<Row> out, insert_or_fetch<Row>(c, key, insert, find));
  if (out.stored) SIKA_TRY(same_request(key, request_hash, describe(*out.stored)));
  return out;
}

}  // namespace sika::store
