#!/usr/bin/env python3
"""The answers' bytes of every route, recorded from a fixed scenario and compared.

A refactoring of the HTTP edge (the route wrapper, the JSON writer, list pages written as text)
must leave every answer byte-identical. This drives one `kobo serve` through a fixed scenario that
calls every route of the API (each list with and without its filters and on a later page, bulk
answers, statements as JSON and CSV, the events list, replays, rejections and validation errors)
and writes what came back, one JSON line per exchange: the status line, the header fields in
order and the body.

    answers.py record KOBO OUT.jsonl [--data-dir DIR]   the scenario on a fresh data dir
    answers.py replay KOBO TRANSCRIPT DATA_DIR OUT.jsonl  its GETs again on DIR's log
    answers.py compare A.jsonl B.jsonl [--normalize]      exit 1 on the first difference
    answers.py check KOBO GOLDEN.jsonl [--update]         record, normalize, compare (ctest)

Two ways to compare, both exact:
- Two recordings (one binary against another) are compared after `--normalize`: ids, keys and
  hashes are random by design, so each distinct one is renamed in order of first appearance
  (`<1>`, `<2>`, …, the same value the same name everywhere); times become `<time>`, and what is
  counted per partition (account numbers, records' `id`), `<n>`. Every other byte, and which id
  stands where, must be the same.
- `replay` asks the scenario's GETs again of the data dir a recording left, so a second binary
  answers from the very same log: those answers (every list page among them) must be identical
  to the byte, ids and times included, but for the few that show the present moment (marked
  `now` in the transcript, compared normalized).

`check` is the regression test: the normalized recording of this build against GOLDEN (update it
with --update when an answer is meant to change, and say why in the commit).
"""

import argparse
import base64
import hashlib
import datetime
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ADMIN_KEY = "golden-admin-key-0123456789abcdef-kobo"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `kobo serve` on a free loopback port."""

    def __init__(self, kobo, data_dir, extra=()):
        self.port = free_port()
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(self.data_dir.parent / f"{self.data_dir.name}.serve.log", "a")
        self.process = subprocess.Popen(
            [kobo, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", str(self.data_dir),
             "--admin-key", ADMIN_KEY, "--rail-delay-ms", "150", "--collection-expire-min-s", "1",
             "--webhook-allow-private", *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("kobo serve exited; see " + self.log.name)
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("kobo serve did not become ready")
            time.sleep(0.1)
        # The scenario's first business, made with the admin API on a fresh data dir (kobo keeps no
        # key on disk, docs/security.md); its keys are kept beside the data dir for `replay`.
        kept = self.data_dir.parent / f"{self.data_dir.name}.credentials.json"
        if kept.exists():
            self.credentials = json.loads(kept.read_text())
        else:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            c.request("POST", "/v1/admin/businesses", body=json.dumps({"name": "Default"}),
                      headers={"x-admin-key": ADMIN_KEY, "content-type": "application/json"})
            made = c.getresponse()
            answer = json.loads(made.read())
            if made.status != 201:
                raise RuntimeError(f"the scenario's business was not made: {made.status} {answer}")
            self.credentials = answer["data"]["credentials"]
            kept.write_text(json.dumps(self.credentials))
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def exchange(self, method, target, body=None, headers=None):
        """The answer as (status line, [(name, value)], body bytes)."""
        raw = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        if isinstance(raw, str):
            raw = raw.encode()
        h = dict(headers or {})
        if raw is not None:
            h.setdefault("content-type", "application/json")
        for attempt in range(2):
            try:
                self.connection.request(method, target, body=raw, headers=h)
                r = self.connection.getresponse()
                data = r.read()
                break
            except (http.client.HTTPException, OSError):
                if attempt == 1:
                    raise
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        version = "HTTP/1.1" if r.version == 11 else "HTTP/1.0"
        return f"{version} {r.status} {r.reason}", r.getheaders(), data

    def stop(self):
        self.connection.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def body_text(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode()


class Recorder:
    def __init__(self, server):
        self.server = server
        self.entries = []

    def call(self, name, method, target, body=None, key=None, headers=None, replay=None, now=False,
             record=True):
        h = dict(headers or {})
        if key is not None:
            h["x-service-key"] = key
        status, fields, data = self.server.exchange(method, target, body, h)
        entry = {
            "name": name, "method": method, "target": target,
            "request_headers": h,
            "replay": method == "GET" if replay is None else replay,
            "now": now,
            "status": status,
            "headers": [[k, v] for k, v in fields],
            "body": body_text(data),
        }
        if record:
            self.entries.append(entry)
        parsed = None
        if data[:1] in (b"{", b"["):
            parsed = json.loads(data)
        return status, parsed

    def data(self, *args, expect=None, **kwargs):
        status, parsed = self.call(*args, **kwargs)
        code = int(status.split()[1])
        if expect is not None and code != expect:
            raise RuntimeError(f"{args[0]}: {status} {parsed}")
        return parsed["data"] if parsed and "data" in parsed else parsed

    def wait(self, what, predicate, key, target, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            _, parsed = self.call(what, "GET", target, key=key, record=False)
            if predicate(parsed):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: timed out, last {parsed}")
            time.sleep(0.05)


def transfer(source, destination, amount, reference, narration="golden transfer"):
    return {"source": source, "sourceType": "VirtualAccount", "destination": destination,
            "destinationType": "VirtualAccount", "amount": amount, "currency": "NGN",
            "narration": narration, "reference": reference}


def payout(source, amount, reference, account="0123456784", bank="044", metadata=None):
    b = {"source": source, "accountNumber": account, "bankCode": bank, "amount": amount, "currency": "NGN",
         "narration": "golden payout", "reference": reference}
    if metadata is not None:
        b["metadata"] = metadata
    return b


def settle(r, key):
    """Waits until every payout is final: the rail's steps are events too, and the webhook events'
    numbers follow the order of the events, so nothing may run beside a payout's steps."""
    for status in ("pending", "processing"):
        r.wait("settled", lambda x: x["meta"]["pagination"]["totalCount"] == 0, key,
               f"/v1/transactions?status={status}")


