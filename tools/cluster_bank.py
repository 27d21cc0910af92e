#!/usr/bin/env python3
"""The bank run of a Kobo cluster (`make cluster-bank`; docs/capacity.md, "The bank run").

A broker and three nodes on loopback (tools/cluster.sh), businesses in every partition with
funded wallets, and a bank workload (transfers between the wallets of each business, each sent
to a random node: any node answers) while nodes are killed -9 and restarted, one is stopped with
SIGTERM, and the broker is killed -9 once. Every acknowledged transfer is read at once on
another node with its Kobo-Position token: never older than the write. Then, with the load
stopped, the checks:
  - money is conserved in every business and no balance is negative, on every node;
  - every acknowledged transfer is in the ledger exactly once, and no other transfer twice;
  - `kobo audit` of the topic is clean, and each node's views equal the log (audit --data-dir,
    after the nodes stopped);
  - a read with a write's token on another node was never older than the write.
and the figures: failover after kill -9 and after SIGTERM (first transfer of each of the lost
partitions acknowledged by a survivor), forwarded vs local p50, token wait p99.

    tools/cluster_bank.py [--seconds S] [--kills N] [--threads T] [--keep]

KOBO (default build/kobo) is the binary. Exit status 1 on any violation.
"""

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import partitioner  # tools/partitioner.py: events/partitioner.cc in Python

ROOT = Path(__file__).resolve().parent.parent
KOBO = os.environ.get("KOBO", str(ROOT / "build" / "kobo"))
CLUSTER = str(ROOT / "tools" / "cluster.sh")
BROKER = str(ROOT / "tools" / "kafka" / "broker.sh")
PARTITIONS = 6


def partition_of(business_id):
    return partitioner.partition_of(business_id, PARTITIONS)


