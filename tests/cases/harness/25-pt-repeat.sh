#!/usr/bin/env bash
# Harness self-test: srv_cli_pt (tests/lib/caselib.sh) repeats a perftest
# run whose TSC calibration missed, and one whose client failed its first
# connection while the module logged nothing else (perftest's race, whose
# server waits for ever: it must be stopped at once), and no other run.
# Over siw between the two network namespaces, with wrappers around the
# real ib_write_bw.
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
# A wrapper whose client fails the way perftest's does when its first
# connection is refused (before it connects, SIGSEGV's exit code): on its
# first call only (ONCE=1) or on every call; KLOG: a line it logs as the
# module would first (something the module saw, so no repeat)
mknoconn() { # FILE ONCE [KLOG]
	local f=$1 once=$2 klog=${3:-}
	{
		echo '#!/bin/bash'
		((once)) && echo "[[ -e $f.done ]] && exec ib_write_bw \"\$@\""
		echo "touch $f.done"
		[[ -n $klog ]] && printf 'echo %q >/dev/kmsg\n' "$klog"
		echo "echo 'RDMA CM event error:' >&2"
		echo "echo 'Event: RDMA_CM_EVENT_REJECTED; error: -111.' >&2"
		echo 'exit 139'
	} >"$f"
	chmod +x "$f"
}
mknoconn "$TMPD/bw_noconn" 1
mknoconn "$TMPD/bw_noconn_always" 0
mknoconn "$TMPD/bw_noconn_klog" 1 "$RDEV1: planted line of harness/25-pt-repeat"
srv_cli_pt 120 ptretry 18600 "ib_write_bw -d $RDEV2 -R -p 18600 -n 50 -s 4096" \
	"$TMPD/bw_miss -d $RDEV1 -R -p 18600 -n 50 -s 4096 $H2_IP"
# a real first-connection failure (perftest's race) may add a repeat to
# any of these: PT_NOCONN_RUNS counts it
((PT_RUNS - PT_NOCONN_RUNS == 2)) || fail "srv_cli_pt took $PT_RUNS run(s) ($PT_NOCONN_RUNS for a failed first connection) where the first missed its calibration (2 expected)"
((CLI_RC == 0 && SRV_RC == 0)) || fail "repeated ib_write_bw: client rc $CLI_RC, server rc $SRV_RC"
grep -qE '^ *4096 +50 ' "$TMPD/ptretry.cli" || fail "repeated ib_write_bw printed no result line"
srv_cli_pt 120 ptfail 18601 "ib_write_bw -d $RDEV2 -R -p 18601 -n 50 -s 4096" \
	"$TMPD/bw_fail -d $RDEV1 -R -p 18601 -n 50 -s 4096 $H2_IP"
((PT_RUNS - PT_NOCONN_RUNS == 1)) || fail "srv_cli_pt repeated a run that failed for another reason ($PT_RUNS runs)"
((CLI_RC == 3)) || fail "the failing wrapper's run: client rc $CLI_RC, expected 3"
pt_noconn() { # NAME PORT WRAPPER: srv_cli_pt with a planted first-connection failure
	srv_cli_pt 120 "$1" "$2" "ib_write_bw -d $RDEV2 -R -p $2 -n 50 -s 4096" \
		"$3 -d $RDEV1 -R -p $2 -n 50 -s 4096 $H2_IP"
}
pt_noconn ptnoconn 18602 "$TMPD/bw_noconn"
# (its repeat runs the real client, which may meet the real race too)
((PT_NOCONN_RUNS >= 1 && PT_RUNS == PT_NOCONN_RUNS + 1)) ||
	fail "a first connection that failed once: $PT_RUNS run(s), $PT_NOCONN_RUNS repeats for it (at least one repeat, one run more than repeats, expected)"
((CLI_RC == 0 && SRV_RC == 0)) || fail "the repeat after a failed first connection: client rc $CLI_RC, server rc $SRV_RC"
grep -qE '^ *4096 +50 ' "$TMPD/ptnoconn.cli" || fail "the repeat after a failed first connection printed no result line"
pt_noconn ptnoconn2 18603 "$TMPD/bw_noconn_always"
((PT_RUNS == 3 && PT_NOCONN_RUNS == 2 && CLI_RC == 139 && SRV_STOPPED == 1)) ||
	fail "a first connection that always failed: $PT_RUNS run(s), $PT_NOCONN_RUNS repeats for it, client rc $CLI_RC, server stopped $SRV_STOPPED (3, 2, 139, 1 expected)"
pt_noconn ptnoconn3 18604 "$TMPD/bw_noconn_klog"
((PT_RUNS == 1 && CLI_RC == 139 && SRV_STOPPED == 1)) ||
	fail "a failed first connection with another module line logged was repeated or its server not stopped: $PT_RUNS run(s), client rc $CLI_RC, stopped $SRV_STOPPED"
dmesg_problems_since "$m"
echo "25-pt-repeat passed"