def scenario(r):
    """Every route, in a fixed order. References are fixed; ids and keys are the server's."""
    k = r.server.credentials["testSecretKey"]
    live = r.server.credentials["liveSecretKey"]
    today = datetime.datetime.now(datetime.timezone.utc).date()
    day = today.isoformat()
    tomorrow = (today + datetime.timedelta(days=1)).isoformat()

    # Operational routes and the HTTP layer's own answers.
    r.call("healthz", "GET", "/healthz")
    r.call("readyz", "GET", "/readyz")
    r.call("metrics status", "GET", "/metrics", replay=False)
    r.entries[-1]["body"] = "<metrics>"
    r.call("unknown route", "GET", "/v1/nothing-here", key=k)
    r.call("method not allowed", "DELETE", "/v1/virtual-accounts", key=k)
    r.call("no key", "GET", "/v1/virtual-accounts")
    r.call("wrong key", "GET", "/v1/virtual-accounts", key="sk_test_" + "0" * 40)
    r.call("live key, live mode off", "GET", "/v1/virtual-accounts", key=live)
    r.call("banks", "GET", "/v1/transactions/banks", key=k)

    # Admin.
    r.call("admin without key", "POST", "/v1/admin/businesses", {"name": "Golden Two"}, replay=False)
    r.call("admin invalid", "POST", "/v1/admin/businesses", {}, headers={"x-admin-key": ADMIN_KEY}, replay=False)
    other = r.data("admin create", "POST", "/v1/admin/businesses", {"name": "Golden Two Ltd"},
                   headers={"x-admin-key": ADMIN_KEY}, replay=False, expect=201)
    k2 = other["credentials"]["testSecretKey"]

    # Wallets.
    r.call("wallet bad json", "POST", "/v1/virtual-accounts", "{not json", key=k, replay=False)
    r.call("wallet invalid", "POST", "/v1/virtual-accounts", {"category": "tertiary", "mobile": {"isoCode": 5}},
           key=k, replay=False)
    a = r.data("wallet primary", "POST", "/v1/virtual-accounts",
               {"accountName": "Ada Primary", "category": "primary", "currency": "NGN"}, key=k, replay=False,
               expect=201)
    b = r.data("wallet secondary", "POST", "/v1/virtual-accounts",
               {"accountName": "Bola \"Quoted\" Ünïcode ✓", "category": "secondary", "currency": "NGN",
                "emailAddress": "bola@example.com", "mobile": {"isoCode": "NG", "phoneNumber": "+2348012345678"},
                "kycTier": 3}, key=k, replay=False, expect=201)
    c = r.data("wallet tier 1", "POST", "/v1/virtual-accounts",
               {"accountName": "Chi, Tier One", "category": "secondary", "currency": "NGN",
                "emailAddress": "chi@example.com", "mobile": {"isoCode": "NG", "phoneNumber": "+2348000000001"},
                "kycTier": 1}, key=k, replay=False, expect=201)
    r.call("wallet name taken", "POST", "/v1/virtual-accounts",
           {"accountName": "Ada Primary", "category": "primary", "currency": "NGN"}, key=k, replay=False)
    other_wallet = r.data("wallet other business", "POST", "/v1/virtual-accounts",
                          {"accountName": "Other Primary", "category": "primary", "currency": "NGN"}, key=k2,
                          replay=False, expect=201)
    r.call("wallet tier patch", "PATCH", f"/v1/virtual-accounts/{c['publicId']}", {"kycTier": 2}, key=k,
           replay=False, now=True)
    r.call("wallet tier invalid", "PATCH", f"/v1/virtual-accounts/{c['publicId']}", {}, key=k, replay=False)
    r.call("wallet tier unknown", "PATCH", "/v1/virtual-accounts/vba-nope", {"kycTier": 1}, key=k, replay=False)

    # Money in.
    r.call("incoming invalid", "POST", "/v1/sandbox/incoming-transfers", {"amount": "x"}, key=k, replay=False)
    r.call("incoming unknown bank", "POST", "/v1/sandbox/incoming-transfers",
           {"accountNumber": a["accountNumber"], "amount": 100, "senderBankCode": "000"}, key=k, replay=False)
    r.call("incoming live", "POST", "/v1/sandbox/incoming-transfers",
           {"accountNumber": a["accountNumber"], "amount": 100}, key=live, replay=False)
    r.data("incoming a", "POST", "/v1/sandbox/incoming-transfers",
           {"accountNumber": a["accountNumber"], "amount": 50_000_000, "narration": "Seed, \"quoted\"",
            "senderName": "=Formula Sender"}, key=k, replay=False, expect=201)
    r.data("incoming b", "POST", "/v1/sandbox/incoming-transfers",
           {"accountNumber": b["accountNumber"], "amount": 2_000_000}, key=k, replay=False, expect=201)

    # Wallet transfers.
    t1 = r.data("transfer", "POST", "/v1/transactions/transfer",
                transfer(a["publicId"], b["publicId"], 150_000, "gold-t1"), key=k, replay=False, expect=200)
    r.call("transfer replay", "POST", "/v1/transactions/transfer",
           transfer(a["publicId"], b["publicId"], 150_000, "gold-t1"), key=k, replay=False)
    r.call("transfer duplicate reference", "POST", "/v1/transactions/transfer",
           transfer(a["publicId"], b["publicId"], 160_000, "gold-t1"), key=k, replay=False)
    r.call("transfer insufficient", "POST", "/v1/transactions/transfer",
           transfer(c["publicId"], a["publicId"], 150_000, "gold-t2"), key=k, replay=False)
    r.call("transfer same wallet", "POST", "/v1/transactions/transfer",
           transfer(a["publicId"], a["publicId"], 150_000, "gold-t3"), key=k, replay=False)
    r.call("transfer invalid", "POST", "/v1/transactions/transfer", {"amount": 5}, key=k, replay=False)
    r.data("transfer b to c", "POST", "/v1/transactions/transfer",
           transfer(b["publicId"], c["publicId"], 40_000, "gold-t4", "to chi"), key=k, replay=False, expect=200)
    for i in range(3):
        r.data(f"transfer a to c {i}", "POST", "/v1/transactions/transfer",
               transfer(a["publicId"], c["publicId"], 20_000 + i * 1000, f"gold-t5-{i}"), key=k, replay=False,
               expect=200)

    # Payouts: one that succeeds, one the sandbox fails (its reversal), rejections.
    p1 = r.data("payout", "POST", "/v1/transactions/bank-transfer",
                payout(a["publicId"], 300_000, "gold-p1", metadata={"order": 7, "note": "tab\there", "f": 1.5}),
                key=k, replay=False, expect=200)
    r.wait("payout settles", lambda x: x["data"]["status"] == "success", k, f"/v1/transactions/{p1['publicId']}")
    p2 = r.data("payout failing", "POST", "/v1/transactions/bank-transfer",
                payout(a["publicId"], 200_000, "gold-p2", metadata={"sandboxOutcome": "failed"}), key=k,
                replay=False, expect=200)
    r.wait("payout fails", lambda x: x["data"]["status"] == "failed", k, f"/v1/transactions/{p2['publicId']}")
    r.call("payout replay", "POST", "/v1/transactions/bank-transfer",
           payout(a["publicId"], 300_000, "gold-p1", metadata={"order": 7, "note": "tab\there", "f": 1.5}),
           key=k, replay=False)
    r.call("payout unknown bank", "POST", "/v1/transactions/bank-transfer",
           payout(a["publicId"], 300_000, "gold-p3", bank="000"), key=k, replay=False)
    r.call("payout bad number", "POST", "/v1/transactions/bank-transfer",
           payout(a["publicId"], 300_000, "gold-p4", account="0123456789"), key=k, replay=False)
    r.call("payout to own bank unknown", "POST", "/v1/transactions/bank-transfer",
           payout(a["publicId"], 300_000, "gold-p5", account="0000000000", bank="099999"), key=k,
           replay=False)
    r.call("payout invalid", "POST", "/v1/transactions/bank-transfer", {"metadata": []}, key=k, replay=False)
    r.data("payout to own wallet", "POST", "/v1/transactions/bank-transfer",
           payout(a["publicId"], 100_000, "gold-p6", account=b["accountNumber"], bank="099999"), key=k,
           replay=False, expect=200)
    settle(r, k)

    # Name enquiry and beneficiaries.
    r.call("validate account", "POST", "/v1/transactions/validate-account",
           {"accountNumber": "0123456784", "bankCode": "044"}, key=k, replay=False, now=True)
    r.call("validate own account", "POST", "/v1/transactions/validate-account",
           {"accountNumber": b["accountNumber"], "bankCode": "099999"}, key=k, replay=False, now=True)
    r.call("validate invalid", "POST", "/v1/transactions/validate-account", {}, key=k, replay=False)
    ben = r.data("beneficiary", "POST", "/v1/bank-accounts",
                 {"accountName": "Ext Person", "accountNumber": "0123456784", "bankName": "Access Bank",
                  "bankCode": "044", "beneficiaryType": "external"}, key=k, replay=False, expect=201)
    r.call("beneficiary replay", "POST", "/v1/bank-accounts",
           {"accountName": "Ext Person", "accountNumber": "0123456784", "bankName": "Access Bank",
            "bankCode": "044", "beneficiaryType": "external"}, key=k, replay=False)
    r.data("beneficiary own", "POST", "/v1/bank-accounts",
           {"accountName": "Bola", "accountNumber": b["accountNumber"], "bankName": "Kobo",
            "bankCode": "099999", "beneficiaryType": "vba"}, key=k, replay=False, expect=201)
    r.call("beneficiary invalid", "POST", "/v1/bank-accounts", {"beneficiaryType": "x"}, key=k, replay=False)

    # Collection and transit wallets.
    col = r.data("collection", "POST", "/v1/collection-accounts",
                 {"destination": b["publicId"], "accountName": "Collect", "amount": 250_000, "expireIn": 1800,
                  "reference": "gold-col-1"}, key=k, replay=False, expect=201)
    r.call("collection invalid", "POST", "/v1/collection-accounts", {"expireIn": 0}, key=k, replay=False)
    r.call("collection unknown destination", "POST", "/v1/collection-accounts",
           {"destination": "vba-nope", "accountName": "Collect", "amount": 250_000, "expireIn": 1800}, key=k,
           replay=False)
    r.data("transit", "POST", "/v1/transit-accounts",
           {"accountName": "Transit One", "currency": "NGN", "settlementAccount": a["publicId"],
            "mobile": {"isoCode": "NG", "phoneNumber": "+2348000000002"}}, key=k, replay=False, expect=201)
    r.call("transit invalid", "POST", "/v1/transit-accounts", {"currency": "USD"}, key=k, replay=False)
    r.data("pay collection", "POST", "/v1/sandbox/incoming-transfers",
           {"accountNumber": col["accountNumber"], "amount": 250_000}, key=k, replay=False, expect=201)

    # Holds.
    h1 = r.data("hold", "POST", "/v1/holds",
                {"source": a["publicId"], "amount": 500_000, "reference": "gold-h1", "narration": "held",
                 "metadata": {"cart": [1, 2, {"x": None}], "ü": "✓"}, "expiresIn": 3600}, key=k, replay=False,
                expect=201)
    r.call("hold replay", "POST", "/v1/holds",
           {"source": a["publicId"], "amount": 500_000, "reference": "gold-h1", "narration": "held",
            "metadata": {"cart": [1, 2, {"x": None}], "ü": "✓"}, "expiresIn": 3600}, key=k, replay=False)
    r.call("hold metadata too large", "POST", "/v1/holds",
           {"source": a["publicId"], "amount": 5, "reference": "gold-h9", "metadata": {"x": "y" * 9000}}, key=k,
           replay=False)
    r.call("hold invalid", "POST", "/v1/holds", {"amount": 0}, key=k, replay=False)
    r.call("hold capture", "POST", f"/v1/holds/{h1['publicId']}/capture",
           {"destination": b["publicId"], "reference": "gold-hc1", "amount": 100_000, "narration": "part"}, key=k,
           replay=False)
    r.call("hold capture final", "POST", f"/v1/holds/{h1['publicId']}/capture",
           {"destination": c["publicId"], "reference": "gold-hc2", "amount": 50_000, "final": True}, key=k,
           replay=False)
    r.call("hold capture not pending", "POST", f"/v1/holds/{h1['publicId']}/capture",
           {"destination": c["publicId"], "reference": "gold-hc3"}, key=k, replay=False)
    h2 = r.data("hold 2", "POST", "/v1/holds", {"source": b["publicId"], "amount": 70_000, "reference": "gold-h2"},
                key=k, replay=False, expect=201)
    r.call("hold void", "POST", f"/v1/holds/{h2['publicId']}/void", key=k, replay=False)
    r.call("hold void again", "POST", f"/v1/holds/{h2['publicId']}/void", key=k, replay=False)
    r.call("hold void unknown", "POST", "/v1/holds/hld-nope/void", key=k, replay=False)
    r.data("hold 3", "POST", "/v1/holds", {"source": a["publicId"], "amount": 10_000, "reference": "gold-h3"},
           key=k, replay=False, expect=201)

    # Bulk transfers.
    items = [
        {"type": "wallet", **transfer(a["publicId"], b["publicId"], 11_000, "gold-b1-0")},
        {"type": "bank", **payout(a["publicId"], 12_000, "gold-b1-1")},
        {"type": "wallet", **transfer(a["publicId"], c["publicId"], 13_000, "gold-b1-2")},
    ]
    r.call("bulk atomic", "POST", "/v1/transactions/bulk-transfer",
           {"reference": "gold-bulk-1", "atomic": True, "items": items}, key=k, replay=False)
    settle(r, k)
    r.call("bulk replay", "POST", "/v1/transactions/bulk-transfer",
           {"reference": "gold-bulk-1", "atomic": True, "items": items}, key=k, replay=False)
    mixed = [
        {"type": "wallet", **transfer(a["publicId"], b["publicId"], 14_000, "gold-b2-0")},
        {"type": "wallet", **transfer(c["publicId"], b["publicId"], 900_000_000, "gold-b2-1")},
        {"type": "bank", **payout(a["publicId"], 15_000, "gold-b2-2", account="0000000000", bank="099999")},
        {"type": "wallet", **transfer(a["publicId"], b["publicId"], 16_000, "gold-b2-3")},
    ]
    r.call("bulk non-atomic", "POST", "/v1/transactions/bulk-transfer",
           {"reference": "gold-bulk-2", "items": mixed}, key=k, replay=False)
    r.call("bulk atomic refused", "POST", "/v1/transactions/bulk-transfer",
           {"reference": "gold-bulk-3", "atomic": True, "items": mixed[:2]}, key=k, replay=False)
    r.call("bulk invalid", "POST", "/v1/transactions/bulk-transfer",
           {"reference": "gold-bulk-4", "items": [{"type": "bank", "bankCode": "000", "accountNumber": "12"},
                                                  {"type": "other"}, 5]}, key=k, replay=False)
    r.call("bulk empty", "POST", "/v1/transactions/bulk-transfer", {"reference": "gold-bulk-5", "items": []},
           key=k, replay=False)
    big = [{"type": "wallet", **transfer(a["publicId"], b["publicId"], 10_000, f"gold-b6-{i}")} for i in range(240)]
    r.call("bulk large (halves)", "POST", "/v1/transactions/bulk-transfer",
           {"reference": "gold-bulk-6", "items": big}, key=k, replay=False)

    settle(r, k)

    # Reads: single records.
    for name, w in (("a", a), ("b", b), ("c", c), ("collection", col)):
        r.call(f"get wallet {name}", "GET", f"/v1/virtual-accounts/{w['publicId']}", key=k, now=True)
    r.call("get wallet unknown", "GET", "/v1/virtual-accounts/vba-nope", key=k)
    r.call("get wallet other business", "GET", f"/v1/virtual-accounts/{a['publicId']}", key=k2)
    for name, t in (("transfer", t1), ("payout", p1), ("failed payout", p2)):
        r.call(f"get transaction {name}", "GET", f"/v1/transactions/{t['publicId']}", key=k)
    r.call("get transaction by reference", "GET", "/v1/transactions/gold-t4", key=k)
    r.call("verify", "GET", "/v1/transactions/gold-p1/verify", key=k)
    r.call("verify unknown", "GET", "/v1/transactions/gold-none/verify", key=k)
    r.call("get hold", "GET", f"/v1/holds/{h1['publicId']}", key=k)
    r.call("get hold unknown", "GET", "/v1/holds/hld-nope", key=k)
    r.call("get beneficiary", "GET", f"/v1/bank-accounts/{ben['publicId']}", key=k)
    r.call("get beneficiary unknown", "GET", "/v1/bank-accounts/bnk-nope", key=k)

    # Reads: lists, each without and with its filters, and a later page.
    lists = {
        "/v1/virtual-accounts": ["", "category=secondary", "isFavourite=false", "live=false", "live=true",
                                 "category=secondary&isFavourite=false", "page=2&perPage=2", "perPage=1&page=3",
                                 "category=other", "perPage=0", "page=x"],
        "/v1/transactions": ["", "entry=credit", "entry=debit", "status=success", "status=failed",
                             "amount=150000", "live=false", f"createdAt[startDate]={day}",
                             f"createdAt[endDate]={day}", f"createdAt[startDate]={day}&createdAt[endDate]={tomorrow}",
                             "entry=debit&status=success", f"entry=credit&amount=11000",
                             f"entry=debit&createdAt[startDate]={day}", "page=3&perPage=7", "perPage=100&page=2",
                             "createdAt[startDate]=yesterday", "status=done&entry=both", "page=1000"],
        "/v1/holds": ["", f"source={a['publicId']}", "status=pending", f"source={a['publicId']}&status=pending",
                      "status=voided", "page=2&perPage=1", "status=bogus"],
        "/v1/bank-accounts": ["", "beneficiaryType=external", "accountName=Ext Person",
                              "accountName=Ext Person&beneficiaryType=external", "live=true", "perPage=1&page=2",
                              "beneficiaryType=none"],
        "/v1/accounts": ["", "isDefault=true", "live=false", "name=x", "isDefault=maybe"],
        "/v1/events": ["", "after=2&limit=3", "limit=1", "limit=0", "after=-1"],
        "/v1/webhook-deliveries": ["", "status=pending", "status=succeeded", "status=bad"],
    }
    for path, queries in lists.items():
        for q in queries:
            target = path + ("?" + q.replace(" ", "%20") if q else "")
            r.call(f"list {path} {q}", "GET", target, key=k, now=path == "/v1/virtual-accounts")
    r.call("transactions with raw brackets", "GET", f"/v1/transactions?createdAt[startDate]={day}&perPage=3", key=k)
    r.call("list other business", "GET", "/v1/transactions", key=k2)

    # Statements and balances.
    start = f"{day}T00:00:00.000Z"
    end = f"{tomorrow}T00:00:00Z"
    for name, w in (("a", a), ("b", b)):
        base = f"/v1/virtual-accounts/{w['publicId']}"
        r.call(f"statement {name}", "GET", f"{base}/statement?from={start}&to={end}", key=k)
        r.call(f"statement {name} page 2", "GET", f"{base}/statement?from={day}&to={end}&perPage=3&page=2", key=k)
        r.call(f"statement {name} offset", "GET", f"{base}/statement?from={day}T01:00:00%2B01:00&to={end}", key=k)
        r.call(f"statement {name} csv", "GET", f"{base}/statement?from={start}&to={end}&format=csv", key=k)
        r.call(f"statement {name} accept csv", "GET", f"{base}/statement?from={start}&to={end}", key=k,
               headers={"accept": "text/csv"})
        r.call(f"statement {name} default window", "GET", f"{base}/statement", key=k, now=True)
        r.call(f"balance {name}", "GET", f"{base}/balance?at={end}", key=k)
        r.call(f"balance {name} now", "GET", f"{base}/balance", key=k, now=True)
    r.call("statement invalid", "GET", f"/v1/virtual-accounts/{a['publicId']}/statement?from=x&to=2020-13-01&format=pdf",
           key=k)
    r.call("statement reversed", "GET", f"/v1/virtual-accounts/{a['publicId']}/statement?from={end}&to={start}", key=k)
    r.call("statement fractions", "GET",
           f"/v1/virtual-accounts/{a['publicId']}/statement?from={day}T00:00:00.1234Z&to={day}T23:59:59.9z", key=k)
    r.call("statement unknown", "GET", f"/v1/virtual-accounts/vba-nope/statement?from={start}&to={end}", key=k)
    r.call("balance invalid", "GET", f"/v1/virtual-accounts/{a['publicId']}/balance?at=noon", key=k)
    r.call("balance unknown", "GET", f"/v1/virtual-accounts/vba-nope/balance?at={end}", key=k)

    # Accounts.
    account = r.server.credentials["accountId"]
    r.call("account patch", "PATCH", f"/v1/accounts/{account}",
           {"webhookEvents": ["account.debit", "account.credit", "account.debit"], "live": False}, key=k,
           replay=False, now=True)
    r.call("account patch invalid events", "PATCH", f"/v1/accounts/{account}", {"webhookEvents": ["x.y"]}, key=k,
           replay=False)
    r.call("account patch invalid", "PATCH", f"/v1/accounts/{account}", {"webhooks": "x", "live": 1}, key=k,
           replay=False)
    r.call("account patch bad url", "PATCH", f"/v1/accounts/{account}", {"webhooks": ["ftp://x"]}, key=k,
           replay=False)
    r.call("account patch unknown", "PATCH", "/v1/accounts/acc-nope", {"live": False}, key=k, replay=False)
    r.call("webhook secret", "POST", f"/v1/accounts/{account}/webhook-secret", key=k, replay=False)
    r.call("webhook secret unknown", "POST", "/v1/accounts/acc-nope/webhook-secret", key=k, replay=False)
    r.call("accounts after patch", "GET", "/v1/accounts", key=k)
    r.call("delivery retry unknown", "POST", "/v1/webhook-deliveries/whd-nope/retry", key=k, replay=False)

    # Webhook deliveries (the other business's), to a port nobody listens on: each fails its first
    # attempt and waits for its next one, 10 s later.
    account2 = other["account"]["publicId"]
    r.call("account 2 webhooks", "PATCH", f"/v1/accounts/{account2}", {"webhooks": ["http://127.0.0.1:9/hook"]},
           key=k2, replay=False, now=True)
    for i in range(2):
        r.data(f"incoming other {i}", "POST", "/v1/sandbox/incoming-transfers",
               {"accountNumber": other_wallet["accountNumber"], "amount": 10_000 + i}, key=k2, replay=False,
               expect=201)
    r.wait("deliveries attempted",
           lambda x: x["meta"]["pagination"]["totalCount"] == 2 and all(len(d["attempts"]) == 1 for d in x["data"]),
           k2, "/v1/webhook-deliveries")
    # (Not asked again by `replay`: the webhooks' store is not the log's, and attempts go on.)
    r.call("deliveries", "GET", "/v1/webhook-deliveries", key=k2, replay=False)
    r.call("deliveries pending", "GET", "/v1/webhook-deliveries?status=pending&perPage=1&page=2", key=k2,
           replay=False)
    r.call("events other", "GET", "/v1/events", key=k2)
    _, listed = r.call("deliveries (id)", "GET", "/v1/webhook-deliveries", key=k2, record=False)
    r.call("delivery retry", "POST", f"/v1/webhook-deliveries/{listed['data'][0]['id']}/retry", key=k2,
           replay=False, now=True)


