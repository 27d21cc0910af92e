#!/usr/bin/env python3
"""Writes sample_events.jsonl: real events of every type, for validate_events_selftest.py.

Runs `kobo serve` on a fresh data dir, makes the requests that emit each event type (an admin
business, an account update, its webhook secret, wallets, a transit wallet, incoming credits, a wallet transfer, a
saved beneficiary, a payout that succeeds and one that fails, a collection wallet that is paid
and one that expires, a hold captured in two parts, one voided and one that expires, a bulk transfer with a refused item,
live mode enabled by the admin, a business suspended and resumed and given its own rate limits, a key rolled and the old one revoked, the live mode's webhooks), stops it and dumps the log with `kobo events`.

  tests/schemas/make_sample_events.py --kobo build/kobo [--out tests/schemas/sample_events.jsonl]

The samples are schemaVersion 2 events exactly as the writer appended them (real codec output,
never written by hand): regenerate them when an event type or member changes, and check that
every type of events/event.cc is among them (validate_events_selftest.py does).

The committed file was written while `kobo serve` was still moving to v2: by the same scenario
driven through the writer itself (command/ledger.h's Ledger over a MemoryLog, 2 partitions,
rail delay 100 ms), each record's bytes as appended, and checked with decode_event() and
in_canonical_form(). Once `kobo serve` and `kobo events` are on v2, this script writes the
same kinds of events. `WebhookDeliveriesEnded` is appended by a cluster's nodes only: its sample
(the line before the last) was appended by the writer over a MemoryLog (command
EndWebhookDeliveries). `ChainCheckpointed` (the last line) is made by hand after it: signed with a
throwaway key by `openssl pkeyutl -sign -rawin` over the message its schema gives, which
tests/audit/signed_log_test.cc verifies with kobo's own code. `BusinessRateLimitsSet` (after
`BusinessResumed`) is this script's own output, taken from a run of it.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ADMIN_KEY = "sample-admin-key-0123456789abcdef-sample"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    def __init__(self, base, key):
        self.base, self.key = base, key

    def call(self, method, path, body=None, headers=None):
        req = urllib.request.Request(self.base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode())
        req.add_header("content-type", "application/json")
        req.add_header("x-service-key", self.key)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())["data"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kobo", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "sample_events.jsonl")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kobo-samples-") as data:
        port = free_port()
        def serve(master_key):
            return subprocess.Popen([str(args.kobo), "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data,
                                     "--partitions", "2", "--rail-delay-ms", "100", "--collection-expire-min-s", "1",
                                     "--admin-key", ADMIN_KEY], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=dict(os.environ, KOBO_MASTER_KEY=master_key))

        def wait_ready():
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                    return
                except OSError:
                    time.sleep(0.1)

        server = serve("sample-master-key-one-0123456789abcdef")
        admin = {"x-admin-key": ADMIN_KEY}
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready()
            creds = Client(base, "").call("POST", "/v1/admin/businesses", {"name": "Sample Traders"}, admin)
            api = Client(base, creds["credentials"]["testSecretKey"])
            account = api.call("GET", "/v1/accounts")[0]["publicId"]
            api.call("PATCH", f"/v1/accounts/{account}", {"webhooks": ["https://example.com/hooks"],
                                                          "webhookEvents": ["account.credit", "account.debit"]})
            Client(base, "").call("PATCH", f"/v1/admin/accounts/{account}", {"live": True}, admin)
            live = Client(base, creds["credentials"]["liveSecretKey"])
            other = Client(base, "").call("POST", "/v1/admin/businesses", {"name": "Sample Suspended"}, admin)
            Client(base, "").call("POST", f"/v1/admin/businesses/{other['business']['publicId']}/suspend",
                                  {"reason": "sample"}, admin)
            Client(base, "").call("POST", f"/v1/admin/businesses/{other['business']['publicId']}/resume", None, admin)
            Client(base, "").call("PUT", f"/v1/admin/businesses/{other['business']['publicId']}/rate-limits",
                                  {"readsPerSecond": 50, "writesPerSecond": 10}, admin)
            rolled = api.call("POST", f"/v1/accounts/{account}/keys/roll", {"overlapSeconds": 3600})
            api = Client(base, rolled["secretKey"])
            api.call("POST", f"/v1/accounts/{account}/keys/revoke", {"keyId": rolled["previousKeyId"]})
            live.call("PATCH", f"/v1/accounts/{account}", {"webhooks": ["https://example.com/live-hooks"]})
            api.call("POST", f"/v1/accounts/{account}/webhook-secret")
            a = api.call("POST", "/v1/virtual-accounts", {"accountName": "Ada", "category": "primary", "currency": "NGN"})
            b = api.call("POST", "/v1/virtual-accounts",
                         {"accountName": "Bola", "category": "secondary", "currency": "NGN",
                          "emailAddress": "bola@example.com", "mobile": {"phoneNumber": "08030000000", "isoCode": "NG"}})
            api.call("PATCH", f"/v1/virtual-accounts/{b['publicId']}", {"kycTier": 3})
            t = api.call("POST", "/v1/transit-accounts",
                         {"accountName": "Till", "currency": "NGN", "settlementAccount": a["publicId"]})
            api.call("POST", "/v1/sandbox/incoming-transfers", {"accountNumber": a["accountNumber"], "amount": 5_000_000})
            api.call("POST", "/v1/sandbox/incoming-transfers", {"accountNumber": t["accountNumber"], "amount": 30_000})
            api.call("POST", "/v1/transactions/transfer",
                     {"source": a["publicId"], "sourceType": "VirtualAccount", "destination": b["publicId"],
                      "destinationType": "VirtualAccount", "amount": 20_000, "currency": "NGN",
                      "narration": "Rent share", "reference": "sample-transfer-1", "nameEnquiryRef": "ner-sample"})
            api.call("POST", "/v1/bank-accounts", {"accountName": "Chidi", "accountNumber": "0123456784",
                                                  "bankName": "Access Bank", "bankCode": "044"})
            api.call("POST", "/v1/transactions/bank-transfer",
                     {"source": a["publicId"], "accountNumber": "0123456784", "bankCode": "044", "amount": 25_000,
                      "currency": "NGN", "narration": "Supplier", "reference": "sample-payout-1"})
            api.call("POST", "/v1/transactions/bank-transfer",
                     {"source": a["publicId"], "accountNumber": "0000014579", "bankCode": "011", "amount": 15_000,
                      "currency": "NGN", "narration": "Refund", "saveBeneficiary": True,
                      "metadata": {"sandboxOutcome": "failed", "invoice": "INV-7"}})
            paid = api.call("POST", "/v1/collection-accounts",
                            {"destination": a["publicId"], "accountName": "Order 17", "amount": 50_000, "expireIn": 60,
                             "reference": "order-17"})
            api.call("POST", "/v1/sandbox/incoming-transfers", {"accountNumber": paid["accountNumber"], "amount": 50_000})
            api.call("POST", "/v1/collection-accounts",
                     {"destination": a["publicId"], "accountName": "Order 18", "amount": 70_000, "expireIn": 1})
            # Holds: captured in parts (the last part defaulted, to what remains), voided, expired.
            h = api.call("POST", "/v1/holds", {"source": a["publicId"], "amount": 40_000, "reference": "hold-1",
                                               "narration": "Booking", "metadata": {"order": 17}, "expiresIn": 60})
            api.call("POST", f"/v1/holds/{h['publicId']}/capture",
                     {"destination": b["publicId"], "reference": "hold-1-capture-1", "amount": 15_000,
                      "narration": "Deposit"})
            api.call("POST", f"/v1/holds/{h['publicId']}/capture",
                     {"destination": b["publicId"], "reference": "hold-1-capture-2", "final": True})
            v = api.call("POST", "/v1/holds", {"source": a["publicId"], "amount": 5_000, "reference": "hold-2"})
            api.call("POST", f"/v1/holds/{v['publicId']}/void")
            api.call("POST", "/v1/holds", {"source": a["publicId"], "amount": 7_000, "reference": "hold-3",
                                           "expiresIn": 1})
            time.sleep(3)  # the payouts settle (rail delay 100 ms), the second collection and hold-3 expire
            wallet_item = {"type": "wallet", "source": a["publicId"], "sourceType": "VirtualAccount",
                           "destination": b["publicId"], "destinationType": "VirtualAccount", "amount": 10_000,
                           "currency": "NGN", "narration": "Salary", "reference": "sample-bulk-item-1"}
            bank_item = {"type": "bank", "source": a["publicId"], "accountNumber": "0123456784", "bankCode": "044",
                         "amount": 12_000, "currency": "NGN", "narration": "Vendor"}
            api.call("POST", "/v1/transactions/bulk-transfer",
                     {"reference": "sample-bulk-1", "items": [wallet_item, bank_item, dict(wallet_item, amount=10**9)]})
            time.sleep(3)  # the payouts settle (rail delay 100 ms) and the second collection expires
            # A plaintext key an older kobo left in the data dir, met by a node of another master
            # key: sealed again under its own (SigningKeySealed), and the file removed.
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
            (Path(data) / "signing-keys").mkdir(mode=0o700)
            (Path(data) / "signing-keys" / f"{other['account']['publicId']}.json").write_text(
                json.dumps({"test": other["credentials"]["testSecretKey"]}))
            server = serve("sample-master-key-two-0123456789abcdef")
            wait_ready()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        events = subprocess.run([str(args.kobo), "events", "--data-dir", data], check=True, capture_output=True,
                                text=True).stdout
    # WebhookDeliveriesEnded is a cluster's: its sample, appended by the writer over a MemoryLog,
    # is kept as it was.
    if args.out.exists():
        kept = [line for line in args.out.read_text().splitlines()
                if line.strip() and json.loads(line)["type"] == "WebhookDeliveriesEnded"]
        events += "".join(line + "\n" for line in kept)
    args.out.write_text(events)
    types = sorted({json.loads(line)["type"] for line in events.splitlines()})
    print(f"wrote {len(events.splitlines())} events of {len(types)} types to {args.out}: {', '.join(types)}")


if __name__ == "__main__":
    main()
