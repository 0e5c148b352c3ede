#include "statements/settlement.hpp"

#include <boost/json.hpp>

#include <map>

#include "core/codes.hpp"
#include "core/money.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "core/time.hpp"
#include "statements/model.hpp"
#include "store/outbox.hpp"
#include "store/state_machine.hpp"
#include "web/html.hpp"

namespace sika::statements::settlement {

namespace bj = boost::json;
namespace ledger = payments::ledger;

ledger::AccountKey settlement_account(std::int64_t merchant_id, std::string_view env, std::string_view currency) {
  return {"merchant:" + std::to_string(merchant_id), std::string(env), std::string(currency), "settlement"};
}

Status put_settings(store::Conn& c, const Settings& s, std::int64_t now) {
  SIKA_TRY(c.exec(
      "INSERT INTO stl_settings (merchant_id, environment, currency, destination, provider, msisdn, iban, "
      "bic, holder, schedule, minimum, reserve, weekday, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (merchant_id, environment, currency) DO UPDATE SET destination = excluded.destination, "
      "provider = excluded.provider, msisdn = excluded.msisdn, iban = excluded.iban, bic = excluded.bic, "
      "holder = excluded.holder, schedule = excluded.schedule, minimum = excluded.minimum, "
      "reserve = excluded.reserve, weekday = excluded.weekday, updated_at = excluded.updated_at",
      {s.merchant_id, s.environment, s.currency, s.destination, s.provider, s.msisdn, s.iban, s.bic, s.holder,
       s.schedule, s.minimum, s.reserve, static_cast<std::int64_t>(s.weekday), now}));
  return {};
}

Result<std::optional<Settings>> find_settings(store::Conn& c, std::int64_t merchant_id, std::string_view env,
                                              std::string_view currency) {
  SIKA_ASSIGN_OR_RETURN(auto r, c.query_one("SELECT destination, provider, msisdn, iban, bic, holder, schedule, "
                                            "minimum, reserve, weekday FROM stl_settings WHERE merchant_id = ? AND "
                                            "environment = ? AND currency = ?",
                                            {merchant_id, std::string(env), std::string(currency)}));
  if (!r) return std::optional<Settings>();
  Settings s{merchant_id,
             std::string(env),
             std::string(currency),
             r->str(0),
             r->str(1),
             r->str(2),
             r->str(3),
             r->str(4),
             r->str(5),
             r->str(6),
             r->i64(7),
             r->i64(8),
             static_cast<int>(r->i64(9))};
  return std::optional<Settings>(std::move(s));
}

namespace {

constexpr std::string_view kBatchColumns =
    "id, reference, merchant_id, environment, currency, period, account_id, after_entry_id, last_entry_id, "
    "destination, gross, fees, net, status, created_at, paid_at, payout_reference, failed_at";

Batch batch_from_row(const store::Row& r) {
  return Batch{r.i64(0),  r.str(1),  r.i64(2),  r.str(3),      r.str(4),      r.str(5),
               r.i64(6),  r.i64(7),  r.i64(8),  r.str(9),      r.i64(10),     r.i64(11),
               r.i64(12), r.str(13), r.i64(14), r.opt_i64(15), r.opt_str(16), r.opt_i64(17)};
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
    return with_problem(make_error(ErrorKind::conflict, std::string(codes::settlement_conflict.name)), "reserve",
                        Reason::reserve_not_kept);
  // The balance row is locked by this unit since the posting: no other entry of the account can
  // commit between; the batch ends with its own SETTLEMENT entry.
  SIKA_ASSIGN_OR_RETURN(auto last,
                        c.query_one("SELECT MAX(id) FROM ledger_entries WHERE account_id = ?", {b.account_id}));
  b.last_entry_id = last->i64(0);
  // Where the previous batch ended, read under the same lock: a batch of another period that
  // committed while this unit waited for the balance row is seen, the ranges never overlap.
  SIKA_ASSIGN_OR_RETURN(auto previous, c.query_one("SELECT COALESCE(MAX(last_entry_id), 0) FROM stl_batches WHERE "
                                                   "account_id = ? AND reference <> ?",
                                                   {b.account_id, b.reference}));
  b.after_entry_id = previous ? previous->i64(0) : 0;
  SIKA_ASSIGN_OR_RETURN(auto totals, covered_totals(c, b.account_id, b.after_entry_id, b.last_entry_id - 1));
  b.gross = totals.first;
  b.fees = totals.second;
  SIKA_TRY(
      c.exec("UPDATE stl_batches SET after_entry_id = ?, last_entry_id = ?, gross = ?, fees = ? WHERE reference = ?",
             {b.after_entry_id, b.last_entry_id, b.gross, b.fees, b.reference}));
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

namespace {

// The settlement.paid event of a batch that just became PAID, read in the move's unit.
Result<store::Event> paid_event(store::Conn& c, const std::string& reference, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto found, find_batch(c, reference));
  if (!found) return internal_error(bj::string("a settlement batch that moved is gone"));
  const Batch& b = *found;
  bj::object payload{
      {"reference", b.reference}, {"period", b.period}, {"currency", b.currency},       {"gross", b.gross},
      {"fees", b.fees},           {"net", b.net},       {"destination", b.destination}, {"paid_at", now}};
  return store::Event{b.merchant_id, b.reference, std::move(payload), now};
}

// PENDING -> `to` of the batch `reference` whose payout_reference IS NULL (`handed` false) or IS
// NOT NULL (true), with `at_column` set to now; then `effects`.
Result<bool> move_batch(store::Conn& c, const std::string& reference, bool handed, BatchStatus to,
                        std::string_view at_column, std::int64_t now, const store::Effects& effects) {
  store::Change change;
  change.set = std::string(at_column) + " = ?";
  change.set_params = {now};
  change.where = std::string("reference = ? AND payout_reference IS ") + (handed ? "NOT NULL" : "NULL");
  change.where_params = {reference};
  return store::transition(c, kBatchStatus, BatchStatus::pending, to, change, effects);
}

}  // namespace

Result<bool> mark_paid(store::Conn& c, const std::string& reference, std::int64_t now, ledger::Learned& learned) {
  // A batch handed to a payout is finished by that payout alone (paid_by_payout, fail_batch).
  store::Effects effects;
  effects.then = [&](store::Conn& u) -> Status {
    SIKA_ASSIGN_OR_RETURN(auto found, find_batch(u, reference));
    if (!found) return internal_error(bj::string("a settlement batch that moved is gone"));
    const Batch& b = *found;
    SIKA_ASSIGN_OR_RETURN(auto settings, find_settings(u, b.merchant_id, b.environment, b.currency));
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
    return ledger::post(u, p, now, nullptr, learned);
  };
  effects.event = [&](store::Conn& u) { return paid_event(u, reference, now); };
  return move_batch(c, reference, false, BatchStatus::paid, "paid_at", now, effects);
}

bool iban_valid(std::string_view iban) {
  if (iban.size() < 15 || iban.size() > 34) return false;
  for (std::size_t i = 0; i < iban.size(); ++i) {
    const char ch = iban[i];
    const bool upper = ch >= 'A' && ch <= 'Z', digit = ch >= '0' && ch <= '9';
    if (i < 2 ? !upper : i < 4 ? !digit : !(upper || digit)) return false;
  }
  // ISO 7064 mod 97-10 of the account part followed by the country and check digits, letters as 10..35.
  int rest = 0;
  auto add = [&](char ch) {
    if (ch >= 'A' && ch <= 'Z') {
      const int v = ch - 'A' + 10;
      rest = (rest * 100 + v) % 97;
    } else {
      rest = (rest * 10 + (ch - '0')) % 97;
    }
  };
  for (std::size_t i = 4; i < iban.size(); ++i) add(iban[i]);
  for (std::size_t i = 0; i < 4; ++i) add(iban[i]);
  return rest == 1;
}

bool bic_valid(std::string_view bic) {
  if (bic.size() != 8 && bic.size() != 11) return false;
  for (std::size_t i = 0; i < bic.size(); ++i) {
    const char ch = bic[i];
    const bool upper = ch >= 'A' && ch <= 'Z', digit = ch >= '0' && ch <= '9';
    if (i < 6 ? !upper : !(upper || digit)) return false;
  }
  return true;
}

namespace {

std::string compact_upper(std::string_view in) {
  std::string out;
  for (char ch : in) {
    if (ch == ' ' || ch == '-' || ch == '\t') continue;
    out += (ch >= 'a' && ch <= 'z') ? static_cast<char>(ch - 'a' + 'A') : ch;
  }
  return out;
}

}  // namespace

Status check_settings(Settings& s) {
  bj::object problems;
  if (s.destination == "MOBILE_MONEY") {
    std::string digits;
    bool bad = false;
    for (char ch : s.msisdn) {
      if (ch >= '0' && ch <= '9')
        digits += ch;
      else if (ch != ' ' && ch != '+' && ch != '-')
        bad = true;
    }
    if (s.provider.empty())
      problems["provider"] = "required for a mobile-money destination";
    else if (s.provider.size() > 64 ||
             s.provider.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                 std::string::npos)
      problems["provider"] = "must be a service code";
    if (bad || digits.size() < 8 || digits.size() > 15) problems["msisdn"] = "must be a phone number of 8 to 15 digits";
    s.msisdn = digits;
    s.iban.clear();
    s.bic.clear();
    s.holder.clear();
  } else if (s.destination == "BANK") {
    s.iban = compact_upper(s.iban);
    s.bic = compact_upper(s.bic);
    if (!iban_valid(s.iban)) problems["iban"] = "must be an IBAN whose check digits are right";
    if (!bic_valid(s.bic)) problems["bic"] = "must be a BIC of 8 or 11 letters and digits";
    if (s.holder.empty() || s.holder.size() > 70) problems["holder"] = "must be the account holder's name (1 to 70)";
    s.provider.clear();
    s.msisdn.clear();
  } else {
    problems["destination"] = "must be MOBILE_MONEY or BANK";
  }
  if (s.schedule != "DAILY" && s.schedule != "WEEKLY" && s.schedule != "ON_REQUEST")
    problems["schedule"] = "must be DAILY, WEEKLY or ON_REQUEST";
  if (s.schedule == "WEEKLY" && (s.weekday < 1 || s.weekday > 7))
    problems["weekday"] = "must be 1 (Monday) to 7 (Sunday)";
  if (s.schedule != "WEEKLY") s.weekday = 1;
  if (s.minimum < 0) problems["minimum"] = "must be zero or more";
  if (s.currency.size() != 3) problems["currency"] = "must be a currency code";
  if (!problems.empty()) return empty_data(std::move(problems));
  return {};
}

std::optional<std::string> due_period(const Settings& s, std::int64_t now, int offset_minutes) {
  constexpr std::int64_t kDay = 86'400'000;
  const std::int64_t local = now + offset_minutes * 60'000LL;
  const std::int64_t today = local >= 0 ? local / kDay : (local - kDay + 1) / kDay;  // days since 1970-01-01
  if (s.schedule == "DAILY") return "D" + iso8601((today - 1) * kDay).substr(0, 10);
  if (s.schedule == "WEEKLY") {
    const int weekday = static_cast<int>(((today + 3) % 7 + 7) % 7) + 1;  // 1970-01-01 was a Thursday (4)
    const int back = ((weekday - s.weekday) % 7 + 7) % 7;
    return "W" + iso8601((today - back) * kDay).substr(0, 10);
  }
  return std::nullopt;
}

Result<bool> set_reserve(store::Conn& c, std::int64_t merchant_id, std::string_view env, std::string_view currency,
                         std::int64_t reserve, std::int64_t now) {
  SIKA_ASSIGN_OR_RETURN(auto n, c.exec("UPDATE stl_settings SET reserve = ?, updated_at = ? WHERE merchant_id = ? AND "
                                       "environment = ? AND currency = ?",
                                       {reserve, now, merchant_id, std::string(env), std::string(currency)}));
  return n == 1;
}

Status hand_to_payout(store::Conn& c, const Batch& b, const std::string& payout_reference, std::int64_t now,
                      ledger::Learned& learned) {
  SIKA_ASSIGN_OR_RETURN(auto n,
                        c.exec("UPDATE stl_batches SET payout_reference = ? WHERE reference = ? AND "
                               "status = 'PENDING' AND destination = 'MOBILE_MONEY' AND payout_reference IS NULL",
                               {payout_reference, b.reference}));
  if (n != 1)
    return with_problem(make_error(ErrorKind::conflict, std::string(codes::settlement_conflict.name)), "reference",
                        Reason::batch_not_payable);
  ledger::Posting p;
  p.kind = std::string(kHandoverJournal);
  p.environment = b.environment;
  p.currency = b.currency;
  p.memo = "settlement " + b.reference + " paid out by " + payout_reference;
  p.legs = {{settlement_account(b.merchant_id, b.environment, b.currency), b.net, 0},
            {ledger::merchant_available(b.merchant_id, b.environment, b.currency), 0, b.net}};
  return ledger::post(c, p, now, nullptr, learned);
}

Result<bool> paid_by_payout(store::Conn& c, const std::string& reference, std::int64_t now) {
  store::Effects effects;
  effects.event = [&](store::Conn& u) { return paid_event(u, reference, now); };
  return move_batch(c, reference, true, BatchStatus::paid, "paid_at", now, effects);
}

Result<bool> fail_batch(store::Conn& c, const std::string& reference, bool reverse, std::int64_t now,
                        ledger::Learned& learned) {
  store::Effects effects;
  if (reverse)
    effects.then = [&](store::Conn& u) -> Status {
      SIKA_ASSIGN_OR_RETURN(auto found, find_batch(u, reference));
      if (!found) return internal_error(bj::string("a settlement batch that moved is gone"));
      const Batch& b = *found;
      ledger::Posting p;
      p.kind = std::string(kReversalJournal);
      p.environment = b.environment;
      p.currency = b.currency;
      p.memo = "settlement reversed " + b.reference;
      p.legs = {{settlement_account(b.merchant_id, b.environment, b.currency), b.net, 0},
                {ledger::merchant_available(b.merchant_id, b.environment, b.currency), 0, b.net}};
      return ledger::post(u, p, now, nullptr, learned);
    };
  return move_batch(c, reference, !reverse, BatchStatus::failed, "failed_at", now, effects);
}

Result<std::vector<Batch>> list_batches(store::Conn& c, std::int64_t merchant_id, std::string_view env, int limit) {
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT " + std::string(kBatchColumns) +
                                               " FROM stl_batches WHERE merchant_id = ? AND environment = ? "
                                               "ORDER BY id DESC LIMIT ?",
                                           {merchant_id, std::string(env), static_cast<std::int64_t>(limit)}));
  std::vector<Batch> out;
  for (const auto& r : rows) out.push_back(batch_from_row(r));
  return out;
}

