#!/usr/bin/env bash
# Benchmark (not part of the test suite): ours vs the kernel's siw vs rxe vs
# TCP, in ONE boot of the stock kernel under qemu (TCG), between two network
# namespaces joined by a veth pair. Asserts nothing.
#
# usage: scripts/bench.sh [--quick] [--profile] [--reps N] [--scale F]
#                         [--impls "tcp ours ourscrc ref rxe"]  (or ourszc)
#                         [--phases "table sweep cm mem lat"]  (or qps)
#                         [--docs] [--table-only RAW.tsv] [--base REV]
#   --quick       development run: 1 rep, scale 0.3, fewer sweep/QP points,
#                 50 connections (about 8 min)
#   --profile     only the profile phase (perf record during ib_write/read/
#                 send_bw of ours and iperf3, the latency and connection
#                 profiles of ours and the reference siw): about 7 min
#   --hops        only the hops phase: scheduler, work queue, softirq, IPI
#                 and system call events per connection, per 64 B round
#                 trip and per 64 B message of a perftest stream, ours and
#                 the reference siw (rxe: the stream) (build/bench-hops/)
#   --proflat     only the proflat phase: CPU per 64 B write, send and read
#                 round trip and per connection by symbol, ours and the
#                 reference siw taking turns (3 rounds; build/bench-proflat/)
#   --apps        only the applications phase: NVMe over Fabrics to one
#                 nvmet target over ours, the kernel's siw and NVMe/TCP
#                 taking turns (fio 4k QD1/QD32, 128k QD8; 3 rounds), with
#                 the events per QD1 I/O of each (build/bench-apps/;
#                 scripts/bench-apps.sh)
#   --reps N      repetitions per main-table measurement, median reported (3)
#   --scale F     multiply the perftest iteration counts by F (1)
#   --phases P    guest phases to run (default all; see bench-guest.sh)
#   --docs        also replace the results blocks in docs/bench.md and the
#                 plots docs/bench-*.svg
#   --table-only  no build/boot: make the tables from an existing raw file
#   --base REV    also build this module at git revision REV and measure it
#                 as implementation "base" where "ours" runs (table, sweep,
#                 cm, lat), taking turns with it: an A/B of a change in one boot
#                 (e.g. --base HEAD --impls "ours base ref" --phases "sweep lat")
#   --clock C     the guest's clock source: tsc (default, also on a host
#                 whose own TSC is not trusted: scripts/vm.sh says why it
#                 then takes the HPET; a bench run is short) or hpet (the
#                 kernel's own choice under TCG, where it finds the TSC
#                 uncalibrated). Every HPET read is an emulated device
#                 access in qemu (under its global lock): TCP's timestamps,
#                 timers and every timed tool pay it, and latency drifted
#                 by up to 1.5x between runs of one boot with it.
# Steps: scripts/build.sh KVER, scripts/build-ref.sh KVER, make -C
# tests/tools, scripts/vm.sh --kernel stock scripts/bench-guest.sh. Output
# in build/bench/: raw.tsv (one row per run), mem.tsv, profile-*.txt,
# results.md and profile.md (printed), sweep.svg and qps.svg (gnuplot),
# console.log, guest.log. See docs/bench.md.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
reps=3 scale=1 impls="tcp ours ourscrc ref rxe" docs=0 table_only= base=
phases="table sweep cm mem lat" quick=0 clock=tsc
while (($#)); do
	case $1 in
	--quick) quick=1 reps=1 scale=0.3; shift ;;
	--profile) phases=profile impls="tcp ours ref"; shift ;;
	--hops) phases=hops impls="ours ref rxe"; shift ;;
	--proflat) phases=proflat impls="ours ref"; shift ;;
	--apps) phases=apps impls="ours ref tcp"; shift ;;
	--phases) phases=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--impls) impls=$2; shift 2 ;;
	--docs) docs=1; shift ;;
	--base) base=$2; shift 2 ;;
	--table-only) table_only=$2; shift 2 ;;
	--clock) clock=$2; shift 2 ;;
	-h | --help) sed -n '2,42p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
