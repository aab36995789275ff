"""Helpers shared by the peer drivers of bench/peers.sh: peak memory of this
process and of its JVM children, and one JSON result line on stdout."""
import json
import os
import resource
import sys
import time


def descendants(pid):
    """Pids of every live descendant of pid (from /proc)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def hwm_mib(pid):
    """VmHWM (peak resident memory) of pid in MiB, 0 when unknown."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_rss_mib():
    """Peak RSS of this process plus the peaks of its live descendants (the JVM)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return own + sum(hwm_mib(p) for p in descendants(os.getpid()))


def emit(**fields):
    print("RESULT " + json.dumps(fields, sort_keys=True))
    sys.stdout.flush()


T0 = time.time()
