#!/usr/bin/env python3
"""One fio JSON result -> one row of the apps phase's apps.tsv
(scripts/bench-apps.sh): impl round job status iops mib_s lat_mean_us
clat_p50_us cpu_total_s cpu_kernel_s wall_s. The CPU figures are the
guest's /proc/stat busy and kernel jiffies before and after the job."""
import json
import sys

impl, rnd, name, rc = sys.argv[1:5]
c0, c1 = [list(map(int, a.split())) for a in sys.argv[5:7]]
t0, t1, hz = float(sys.argv[7]), float(sys.argv[8]), int(sys.argv[9])
iops = mibs = lat = p50 = 0.0
status = "fail"
try:
    with open(sys.argv[10]) as f:
        job = json.load(f)["jobs"][0]
    d = job["read"] if job["read"]["io_bytes"] else job["write"]
    iops, mibs = d["iops"], d["bw_bytes"] / 1048576
    lat = d["lat_ns"]["mean"] / 1000
    p50 = d["clat_ns"].get("percentile", {}).get("50.000000", 0) / 1000
    if rc == "0" and not job["error"] and d["io_bytes"]:
        status = "ok"
except (OSError, ValueError, KeyError, IndexError) as e:
    print(f"bench-apps-row: {name}: {e}", file=sys.stderr)
print(f"{impl}\t{rnd}\t{name}\t{status}\t{iops:.0f}\t{mibs:.1f}\t{lat:.1f}\t"
      f"{p50:.1f}\t{(c1[0] - c0[0]) / hz:.2f}\t{(c1[1] - c0[1]) / hz:.2f}\t"
      f"{t1 - t0:.1f}")