case $clock in
tsc) clock_args="clocksource=tsc tsc=reliable" ;;	# even where vm.sh would not
hpet) clock_args="clocksource=hpet" ;;
*) echo "bench.sh: --clock tsc or hpet" >&2; exit 2 ;;
esac
# No address-space randomisation in the guest (SIW_BENCH_ASLR=1 keeps it):
# qemu TCG matches a translated block by its virtual address too, so with
# randomised mappings every new process is translated afresh, qemu's code
# cache fills every few minutes, and after its first flush about half the
# bandwidth runs were slow; with norandmaps 1 of 70 was, and no flush came
# (docs/results/2026-12-06-slow-mode-tb-flush.txt). It applies to every
# implementation and to TCP alike.
vm_append=$clock_args
[[ ${SIW_BENCH_ASLR:-0} == 1 ]] || vm_append+="${vm_append:+ }norandmaps"
out=$top/build/bench
[[ $phases == profile ]] && out=$top/build/bench-profile
[[ $phases == hops ]] && out=$top/build/bench-hops
[[ $phases == proflat ]] && out=$top/build/bench-proflat
[[ $phases == apps ]] && out=$top/build/bench-apps
mkdir -p "$out"
kver=$(scripts/kernels.sh kver stock)
raw=$out/raw.tsv meta=$out/meta.txt

if [[ -z $table_only ]]; then
	echo "== build ours for $kver" >&2
	scripts/build.sh "$kver" >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log"; echo "bench.sh: build failed" >&2; exit 1; }
	echo "== reference siw for $kver" >&2
	scripts/build-ref.sh "$kver" >/dev/null
	make -C tests/tools -j2 >"$out/tools.log" 2>&1 || { tail -n 20 "$out/tools.log"; echo "bench.sh: tools build failed" >&2; exit 1; }
	base_ko=
	if [[ -n $base ]]; then
		echo "== build the module at $base for $kver (implementation base)" >&2
		bsrc=$out/base-src
		rm -rf "$bsrc" && mkdir -p "$bsrc"
		git archive "$base" | tar -x -C "$bsrc" || { echo "bench.sh: git archive $base failed" >&2; exit 1; }
		"$bsrc/scripts/build.sh" "$kver" >"$out/build-base.log" 2>&1 || { tail -n 30 "$out/build-base.log"; echo "bench.sh: build of $base failed" >&2; exit 1; }
		base_ko=$bsrc/build/$kver/siw.ko
		[[ $impls == *base* ]] || impls="$impls base"
	fi
	{
		echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
		echo "kernel=$kver"
		echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- '*.c' '*.h' 2>/dev/null || echo '+dirty')"
		echo "host_load=$(cut -d' ' -f1-3 /proc/loadavg)"
		echo "host_cpus=$(nproc)"
		echo "accel=$([[ -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo && echo kvm || echo tcg)"
		echo "reps=$reps scale=$scale quick=$quick"
		echo "clock=$clock"
		echo "aslr=${SIW_BENCH_ASLR:-0}"
		echo "sweep_mib=$( ((quick)) && echo 4 || echo 32)"
		echo "phases=${phases// /,} impls=${impls// /,}"
		[[ -z $base ]] || echo "base=$(git rev-parse --short "$base")"
		echo "pin=${SIW_BENCH_PIN:-0}"
	} >"$meta"
	echo "== boot $kver and measure (reps $reps, console log $out/console.log)" >&2
	t0=$SECONDS
	rc=0
	# the host's own speed during each run (scripts/bench-hostwatch.py)
	rm -f "$out/console.log" "$out/host.tsv"
	python3 scripts/bench-hostwatch.py "$out/console.log" "$out/host.tsv" $$ &
	watch_pid=$!
	SIW_BENCH_RAW=$raw SIW_BENCH_OUT=$out SIW_BENCH_REPS=$reps SIW_BENCH_SCALE=$scale SIW_BENCH_IMPLS=$impls \
		SIW_BENCH_PHASES=$phases SIW_BENCH_QUICK=$quick SIW_VM_APPEND=$vm_append SIW_BENCH_BASE_KO=$base_ko \
		scripts/vm.sh --kernel stock --timeout 2700 -q --log "$out/console.log" scripts/bench-guest.sh || rc=$?
	echo "wall=$((SECONDS - t0))s vm_rc=$rc" >>"$meta"
	kill "$watch_pid" 2>/dev/null || true
	wait "$watch_pid" 2>/dev/null || true
	grep -a '^bench: ' "$out/console.log" | tr -d '\r' >"$out/guest.log" || true
	((rc == 0)) || { echo "bench.sh: the guest run failed (vm.sh rc=$rc); see $out/console.log" >&2; tail -n 20 "$out/guest.log" >&2; }
	[[ -s $raw ]] || { echo "bench.sh: no results ($raw)" >&2; exit 1; }
