#!/usr/bin/env bash
# Allocation failures: the debug kernel's failslab and fail_page_alloc,
# filtered to allocations with a siw function on the stack (require-start/
# require-end = siw's text, from /proc/kallsyms), vmalloc's pages and
# internals included. For each injector and probability, with injection
# on: add and delete a device, open it and
# create verbs objects (siw_objects), and run a data-verifying transfer
# (connection setup, MPA negotiation, the data path). Each may fail, but
# only cleanly: an error within its time bound, no process stuck in the
# kernel, no wrong byte, no kernel report. With injection off after each
# step, a device can be added and a fresh connection moves verified data
# (nothing wedged). At the end kmemleak finds nothing and siw unloads.
# Each injector must have failed allocations (else the filter missed).
# timeout: 600
# timeout-debug: 2400
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
[[ $SIW_DEV_TYPE == siw ]] || skip "injects into this project's siw"
fi_root=/sys/kernel/debug
[[ -d $fi_root/failslab && -d $fi_root/fail_page_alloc && -e $fi_root/failslab/require-start ]] ||
	skip "no failslab/fail_page_alloc with a stack-trace filter in $(uname -r) (the debug kernel has them)"
faults_begin
need_tool siw_objects
FI_TIMES=1000000

# /proc/kallsyms is slow to read in a TCG debug guest: once, to a file
ksyms=$TMPD/kallsyms
cat /proc/kallsyms >"$ksyms"
# siw's text range: first text symbol to the end of the last one's page
text=$(awk '$4 == "[siw]" && ($2 == "t" || $2 == "T") { print $1 }' "$ksyms" | sort)
[[ -n $text && $text != 0000000000000000* ]] || fail "no siw text addresses in /proc/kallsyms"
FI_START=$((16#$(head -n1 <<<"$text")))
FI_END=$(((16#$(tail -n1 <<<"$text") + 4096) & ~4095))
info "siw text $(printf '%#x-%#x' "$FI_START" "$FI_END")"
# vmalloc is not exempt: siw allocates its rings and page lists with
# __GFP_NOWARN (a failure is one siw line, not warn_alloc's "Call Trace"),
# so reject nothing.
# fi_on INJECTOR PERCENT: fail PERCENT of siw's allocations. verbose 1: a
# "FAULT_INJECTION" line, not a stack dump ("Call Trace" counts as a
# report). fail_page_alloc must not ignore highmem requests: vmalloc's
# pages are those.
fi_on() {
	local d=$fi_root/$1
	echo 0 >"$d/probability"
	printf '%u\n' "$FI_START" >"$d/require-start"
	printf '%u\n' "$FI_END" >"$d/require-end"
	echo 0 >"$d/reject-start"
	echo 0 >"$d/reject-end"
	echo 32 >"$d/stacktrace-depth"
	echo N >"$d/ignore-gfp-wait"
	echo 0 >"$d/task-filter"
	if [[ $1 == fail_page_alloc ]]; then
		echo 0 >"$d/min-order"
		echo N >"$d/ignore-gfp-highmem"
	fi
	echo 1 >"$d/verbose"
	echo 1 >"$d/interval"
	echo "$FI_TIMES" >"$d/times"
	echo "$2" >"$d/probability"
}
# fi_off INJECTOR: stop; FI_HITS = failures it injected since fi_on
fi_off() {
	local d=$fi_root/$1
	echo 0 >"$d/probability"
	FI_HITS=$((FI_TIMES - $(cat "$d/times")))
	echo "$FI_TIMES" >"$d/times"
}
on_exit "echo 0 >$fi_root/failslab/probability; echo 0 >$fi_root/fail_page_alloc/probability"

# gone_or_stuck PID WHAT: a process that must end (after SIGKILL if need
# be) within 30 s; one that cannot is stuck in the kernel
gone_or_stuck() {
	kill -0 "$1" 2>/dev/null || return 0
	kill -KILL "$1" 2>/dev/null
	wait_pid "$1" 30 >/dev/null && return 0
	kill -0 "$1" 2>/dev/null || return 0
	xfer_where
	fail "$2 did not end after SIGKILL: stuck in the kernel"
}

# step_device: add a device on fsv0 and delete it again
step_device() {
	local rc=0
	timeout 120 rdma link add fsi0 type siw netdev fsv0 >>"$TMPD/step.log" 2>&1 || rc=$?
	((rc != 124)) || fail "rdma link add hung under $inj $p%"
	if rdma_link_exists fsi0; then
		timeout 120 rdma link delete fsi0 >>"$TMPD/step.log" 2>&1 || rc=$?
		((rc != 124)) || fail "rdma link delete hung under $inj $p%"
		rdma_link_exists fsi0 && { rdma link delete fsi0 2>/dev/null; fail "fsi0 left after a delete under $inj $p%"; }
	fi
	steps_failed=$((steps_failed + (rc != 0)))
}
# step_objects: open the device, create and destroy verbs objects
step_objects() {
	local rc=0
	timeout 300 "$BIN/siw_objects" -d "$RDEV1" >"$TMPD/obj.log" 2>&1 || rc=$?
	((rc != 124)) || { tail -n 5 "$TMPD/obj.log"; fail "siw_objects hung under $inj $p%"; }
	steps_failed=$((steps_failed + (rc != 0)))
}
# step_xfer PORT: a short data-verifying transfer (the server may fail
# to open its device or listen: then it must end by itself)
srv_up() { grep -q '^# listening' "$TMPD/srv.log" || ! kill -0 "$spid" 2>/dev/null; }
step_xfer() {
	local port=$1 crc=0
	bg srv ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p "$port" -t 20 -T 200
	spid=$BG_PID
	wait_for 60 srv_up || { show srv; fail "datacheck server neither listened nor ended under $inj $p%"; }
	if ! grep -q '^# listening' "$TMPD/srv.log"; then
		wait_pid "$spid" 10 >/dev/null || true
		steps_failed=$((steps_failed + 1))
		return 0
	fi
	timeout 200 ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p "$port" -n "$(scale 30 12)" \
		-S "$port" -m 131072 -t 20 >"$TMPD/cli.log" 2>&1 || crc=$?
	((crc != 124)) || { show cli | tail -n 5; xfer_where; fail "datacheck client hung under $inj $p%"; }
	if ((crc == 0)); then
		wait_pid "$spid" 60 || { show srv | tail -n 5; fail "server did not finish a transfer the client finished"; }
	else
		wait_pid "$spid" 30 >/dev/null || true
		gone_or_stuck "$spid" "datacheck server"
	fi
	xfer_intact
	steps_failed=$((steps_failed + (crc != 0)))
}
# recovered PORT: with injection off, a device can be added and a fresh
# connection moves verified data
recovered() {
	rdma_link_exists fsi0 && fail "fsi0 left behind"
	rdma link add fsi0 type siw netdev fsv0 || fail "rdma link add after $inj $p% failed"
	rdma link delete fsi0 || fail "rdma link delete after $inj $p% failed"
	xfer_fresh "$1"
}

veth_pair fsv0 fsv1
probs=(100 10)
((${SIW_TEST_FULL:-0})) && probs=(100 50 20 10 5 2 1)
port=18980
declare -A hits=()
# ring_fails: siw's "no memory for a N-byte ring" lines so far (a vmalloc
# failure reached through the verbs)
ring_fails() { dmesg | grep -c 'no memory for a [0-9]*-byte ring' || true; }
declare -A rings=()
for inj in failslab fail_page_alloc; do
	hits[$inj]=0
	rings[$inj]=$(ring_fails)
	for p in "${probs[@]}"; do
		steps_failed=0
		fi_on "$inj" "$p"
		step_device
		step_objects
		step_xfer "$port"
		fi_off "$inj"
		info "$inj $p%: $FI_HITS allocations failed, $steps_failed of 3 steps ended in an error"
		hits[$inj]=$((hits[$inj] + FI_HITS))
		recovered $((port + 1))
		port=$((port + 2))
	done
	rings[$inj]=$(($(ring_fails) - rings[$inj]))
done
for inj in failslab fail_page_alloc; do
	((hits[$inj] > 0)) || fail "$inj failed no allocation of siw's: the stack-trace filter missed"
	((rings[$inj] > 0)) || fail "$inj failed no ring allocation (vmalloc): not reached"
done
dmesg_problems_since "$FAULT_MARK"
kmemleak_scan_check || fail "kmemleak after the allocation failures: $KMEMLEAK_WHY"
{ rdma link delete "$RDEV1" && rdma link delete "$RDEV2"; } || fail "deleting the devices failed"
siw_unload
echo "allocation failures: failslab ${hits[failslab]} (${rings[failslab]} rings), fail_page_alloc ${hits[fail_page_alloc]} (${rings[fail_page_alloc]} rings) injected over ${#probs[@]} probabilities each; every step ended cleanly, recovery after each, no leak, module unloaded"