def record(kobo, out, data_dir=None):
    keep = data_dir is not None
    work = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="kobo-golden-")) / "data"
    server = Server(os.path.abspath(kobo), work)
    r = Recorder(server)
    try:
        scenario(r)
    finally:
        server.stop()
        if not keep:
            shutil.rmtree(work.parent, ignore_errors=True)
    write(out, r.entries)
    return r.entries


def replay(kobo, transcript, data_dir, out):
    copy = Path(tempfile.mkdtemp(prefix="kobo-golden-replay-")) / "data"
    shutil.copytree(data_dir, copy)
    # The business's keys beside the data dir: the server makes no business of its own then.
    kept = Path(data_dir).parent / f"{Path(data_dir).name}.credentials.json"
    if kept.exists():
        shutil.copy(kept, copy.parent / f"{copy.name}.credentials.json")
    server = Server(os.path.abspath(kobo), copy)
    entries = []
    try:
        for e in read(transcript):
            if not e["replay"]:
                continue
            status, fields, data = server.exchange(e["method"], e["target"], None, e["request_headers"])
            entries.append({**e, "status": status, "headers": [[k, v] for k, v in fields],
                            "body": "<metrics>" if e["target"] == "/metrics" else body_text(data)})
    finally:
        server.stop()
        shutil.rmtree(copy.parent, ignore_errors=True)
    write(out, entries)
    return entries


