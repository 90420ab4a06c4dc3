#!/usr/bin/env bash
# SMB Direct over siw between two guests (issue 22): role b runs ksmbd
# (ksmbd-tools' ksmbd.mountd, SMB Direct on port 5445), role a mounts its
# share with `mount -t cifs -o rdma`. Files of 0 B to 8 MiB (debug kernel
# 2 MiB, deterministic patterns) are written, checked by the server, read
# back on the client after a remount, removed. The mount must be an SMB
# Direct one. Skipped (both roles) on kernels without SMB Direct, which
# Debian's are (see ulp/70-smb-direct).
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
[[ -n ${SIW_ROLE:-} ]] || skip "pair group case run outside a pair"
smb_direct_required
need_cmd ksmbd.mountd ksmbd.adduser mount.cifs ss openssl
m=$(dmesg_mark)
ulp_siw_pair
T=$(scale 300 1200)
max=$(scale $((8 << 20)) $((2 << 20)))
sizes="0 1 4095 65537 1048576 $max"
share=$TMPD/share mnt=/mnt/smb
if [[ $SIW_ROLE == b ]]; then
	smb_server_up "$share"
	ulp_barrier server-up "$T"
	ulp_barrier written "$T"
	# the client's files are deterministic patterns: made again here
	mkdir -p "$TMPD/ref"
	for sz in $sizes; do
		ulp_pattern "$TMPD/ref/f$sz" "$sz" "smb-$sz"
		cmp "$TMPD/ref/f$sz" "$share/f$sz" || ulp_fail "the server's f$sz differs from what the client wrote"
	done
	info "server side: the files match"
	ulp_barrier server-checked "$T"
	ulp_barrier client-done "$T"
	[[ -z $(ls -A "$share") ]] || ulp_fail "the server still has: $(ls -A "$share")"
	ksmbd.control -s >/dev/null 2>&1
else
	mkdir -p "$mnt" "$TMPD/src"
	for sz in $sizes; do ulp_pattern "$TMPD/src/f$sz" "$sz" "smb-$sz"; done
	ulp_barrier server-up "$T"
	tx0=$(rdma_stat "$RDEV" tx_bytes)
	smb_mount "$SIW_PEER_IP" "$mnt"
	cp "$TMPD"/src/f* "$mnt/" || ulp_fail "copy into the share failed"
	sync -f "$mnt"
	ulp_barrier written "$T"
	ulp_barrier server-checked "$T"
	umount "$mnt" || ulp_fail "umount failed"
	echo 3 >/proc/sys/vm/drop_caches
	smb_mount "$SIW_PEER_IP" "$mnt"
	for sz in $sizes; do
		cmp "$TMPD/src/f$sz" "$mnt/f$sz" || ulp_fail "f$sz read back over SMB Direct differs"
	done
	rm -f "$mnt"/f* || ulp_fail "rm in the share failed"
	umount "$mnt" || ulp_fail "umount failed"
	tx=$(($(rdma_stat "$RDEV" tx_bytes) - tx0))
	((tx > max)) || ulp_fail "$RDEV sent only $tx bytes: the files did not go over siw"
	info "client: $RDEV sent $tx bytes"
	ulp_barrier client-done "$T"
fi
wait_for 30 ulp_no_qps || ulp_fail "QPs left on $RDEV: $(rdma res show qp)"
dmesg_problems_since "$m"
echo "pair smb-direct passed ($SIW_ROLE)"
