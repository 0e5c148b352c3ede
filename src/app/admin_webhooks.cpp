// `sika admin` commands of the webhooks component: notification endpoints (with the same URL
// checks as the gateway), deliveries and their attempts, redelivery. Operator scope: every
// merchant's objects are visible; --merchant narrows lists.
#include <boost/json.hpp>

#include <memory>

#include "app/admin.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "webhooks/service.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {

webhooks::Registry& registry(Context& ctx) {
  if (!ctx.webhooks) fail(unavailable(bj::string("the webhooks service is not built")));
  return ctx.webhooks->registry();
}

// Resolves --merchant MATRICULE (empty: no filter).
std::optional<std::int64_t> merchant_scope(Context& ctx, const std::string& matricule) {
  if (matricule.empty()) return std::nullopt;
  std::optional<merchant::Merchant> m;
  check(ctx.db->read([&](store::Conn& c) -> Status {
    SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, matricule));
    return {};
  }));
  if (!m) fail(not_found(bj::object{{"merchant", "unknown matricule " + matricule}}));
  return m->id;
}

std::string endpoint_line(const webhooks::Endpoint& e) {
  return e.id + "\t" + (e.enabled ? "enabled" : "disabled(" + e.disabled_reason.value_or("") + ")") + "\t" +
         webhooks::join_types(e.event_types) + "\t" + e.url;
}

struct EndpointArgs {
  std::string merchant, id, url, description;
  std::vector<std::string> event_types;
  bool enable = false, disable = false;
  std::int64_t overlap_seconds = -1;
};

webhooks::EndpointChange change_of(const EndpointArgs& a, bool creating) {
  webhooks::EndpointChange ch;
  if (!a.url.empty()) ch.url = a.url;
  if (!a.description.empty()) ch.description = a.description;
  if (!a.event_types.empty()) {
    for (const auto& t : a.event_types)
      if (!webhooks::valid_type_pattern(t))
        fail(empty_data(bj::object{{"event_type", "'" + t + "' is not an event kind or prefix (e.g. transaction.*)"}}));
    ch.event_types = a.event_types;
  }
  if (a.enable) ch.enabled = true;
  if (a.disable) ch.enabled = false;
  if (creating && !ch.url) fail(empty_data(bj::object{{"url", "is required"}}));
  return ch;
}

}  // namespace