class Node:
    def __init__(self, name, url):
        self.name, self.url = name, url
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port

    def call(self, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            h = dict(headers or {})
            raw = None
            if body is not None:
                raw = json.dumps(body).encode()
                h["content-type"] = "application/json"
            c.request(method, path, body=raw, headers=h)
            r = c.getresponse()
            data = r.read()
            try:
                doc = json.loads(data) if data else None
            except ValueError:
                doc = None
            return r.status, {k.lower(): v for k, v in r.getheaders()}, doc
        finally:
            c.close()


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


class Bank:
    def __init__(self, args):
        self.args = args
        self.dir = Path(tempfile.mkdtemp(prefix="kobo-cluster-bank-"))
        self.mu = threading.Lock()
        self.attempts = []  # dicts: business, reference, amount, status, node, issued, answered, forwarded
        self.token_waits = []  # a read with a write's token: the client's whole read
        self.view_waits = []  # ... and the wait for the views its answer reports (Server-Timing)
        self.violations = []
        self.stop = threading.Event()
        self.down = set()  # node names being killed / restarted
        self.owners = {}  # partition -> node name, as last read
        self.events = []  # (kind, node, time, partitions)

    def log(self, *a):
        print("[bank]", *a, flush=True)

    def violation(self, text):
        with self.mu:
            self.violations.append(text)
        self.log("VIOLATION:", text)

    # ---- the cluster ----------------------------------------------------------------------------

    def start(self):
        env = dict(os.environ, KOBO=KOBO, KOBO_CLUSTER_ARGS="--log-level warn --rail-delay-ms 50")
        subprocess.run([CLUSTER, "start", str(self.dir)], check=True, env=env, stdout=subprocess.DEVNULL)
        self.env = env
        self.nodes = {}
        for line in (self.dir / "nodes").read_text().split("\n"):
            if line.strip():
                name, url = line.split()
                self.nodes[name] = Node(name, url)
        self.admin = (self.dir / "admin-key").read_text().strip()
        self.secret = (self.dir / "cluster-secret").read_text().strip()
        self.brokers = (self.dir / "kafka" / "bootstrap").read_text().strip()

    def up(self):
        with self.mu:
            return [n for name, n in self.nodes.items() if name not in self.down]

    def read_owners(self):
        for n in self.up():
            try:
                s, _, doc = n.call("GET", "/v1/cluster", headers={"x-cluster-secret": self.secret}, timeout=5)
            except OSError:
                continue
            if s == 200:
                owners = {a["partition"]: a["owner"] for a in doc["data"]["assignment"]}
                with self.mu:
                    self.owners = owners
                return owners
        return {}

    # ---- the bank -------------------------------------------------------------------------------

    def setup(self):
        self.businesses = {}
        for i in range(60):
            if len(self.businesses) == PARTITIONS:
                break
            # The admin API is not forwarded: the node that writes the new business's partition
            # makes it, the others answer 503.
            s, _, doc = self.retry(lambda node: node.call("POST", "/v1/admin/businesses", {"name": f"bank {i}"},
                                                          {"x-admin-key": self.admin}))
            if s != 201:
                continue
            cred = doc["data"]["credentials"]
            self.businesses.setdefault(partition_of(cred["businessId"]),
                                       {"key": cred["testSecretKey"], "wallets": [], "funded": 0})
        for p, b in self.businesses.items():
            b["partition"] = p
            for w in range(4):
                body = {"accountName": f"bank-{p}-{w}", "category": "secondary", "currency": "NGN",
                        "emailAddress": "bank@example.com",
                        "mobile": {"phoneNumber": "08030000000", "isoCode": "NG"}}
                s, _, doc = self.retry(lambda node: node.call("POST", "/v1/virtual-accounts", body,
                                                              {"x-service-key": b["key"]}))
                assert s == 201, (s, doc)
                wallet = doc["data"]
                s, _, doc = self.retry(lambda node: node.call(
                    "POST", "/v1/sandbox/incoming-transfers",
                    {"accountNumber": wallet["accountNumber"], "amount": 100_000_000}, {"x-service-key": b["key"]}))
                assert s == 201, (s, doc)
                b["wallets"].append(wallet["publicId"])
                b["funded"] += 100_000_000
        self.log(f"{len(self.businesses)} businesses (partitions {sorted(self.businesses)}), 4 wallets each")

    def retry(self, fn, patience=30):
        deadline = time.time() + patience
        last = (0, {}, None)
        while time.time() < deadline:
            for node in self.up():
                try:
                    last = fn(node)
                except OSError:
                    continue
                if last[0] != 503:
                    return last
            time.sleep(0.1)
        return last

    def worker(self, t):
        rng = random.Random(self.args.seed * 1000 + t)
        i = 0
        keys = sorted(self.businesses)
        while not self.stop.is_set():
            i += 1
            p = keys[rng.randrange(len(keys))]
            b = self.businesses[p]
            src, dst = rng.sample(b["wallets"], 2)
            a = {"partition": p, "reference": f"bank-{self.args.seed}-{t}-{i}", "amount": 10_000 + rng.randrange(1_000),
                 "status": 0, "issued": time.time()}
            body = {"source": src, "sourceType": "VirtualAccount", "destination": dst,
                    "destinationType": "VirtualAccount", "amount": a["amount"], "currency": "NGN",
                    "narration": "bank run", "reference": a["reference"]}
            # Sent to a random node; a 503 or no answer is sent again, same reference, to
            # another (the reference makes the retry safe), for up to 30 s.
            deadline = time.time() + 30
            headers = {}
            while not self.stop.is_set() and time.time() < deadline:
                nodes = self.up()
                if not nodes:
                    time.sleep(0.1)
                    continue
                node = nodes[rng.randrange(len(nodes))]
                sent = time.time()
                try:
                    s, headers, _ = node.call("POST", "/v1/transactions/transfer", body, {"x-service-key": b["key"]})
                except OSError:
                    s = 0
                if s in (0, 503):
                    time.sleep(0.05)
                    continue
                a.update(status=s, node=node.name, answered=time.time(), latency=time.time() - sent,
                         forwarded=self.owners.get(p) not in (None, node.name))
                break
            with self.mu:
                self.attempts.append(a)
            if a["status"] == 200:
                self.read_back(rng, a, b, headers.get("kobo-position", ""))
            elif a["status"] not in (0, 400, 409):
                self.log("unexpected answer", a)

    # A read of the write with its token, on another node: never older than the write.
    def read_back(self, rng, a, b, token):
        others = [n for n in self.up() if n.name != a["node"]]
        if not others:
            return
        node = others[rng.randrange(len(others))]
        sent = time.time()
        try:
            s, headers, doc = node.call("GET", f"/v1/transactions/{a['reference']}/verify",
                                  headers={"x-service-key": b["key"], "Kobo-Position": token}, timeout=10)
        except OSError:
            return  # the node went down: no answer, nothing read
        wait = time.time() - sent
        if s == 200:
            with self.mu:
                self.token_waits.append(wait)
                timing = headers.get("server-timing", "")
                if timing.startswith("kobo-position;dur="):
                    self.view_waits.append(float(timing.split("=", 1)[1]) / 1000)
                else:
                    self.violation(f"a read with a token on {node.name} says no wait: {timing!r}")
        elif s == 404:
            self.violation(f"{a['reference']} acknowledged by {a['node']}, not found on {node.name} with {token}")
        elif s != 503:
            self.log(f"read back on {node.name}: {s} {doc}")

    # ---- faults ---------------------------------------------------------------------------------

    def pid(self, name):
        return int((self.dir / name / "pid").read_text())

    def chaos(self):
        rng = random.Random(self.args.seed)
        plan = ["kill"] * self.args.kills
        plan.insert(len(plan) // 2, "broker")
        plan.insert(1, "term")
        pause = max(2.0, self.args.seconds / (len(plan) + 1))
        for step in plan:
            if self.stop.wait(pause):
                return
            if step == "broker":
                self.log("broker: kill -9")
                subprocess.run([BROKER, "kill", str(self.dir / "kafka")], stdout=subprocess.DEVNULL)
                time.sleep(5)
                subprocess.run([BROKER, "restart", str(self.dir / "kafka")], stdout=subprocess.DEVNULL, check=True)
                self.log("broker: back")
                continue
            owners = self.read_owners()
            name = rng.choice(sorted(self.nodes))
            lost = [p for p, o in owners.items() if o == name and p in self.businesses]
            with self.mu:
                self.down.add(name)
            at = time.time()
            if step == "kill":
                subprocess.run([CLUSTER, "kill", str(self.dir), name], stdout=subprocess.DEVNULL)
            else:
                os.kill(self.pid(name), signal.SIGTERM)
            self.events.append((step, name, at, lost))
            self.log(f"{name}: {'kill -9' if step == 'kill' else 'SIGTERM'} (it wrote partitions {lost})")
            time.sleep(10)
            if step == "term":
                for _ in range(300):
                    try:
                        os.kill(self.pid(name), 0)
                        time.sleep(0.1)
                    except ProcessLookupError:
                        break
            self.restart(name)
            with self.mu:
                self.down.discard(name)
            self.log(f"{name}: back")

    def restart(self, name):
        r = subprocess.run([CLUSTER, "restart", str(self.dir), name], capture_output=True, text=True, env=self.env)
        if r.returncode != 0:
            self.log(f"{name}: restart failed: {r.stderr[-1000:]}")

    def alive(self, name):
        try:
            os.kill(self.pid(name), 0)
            return True
        except (ProcessLookupError, ValueError, FileNotFoundError):
            return False

    def owners_poller(self):
        while not self.stop.wait(0.5):
            self.read_owners()

    # ---- the checks -----------------------------------------------------------------------------

    def failovers(self):
        out = []
        for kind, name, at, lost in self.events:
            for p in lost:
                acks = [a["answered"] for a in self.attempts
                        if a["status"] == 200 and a["partition"] == p and a["issued"] >= at and a["node"] != name]
                out.append((kind, name, p, (min(acks) - at) if acks else None))
        return out

    def check(self):
        for name in self.nodes:
            if not self.alive(name):
                self.violation(f"{name} is not running at the end (see {self.dir / name / 'kobo.log'})")
                self.restart(name)
        nodes = [n for name, n in self.nodes.items() if self.alive(name)]
        # Every node, once it has the last write: the ledger's state.
        for node in nodes:
            for p, b in self.businesses.items():
                total = 0
                for w in b["wallets"]:
                    s, _, doc = node.call("GET", f"/v1/virtual-accounts/{w}", headers={"x-service-key": b["key"]})
                    if s != 200:
                        self.violation(f"{node.name}: GET wallet {w}: {s}")
                        continue
                    bal = doc["data"]["balance"]
                    if bal < 0:
                        self.violation(f"{node.name}: negative balance {w}: {bal}")
                    total += bal
                if total != b["funded"]:
                    self.violation(f"{node.name}: business of partition {p}: {total} != funded {b['funded']}")
        seen = {}
        node = nodes[0]
        for p, b in self.businesses.items():
            page = 1
            while True:
                s, _, doc = node.call("GET", f"/v1/transactions?entry=debit&perPage=100&page={page}",
                                      headers={"x-service-key": b["key"]})
                assert s == 200, (s, doc)
                for t in doc["data"]:
                    ref = t.get("reference")
                    if ref:
                        seen[ref] = seen.get(ref, 0) + 1
                if page * 100 >= doc["meta"]["pagination"]["totalCount"]:
                    break
                page += 1
        acked = 0
        for a in self.attempts:
            n = seen.get(a["reference"], 0)
            if a["status"] == 200:
                acked += 1
                if n != 1:
                    self.violation(f"acknowledged {a['reference']} is there {n} times")
            elif n > 1:
                self.violation(f"{a['reference']} is there {n} times")
            elif a["status"] in (400, 409) and n != 0:
                self.violation(f"{a['reference']} refused with {a['status']} moved money")
        self.log(f"{acked} acknowledged transfers checked, {len(self.attempts) - acked} not acknowledged")
        return acked

    def audit(self):
        r = subprocess.run([KOBO, "audit", "--kafka-brokers", self.brokers], capture_output=True, text=True)
        if r.returncode != 0:
            self.violation("kobo audit of the topic: " + (r.stdout + r.stderr)[-2000:])
        subprocess.run([CLUSTER, "stop", str(self.dir)], stdout=subprocess.DEVNULL)
        subprocess.run([BROKER, "restart", str(self.dir / "kafka")], stdout=subprocess.DEVNULL)
        for name in self.nodes:
            r = subprocess.run([KOBO, "audit", "--kafka-brokers", self.brokers, "--data-dir", str(self.dir / name)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                self.violation(f"kobo audit of {name}'s views: " + (r.stdout + r.stderr)[-2000:])
        subprocess.run([BROKER, "stop", str(self.dir / "kafka")], stdout=subprocess.DEVNULL)

    def run(self):
        self.start()
        try:
            self.setup()
            self.read_owners()
            threads = [threading.Thread(target=self.worker, args=(t,)) for t in range(self.args.threads)]
            threads.append(threading.Thread(target=self.owners_poller))
            for th in threads:
                th.start()
            chaos = threading.Thread(target=self.chaos)
            chaos.start()
            chaos.join()
            time.sleep(5)
            self.stop.set()
            for th in threads:
                th.join()
            self.down.clear()
            time.sleep(3)
            acked = self.check()
            self.audit()
        except BaseException:
            self.violations.append("the run stopped on an exception")
            raise
        finally:
            subprocess.run([CLUSTER, "stop", str(self.dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if not self.args.keep and not self.violations:
                shutil.rmtree(self.dir, ignore_errors=True)
            else:
                self.log("data kept in", self.dir)
        self.report(acked)
        return 1 if self.violations else 0

    def report(self, acked):
        print("\n== bank run figures ==")
        for kind, name, p, took in self.failovers():
            target = 8.0 if kind == "kill" else 1.0
            shown = f"{took:.2f} s" if took is not None else "never"
            print(f"failover after {'kill -9' if kind == 'kill' else 'SIGTERM'} of {name}: partition {p} "
                  f"acknowledged again after {shown} (target {target} s)")
        local = [a["latency"] for a in self.attempts if a["status"] == 200 and not a.get("forwarded")]
        fwd = [a["latency"] for a in self.attempts if a["status"] == 200 and a.get("forwarded")]
        print(f"transfers acknowledged: {acked}; local p50 {percentile(local, 50) * 1000:.1f} ms ({len(local)}), "
              f"forwarded p50 {percentile(fwd, 50) * 1000:.1f} ms ({len(fwd)}), ratio "
              f"{percentile(fwd, 50) / percentile(local, 50):.2f} (target <= 1.5)")
        print(f"reads with the write's token on another node: {len(self.token_waits)}; their wait for the "
              f"views (Server-Timing) p50 {percentile(self.view_waits, 50) * 1000:.1f} ms, p99 "
              f"{percentile(self.view_waits, 99) * 1000:.1f} ms (target <= 50 ms); the whole read as this "
              f"client saw it p50 {percentile(self.token_waits, 50) * 1000:.1f} ms, p99 "
              f"{percentile(self.token_waits, 99) * 1000:.1f} ms")
        print(f"violations: {len(self.violations)}")
        for v in self.violations[:20]:
            print("  ", v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=150, help="how long the faults are spread over")
    ap.add_argument("--kills", type=int, default=6, help="node kill -9s")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--keep", action="store_true", help="keep the cluster's data dir")
    args = ap.parse_args()
    print(f"[bank] seed {args.seed}", flush=True)
    sys.exit(Bank(args).run())


if __name__ == "__main__":
    main()