def write(path, entries):
    with open(path, "w") as f:
        for e in entries:
            f.write(json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n")


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


DURATION = re.compile(r'"durationMs":\d+')
# A date also where a time of day follows it in a request (`to=2026-11-28T00:00:00Z`): the scenario
# asks for today's statements, so the day it runs on must not be part of what is compared.
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z|\d{8}T\d{9}Z|(?<![0-9])\d{4}-\d\d-\d\d(?![0-9])")
TOKEN = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # uuids (ids, references)
    r"|(?<![0-9a-zA-Z])[0-9a-f]{16,}(?![0-9a-zA-Z])"  # hashes, object ids, derived references
    r"|(?<=_)[0-9a-f]{40}(?![0-9a-f])"  # keys: sk_test_<40 hex>
    r"|(?<![0-9])\d{18}(?![0-9])"  # session ids (institution, time, digits)
    r"|(?<=whsec_)[A-Za-z0-9+/=]+")  # webhook secrets, derived from an event's hash
# Counted per partition, and a business's partition is drawn: account numbers (NUBAN serials)
# and records' numbers. Not renamed consistently: two businesses' numbers may meet.
COUNTED = re.compile(r'(?<![0-9])\d{10}(?![0-9])|(?<="id":)\d+|(?<="id":")\d+(?=")')


