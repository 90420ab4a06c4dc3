#!/usr/bin/env bash
# SMB Direct over siw in one guest: the kernel's SMB server ksmbd
# (SMB_SERVER_SMBDIRECT, ksmbd-tools' ksmbd.mountd) shares a directory, the
# kernel's SMB client mounts it with `-o rdma` (CIFS_SMB_DIRECT) over siw0.
# Files of 0 B to 8 MiB (debug kernel 2 MiB) are copied in, checked on the
# server's disk, read back after a remount (cache dropped), copied within
# the share, removed. The mount must be an SMB Direct one (the client's
# DebugData) and siw0's counters must carry the data.
# Debian's own kernels (6.1, 6.12, 7.3 checked 2026-12-02) are built
# without CIFS_SMB_DIRECT and SMB_SERVER_SMBDIRECT: the case is skipped
# there with that reason; the debug kernel (version 4 and later) has both.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
smb_direct_required
need_cmd ksmbd.mountd ksmbd.adduser mount.cifs ss
m=$(dmesg_mark)
step "${RDEV_PFX}0 on ulp0"
ulp_siw_local
share=$TMPD/share mnt=/mnt/smb
mkdir -p "$mnt"
step "ksmbd: TCP 445, SMB Direct (iWARP) 5445"
smb_server_up "$share"
step "mount -t cifs -o rdma //$ULP_IP/siw"
tx0=$(rdma_stat "$RDEV" tx_bytes)
smb_mount "$ULP_IP" "$mnt"

max=$(scale $((8 << 20)) $((2 << 20)))
sizes="0 1 4095 4096 65537 1048576 $max"
step "write files of $sizes bytes"
for sz in $sizes; do
	head -c "$sz" /dev/urandom >"$TMPD/f$sz"
	cp "$TMPD/f$sz" "$mnt/f$sz" || ulp_fail "copy of f$sz into the share failed"
done
sync -f "$mnt" || ulp_fail "sync on the share failed"
for sz in $sizes; do
	cmp "$TMPD/f$sz" "$share/f$sz" || ulp_fail "f$sz on the server's disk differs from what the client wrote"
done
info "the server's copies match"

step "remount, read back, copy within the share"
umount "$mnt" || ulp_fail "umount failed"
echo 3 >/proc/sys/vm/drop_caches
smb_mount "$ULP_IP" "$mnt"
for sz in $sizes; do
	cmp "$TMPD/f$sz" "$mnt/f$sz" || ulp_fail "f$sz read back over SMB Direct differs"
	cp "$mnt/f$sz" "$mnt/g$sz" || ulp_fail "copy within the share failed"
done
sync -f "$mnt"
for sz in $sizes; do cmp "$TMPD/f$sz" "$share/g$sz" || ulp_fail "server-side copy g$sz differs"; done
rm -f "$mnt"/f* "$mnt"/g* || ulp_fail "rm in the share failed"
[[ -z $(ls -A "$share") ]] || ulp_fail "the server still has: $(ls -A "$share")"
tx1=$(rdma_stat "$RDEV" tx_bytes)
info "$RDEV: tx_bytes +$((tx1 - tx0))"
# the data went through siw twice (client to server, server to client)
((tx1 - tx0 > 2 * max)) || ulp_fail "$RDEV moved only $((tx1 - tx0)) bytes: the data did not go over siw"
umount "$mnt" || ulp_fail "umount failed"
ksmbd.control -s >/dev/null 2>&1
wait_for 30 ulp_no_qps || ulp_fail "QPs left on $RDEV: $(rdma res show qp)"
dmesg_problems_since "$m"
echo "smb-direct passed: ksmbd and the SMB client over SMB Direct on $RDEV, data verified"
