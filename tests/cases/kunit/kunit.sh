#!/usr/bin/env bash
# KUnit suites of the protocol logic (tests/kunit/siw_kunit_*.c): load
# siw.ko and siw_kunit.ko, read the KTAP results from debugfs. Every KTAP
# test case is reported to the runner as its own result (@@SUBTEST).
# Needs a kernel with CONFIG_KUNIT (the debug kernel); the stock Debian
# kernels are built without it.
# timeout: 120
# timeout-debug: 600
source "$(dirname "$0")/../../lib/lib.sh"

grep -qx 'CONFIG_KUNIT=y' "/boot/config-$(uname -r)" 2>/dev/null ||
	skip "kernel $(uname -r) is built without CONFIG_KUNIT"
ko=$SIW_TOP/build/$(uname -r)/siw_kunit.ko
[[ -e $ko ]] || fail "$ko was not built (tests/kunit)"

siw_install
modprobe siw
insmod "$ko"
on_exit rmmod siw_kunit

total=0 bad=0
for suite in siw_mpa_framing siw_ddp_rdmap_headers siw_zcopy_release siw_rx_parser \
	siw_qp_state siw_cm_endpoint; do
	res=/sys/kernel/debug/kunit/$suite/results
	[[ -r $res ]] || fail "no KUnit results for suite $suite"
	cat "$res"
	# KTAP test case lines: "[indent](not )ok N siw_test_..."
	while read -r st n name; do
		total=$((total + 1))
		if [[ $st == ok ]]; then
			echo "@@SUBTEST PASS $suite.$name"
		else
			bad=$((bad + 1))
			echo "@@SUBTEST FAIL $suite.$name"
		fi
	done < <(sed -n 's/^ *\(ok\|not ok\) \([0-9]*\) \(siw_test_[a-z0-9_]*\).*/\1 \2 \3/p' "$res" |
		sed 's/^not ok/not_ok/')
done
((total > 0)) || fail "KUnit reported no test cases"
((bad == 0)) || fail "$bad of $total KUnit cases failed"
echo "KUnit: $total cases passed"
