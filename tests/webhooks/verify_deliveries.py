#!/usr/bin/env python3
"""Verifies webhook deliveries as a receiver does, with the `standardwebhooks` package from PyPI
(not our code): for tests/integration/webhooks_test.cc, which hands over every delivery its
receivers got. Reads a file of JSON lines {"secret", "headers", "body"}; each delivery must carry
webhook-id, webhook-timestamp and webhook-signature and verify with Webhook(secret).verify(body,
headers). Prints one line per failure and exits 1 if there is any.

    PYTHON_WITH_STANDARDWEBHOOKS verify_deliveries.py DELIVERIES.jsonl
"""

import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main():
    passed, failed = 0, 0
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            try:
                Webhook(d["secret"]).verify(d["body"].encode("utf-8"), d["headers"])
                passed += 1
            except WebhookVerificationError as e:
                failed += 1
                print(f"{d['headers'].get('webhook-id')}: {e}", file=sys.stderr)
    print(f"verify_deliveries: {passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
