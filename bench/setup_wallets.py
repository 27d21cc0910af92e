"""Creates N secondary wallets, funds each through the sandbox, prints them for transfer.lua.

    setup_wallets.py BASE KEY N                 N wallets of the business of KEY: "id,id,..."
    setup_wallets.py BASE KEY N B P ADMIN_KEY   B businesses in B different partitions of P (the
                                                admin API; B <= P), N/B wallets each:
                                                "key:id,id;key:id,id;..."

A business lives in partition murmur2(business id) mod P (events/partitioner.h, Kafka's murmur2):
businesses are created until B partitions have one; the extra ones get no wallets.
"""
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from partitioner import partition_of  # noqa: E402  (events/partitioner.cc)

base, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
businesses = int(sys.argv[4]) if len(sys.argv) > 4 else 1


def post(path, body, headers):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={**headers, "content-type": "application/json"})
    return json.load(urllib.request.urlopen(req))["data"]


def wallets(key, count, tag):
    ids = []
    for i in range(count):
        body = {"accountName": f"bench{tag}{i}", "category": "secondary", "currency": "NGN",
                "emailAddress": f"bench{i}@example.com", "mobile": {"phoneNumber": "08030000000", "isoCode": "NG"}}
        if os.environ.get("KOBO_KYC_TIER"):  # wallets of a KYC tier: every transfer checks its limits
            body["kycTier"] = int(os.environ["KOBO_KYC_TIER"])
        w = post("/v1/virtual-accounts", body, {"x-service-key": key})
        post("/v1/sandbox/incoming-transfers", {"accountNumber": w["accountNumber"], "amount": 1_000_000_000_000},
             {"x-service-key": key})
        ids.append(w["publicId"])
    return ids


if businesses == 1:
    print(",".join(wallets(key, n, "")))
    sys.exit(0)

partitions, admin_key = int(sys.argv[5]), sys.argv[6]
assert businesses <= partitions, "more businesses than partitions"
keys = {}  # partition -> the test secret key of its business
for attempt in range(50 * partitions):
    if len(keys) == businesses:
        break
    creds = post("/v1/admin/businesses", {"name": f"bench business {attempt}"},
                 {"x-admin-key": admin_key})["credentials"]
    p = partition_of(creds["businessId"], partitions)
    keys.setdefault(p, creds["testSecretKey"])
assert len(keys) == businesses, f"only {len(keys)} partitions got a business"
print(";".join(f"{k}:{','.join(wallets(k, n // businesses, f'p{p}-'))}" for p, k in sorted(keys.items())))