else
	raw=$table_only
	rm -f "$out/host.tsv"
	# a committed run keeps its meta and memory rows beside it
	# (docs/bench/DATE-COMMIT.meta, -mem.tsv): the tables need both
	if [[ -e ${raw%.tsv}.meta ]]; then
		cp "${raw%.tsv}.meta" "$meta"
		rm -f "$out/mem.tsv"
		[[ ! -e ${raw%.tsv}-mem.tsv ]] || cp "${raw%.tsv}-mem.tsv" "$out/mem.tsv"
		[[ ! -e ${raw%.tsv}-host.tsv ]] || cp "${raw%.tsv}-host.tsv" "$out/host.tsv"
	fi
	[[ -e $meta ]] || : >"$meta"
fi

if [[ $phases == apps ]]; then
	# the applications' rows (scripts/bench-apps.sh) beside the raw file
	apps=$out/apps.tsv
	[[ -z $table_only ]] || apps=${raw%.tsv}-apps.tsv
	python3 scripts/bench-apps-report.py "$apps" "$meta" >"$out/results.md"
	cat "$out/results.md"
	exit 0
fi
python3 scripts/bench-report.py "$raw" "$meta" "$out"
rm -f "$out/sweep.svg" "$out/qps.svg"
if command -v gnuplot >/dev/null; then
	gnuplot -e "dir='$out'" scripts/bench-plot.gnuplot 2>"$out/gnuplot.log" ||
		{ echo "bench.sh: gnuplot failed (see $out/gnuplot.log)" >&2; }
else
	echo "bench.sh: no gnuplot (scripts/deps.sh installs gnuplot-nox): no plots" >&2
fi
cat "$out/results.md"
[[ -s $out/profile.md && $phases == *profile* ]] && cat "$out/profile.md"
if ((docs)); then
	d=docs/bench.md
	# replace the block between <!-- NAME:begin --> and <!-- NAME:end --> by FILE
	put() { # NAME FILE
		grep -q "<!-- $1:begin -->" "$d" || { echo "bench.sh: no '<!-- $1:begin -->' marker in $d" >&2; return 1; }
		python3 - "$d" "$1" "$2" <<'PY'
import sys
d, n, r = sys.argv[1:4]
s = open(d).read()
a, b = s.index(f'<!-- {n}:begin -->'), s.index(f'<!-- {n}:end -->')
s = s[:a] + f'<!-- {n}:begin -->\n' + open(r).read() + s[b:]
open(d, 'w').write(s)
PY
	}
	# a profile, proflat or hops run leaves the tables alone
	if [[ $phases != profile && $phases != proflat && $phases != hops ]]; then
		put bench "$out/results.md"
		for f in sweep qps; do [[ -s $out/$f.svg ]] && cp "$out/$f.svg" "docs/bench-$f.svg"; done
	fi
	[[ -s $out/profile.md && $phases == *profile* ]] && put profile "$out/profile.md"
	echo "bench.sh: updated $d" >&2
fi
