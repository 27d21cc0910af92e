#!/usr/bin/env python3
"""The analysts' path, tested (docs/analytics.md): a real log into DuckDB, three queries
checked against the API on the same log.

Starts `kobo serve` on a free loopback port with a fresh data dir, makes traffic of every kind
that moves money (incoming credits, wallet transfers, payouts that succeed and one that fails and
is reversed, a transit wallet's sweep) from a seed, reads the log with `kobo events` (NDJSON)
while the server runs, loads it into DuckDB with tests/analytics/load.sql and runs the queries of
tests/analytics/queries.sql. Each answer is checked against the API: daily debit and credit
volume per wallet against each day's statement totals, fees earned per day against the fee lines
of the statements less the fees that reversals gave back, and every wallet's balance at a time
against GET /v1/virtual-accounts/{id}/balance. Exits 1 on any difference.

With --kafka-brokers the server runs on Kafka (a topic of its own), and the events are read
from the topic by an analyst's own consumer (confluent-kafka, read_committed, each partition from
its start to its end), not by kobo: its lines must be exactly what `kobo events` prints, and the
queries run on what it read.

    run_analytics.py KOBO_BINARY PYTHON_WITH_DUCKDB [--seed S] [--keep] [--kafka-brokers HOST:PORT]

Runs itself again under PYTHON_WITH_DUCKDB (the virtualenv of tools/venv.sh) when the python
running it has no duckdb.
"""

import argparse
import datetime
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, url, key):
        self.url, self.key = url, key

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"x-service-key": self.key, "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def data(self, method, path, body=None, want=(200, 201)):
        status, answer = self.call(method, path, body)
        if status not in want:
            raise RuntimeError(f"{method} {path} {body}: {status} {answer}")
        return answer["data"]


ADMIN_KEY = "kobo-test-admin-key-0123456789abcdef"


def new_business(url, name):
    """A business made with the admin API: its credentials, shown this once (kobo keeps no key)."""
    req = urllib.request.Request(url + "/v1/admin/businesses", method="POST",
                                 data=json.dumps({"name": name}).encode(),
                                 headers={"content-type": "application/json", "x-admin-key": ADMIN_KEY})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["data"]["credentials"]


def wait_ready(url, server, deadline_s=60):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def traffic(api, rng):
    """Wallets, credits, transfers and payouts; returns the wallets' publicIds."""
    wallets = []
    for i in range(4):
        w = api.data("POST", "/v1/virtual-accounts", {
            "accountName": f"Analyst {i} {rng.randrange(10**9)}", "category": "secondary", "currency": "NGN",
            "emailAddress": "analyst@example.com", "mobile": {"phoneNumber": "08030000000", "isoCode": "NG"}})
        wallets.append(w)
        api.data("POST", "/v1/sandbox/incoming-transfers",
                 {"accountNumber": w["accountNumber"], "amount": rng.randrange(20_000_000, 50_000_000)})
    transit = api.data("POST", "/v1/transit-accounts", {
        "accountName": f"Till {rng.randrange(10**9)}", "currency": "NGN", "settlementAccount": wallets[0]["publicId"]})
    api.data("POST", "/v1/sandbox/incoming-transfers", {"accountNumber": transit["accountNumber"], "amount": 123_456})
    for i in range(40):
        a, b = rng.sample(wallets, 2)
        api.call("POST", "/v1/transactions/transfer", {
            "source": a["publicId"], "sourceType": "VirtualAccount", "destination": b["publicId"],
            "destinationType": "VirtualAccount", "amount": rng.randrange(10_000, 300_000), "currency": "NGN",
            "narration": "analytics", "reference": f"an-{rng.randrange(10**12)}"})
    payouts = []
    for outcome in ["success", "failed", "success"]:
        ref = f"an-pay-{rng.randrange(10**12)}"
        api.data("POST", "/v1/transactions/bank-transfer", {
            "source": rng.choice(wallets)["publicId"], "accountNumber": "0123456784", "bankCode": "044",
            "amount": rng.choice([300_000, 2_000_000, 6_000_000]), "currency": "NGN", "narration": "payout",
            "reference": ref, "metadata": {"sandboxOutcome": outcome} if outcome == "failed" else {}})
        payouts.append(ref)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if all(api.data("GET", f"/v1/transactions/{r}")["status"] in ("success", "failed") for r in payouts):
            break
        time.sleep(0.1)
    else:
        raise RuntimeError("the payouts did not settle")
    return [w["publicId"] for w in wallets] + [transit["publicId"]]


