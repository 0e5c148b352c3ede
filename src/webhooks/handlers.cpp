// The gateway handlers of webhooks: endpoints, deliveries and events of the calling merchant,
// each calling the registry (registry.hpp) and answering with the envelope.
#include "webhooks/service.hpp"

#include <boost/json.hpp>

#include "core/json.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "web/envelope.hpp"

namespace sika::webhooks {

namespace bj = boost::json;

namespace {

// The calling merchant, or an error response when the credential belongs to none.
Result<std::int64_t> merchant_of(const web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(const web::Principal* caller, web::merchant_caller(req));
  return caller->merchant_id;
}

// Reads an optional JSON object body: empty means {}.
Result<bj::object> optional_body(const web::Request& req) {
  if (req.body.empty()) return bj::object{};
  return web::body_object(req);
}

// Adds an error for every body key other than `allowed`, the one field the request accepts.
void reject_other_fields(const bj::object& body, std::string_view allowed, json::FieldErrors& errors) {
  for (const auto& [key, value] : body)
    if (key != allowed) errors.add(key, reason::with(Reason::request_field, "allowed", std::string(allowed)));
}

std::optional<std::string> nonempty_query(const web::Request& req, std::string_view name) {
  auto v = req.query_param(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

}  // namespace

Result<web::Response> Service::list_endpoints(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  bj::object errors;
  web::Page page = web::parse_page(req, errors);
  if (!errors.empty()) return empty_data(std::move(errors));
  SIKA_ASSIGN_OR_RETURN(auto list, registry_->list(merchant, page.limit, page.offset()));
  bj::array items;
  for (const auto& e : list.items) items.push_back(to_json(e));
  return web::ok(req, std::move(items), web::pagination(page, list.total));
}

Result<web::Response> Service::create_endpoint(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  SIKA_ASSIGN_OR_RETURN(auto change, parse_endpoint_change(body, true));
  SIKA_ASSIGN_OR_RETURN(auto created, registry_->create(merchant, change, now_ms()));
  return web::ok(req, to_json(created), {}, "created", 201);
}

Result<web::Response> Service::get_endpoint(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  SIKA_ASSIGN_OR_RETURN(auto e, registry_->get(merchant, req.path_param("endpoint_id")));
  return web::ok(req, to_json(e));
}

Result<web::Response> Service::update_endpoint(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  SIKA_ASSIGN_OR_RETURN(auto body, web::body_object(req));
  SIKA_ASSIGN_OR_RETURN(auto change, parse_endpoint_change(body, false));
  SIKA_ASSIGN_OR_RETURN(auto e, registry_->update(merchant, req.path_param("endpoint_id"), change, now_ms()));
  return web::ok(req, to_json(e));
}

Result<web::Response> Service::delete_endpoint(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  const std::string id = req.path_param("endpoint_id");
  SIKA_TRY(registry_->remove(merchant, id, now_ms()));
  bj::object data;
  data["id"] = id;
  data["deleted"] = true;
  return web::ok(req, std::move(data));
}

Result<web::Response> Service::rotate_secret(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  SIKA_ASSIGN_OR_RETURN(auto body, optional_body(req));
  json::FieldErrors errors;
  reject_other_fields(body, "overlap_seconds", errors);
  auto overlap = json::get_int(body, "overlap_seconds", errors);
  SIKA_TRY(errors.status());
  std::optional<std::int64_t> overlap_ms;
  if (overlap) {
    if (*overlap < 0 || *overlap > registry_->options().max_secret_overlap_ms / 1000) {
      bj::object d;
      d["overlap_seconds"] =
          "must be between 0 and " + std::to_string(registry_->options().max_secret_overlap_ms / 1000);
      return empty_data(std::move(d));
    }
    overlap_ms = *overlap * 1000;
  }
  SIKA_ASSIGN_OR_RETURN(auto rotated,
                        registry_->rotate_secret(merchant, req.path_param("endpoint_id"), overlap_ms, now_ms()));
  return web::ok(req, to_json(rotated));
}

Result<web::Response> Service::list_deliveries(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  bj::object errors;
  web::Page page = web::parse_page(req, errors);
  if (!errors.empty()) return empty_data(std::move(errors));
  DeliveryFilter filter;
  filter.endpoint_id = nonempty_query(req, "endpoint_id");
  filter.event_id = nonempty_query(req, "event_id");
  filter.status = nonempty_query(req, "status");
  SIKA_ASSIGN_OR_RETURN(auto list, registry_->list_deliveries(merchant, filter, page.limit, page.offset()));
  bj::array items;
  for (const auto& d : list.items) items.push_back(to_json(d));
  return web::ok(req, std::move(items), web::pagination(page, list.total));
}

Result<web::Response> Service::get_delivery(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  SIKA_ASSIGN_OR_RETURN(auto d, registry_->get_delivery(merchant, req.path_param("delivery_id")));
  bj::object data = to_json(d.delivery);
  bj::array attempts;
  for (const auto& a : d.attempts) attempts.push_back(to_json(a));
  data["attempts"] = std::move(attempts);
  data["payload"] = bj::parse(delivery_body(d.event));
  return web::ok(req, std::move(data));
}

Result<web::Response> Service::list_events(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  bj::object errors;
  web::Page page = web::parse_page(req, errors);
  if (!errors.empty()) return empty_data(std::move(errors));
  SIKA_ASSIGN_OR_RETURN(auto list,
                        registry_->list_events(merchant, nonempty_query(req, "event_type"), page.limit, page.offset()));
  bj::array items;
  for (const auto& e : list.items) items.push_back(to_json(e));
  return web::ok(req, std::move(items), web::pagination(page, list.total));
}

Result<web::Response> Service::redeliver(web::Request& req) {
  SIKA_ASSIGN_OR_RETURN(auto merchant, merchant_of(req));
  SIKA_ASSIGN_OR_RETURN(auto body, optional_body(req));
  json::FieldErrors errors;
  reject_other_fields(body, "endpoint_id", errors);
  auto endpoint = json::get_string(body, "endpoint_id", errors);
  SIKA_TRY(errors.status());
  SIKA_ASSIGN_OR_RETURN(auto created, registry_->redeliver(merchant, req.path_param("event_id"), endpoint, now_ms()));
  bj::array items;
  for (const auto& d : created) items.push_back(to_json(d));
  return web::ok(req, std::move(items), {}, "submitted", 202);
}

}  // namespace sika::webhooks
