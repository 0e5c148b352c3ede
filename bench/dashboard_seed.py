#!/usr/bin/env python3
"""Seeds N transactions of one merchant into a stopped server's SQLite database (the dashboard
benchmark, bench/dashboard_bench.sh): collections and disbursements over the last 90 days, mixed
statuses, channels and services, random customer numbers; one write transaction.

   bench/dashboard_seed.py DB_FILE MATRICULE [N]
"""
import random
import sqlite3
import sys
import time
import uuid

db, matricule = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
con = sqlite3.connect(db)
merchant_id, environment = con.execute("SELECT id, environment FROM merchants WHERE matricule = ?", (matricule,)).fetchone()
now = int(time.time() * 1000)
rng = random.Random(42)
statuses = ["COMPLETED"] * 7 + ["FAILED", "EXPIRED", "PENDING"]
services = [("MTN_MOMO_CMR", "PROVIDER", "sandbox"), ("ORANGE_MONEY_CMR", "PROVIDER", "sandbox"), ("SIKA_WALLET_CMR", "WALLET", "wallet")]


def rows():
    for i in range(n):
        created = now - rng.randrange(90 * 86400 * 1000)
        status = rng.choice(statuses)
        service, channel, connector = rng.choice(services)
        amount = rng.randrange(100, 500_000)
        fee = amount // 50
        ref = "TX-BENCH%011d" % i
        yield (ref, merchant_id, environment, "COLLECTION" if rng.random() < 0.9 else "DISBURSEMENT", str(uuid.UUID(int=rng.getrandbits(128))),
               "h", "INV-%d" % i, "PR-BENCH%011d" % i, status, channel, service, "CMR", connector,
               "2376%08d" % rng.randrange(10**8), amount, "XAF", fee, amount + fee, "PUSH", "", "DIRECT", "", "", "bench", "{}", 0,
               None if status != "FAILED" else "declined", now + 900000, created, created)


start = time.time()
con.execute("BEGIN")
con.executemany(
    "INSERT INTO pay_transactions (reference, merchant_id, environment, operation, transaction_uuid, request_hash, "
    "invoice_reference, provider_reference, status, channel, service_code, country, connector, customer_wallet, amount, "
    "currency, fee, required_total, confirmation_method, confirmation_url, settlement_mode, split_reference, split_status, "
    "description, metadata, needs_otp, failure_reason, expires_at, created_at, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows())
con.commit()
con.execute("ANALYZE")
con.close()
print(f"seeded {n} transactions of {matricule} in {time.time() - start:.1f} s")
