// Merchant statements: the query's refusals, each journal kind's type and signs, the balances at
// the ends of whole days of the merchant's zone (opening + sum(net) = closing = the ledger's
// balance at that instant), keyset paging, and the JSON and CSV bodies.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/reason.hpp"
#include "core/time.hpp"
#include "merchant/merchant.hpp"
#include "payments/ledger.hpp"
#include "payments/store.hpp"
#include "payments/transitions.hpp"
#include "statements/service.hpp"
#include "store/job_runner.hpp"
#include "support/state_machine_walk.hpp"
#include "support/test_db.hpp"

#include <thread>
#include "web/envelope.hpp"

namespace sika::statements {
namespace {

namespace bj = boost::json;
namespace ledger = payments::ledger;

web::Request query(std::vector<std::pair<std::string, std::string>> params) {
  web::Request r;
  r.method = "GET";
  r.path = "/statements";
  for (auto& [k, v] : params) r.query.emplace_back(k, v);
  return r;
}

// The English problem of `field` in a refusal, or "" when the query was accepted.
std::string problem(const std::vector<std::pair<std::string, std::string>>& params, const std::string& field) {
  auto q = parse_query(query(params), 60);
  if (q.ok()) return "";
  EXPECT_EQ(q.error().kind, ErrorKind::invalid);
  const auto& d = q.error().details;
  if (!d.is_object() || !d.as_object().contains(field)) return "<no " + field + ">";
  return std::string(d.as_object().at(field).as_string());
}

TEST(StatementQuery, RefusesEachBadParameterByName) {
  const std::vector<std::pair<std::string, std::string>> good = {
      {"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-31"}};
  EXPECT_EQ(problem(good, "currency"), "");
  auto with = [&](std::string k, std::string v) {
    auto p = good;
    for (auto& [name, value] : p)
      if (name == k) value = v;
    if (std::none_of(p.begin(), p.end(), [&](auto& x) { return x.first == k; })) p.emplace_back(k, v);
    return p;
  };
  auto without = [&](std::string k) {
    auto p = good;
    std::erase_if(p, [&](auto& x) { return x.first == k; });
    return p;
  };
  EXPECT_EQ(problem(without("currency"), "currency"), "is required");
  EXPECT_EQ(problem(with("currency", "xaf"), "currency"), "must be a 3-letter ISO 4217 code");
  EXPECT_EQ(problem(without("from"), "from"), "is required");
  EXPECT_EQ(problem(without("to"), "to"), "is required");
  EXPECT_EQ(problem(with("from", "2026-02-30"), "from"), "must be a date YYYY-MM-DD");
  EXPECT_EQ(problem(with("to", "31/03/2026"), "to"), "must be a date YYYY-MM-DD");
  EXPECT_EQ(problem(with("to", "2026-02-28"), "to"), "must not be before from");
  EXPECT_EQ(problem(with("to", "2026-04-01"), "to"), "must cover at most 31 days");
  EXPECT_EQ(problem(with("format", "xml"), "format"), "must be one of json, csv");
  EXPECT_EQ(problem(with("separator", "tab"), "separator"), "must be comma or semicolon");
}

// A refusal is a typed reason: its English is the details, and a page says it in French.
TEST(StatementQuery, RefusalsAreTypedReasonsWithFrenchTexts) {
  auto q =
      parse_query(query({{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-31"}, {"separator", "tab"}}), 60);
  ASSERT_FALSE(q.ok());
  const Problem* p = q.error().problem("separator");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason, Reason::text);
  EXPECT_EQ(reason::text(*p, i18n::Locale::en), "must be comma or semicolon");
  EXPECT_EQ(reason::text(*p, i18n::Locale::fr), "doit être comma ou semicolon");
}

TEST(StatementQuery, DaysAreWholeDaysOfTheMerchantsZone) {
  auto q = parse_query(query({{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-01"}}), 60);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->start_ms, *parse_iso8601("2026-02-28T23:00:00Z"));
  EXPECT_EQ(q->end_ms, *parse_iso8601("2026-03-01T23:00:00Z"));
  EXPECT_FALSE(q->csv);
  auto csv = parse_query(query({{"currency", "XAF"},
                                {"from", "2026-03-01"},
                                {"to", "2026-03-31"},
                                {"format", "csv"},
                                {"separator", "semicolon"}}),
                         0);
  ASSERT_TRUE(csv.ok());
  EXPECT_TRUE(csv->csv);
  EXPECT_EQ(csv->format.separator, ';');
  EXPECT_TRUE(csv->format.bom);  // what French Excel needs, without asking
}

TEST(MovementTypes, EachJournalKindHasItsType) {
  EXPECT_EQ(type_of("COLLECTION", false), MovementType::collection);
  EXPECT_EQ(type_of("COLLECTION", true), MovementType::split_share);
  EXPECT_EQ(type_of("FX_SETTLEMENT", false), MovementType::collection);
  EXPECT_EQ(type_of("FX_SETTLEMENT", true), MovementType::split_share);
  EXPECT_EQ(type_of("PAYOUT_RESERVE", false), MovementType::payout);
  EXPECT_EQ(type_of("PAYOUT_RELEASE", false), MovementType::payout);
  EXPECT_EQ(type_of("REFUND_RESERVE", false), MovementType::refund);
  EXPECT_EQ(type_of("REFUND", false), MovementType::refund);
  EXPECT_EQ(type_of("REFUND_RELEASE", false), MovementType::refund);
  EXPECT_EQ(type_of("SETTLEMENT", false), MovementType::settlement);
  EXPECT_EQ(type_of("WALLET_DISTRIBUTION", false), MovementType::adjustment);
  EXPECT_EQ(type_of("SOMETHING_NEW", false), MovementType::adjustment);
}

TEST(MovementTypes, SignsGrossAndFee) {
  EntryRow collection{.id = 1,
                      .created_at = 0,
                      .debit = 0,
                      .credit = 9800,
                      .journal_kind = "COLLECTION",
                      .memo = "collection TX-1",
                      .reference = "TX-1",
                      .transaction_uuid = "u-1",
                      .metadata = R"({"order_id":"CMD-7"})",
                      .operator_reference = "MP123",
                      .settlement_mode = "DIRECT",
                      .tx_fee = 200};
  Movement m = movement_of(collection, 1000);
  EXPECT_EQ(m.type, MovementType::collection);
  EXPECT_EQ(m.gross, 10000);
  EXPECT_EQ(m.fee, 200);
  EXPECT_EQ(m.net, 9800);
  EXPECT_EQ(m.balance_after, 10800);
  EXPECT_EQ(m.reference, "TX-1");
  EXPECT_EQ(m.merchant_reference, "CMD-7");  // the order id before the transaction_uuid
  EXPECT_EQ(m.operator_reference, "MP123");

  EntryRow reserve{.id = 2,
                   .debit = 5150,
                   .journal_kind = "PAYOUT_RESERVE",
                   .memo = "payout reserve PO-1",
                   .reference = "PO-1",
                   .transaction_uuid = "u-2",
                   .metadata = "{}",
                   .settlement_mode = "DIRECT",
                   .tx_fee = 150};
  m = movement_of(reserve, 10800);
  EXPECT_EQ(m.type, MovementType::payout);
  EXPECT_EQ(m.net, -5150);
  EXPECT_EQ(m.fee, 150);
  EXPECT_EQ(m.gross, -5000);
  EXPECT_EQ(m.merchant_reference, "u-2");
  EXPECT_FALSE(m.operator_reference);

  EntryRow release = reserve;
  release.debit = 0;
  release.credit = 5150;
  release.journal_kind = "PAYOUT_RELEASE";
  m = movement_of(release, 5650);
  EXPECT_EQ(m.type, MovementType::payout);
  EXPECT_EQ(m.net, 5150);  // a failed payout gives the reserve back, its fee with it
  EXPECT_EQ(m.fee, -150);
  EXPECT_EQ(m.gross, 5000);

  EntryRow refund{.id = 4,
                  .debit = 3000,
                  .journal_kind = "REFUND_RESERVE",
                  .memo = "refund reserve RF-9",
                  .reference = "TX-1",
                  .transaction_uuid = "u-1",
                  .metadata = "{}",
                  .tx_fee = 200};
  m = movement_of(refund, 10800);
  EXPECT_EQ(m.type, MovementType::refund);
  EXPECT_EQ(m.reference, "RF-9");  // the refund's own reference, from its journal
  EXPECT_EQ(m.net, -3000);
  EXPECT_EQ(m.fee, 0);
  EXPECT_EQ(m.gross, -3000);

  EntryRow share = collection;
  share.settlement_mode = "SPLIT";
  share.credit = 4900;
  m = movement_of(share, 0);
  EXPECT_EQ(m.type, MovementType::split_share);
  EXPECT_EQ(m.fee, 0);
  EXPECT_EQ(m.gross, 4900);
}

TEST(Settlement, BankBatchFileIsAPain001CreditTransferPerBatch) {
  settlement::Batch a;
  a.reference = "ST-A1";
  a.currency = "XAF";
  a.period = "D2026-03-01";
  a.net = 17000;
  settlement::Batch b = a;
  b.reference = "ST-B2";
  b.currency = "EUR";
  b.net = 1505;
  std::string x = settlement::pain001({"Sika SA", "FR7630006000011234567890189", "AGRIFRPPXXX"},
                                      {{a, "CM2110005000010123456789012", "AFRICMCXXXX", "Boutique <Akwa> & Fils"},
                                       {b, "FR7610107001011234567890129", "BREDFRPPXXX", "Maison"}},
                                      "SIKA-20260302-1", *parse_iso8601("2026-03-02T06:00:00Z"));
  EXPECT_EQ(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Document "
                    "xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.001.001.03\">",
                    0),
            0u);
  EXPECT_NE(x.find("<GrpHdr><MsgId>SIKA-20260302-1</MsgId><CreDtTm>2026-03-02T06:00:00</CreDtTm><NbOfTxs>2</NbOfTxs>"
                   "<CtrlSum>17015.05</CtrlSum>"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<EndToEndId>ST-A1</EndToEndId></PmtId><Amt><InstdAmt Ccy=\"XAF\">17000</InstdAmt>"),
            std::string::npos);
  EXPECT_NE(x.find("<EndToEndId>ST-B2</EndToEndId></PmtId><Amt><InstdAmt Ccy=\"EUR\">15.05</InstdAmt>"),
            std::string::npos);
  EXPECT_NE(x.find("<Nm>Boutique &lt;Akwa&gt; &amp; Fils</Nm>"), std::string::npos);  // escaped
  EXPECT_NE(x.find("<IBAN>CM2110005000010123456789012</IBAN>"), std::string::npos);
  EXPECT_NE(x.find("<PmtMtd>TRF</PmtMtd><NbOfTxs>1</NbOfTxs><CtrlSum>15.05</CtrlSum>"), std::string::npos);
  EXPECT_TRUE(x.ends_with("</PmtInf></CstmrCdtTrfInitn></Document>\n"));
}

// ---- on a database ------------------------------------------------------------------------------

TEST(Settlement, SettingsAreCheckedFieldByField) {
  EXPECT_TRUE(settlement::iban_valid("FR7630006000011234567890189"));
  EXPECT_TRUE(settlement::iban_valid("DE89370400440532013000"));
  EXPECT_FALSE(settlement::iban_valid("DE89370400440532013001"));  // a check digit wrong
  EXPECT_FALSE(settlement::iban_valid("89DE370400440532013000"));
  EXPECT_TRUE(settlement::bic_valid("DEUTDEFF"));
  EXPECT_TRUE(settlement::bic_valid("BNPAFRPPXXX"));
  EXPECT_FALSE(settlement::bic_valid("DEUT1EFF"));
  EXPECT_FALSE(settlement::bic_valid("DEUTDEF"));
  settlement::Settings bank;
  bank.currency = "EUR";
  bank.destination = "BANK";
  bank.iban = "de89 3704 0044 0532 0130 01";
  bank.bic = "deutdeff1";
  bank.schedule = "WEEKLY";
  bank.weekday = 9;
  bank.minimum = -1;
  auto refused = settlement::check_settings(bank);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "empty_data");
  const auto details = bj::serialize(refused.error().details);
  for (const char* field : {"iban", "bic", "holder", "weekday", "minimum"})
    EXPECT_NE(details.find(std::string("\"") + field + "\""), std::string::npos) << field << " " << details;
  bank.iban = "de89 3704 0044 0532 0130 00";
  bank.bic = "deutdeff";
  bank.holder = "Boutique SARL";
  bank.weekday = 1;
  bank.minimum = 0;
  ASSERT_TRUE(settlement::check_settings(bank).ok());
  EXPECT_EQ(bank.iban, "DE89370400440532013000");
  EXPECT_EQ(bank.bic, "DEUTDEFF");
  settlement::Settings momo;
  momo.currency = "XAF";
  momo.destination = "MOBILE_MONEY";
  momo.schedule = "MONTHLY";
  momo.msisdn = "12ab";
  refused = settlement::check_settings(momo);
  ASSERT_FALSE(refused.ok());
  const auto momo_details = bj::serialize(refused.error().details);
  for (const char* field : {"provider", "msisdn", "schedule"})
    EXPECT_NE(momo_details.find(std::string("\"") + field + "\""), std::string::npos) << field;
}

TEST(Settlement, DuePeriodsFollowTheMerchantsDays) {
  settlement::Settings s;
  s.schedule = "DAILY";
  // 00:30 UTC on 2 March is 01:30 in Douala (UTC+1): 1 March has ended there.
  EXPECT_EQ(settlement::due_period(s, *parse_iso8601("2026-03-02T00:30:00Z"), 60), "D2026-03-01");
  EXPECT_EQ(settlement::due_period(s, *parse_iso8601("2026-03-01T23:30:00Z"), 0), "D2026-02-28");
  s.schedule = "WEEKLY";
  s.weekday = 1;  // Monday: 2 March 2026 is one
  EXPECT_EQ(settlement::due_period(s, *parse_iso8601("2026-03-02T08:00:00Z"), 0), "W2026-03-02");
  EXPECT_EQ(settlement::due_period(s, *parse_iso8601("2026-03-08T08:00:00Z"), 0), "W2026-03-02");
  EXPECT_EQ(settlement::due_period(s, *parse_iso8601("2026-03-09T08:00:00Z"), 0), "W2026-03-09");
  s.schedule = "ON_REQUEST";
  EXPECT_FALSE(settlement::due_period(s, now_ms(), 0).has_value());
}

class StatementsTest : public sika::testing::DbTest {
 protected:
  void SetUp() override {
    sika::testing::DbTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(
        db_->write([&](store::Conn& c) -> Status {
             // Cameroon: Africa/Douala, UTC+1.
             SIKA_ASSIGN_OR_RETURN(
                 m1_, merchant::create(c, {"MCH-CM-0001", "Boutique", "a@example.com", {"CMR"}, "sandbox"}, now_ms()));
             SIKA_ASSIGN_OR_RETURN(
                 m2_, merchant::create(c, {"MCH-CM-0002", "Autre", "b@example.com", {"CMR"}, "sandbox"}, now_ms()));
             return {};
           })
            .ok());
    Options o;
    o.page_rows = 2;  // several pages in every test
    service_ = std::make_unique<Service>(*db_, o);
  }

  // A transaction of merchant `m` moved to `to`, its journal posted at `at` (ISO 8601).
  payments::Transaction post(const merchant::Merchant& m, std::string operation, payments::TxStatus to,
                             std::int64_t amount, std::int64_t fee, const std::string& at,
                             payments::TxStatus from = payments::TxStatus::pending) {
    payments::Transaction tx;
    const std::string n = std::to_string(++count_);
    tx.reference = (operation == "COLLECTION" ? "TX-" : "PO-") + n;
    tx.merchant_id = m.id;
    tx.environment = "sandbox";
    tx.operation = operation;
    tx.transaction_uuid = "uuid-" + n;
    tx.request_hash = "h";
    tx.invoice_reference = "inv-" + n;
    tx.provider_reference = "prov-" + n;
    tx.status = to;
    tx.channel = "PROVIDER";
    tx.service_code = "MTN_MOMO_CMR";
    tx.country = "CMR";
    tx.connector = "sandbox";
    tx.customer_wallet = "237670000000";
    tx.currency = "XAF";
    tx.amount = operation == "COLLECTION" ? amount - fee : amount;
    tx.fee = fee;
    tx.required_total = operation == "COLLECTION" ? amount : amount + fee;
    tx.confirmation_method = "NONE";
    tx.settlement_mode = "DIRECT";
    tx.metadata = "{}";
    tx.operator_reference = "OP-" + n;
    const std::int64_t t = *parse_iso8601(at);
    tx.created_at = tx.updated_at = tx.expires_at = t;
    EXPECT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto id, payments::tables::insert_transaction(c, tx));
                     tx.id = *id;
                     SIKA_TRY(c.exec("UPDATE pay_transactions SET operator_reference = ? WHERE id = ?",
                                     {*tx.operator_reference, tx.id}));
                     ledger::Learned learned;
                     if (operation != "COLLECTION") {
                       auto reserve = payments::journal_for(tx, payments::TxStatus::initiated,
                                                            payments::TxStatus::pending, {}, nullptr);
                       SIKA_TRY(ledger::post(c, reserve, t, nullptr, learned));
                     }
                     auto p = payments::journal_for(tx, from, to, {}, nullptr);
                     if (!p.legs.empty()) SIKA_TRY(ledger::post(c, p, t, nullptr, learned));
                     return {};
                   })
                    .ok());
    return tx;
  }

  // A journal of `kind` with no transaction moving `amount` into (or, negative, out of) m's
  // available account, against the platform's funding account.
  void adjust(const merchant::Merchant& m, std::string kind, std::int64_t amount, const std::string& memo,
              const std::string& at) {
    ledger::Posting p;
    p.kind = std::move(kind);
    p.environment = "sandbox";
    p.currency = "XAF";
    p.memo = memo;
    auto mine = ledger::merchant_available(m.id, "sandbox", "XAF");
    auto other = ledger::funding("sandbox", "XAF");
    if (amount > 0)
      p.legs = {{other, amount, 0}, {mine, 0, amount}};
    else
      p.legs = {{mine, -amount, 0}, {other, 0, -amount}};
    ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                     ledger::Learned learned;
                     return ledger::post(c, p, *parse_iso8601(at), nullptr, learned);
                   })
                    .ok());
  }

