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
	# A kmemleak scan line ("N new suspected memory leaks") followed within
	# 30 s by the marker "siwtest: kmemleak-attributed-to-reference" is not
	# counted: tests/cases/pair-interop printed that report, labelled, on
	# a guest running only the kernel's own siw (see io_leak_check there).
	out=$(awk -v pat="$pat" '
		function ts(l) { if (match(l, /\[ *[0-9]+\.[0-9]+\]/)) return substr(l, RSTART + 1, RLENGTH - 2) + 0; return -1 }
		/siwtest: kmemleak-attributed-to-reference/ {
			t = ts($0)
			for (i = 1; i <= n; i++)
				if (hit[i] != "" && hit[i] ~ /new suspected memory leak/ && t - at[i] >= 0 && t - at[i] <= 30)
					hit[i] = ""
			next
		}
		/\[ *[0-9]+\.[0-9]+\]/ || /^kmemleak-report: / {
			if ($0 ~ pat) { n++; at[n] = ts($0); hit[n] = sprintf("%s:%d: %s", FILENAME, FNR, $0) }
		}
		END {
			for (i = 1; i <= n; i++) if (hit[i] != "") { k++; if (k <= 20) print hit[i] }
			if (k > 20) printf "%s: ... %d more\n", FILENAME, k - 20
			exit (k > 0)
		}' "$f" | tr -d '\r')
	st=${PIPESTATUS[0]}
	if [[ $st -ne 0 ]]; then
		hits=1
		printf '%s\n' "$out"
	fi
done
exit $hits
