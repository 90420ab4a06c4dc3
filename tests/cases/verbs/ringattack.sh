#!/usr/bin/env bash
# Hostile local process against the rings the kernel reads (issue 21, first
# test): tests/bin/siw_ringattack keeps setting VALID on every SQ, RQ and
# SRQ slot (plausible WQEs, garbage, fields changed under VALID), toggles
# VALID and writes garbage on the CQEs and random flags into the CQ control
# words, while the kernel is made to read them: doorbells in RTS, the peer
# QP to ERROR (the reset arrives), the QP to ERROR (modify_qp or
# rdma_disconnect: SQ/RQ flush), destroy of QPs, SRQ and CQs while the
# writers still write. Every system call must return within 1 s; a call
# stuck in the kernel makes the tool's watchdog pause the writers (so a
# livelocked flush ends) and is reported with its time. One round holds the
# RQ writer against the connection teardown for -L s with no doorbell (the
# soft-lockup detector needs > 20 s). The kernel log must stay clean: no
# soft lockup, RCU stall, hung task, KASAN, WARN (logscan.patterns).
# Default: 60 s of attack on stock, 90 s with 3 s phases on the debug
# kernel; SIW_TEST_FULL=1 (tests/run --full): 300 s / 600 s.
# Needs libsiw rings: siw only (SIW_DEV_TYPE=siw or siw-ref).
# timeout: 700
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma
need_tool siw_ringattack
[[ $RDEV_LTYPE == siw ]] || skip "siw_ringattack needs libsiw rings (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
if [[ ${SIW_TEST_FULL:-0} == 1 ]]; then
	secs=$(scale 300 600)
else
	secs=$(scale 60 90)
fi
phase=$(scale 1 3)
long=25
m=$(dmesg_mark)
rdev_veth_local
info "attack: ${secs}s, phases ${phase}s, long phase ${long}s, $(nproc) CPUs"
rc=0
timeout $((secs + long + 500)) "$BIN/siw_ringattack" -a "$RDEV_IP" -p 18900 -t "$secs" \
	-P "$phase" -L "$long" -T "$(scale 10 30)" >"$TMPD/ra.log" 2>&1 || rc=$?
cat "$TMPD/ra.log"
dmesg_since "$m" | grep -vE 'siwtest: ' | tail -n 40
sum=$(grep -E '^ringattack: [0-9]+ rounds' "$TMPD/ra.log" || true)
[[ -n $sum ]] || fail "siw_ringattack ended without its summary line (rc=$rc): $(tail -n 3 "$TMPD/ra.log")"
if ((rc != 0)); then
	# the kernel's view too, when there is one
	(dmesg_problems_since "$m") || true
	fail "siw_ringattack failed (rc=$rc): $(grep -m3 '^FAIL' "$TMPD/ra.log" | tr '\n' ' ') [$sum]"
fi
dmesg_problems_since "$m"
echo "ringattack passed: $sum"
