// Demo world of payments: the sandbox's one-time code and magic numbers (valid wallets of the
// first merchant's country, CMR), and funded customer wallets for the WALLET channel. Funding is
// posted once (a journal per wallet, found again by its memo), so restarts never add money.
#include <boost/json.hpp>

#include "app/demo.hpp"
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
  sandbox["wallets"] = std::move(wallets);
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
