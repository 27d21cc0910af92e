"""Which partition a business's events go to, as events/partitioner.cc computes it: Kafka's
murmur2 of the business id, positive, modulo the partitions. For the scripts that set up or check
a running service (bench/setup_wallets.py, tools/cluster_bank.py)."""


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


def partition_of(business: str, partitions: int) -> int:
    return (murmur2(business.encode()) & 0x7FFFFFFF) % partitions
