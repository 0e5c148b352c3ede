// Demo world of payment links: for each demo merchant listed in the demo JSON, a fixed-amount
// and an open-amount link in its country's currency. Each is found again by its `demo` metadata
// mark, so restarts never add links.
#include <boost/json.hpp>

#include "app/demo.hpp"
#include "catalog/service.hpp"
#include "links/service.hpp"
#include "merchant/merchant.hpp"

namespace sika::app {

namespace bj = boost::json;

Status seed_links_demo(Context& ctx, bj::object& demo) {
  if (!ctx.links || !ctx.catalog) return {};
  auto cat = ctx.catalog->snapshot();
  bj::array out;
  const auto* merchants = demo.if_contains("merchants");
  if (!merchants || !merchants->is_array()) return {};
  for (const auto& entry : merchants->as_array()) {
    std::string matricule(entry.at("matricule").as_string());
    std::optional<merchant::Merchant> m;
    SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(m, merchant::find_by_matricule(c, matricule));
      return {};
    }));
    if (!m || m->countries.empty()) continue;
    const catalog::Country* country = cat->country(m->countries.front());
    if (!country) continue;
    const Acting p = Acting::system(m->id, m->matricule, m->environment, "demo", 1, m->countries);
    for (const char* kind : {"fixed", "open"}) {
      const std::string mark = std::string(R"({"demo":")") + kind + R"("})";
      std::optional<std::string> code;
      SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
        SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT short_code FROM lnk_links WHERE merchant_id = ? "
                                                    "AND metadata = ? ORDER BY id LIMIT 1",
                                                    {m->id, mark}));
        if (row) code = row->str(0);
        return {};
      }));
      links::Link link;
      if (code) {
        SIKA_ASSIGN_OR_RETURN(link, ctx.links->by_code(*code));
      } else {
        links::NewLink n;
        n.currency = country->currency;
        n.metadata = mark;
        if (std::string_view(kind) == "fixed") {
          n.amount = 5'000;
          n.title = "Demo order (fixed amount)";
        } else {
          n.min_amount = 100;
          n.max_amount = 500'000;
          n.title = "Demo donation (open amount)";
        }
        SIKA_ASSIGN_OR_RETURN(link, ctx.links->create_link(p, n));
      }
      out.push_back(bj::object{{"merchant", m->matricule},
                               {"kind", kind},
                               {"reference", link.reference},
                               {"short_code", link.short_code},
                               {"payment_url", ctx.links->payment_url(link)},
                               {"amount", link.amount ? bj::value(*link.amount) : bj::value(nullptr)},
                               {"currency", link.currency}});
    }
  }
  demo["payment_links"] = std::move(out);
  return {};
}

}  // namespace sika::app