  // What the ledger's entries say m's available XAF balance was at `instant`.
  std::int64_t ledger_balance_at(const merchant::Merchant& m, std::int64_t instant) {
    std::int64_t v = 0;
    auto k = ledger::merchant_available(m.id, "sandbox", "XAF");
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(
                         auto row, c.query_one("SELECT COALESCE(SUM(e.credit - e.debit), 0) FROM ledger_entries e "
                                               "JOIN ledger_accounts a ON a.id = e.account_id WHERE a.owner = ? AND "
                                               "a.environment = 'sandbox' AND a.currency = 'XAF' AND "
                                               "a.kind = 'available' AND e.created_at < ?",
                                               {k.owner, instant}));
                     v = row->i64(0);
                     return {};
                   })
                    .ok());
    return v;
  }

  web::Request ask(const merchant::Merchant& m, std::vector<std::pair<std::string, std::string>> params) {
    web::Request r = query(std::move(params));
    web::Principal p;
    p.subject = "client";
    p.scopes = {"payments"};
    p.merchant = m.matricule;
    p.merchant_id = m.id;
    p.environment = "sandbox";
    r.principal = p;
    return r;
  }

  // The whole body of a statement answer.
  web::Response answer(web::Request r) {
    web::Response res = web::respond(r, service_->statement(r));
    EXPECT_TRUE(web::collect_stream(res).ok());
    return res;
  }

  // Saves settlement settings.
  void put(const settlement::Settings& s) {
    ASSERT_TRUE(db_->write([&](store::Conn& c) { return settlement::put_settings(c, s, now_ms()); }).ok());
  }

  // Hands batch `b` to the payout `payout`.
  Status hand_to_payout(const settlement::Batch& b, const std::string& payout) {
    return db_->write([&](store::Conn& c) {
      ledger::Learned learned;
      return settlement::hand_to_payout(c, b, payout, now_ms(), learned);
    });
  }

  // The first column of the one row `sql` returns.
  std::int64_t count(const std::string& sql, const store::Params& params = {}) {
    std::int64_t n = -1;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto row, c.query_one(sql, params));
                     n = row->i64(0);
                     return {};
                   })
                    .ok());
    return n;
  }

  std::int64_t paid_events() {
    return count("SELECT COUNT(*) FROM events WHERE event_type = ?", {std::string(settlement::kPaidEvent)});
  }

  void expect_ledger_clean() {
    auto check = ledger::check(*db_);
    ASSERT_TRUE(check.ok());
    EXPECT_TRUE(check->ok()) << bj::serialize(check->to_json());
  }

  merchant::Merchant m1_, m2_;
  std::unique_ptr<Service> service_;
  int count_ = 0;
};

