#include "statements/settlement.hpp"

#include <boost/json.hpp>

#include <map>

#include "core/money.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "statements/model.hpp"
#include "store/outbox.hpp"
#include "web/html.hpp"

namespace sika::statements::settlement {

namespace bj = boost::json;
namespace ledger = payments::ledger;

ledger::AccountKey settlement_account(std::int64_t merchant_id, std::string_view env, std::string_view currency) {
  return {"merchant:" + std::to_string(merchant_id), std::string(env), std::string(currency), "settlement"};
}

Status put_settings(store::Conn& c, const Settings& s, std::int64_t now) {
  SIKA_TRY(
      c.exec("INSERT INTO stl_settings (merchant_id, environment, currency, destination, provider, msisdn, iban, "
             "bic, holder, schedule, minimum, reserve, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
             "ON CONFLICT (merchant_id, environment, currency) DO UPDATE SET destination = excluded.destination, "
             "provider = excluded.provider, msisdn = excluded.msisdn, iban = excluded.iban, bic = excluded.bic, "
             "holder = excluded.holder, schedule = excluded.schedule, minimum = excluded.minimum, "
             "reserve = excluded.reserve, updated_at = excluded.updated_at",
             {s.merchant_id, s.environment, s.currency, s.destination, s.provider, s.msisdn, s.iban, s.bic, s.holder,
              s.schedule, s.minimum, s.reserve, now}));
  return {};
}

Result<std::optional<Settings>> find_settings(store::Conn& c, std::int64_t merchant_id, std::string_view env,
                                              std::string_view currency) {
  SIKA_ASSIGN_OR_RETURN(auto r, c.query_one("SELECT destination, provider, msisdn, iban, bic, holder, schedule, "
                                            "minimum, reserve FROM stl_settings WHERE merchant_id = ? AND "
                                            "environment = ? AND currency = ?",
                                            {merchant_id, std::string(env), std::string(currency)}));
  if (!r) return std::optional<Settings>();
  Settings s{merchant_id, std::string(env), std::string(currency),
             r->str(0),   r->str(1),        r->str(2),
             r->str(3),   r->str(4),        r->str(5),
             r->str(6),   r->i64(7),        r->i64(8)};
  return std::optional<Settings>(std::move(s));
}

namespace {

constexpr std::string_view kBatchColumns =
    "id, reference, merchant_id, environment, currency, period, account_id, after_entry_id, last_entry_id, "
    "destination, gross, fees, net, status, created_at, paid_at";

Batch batch_from_row(const store::Row& r) {
  return Batch{r.i64(0), r.str(1), r.i64(2),  r.str(3),  r.str(4),  r.str(5),  r.i64(6),  r.i64(7),
               r.i64(8), r.str(9), r.i64(10), r.i64(11), r.i64(12), r.str(13), r.i64(14), r.opt_i64(15)};
}

// Σ gross and Σ fee of the movements of an account in (after, last], as movement_of types them.
Result<std::pair<std::int64_t, std::int64_t>> covered_totals(store::Conn& c, std::int64_t account_id,
                                                             std::int64_t after, std::int64_t last) {
  SIKA_ASSIGN_OR_RETURN(
      auto r, c.query_one("SELECT COALESCE(SUM(e.credit - e.debit), 0), COALESCE(SUM(CASE "
                          "WHEN j.kind = 'COLLECTION' AND t.settlement_mode <> 'SPLIT' THEN t.fee "
                          "WHEN j.kind = 'PAYOUT_RESERVE' THEN t.fee WHEN j.kind = 'PAYOUT_RELEASE' THEN -t.fee "
                          "ELSE 0 END), 0) FROM ledger_entries e JOIN ledger_journals j ON j.id = e.journal_id "
                          "LEFT JOIN pay_transactions t ON t.id = j.transaction_id "
                          "WHERE e.account_id = ? AND e.id > ? AND e.id <= ?",
                          {account_id, after, last}));
  const std::int64_t net = r ? r->i64(0) : 0, fee = r ? r->i64(1) : 0;
  return std::pair{net + fee, fee};
}

}  // namespace

Result<std::optional<Batch>> settle(store::Conn& c, const Settings& s, const std::string& period, std::int64_t now,
                                    ledger::Learned& learned) {
  const auto available = ledger::merchant_available(s.merchant_id, s.environment, s.currency);
  SIKA_ASSIGN_OR_RETURN(auto account,
                        c.query_one("SELECT id, balance FROM ledger_accounts WHERE owner = ? AND "
                                    "environment = ? AND currency = ? AND kind = ?",
                                    {available.owner, available.environment, available.currency, available.kind}));
  if (!account) return std::optional<Batch>();
  const std::int64_t amount = account->i64(1) - s.reserve;
  if (amount <= 0 || amount < s.minimum) return std::optional<Batch>();
  Batch b;
  b.reference = random_reference("ST-");
  b.merchant_id = s.merchant_id;
  b.environment = s.environment;
  b.currency = s.currency;
  b.period = period;
  b.account_id = account->i64(0);
  b.destination = s.destination;
  b.net = amount;
  b.status = "PENDING";
  b.created_at = now;
  SIKA_ASSIGN_OR_RETURN(auto previous, c.query_one("SELECT COALESCE(MAX(last_entry_id), 0) FROM stl_batches WHERE "
                                                   "account_id = ?",
                                                   {b.account_id}));
  b.after_entry_id = previous ? previous->i64(0) : 0;
  // The period's batch row first: a second settlement of the period (another node) stops here.
  SIKA_ASSIGN_OR_RETURN(
      auto inserted,
      c.exec("INSERT INTO stl_batches (reference, merchant_id, environment, currency, period, account_id, "
             "after_entry_id, last_entry_id, destination, gross, fees, net, status, created_at) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, 0, 0, ?, 'PENDING', ?) "
             "ON CONFLICT (merchant_id, environment, currency, period) DO NOTHING",
             {b.reference, b.merchant_id, b.environment, b.currency, b.period, b.account_id, b.after_entry_id,
              b.destination, b.net, now}));
  if (inserted != 1) return std::optional<Batch>();
  ledger::Posting p;
  p.kind = std::string(kSettlementJournal);
  p.environment = s.environment;
  p.currency = s.currency;
  p.memo = "settlement " + b.reference;
  p.legs = {{available, amount, 0}, {settlement_account(s.merchant_id, s.environment, s.currency), 0, amount}};
  SIKA_TRY(ledger::post(c, p, now, nullptr, learned));
  // Money may have left the account since it was read (a payout reserved meanwhile on another
  // node): the reserve must still be there, else the whole unit is abandoned.
  SIKA_ASSIGN_OR_RETURN(auto left, ledger::balance(c, available));
  if (left < s.reserve)
    return make_error(ErrorKind::conflict, "settlement_conflict", bj::object{{"reserve", "would not be kept"}});
  // The balance row is locked by this unit since the posting: no other entry of the account can
  // commit between; the batch ends with its own SETTLEMENT entry.
  SIKA_ASSIGN_OR_RETURN(auto last,
                        c.query_one("SELECT MAX(id) FROM ledger_entries WHERE account_id = ?", {b.account_id}));
  b.last_entry_id = last->i64(0);
  SIKA_ASSIGN_OR_RETURN(auto totals, covered_totals(c, b.account_id, b.after_entry_id, b.last_entry_id - 1));
  b.gross = totals.first;
  b.fees = totals.second;
  SIKA_TRY(c.exec("UPDATE stl_batches SET last_entry_id = ?, gross = ?, fees = ? WHERE reference = ?",
                  {b.last_entry_id, b.gross, b.fees, b.reference}));
  SIKA_ASSIGN_OR_RETURN(auto id, c.query_one("SELECT id FROM stl_batches WHERE reference = ?", {b.reference}));
  b.id = id->i64(0);
  return std::optional<Batch>(std::move(b));
}

Result<std::optional<Batch>> find_batch(store::Conn& c, const std::string& reference) {
  SIKA_ASSIGN_OR_RETURN(
      auto r,
      c.query_one("SELECT " + std::string(kBatchColumns) + " FROM stl_batches WHERE reference = ?", {reference}));
  if (!r) return std::optional<Batch>();
  return std::optional<Batch>(batch_from_row(*r));
}

Result<bool> mark_paid(store::Conn& c, const std::string& reference, std::int64_t now, ledger::Learned& learned) {
  SIKA_ASSIGN_OR_RETURN(auto changed, c.exec("UPDATE stl_batches SET status = 'PAID', paid_at = ? WHERE reference = ? "
                                             "AND status = 'PENDING'",
                                             {now, reference}));
  if (changed != 1) return false;
  SIKA_ASSIGN_OR_RETURN(auto found, find_batch(c, reference));
  const Batch& b = *found;
  SIKA_ASSIGN_OR_RETURN(auto settings, find_settings(c, b.merchant_id, b.environment, b.currency));
  // Out through the bank's clearing account, or the mobile-money operator's.
  const std::string through =
      b.destination == "BANK" || !settings || settings->provider.empty() ? "BANK" : settings->provider;
  ledger::Posting p;
  p.kind = std::string(kPaidJournal);
  p.environment = b.environment;
  p.currency = b.currency;
  p.memo = "settlement paid " + b.reference;
  p.legs = {{settlement_account(b.merchant_id, b.environment, b.currency), b.net, 0},
            {ledger::operator_clearing(through, b.environment, b.currency), 0, b.net}};
  SIKA_TRY(ledger::post(c, p, now, nullptr, learned));
  bj::object payload{
      {"reference", b.reference}, {"period", b.period}, {"currency", b.currency},       {"gross", b.gross},
      {"fees", b.fees},           {"net", b.net},       {"destination", b.destination}, {"paid_at", now}};
  SIKA_TRY(store::append_event(c, b.merchant_id, kPaidEvent, b.reference, payload, now));
  return true;
}

Result<std::vector<Batch>> paid_batches(store::Conn& c, std::int64_t account_id, std::int64_t last_entry_id) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT " + std::string(kBatchColumns) +
                                               " FROM stl_batches WHERE account_id = ? AND status = 'PAID' AND "
                                               "after_entry_id < ? ORDER BY last_entry_id",
                                           {account_id, last_entry_id}));
  std::vector<Batch> out;
  for (const auto& r : rows) out.push_back(batch_from_row(r));
  return out;
}

