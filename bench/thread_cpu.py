#!/usr/bin/env python3
"""The CPU time of a process's threads, by thread name (what name_this_thread() set).

  thread_cpu.py PID > before.json      the CPU seconds of each thread name now
  thread_cpu.py PID before.json N      the CPU microseconds per item (N items) since `before`,
                                       by group: the projector (kobo-projector and its lanes,
                                       kobo-project-N), the writer, the HTTP threads, the rest

Reads /proc/PID/task/*/stat (utime + stime, in clock ticks). A thread that ended in between is
missing from the second reading: its time is not counted.
"""
import json
import os
import sys

TICK = os.sysconf("SC_CLK_TCK")


def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[f"{tid}:{name}"] = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    return out


def group(name):
    if name.startswith("kobo-project"):
        return "projector"
    if name == "kobo-writer":
        return "writer"
    if name == "kobo-http":
        return "http"
    return "other"


pid = int(sys.argv[1])
now = threads(pid)
if len(sys.argv) == 2:
    json.dump(now, sys.stdout)
    sys.exit(0)
before = json.load(open(sys.argv[2]))
items = float(sys.argv[3])
spent = {}
for key, seconds in now.items():
    name = key.split(":", 1)[1]
    spent[group(name)] = spent.get(group(name), 0.0) + seconds - before.get(key, 0.0)
print(" ".join(f"cpu_us_{g}={1e6 * s / max(items, 1):.1f}" for g, s in sorted(spent.items())))