TEST_P(StatementsTest, BalancesAtTheEndsOfTheMerchantsDays) {
  // Douala is UTC+1: March 1st starts at 2026-02-28T23:00Z and March 2nd ends at 2026-03-02T23:00Z.
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10000, 200, "2026-02-28T22:59:59.999Z");  // Feb 28th
  post(m1_, "COLLECTION", payments::TxStatus::completed, 5000, 100, "2026-02-28T23:00:00Z");       // Mar 1st 00:00
  post(m1_, "DISBURSEMENT", payments::TxStatus::completed, 2000, 150, "2026-03-01T10:00:00Z");
  post(m1_, "DISBURSEMENT", payments::TxStatus::failed, 1000, 150, "2026-03-01T11:00:00Z");
  adjust(m1_, "REFUND_RESERVE", -700, "refund reserve RF-1", "2026-03-02T08:00:00Z");
  adjust(m1_, "REFUND_RELEASE", 700, "refund release RF-1", "2026-03-02T09:00:00Z");
  adjust(m1_, "REFUND", -300, "refund RF-2", "2026-03-02T09:45:00Z");
  post(m1_, "COLLECTION", payments::TxStatus::completed, 3000, 60, "2026-03-02T22:59:59.999Z");  // Mar 2nd 23:59
  post(m1_, "COLLECTION", payments::TxStatus::completed, 4000, 80, "2026-03-02T23:00:00Z");      // Mar 3rd 00:00
  post(m2_, "COLLECTION", payments::TxStatus::completed, 8000, 160, "2026-03-01T12:00:00Z");     // another merchant

  auto res = answer(ask(m1_, {{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-02"}}));
  ASSERT_EQ(res.status, 200) << res.body;
  bj::value v = bj::parse(res.body);
  const auto& data = v.at("data").as_object();
  EXPECT_EQ(data.at("currency").as_string(), "XAF");
  EXPECT_EQ(data.at("from").as_string(), "2026-03-01");
  EXPECT_EQ(data.at("to").as_string(), "2026-03-02");
  const std::int64_t opening = data.at("opening_balance").as_int64();
  const std::int64_t closing = data.at("closing_balance").as_int64();
  EXPECT_EQ(opening, 9800);
  EXPECT_EQ(opening, ledger_balance_at(m1_, *parse_iso8601("2026-02-28T23:00:00Z")));
  EXPECT_EQ(closing, ledger_balance_at(m1_, *parse_iso8601("2026-03-02T23:00:00Z")));
  const auto& movements = data.at("movements").as_array();
  std::vector<std::string> types;
  std::int64_t balance = opening;
  for (const auto& item : movements) {
    const auto& o = item.as_object();
    types.emplace_back(o.at("type").as_string());
    EXPECT_EQ(o.at("gross").as_int64() - o.at("fee").as_int64(), o.at("net").as_int64());
    balance += o.at("net").as_int64();
    EXPECT_EQ(o.at("balance_after").as_int64(), balance);
    EXPECT_TRUE(o.at("settled_at").is_null());
  }
  EXPECT_EQ(balance, closing);
  EXPECT_EQ(types, (std::vector<std::string>{"COLLECTION", "PAYOUT", "PAYOUT", "PAYOUT", "REFUND", "REFUND", "REFUND",
                                             "COLLECTION"}));
  EXPECT_EQ(movements[0].at("net").as_int64(), 4900);
  EXPECT_EQ(movements[0].at("created_at").as_string(), "2026-02-28T23:00:00.000Z");
  EXPECT_EQ(movements[1].at("net").as_int64(), -2150);
  EXPECT_EQ(movements[3].at("net").as_int64(), 1150);
  EXPECT_EQ(movements[4].at("reference").as_string(), "RF-1");
  EXPECT_EQ(movements[7].at("created_at").as_string(), "2026-03-02T22:59:59.999Z");
  expect_ledger_clean();
}

TEST_P(StatementsTest, CsvHasTheSameRowsAndSemicolonGetsABom) {
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10000, 200, "2026-03-01T08:00:00Z");
  post(m1_, "DISBURSEMENT", payments::TxStatus::completed, 2000, 150, "2026-03-01T10:00:00Z");
  post(m1_, "COLLECTION", payments::TxStatus::completed, 5000, 100, "2026-03-01T12:00:00Z");
  auto json = answer(ask(m1_, {{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-01"}}));
  auto csv = answer(ask(m1_, {{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-01"}, {"format", "csv"}}));
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_EQ(csv.get("Content-Type"), "text/csv; charset=utf-8");
  EXPECT_NE(std::string(csv.get("Content-Disposition")).find("attachment"), std::string::npos);
  EXPECT_EQ(csv.body,
            "type,reference,merchant_reference,operator_reference,gross,fee,net,balance_after,created_at,settled_at\r\n"
            "COLLECTION,TX-1,uuid-1,OP-1,10000,200,9800,9800,2026-03-01T08:00:00.000Z,\r\n"
            "PAYOUT,PO-2,uuid-2,OP-2,-2000,150,-2150,7650,2026-03-01T10:00:00.000Z,\r\n"
            "COLLECTION,TX-3,uuid-3,OP-3,5000,100,4900,12550,2026-03-01T12:00:00.000Z,\r\n");
  EXPECT_EQ(bj::parse(json.body).at("data").at("movements").as_array().size(), 3u);
  auto excel = answer(ask(m1_, {{"currency", "XAF"},
                                {"from", "2026-03-01"},
                                {"to", "2026-03-01"},
                                {"format", "csv"},
                                {"separator", "semicolon"}}));
  EXPECT_EQ(excel.body.substr(0, 3), "\xEF\xBB\xBF");
  EXPECT_EQ(excel.body.substr(3, 20), "type;reference;merch");
  EXPECT_NE(excel.body.find("PAYOUT;PO-2;uuid-2;OP-2;-2000;150;-2150;7650;"), std::string::npos);
}

TEST_P(StatementsTest, AnotherMerchantSeesNothingOfYours) {
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10000, 200, "2026-03-01T08:00:00Z");
  auto res = answer(ask(m2_, {{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-01"}}));
  ASSERT_EQ(res.status, 200);
  const bj::value body = bj::parse(res.body);
  const auto& data = body.at("data");
  EXPECT_EQ(data.at("opening_balance").as_int64(), 0);
  EXPECT_EQ(data.at("closing_balance").as_int64(), 0);
  EXPECT_TRUE(data.at("movements").as_array().empty());
  auto bad = answer(ask(m2_, {{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-04-01"}}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("must cover at most 31 days"), std::string::npos);
}

TEST_P(StatementsTest, MoneyPostedWhileAStatementStreamsIsNotHalfInIt) {
  for (int i = 0; i < 5; ++i)
    post(m1_, "COLLECTION", payments::TxStatus::completed, 1000, 20, "2026-03-01T0" + std::to_string(i) + ":00:00Z");
  web::Request r = ask(m1_, {{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-01"}, {"format", "csv"}});
  web::Response res = web::respond(r, service_->statement(r));
  ASSERT_TRUE(res.stream);
  std::string body;
  ASSERT_TRUE(res.stream(body).ok());  // the header and the first page (2 rows)
  // Posted between two pages, inside the statement's day, before and after what was read.
  post(m1_, "COLLECTION", payments::TxStatus::completed, 7000, 140, "2026-03-01T00:30:00Z");
  post(m1_, "COLLECTION", payments::TxStatus::completed, 9000, 180, "2026-03-01T09:00:00Z");
  for (;;) {
    auto more = res.stream(body);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
  }
  // Five rows of 980, the last one's balance after = the closing balance of the frame.
  std::vector<std::string> lines;
  for (std::size_t at = 0, end; (end = body.find("\r\n", at)) != std::string::npos; at = end + 2)
    lines.push_back(body.substr(at, end - at));
  ASSERT_EQ(lines.size(), 6u) << body;
  EXPECT_NE(lines.back().find(",980,4900,"), std::string::npos) << body;
  EXPECT_EQ(body.find("TX-6"), std::string::npos);
  EXPECT_EQ(body.find("TX-7"), std::string::npos);
}

// ---- settlement ----------------------------------------------------------------------------------

settlement::Settings bank_settings(const merchant::Merchant& m) {
  settlement::Settings s;
  s.merchant_id = m.id;
  s.environment = "sandbox";
  s.currency = "XAF";
  s.destination = "BANK";
  s.iban = "CM2110005000010123456789012";
  s.bic = "AFRICMCXXXX";
  s.holder = "Boutique";
  s.schedule = "DAILY";
  s.minimum = 1000;
  s.reserve = 3000;
  return s;
}

// Settlement to an MTN wallet in Cameroon, with no reserve and no minimum.
settlement::Settings mobile_money_settings(const merchant::Merchant& m) {
  auto s = bank_settings(m);
  s.destination = "MOBILE_MONEY";
  s.provider = "MTN_MOMO_CMR";
  s.msisdn = "237670000000";
  s.reserve = s.minimum = 0;
  return s;
}

TEST_P(StatementsTest, OneSettlementPerMerchantAndPeriodWhateverTheNodes) {
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10000, 200, "2026-03-01T08:00:00Z");
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10400, 200, "2026-03-01T09:00:00Z");
  const auto settings = bank_settings(m1_);
  put(settings);
  Service other(second_node());
  std::atomic<int> made{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      Service& node = i % 2 == 0 ? *service_ : other;
      auto r = node.settle(settings, "D2026-03-01", *parse_iso8601("2026-03-02T00:00:00Z"));
      if (!r.ok())
        ++failed;  // a serialization conflict on PostgreSQL: the unit wrote nothing
      else if (r->has_value())
        ++made;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(made.load(), 1);
  std::int64_t batches = 0, available = 0, settling = 0;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(auto n, c.query_one("SELECT COUNT(*) FROM stl_batches"));
                   batches = n->i64(0);
                   SIKA_ASSIGN_OR_RETURN(available,
                                         ledger::balance(c, ledger::merchant_available(m1_.id, "sandbox", "XAF")));
                   SIKA_ASSIGN_OR_RETURN(settling,
                                         ledger::balance(c, settlement::settlement_account(m1_.id, "sandbox", "XAF")));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(batches, 1);
  EXPECT_EQ(available, 3000);  // the reserve stays
  EXPECT_EQ(settling, 20000 - 3000);
  // The next period settles again only what came since, above the minimum.
  EXPECT_FALSE(service_->settle(settings, "D2026-03-02", now_ms())->has_value());
  expect_ledger_clean();
}

TEST_P(StatementsTest, ASettlementIsAMovementAndPaysItsMovementsOnce) {
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10000, 200, "2026-03-01T08:00:00Z");
  post(m1_, "DISBURSEMENT", payments::TxStatus::completed, 2000, 150, "2026-03-01T10:00:00Z");
  const auto settings = bank_settings(m1_);
  put(settings);
  auto batch = service_->settle(settings, "D2026-03-01", *parse_iso8601("2026-03-01T12:00:00Z"));
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(batch->has_value());
  const auto& b = **batch;
  EXPECT_EQ(b.net, 9800 - 2150 - 3000);
  EXPECT_EQ(b.fees, 200 + 150);
  EXPECT_EQ(b.gross, 9800 - 2150 + 350);
  post(m1_, "COLLECTION", payments::TxStatus::completed, 5000, 100, "2026-03-01T13:00:00Z");  // after the batch
  auto movements = [&] {
    auto res = answer(ask(m1_, {{"currency", "XAF"}, {"from", "2026-03-01"}, {"to", "2026-03-01"}}));
    return bj::parse(res.body).at("data").at("movements").as_array();
  };
  auto before = movements();
  ASSERT_EQ(before.size(), 4u);
  EXPECT_EQ(before[2].at("type").as_string(), "SETTLEMENT");
  EXPECT_EQ(before[2].at("reference").as_string(), b.reference);
  EXPECT_EQ(before[2].at("net").as_int64(), -b.net);
  EXPECT_EQ(before[2].at("balance_after").as_int64(), 3000);
  for (const auto& m : before) EXPECT_TRUE(m.at("settled_at").is_null());  // not paid yet

  const std::int64_t paid_at = *parse_iso8601("2026-03-02T09:00:00Z");
  auto paid = service_->mark_paid(b.reference, paid_at);
  ASSERT_TRUE(paid.ok());
  EXPECT_TRUE(*paid);
  EXPECT_FALSE(*service_->mark_paid(b.reference, paid_at + 1));  // once
  auto after = movements();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(after[i].at("settled_at").as_string(), "2026-03-02T09:00:00.000Z") << i;
  EXPECT_TRUE(after[3].at("settled_at").is_null());  // came after the batch
  EXPECT_EQ(paid_events(), 1);
  expect_ledger_clean();
}

TEST_P(StatementsTest, ScheduledSettlementsMakeOneBatchPerPeriodOnTwoNodes) {
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10000, 200, "2026-03-01T08:00:00Z");
  auto settings = bank_settings(m1_);
  put(settings);
  store::Db& second = second_node();
  Service other(second);
  store::JobRunnerOptions ro;
  ro.workers = 1;
  store::JobRunner r1(*db_, ro), r2(second, ro);
  service_->register_jobs(r1);
  other.register_jobs(r2);
  std::vector<std::thread> threads;
  std::atomic<int> scheduled{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      Service& node = i % 2 == 0 ? *service_ : other;
      auto n = node.schedule_due();
      if (n.ok()) scheduled += *n;
      (void)(i % 2 == 0 ? r1 : r2).run_once();
    });
  for (auto& t : threads) t.join();
  (void)r1.run_once();
  (void)r2.run_once();
  EXPECT_EQ(scheduled.load(), 1);  // one job for the period, whoever enqueued it
  EXPECT_EQ(count("SELECT COUNT(*) FROM stl_batches WHERE merchant_id = ?", {m1_.id}), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM jobs WHERE queue = ? AND state = ?",
                  {std::string(kSettleQueue), std::string("done")}),
            1);
  expect_ledger_clean();
}

TEST_P(StatementsTest, AMobileMoneyBatchIsPaidByItsPayoutOrFailsWithIt) {
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10200, 200, "2026-03-01T08:00:00Z");
  const auto settings = mobile_money_settings(m1_);
  put(settings);
  auto balances = [&] {
    std::pair<std::int64_t, std::int64_t> out;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(out.first,
                                           ledger::balance(c, ledger::merchant_available(m1_.id, "sandbox", "XAF")));
                     SIKA_ASSIGN_OR_RETURN(
                         out.second, ledger::balance(c, settlement::settlement_account(m1_.id, "sandbox", "XAF")));
                     return {};
                   })
                    .ok());
    return out;
  };
  auto status_of = [&](const std::string& reference) {
    std::string st;
    EXPECT_TRUE(db_->read([&](store::Conn& c) -> Status {
                     SIKA_ASSIGN_OR_RETURN(auto b, settlement::find_batch(c, reference));
                     st = b->status;
                     return {};
                   })
                    .ok());
    return st;
  };
  // Handed to a payout that FAILS: the batch FAILS, the money is back on the available balance.
  auto first = service_->settle(settings, "R1", now_ms());
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ(balances(), std::make_pair(std::int64_t{0}, std::int64_t{10000}));
  const std::string payout1 = "PO-" + std::to_string(count_ + 1);
  ASSERT_TRUE(hand_to_payout(**first, payout1).ok());
  // A second hand-over of the same batch is refused: one payout per batch.
  auto twice = hand_to_payout(**first, "PO-other");
  ASSERT_FALSE(twice.ok());
  EXPECT_TRUE(twice.error().is(ErrorKind::conflict));
  post(m1_, "DISBURSEMENT", payments::TxStatus::failed, 10000, 0, "2026-03-02T08:00:00Z");
  ASSERT_TRUE(service_->watch_payouts().ok());
  EXPECT_EQ(status_of((*first)->reference), "FAILED");
  EXPECT_EQ(balances(), std::make_pair(std::int64_t{10000}, std::int64_t{0}));
  // Settled again, paid by a payout that COMPLETES: PAID with one settlement.paid event.
  auto second = service_->settle(settings, "R2", now_ms());
  ASSERT_TRUE(second.ok() && second->has_value());
  const std::string payout2 = "PO-" + std::to_string(count_ + 1);
  ASSERT_TRUE(hand_to_payout(**second, payout2).ok());
  post(m1_, "DISBURSEMENT", payments::TxStatus::completed, 10000, 0, "2026-03-02T09:00:00Z");
  ASSERT_TRUE(service_->watch_payouts().ok());
  ASSERT_TRUE(service_->watch_payouts().ok());  // finishing twice changes nothing
  EXPECT_EQ(status_of((*second)->reference), "PAID");
  EXPECT_EQ(balances(), std::make_pair(std::int64_t{0}, std::int64_t{0}));
  EXPECT_EQ(paid_events(), 1);
  // A batch whose payout could not be created is reversed.
  post(m1_, "COLLECTION", payments::TxStatus::completed, 5100, 100, "2026-03-02T10:00:00Z");
  auto third = service_->settle(settings, "R3", now_ms());
  ASSERT_TRUE(third.ok() && third->has_value());
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   ledger::Learned learned;
                   SIKA_ASSIGN_OR_RETURN(bool failed,
                                         settlement::fail_batch(c, (*third)->reference, true, now_ms(), learned));
                   EXPECT_TRUE(failed);
                   return {};
                 })
                  .ok());
  EXPECT_EQ(balances(), std::make_pair(std::int64_t{5000}, std::int64_t{0}));
  expect_ledger_clean();
}

TEST_P(StatementsTest, ABatchHandedToItsPayoutIsNotMarkedPaidByHand) {
  post(m1_, "COLLECTION", payments::TxStatus::completed, 10200, 200, "2026-03-01T08:00:00Z");
  const auto settings = mobile_money_settings(m1_);
  put(settings);
  auto made = service_->settle(settings, "R1", now_ms());
  ASSERT_TRUE(made.ok() && made->has_value());
  ASSERT_TRUE(hand_to_payout(**made, "PO-x").ok());
  // Its payout pays it: paying it by hand too would pay the merchant twice.
  auto paid = service_->mark_paid((*made)->reference, now_ms());
  ASSERT_TRUE(paid.ok());
  EXPECT_FALSE(*paid);
  expect_ledger_clean();
  std::int64_t settled = -1;
  ASSERT_TRUE(db_->read([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(settled,
                                         ledger::balance(c, settlement::settlement_account(m1_.id, "sandbox", "XAF")));
                   return {};
                 })
                  .ok());
  EXPECT_EQ(settled, 0);
}

// Every (from, to) pair of a settlement batch's statuses: PENDING -> PAID (settlement.paid) and
// PENDING -> FAILED (no event) move once; every other pair is refused and writes nothing.
// A refused reserve or settlement names a typed reason: error.details keeps its English text and a
// page says it in French.
TEST_P(StatementsTest, SettlementRefusalsAreTypedReasonsWithFrenchTexts) {
  auto negative = service_->set_reserve(m1_.id, "sandbox", "XAF", -1);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(bj::serialize(negative.error().details), "{\"amount\":\"must be zero or more (minor units)\"}");
  const Problem* p = negative.error().problem("amount");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reason::text(*p, i18n::Locale::fr), "doit être zéro ou plus (unités mineures)");

  auto unset = service_->set_reserve(m1_.id, "sandbox", "XAF", 100);
  ASSERT_FALSE(unset.ok());
  EXPECT_TRUE(unset.error().is(ErrorKind::not_found));
  EXPECT_EQ(bj::serialize(unset.error().details),
            R"({"currency":"the merchant has no settlement settings in this currency"})");
  EXPECT_TRUE(unset.error().has(Reason::no_settlement_settings));
  auto unsettled = service_->settle_now(m1_.id, "sandbox", "XAF");
  ASSERT_FALSE(unsettled.ok());
  EXPECT_TRUE(unsettled.error().has(Reason::no_settlement_settings));

  put(bank_settings(m1_));
  auto nothing = service_->settle_now(m1_.id, "sandbox", "XAF");
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.error().code, "nothing_to_settle");
  EXPECT_EQ(bj::serialize(nothing.error().details),
            R"({"amount":"nothing above the reserve and the minimum is available"})");
  p = nothing.error().problem("amount");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reason::text(*p, i18n::Locale::fr), "rien n'est disponible au-delà de la réserve et du minimum");
}

TEST_P(StatementsTest, SettlementBatchesMoveOnlyAlongTheirTable) {
  EXPECT_EQ(settlement::kBatchStatus.edge(settlement::BatchStatus::pending, settlement::BatchStatus::paid)->event,
            settlement::kPaidEvent);
  sika::testing::walk_every_move(*db_, settlement::kBatchStatus);
}

INSTANTIATE_TEST_SUITE_P(Backends, StatementsTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace sika::statements
