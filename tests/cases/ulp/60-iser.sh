#!/usr/bin/env bash
# iSCSI Extensions for RDMA over siw in one guest: the LIO target's iSER
# portal (ib_isert) and the open-iscsi initiator's iser transport (ib_iser,
# iscsid), a 32 MiB file-backed LUN. SendTargets discovery, login, pattern
# writes and reads with O_DIRECT (512 B to 1 MiB), fio crc32c verify,
# logout, login again and re-verify, then an ext4 file system made on the
# LUN, files written, logout, login, fsck and the files checked, logout,
# target teardown; the session must be an iser one and siw0's counters
# must carry the data.
# The TCP portal LIO creates first for every portal listens on the same
# address and port; with software iWARP the iSER listener is a TCP socket
# too and the two would collide (EADDRINUSE). LIO opens its TCP socket in
# the netns of the process that makes the portal, ib_isert its rdma_cm id
# in the initial one: the portal is made from netns "lio", which holds the
# same address on a dummy interface, and the iSER portal listens in the
# initial netns on siw0's address.
# With ISER_V6=1 (ulp/61-iser-ipv6) all of it runs over the IPv6 ULA
# fd00:89::1 on the same interface, with ISER_V6=ll (ulp/62-iser-ipv6-ll)
# over the link-local fe80::89:1%ulp0; the login's TCP connection must be
# an IPv6 one.
# timeout: 400
# timeout-debug: 1500
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd iscsiadm iscsid nsenter fio cmp ss mkfs.ext4 fsck.ext4 sha256sum
m=$(dmesg_mark)
step "${RDEV_PFX}0 on ulp0"
ulp_siw_local
ISER_ADDR=$ULP_IP plen=32 dummy=lio0 dindex=()
case ${ISER_V6:-0} in
1)
	# nodad: usable at once, no duplicate address detection to wait for
	run ip addr add fd00:89::1/64 dev ulp0 nodad
	ISER_ADDR=fd00:89::1 plen=128
	PORTAL="[$ISER_ADDR]:3260"
	;;
ll)
	# a link-local portal names its interface (LIO parses the scope id in
	# the initial netns): the dummy in netns lio takes ulp0's name and
	# interface index, so LIO's TCP socket binds there with the same scope
	run ip addr add fe80::89:1/64 dev ulp0 nodad
	ISER_ADDR=fe80::89:1 plen=64 dummy=ulp0 dindex=(index "$(<"/sys/class/net/ulp0/ifindex")")
	PORTAL="[$ISER_ADDR%ulp0]:3260"
	;;
*) PORTAL=$ISER_ADDR:3260 ;;
esac
ulp_configfs
# sd_mod: the guest has no udev to load the disk driver for the LUN
for mod in target_core_mod target_core_file iscsi_target_mod ib_isert ib_iser sd_mod; do ulp_mod "$mod"; done

T=/sys/kernel/config/target
IQN=iqn.2026-12.org.siw.test:iser
TPG=$T/iscsi/$IQN/tpgt_1
NP=$TPG/np/$PORTAL
img=$TMPD/lun0.img
truncate -s 32M "$img"

step "netns lio with $ISER_ADDR on a dummy interface (LIO's TCP socket)"
ip netns add lio || fail "ip netns add lio"
on_exit "ip netns del lio"
run ip -n lio link add "$dummy" "${dindex[@]}" type dummy
run ip -n lio addr add "$ISER_ADDR/$plen" dev "$dummy" nodad
run ip -n lio link set "$dummy" up

