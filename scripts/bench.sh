#!/usr/bin/env bash
# Benchmark (not part of the test suite): ours vs the kernel's siw vs rxe vs
# TCP, in ONE boot of the stock kernel under qemu (TCG), between two network
# namespaces joined by a veth pair.
#
# usage: scripts/bench.sh [--reps N] [--scale F] [--impls "tcp ours ourszc ref rxe"]
#                         [--docs] [--table-only RAW.tsv]
#   --reps N      repetitions per measurement, the median is reported (3)
#   --scale F     multiply the perftest iteration counts by F (1)
#   --docs        also replace the results block in docs/bench.md
#   --table-only  no build/boot: make the table from an existing raw file
# Steps: scripts/build.sh KVER, scripts/build-ref.sh KVER, scripts/vm.sh
# --kernel stock scripts/bench-guest.sh. Output: build/bench/raw.tsv (one
# row per run), build/bench/results.md (printed), console log
# build/bench/console.log. See docs/bench.md.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
reps=3 scale=1 impls="tcp ours ourszc ref rxe" docs=0 table_only=
while (($#)); do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--impls) impls=$2; shift 2 ;;
	--docs) docs=1; shift ;;
	--table-only) table_only=$2; shift 2 ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
out=$top/build/bench
mkdir -p "$out"
kver=$(scripts/kernels.sh kver stock)
raw=$out/raw.tsv meta=$out/meta.txt

if [[ -z $table_only ]]; then
	echo "== build ours for $kver" >&2
	scripts/build.sh "$kver" >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log"; echo "bench.sh: build failed" >&2; exit 1; }
	echo "== reference siw for $kver" >&2
	scripts/build-ref.sh "$kver" >/dev/null
	{
		echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
		echo "kernel=$kver"
		echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- '*.c' '*.h' 2>/dev/null || echo '+dirty')"
		echo "host_load=$(cut -d' ' -f1-3 /proc/loadavg)"
		echo "host_cpus=$(nproc)"
		echo "accel=$([[ -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo && echo kvm || echo tcg)"
		echo "reps=$reps scale=$scale"
	} >"$meta"
	echo "== boot $kver and measure (reps $reps, console log $out/console.log)" >&2
	t0=$SECONDS
	rc=0
	SIW_BENCH_RAW=$raw SIW_BENCH_REPS=$reps SIW_BENCH_SCALE=$scale SIW_BENCH_IMPLS=$impls \
		scripts/vm.sh --kernel stock --timeout 1800 -q --log "$out/console.log" scripts/bench-guest.sh || rc=$?
	echo "wall=$((SECONDS - t0))s vm_rc=$rc" >>"$meta"
	grep -a '^bench: ' "$out/console.log" | tr -d '\r' >"$out/guest.log" || true
	((rc == 0)) || { echo "bench.sh: the guest run failed (vm.sh rc=$rc); see $out/console.log" >&2; tail -n 20 "$out/guest.log" >&2; }
	[[ -s $raw ]] || { echo "bench.sh: no results ($raw)" >&2; exit 1; }
else
	raw=$table_only
	[[ -e $meta ]] || : >"$meta"
fi

python3 - "$raw" "$meta" >"$out/results.md" <<'EOF'
import sys, statistics as st
raw, metaf = sys.argv[1], sys.argv[2]
meta = {}
for l in open(metaf):
    if '=' in l:
        for kv in l.split():
            if '=' in kv:
                k, v = kv.split('=', 1); meta[k] = v
rows = [l.rstrip('\n').split('\t') for l in open(raw)]
hdr, rows = rows[0], rows[1:]
R = [dict(zip(hdr, r)) for r in rows]
def num(x):
    try:
        v = float(x)
        return v if v == v and v not in (float('inf'),) else None
    except ValueError:
        return None
def med(vals):
    vals = [v for v in vals if v is not None]
    return st.median(vals) if vals else None
def cell(impl, test, key='value'):
    rs = [r for r in R if r['impl'] == impl and r['test'] == test]
    if not rs:
        return None, ''
    ok = [r for r in rs if r['status'] == 'ok']
    v = med([num(r[key]) for r in ok])
    note = '' if len(ok) == len(rs) else f' ({len(ok)}/{len(rs)} ok)'
    if any(r['status'] == 'zero' for r in rs):
        note += ' (0.00 printed in %d)' % sum(r['status'] == 'zero' for r in rs)
    if ok and v is None:
        note = ' (inf)' if any(r[key] == 'inf' for r in ok) else note
    return v, note
def fmt(v, note='', d=1):
    return ('n/a' if v is None else f'{v:.{d}f}') + note
def ratio(a, b):
    return 'n/a' if a is None or b is None or b == 0 else f'{a / b:.2f}'