def run_sql(con, text, **params):
    for statement in [s for s in text.split(";") if s.strip() and not all(
            line.strip().startswith("--") or not line.strip() for line in s.splitlines())]:
        used = {k: v for k, v in params.items() if "$" + k in statement}
        con.execute(statement, used)


def queries():
    named, name = {}, None
    for line in (HERE / "queries.sql").read_text().splitlines():
        if line.startswith("-- name:"):
            name = line.split(":", 1)[1].strip()
            named[name] = ""
        elif name:
            named[name] += line + "\n"
    return named


def iso(day_or_time):
    if isinstance(day_or_time, datetime.datetime):
        return day_or_time.strftime("%Y-%m-%dT%H:%M:%S.") + f"{day_or_time.microsecond // 1000:03d}Z"
    return day_or_time.isoformat()


def whole_statement(api, wallet, window):
    lines, page = [], 1
    while True:
        d = api.data("GET", f"/v1/virtual-accounts/{wallet}/statement?{window}&perPage=100&page={page}")
        lines += d["lines"]
        if len(d["lines"]) < 100:
            d["lines"] = lines
            return d
        page += 1


def check(api, con, wallets):
    import duckdb  # noqa: F401  (the caller made sure)
    q = queries()
    failures = []

    # 1. Daily debit and credit volume per wallet = each day's statement totals.
    rows = con.execute(q["daily_volume"]).fetchall()
    if not rows:
        failures.append("daily_volume: no rows")
    for wallet, day, debits, credits in rows:
        nxt = day + datetime.timedelta(days=1)
        s = api.data("GET", f"/v1/virtual-accounts/{wallet}/statement?from={iso(day)}&to={iso(nxt)}&perPage=1")
        if (s["totalDebits"], s["totalCredits"]) != (debits, credits):
            failures.append(f"daily_volume {wallet} {day}: duckdb {debits}/{credits}, "
                            f"statement {s['totalDebits']}/{s['totalCredits']}")
    print(f"daily_volume: {len(rows)} wallet-days checked against their statements")

    # 2. Fees earned per day = the fees on the statements' payout lines less the fees reversals gave
    # back (a reversal's line credits amount + fee; its payout's record names the fee).
    rows = con.execute(q["fees_per_day"]).fetchall()
    expected = {}
    for wallet in wallets:
        for line in whole_statement(api, wallet, "from=2000-01-01")["lines"]:
            day = line["createdAt"][:10]
            expected[day] = expected.get(day, 0) + line["fee"]
            if line["narration"].startswith("Reversal: "):
                reversal = api.data("GET", f"/v1/transactions/{line['transaction']}")
                payout = api.data("GET", f"/v1/transactions/{reversal['debitReference']}")
                expected[day] -= payout["fee"]
    got = {iso(day): fees for live, day, fees in rows if not live}
    if got != {d: f for d, f in expected.items() if f or d in got}:
        failures.append(f"fees_per_day: duckdb {got}, statements {expected}")
    if not any(got.values()):
        failures.append("fees_per_day: no fee earned: the traffic made no payout")
    print(f"fees_per_day: {got}")

    # 3. Every wallet's balance at a time = GET .../balance?at=: at the time of the middle money
    # event, of the first, and after the last.
    times = [t for (t,) in con.execute(
        "SELECT DISTINCT time FROM postings WHERE account LIKE 'vba-%' ORDER BY time").fetchall()]
    checked = 0
    for at in [times[0], times[len(times) // 2], times[-1] + datetime.timedelta(milliseconds=1)]:
        got = dict(con.execute(q["balances_at"], {"at": at}).fetchall())
        for wallet in wallets:
            api_balance = api.data("GET", f"/v1/virtual-accounts/{wallet}/balance?at={iso(at)}")["balance"]
            if got.get(wallet, 0) != api_balance:
                failures.append(f"balances_at {iso(at)} {wallet}: duckdb {got.get(wallet, 0)}, api {api_balance}")
            checked += 1
    print(f"balances_at: {checked} balances checked against the balance endpoint")
    return failures


def consume_topic(brokers, topic):
    """Every committed record of `topic`, each partition read from its start to its end."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": brokers, "group.id": f"analytics-{os.getpid()}",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        lines = []
        deadline = time.time() + 60
        while time.time() < deadline and any(consumer.position([TopicPartition(topic, p)])[0].offset < end
                                             for p, end in ends.items() if end > 0):
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                raise RuntimeError(f"consuming {topic}: {message.error()}")
            lines.append(message.value().decode())
        return lines
    finally:
        consumer.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kobo")
    parser.add_argument("python")
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--kafka-brokers")
    args = parser.parse_args()
    try:
        import duckdb  # noqa: F401
    except ImportError:
        os.execv(args.python, [args.python, __file__, *sys.argv[1:]])
    import duckdb

    kobo = os.path.abspath(args.kobo)
    work = Path(tempfile.mkdtemp(prefix="kobo-analytics-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(work / "serve.log", "w")
    kafka = []
    if args.kafka_brokers:
        kafka = ["--kafka-brokers", args.kafka_brokers, "--kafka-topic", f"kobo.analytics.{os.getpid()}.{port}"]
    server = subprocess.Popen([kobo, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(work / "data"),
                              "--rail-delay-ms", "20", *kafka], stdout=log, stderr=subprocess.STDOUT,
                              env=dict(os.environ, KOBO_ADMIN_KEY=ADMIN_KEY))
    ok = False
    try:
        if not wait_ready(url, server):
            print((work / "serve.log").read_text()[-4000:], file=sys.stderr)
            print("run_analytics: the server did not become ready", file=sys.stderr)
            return 1
        key = new_business(url, "Analytics")["testSecretKey"]
        api = Api(url, key)
        print(f"run_analytics: seed {args.seed}")
        wallets = traffic(api, random.Random(args.seed))
        events = work / "events.ndjson"
        with open(events, "w") as out:
            subprocess.run([kobo, "events", "--data-dir", str(work / "data"), *kafka], stdout=out, check=True)
        if kafka:
            consumed = consume_topic(args.kafka_brokers, kafka[3])
            printed = events.read_text().splitlines()
            if sorted(consumed) != sorted(printed):
                print(f"FAILED the topic's consumer read {len(consumed)} records, kobo events printed "
                      f"{len(printed)}, and they differ", file=sys.stderr)
                return 1
            print(f"run_analytics: a consumer of the topic read the {len(consumed)} records kobo events prints")
            events.write_text("\n".join(consumed) + "\n")
        con = duckdb.connect()
        run_sql(con, (HERE / "load.sql").read_text(), events=str(events))
        n_events, n_postings = con.execute(
            "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM postings)").fetchone()
        print(f"run_analytics: {n_events} events, {n_postings} postings loaded into DuckDB {duckdb.__version__}")
        failures = check(api, con, wallets)
        for f in failures:
            print("FAILED " + f, file=sys.stderr)
        ok = not failures
        print(f"run_analytics: {3 - len({f.split()[0] for f in failures})} passed, "
              f"{len({f.split()[0] for f in failures})} failed")
        return 0 if ok else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"run_analytics: the data dir and the server's log are kept in {work}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
