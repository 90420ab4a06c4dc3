#!/usr/bin/env bash
# Harness self-test: srv_cli_pt (tests/lib/caselib.sh) repeats a perftest
# run whose TSC calibration missed, and only such a run. Over siw between
# the two network namespaces, with wrappers around the real ib_write_bw.
# timeout: 240
# timeout-debug: 600
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd ib_write_bw rdma ss
m=$(dmesg_mark)
rdev_netns
# A wrapper runs the real ib_write_bw and, on its first call only, fails
# after it the way perftest does then (its messages, exit 1): the run must
# be repeated once and then pass. One failing after the transfer for
# another reason (exit 3) must not be repeated.
mkwrap() { # FILE RC MESSAGE...: wrapper failing with RC after its first run
	local f=$1 rc=$2; shift 2
	{
		echo '#!/bin/bash'
		echo 'ib_write_bw "$@" || exit'
		echo "[[ -e $f.done ]] && exit 0"
		echo "touch $f.done"
		printf 'echo %q\n' "$@"
		echo "exit $rc"
	} >"$f"
	chmod +x "$f"
}
mkwrap "$TMPD/bw_miss" 1 'Correlation coefficient r^2: 0.81381 < 0.9' "Can't produce a report"
mkwrap "$TMPD/bw_fail" 3 'some other failure'
srv_cli_pt 120 ptretry 18600 "ib_write_bw -d $RDEV2 -R -p 18600 -n 50 -s 4096" \
	"$TMPD/bw_miss -d $RDEV1 -R -p 18600 -n 50 -s 4096 $H2_IP"
((PT_RUNS == 2)) || fail "srv_cli_pt took $PT_RUNS run(s) where the first missed its calibration (2 expected)"
((CLI_RC == 0 && SRV_RC == 0)) || fail "repeated ib_write_bw: client rc $CLI_RC, server rc $SRV_RC"
grep -qE '^ *4096 +50 ' "$TMPD/ptretry.cli" || fail "repeated ib_write_bw printed no result line"
srv_cli_pt 120 ptfail 18601 "ib_write_bw -d $RDEV2 -R -p 18601 -n 50 -s 4096" \
	"$TMPD/bw_fail -d $RDEV1 -R -p 18601 -n 50 -s 4096 $H2_IP"
((PT_RUNS == 1)) || fail "srv_cli_pt repeated a run that failed for another reason ($PT_RUNS runs)"
((CLI_RC == 3)) || fail "the failing wrapper's run: client rc $CLI_RC, expected 3"
dmesg_problems_since "$m"
echo "25-pt-repeat passed"
