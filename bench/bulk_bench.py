#!/usr/bin/env python3
"""The bulk transfer row of `make bench` (extensions section 5): a bulk of 1,000 wallet
transfers answered in <= 50 ms on one connection.

Starts `kobo serve` on a fresh data dir (fsync on every group commit), creates and funds
SOURCES source wallets and 100 destinations, then on one keep-alive connection posts RUNS bulks
of 1,000 wallet transfers each (every item with its own reference; atomic and non-atomic
alternately), each timed from the first byte sent to the last byte of the answer read. Every
answer must be 201 with 1,000 items of status 200. Prints the details on stderr and a
`RESULT key=value ...` line for run.sh: best, median and p90 milliseconds per bulk and items per
second at the median.

    bench/bulk_bench.py BUILD_DIR [RUNS] [-- SERVE_FLAGS...]
"""
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ITEMS = 1_000
DESTINATIONS = 100


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    args = sys.argv[1:]
    serve_flags = []
    if "--" in args:
        serve_flags = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    build = args[0] if args else "build-bench"
    runs = int(args[1]) if len(args) > 1 else 30
    sources = int(os.environ.get("SOURCES", "10"))
    with tempfile.TemporaryDirectory(prefix="kobo-bulk-bench-") as data:
        port = free_port()
        admin_key = "bulk-bench-admin-key-0123456789abcdef"
        server = subprocess.Popen([f"{build}/kobo", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data,
                                   "--log-level", "warn", *serve_flags],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=dict(os.environ, KOBO_ADMIN_KEY=admin_key))
        try:
            conn = None
            for _ in range(600):
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    conn.request("GET", "/readyz")
                    ready = conn.getresponse()
                    ready.read()
                    if ready.status == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.05)
            conn.request("POST", "/v1/admin/businesses", body=json.dumps({"name": "bulk bench"}),
                         headers={"x-admin-key": admin_key, "content-type": "application/json"})
            made = conn.getresponse()
            key = json.loads(made.read())["data"]["credentials"]["testSecretKey"]
            headers = {"x-service-key": key, "content-type": "application/json"}

            def post(path, body):
                conn.request("POST", path, body=json.dumps(body), headers=headers)
                r = conn.getresponse()
                return r.status, json.loads(r.read())

            def wallet(name):
                s, j = post("/v1/virtual-accounts", {"accountName": name, "category": "secondary", "currency": "NGN",
                                                     "emailAddress": "bench@example.com",
                                                     "mobile": {"isoCode": "NG", "phoneNumber": "08030000000"}})
                assert s == 201, j
                return j["data"]

            src = [wallet(f"bulk source {i}") for i in range(sources)]
            dst = [wallet(f"bulk payee {i}")["publicId"] for i in range(DESTINATIONS)]
            for w in src:
                s, j = post("/v1/sandbox/incoming-transfers", {"accountNumber": w["accountNumber"],
                                                               "amount": 900_000_000_000})
                assert s == 201, j
            times = []
            for n in range(runs + 2):  # the first two warm the connection and the caches
                items = [{"type": "wallet", "source": src[(n + i) % sources]["publicId"], "sourceType": "VirtualAccount",
                          "destination": dst[i % DESTINATIONS], "destinationType": "VirtualAccount",
                          "amount": 10_000 + i, "currency": "NGN", "narration": "payroll",
                          "reference": f"bench-{n}-{i}"} for i in range(ITEMS)]
                body = json.dumps({"reference": f"bench-bulk-{n}", "atomic": n % 2 == 0, "items": items})
                started = time.perf_counter()
                conn.request("POST", "/v1/transactions/bulk-transfer", body=body, headers=headers)
                r = conn.getresponse()
                answer = r.read()
                elapsed_ms = (time.perf_counter() - started) * 1000
                assert r.status == 201, answer[:300]
                got = json.loads(answer)["data"]["items"]
                assert len(got) == ITEMS and all(i["statusCode"] == 200 for i in got), "an item was refused"
                if n >= 2:
                    times.append(elapsed_ms)
            times.sort()
            best, median = times[0], statistics.median(times)
            p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
            print(f"bulk: {runs} bulks of {ITEMS} wallet transfers on one connection; best {best:.1f} ms, median "
                  f"{median:.1f} ms, p90 {p90:.1f} ms; request {len(body) // 1024} KiB, answer {len(answer) // 1024} KiB",
                  file=sys.stderr)
            print(f"RESULT bulk_best_ms={best:.1f} bulk_p50_ms={median:.1f} bulk_p90_ms={p90:.1f} "
                  f"bulk_items_per_s={ITEMS / median * 1000:.0f}")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
