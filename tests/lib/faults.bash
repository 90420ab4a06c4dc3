#!/usr/bin/env bash
# Helpers of the faults/ group: a data-verifying transfer (siw_datacheck,
# client in netns h1, server in h2) that a case breaks while it runs.
# Source after lib.sh and caselib.sh. Every check that a fault may not
# break: no byte the application saw as delivered differs from what was
# sent (siw_datacheck compares every buffer, guards included, after every
# operation and prints "FAIL - mismatch" otherwise), both ends finish
# within their bound, and the kernel log stays clean.

# faults_begin [CMD...]: what every fault case needs (rdma, ip, the CMDs,
# siw_datacheck), a kernel-log mark in FAULT_MARK, devices on the netns
# pair (RDEV1 in h1, RDEV2 in h2)
faults_begin() {
	need_cmd rdma ip "$@"
	need_tool siw_datacheck
	FAULT_MARK=$(dmesg_mark)
	rdev_netns
}

# xfer_start PORT [CLIENT ARGS...]: a long transfer, random Send/Write/Read
# up to 256 KiB; waits until data moves. Pids in XFER_SRV XFER_CLI. The
# client connects to port XFER_TO when set (a relay in front of PORT).
xfer_start() {
	local port=$1; shift
	bg srv ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p "$port" -t 30 -T 600
	XFER_SRV=$BG_PID
	wait_log "$TMPD/srv.log" '^# listening' 20 || { show srv; fail "datacheck server did not start"; }
	bg cli ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p "${XFER_TO:-$port}" -n 1000000 -S "$port" \
		-m 262144 -t 30 "$@"
	XFER_CLI=$BG_PID
	local b0
	b0=$(rdma_stat "$RDEV2" rx_bytes)
	xfer_moving() { (($(rdma_stat "$RDEV2" rx_bytes) > b0 + $(scale 4000000 500000))); }
	wait_for 60 xfer_moving || { show cli; show srv; fail "no data moved within 60 s"; }
}

# xfer_wait T: both ends must finish within T s; sets XFER_CRC XFER_SRC
# (124: had to be killed) and fails on a hang (after saying where each
# process involved is blocked) or a data mismatch.
xfer_wait() {
	local end=$((SECONDS + $1)) hung=0
	while { kill -0 "$XFER_CLI" || kill -0 "$XFER_SRV"; } 2>/dev/null; do
		((SECONDS < end)) || { hung=1; break; }
		sleep 0.2
	done
	((hung)) && xfer_where
	XFER_CRC=0 XFER_SRC=0
	wait_pid "$XFER_CLI" 1 || XFER_CRC=$?
	wait_pid "$XFER_SRV" 1 || XFER_SRC=$?
	show cli | tail -n 5
	show srv | tail -n 5
	info "client rc=$XFER_CRC server rc=$XFER_SRC"
	((XFER_CRC != 124)) || fail "client still running $1 s after the fault: hang"
	((XFER_SRC != 124)) || fail "server still running $1 s after the fault: hang"
	xfer_intact
}

# xfer_where: the kernel stacks of the test's processes, blocked tasks to
# the kernel log
xfer_where() {
	local p
	for p in $(pgrep -x 'siw_datacheck|rmmod|rdma'); do
		echo "# pid $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null || true)) state $(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null || true):"
		proc_stacks "$p" | sed 's/^/#   /' || true
	done
	echo w >/proc/sysrq-trigger 2>/dev/null || true
}

# xfer_intact: no delivered byte differed from what was sent
xfer_intact() {
	! grep -h 'mismatch' "$TMPD/cli.log" "$TMPD/srv.log" ||
		fail "a completed operation delivered wrong bytes"
}

# xfer_failed: the fault ended the transfer with an error on both ends
# (not a hang, not a silent success)
xfer_failed() {
	((XFER_CRC != 0)) || fail "client reported success after the fault"
	((XFER_SRC != 0)) || fail "server reported success after the fault"
}

# xfer_fresh PORT: a new connection moves verified data afterwards
xfer_fresh() {
	local port=$1
	srv_cli 120 fresh "$port" \
		"$BIN/siw_datacheck -s -b $H2_IP -p $port -t 30" \
		"$BIN/siw_datacheck -c $H2_IP -p $port -n $(scale 40 10) -S $port -m 65536 -t 30"
	((CLI_RC == 0 && SRV_RC == 0)) || fail "transfer on a fresh connection failed"
}

# crc_param Y|N: MPA CRC wanted by both ends from the next connection on
# (both devices are of the one module in this guest)
crc_param() {
	local p=/sys/module/siw/parameters/mpa_crc_required old
	[[ -w $p ]] || fail "no $p"
	old=$(cat "$p")
	echo "$1" >"$p"
	on_exit "echo $old >$p"
}
