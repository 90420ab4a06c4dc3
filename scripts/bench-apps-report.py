#!/usr/bin/env python3
"""The applications table of scripts/bench.sh --apps, from its apps.tsv
(scripts/bench-apps.sh): per fio job, the median of each implementation's
rounds, and the ratios of ours to NVMe/TCP and to the kernel's siw taken
round by round (the implementations take turns in each round), with the
goal of the job and whether the median ratio meets it. The events per
QD1 I/O (profile-apps-hops-IMPL.txt beside apps.tsv) follow.

usage: bench-apps-report.py APPS.tsv [META]"""
import csv
import os
import statistics
import sys

# job: (label, figure, goals [(peer, ratio)])
# figure: "lat" (mean latency, lower is better) or "iops" / "mib"
JOBS = {
    "rr4k_qd1": ("4k random read, QD1", "lat", [("tcp", 1.0)]),
    "rw4k_qd1": ("4k random write, QD1", "lat", [("tcp", 1.0)]),
    "rr4k_qd32": ("4k random read, QD32", "iops", [("tcp", 1.5), ("ref", 1.5)]),
    "rw4k_qd32": ("4k random write, QD32", "iops", [("tcp", 1.5), ("ref", 1.5)]),
    "sr128k_qd8": ("128k sequential read, QD8", "mib", [("tcp", 1.0)]),
    "sw128k_qd8": ("128k sequential write, QD8", "mib", [("tcp", 1.0)]),
}
COL = {"lat": "lat_mean_us", "iops": "iops", "mib": "mib_s"}
UNIT = {"lat": "us", "iops": "IOPS", "mib": "MiB/s"}
NAMES = {"ours": "ours", "ref": "kernel's siw", "tcp": "NVMe/TCP"}


def main():
    path = sys.argv[1]
    meta = {}
    if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
        with open(sys.argv[2]) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                meta[k] = v
    rows = {}
    bad = []
    with open(path) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["status"] != "ok":
                bad.append(f"{r['impl']} round {r['round']} {r['job']}")
                continue
            rows.setdefault(r["job"], {}).setdefault(r["impl"], {})[
                int(r["round"])] = r
    print(f"### NVMe over Fabrics: nvme-rdma over ours and the kernel's siw "
          f"against NVMe/TCP, one nvmet target (null_blk) in one guest")
    print()
    if meta:
        print(f"Run {meta.get('date', '?')}, commit {meta.get('commit', '?')}, "
              f"kernel {meta.get('kernel', '?')}, {meta.get('accel', '?')}; "
              f"fio libaio direct, rounds with the transports taking turns; "
              f"medians of the rounds, ratios round by round (range in brackets).")
        print()
    print("| fio job | figure | ours | kernel's siw | NVMe/TCP | ours / NVMe/TCP | ours / siw | goal | met |")
    print("|---|---|---|---|---|---|---|---|---|")
    met = missed = 0
    for job, (label, fig, goals) in JOBS.items():
        by = rows.get(job, {})
        col = COL[fig]
        med = {}
        for impl in ("ours", "ref", "tcp"):
            vals = [float(r[col]) for r in by.get(impl, {}).values()]
            med[impl] = statistics.median(vals) if vals else None
        cells, verdicts, goal_txt = [], [], []
        for peer in ("tcp", "ref"):
            ratios = []
            for rnd, r in by.get("ours", {}).items():
                p = by.get(peer, {}).get(rnd)
                if p and float(p[col]) > 0:
                    ratios.append(float(r[col]) / float(p[col]))
            if ratios:
                m = statistics.median(ratios)
                cells.append(f"{m:.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")
            else:
                m = None
                cells.append("-")
            for gpeer, g in goals:
                if gpeer != peer:
                    continue
                if fig == "lat":
                    goal_txt.append(f"<= {g:.1f}x {NAMES[peer]}")
                    ok = m is not None and m <= g
                else:
                    goal_txt.append(f">= {g:.1f}x {NAMES[peer]}")
                    ok = m is not None and m >= g
                verdicts.append(ok)
        for ok in verdicts:
            met += ok
            missed += not ok
        fmt = (lambda v: "-" if v is None else
               (f"{v:.0f}" if fig != "mib" else f"{v:.1f}"))
        print(f"| {label} | {UNIT[fig]} | {fmt(med['ours'])} | {fmt(med['ref'])} | "
              f"{fmt(med['tcp'])} | {cells[0]} | {cells[1]} | {', '.join(goal_txt)} | "
              f"{'yes' if all(verdicts) else 'no'} |")
    print()
    print(f"Goals met: {met} of {met + missed}.")
    if bad:
        print(f"Failed runs (left out): {', '.join(bad)}.")
    d = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    pre = base[:-len("apps.tsv")] if base.endswith("apps.tsv") else ""
    hops = []
    for impl in ("ours", "ref", "tcp"):
        for cand in (f"{pre}profile-apps-hops-{impl}.txt",
                     f"profile-apps-hops-{impl}.txt"):
            h = os.path.join(d, cand)
            if os.path.exists(h):
                with open(h) as f:
                    lines = [x.rstrip() for x in f if not x.startswith("#")]
                if lines:
                    hops.append((impl, lines[0].strip()))
                break
    if hops:
        print()
        print("Events per 4k QD1 read (host and target together, perf record -a):")
        print()
        for impl, line in hops:
            print(f"- {NAMES[impl]}: {line}")


if __name__ == "__main__":
    main()
