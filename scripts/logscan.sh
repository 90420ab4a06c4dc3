#!/usr/bin/env bash
# Scan guest console logs / dmesg dumps for kernel problem reports.
#   scripts/logscan.sh FILE...   -> prints "FILE:LINE: text" per hit (max 20
#                                   per file), exit 1 if any hit, 0 if clean.
#   scripts/logscan.sh --patterns -> the pattern list as one ERE
# The patterns: scripts/logscan.patterns (the one list every scan uses).
# Only kernel lines are considered (printk timestamp "[  12.345678]"), plus
# the kmemleak report lines that vm-guest-init.sh prints with the prefix
# "kmemleak-report: ", so user-space output cannot cause false alarms.
#
# One exception, proved object by object: a kmemleak line "N new suspected
# memory leaks" is not counted when, within 120 s after it, the guest logged
# N lines "siwtest: kmemleak-waived ADDR KIND FUNCTION" (tests/lib/lib.sh
# kmemleak_attribute writes them only for an object whose backtrace holds
# FUNCTION: KIND reference = a function of the kernel's own siw that ours
# does not have; KIND selftest = siw_test_leak, built only with
# SIW_TEST_LEAK). A waiver line of any other form counts as a hit.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
pat=$(sed -e '/^#/d' -e '/^$/d' "$here/logscan.patterns" | paste -sd'|')
[[ -n $pat ]] || { echo "logscan.sh: no patterns in $here/logscan.patterns" >&2; exit 2; }
if [[ ${1:-} == --patterns ]]; then
	printf '%s\n' "$pat"
	exit 0
fi
files=()
for f in "$@"; do [[ -r $f ]] && files+=("$f"); done
((${#files[@]})) || exit 0
# one awk for all files (process starts are slow in a TCG debug guest);
# the pattern through the environment: awk -v would take its backslashes
# as escape sequences (gawk turns "\(" into "(" and the ERE breaks)
LOGSCAN_PAT=$pat awk '
	function ts(l) { if (match(l, /\[ *[0-9]+\.[0-9]+\]/)) return substr(l, RSTART + 1, RLENGTH - 2) + 0; return -1 }
	function add(l) { n++; at[n] = ts(l); left[n] = 0; hit[n] = sprintf("%s:%d: %s", file, FNR, l) }
	function flush(  i, k) {
		k = 0
		for (i = 1; i <= n; i++) if (hit[i] != "") { k++; if (k <= 20) print hit[i] }
		if (k > 20) printf "%s: ... %d more\n", file, k - 20
		if (k) bad = 1
		n = 0
	}
	BEGIN { pat = ENVIRON["LOGSCAN_PAT"] }
	FNR == 1 { flush(); file = FILENAME }
	{ sub(/\r$/, "") }
	/siwtest: kmemleak-waived / {
		t = ts($0)
		s = $0
		sub(/.*siwtest: kmemleak-waived /, "", s)
		split(s, w, " ")
		if (!((w[2] == "reference" && w[3] ~ /^siw_/) || (w[2] == "selftest" && w[3] == "siw_test_leak"))) {
			add($0)
			next
		}
		for (i = 1; i <= n; i++)
			if (left[i] > 0 && t - at[i] >= 0 && t - at[i] <= 120) {
				if (--left[i] == 0)
					hit[i] = ""
				break
			}
		next
	}
	/\[ *[0-9]+\.[0-9]+\]/ || /^kmemleak-report: / {
		if ($0 ~ pat) {
			add($0)
			if (match($0, /[0-9]+ new suspected memory leak/))
				left[n] = substr($0, RSTART, RLENGTH) + 0
		}
	}
	END { flush(); exit bad }' "${files[@]}"
rc=$?
# 0 clean, 1 hits (printed); anything else: the scan itself failed, which
# must not read as a clean log
if ((rc > 1)); then
	echo "logscan.sh: the scan failed (awk exit $rc): nothing was checked in ${files[*]}"
	exit 2
fi
exit "$rc"
