#!/usr/bin/env python3
"""The CPU time of a process's threads, by thread name (what name_this_thread() set).

  thread_cpu.py PID > before.json      the CPU seconds of each thread name now
  thread_cpu.py PID before.json N      the CPU microseconds per item (N items) since `before`,
                                       by group: the projector (kobo-projector and its lanes,
                                       kobo-project-N), the writer, the HTTP threads, the rest
  thread_cpu.py timeline CMD [ARG...]  runs CMD and prints, every half second until it ends, the
                                       cores each thread name kept busy: where a run leaves a
                                       core idle (a rebuild's lane waiting for the reader, say)

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


def timeline(command, interval=0.5):
    import subprocess
    import time

    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    started, last = time.monotonic(), {}
    while child.poll() is None:
        time.sleep(interval)
        try:
            now = threads(child.pid)
        except FileNotFoundError:  # it ended in between
            break
        busy = {}
        for key, seconds in now.items():
            name = key.split(":", 1)[1]
            busy[name] = busy.get(name, 0.0) + (seconds - last.get(key, 0.0)) / interval
        last = now
        shown = " ".join(f"{name}={cores:.2f}" for name, cores in sorted(busy.items()) if cores >= 0.02)
        print(f"{time.monotonic() - started:6.1f} s  cores {sum(busy.values()):.2f}  {shown}", flush=True)
    sys.exit(child.wait())


if sys.argv[1] == "timeline":
    timeline(sys.argv[2:])
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