step "LIO target $IQN: fileio LUN, demo mode, iSER portal $PORTAL"
# teardown in reverse order (on_exit runs the last registered first)
on_exit "rmdir $T/core/fileio_0/lun0 $T/core/fileio_0 2>/dev/null"
mkdir -p "$T/core/fileio_0/lun0" || fail "fileio backstore"
echo "fd_dev_name=$img,fd_dev_size=$((32 << 20))" >"$T/core/fileio_0/lun0/control" || fail "fileio control"
echo 1 >"$T/core/fileio_0/lun0/enable" || fail "fileio enable"
on_exit "rmdir $T/iscsi/$IQN 2>/dev/null"
on_exit "rmdir $TPG 2>/dev/null"
on_exit "rmdir $TPG/lun/lun_0 2>/dev/null"
mkdir -p "$TPG/lun/lun_0" || fail "LUN 0"
on_exit "rm -f $TPG/lun/lun_0/lun0"
ln -s "$T/core/fileio_0/lun0" "$TPG/lun/lun_0/lun0" || fail "LUN 0 link"
for a in generate_node_acls=1 authentication=0 demo_mode_write_protect=0 cache_dynamic_acls=1; do
	echo "${a#*=}" >"$TPG/attrib/${a%=*}" || fail "tpg attribute $a"
done
on_exit "rmdir $NP 2>/dev/null"
nsenter --net=/run/netns/lio mkdir "$NP" || fail "TCP portal in netns lio"
on_exit "echo 0 > $NP/iser 2>/dev/null"
echo 1 >"$NP/iser" || ulp_fail "iSER portal on $PORTAL refused"
[[ $(<"$NP/iser") == 1 ]] || fail "iSER portal not enabled"
ss -Hltn "sport = :3260" | grep -qF "$ISER_ADDR" || fail "no iWARP listener on $PORTAL in the initial netns"
echo 1 >"$TPG/enable" || fail "tpg enable"

step "iscsid, node record on the iser interface, login"
# its own session: a stopping iscsid sends SIGTERM to its process group
setsid iscsid -f >"$TMPD/iscsid.log" 2>&1 &
ipid=$!
on_exit "kill $ipid"
iscsiadm -m iface -I iser -o show >/dev/null 2>&1 || fail "open-iscsi has no iser interface"
login() {
	wait_for 30 iscsiadm -m node -T "$IQN" -p "$PORTAL" -I iser --login ||
		ulp_fail "login over iser failed: $(iscsiadm -m node -T "$IQN" -p "$PORTAL" -I iser --login 2>&1 | tail -n 2)"
}
logout() { iscsiadm -m node -T "$IQN" -p "$PORTAL" -I iser --logout >/dev/null 2>&1; }
# SendTargets discovery over the iser interface (LIO's TCP portal is in
# netns lio, out of reach): the node record comes from the target
out=$(timeout 60 iscsiadm -m discovery -t sendtargets -p "$PORTAL" -I iser 2>&1) ||
	ulp_fail "discovery over iser failed: $out"
info "discovery: $out"
grep -F "$ISER_ADDR" <<<"$out" | grep -q " $IQN\$" || fail "discovery did not list $IQN at $PORTAL: $out"
if [[ ${ISER_V6:-0} == ll ]]; then
	# SendTargets answers the address without its scope id: the record
	# for the scoped portal is made by hand
	out=$(iscsiadm -m node -o new -T "$IQN" -p "$PORTAL" -I iser 2>&1) || fail "iscsiadm node new -p $PORTAL: $out"
fi
on_exit "iscsiadm -m node -T $IQN -p '$PORTAL' -I iser -o delete"
on_exit "iscsiadm -m node -T $IQN -p '$PORTAL' -I iser --logout"
login
sess=$(iscsiadm -m session 2>&1)
info "session: $sess"
grep -F "$ISER_ADDR" <<<"$sess" | grep -qE "^iser: .*$IQN" || fail "the session is not an iser one to $PORTAL: $sess"
if [[ ${ISER_V6:-0} != 0 ]]; then
	ss -Htn6 state established "( dport = :3260 )" | grep -q . ||
		fail "no established IPv6 TCP connection to port 3260: $(ss -Htn state established)"
	info "the iSER connection is an IPv6 one"