void add_webhooks_admin(CLI::App& admin, AdminEnv& env) {
  {
    auto* cmd = add_command(admin, env, "create-webhook-endpoint",
                            "Register a merchant's notification endpoint (the signing secret is shown once)");
    auto a = std::make_shared<EndpointArgs>();
    cmd->add_option("--merchant", a->merchant, "owning merchant's matricule")->required();
    cmd->add_option("--url", a->url, "http(s) URL receiving the POSTs")->required();
    cmd->add_option("--event-type", a->event_types, "event kind or prefix.* to receive (repeatable; default all)");
    cmd->add_option("--description", a->description, "free text");
    cmd->add_flag("--disabled", a->disable, "create it disabled");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      auto merchant = merchant_scope(ctx, a->merchant);
      auto created = check(registry(ctx).create(*merchant, change_of(*a, true), now_ms()));
      print_result(env, webhooks::to_json(created),
                   "created " + endpoint_line(created.endpoint) + "\nsigning secret (shown once): " + created.secret);
    });
  }
  {
    auto* cmd = add_command(admin, env, "list-webhook-endpoints", "List notification endpoints");
    auto merchant = std::make_shared<std::string>();
    cmd->add_option("--merchant", *merchant, "only this merchant's");
    cmd->callback([&env, merchant] {
      Context& ctx = env.context();
      auto list = check(registry(ctx).list(merchant_scope(ctx, *merchant), 1000, 0));
      bj::array out;
      std::string human;
      for (const auto& e : list.items) {
        out.push_back(webhooks::to_json(e));
        human += endpoint_line(e) + "\n";
      }
      print_result(env, out, human);
    });
  }
  {
    auto* cmd = add_command(admin, env, "update-webhook-endpoint", "Change, enable or disable an endpoint");
    auto a = std::make_shared<EndpointArgs>();
    cmd->add_option("--id", a->id, "endpoint id (we_...)")->required();
    cmd->add_option("--url", a->url, "new URL");
    cmd->add_option("--event-type", a->event_types, "event kinds (replaces the list; repeatable)");
    cmd->add_option("--description", a->description, "free text");
    auto* en = cmd->add_flag("--enable", a->enable, "enable it (clears the disabled mark)");
    auto* dis = cmd->add_flag("--disable", a->disable, "disable it (cancels its pending deliveries)");
    en->excludes(dis);
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      auto e = check(registry(ctx).update(std::nullopt, a->id, change_of(*a, false), now_ms()));
      print_result(env, webhooks::to_json(e), "updated " + endpoint_line(e));
    });
  }
  {
    auto* cmd = add_command(admin, env, "delete-webhook-endpoint", "Delete an endpoint (its history stays listed)");
    auto id = std::make_shared<std::string>();
    cmd->add_option("--id", *id, "endpoint id (we_...)")->required();
    cmd->callback([&env, id] {
      Context& ctx = env.context();
      check(registry(ctx).remove(std::nullopt, *id, now_ms()));
      print_result(env, bj::object{{"id", *id}, {"deleted", true}}, "deleted " + *id);
    });
  }
  {
    auto* cmd = add_command(admin, env, "rotate-webhook-secret",
                            "Replace an endpoint's signing secret (shown once); the old one signs during the overlap");
    auto a = std::make_shared<EndpointArgs>();
    cmd->add_option("--id", a->id, "endpoint id (we_...)")->required();
    cmd->add_option("--overlap-seconds", a->overlap_seconds, "how long the previous secret keeps signing");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      std::optional<std::int64_t> overlap;
      if (a->overlap_seconds >= 0) overlap = a->overlap_seconds * 1000;
      auto rotated = check(registry(ctx).rotate_secret(std::nullopt, a->id, overlap, now_ms()));
      print_result(env, webhooks::to_json(rotated),
                   "rotated " + rotated.endpoint.id + "\nnew signing secret (shown once): " + rotated.secret);
    });
  }
  {
    auto* cmd = add_command(admin, env, "list-webhook-deliveries", "List deliveries, newest first");
    struct Args {
      std::string merchant;
      webhooks::DeliveryFilter filter;
      std::string endpoint, event, status;
      std::int64_t limit = 50;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--merchant", a->merchant, "only this merchant's");
    cmd->add_option("--endpoint", a->endpoint, "only to this endpoint (we_...)");
    cmd->add_option("--event", a->event, "only of this event (evt_...)");
    cmd->add_option("--status", a->status, "pending, succeeded, failed or cancelled");
    cmd->add_option("--limit", a->limit, "at most this many (1-1000)")->check(CLI::Range(1, 1000));
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      webhooks::DeliveryFilter f;
      if (!a->endpoint.empty()) f.endpoint_id = a->endpoint;
      if (!a->event.empty()) f.event_id = a->event;
      if (!a->status.empty()) f.status = a->status;
      auto list = check(registry(ctx).list_deliveries(merchant_scope(ctx, a->merchant), f, a->limit, 0));
      bj::array out;
      std::string human;
      for (const auto& d : list.items) {
        out.push_back(webhooks::to_json(d));
        human += d.id + "\t" + d.status + "\t" + std::to_string(d.attempts) + " attempt(s)\t" + d.event_type + "\t" +
                 d.event_id + "\t" + d.endpoint_id + "\n";
      }
      print_result(env, out, human);
    });
  }
  {
    auto* cmd = add_command(admin, env, "show-webhook-delivery", "Show a delivery with every attempt");
    auto id = std::make_shared<std::string>();
    cmd->add_option("--id", *id, "delivery id (wd_...)")->required();
    cmd->callback([&env, id] {
      Context& ctx = env.context();
      auto d = check(registry(ctx).get_delivery(std::nullopt, *id));
      bj::object out = webhooks::to_json(d.delivery);
      bj::array attempts;
      std::string human = d.delivery.id + " " + d.delivery.status + " to " + d.delivery.url + "\n";
      for (const auto& a : d.attempts) {
        attempts.push_back(webhooks::to_json(a));
        human += "  #" + std::to_string(a.attempt) + " " + iso8601(a.started_at) + " " + a.outcome +
                 (a.status_code ? " HTTP " + std::to_string(*a.status_code) : "") + " " + std::to_string(a.latency_ms) +
                 " ms" + (a.error ? " " + *a.error : "") + "\n";
      }
      out["attempts"] = std::move(attempts);
      out["payload"] = bj::parse(webhooks::delivery_body(d.event));
      print_result(env, out, human);
    });
  }
  {
    auto* cmd = add_command(admin, env, "redeliver-webhook-event",
                            "Deliver an event again (to one endpoint, or to every subscribed one)");
    auto a = std::make_shared<EndpointArgs>();
    cmd->add_option("--event", a->id, "event id (evt_...)")->required();
    cmd->add_option("--endpoint", a->url, "only to this endpoint (we_...)");
    cmd->callback([&env, a] {
      Context& ctx = env.context();
      std::optional<std::string> endpoint;
      if (!a->url.empty()) endpoint = a->url;
      auto created = check(registry(ctx).redeliver(std::nullopt, a->id, endpoint, now_ms()));
      bj::array out;
      std::string human;
      for (const auto& d : created) {
        out.push_back(webhooks::to_json(d));
        human += "queued " + d.id + " to " + d.endpoint_id + "\n";
      }
      print_result(env, out, human);
    });
  }
}

}  // namespace sika::app
