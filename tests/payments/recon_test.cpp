// Operator reconciliation: the statement parsers (each format, exact decimals, refused lines), the
// matcher with a statement holding every kind of difference, idempotent imports, the recovery
// engine settling a status mismatch, decisions (adjustment journals, a clean ledger) and two
// decisions racing, and the daily closing; on SQLite and PostgreSQL.
#include <boost/json.hpp>

#include <map>
#include <mutex>
#include <thread>

#include "core/crypto.hpp"
#include "core/random.hpp"
#include "core/reason.hpp"
#include "fixture.hpp"
#include "payments/recon.hpp"
#include "support/state_machine_walk.hpp"

namespace sika::payments::testing {
namespace {

using recon::Decision;

// --- parsers (pure) ---

TEST(ReconFormat, NormalisedReadsEveryColumnWithExactDecimals) {
  const std::string text =
      "# a comment\n"
      "#period,2026-11-20T00:00:00Z,2026-11-21T00:00:00Z\n"
      "operator_reference,our_reference,type,amount,currency,status,timestamp,fee\r\n"
      "OP-1,ref-1,collection,1500,XAF,succeeded,2026-11-20T10:00:00Z,15\r\n"
      "\"OP,2\",,payout,15.50,EUR,failed,2026-11-20 11:00:00,0.10\n"
      "OP-3,ref-3,refund,0.07,EUR,pending,2026-11-20,\n"
      "#closing_balance,-250.5,EUR\n";
  auto s = recon::parse(text, *recon::format_named("normalised"));
  ASSERT_TRUE(s.ok()) << s.error().code;
  ASSERT_EQ(s->lines.size(), 3u);
  EXPECT_EQ(s->lines[0].operator_reference, "OP-1");
  EXPECT_EQ(s->lines[0].our_reference, "ref-1");
  EXPECT_EQ(s->lines[0].amount, 1500);
  EXPECT_EQ(s->lines[0].fee, 15);
  EXPECT_EQ(s->lines[0].status, "succeeded");
  EXPECT_EQ(s->lines[0].line_no, 4);
  EXPECT_EQ(s->lines[1].operator_reference, "OP,2");
  EXPECT_EQ(s->lines[1].amount, 1550);  // 15.50 EUR, never through floating point
  EXPECT_EQ(s->lines[1].fee, 10);
  EXPECT_EQ(s->lines[1].type, "payout");
  EXPECT_EQ(s->lines[1].occurred_at, *parse_iso8601("2026-11-20T11:00:00Z"));
  EXPECT_EQ(s->lines[2].amount, 7);
  EXPECT_EQ(s->lines[2].status, "pending");
  EXPECT_EQ(*s->period_start, *parse_iso8601("2026-11-20T00:00:00Z"));
  EXPECT_EQ(*s->closing_balance, -25050);
  EXPECT_EQ(s->closing_currency, "EUR");
  // amount_minor instead of amount
  auto m = recon::parse(
      "operator_reference,type,amount_minor,currency,status,timestamp\nA,collection,1550,EUR,succeeded,2026-11-20\n",
      *recon::format_named("normalised"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->lines[0].amount, 1550);
}

TEST(ReconFormat, RefusesWhatIsNotExactOrKnownNamingTheLine) {
  const auto& f = *recon::format_named("normalised");
  const std::string head = "operator_reference,our_reference,type,amount,currency,status,timestamp,fee\n";
  auto refused = [&](const std::string& line, const std::string& expect) {
    auto s = recon::parse(head + line + "\n", f);
    ASSERT_FALSE(s.ok()) << line;
    EXPECT_EQ(s.error().kind, ErrorKind::invalid);
    std::string details = bj::serialize(s.error().details);
    EXPECT_NE(details.find("line 2: " + expect), std::string::npos) << details;
  };
  refused("A,,collection,1500.5,XAF,succeeded,2026-11-20T10:00:00Z,0", "amount");  // XAF has no decimals
  refused("A,,collection,15.505,EUR,succeeded,2026-11-20T10:00:00Z,0", "amount");
  refused("A,,collection,1e3,EUR,succeeded,2026-11-20T10:00:00Z,0", "amount");
  refused("A,,collection,10,EUR,done,2026-11-20T10:00:00Z,0", "unknown status");
  refused("A,,deposit,10,EUR,succeeded,2026-11-20T10:00:00Z,0", "unknown type");
  refused("A,,collection,10,euro,succeeded,2026-11-20T10:00:00Z,0", "currency");
  refused("A,,collection,10,EUR,succeeded,yesterday,0", "timestamp");
  refused(",,collection,10,EUR,succeeded,2026-11-20T10:00:00Z,0", "no operator reference");
  auto twice = recon::parse(head +
                                "A,,collection,10,EUR,succeeded,2026-11-20,0\nA,,collection,10,EUR,succeeded,"
                                "2026-11-20,0\n",
                            f);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(bj::serialize(twice.error().details).find("line 3"), std::string::npos);
  auto no_header = recon::parse("operator_reference,amount\n", f);
  ASSERT_FALSE(no_header.ok());
}

TEST(ReconFormat, EachConnectorsExportMapsItsStatusesAndReferences) {
  auto mtn = recon::parse(
      "financialTransactionId,externalId,type,amount,currency,status,date,fee\n"
      "9912,0193a1b2-0000-7000-8000-000000000001,REQUESTTOPAY,1500,XAF,SUCCESSFUL,2026-11-20T10:00:00Z,0\n"
      "9913,0193a1b2-0000-7000-8000-000000000002,TRANSFER,1000,XAF,FAILED,2026-11-20T10:00:00Z,0\n",
      *recon::format_named("mtn_momo"));
  ASSERT_TRUE(mtn.ok());
  EXPECT_EQ(mtn->lines[0].type, "collection");
  EXPECT_EQ(mtn->lines[1].status, "failed");
  EXPECT_EQ(mtn->lines[1].operator_status, "FAILED");
  auto orange = recon::parse(
      "txnid,order_id,type,amount,currency,status,date,fee\nMP2611.1,SKABC,PAYMENT,2000,XAF,EXPIRED,2026-11-20,0\n",
      *recon::format_named("orange_money"));
  ASSERT_TRUE(orange.ok());
  EXPECT_EQ(orange->lines[0].status, "failed");
  // Wave: signed amounts, no status column (its balance movements are done).
  auto wave = recon::parse(
      "transaction_id,client_reference,transaction_type,amount,currency,timestamp,fee\n"
      "T_1,r1,,1000,XOF,2026-11-20T10:00:00Z,10\n"
      "T_2,r2,,-500,XOF,2026-11-20T10:00:00Z,-5\n",
      *recon::format_named("wave"));
  ASSERT_TRUE(wave.ok());
  EXPECT_EQ(wave->lines[0].type, "collection");
  EXPECT_EQ(wave->lines[1].type, "payout");
  EXPECT_EQ(wave->lines[1].amount, 500);
  EXPECT_EQ(wave->lines[1].fee, 5);
  EXPECT_EQ(wave->lines[1].status, "succeeded");
  // Airtel echoes our UUID without its dashes.
  auto airtel = recon::parse(
      "airtel_money_id,id,type,amount,currency,status,date,fee\n"
      "MP1,0193A1B200007000800000000000000A,COLLECTION,100,XAF,TS,2026-11-20T10:00:00Z,0\n"
      "MP2,x,B2C,100,XAF,TIP,2026-11-20T10:00:00Z,0\n",
      *recon::format_named("airtel_money"));
  ASSERT_TRUE(airtel.ok());
  EXPECT_EQ(airtel->lines[0].our_reference, "0193a1b2-0000-7000-8000-00000000000a");
  EXPECT_EQ(airtel->lines[1].status, "pending");
  auto bad = recon::parse(
      "airtel_money_id,id,type,amount,currency,status,date,fee\nMP3,x,COLLECTION,100,XAF,TX,"
      "2026-11-20,0\n",
      *recon::format_named("airtel_money"));
  EXPECT_FALSE(bad.ok());
}

// --- the matcher, decisions and closings, on both backends ---

// An operator whose status answers the test decides (it stands in for the sandbox connector).
class AnsweringOperator final : public SandboxStandIn {
 public:
  Result<OperatorStatus> query_status(const PaymentOrder&) override {
    ++queries;
    OperatorStatus s;
    s.state = OperatorStatus::State::succeeded;
    return s;
  }
  std::atomic<int> queries{0};
};

class ReconTest : public PaymentsTest {
 protected:
  void SetUp() override {
    PaymentsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    recon_ = std::make_unique<recon::Reconciler>(
        *db_, [this] { return now_ms() + offset_.load(); },
        recon::Options{.grace_ms = 48LL * 3600 * 1000, .batch = 100});
  }

  // A payment of the sandbox connector written as the lifecycle leaves it (a COMPLETED
  // collection with its COLLECTION journal), submitted `age_ms` ago.
  std::int64_t seed(const std::string& ref, std::string status, std::int64_t amount, std::int64_t fee,
                    std::optional<std::string> operator_ref, std::int64_t age_ms, std::string currency = "XAF") {
    std::int64_t id = 0;
    EXPECT_TRUE(
        db_->write([&](store::Conn& c) -> Status {
             const std::int64_t t = now_ms() - age_ms;
             SIKA_ASSIGN_OR_RETURN(
                 auto inserted,
                 c.insert_id(
                     "INSERT INTO pay_transactions (reference, merchant_id, environment, operation, "
                     "transaction_uuid, request_hash, invoice_reference, provider_reference, status, channel, "
                     "service_code, country, connector, customer_wallet, amount, currency, fee, required_total, "
                     "confirmation_method, confirmation_url, settlement_mode, split_reference, split_status, "
                     "description, metadata, needs_otp, operator_reference, submitted_at, expires_at, "
                     "created_at, updated_at, next_check_at) VALUES (?, ?, 'sandbox', 'COLLECTION', ?, 'h', "
                     "'inv', ?, ?, 'PROVIDER', 'MTN_MOMO_CMR', 'CMR', 'sandbox', '237670000001', ?, ?, ?, ?, "
                     "'PUSH', '', 'MERCHANT', '', 'NONE', 'd', '{}', 0, ?, ?, ?, ?, ?, ?)",
                     {"TX-" + ref, m1_.id, uuid_v4(), "pr-" + ref, status, amount, currency, fee, amount + fee,
                      store::opt(operator_ref), t, now_ms() + 3'600'000, t, t,
                      status == "PENDING" ? store::Value(now_ms() + 3'600'000) : store::Value(nullptr)}));
             id = *inserted;
             if (status != "COMPLETED") return {};
             ledger::Posting p;
             p.transaction_id = id;
             p.kind = std::string(ledger::kCollection);
             p.environment = "sandbox";
             p.currency = currency;
             p.memo = "collection";
             p.legs.push_back({ledger::operator_clearing("MTN_MOMO_CMR", "sandbox", currency), amount + fee, 0});
             p.legs.push_back({ledger::merchant_available(m1_.id, "sandbox", currency), 0, amount});
             if (fee > 0) p.legs.push_back({ledger::fee_revenue("sandbox", currency), 0, fee});
             ledger::Learned learned;
             return ledger::post(c, p, t, nullptr, learned);
           })
            .ok());
    return id;
  }

  // The statement of every kind of difference (normalised, XAF; required_total = amount + fee).
  std::string statement_with_every_difference() {
    const std::string day = iso8601(now_ms() - 3'600'000);
    seed("a", "COMPLETED", 10'000, 200, "OPA", 72 * 3'600'000LL);        // matched by the operator's reference
    seed("b", "COMPLETED", 5'000, 100, std::nullopt, 72 * 3'600'000LL);  // matched by our reference
    seed("c", "COMPLETED", 8'000, 160, "OPC", 72 * 3'600'000LL);         // amount differs
    seed("d", "COMPLETED", 3'000, 60, "OPD", 72 * 3'600'000LL);          // currency differs
    seed("e", "PENDING", 4'000, 80, "OPE", 72 * 3'600'000LL);            // status differs (pending here)
    seed("f", "COMPLETED", 6'000, 120, "OPF", 72 * 3'600'000LL);         // missing at the operator
    seed("g", "COMPLETED", 7'000, 140, "OPG", 3'600'000LL);              // timing: 1 h old
    seed("h", "FAILED", 2'000, 40, "OPH", 72 * 3'600'000LL);             // failed on both sides
    seed("i", "FAILED", 9'000, 180, "OPI", 72 * 3'600'000LL);            // failed here, not at the operator
    seed("k", "FAILED", 1'500, 30, "OPK", 72 * 3'600'000LL);             // failed, absent from the statement
    return "#period," + iso8601(now_ms() - 100 * 3'600'000LL) + "," + iso8601(now_ms()) +
           "\n"
           "operator_reference,our_reference,type,amount,currency,status,timestamp,fee\n"
           "OPA,,collection,10200,XAF,succeeded," +
           day +
           ",50\n"
           "OPB,pr-b,collection,5100,XAF,succeeded," +
           day +
           ",25\n"
           "OPC,,collection,8100,XAF,succeeded," +
           day +
           ",0\n"
           "OPD,,collection,3060,XOF,succeeded," +
           day +
           ",0\n"
           "OPE,,collection,4080,XAF,succeeded," +
           day +
           ",0\n"
           "OPH,,collection,2040,XAF,failed," +
           day +
           ",0\n"
           "OPI,,collection,9180,XAF,succeeded," +
           day +
           ",0\n"
           "OPX,,collection,1000,XAF,succeeded," +
           day +
           ",0\n"
           "OPY,,payout,700,XAF,succeeded," +
           day + ",0\n";
  }

  recon::Summary import_ok(const std::string& text, const std::string& name = "statement.csv") {
    recon::ImportRequest req;
    req.connector = "sandbox";
    req.format = "normalised";
    req.file_name = name;
    req.text = text;
    req.actor = "test";
    auto s = recon_->import(req);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().code + " " + bj::serialize(s.error().details));
    return s.ok() ? *s : recon::Summary{};
  }

  recon::Item item_of(std::int64_t run, const std::string& reference) {
    auto items = recon_->items(run, {.limit = 500});
    EXPECT_TRUE(items.ok());
    for (const auto& i : *items)
      if (i.reference == reference) return i;
    ADD_FAILURE() << "no item " << reference;
    return {};
  }

  std::unique_ptr<recon::Reconciler> recon_;
};

INSTANTIATE_TEST_SUITE_P(Backends, ReconTest, ::testing::Values("sqlite", "postgres"));

// Every (from, to) pair of a reconciliation run's statuses: importing -> done (no event) moves
// once; every other pair is refused and writes nothing.
TEST_P(ReconTest, ReconRunsMoveOnlyAlongTheirTable) { sika::testing::walk_every_move(*db_, recon::kRunStatus); }

TEST_P(ReconTest, AStatementWithEveryKindOfDifferenceIsReportedByKind) {
  auto s = import_ok(statement_with_every_difference());
  EXPECT_FALSE(s.replayed);
  EXPECT_EQ(s.status, "done");
  EXPECT_EQ(s.lines, 9);
  EXPECT_EQ(s.kinds["matched"], 3);  // a, b, h
  EXPECT_EQ(s.kinds["mismatch_amount"], 1);
  EXPECT_EQ(s.kinds["mismatch_currency"], 1);
  EXPECT_EQ(s.kinds["mismatch_status"], 2);  // e (PENDING here), i (FAILED here)
  EXPECT_EQ(s.kinds["missing_in_sika"], 2);  // OPX, OPY
  EXPECT_EQ(s.kinds["missing_at_operator"], 1);
  EXPECT_EQ(s.kinds["timing"], 1);
  EXPECT_EQ(s.states["resolved"], 3);
  EXPECT_EQ(s.states["open"], 8);
  auto b = item_of(s.run_id, "OPB");  // found by our reference: Sika has no operator reference for it
  EXPECT_EQ(b.kind, "matched");
  EXPECT_EQ(b.transaction_reference, "TX-b");
  auto c = item_of(s.run_id, "OPC");
  EXPECT_EQ(c.kind, "mismatch_amount");
  EXPECT_EQ(*c.sika_amount, 8'160);
  EXPECT_EQ(*c.operator_amount, 8'100);
  EXPECT_EQ(item_of(s.run_id, "OPF").kind, "missing_at_operator");
  EXPECT_EQ(item_of(s.run_id, "OPG").kind, "timing");
  EXPECT_EQ(item_of(s.run_id, "OPY").operator_held, -700);  // a payout: the operator holds less
  // The failed payment absent from the statement is no difference (nothing moved on either side).
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_items i JOIN pay_transactions t ON t.id = i.transaction_id "
                  "WHERE t.reference = 'TX-k'"),
            0);
  expect_ledger_clean();
}

TEST_P(ReconTest, TheSameFileTwiceIsTheSameRun) {
  const std::string text = statement_with_every_difference();
  auto first = import_ok(text, "a.csv");
  auto again = import_ok(text, "renamed.csv");
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.run_id, first.run_id);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_runs"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_items"), 11);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_lines"), 9);
}

TEST_P(ReconTest, ARefusedFileLeavesNoRun) {
  recon::ImportRequest req;
  req.connector = "sandbox";
  req.format = "normalised";
  req.text = "operator_reference,type,amount,currency,status,timestamp\nA,collection,1.5,XAF,succeeded,2026-11-20\n";
  auto s = recon_->import(req);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::invalid);
  req.format = "swift";
  EXPECT_EQ(recon_->import(req).error().kind, ErrorKind::invalid);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_runs"), 0);
}

// A status mismatch of a PENDING payment is asked about now by the recovery engine; the operator's
// answer completes it through the normal transition, and the item resolves itself.
TEST_P(ReconTest, RecoveryAsksAboutAStatusMismatchAndItsAnswerSettlesIt) {
  AnsweringOperator op;
  service_->register_connector(op);
  auto s = import_ok(statement_with_every_difference());
  auto e = item_of(s.run_id, "OPE");
  ASSERT_EQ(e.kind, "mismatch_status");
  EXPECT_EQ(e.sika_status, "PENDING");
  // Asked now, not at its next_check_at an hour away.
  EXPECT_LE(count("SELECT next_check_at FROM pay_transactions WHERE reference = 'TX-e'"), now_ms());
  // Accepting the file's figure is refused: the operator's answer decides.
  auto refused = recon_->decide(e.id, Decision::accept, "ops@example.com", "file says so");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::conflict);
  ASSERT_TRUE(service_->recover_due().ok());  // the background loop may have asked first
  EXPECT_GE(op.queries.load(), 1);
  auto r = recon_->report(s.run_id);
  ASSERT_TRUE(r.ok());
  auto settled = item_of(s.run_id, "OPE");
  EXPECT_EQ(settled.state, "resolved");
  EXPECT_EQ(settled.decided_by, "recovery");
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals WHERE kind = 'RECON_ADJUSTMENT'"), 0);
  expect_ledger_clean();
}

// An operator whose live status answer is set per payment (by our reference at the operator).
class LiveOperator final : public SandboxStandIn {
 public:
  Result<OperatorStatus> query_status(const PaymentOrder& order) override {
    std::lock_guard lock(mutex);
    ++asked[order.provider_reference];
    auto it = answers.find(order.provider_reference);
    if (it == answers.end()) return unavailable(bj::string("no answer"));
    OperatorStatus s;
    s.state = it->second;
    return s;
  }
  std::mutex mutex;
  std::map<std::string, OperatorStatus::State> answers;
  std::map<std::string, int> asked;
};

// A status mismatch of a payment already final here is asked about again through the operator's
// status API: a live answer that agrees with Sika (the statement was stale) resolves the item; one
// that confirms the statement keeps it open for an operator's decision, with the live answer as
// evidence. Nothing moves money from a final state on this path.
TEST_P(ReconTest, RecoveryAsksAgainAboutAStatusMismatchOfAFinalPayment) {
  LiveOperator op;
  using S = OperatorStatus::State;
  op.answers = {{"pr-s", S::failed}, {"pr-t", S::failed}, {"pr-u", S::succeeded}};
  service_->register_connector(op);
  seed("s", "FAILED", 2'000, 40, "OPS", 72 * 3'600'000LL);     // the statement says succeeded; live: failed (stale)
  seed("t", "COMPLETED", 3'000, 60, "OPT", 72 * 3'600'000LL);  // the statement says failed; live: failed (confirms)
  seed("u", "FAILED", 4'000, 80, "OPU", 72 * 3'600'000LL);     // the statement says succeeded; live: succeeded
  seed("w", "FAILED", 5'000, 100, "OPW", 72 * 3'600'000LL);    // the operator's status API does not answer
  const std::string day = iso8601(now_ms() - 3'600'000);
  auto run = import_ok(
      "operator_reference,type,amount,currency,status,timestamp\n"
      "OPS,collection,2040,XAF,succeeded," +
      day + "\n" + "OPT,collection,3060,XAF,failed," + day + "\n" + "OPU,collection,4080,XAF,succeeded," + day + "\n" +
      "OPW,collection,5100,XAF,succeeded," + day + "\n");
  EXPECT_EQ(run.kinds["mismatch_status"], 4);
  const std::int64_t journals = count("SELECT COUNT(*) FROM ledger_journals");
  ASSERT_TRUE(service_->recover_due().ok());
  ASSERT_TRUE(service_->recover_due().ok());  // nothing is asked twice once answered
  {
    std::lock_guard lock(op.mutex);
    EXPECT_EQ(op.asked["pr-s"], 1);
    EXPECT_EQ(op.asked["pr-t"], 1);
    EXPECT_EQ(op.asked["pr-u"], 1);
    EXPECT_GE(op.asked["pr-w"], 1);
  }
  auto stale = item_of(run.run_id, "OPS");
  EXPECT_EQ(stale.state, "resolved");
  EXPECT_EQ(stale.decided_by, "recovery");
  EXPECT_EQ(stale.operator_live_status, "failed");
  ASSERT_TRUE(stale.live_checked_at.has_value());
  auto confirmed = item_of(run.run_id, "OPT");
  EXPECT_EQ(confirmed.state, "open");
  EXPECT_EQ(confirmed.operator_live_status, "failed");
  EXPECT_EQ(confirmed.decided_by, "");
  auto other = item_of(run.run_id, "OPU");
  EXPECT_EQ(other.state, "open");
  EXPECT_EQ(other.operator_live_status, "succeeded");
  auto silent = item_of(run.run_id, "OPW");
  EXPECT_EQ(silent.state, "open");
  EXPECT_EQ(silent.operator_live_status, "");
  // Final payments stay as they are: no transition, no journal.
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE reference IN ('TX-s', 'TX-u', 'TX-w') "
                  "AND status = 'FAILED'"),
            3);
  EXPECT_EQ(count("SELECT COUNT(*) FROM pay_transactions WHERE reference = 'TX-t' AND status = 'COMPLETED'"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals"), journals);
  // The operator decides: its figure accepted as an audited adjustment.
  auto accepted = recon_->decide(other.id, Decision::accept, "ops@example.com", "operator confirms it live");
  ASSERT_TRUE(accepted.ok()) << accepted.error().code;
  EXPECT_EQ(accepted->state, "adjusted");
  EXPECT_EQ(accepted->operator_live_status, "succeeded");
  expect_ledger_clean();
}

// Two nodes' recovery loops at once: each final mismatch is asked once and recorded once.
TEST_P(ReconTest, TwoRecoveryLoopsAskEachFinalMismatchOnce) {
  LiveOperator op;
  service_->register_connector(op);
  std::string text = "operator_reference,type,amount,currency,status,timestamp\n";
  const std::string day = iso8601(now_ms() - 3'600'000);
  for (int i = 0; i < 40; ++i) {
    const std::string k = "z" + std::to_string(i);
    seed(k, "FAILED", 1'000, 20, "OP" + k, 72 * 3'600'000LL);
    op.answers["pr-" + k] = OperatorStatus::State::succeeded;
    text += "OP" + k + ",collection,1020,XAF,succeeded," + day + "\n";
  }
  auto run = import_ok(text);
  Options o;
  o.checkout_url = "http://127.0.0.1:1/checkout";
  o.callback_base_url = "http://127.0.0.1:1/api/operator/callback";
  o.secret = "test-secret-0123456789";
  o.recovery_batch = 5;
  o.node_id = "node-b";
  Service other(
      *db_, [this] { return catalog_; }, client_, o);
  other.register_connector(op);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 6; ++round) EXPECT_TRUE((t % 2 == 0 ? *service_ : other).recover_due().ok());
    });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(service_->recover_due().ok());
  {
    std::lock_guard lock(op.mutex);
    EXPECT_EQ(op.asked.size(), 40u);
    for (const auto& [ref, n] : op.asked) EXPECT_EQ(n, 1) << ref;
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_items WHERE run_id = " + std::to_string(run.run_id) +
                  " AND operator_live_status = 'succeeded' AND live_checks = 1 AND state = 'open'"),
            40);
  expect_ledger_clean();
}

// An import killed mid-way leaves its run `importing` with some lines: while its lease runs, the
// same file is refused (409); once it ended, the next import removes that run in one unit and
// imports the file afresh: one run, every line once. Eight imports racing for it make one run.
TEST_P(ReconTest, AnInterruptedImportIsCleanedUpByTheNextImportOfItsFile) {
  std::string text = "operator_reference,type,amount,currency,status,timestamp\n";
  const std::string day = iso8601(now_ms() - 3'600'000);
  for (int i = 0; i < 250; ++i) text += "OPN" + std::to_string(i) + ",collection,1000,XAF,succeeded," + day + "\n";
  const std::string hash = hex_encode(crypto::sha256(text));
  // What a killed import leaves: the run importing, its lease renewed 1 s ago for 60 s, 100 lines.
  std::int64_t run = 0;
  ASSERT_TRUE(db_->write([&](store::Conn& c) -> Status {
                   SIKA_ASSIGN_OR_RETURN(
                       auto id, c.insert_id("INSERT INTO recon_runs (connector, environment, format, file_hash, "
                                            "file_name, period_start, period_end, line_count, status, imported_by, "
                                            "created_at, lease_owner, lease_until) VALUES ('sandbox', 'sandbox', "
                                            "'normalised', ?, 'big.csv', 0, 1, 250, 'importing', 'test', ?, 'dead', ?)",
                                            {hash, now_ms(), now_ms() + 59'000}));
                   run = *id;
                   for (int i = 0; i < 100; ++i)
                     SIKA_TRY(
                         c.exec("INSERT INTO recon_lines (run_id, line_no, operator_reference, type, amount, "
                                "currency, status, operator_status, occurred_at, fee) VALUES (?, ?, ?, "
                                "'collection', 1000, 'XAF', 'succeeded', 'succeeded', ?, 0)",
                                {run, std::int64_t{i + 2}, "OPN" + std::to_string(i), now_ms()}));
                   return {};
                 })
                  .ok());
  recon::ImportRequest req;
  req.connector = "sandbox";
  req.format = "normalised";
  req.file_name = "big.csv";
  req.text = text;
  req.actor = "test";
  auto alive = recon_->import(req);
  ASSERT_FALSE(alive.ok());
  EXPECT_EQ(alive.error().kind, ErrorKind::conflict);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_lines"), 100);
  offset_ = 61'000;  // the lease has ended: nobody renewed it
  std::vector<std::thread> threads;
  std::atomic<int> done{0}, refused{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      auto s = recon_->import(req);
      if (s.ok() && s->status == "done")
        ++done;
      else if (!s.ok() && s.error().kind == ErrorKind::conflict)
        ++refused;
      else
        ADD_FAILURE() << (s.ok() ? s->status : s.error().code);
    });
  for (auto& t : threads) t.join();
  EXPECT_GE(done.load(), 1);
  EXPECT_EQ(done.load() + refused.load(), 8);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_runs"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_runs WHERE id = " + std::to_string(run)), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_lines"), 250);
  EXPECT_EQ(count("SELECT COUNT(DISTINCT operator_reference) FROM recon_lines"), 250);
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_items WHERE kind = 'missing_in_sika'"), 250);
  auto again = recon_->import(req);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->lines, 250);
  expect_ledger_clean();
}

// A statement of a few thousand lines with the default batch (5,000 lines per unit): its lines
// are written in multi-row INSERTs small enough for each backend's protocol (on PostgreSQL the
// description of a prepared statement's parameters must stay under libpq's 30,000-byte message
// limit), every line once.
TEST_P(ReconTest, ALargeStatementImportsWithTheDefaultBatch) {
  recon::Reconciler big(
      *db_, [] { return now_ms(); }, recon::Options{});
  std::string text = "operator_reference,type,amount,currency,status,timestamp\n";
  const std::string day = iso8601(now_ms() - 3'600'000);
  for (int i = 0; i < 2'500; ++i) text += "OPL" + std::to_string(i) + ",collection,1000,XAF,succeeded," + day + "\n";
  recon::ImportRequest req;
  req.connector = "sandbox";
  req.format = "normalised";
  req.file_name = "large.csv";
  req.text = text;
  req.actor = "test";
  auto s = big.import(req);
  ASSERT_TRUE(s.ok()) << s.error().code << " " << bj::serialize(s.error().details);
  EXPECT_EQ(s->lines, 2'500);
  EXPECT_EQ(s->kinds["missing_in_sika"], 2'500);
  EXPECT_EQ(count("SELECT COUNT(DISTINCT operator_reference) FROM recon_lines"), 2'500);
}

TEST_P(ReconTest, AcceptingTheOperatorsFigurePostsABalancedAdjustment) {
  auto s = import_ok(statement_with_every_difference());
  const auto clearing = ledger::operator_clearing("MTN_MOMO_CMR", "sandbox", "XAF");
  const std::int64_t before = balance(clearing);
  // Missing in Sika: a collection of 1000 the operator holds.
  auto x = recon_->decide(item_of(s.run_id, "OPX").id, Decision::accept, "ops@example.com", "operator's receipt");
  ASSERT_TRUE(x.ok()) << x.error().code;
  EXPECT_EQ(x->state, "adjusted");
  EXPECT_EQ(x->decided_by, "ops@example.com");
  ASSERT_TRUE(x->journal_id.has_value());
  EXPECT_EQ(balance(clearing), before - 1'000);
  // An amount mismatch: the operator holds 60 less.
  auto c = recon_->decide(item_of(s.run_id, "OPC").id, Decision::accept, "ops@example.com", "short paid");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(balance(clearing), before - 1'000 + 60);
  // Under investigation first, then accepted: missing at the operator reverses the collection.
  auto f = item_of(s.run_id, "OPF");
  auto inv = recon_->decide(f.id, Decision::investigate, "ops@example.com", "asked the operator");
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->state, "under_investigation");
  EXPECT_FALSE(inv->journal_id.has_value());
  auto acc = recon_->decide(f.id, Decision::accept, "lead@example.com", "operator confirms no such payment");
  ASSERT_TRUE(acc.ok());
  EXPECT_EQ(balance(clearing), before - 1'000 + 60 + 6'120);
  // A currency mismatch: Sika's XAF side reversed, the operator's XOF side booked.
  auto d = recon_->decide(item_of(s.run_id, "OPD").id, Decision::accept, "ops@example.com", "XOF account");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(balance(ledger::operator_clearing("MTN_MOMO_CMR", "sandbox", "XOF")), -3'060);
  // Decided items and matched ones take no second decision.
  auto twice = recon_->decide(x->id, Decision::accept, "ops@example.com", "again");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().kind, ErrorKind::conflict);
  auto matched = recon_->decide(item_of(s.run_id, "OPA").id, Decision::investigate, "ops@example.com", "why");
  ASSERT_FALSE(matched.ok());
  EXPECT_EQ(matched.error().kind, ErrorKind::conflict);
  auto no_reason = recon_->decide(item_of(s.run_id, "OPY").id, Decision::accept, "ops@example.com", "  ");
  ASSERT_FALSE(no_reason.ok());
  EXPECT_EQ(no_reason.error().kind, ErrorKind::invalid);
  EXPECT_EQ(recon_->decide(999'999, Decision::accept, "ops@example.com", "x").error().kind, ErrorKind::not_found);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals WHERE kind = 'RECON_ADJUSTMENT'"), 5);
  expect_ledger_clean();
}

// Sixteen decisions at once on one item (two operators, double clicks): exactly one wins, one
// journal is posted, the ledger stays clean.
TEST_P(ReconTest, ConcurrentDecisionsOnOneItemDecideItOnce) {
  auto s = import_ok(statement_with_every_difference());
  const std::int64_t id = item_of(s.run_id, "OPX").id;
  std::atomic<int> won{0}, lost{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      auto r = recon_->decide(id, i % 3 == 0 ? Decision::investigate : Decision::accept,
                              "op" + std::to_string(i) + "@example.com", "race");
      if (r.ok())
        ++won;
      else if (r.error().kind == ErrorKind::conflict)
        ++lost;
      else
        ++other, ADD_FAILURE() << r.error().code;
    });
  for (auto& t : threads) t.join();
  // An investigation may be followed by one acceptance: at most two wins, exactly one journal at most.
  EXPECT_GE(won.load(), 1);
  EXPECT_LE(won.load(), 2);
  EXPECT_EQ(won.load() + lost.load(), 16);
  EXPECT_EQ(other.load(), 0);
  EXPECT_LE(count("SELECT COUNT(*) FROM ledger_journals WHERE kind = 'RECON_ADJUSTMENT'"), 1);
  const std::int64_t accepted = count("SELECT COUNT(*) FROM recon_items WHERE id = ? AND state = 'adjusted'", {id});
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals WHERE kind = 'RECON_ADJUSTMENT'"), accepted);
  expect_ledger_clean();
}

TEST_P(ReconTest, ConcurrentAcceptancesPostOneJournal) {
  auto s = import_ok(statement_with_every_difference());
  const std::int64_t id = item_of(s.run_id, "OPC").id;
  std::atomic<int> won{0}, lost{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&] {
      auto r = recon_->decide(id, Decision::accept, "ops@example.com", "race");
      (r.ok() ? won : lost)++;
      if (!r.ok()) {
        EXPECT_EQ(r.error().kind, ErrorKind::conflict);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(lost.load(), 15);
  EXPECT_EQ(count("SELECT COUNT(*) FROM ledger_journals WHERE kind = 'RECON_ADJUSTMENT'"), 1);
  expect_ledger_clean();
}

// The day's closing: the operator's closing balance against Sika's clearing, the difference
// explained by the open items and the operator's fees.
TEST_P(ReconTest, TheDailyClosingIsExplainedByTheOpenItems) {
  const std::string text = statement_with_every_difference();
  // What the operator holds by its own lines (succeeded collections minus payouts) minus its fees:
  // XAF: 10200 + 5100 + 8100 + 4080 + 9180 + 1000 - 700 - (50 + 25) = 36885.
  auto s = import_ok(text + "#closing_balance,36885,XAF\n");
  ASSERT_TRUE(s.closing.has_value());
  const auto& k = *s.closing;
  EXPECT_EQ(k.currency, "XAF");
  EXPECT_EQ(k.operator_balance, 36'885);
  // Sika's clearing: every seeded COMPLETED collection (a, b, c, d, f, g).
  EXPECT_EQ(k.sika_clearing, -(10'200 + 5'100 + 8'160 + 3'060 + 6'120 + 7'140));
  EXPECT_EQ(k.operator_fees, 75);
  EXPECT_EQ(k.unexplained, 0) << "open items " << k.open_items;
  // Accepting an item moves the difference from the open items into the clearing: still explained.
  ASSERT_TRUE(recon_->decide(item_of(s.run_id, "OPX").id, Decision::accept, "ops@example.com", "receipt").ok());
  auto again = recon_->close_day("sandbox", k.day, "XAF", 36'885, "ops@example.com");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->unexplained, 0);
  EXPECT_EQ(again->sika_clearing, k.sika_clearing - 1'000);
  auto list = recon_->closings("sandbox", 10);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);  // the day's second closing replaced the first
  EXPECT_EQ(recon_->close_day("sandbox", "2026-13-01", "XAF", 0, "x").error().kind, ErrorKind::invalid);
}

// A payment that waited in `timing` appears in the next day's statement: its item resolves; one
// that never appears becomes missing_at_operator once the grace period has passed.
// A refused decision names a typed reason: error.details keeps its English text and the recon
// page says it in French.
TEST_P(ReconTest, RefusedDecisionsAreTypedReasonsWithFrenchTexts) {
  auto s = import_ok(statement_with_every_difference());
  auto fr = [](const Error& e, std::string_view field) {
    const Problem* p = e.problem(field);
    return p ? reason::text(*p, i18n::Locale::fr) : std::string("(no problem)");
  };
  auto matched = recon_->decide(item_of(s.run_id, "OPA").id, Decision::investigate, "ops@example.com", "why");
  ASSERT_FALSE(matched.ok());
  EXPECT_EQ(bj::serialize(matched.error().details), R"({"item":"is already decided"})");
  EXPECT_EQ(fr(matched.error(), "item"), "est déjà tranché");
  auto early = recon_->decide(item_of(s.run_id, "OPG").id, Decision::accept, "ops@example.com", "not in the file");
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(bj::serialize(early.error().details), "{\"item\":\"may still be in a later statement (grace period)\"}");
  EXPECT_EQ(fr(early.error(), "item"), "peut encore figurer dans un relevé ultérieur (délai de grâce)");
  auto blank = recon_->decide(item_of(s.run_id, "OPY").id, Decision::accept, "ops@example.com", "  ");
  ASSERT_FALSE(blank.ok());
  EXPECT_EQ(bj::serialize(blank.error().details), R"({"reason":"is required"})");
  EXPECT_EQ(fr(blank.error(), "reason"), "est obligatoire");
  auto wordy = recon_->decide(item_of(s.run_id, "OPY").id, Decision::accept, "ops@example.com", std::string(501, 'x'));
  ASSERT_FALSE(wordy.ok());
  EXPECT_EQ(bj::serialize(wordy.error().details), R"({"reason":"is over 500 characters"})");
  EXPECT_EQ(fr(wordy.error(), "reason"), "dépasse 500 caractères");
  auto none = recon_->decide(999'999, Decision::accept, "ops@example.com", "x");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(bj::serialize(none.error().details), R"({"item":"no such item"})");
  EXPECT_EQ(fr(none.error(), "item"), "élément introuvable");
}

TEST_P(ReconTest, TimingItemsResolveInALaterStatementOrBecomeMissing) {
  auto s = import_ok(statement_with_every_difference());
  auto g = item_of(s.run_id, "OPG");
  ASSERT_EQ(g.kind, "timing");
  // Within the grace period the operator's "nothing" is not accepted: it may come tomorrow.
  auto early = recon_->decide(g.id, Decision::accept, "ops@example.com", "not in the file");
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().kind, ErrorKind::conflict);
  seed("j", "COMPLETED", 1'000, 20, "OPJ", 2 * 3'600'000LL);
  const std::string day = iso8601(now_ms());
  auto next = import_ok(
      "operator_reference,our_reference,type,amount,currency,status,timestamp,fee\n"
      "OPZ,,collection,1,XAF,failed," +
      day + ",0\n" + "OPG,,collection,7140,XAF,succeeded," + day + ",0\n");
  EXPECT_EQ(item_of(s.run_id, "OPG").state, "resolved");
  EXPECT_EQ(item_of(next.run_id, "OPG").kind, "matched");
  offset_ = 49LL * 3'600'000;  // two days later
  auto r = recon_->report(s.run_id);
  ASSERT_TRUE(r.ok());
  (void)r;
  EXPECT_EQ(count("SELECT COUNT(*) FROM recon_items WHERE kind = 'timing' AND state = 'open'"), 0);
}

}  // namespace
}  // namespace sika::payments::testing
