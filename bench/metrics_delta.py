"""Differences of two /metrics scrapes: a histogram's quantile and mean over the interval.

    python3 bench/metrics_delta.py BEFORE AFTER NAME QUANTILE
prints "<quantile in the metric's unit> <mean> <count>". The quantile is interpolated linearly
within its bucket, as Prometheus's histogram_quantile() does, so it is as exact as the buckets.
"""
import re
import sys


def buckets(path, name):
    out = {}
    count = total = 0.0
    for line in open(path):
        m = re.match(rf'{name}_bucket\{{(?:.*,)?le="([^"]+)"\}} (\S+)', line)
        if m:
            out[float("inf") if m[1] == "+Inf" else float(m[1])] = float(m[2])
        elif line.startswith(f"{name}_count"):
            count = float(line.split()[-1])
        elif line.startswith(f"{name}_sum"):
            total = float(line.split()[-1])
    return out, count, total


before, after, name, q = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
b0, c0, s0 = buckets(before, name)
b1, c1, s1 = buckets(after, name)
bounds = sorted(b1)
cum = [b1[b] - b0.get(b, 0.0) for b in bounds]
n = c1 - c0
if n <= 0:
    print("nan nan 0")
    sys.exit(0)
rank, lower, below = q * n, 0.0, 0.0
value = float("nan")
for bound, c in zip(bounds, cum):
    if c >= rank:
        value = bound if bound == float("inf") or c == below else lower + (bound - lower) * (rank - below) / (c - below)
        break
    lower, below = bound, c
print(f"{value:.6g} {(s1 - s0) / n:.6g} {n:.0f}")
