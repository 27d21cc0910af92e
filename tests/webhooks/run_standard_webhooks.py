#!/usr/bin/env python3
"""Webhooks that standard libraries verify (extensions section 6, docs/webhooks.md), tested from
the receiver's side with the `standardwebhooks` package from PyPI, a library none of us wrote.

Starts `kobo serve` on a free loopback port with a fresh data dir and a receiver (an HTTP server
in this process) that registers itself as the default account's webhook URL, then:
  1. before the account has a secret: a delivery carries webhook-id (= x-kobo-event-id) and
     webhook-timestamp, and no webhook-signature;
  2. issues a secret (POST /v1/accounts/{id}/webhook-secret) and makes every kind of event
     (credits, a wallet transfer's two legs, a payout that succeeds, one that fails and is
     reversed): each delivery verifies with Webhook(secret).verify(body, headers);
  3. rotates the secret: deliveries carry both signatures, space-separated, and verify with the
     old secret and with the new one; an old event's delivery retried now verifies with the new;
  4. subscribes to account.debit only: a credit is not delivered but takes its sequence number,
     and a 400 answers an unknown type;
  5. drops deliveries (answers 500, retries an hour away), then catches up with GET /v1/events:
     the sequences it holds are 1, 2, 3 … with no gap, and each body it was delivered is the one
     the listing shows, byte for byte;
  6. restarts the server on the same data dir: deliveries still verify with the current secret.
Every delivery the receiver gets is checked: whatever the step, a delivery that carries a
webhook-signature must verify with the secrets the account was issued. Exits 1 on any failure.

    run_standard_webhooks.py KOBO_BINARY PYTHON_WITH_STANDARDWEBHOOKS [--keep]

Runs itself again under PYTHON_WITH_STANDARDWEBHOOKS (the virtualenv of tools/venv.sh) when the
python running it has no standardwebhooks.
"""

import argparse
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path


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
            raise AssertionError(f"{method} {path} {body}: {status} {answer}")
        return answer["data"]


class Receiver:
    """Keeps every request it gets (headers, exact body bytes); answers 500 while dropping."""

    def __init__(self):
        self.lock = threading.Condition()
        self.got = []  # (headers dict, body bytes, answered status)
        self.dropping = False
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    status = 500 if receiver.dropping else 200
                    receiver.got.append((headers, body, status))
                    receiver.lock.notify_all()
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count, deadline_s=20):
        """The first `count` requests, once there are that many."""
        deadline = time.monotonic() + deadline_s
        with self.lock:
            while len(self.got) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the receiver got {len(self.got)} deliveries, not {count}")
                self.lock.wait(left)
            return list(self.got[:count])

    def count(self):
        with self.lock:
            return len(self.got)


ADMIN_KEY = "kobo-test-admin-key-0123456789abcdef"


def new_business(url, name):
    """A business made with the admin API: its credentials, shown this once (kobo keeps no key)."""
    req = urllib.request.Request(url + "/v1/admin/businesses", method="POST",
                                 data=json.dumps({"name": name}).encode(),
                                 headers={"content-type": "application/json", "x-admin-key": ADMIN_KEY})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["data"]["credentials"]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def start_server(kobo, work, port, log):
    server = subprocess.Popen(
        [kobo, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(work / "data"),
         "--webhook-allow-private", "--webhook-retry-schedule", "1h", "--rail-delay-ms", "50"],
        stdout=log, stderr=log, env=dict(os.environ, KOBO_ADMIN_KEY=ADMIN_KEY))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as r:
                if r.status == 200:
                    return server, url
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server did not become ready")


