#!/usr/bin/env bash
# Scan guest console logs / dmesg dumps for kernel problem reports.
#   scripts/logscan.sh FILE...   -> prints "FILE:LINE: text" per hit (max 20
#                                   per file), exit 1 if any hit, 0 if clean.
# Only kernel lines are considered (printk timestamp "[  12.345678]"), plus
# the kmemleak report lines that vm-guest-init.sh prints with the prefix
# "kmemleak-report: ", so user-space output cannot cause false alarms.
set -uo pipefail
pat='Oops|BUG:|WARNING:|KASAN|UBSAN|possible circular locking|inconsistent lock state|possible recursive locking|suspicious RCU usage|new suspected memory leak|unreferenced object|hung_task|blocked for more than|general protection fault|Kernel panic|Call Trace:'
hits=0
for f in "$@"; do
	[[ -r $f ]] || continue
	out=$(awk -v pat="$pat" '
		/\[ *[0-9]+\.[0-9]+\]/ || /^kmemleak-report: / {
			if ($0 ~ pat) { n++; if (n <= 20) printf "%s:%d: %s\n", FILENAME, FNR, $0 }
		}
		END { if (n > 20) printf "%s: ... %d more\n", FILENAME, n - 20; exit (n > 0) }' "$f" | tr -d '\r')
	st=${PIPESTATUS[0]}
	if [[ $st -ne 0 ]]; then
		hits=1
		printf '%s\n' "$out"
	fi
done
exit $hits
