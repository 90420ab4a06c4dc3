#!/usr/bin/env bash
# The module DKMS built on the host from the siw-dkms package (not the
# harness's build/): `modprobe siw` loads /lib/modules/KVER/updates/dkms/
# siw.ko with the version of VERSION and a description for every
# parameter. Then siw@.service's commands (ExecStartPre/ExecStart/
# ExecStop, %I = the interface) create siw_veth1 and siw_veth2 on a veth
# pair between two netns, rping and ib_write_bw -R move data over them,
# and the stop commands delete them (both twice: idempotent).
# timeout: 400
# timeout-debug: 1500
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma rping ib_write_bw modprobe modinfo dpkg-query ss
kv=$(uname -r)
ver=$(tr -d '[:space:]' <"$SIW_TOP/VERSION")
m=$(dmesg_mark)

[[ $(dpkg-query -W -f='${db:Status-Status}' siw-dkms 2>/dev/null) == installed ]] ||
	fail "siw-dkms is not installed (tests/run installs it on the host: tests/cases/pkg/host.bash pre)"
dk=$(find "/lib/modules/$kv/updates/dkms" -name 'siw.ko*' 2>/dev/null | head -n1)
[[ -n $dk ]] || fail "no DKMS-built siw.ko under /lib/modules/$kv/updates/dkms"
cmp -s "$dk" "/var/lib/dkms/siw/$ver/$kv/x86_64/module/$(basename "$dk")" ||
	fail "$dk is not the module DKMS built for siw/$ver"

# Earlier cases of this boot installed the harness's build into updates/
# and its module index: take both away, back to the index DKMS left.
siw_unload
on_exit "rmmod siw"
for k in "$SIW_TOP/build/$kv"/*.ko; do
	rm -f "/lib/modules/$kv/updates/$(basename "$k")"
done
idx=$SIW_TOP/build/pkg/modindex/$kv
[[ -e $idx/modules.dep.bin ]] || fail "no saved module index at $idx (host.bash pre)"
cp -f "$idx"/modules.* "/lib/modules/$kv/"
[[ -z $(find "/lib/modules/$kv/updates" -name 'siw.ko*' ! -path '*/updates/dkms/*') ]] ||
	fail "another siw.ko under updates/: $(find "/lib/modules/$kv/updates" -name 'siw.ko*')"

p=$(modinfo -n siw) || fail "modinfo finds no siw"
[[ $p == "$dk" ]] || fail "modinfo -n siw: $p, not the DKMS module $dk"
v=$(modinfo -F version siw)
[[ $v == "$ver" ]] || fail "modinfo -F version siw: '$v', VERSION says $ver"
info "modinfo: $p version $v"
# every parameter has a description ("name:description (type)")
mapfile -t parms < <(modinfo -F parm siw)
((${#parms[@]} > 0)) || fail "modinfo shows no parameters"
for l in "${parms[@]}"; do
	d=${l#*:}
	[[ $l == *:* && -n ${d// /} ]] || fail "parameter without a description: '$l'"
done

out=$(modprobe -v siw 2>&1) || fail "modprobe -v siw: $out"
echo "$out"
grep -q "insmod $dk" <<<"$out" || fail "modprobe did not load $dk: $out"
[[ $(cat /sys/module/siw/version) == "$ver" ]] || fail "/sys/module/siw/version: $(cat /sys/module/siw/version)"
for f in /sys/module/siw/parameters/*; do
	n=$(basename "$f")
	printf '%s\n' "${parms[@]}" | grep -q "^$n:" || fail "parameter $n has no modinfo description"
done
info "loaded $dk, version $ver, ${#parms[@]} parameters described"

# siw@.service, as systemd would run it for instance IF (no systemd here)
unit=/lib/systemd/system/siw@.service
[[ -e $unit ]] || fail "$unit missing"
mapfile -t start_cmds < <(sed -n 's/^ExecStart\(Pre\)\{0,1\}=//p' "$unit")
mapfile -t stop_cmds < <(sed -n 's/^ExecStop=//p' "$unit")
((${#start_cmds[@]} && ${#stop_cmds[@]})) || fail "no ExecStart/ExecStop in $unit"
unit_run() { # NETNS IF CMD...
	local ns=$1 ifn=$2 c
	shift 2
	for c in "$@"; do
		c=${c//%I/$ifn}
		c=${c//%i/$ifn}
		echo "+ ip netns exec $ns $c"
		# shellcheck disable=SC2086 # a unit's command line, word-split
		ip netns exec "$ns" $c || fail "unit command failed in $ns: $c"
	done
}
netns_pair
on_exit "rdma link delete siw_veth1"
on_exit "rdma link delete siw_veth2"
unit_run h1 veth1 "${start_cmds[@]}"
unit_run h2 veth2 "${start_cmds[@]}"
unit_run h1 veth1 "${start_cmds[@]}"	# again: already there is fine
for i in 1 2; do
	# the netdev is named only to its own namespace
	l=$(ip netns exec "h$i" rdma link show "siw_veth$i/1")
	echo "$l"
	[[ $l == *" netdev veth$i"* ]] || fail "siw_veth$i is not on veth$i: $l"
	wait_for 15 test "$(ibdev_port_state "siw_veth$i")" = PORT_ACTIVE ||
		fail "siw_veth$i: port $(ibdev_port_state "siw_veth$i")"
done

c=$(scale 50 10)
srv_cli 200 rping 7174 "rping -s -a $H2_IP -p 7174 -v -V -C $c -S 4000" \
	"rping -c -a $H2_IP -p 7174 -v -V -C $c -S 4000"
((CLI_RC == 0 && SRV_RC == 0)) || fail "rping: client rc $CLI_RC, server rc $SRV_RC"
n=$(scale 500 20)
srv_cli_pt 300 write_bw 18515 "ib_write_bw -d siw_veth2 -R -s 65536 -n $n" \
	"ib_write_bw -d siw_veth1 -R -s 65536 -n $n $H2_IP"
((CLI_RC == 0 && SRV_RC == 0)) || fail "ib_write_bw: client rc $CLI_RC, server rc $SRV_RC"
grep -qE '^ *65536 +[0-9]+ ' "$TMPD/write_bw.cli" || fail "ib_write_bw printed no result line"
tx=$(rdma stat show link siw_veth1/1 | grep -oE 'tx_bytes [0-9]+' | awk '{print $2}')
((tx >= 65536 * n)) || fail "siw_veth1 tx_bytes $tx < $((65536 * n))"
info "moved data: rping $c x 4000 B, ib_write_bw $n x 64 KiB (tx_bytes $tx)"

unit_run h1 veth1 "${stop_cmds[@]}"
siw_gone siw_veth1 || fail "siw_veth1 still there after ExecStop"
unit_run h1 veth1 "${stop_cmds[@]}"	# again: already gone is fine
unit_run h2 veth2 "${stop_cmds[@]}"
siw_gone siw_veth2 || fail "siw_veth2 still there after ExecStop"
siw_unload
dmesg_problems_since "$m"
echo "pkg dkms-module passed"
