#include "store/idempotency.hpp"

#include <boost/json.hpp>

namespace sika::store {

Status same_request(const IdempotencyKey& key, std::string_view request_hash, const Stored& stored) {
  if (stored.request_hash == request_hash) return {};
  boost::json::object details{{key.field, key.reused}};
  if (!key.reference_field.empty()) details[key.reference_field] = stored.reference;
  return conflict(std::move(details));
}

}  // namespace sika::store
