#!/usr/bin/env bash
# Error semantics (siw_datacheck --error=KIND), one connection per kind:
# bad-rkey, bad-rkey-read, oob-write, oob-read, no-remote-write,
# send-no-recv, invalidated. The client checks the completion status of
# the faulty WR against the table in siw_datacheck.c (RFC 5040/5041
# references there), that a following WR fails (QP in error) and that its
# buffer is intact; the server checks that its QP went to error and that
# its region and guard bytes are unchanged (except the legal in-MR part of
# an oob-write). On this project's siw (SIW_DEV_TYPE=siw) remote
# invalidation must work (--require-inv: a refused Send with Invalidate,
# or a receive without the invalidated rkey, fails) and no kind may skip;
# on another device type a kind the client skips (exit 77) is reported as
# a skipped sub-result, never as passed.
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ss
need_tool siw_datacheck
m=$(dmesg_mark)
rdev_netns
port=18650
nfail=0 inv=
[[ $SIW_DEV_TYPE == siw ]] && inv=--require-inv
for kind in bad-rkey bad-rkey-read oob-write oob-read no-remote-write send-no-recv invalidated; do
	srv_cli 200 "err-$kind" "$port" \
		"$BIN/siw_datacheck -s -b $H2_IP -p $port -t $(scale 15 60) $inv" \
		"$BIN/siw_datacheck -c $H2_IP -p $port --error=$kind -t $(scale 15 60) $inv"
	if ((CLI_RC == 77)) && [[ -z $inv ]]; then
		echo "@@SUBTEST SKIP error-$kind skipped by the client ($SIW_DEV_TYPE): $(grep -m1 '^skip' "$TMPD/err-$kind.cli")"
	elif ((CLI_RC == 77)); then
		echo "FAIL - error kind $kind: the client skipped it on $SIW_DEV_TYPE: $(grep -m1 '^skip' "$TMPD/err-$kind.cli")"
		nfail=$((nfail + 1))
	elif ((CLI_RC != 0 || SRV_RC != 0)); then
		echo "FAIL - error kind $kind: client rc=$CLI_RC server rc=$SRV_RC"
		nfail=$((nfail + 1))
	else
		echo "ok - error kind $kind"
	fi
	port=$((port + 1))
done
dmesg_problems_since "$m"
((nfail == 0)) || fail "$nfail error kind(s) failed"
echo "datacheck error kinds passed"
