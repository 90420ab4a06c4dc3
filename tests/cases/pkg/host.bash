#!/usr/bin/env bash
# Host-side steps of the pkg group, run by tests/run around the group's VM
# boot: tests/cases/pkg/host.bash pre|post KVER
#   pre   build siw-dkms_<VERSION>_all.deb (scripts/deb.sh), install it with
#         apt-get install ./siw-dkms_*.deb, check that DKMS built and
#         installed siw.ko for every kernel with headers, and save the
#         module index of KVER for the guest (build/pkg/modindex/KVER)
#   post  apt-get purge siw-dkms; nothing of it may be left under
#         /lib/modules, /var/lib/dkms or /usr/src
# Result lines: "@@HOST PASS|FAIL name [reason]"; the rest is the log.
# The host never loads the module (it cannot): the guest cases do.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$top" || exit 1
step=${1:?pre|post}
kv=${2:?KVER}
export DEBIAN_FRONTEND=noninteractive
ver=$(tr -d '[:space:]' <VERSION)
nfail=0

res() { # PASS|FAIL NAME [REASON]
	[[ $1 == FAIL ]] && nfail=$((nfail + 1))
	echo "@@HOST $1 $2${3:+ $3}"
}
installed() { [[ $(dpkg-query -W -f='${db:Status-Status}' siw-dkms 2>/dev/null) == installed ]]; }
# kernels DKMS must build for: every /lib/modules/K with headers
kernels() {
	local b
	for b in /lib/modules/*/build; do
		[[ -e $b/Makefile ]] && basename "$(dirname "$b")"
	done
}
# leftovers: files of the package or its modules still on the system
leftovers() {
	find /lib/modules -path '*/updates/dkms/siw.ko*' 2>/dev/null
	find /var/lib/dkms -maxdepth 1 -name siw 2>/dev/null
	find /usr/src -maxdepth 1 -name 'siw-*' 2>/dev/null
	local k
	for k in $(kernels); do
		grep -l 'updates/dkms/siw\.ko' "/lib/modules/$k/modules.dep" 2>/dev/null
	done
	ls /lib/systemd/system/siw@.service /usr/libexec/siw /usr/share/man/man7/siw.7.gz 2>/dev/null
}

case $step in
pre)
	if installed; then
		echo "# siw-dkms was installed before the test: purging it first"
		apt-get purge -y -q siw-dkms
	fi
	echo "# scripts/deb.sh"
	if ! deb=$(scripts/deb.sh); then
		res FAIL deb-build "scripts/deb.sh failed (build/deb/build.log)"
		exit 1
	fi
	[[ $(basename "$deb") == "siw-dkms_${ver}_all.deb" ]] || res FAIL deb-build "unexpected file name $deb"
	dpkg-deb -f "$deb" Depends Recommends
	res PASS deb-build "$(basename "$deb")"

	echo "# apt-get install ./$(basename "$deb")"
	t0=$SECONDS
	if (cd "$(dirname "$deb")" && apt-get install -y -q "./$(basename "$deb")"); then
		res PASS apt-install "$((SECONDS - t0))s"
	else
		res FAIL apt-install "apt-get install ./$(basename "$deb") failed"
		exit 1
	fi
	dkms status siw
	for k in $(kernels); do
		f=$(modinfo -k "$k" -n siw 2>/dev/null)
		v=$(modinfo -k "$k" -F version siw 2>/dev/null)
		echo "# $k: $f version $v"
		if [[ $f != /lib/modules/$k/updates/dkms/siw.ko* || ! -e $f ]]; then
			res FAIL "dkms-module-$k" "modinfo -k $k resolves siw to '${f:-nothing}', not updates/dkms"
		elif [[ $v != "$ver" ]]; then
			res FAIL "dkms-module-$k" "version '$v', VERSION says $ver"
		elif ! dkms status -m siw -v "$ver" -k "$k" | grep -q ': installed'; then
			res FAIL "dkms-module-$k" "dkms status does not say installed"
		else
			res PASS "dkms-module-$k" "$f"
		fi
	done
	# the guest uses the host's module index of its kernel as DKMS left it
	# (earlier cases of the same boot overwrite it with the harness's)
	mi=build/pkg/modindex/$kv
	rm -rf "$mi"
	mkdir -p "$mi"
	cp /lib/modules/"$kv"/modules.* "$mi/"
	;;
post)
	echo "# apt-get purge siw-dkms"
	if ! apt-get purge -y -q siw-dkms; then
		res FAIL purge "apt-get purge siw-dkms failed"
		exit 1
	fi
	left=$(leftovers)
	st=$(dpkg-query -W -f='${db:Status-Status}' siw-dkms 2>/dev/null)
	if [[ -n $st && $st != not-installed ]]; then
		res FAIL purge "dpkg status of siw-dkms after purge: $st"
	elif [[ -n $left ]]; then
		res FAIL purge "left behind: $(echo "$left" | tr '\n' ' ')"
	else
		# DKMS's own signing key (/var/lib/dkms/mok.*) is DKMS's, not ours
		echo "# /var/lib/dkms now:" /var/lib/dkms/*
		res PASS purge "nothing left under /lib/modules, /var/lib/dkms, /usr/src"
	fi
	rm -rf build/pkg
	;;
*)
	echo "usage: host.bash pre|post KVER" >&2
	exit 2
	;;
esac
((nfail == 0))
