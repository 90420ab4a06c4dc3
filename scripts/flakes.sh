#!/usr/bin/env bash
# flakes.sh N [tests/run arguments]: run tests/run N times in a row (the
# same arguments each time, e.g. `--kernel stock --group harness`) and
# count, per case, how often it failed and how often it needed a retry
# (the NOTICE lines above a run's summary). Every run's whole output is kept
# in build/flakes/<start>/run-<i>.log; the table (TSV: case, runs, failed,
# notices) goes to stdout and build/flakes/<start>/table.tsv. A failure here
# is a finding to explain (docs/testing.md, flakes), never to waive.
# Exit: 0 when no run failed, 1 otherwise.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=${1:?usage: scripts/flakes.sh N [tests/run arguments]}
shift
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "flakes.sh: N must be a positive number" >&2; exit 2; }
out=$top/build/flakes/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
echo "# flakes.sh: $n runs of tests/run $*; logs in $out"
bad=0
for i in $(seq "$n"); do
	t0=$SECONDS
	"$top/tests/run" "$@" >"$out/run-$i.log" 2>&1
	rc=$?
	((rc == 0)) || bad=$((bad + 1))
	echo "# run $i: rc $rc, $((SECONDS - t0)) s, $(tail -n 1 "$out/run-$i.log")"
done
# per case: "ok"/"not ok" verdict lines (skips are neither pass nor fail
# here), NOTICE lines name the case as KVER/GROUP/CASE: at their start
awk -v runs="$n" '
	/^(not )?ok [0-9]+ - / && !/# SKIP/ {
		fail = ($1 == "not"); line = $0
		sub(/^(not )?ok [0-9]+ - /, "", line); sub(/ #.*/, "", line)
		seen[line]++; if (fail) failed[line]++
	}
	/^# NOTICE: / {
		line = $0; sub(/^# NOTICE: /, "", line); sub(/:.*/, "", line)
		if (line !~ /^env overrides/) notice[line]++
	}
	END {
		for (c in seen) printf "%s\t%d\t%d\t%d\n", c, seen[c], failed[c] + 0, notice[c] + 0
		for (c in notice) if (!(c in seen)) printf "%s\t%d\t0\t%d\n", c, runs, notice[c]
	}' "$out"/run-*.log | sort | { printf 'case\truns\tfailed\tnotices\n'; cat; } >"$out/table.tsv"
cat "$out/table.tsv"
echo "# $n runs, $bad failed; cases that failed or retried at least once:"
awk -F'\t' 'NR > 1 && ($3 > 0 || $4 > 0)' "$out/table.tsv" | sed 's/^/#   /'
((bad == 0))