fi
disk() { iscsiadm -m session -P 3 2>/dev/null | sed -n 's/.*Attached scsi disk \([a-z]*\).*/\1/p' | head -n1; }
# no disk: what the initiator and the target say
no_disk() {
	iscsiadm -m session -P 3 2>&1 | sed 's/^/#   session: /' | tail -n 25
	ls /sys/class/scsi_device /sys/class/scsi_disk 2>&1 | sed 's/^/#   scsi: /'
	ls -l "$TPG/lun/lun_0" "$TPG/acls" 2>&1 | sed 's/^/#   lio: /'
	ulp_fail "$1"
}
iscsiadm -m session -R >/dev/null 2>&1 || true # a rescan, in case iscsid's own was early
wait_for 30 test -n "$(disk)" || no_disk "no SCSI disk attached after login"
dev=/dev/$(disk)
wait_for 10 test -b "$dev" || fail "$dev not a block device"
(($(blockdev --getsize64 "$dev") == 32 << 20)) || fail "$dev is $(blockdev --getsize64 "$dev") bytes, expected 32 MiB"
info "$dev: the LUN over iser"

tx0=$(rdma_stat "$RDEV" tx_bytes 2>/dev/null || echo 0)
step "pattern writes and reads, O_DIRECT"
pat=$TMPD/pat
head -c $((8 << 20)) /dev/urandom >"$pat"
off=0
for bs in 512 4096 65536 1048576; do
	run dd if="$pat" of="$dev" bs="$bs" count=$(((2 << 20) / bs)) seek=$((off / bs)) skip=$((off / bs)) oflag=direct status=none
	off=$((off + (2 << 20)))
done
run dd if="$dev" of="$TMPD/back" bs=1M count=8 iflag=direct status=none
cmp "$pat" "$TMPD/back" || fail "read back differs from what was written"
step "fio crc32c verify"
run fio --name=iser --filename="$dev" --direct=1 --rw=randwrite --bs=4k-128k --size=16M \
	--offset=16M --iodepth=8 --ioengine=libaio --verify=crc32c --do_verify=1 --verify_state_save=0 --output="$TMPD/fio.log"
grep -q 'err= 0' "$TMPD/fio.log" || { cat "$TMPD/fio.log"; fail "fio reported an error"; }
tx1=$(rdma_stat "$RDEV" tx_bytes 2>/dev/null || echo 0)
rx1=$(rdma_stat "$RDEV" rx_bytes 2>/dev/null || echo 0)
info "$RDEV: tx_bytes +$((tx1 - tx0)), rx_bytes $rx1"
((tx1 - tx0 > 16 << 20)) || fail "$RDEV moved only $((tx1 - tx0)) bytes: the data did not go over siw"

# relogin WHEN: logout, login, the LUN's disk back in $dev
relogin() {
	logout || fail "logout failed"
	wait_for 30 test -z "$(iscsiadm -m session 2>/dev/null)" || fail "session still listed after logout"
	login
	wait_for 30 test -n "$(disk)" || no_disk "no SCSI disk after the $1 login"
	dev=/dev/$(disk)
	wait_for 10 test -b "$dev" || fail "$dev not a block device"
}
step "logout, login again, re-verify"
relogin second
run dd if="$dev" of="$TMPD/back2" bs=1M count=8 iflag=direct status=none
cmp "$pat" "$TMPD/back2" || fail "data differs after logout and login"

step "mkfs.ext4 on the LUN, files written, logout, login, files checked"
run mkfs.ext4 -q -F "$dev"
mnt=$TMPD/mnt
mkdir "$mnt"
run mount -t ext4 "$dev" "$mnt"
on_exit "umount $mnt"
for sz in 0 1 4096 65537 $((4 << 20)); do head -c "$sz" /dev/urandom >"$mnt/f$sz"; done
(cd "$mnt" && sha256sum f*) >"$TMPD/sums"
run umount "$mnt"
relogin third
run fsck.ext4 -n "$dev"
run mount -t ext4 "$dev" "$mnt"
(cd "$mnt" && sha256sum -c --quiet "$TMPD/sums") || fail "files on the LUN's file system differ after logout and login"
run umount "$mnt"
logout || fail "logout failed"
dmesg_problems_since "$m"
echo "iser passed: LIO iSER target and open-iscsi iser initiator over $RDEV ($PORTAL), data verified"
