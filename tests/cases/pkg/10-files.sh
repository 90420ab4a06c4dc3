#!/usr/bin/env bash
# The installed siw-dkms package (host.bash pre installed it on the host;
# the guest sees the host's files): version from VERSION, dkms.conf with
# that version, the unit passes systemd-analyze verify, siw(7) renders
# without a warning (mandoc -T lint, groff -ww, man --warnings), from the
# tree and as installed.
# timeout: 120
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd dpkg-query mandoc groff man systemd-analyze
ver=$(tr -d '[:space:]' <"$SIW_TOP/VERSION")

st=$(dpkg-query -W -f='${db:Status-Status} ${Version}' siw-dkms 2>/dev/null) ||
	fail "siw-dkms is not installed (tests/run installs it on the host: tests/cases/pkg/host.bash pre)"
[[ $st == "installed $ver" ]] || fail "siw-dkms: '$st', expected 'installed $ver'"
info "siw-dkms $ver installed"
files=$(dpkg -L siw-dkms)
for f in /lib/systemd/system/siw@.service /usr/libexec/siw/siw-link \
	/usr/share/man/man7/siw.7.gz "/usr/src/siw-$ver/dkms.conf" "/usr/src/siw-$ver/VERSION"; do
	grep -qx "$f" <<<"$files" || fail "package does not ship $f"
done
grep -qx "PACKAGE_VERSION=\"$ver\"" "/usr/src/siw-$ver/dkms.conf" ||
	fail "dkms.conf: $(grep PACKAGE_VERSION "/usr/src/siw-$ver/dkms.conf")"
[[ -x /usr/libexec/siw/siw-link ]] || fail "siw-link not executable"
[[ $(dpkg-query -W -f='${Depends}' siw-dkms) == *dkms* ]] || fail "siw-dkms does not depend on dkms"
rec=$(dpkg-query -W -f='${Recommends}' siw-dkms)
for p in rdma-core ibverbs-providers rdmacm-utils perftest; do
	[[ ", $rec," == *", $p,"* ]] || fail "Recommends lacks $p: $rec"
done

# the unit, as an instance (a template alone cannot be verified)
out=$(systemd-analyze verify siw@eth0.service 2>&1) || fail "systemd-analyze verify siw@eth0.service: $out"
[[ -z $out ]] || fail "systemd-analyze verify siw@eth0.service complained: $out"
info "systemd-analyze verify siw@eth0.service: clean"

# the manual page
for m in "$SIW_TOP/siw.7" /usr/share/man/man7/siw.7.gz; do
	out=$(mandoc -T lint -W warning "$m" 2>&1) || fail "mandoc -T lint $m: $out"
	[[ -z $out ]] || fail "mandoc -T lint $m: $out"
	out=$(zcat -f "$m" | groff -ww -man -Tutf8 -z 2>&1) || fail "groff -ww $m: $out"
	[[ -z $out ]] || fail "groff -ww $m: $out"
	out=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null) || fail "man -l $m: $out"
	[[ -z $out ]] || fail "man --warnings -l $m: $out"
done
cmp -s <(zcat /usr/share/man/man7/siw.7.gz) "$SIW_TOP/siw.7" || fail "installed siw.7 differs from the tree's"
info "siw(7): no warnings (mandoc, groff -ww, man --warnings)"
echo "pkg files passed"