impls = ['tcp', 'ours', 'ourszc', 'ref', 'rxe']
bw = [('write_bw_64k', 'ib_write_bw 64 KiB'), ('read_bw_64k', 'ib_read_bw 64 KiB'),
      ('send_bw_1m', 'ib_send_bw 1 MiB')]
lat = [('write_lat_64', 'ib_write_lat 64 B'), ('send_lat_64', 'ib_send_lat 64 B'),
       ('read_lat_64', 'ib_read_lat 64 B')]
reps = max([int(r['rep']) for r in R] or [0])
print(f"Benchmark {meta.get('date', '?')}, kernel {meta.get('kernel', '?')} "
      f"(qemu {meta.get('accel', 'tcg').upper()}, 2 vCPUs, two netns joined by veth), "
      f"commit {meta.get('commit', '?')}; median of {reps} runs; host load at start "
      f"{meta.get('host_load', '?')} on {meta.get('host_cpus', '?')} CPUs.")
print()
print('Throughput in MiB/s (higher is better); latency in us, perftest t_typical '
      '(lower is better; ratios < 1 mean ours is faster).')
print()
print('| test | TCP (iperf3) | ours | ours zero-copy | reference siw | rxe | ours/ref | ours/rxe | ours/TCP | zero-copy/ours |')
print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
tcp, tn = cell('tcp', 'iperf3')
print(f'| TCP stream, 1 flow | {fmt(tcp, tn)} | | | | | | | | |')
for t, name in bw:
    o, on = cell('ours', t); f, fn = cell('ref', t); x, xn = cell('rxe', t); z, zn = cell('ourszc', t)
    print(f'| {name} | | {fmt(o, on)} | {fmt(z, zn)} | {fmt(f, fn)} | {fmt(x, xn)} | {ratio(o, f)} | {ratio(o, x)} | {ratio(o, tcp)} | {ratio(z, o)} |')
for t, name in lat:
    o, on = cell('ours', t); f, fn = cell('ref', t); x, xn = cell('rxe', t); z, zn = cell('ourszc', t)
    print(f'| {name} (us) | | {fmt(o, on)} | {fmt(z, zn)} | {fmt(f, fn)} | {fmt(x, xn)} | {ratio(o, f)} | {ratio(o, x)} | | {ratio(z, o)} |')
print()
print('Guest CPU time per MiB moved (ms/MiB; /proc/stat over the client run, both '
      'vCPUs, both netns; "kernel" = system+irq+softirq, "total" adds user time, '
      'which for perftest is mostly CQ busy-polling):')
print()
print('| test | TCP kernel / total | ours kernel / total | ours zero-copy kernel / total | reference kernel / total | rxe kernel / total |')
print('| --- | ---: | ---: | ---: | ---: | ---: |')
def cpu(impl, test):
    rs = [r for r in R if r['impl'] == impl and r['test'] == test and r['status'] == 'ok']
    k = med([num(r['cpu_kernel_s']) * 1000 / (float(r['bytes']) / 1048576) for r in rs if num(r['bytes'])])
    a = med([num(r['cpu_total_s']) * 1000 / (float(r['bytes']) / 1048576) for r in rs if num(r['bytes'])])
    return 'n/a' if k is None else f'{k:.1f} / {a:.1f}'
print(f"| TCP stream | {cpu('tcp', 'iperf3')} | | | | |")
for t, name in bw:
    print(f"| {name} | | {cpu('ours', t)} | {cpu('ourszc', t)} | {cpu('ref', t)} | {cpu('rxe', t)} |")
print()
avg = []
for t, name in lat:
    avg.append(f"{name}: " + ', '.join(f"{i} {fmt(cell(i, t, 'value2')[0])}" for i in ('ours', 'ourszc', 'ref', 'rxe')))
print('Latency averages (us): ' + '; '.join(avg) + '.')
fails = [r for r in R if r['status'] == 'fail']
if fails:
    print()
    print('Failed runs: ' + ', '.join(f"{r['impl']} {r['test']} rep {r['rep']}" for r in fails) + '.')
EOF
cat "$out/results.md"
if ((docs)); then
	d=docs/bench.md
	grep -q '<!-- bench:begin -->' "$d" || { echo "bench.sh: no '<!-- bench:begin -->' marker in $d" >&2; exit 1; }
	python3 - "$d" "$out/results.md" <<'EOF'
import sys
d, r = sys.argv[1], sys.argv[2]
s = open(d).read()
a, b = s.index('<!-- bench:begin -->'), s.index('<!-- bench:end -->')
s = s[:a] + '<!-- bench:begin -->\n' + open(r).read() + s[b:]
open(d, 'w').write(s)
EOF
	echo "bench.sh: updated $d" >&2
fi