def stop_server(server):
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def run(kobo, work):
    from standardwebhooks.webhooks import Webhook, WebhookVerificationError

    receiver = Receiver()
    port = free_port()
    log = open(work / "serve.log", "w")
    server, url = start_server(kobo, work, port, log)
    try:
        creds = new_business(url, "Standard Webhooks")
        api = Api(url, creds["testSecretKey"])
        account = creds["accountId"]
        issued = []  # every secret the account was issued, oldest first

        def verify_all(deliveries, secrets):
            """Each delivery verifies with each of `secrets` (the library's own check)."""
            for headers, body, _ in deliveries:
                check(headers["webhook-id"] == headers["x-kobo-event-id"], f"webhook-id is not the event id: {headers}")
                check(abs(int(headers["webhook-timestamp"]) - time.time()) < 60, f"a stale timestamp: {headers}")
                for secret in secrets:
                    try:
                        Webhook(secret).verify(body, headers)
                    except WebhookVerificationError as e:
                        raise AssertionError(f"{headers['webhook-id']} does not verify with {secret[:12]}…: {e}")
                # A signature made with anything but a secret the account holds would not verify.
                try:
                    Webhook("whsec_" + "A" * 43 + "=").verify(body, headers)
                    raise AssertionError("a delivery verifies with a secret nobody was issued")
                except WebhookVerificationError:
                    pass

        def credit(amount, wallet):
            api.data("POST", "/v1/sandbox/incoming-transfers", {"accountNumber": wallet["accountNumber"], "amount": amount})

        api.data("PATCH", f"/v1/accounts/{account}", {"webhooks": [receiver.url]})
        a = api.data("POST", "/v1/virtual-accounts", {
            "accountName": "Standard Receiver A", "category": "secondary", "currency": "NGN",
            "emailAddress": "a@example.com", "mobile": {"phoneNumber": "08030000000", "isoCode": "NG"}})
        b = api.data("POST", "/v1/virtual-accounts", {
            "accountName": "Standard Receiver B", "category": "secondary", "currency": "NGN",
            "emailAddress": "b@example.com", "mobile": {"phoneNumber": "08030000001", "isoCode": "NG"}})

        # 1. No secret yet: the Standard Webhooks id and timestamp, no signature.
        credit(50_000_000, a)
        (headers, body, _), = receiver.wait_for(1)
        check("webhook-signature" not in headers, f"a signature before any secret was issued: {headers}")
        check(headers["webhook-id"] == headers["x-kobo-event-id"] and headers["webhook-id"].startswith("evt-"),
              f"webhook-id: {headers}")
        check(json.loads(body)["sequence"] == 1, f"the first event's sequence: {body}")

        # 2. The first secret: every kind of event verifies with it.
        issued_answer = api.data("POST", f"/v1/accounts/{account}/webhook-secret")
        secret1 = issued_answer["secret"]
        issued.append(secret1)
        check(secret1.startswith("whsec_") and issued_answer["previousSecretExpiresAt"] is None, issued_answer)
        api.data("POST", "/v1/transactions/transfer", {
            "source": a["publicId"], "sourceType": "VirtualAccount", "destination": b["publicId"],
            "destinationType": "VirtualAccount", "amount": 100_000, "currency": "NGN", "narration": "standard",
            "reference": "std-transfer-1"})
        for outcome, ref in [("success", "std-pay-ok"), ("failed", "std-pay-failed")]:
            api.data("POST", "/v1/transactions/bank-transfer", {
                "source": a["publicId"], "accountNumber": "0123456784", "bankCode": "044", "amount": 300_000,
                "currency": "NGN", "narration": "payout", "reference": ref,
                "metadata": {"sandboxOutcome": outcome} if outcome == "failed" else {}})
        # credit 1, transfer debit + credit, payout debit, failed payout + its reversal's credit
        got = receiver.wait_for(6)
        verify_all(got[1:], [secret1])
        events = sorted(json.loads(body)["event"] for _, body, _ in got[1:])
        check(events == ["account.credit", "account.credit", "account.debit", "account.debit",
                         "account.debit.failed"], f"the events delivered: {events}")
        for headers, _, _ in got[1:]:
            check(len(headers["webhook-signature"].split(" ")) == 1, f"one secret, one signature: {headers}")

        # The delivery made before the secret, retried now, is signed with the secret current now.
        first_id = got[0][0]["webhook-id"]
        deliveries = api.data("GET", "/v1/webhook-deliveries?perPage=100")
        first = next(d for d in deliveries if d["eventId"] == first_id)
        check(first["sequence"] == 1, f"the delivery record's sequence: {first}")
        api.data("POST", f"/v1/webhook-deliveries/{first['id']}/retry")
        retried = receiver.wait_for(7)[6]
        check(retried[0]["webhook-id"] == first_id and retried[1] == got[0][1], "a retry sends the same id and body")
        verify_all([retried], [secret1])

        # 3. A rotation: both signatures for a day, each secret verifies.
        rotated = api.data("POST", f"/v1/accounts/{account}/webhook-secret")
        secret2 = rotated["secret"]
        issued.append(secret2)
        check(secret2 != secret1 and rotated["previousSecretExpiresAt"] is not None, rotated)
        credit(70_000, b)
        after_rotation = receiver.wait_for(8)[7]
        check(len(after_rotation[0]["webhook-signature"].split(" ")) == 2, f"two signatures: {after_rotation[0]}")
        verify_all([after_rotation], [secret1, secret2])
        # An old event delivered after the rotation uses the secrets current at the attempt.
        api.data("POST", f"/v1/webhook-deliveries/{first['id']}/retry")
        old_after_rotation = receiver.wait_for(9)[8]
        check(old_after_rotation[0]["webhook-id"] == first_id, "the old event's retry")
        verify_all([old_after_rotation], [secret1, secret2])

        # 4. Subscriptions: only debits now. A credit is not delivered, yet takes its number.
        status, answer = api.call("PATCH", f"/v1/accounts/{account}", {"webhookEvents": ["account.refund"]})
        check(status == 400 and answer["meta"]["error"]["message"] == "Validation error"
              and "webhookEvents" in answer["meta"]["error"]["messages"],
              f"an unknown type: {status} {answer}")
        updated = api.data("PATCH", f"/v1/accounts/{account}", {"webhookEvents": ["account.debit"]})
        check(updated["webhookEvents"] == ["account.debit"], updated)
        before = receiver.count()
        credit(80_000, a)  # not delivered
        api.data("POST", "/v1/transactions/transfer", {  # its debit is; its credit is not
            "source": a["publicId"], "sourceType": "VirtualAccount", "destination": b["publicId"],
            "destinationType": "VirtualAccount", "amount": 20_000, "currency": "NGN", "narration": "standard",
            "reference": "std-transfer-2"})
        debit = receiver.wait_for(before + 1)[before]
        time.sleep(0.5)  # a credit delivered by mistake would have come by now
        check(receiver.count() == before + 1, "an unsubscribed credit was delivered")
        debit_body = json.loads(debit[1])
        check(debit_body["event"] == "account.debit", debit_body["event"])
        listed = api.data("GET", f"/v1/events?after={debit_body['sequence'] - 2}&limit=3")
        check([e["sequence"] for e in listed] == [debit_body["sequence"] - 1, debit_body["sequence"],
                                                  debit_body["sequence"] + 1], f"the listing around it: {listed}")
        check([e["event"] for e in listed] == ["account.credit", "account.debit", "account.credit"],
              "the unsubscribed credits are listed with their numbers")
        verify_all([debit], [secret2])
        api.data("PATCH", f"/v1/accounts/{account}", {"webhookEvents": ["account.credit", "account.debit",
                                                                         "account.debit.failed"]})

        # 5. A receiver that drops deliveries catches up with GET /v1/events.
        with receiver.lock:
            receiver.dropping = True
        before = receiver.count()
        for i in range(3):
            credit(10_000 + i, b)
        receiver.wait_for(before + 3)
        with receiver.lock:
            receiver.dropping = False
        credit(20_000, b)
        receiver.wait_for(before + 4)
        with receiver.lock:
            delivered = {}
            for headers, body, status in receiver.got:
                if status == 200:
                    delivered[json.loads(body)["sequence"]] = body
                # Whatever the step: a signed delivery verifies with a secret the account was issued.
                if "webhook-signature" in headers:
                    check(any(_verifies(Webhook, headers, body, s) for s in issued),
                          f"{headers['webhook-id']} verifies with no secret the account was issued")
        # The dropped ones were attempted after the rotation: each carries the current secret's.
        verify_all(receiver.got[before:before + 4], [secret2])
        seen = sorted(delivered)
        gaps = [s for s in range(1, seen[-1] + 1) if s not in delivered]
        check(gaps, "the receiver should have missed some sequences")
        caught_up = dict(delivered)
        after = 0
        while True:
            page = api.data("GET", f"/v1/events?after={after}&limit=2")
            if not page:
                break
            for e in page:
                check(e["sequence"] == after + 1, f"the listing jumps from {after} to {e['sequence']}")
                after = e["sequence"]
                body = json.dumps(e["body"], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
                if e["sequence"] in delivered:
                    check(delivered[e["sequence"]] == body,
                          f"sequence {after}: delivered {delivered[after]!r}, listed {body!r}")
                    check(json.loads(delivered[after])["data"]["publicId"] == e["body"]["data"]["publicId"], "same record")
                caught_up[e["sequence"]] = body
        check(sorted(caught_up) == list(range(1, after + 1)) and after >= seen[-1],
              f"after catching up the receiver holds {sorted(caught_up)}")
        status, answer = api.call("GET", "/v1/events?limit=1001")
        check(status == 400, f"limit 1001: {status} {answer}")

        # 6. A restart: the master secret is on disk, the rotation in the log.
        stop_server(server)
        server, url = start_server(kobo, work, port, log)
        api = Api(url, creds["testSecretKey"])
        before = receiver.count()
        credit(30_000, a)
        restarted = receiver.wait_for(before + 1)[before]
        check(json.loads(restarted[1])["sequence"] == after + 1, "the sequence goes on after a restart")
        verify_all([restarted], [secret1, secret2])
        total = receiver.count()
        print(f"run_standard_webhooks: {total} deliveries checked with standardwebhooks, "
              f"{after + 1} events in sequence")
        print("1 passed, 0 failed")
    finally:
        stop_server(server)
        receiver.server.shutdown()


def _verifies(Webhook, headers, body, secret):
    try:
        Webhook(secret).verify(body, headers)
        return True
    except Exception:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kobo")
    parser.add_argument("python")
    parser.add_argument("--keep", action="store_true", help="keep the data dir and the server's log")
    args = parser.parse_args()
    try:
        import standardwebhooks  # noqa: F401
    except ImportError:
        os.execv(args.python, [args.python, __file__, *sys.argv[1:]])
    work = Path(tempfile.mkdtemp(prefix="kobo-standard-webhooks-"))
    ok = False
    try:
        run(os.path.abspath(args.kobo), work)
        ok = True
    except AssertionError as e:
        print(f"run_standard_webhooks: FAILED: {e}", file=sys.stderr)
        print((work / "serve.log").read_text()[-4000:], file=sys.stderr)
    finally:
        if args.keep or not ok:
            print(f"run_standard_webhooks: the data dir and the server's log are kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
