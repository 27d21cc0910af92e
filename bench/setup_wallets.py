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

base, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
businesses = int(sys.argv[4]) if len(sys.argv) > 4 else 1


def post(path, body, headers):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={**headers, "content-type": "application/json"})
    return json.load(urllib.request.urlopen(req))["data"]


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (seed 0x9747b28c), as events/partitioner.cc computes it."""
    m, h = 0x5BD1E995, (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    for i in range(0, len(data) - len(data) % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail, rest = len(data) % 4, data[len(data) - len(data) % 4:]
    if tail >= 3:
        h ^= rest[2] << 16
    if tail >= 2:
        h ^= rest[1] << 8
    if tail >= 1:
        h ^= rest[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


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
    p = (murmur2(creds["businessId"].encode()) & 0x7FFFFFFF) % partitions
    keys.setdefault(p, creds["testSecretKey"])
assert len(keys) == businesses, f"only {len(keys)} partitions got a business"
print(";".join(f"{k}:{','.join(wallets(k, n // businesses, f'p{p}-'))}" for p, k in sorted(keys.items())))
