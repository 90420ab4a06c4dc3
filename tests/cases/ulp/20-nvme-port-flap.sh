#!/usr/bin/env bash
# NVMe-oF over siw, one guest: target port removed during I/O and restored,
# then disconnect with I/O in flight.
# 1. fio (crc32c verify, rate-limited so it spans the outage) runs while the
#    port->subsystem link is removed in configfs (the target deletes the
#    controller and stops listening) and relinked 3 s later. The host
#    (reconnect-delay 1 s, ctrl-loss-tmo 60 s) must log a successful
#    reconnect and fio must finish with no error and no verify failure:
#    nvme-rdma requeues the cancelled and new I/O while the controller
#    reconnects (no fast_io_fail_tmo), so no error is expected at all.
# 2. fio without verify, then `nvme disconnect` while it runs: disconnect
#    must return within 60 s, fio must end within 60 s (I/O errors are
#    expected and accepted here: the device goes away under it), the
#    controller and its block device must be gone; after a fresh connect
#    the host must read exactly what the target's null_blk holds.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd nvme fio rdma ss cmp
m=$(dmesg_mark)
NQN=$ULP_NQN_BASE:flap
S=$(scale 16 4) # MiB
step "${RDEV_PFX}0 on ulp0, target"
ulp_siw_local
nullb_create ulpnb1 "$S"
nb=$NULLB_DEV
nvmet_up "$NQN" "$ULP_IP" "$nb"
ulp_mod nvme_rdma
nvme_host_connect "$NQN" "$ULP_IP"
d=$(nvme_wait_ns "$NQN" 1)

step "fio verify across a port outage"
m2=$(dmesg_mark)
# each job: S/2 MiB at a bounded rate, so writing takes ~8 s (stock)
rate=$(scale 512k 128k)
ulp_fio fio-flap "$d" $((S << 20)) --rate="$rate" &
fpid=$!
on_exit "kill $fpid"
sleep 3
kill -0 "$fpid" 2>/dev/null || { rc=0; wait "$fpid" || rc=$?; ulp_fio_check fio-flap "$rc"; fail "fio ended before the outage (too fast: raise the size)"; }
nvmet_unlink "$NQN"
info "port unlinked"
wait_for 30 nvme_state_not "$NVME_CTRL" live ||
	ulp_fail "$NVME_CTRL still live 30 s after the target removed the port"
info "host state: $(cat "/sys/class/nvme/$NVME_CTRL/state")"
sleep 3
nvmet_link "$NQN" || ulp_fail "relinking the port failed"
info "port relinked"
wait_for 60 nvme_state_is "$NVME_CTRL" live ||
	ulp_fail "$NVME_CTRL did not reconnect within 60 s (state $(cat "/sys/class/nvme/$NVME_CTRL/state"))"
dmesg_since "$m2" | grep -qE "$NVME_CTRL: Successfully reconnected" ||
	ulp_fail "no 'Successfully reconnected' from $NVME_CTRL: $(dmesg_since "$m2" | grep nvme | tail -n 10)"
rc=0
wait_pid "$fpid" $(scale 120 600) || rc=$?
ulp_fio_check fio-flap "$rc"
dmesg_since "$m2" | grep -E "nvme|$RDEV" | grep -vE 'siwtest' | tail -n 8 | sed 's/^/[dmesg] /'
# reference image after the verified fio run
dd if="$d" of="$TMPD/img" bs=1M iflag=direct status=none
cmp <(dd if="$nb" bs=1M iflag=direct status=none) "$TMPD/img" >/dev/null ||
	ulp_fail "host and target views of the namespace differ after the outage"

step "disconnect with I/O in flight"
fio --name=inflight --filename="$d" --direct=1 --ioengine=libaio --iodepth=16 --numjobs=2 \
	--rw=randrw --bsrange=4k-128k --time_based --runtime=120 --size=$((S << 20)) \
	>"$TMPD/inflight.fio" 2>&1 &
fpid=$!
on_exit "kill $fpid"
sleep 3
kill -0 "$fpid" 2>/dev/null || ulp_fail "fio (in-flight) ended early: $(tail -n 5 "$TMPD/inflight.fio")"
t0=$SECONDS
out=$(timeout 60 nvme disconnect -n "$NQN" 2>&1) || ulp_fail "nvme disconnect with I/O in flight failed or hung (rc=$?): $out"
info "disconnect returned after $((SECONDS - t0)) s: $out"
rc=0
wait_pid "$fpid" 60 || rc=$?
((rc != 124)) || ulp_fail "fio still running 60 s after the disconnect (hung I/O)"
info "fio ended with rc=$rc after the disconnect (errors expected): $(grep -oE 'err= *[0-9]+[^:]*' "$TMPD/inflight.fio" | head -n 2 | tr '\n' ' ')"
wait_for 30 nvme_no_ctrl "$NQN" || ulp_fail "controller still present after disconnect"
wait_for 10 test ! -b "$d" || ulp_fail "$d still present after disconnect"

step "reconnect, host and target agree"
nvme_host_connect "$NQN" "$ULP_IP"
d=$(nvme_wait_ns "$NQN" 1)
dd if="$nb" of="$TMPD/img" bs=1M iflag=direct status=none
blk_verify "$d" "$TMPD/img" $((S << 20)) 1048576
nvme_host_disconnect "$NQN" || ulp_fail "final disconnect failed"
nvmet_down
wait_for 20 ulp_no_qps || ulp_fail "QPs left on $RDEV after teardown: $(rdma res show qp)"
dmesg_problems_since "$m"
step "nvme port flap + disconnect in flight passed"
