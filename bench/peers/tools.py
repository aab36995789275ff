"""Untimed helpers of bench/peers.sh.

  python tools.py parquet CHANGES.arrow OUT.parquet     Arrow IPC stream -> Parquet
  python tools.py clsum FILE.parquet                     per _change_type: count and sum(id), as JSON
  python tools.py field KEY < OUT                       a field of a driver's RESULT line
  python tools.py summary RESULTS.txt                    the table of medians and ratios (Markdown)
"""
import json
import statistics
import sys


def to_parquet(src, dst):
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pa.memory_map(src) as f:  # applybench writes an Arrow IPC stream
        pq.write_table(pa.ipc.open_stream(f).read_all(), dst)


def clsum(path):
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=["id", "_change_type"]).to_pydict()
    out = {}
    for i, k in zip(t["id"], t["_change_type"]):
        n, s = out.get(k, [0, 0])
        out[k] = [n + 1, s + i]
    print(json.dumps(out, sort_keys=True))


def summary(path):
    # Lines: R <scenario> <engine> <round> <seconds> <end-to-end seconds or -> <peak MiB> <check>
    runs = {}
    checks = {}
    for line in open(path):
        p = line.split()
        if not p or p[0] != "R":
            continue
        sc, eng = p[1], p[2]
        runs.setdefault(sc, {}).setdefault(eng, []).append((float(p[4]), None if p[5] == "-" else float(p[5]), float(p[6])))
        checks.setdefault(sc, set()).add(p[7])
    print("| work | engine | median s (end-to-end) | peak RSS MiB | floe faster by | rounds |")
    print("|---|---|---|---|---|---|")
    for sc, engs in runs.items():
        med = {e: statistics.median(x[0] for x in v) for e, v in engs.items()}
        for e, v in engs.items():
            e2e = [x[1] for x in v if x[1] is not None]
            t = "%.2f" % med[e] + (" (%.1f)" % statistics.median(e2e) if e2e else "")
            r = "" if e == "floe" or "floe" not in med else "%.1fx" % (med[e] / med["floe"])
            print("| %s | %s | %s | %.0f | %s | %d |" % (sc, e, t, max(x[2] for x in v), r, len(v)))
    for sc, c in checks.items():
        print("# %s: results %s" % (sc, "equal" if len(c) == 1 else "DIFFER: " + " ".join(sorted(c))))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "parquet":
        to_parquet(sys.argv[2], sys.argv[3])
    elif cmd == "clsum":
        clsum(sys.argv[2])
    elif cmd == "field":
        # field KEY: the KEY of the RESULT line on stdin, as compact JSON (strings bare)
        for line in sys.stdin:
            if line.startswith("RESULT "):
                v = json.loads(line[7:]).get(sys.argv[2])
                print(v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":")))
    elif cmd == "summary":
        summary(sys.argv[2])
    else:
        sys.exit("tools.py: unknown command " + cmd)
