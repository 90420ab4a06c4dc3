#!/usr/bin/env bash
# Every object limit `ibv_devinfo -v` reports is enforced: a device made
# with max_objects=16 reports 16 PDs, CQs, MRs, QPs and SRQs, and
# siw_objects -x creates exactly that many of each, gets ENOMEM for one
# more (with a kernel log line naming the device and the limit), and
# creates one again after freeing one.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ibv_devinfo
need_tool siw_objects
[[ $SIW_DEV_TYPE == siw ]] || skip "max_objects is a parameter of this project's siw"
m=$(dmesg_mark)
rdev_module_load
p=/sys/module/siw/parameters/max_objects
[[ -w $p ]] || fail "no $p"
echo 16 >"$p"
on_exit "echo 0 >$p"
rdev_lo
info=$(ibv_devinfo -v -d "$RDEV")
for a in max_pd max_cq max_mr max_qp max_srq; do
	v=$(awk -v a="$a:" '$1 == a { print $2 }' <<<"$info")
	[[ $v == 16 ]] || fail "ibv_devinfo reports $a '$v', want 16"
done
"$BIN/siw_objects" -d "$RDEV" -x || fail "siw_objects -x found a limit not enforced as reported"
for w in PDs CQs MRs QPs SRQs; do
	dmesg_since "$m" | grep -q "$RDEV: out of $w: the device's limit is 16" ||
		fail "no kernel log line names $RDEV and its limit of $w"
done
dmesg_problems_since "$m"
echo "every reported object limit enforced, ENOMEM beyond it"
