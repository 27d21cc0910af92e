"""Disk fsync latency on the filesystem of DIR: 4 KiB write + fdatasync, N times (median, p99).

    python3 bench/fsync_probe.py DIR [N]      prints "fsync 4KiB: median 1.23 ms, p99 4.56 ms (N=200)"
"""
import os
import statistics
import sys
import tempfile
import time

directory, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
block = os.urandom(4096)
fd, path = tempfile.mkstemp(dir=directory, prefix="fsync-probe-")
try:
    samples = []
    for i in range(n):
        os.pwrite(fd, block, (i % 256) * 4096)  # rewrites within 1 MiB: the cost is the sync
        start = time.perf_counter()
        os.fdatasync(fd)
        samples.append((time.perf_counter() - start) * 1000)
finally:
    os.close(fd)
    os.unlink(path)
samples.sort()
p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
print(f"fsync 4KiB: median {statistics.median(samples):.2f} ms, p99 {p99:.2f} ms (N={n})")