class Normalizer:
    """Random values renamed in order of first appearance; times made `<time>`."""

    def __init__(self):
        self.names = {}

    def text(self, s):
        s = DURATION.sub('"durationMs":<n>', s)
        s = TIME.sub("<time>", s)
        s = TOKEN.sub(self.rename, s)
        return COUNTED.sub("<n>", s)

    def rename(self, m):
        return self.names.setdefault(m.group(0), f"<{len(self.names) + 1}>")

    def entry(self, e):
        n = dict(e)
        n["name"] = self.text(e["name"])
        n["target"] = self.text(e["target"])
        n["request_headers"] = {k: self.text(v) for k, v in e["request_headers"].items()}
        # The length follows the body, whose counted numbers may have another number of digits;
        # a position token names the partitions the scenario's businesses were drawn into.
        n["headers"] = [[k, "<n>" if k.lower() == "content-length" else
                         "<position>" if k.lower() == "kobo-position" else self.text(v)] for k, v in e["headers"]]
        n["body"] = self.text(e["body"])
        return n


def normalized(entries):
    n = Normalizer()
    return [n.entry(e) for e in entries]


# Bodies longer than this are kept in the golden file as their SHA-256 and length (a page of 100
# transactions is 250 KB); `record` with two binaries and `compare` shows such a difference whole.
GOLDEN_BODY_MAX = 4096