namespace {

// Minor units as the decimal an ISO 20022 amount is written in ("1500" XAF, "15.00" EUR).
std::string decimal(std::int64_t minor, std::string_view currency) {
  const int e = money::exponent(currency);
  std::string digits = std::to_string(minor);
  if (e == 0) return digits;
  if (digits.size() <= static_cast<std::size_t>(e)) digits.insert(0, e + 1 - digits.size(), '0');
  digits.insert(digits.size() - e, ".");
  return digits;
}

std::string tag(std::string_view name, std::string_view text) {
  return "<" + std::string(name) + ">" + web::html::escape(text) + "</" + std::string(name) + ">";
}

}  // namespace

std::string pain001(const Debtor& debtor, const std::vector<BankTransfer>& transfers, const std::string& message_id,
                    std::int64_t now) {
  std::map<std::string, std::vector<const BankTransfer*>> by_currency;
  std::int64_t count = 0;
  std::map<std::string, std::int64_t> sums;
  for (const auto& t : transfers) {
    by_currency[t.batch.currency].push_back(&t);
    sums[t.batch.currency] += t.batch.net;
    ++count;
  }
  // The group's control sum adds the amounts as written, whatever their currencies: summed in
  // thousandths (no currency has more than three decimals), written without trailing zeros.
  std::int64_t thousandths = 0;
  for (const auto& [cur, sum] : sums) {
    std::int64_t scale = 1;
    for (int i = money::exponent(cur); i < 3; ++i) scale *= 10;
    thousandths += sum * scale;
  }
  std::string control = decimal(thousandths, "KWD");  // a three-decimal currency
  while (control.back() == '0' && control.find('.') != std::string::npos) control.pop_back();
  if (control.back() == '.') control.pop_back();
  const std::string at = iso8601(now).substr(0, 19);
  std::string x =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.001.001.03\"><CstmrCdtTrfInitn><GrpHdr>" +
      tag("MsgId", message_id) + tag("CreDtTm", at) + tag("NbOfTxs", std::to_string(count)) + tag("CtrlSum", control) +
      "<InitgPty>" + tag("Nm", debtor.name) + "</InitgPty></GrpHdr>";
  for (const auto& [currency, list] : by_currency) {
    x += "<PmtInf>" + tag("PmtInfId", message_id + "-" + currency) + tag("PmtMtd", "TRF") +
         tag("NbOfTxs", std::to_string(list.size())) + tag("CtrlSum", decimal(sums[currency], currency)) +
         tag("ReqdExctnDt", at.substr(0, 10)) + "<Dbtr>" + tag("Nm", debtor.name) + "</Dbtr><DbtrAcct><Id>" +
         tag("IBAN", debtor.iban) + "</Id></DbtrAcct><DbtrAgt><FinInstnId>" + tag("BIC", debtor.bic) +
         "</FinInstnId></DbtrAgt><ChrgBr>SLEV</ChrgBr>";
    for (const BankTransfer* t : list)
      x += "<CdtTrfTxInf><PmtId>" + tag("EndToEndId", t->batch.reference) + "</PmtId><Amt><InstdAmt Ccy=\"" +
           web::html::escape(currency) + "\">" + decimal(t->batch.net, currency) +
           "</InstdAmt></Amt><CdtrAgt><FinInstnId>" + tag("BIC", t->bic) + "</FinInstnId></CdtrAgt><Cdtr>" +
           tag("Nm", t->holder) + "</Cdtr><CdtrAcct><Id>" + tag("IBAN", t->iban) + "</Id></CdtrAcct><RmtInf>" +
           tag("Ustrd", "Sika settlement " + t->batch.reference + " " + t->batch.period) + "</RmtInf></CdtTrfTxInf>";
    x += "</PmtInf>";
  }
  return x + "</CstmrCdtTrfInitn></Document>\n";
}

}  // namespace sika::statements::settlement