Result<std::vector<BankTransfer>> pending_bank_transfers(store::Conn& c, std::string_view env) {
  std::string cols;
  for (std::string_view col : {"id", "reference", "merchant_id", "environment", "currency", "period", "account_id",
                               "after_entry_id", "last_entry_id", "destination", "gross", "fees", "net", "status",
                               "created_at", "paid_at", "payout_reference", "failed_at"})
    cols += (cols.empty() ? "b." : ", b.") + std::string(col);
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query("SELECT " + cols +
                                               ", s.iban, s.bic, s.holder FROM stl_batches b JOIN stl_settings s ON "
                                               "s.merchant_id = b.merchant_id AND s.environment = b.environment AND "
                                               "s.currency = b.currency WHERE b.status = 'PENDING' AND "
                                               "b.destination = 'BANK' AND b.environment = ? ORDER BY b.id",
                                           {std::string(env)}));
  std::vector<BankTransfer> out;
  for (const auto& r : rows) out.push_back(BankTransfer{batch_from_row(r), r.str(18), r.str(19), r.str(20)});
  return out;
}

Result<std::vector<OpenPayout>> open_payouts(store::Conn& c, std::int64_t made_before, int limit) {
  std::string cols;
  for (std::string_view col : {"id", "reference", "merchant_id", "environment", "currency", "period", "account_id",
                               "after_entry_id", "last_entry_id", "destination", "gross", "fees", "net", "status",
                               "created_at", "paid_at", "payout_reference", "failed_at"})
    cols += (cols.empty() ? "b." : ", b.") + std::string(col);
  SIKA_ASSIGN_OR_RETURN(
      auto rows,
      c.query("SELECT " + cols +
                  ", COALESCE(t.status, '') FROM stl_batches b LEFT JOIN pay_transactions t ON "
                  "t.reference = b.payout_reference WHERE b.status = 'PENDING' AND b.destination = 'MOBILE_MONEY' "
                  "AND ((b.payout_reference IS NULL AND b.created_at < ?) OR t.status IN ('COMPLETED', 'FAILED', "
                  "'EXPIRED', 'CANCELLED')) ORDER BY b.id LIMIT ?",
              {made_before, static_cast<std::int64_t>(limit)}));
  std::vector<OpenPayout> out;
  for (const auto& r : rows) out.push_back(OpenPayout{batch_from_row(r), r.str(18)});
  return out;
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