def condensed(entries):
    out = []
    for e in entries:
        c = dict(e)
        if len(e["body"]) > GOLDEN_BODY_MAX:
            data = e["body"].encode()
            c["body"] = f"sha256:{hashlib.sha256(data).hexdigest()} bytes:{len(data)}"
        out.append(c)
    return out


def compare(a, b, normalize=False, now_normalized=True):
    """The differences between two transcripts, as lines (empty: identical)."""
    if normalize:
        a, b = normalized(a), normalized(b)
    out = []
    if len(a) != len(b):
        out.append(f"{len(a)} exchanges against {len(b)}")
    for x, y in zip(a, b):
        if not normalize and now_normalized and x.get("now"):
            x, y = Normalizer().entry(x), Normalizer().entry(y)
        for field in ("name", "method", "target", "status", "headers", "body"):
            if x[field] != y[field]:
                out.append(f"{x['name']}: {field} differs:\n  {x[field]!r}\n  {y[field]!r}")
                break
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("kobo")
    rec.add_argument("out")
    rec.add_argument("--data-dir", help="keep the scenario's data dir here (for replay)")
    rep = sub.add_parser("replay")
    rep.add_argument("kobo")
    rep.add_argument("transcript")
    rep.add_argument("data_dir")
    rep.add_argument("out")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    cmp_.add_argument("--normalize", action="store_true")
    chk = sub.add_parser("check")
    chk.add_argument("kobo")
    chk.add_argument("golden")
    chk.add_argument("--update", action="store_true")
    args = p.parse_args()

    if args.command == "record":
        entries = record(args.kobo, args.out, args.data_dir)
        print(f"answers: {len(entries)} exchanges recorded in {args.out}")
        return 0
    if args.command == "replay":
        entries = replay(args.kobo, args.transcript, args.data_dir, args.out)
        print(f"answers: {len(entries)} GETs replayed into {args.out}")
        return 0
    if args.command == "compare":
        diffs = compare(read(args.a), read(args.b), args.normalize)
        for d in diffs[:20]:
            print(d)
        a = read(args.a)
        print(f"answers: {len(a)} exchanges, {'identical' if not diffs else str(len(diffs)) + ' differ'}"
              f"{' (normalized)' if args.normalize else ''}")
        return 1 if diffs else 0
    if args.command == "check":
        with tempfile.TemporaryDirectory() as t:
            entries = record(args.kobo, os.path.join(t, "now.jsonl"))
        now = condensed(normalized(entries))
        if args.update:
            write(args.golden, now)
            print(f"answers: {len(now)} exchanges written to {args.golden}")
            return 0
        diffs = compare(read(args.golden), now)
        for d in diffs[:20]:
            print(d)
        print(f"answers: {len(now)} exchanges, {'as the golden file' if not diffs else str(len(diffs)) + ' differ'}")
        return 1 if diffs else 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
