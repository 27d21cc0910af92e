#!/usr/bin/env python3
"""schemathesis against a live `kobo serve`, with every check and every phase.

Starts the real server on a free loopback port with a fresh data dir and an admin key, waits for
/readyz, and runs schemathesis (from the virtualenv tools/venv.sh makes) over
schemas/openapi.yaml: every check, the examples, coverage, fuzzing and stateful phases, a fixed
seed and the bounded numbers of examples of tests/openapi/schemathesis.toml. Prints how many
cases were generated, how many failed and what the stateful phase covered, and exits 1 on any
failure, on a stateful phase that did not run, or when the server died.

    run_schemathesis.py KOBO_BINARY SCHEMATHESIS [--seed S] [--keep]
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "schemas" / "openapi.yaml"
CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kobo")
    parser.add_argument("schemathesis")
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--keep", action="store_true", help="keep the data dir and the report also on success")
    args = parser.parse_args()
    args.kobo = os.path.abspath(args.kobo)
    args.schemathesis = os.path.abspath(args.schemathesis)

    data_dir = Path(tempfile.mkdtemp(prefix="kobo-schemathesis-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    admin_key = "schemathesis-admin-key-0123456789abcdef"
    log = open(data_dir / "serve.log", "w")
    server = subprocess.Popen(
        [args.kobo, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir / "data")],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, KOBO_ADMIN_KEY=admin_key))
    ok = False
    try:
        if not wait_ready(url, server):
            print("run_schemathesis: kobo serve did not become ready; its log:", file=sys.stderr)
            print((data_dir / "serve.log").read_text()[-4000:], file=sys.stderr)
            return 1
        req = urllib.request.Request(url + "/v1/admin/businesses", method="POST",
                                     data=json.dumps({"name": "Schemathesis"}).encode(),
                                     headers={"content-type": "application/json", "x-admin-key": admin_key})
        with urllib.request.urlopen(req, timeout=30) as r:
            key = json.loads(r.read())["data"]["credentials"]["testSecretKey"]
        report = data_dir / "report"
        command = [
            args.schemathesis, "--config-file", str(CONFIG), "run", str(DOCUMENT),
            "--url", url,
            "-H", f"x-service-key: {key}",
            "-H", f"x-admin-key: {admin_key}",
            "--checks", "all",
            "--phases", "examples,coverage,fuzzing,stateful",
            "--seed", str(args.seed),
            "--report", "ndjson", "--report-dir", str(report),
        ]
        started = time.monotonic()
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent), SCHEMATHESIS_HOOKS="hooks")
        run = subprocess.run(command, capture_output=True, text=True, env=env, cwd=data_dir)
        took = time.monotonic() - started
        out = run.stdout + run.stderr
        print(out)
        cases = re.search(r"(\d+) generated", out)
        stateful = re.search(r"Stateful[^\n]*", out)
        links = re.search(r"Links? covered[^\n]*|(\d+)/(\d+) links?[^\n]*", out, re.IGNORECASE)
        print(f"run_schemathesis: {cases.group(1) if cases else '?'} cases generated, exit {run.returncode}, "
              f"{took:.0f} s; {stateful.group(0).strip() if stateful else 'stateful phase: not reported'}"
              f"{'; ' + links.group(0).strip() if links else ''}")
        if server.poll() is not None:
            print("run_schemathesis: kobo serve died during the run", file=sys.stderr)
            return 1
        stateful_ran = stateful is not None and "not applicable" not in stateful.group(0) \
            and "Skipped" not in stateful.group(0) and "⏭" not in stateful.group(0)
        if not stateful_ran:
            print("run_schemathesis: the stateful phase did not run", file=sys.stderr)
            return 1
        ok = run.returncode == 0
        return 0 if ok else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        if ok and not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)
        else:
            print(f"run_schemathesis: the data dir and the server's log are kept in {data_dir}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
