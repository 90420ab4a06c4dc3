#!/usr/bin/env bash
# Harness self-test: the guest environment conventions tests rely on.
# timeout: 60
source "$(dirname "$0")/../../lib/lib.sh"

[[ $(pwd) == "$SIW_TOP" ]] || fail "cwd $(pwd) is not SIW_TOP $SIW_TOP"
[[ -e $SIW_TOP/tests/lib/lib.sh ]] || fail "tree not mounted at $SIW_TOP"
[[ $(id -u) -eq 0 ]] || fail "not root"
[[ ${SIW_CASE:-} == 00-guest-env ]] || fail "SIW_CASE='${SIW_CASE:-}', not this case's name"
case ${SIW_KERNEL:-} in stock | bookworm-bpo | trixie | trixie-bpo | debug) ;; *) fail "SIW_KERNEL='${SIW_KERNEL:-}'" ;; esac
if is_debug_kernel; then [[ $SIW_KERNEL == debug ]] || fail "debug kernel but SIW_KERNEL=$SIW_KERNEL"; fi
for m in /sys/kernel/debug /sys/kernel/config /dev/pts /tmp /run /var/tmp; do
	mountpoint -q "$m" || fail "$m is not mounted"
done
for d in /tmp /run /var/tmp "/lib/modules/$(uname -r)"; do
	f=$d/.siw-write-test.$$
	: >"$f" || fail "$d not writable"
	rm -f "$f"
done
[[ $(hostname) == siw-* ]] || fail "hostname $(hostname)"
ip -o link show lo | grep -q 'UP' || fail "lo is not up"
ping -c1 -W2 127.0.0.1 >/dev/null || fail "no ping on lo"
# the tree is shared read-write with the host
f=$SIW_TOP/build/.guest-write-test.$$
echo ok >"$f" || fail "tree not writable"
[[ $(<"$f") == ok ]] || fail "tree write not read back"
rm -f "$f"
# dmesg helpers
m=$(dmesg_mark)
echo "siwtest: after-mark-line" >/dev/kmsg
dmesg_since "$m" | grep -q 'after-mark-line' || fail "dmesg_since misses a line"
dmesg_since "$m" | grep -q "$m" && fail "dmesg_since includes the mark"
for c in rdma ibv_devinfo ibv_devices modprobe depmod ip; do need_cmd "$c"; done
echo "guest env ok: $(uname -r) $(hostname) $SIW_TOP"
