// Demo world of payments: the sandbox's one-time code and magic numbers (valid wallets of the
// first merchant's country, CMR), and funded customer wallets for the WALLET channel. Funding is
// posted once (a journal per wallet, found again by its memo), so restarts never add money.
#include <boost/json.hpp>

#include "app/demo.hpp"
#include "catalog/service.hpp"
#include "payments/service.hpp"

namespace sika::app {

namespace bj = boost::json;

namespace {
struct DemoWallet {
  const char* msisdn;
  const char* currency;
  std::int64_t amount;
};
constexpr DemoWallet kWallets[] = {
    {"237690000100", "XAF", 500'000},   // CMR
    {"237690000200", "XAF", 2'000},     // CMR, a small balance (AUTO falls back to the operator)
    {"2250700000100", "XOF", 500'000},  // CIV
};
// Each served country's sandbox numbers: a national number valid for its operators ending in
// the four digits that pick the outcome (payments/sandbox.hpp).
struct CountryNumbers {
  const char* country;
  const char* prefix;  // national number without its last four digits
};
constexpr CountryNumbers kCountryNumbers[] = {
    {"CMR", "69000"},   // 6xxxxxxxx
    {"CIV", "070000"},  // 0[157]xxxxxxxx
    {"SEN", "77000"},   // 7[05-8]xxxxxxx
    {"GAB", "6600"},    // [67]xxxxxxx
};
constexpr std::pair<const char*, const char*> kOutcomes[] = {
    {"success", "0000"},
    {"failure", "0001"},
    {"insufficient_funds", "0001"},
    {"rejected", "0002"},
    {"timeout", "0003"},
    {"invalid_account", "0004"},
    {"pending", "0005"},
    {"duplicate_callback", "0006"},
    {"late_callback", "0007"},
};
}  // namespace

Status seed_payments_demo(Context& ctx, bj::object& demo) {
  if (!ctx.payments) return {};
  bj::array wallets;
  for (const auto& w : kWallets) {
    const std::string memo = std::string("demo funding ") + w.msisdn;
    bool funded = false;
    SIKA_TRY(ctx.db->read([&](store::Conn& c) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto row, c.query_one("SELECT id FROM ledger_journals WHERE kind = 'WALLET_FUNDING' AND "
                                                  "environment = 'sandbox' AND memo = ?",
                                                  {memo}));
      funded = row.has_value();
      return {};
    }));
    if (!funded) SIKA_TRY(ctx.payments->fund_wallet("sandbox", w.msisdn, w.currency, w.amount, memo));
    SIKA_ASSIGN_OR_RETURN(std::int64_t balance, ctx.payments->account_balance(payments::ledger::customer_wallet(
                                                    w.msisdn, "sandbox", w.currency)));
    wallets.push_back(bj::object{{"msisdn", w.msisdn}, {"currency", w.currency}, {"balance", balance}});
  }
  bj::object msisdn{
      {"success", "237690000000"},         {"failure", "237690000001"},
      {"pending", "237690000005"},         {"insufficient_funds", "237690000001"},
      {"rejected", "237690000002"},        {"timeout", "237690000003"},
      {"invalid_account", "237690000004"}, {"duplicate_callback", "237690000006"},
      {"late_callback", "237690000007"},
  };
  bj::object sandbox;
  sandbox["otp"] = ctx.config.get_string("payments.sandbox_otp");
  sandbox["msisdn"] = std::move(msisdn);
  // Every served country's numbers, and its funded wallet when it has one.
  bj::array countries;
  if (auto cat = ctx.catalog ? ctx.catalog->snapshot() : nullptr; cat && cat->loaded())
    for (const auto& c : cat->countries()) {
      // The countries demo.json's catalog lists: those with a usable service.
      bool served = false;
      for (const auto& s : cat->services()) served = served || (s.country_id == c.id && cat->usable(s));
      if (!served) continue;
      for (const auto& n : kCountryNumbers) {
        if (c.code != n.country) continue;
        bj::object numbers;
        for (const auto& [outcome, tail] : kOutcomes)
          numbers[outcome] = std::string(c.dialling_digits()) + n.prefix + tail;
        bj::object entry{{"country", c.code},
                         {"dialling_code", c.dialling_code},
                         {"currency", c.currency},
                         {"msisdn", std::move(numbers)}};
        for (const auto& w : kWallets)
          if (std::string_view(w.msisdn).starts_with(c.dialling_digits()) && w.currency == c.currency)
            entry["wallet"] = w.msisdn;
        countries.push_back(std::move(entry));
      }
    }
  sandbox["wallets"] = std::move(wallets);
  sandbox["countries"] = std::move(countries);
  sandbox["provider"] = "MTN_MOMO_CMR";
  sandbox["wallet_provider"] = "SIKA_WALLET_CMR";
  sandbox["rule"] =
      "the last four digits of a number pick the outcome: 0001 insufficient funds, 0002 rejected, "
      "0003 timeout, 0004 invalid account, 0005 stays pending, 0006 duplicate callback, 0007 late "
      "callback; any other number succeeds";
  demo["sandbox"] = std::move(sandbox);
  return {};
}

}  // namespace sika::app
