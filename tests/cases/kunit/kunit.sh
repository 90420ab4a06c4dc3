#!/usr/bin/env bash
# KUnit suites of the protocol logic (tests/kunit/siw_kunit_*.c): load
# siw.ko and siw_kunit.ko, read the KTAP results from debugfs. The suites
# and their cases are taken from the sources (each "struct kunit_suite"
# with its .name and the KUNIT_CASE* entries of its .test_cases array), not
# from the results: every suite must report, every case of it must report
# "ok". A case that reports "# SKIP" fails unless tests/cases/kunit/
# allowed-skips lists it with a reason. Every KTAP test case is reported to
# the runner as its own result (@@SUBTEST).
# Needs a kernel with CONFIG_KUNIT, built in or as a module (the debug
# kernel: =y); Debian's kernels are built without it.
# timeout: 120
# timeout-debug: 600
source "$(dirname "$0")/../../lib/lib.sh"

# kunit_plan FILE...: "suite case" per case the sources define
kunit_plan() {
	awk '
		# static struct kunit_case ARR[] = { KUNIT_CASE(fn), ... };
		/struct kunit_case [a-zA-Z0-9_]+\[\]/ {
			arr = $0; sub(/.*struct kunit_case /, "", arr); sub(/\[.*/, "", arr); inarr = 1
		}
		inarr {
			l = $0
			while (match(l, /KUNIT_CASE[A-Z_]*\([ \t]*[a-zA-Z0-9_]+/)) {
				c = substr(l, RSTART, RLENGTH); sub(/.*\([ \t]*/, "", c)
				cases[arr] = cases[arr] " " c
				l = substr(l, RSTART + RLENGTH)
			}
			if ($0 ~ /};/) inarr = 0
		}
		/struct kunit_suite [a-zA-Z0-9_]+ *=/ { insuite = 1; name = ""; tc = "" }
		insuite && /\.name *=/ { name = $0; sub(/[^"]*"/, "", name); sub(/".*/, "", name) }
		insuite && /\.test_cases *=/ { tc = $0; sub(/.*= */, "", tc); sub(/[,; ].*/, "", tc) }
		insuite && /};/ { insuite = 0; suites[++ns] = name; arrof[ns] = tc }
		END {
			for (i = 1; i <= ns; i++) {
				if (suites[i] == "" || cases[arrof[i]] == "") { print "BAD " i " " suites[i] " " arrof[i]; continue }
				n = split(cases[arrof[i]], cs, " ")
				for (j = 1; j <= n; j++) print suites[i], cs[j]
			}
		}' "$@"
}
# kunit_check PLAN RESULTS_DIR SKIPS_FILE: one @@SUBTEST line per planned
# case, the verdict lines; returns 1 if anything is missing, failed or
# skipped without a listed reason
kunit_check() {
	local plan=$1 dir=$2 allow=$3 suite c line res bad=0 total=0 st reason
	declare -A seen=()
	while read -r suite c; do
		[[ $suite == BAD ]] && { echo "FAIL - tests/kunit: suite #$c has no name or no KUNIT_CASE entries"; bad=1; continue; }
		res=$dir/$suite/results
		if [[ -z ${seen[$suite]:-} ]]; then
			seen[$suite]=1
			if [[ ! -r $res ]]; then
				echo "FAIL - suite $suite (in tests/kunit) reported nothing: no $res"
			else
				cat "$res"
			fi
		fi
		total=$((total + 1))
		line=
		[[ -r $res ]] && line=$(grep -E "^[[:space:]]*(not )?ok [0-9]+ $c( |$)" "$res" | head -n1 || true)
		if [[ -z $line ]]; then
			st=FAIL reason="did not report"
		elif [[ $line =~ ^[[:space:]]*not\ ok ]]; then
			st=FAIL reason="failed"
		elif [[ $line =~ \#[[:space:]]*SKIP[[:space:]]*(.*)$ ]]; then
			reason=${BASH_REMATCH[1]}
			local why
			why=$(awk -v k="$suite.$c" '$1 == k { $1 = ""; sub(/^ +/, ""); print; exit }' "$allow" 2>/dev/null)
			if [[ -n $why ]]; then
				st=SKIP reason="skipped ($reason), allowed: $why"
			else
				st=FAIL reason="skipped ($reason), not listed in $(basename "$allow") with a reason"
			fi
		else
			st=PASS reason=
		fi
		echo "@@SUBTEST $st $suite.$c${reason:+ $reason}"
		[[ $st == FAIL ]] && bad=$((bad + 1))
	done <"$plan"
	((total > 0)) || { echo "FAIL - no KUnit case found in the sources"; return 1; }
	KUNIT_TOTAL=$total KUNIT_BAD=$bad
	((bad == 0))
}

kunit_cfg=$(sed -n 's/^CONFIG_KUNIT=//p' "/boot/config-$(uname -r)" 2>/dev/null)
[[ $kunit_cfg == [ym] ]] ||
	skip "kernel $(uname -r) is built without CONFIG_KUNIT"
ko=$SIW_TOP/build/$(uname -r)/siw_kunit.ko
[[ -e $ko ]] || fail "$ko was not built (tests/kunit)"
plan=$(mktemp)
on_exit "rm -f $plan"
kunit_plan "$SIW_TOP"/tests/kunit/*.c >"$plan"
info "suites in tests/kunit: $(awk '{ print $1 }' "$plan" | uniq | tr '\n' ' ')($(grep -vc '^BAD ' "$plan") cases)"

siw_install
modprobe siw
# KUnit as a module (=m) must be there before a suite's module loads
[[ $kunit_cfg == y ]] || modprobe kunit || fail "CONFIG_KUNIT=m but modprobe kunit failed"
insmod "$ko"
on_exit rmmod siw_kunit

KUNIT_TOTAL=0 KUNIT_BAD=0
kunit_check "$plan" /sys/kernel/debug/kunit "$SIW_TOP/tests/cases/kunit/allowed-skips" ||
	fail "$KUNIT_BAD of $KUNIT_TOTAL KUnit cases did not pass (missing, failed or skipped)"
echo "KUnit: $KUNIT_TOTAL cases passed"
