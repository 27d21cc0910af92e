"""Creates N secondary wallets, funds each through the sandbox, prints their ids comma-separated."""
import json
import sys
import urllib.request

base, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"x-service-key": key, "content-type": "application/json"})
    return json.load(urllib.request.urlopen(req))["data"]


ids = []
for i in range(n):
    w = post("/v1/virtual-accounts", {"accountName": f"bench{i}", "category": "secondary", "currency": "NGN",
                                      "emailAddress": f"bench{i}@example.com",
                                      "mobile": {"phoneNumber": "08030000000", "isoCode": "NG"}})
    post("/v1/sandbox/incoming-transfers", {"accountNumber": w["accountNumber"], "amount": 1_000_000_000_000})
    ids.append(w["publicId"])
print(",".join(ids))
