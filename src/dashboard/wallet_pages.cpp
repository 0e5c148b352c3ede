// The wallet link partner's pages: its links to users' wallets (list, unlink). The partner is the
// member's merchant; the links come from wallets::Service, whose rules the link API also follows.
#include <boost/json.hpp>

#include <algorithm>

#include "core/money.hpp"
#include "dashboard/internal.hpp"
#include "dashboard/texts.hpp"
#include "wallets/service.hpp"
#include "web/acting.hpp"

namespace sika::dashboard {

namespace bj = boost::json;
using web::html::escape;

namespace {
constexpr int kLinksPerPage = 50;
}  // namespace

web::Response Service::wallet_links(web::Request& req) {
  auto c = member_context(req, /*changes=*/false);
  if (!c) return error_page(req, c.error());
  if (!parts_.wallets) return error_page(req, unavailable(bj::string("wallets not configured")));
  auto before = before_cursor(req);
  if (!before) return error_page(req, before.error());
  // One more than a page tells whether a next page exists.
  auto links = parts_.wallets->partner_links(web::acting(c->principal), *before, kLinksPerPage + 1);
  if (!links) return error_page(req, links.error());
  const bool more = links->size() > static_cast<std::size_t>(kLinksPerPage);
  if (more) links->pop_back();
  const std::int64_t at = now();
  std::string body = "<p class=\"muted\">" + std::string(say(c->locale, "your_users_wallets_linked_through")) + "</p>";
  if (links->empty()) {
    body += "<p class=\"muted\">" + std::string(say(c->locale, "no_linked_wallet")) + "</p>";
  } else {
    body += "<div class=\"scroll\"><table id=\"wallet-links\"><thead><tr><th>" +
            std::string(say(c->locale, "reference")) + "</th><th>" + std::string(say(c->locale, "wallet")) +
            "</th><th>" + std::string(say(c->locale, "phone")) + "</th><th>" + std::string(say(c->locale, "status")) +
            "</th><th class=\"num\">" + std::string(say(c->locale, "per_payment")) + "</th><th class=\"num\">" +
            std::string(say(c->locale, "left_this_period")) + "</th><th>" +
            std::string(say(c->locale, "created_masc")) + "</th><th></th></tr></thead><tbody>";
    for (const auto& l : *links) {
      const std::int64_t left = std::max<std::int64_t>(0, l.limits.per_period - wallets::spent_at(l, at));
      body += "<tr><td>" + escape(l.reference) + "</td><td>" + escape(l.wallet.matricule) + "</td><td>" +
              escape(wallets::masked_phone(l.wallet.msisdn)) + "</td><td>" + badge(l.status) +
              "</td><td class=\"num\">" + escape(money::format(l.limits.per_payment, l.currency)) +
              "</td><td class=\"num\">" + escape(money::format(left, l.currency)) + "</td><td>" +
              escape(when(l.created_at, c->zone)) + "</td><td>";
      if (l.status != "UNLINKED" && c->principal.can_change())
        body += "<form method=\"post\" action=\"" +
                escape(path("/wallet-links/" + web::percent_encode(l.reference) + "/unlink")) + "\">" +
                c->csrf_field() + "<button class=\"secondary\">" + std::string(say(c->locale, "unlink")) +
                "</button></form>";
      body += "</td></tr>";
    }
    body += "</tbody></table></div>";
    if (more) body += next_page_link(*c, "before=" + std::to_string(links->back().id));
  }
  return page(req, *c, std::string(say(c->locale, "linked_wallets")), body);
}

web::Response Service::wallet_unlink(web::Request& req) {
  auto c = member_context(req, /*changes=*/true);
  if (!c) return error_page(req, c.error());
  if (!parts_.wallets) return error_page(req, unavailable(bj::string("wallets not configured")));
  const std::string reference = req.path_param("reference");
  // The user hears of it by SMS and the partner's webhooks get wallet_link.unlinked, as when the
  // partner unlinks through the API.
  auto unlinked = parts_.wallets->unlink_by_reference(web::acting(c->principal), reference);
  if (!unlinked) return error_page(req, unlinked.error());
  (void)record(*c, c->principal.merchant_id, "wallet_link.unlink", reference);
  return see_other("/wallet-links");
}

}  // namespace sika::dashboard
