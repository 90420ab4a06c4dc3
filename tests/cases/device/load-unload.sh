#!/usr/bin/env bash
# modprobe/rmmod of our siw; it wins over an in-tree siw (updates/); module
# metadata and parameters; autoload by `rdma link add ... type siw`.
# timeout: 120
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd rdma modprobe modinfo depmod lsmod
siw_fresh
m=$(dmesg_mark)
upd=/lib/modules/$(uname -r)/updates/siw.ko
[[ $(modinfo -n siw) == "$upd" ]] || fail "modinfo -n siw = $(modinfo -n siw), want $upd"
intree=$(find "/lib/modules/$(uname -r)/kernel" -name 'siw.ko*' | head -n1)
[[ -n $intree ]] && info "in-tree siw present ($intree); updates/ wins"
modinfo -F alias siw | grep -qx 'rdma-link-siw' || fail "module alias rdma-link-siw missing: $(modinfo -F alias siw)"
lic=$(modinfo -F license siw)
[[ $lic == *GPL* ]] || fail "license '$lic' is not GPL-compatible"
vm=$(modinfo -F vermagic siw)
[[ $vm == "$(uname -r) "* ]] || fail "vermagic '$vm' does not match $(uname -r)"
params=$(modinfo -p siw) || fail "modinfo -p siw failed"
printf '%s\n' "$params"

run modprobe siw
lsmod | awk '$1 == "siw" { f = 1 } END { exit !f }' || fail "lsmod does not show siw"
# user verbs need ib_uverbs: loaded with siw on every kernel (a hard
# dependency up to 6.12; on 7.x siw_init() loads it)
[[ -d /sys/module/ib_uverbs ]] || fail "ib_uverbs not loaded after modprobe siw (libsiw needs it)"
# removing siw leaves the modules others use alone: with a soft dependency
# on ib_uverbs, modprobe -r siw also tried ib_uverbs, and blktests'
# modprobe -r --wait waited 50 s for it while rdma_ucm held it
run modprobe rdma_ucm
plan=$(modprobe -r -n -v siw 2>&1) || fail "modprobe -r -n -v siw failed: $plan"
info "modprobe -r -n -v siw: $(tr '\n' ' ' <<<"$plan")"
grep -q 'rmmod siw' <<<"$plan" || fail "modprobe -r -n -v siw does not remove siw: $plan"
! grep -qE 'rmmod (ib_uverbs|ib_core)' <<<"$plan" || fail "modprobe -r siw would unload modules rdma_ucm uses: $plan"
[[ $(cat /sys/module/siw/initstate) == live ]] || fail "siw initstate $(cat /sys/module/siw/initstate)"
siw_is_ours || fail "loaded siw is not ours"
# every parameter in sysfs is documented and readable
if [[ -d /sys/module/siw/parameters ]]; then
	for p in /sys/module/siw/parameters/*; do
		[[ -e $p ]] || continue
		n=$(basename "$p")
		grep -q "^$n:" <<<"$params" || fail "parameter $n has no description in modinfo -p"
		if (( 0$(stat -c %a "$p") & 0444 )); then
			v=$(cat "$p") || fail "cannot read parameter $n"
			info "param $n = $v"
		fi
	done
fi
run rmmod siw
lsmod | awk '$1 == "siw" { f = 1 } END { exit !f }' && fail "siw still in lsmod after rmmod"
[[ ! -e /sys/module/siw ]] || fail "/sys/module/siw still present"
# load/unload once more
run modprobe siw
run rmmod siw

# autoload through the module alias rdma-link-siw
run rdma link add siw0 type siw netdev lo
siw_loaded || fail "rdma link add did not load siw"
siw_is_ours || fail "autoload picked a siw that is not ours"
rdma_link_exists siw0 || fail "siw0 not listed after autoload add"
run rdma link delete siw0
siw_gone siw0 || fail "siw0 not removed"
siw_unload
dmesg_problems_since "$m"
