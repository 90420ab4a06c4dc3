#!/usr/bin/env bash
# Build the Debian package siw-dkms_<VERSION>_all.deb with Debian's own
# tooling (dpkg-buildpackage, debhelper, dh-dkms).
#
# usage: scripts/deb.sh [OUTDIR]      (default: build/deb)
#
# The version comes from the VERSION file, the one place it is kept: the
# package sources are staged in OUTDIR/siw-dkms-<VERSION>/ with a
# debian/changelog written for that version, and dh_dkms -V puts it into
# dkms.conf. Installs debhelper and dh-dkms with apt when missing. Prints
# the path of the .deb on success; the build log is OUTDIR/build.log.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$top/build/deb}
export DEBIAN_FRONTEND=noninteractive

ver=$(tr -d '[:space:]' <"$top/VERSION")
[[ $ver =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || { echo "deb.sh: bad version '$ver' in VERSION" >&2; exit 1; }

need=()
for p in dpkg-dev debhelper dh-dkms dkms rsync; do
	[[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || need+=("$p")
done
if ((${#need[@]})); then
	echo "deb.sh: installing ${need[*]}" >&2
	SUDO=
	[[ $(id -u) -eq 0 ]] || SUDO=sudo
	$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/tmp/siw-deb-apt.log 2>&1 || {
		$SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/tmp/siw-deb-apt.log 2>&1
	} || { tail -n 20 /tmp/siw-deb-apt.log >&2; echo "deb.sh: apt-get install failed" >&2; exit 1; }
fi

stage=$out/siw-dkms-$ver
mkdir -p "$out"
rm -rf "$stage" "$out"/siw-dkms_*
# what the package ships: module sources, DKMS and unit files, man page
rsync -a \
	--include='/*.c' --include='/Kbuild' --include='/Makefile' --include='/Kconfig' \
	--include='/VERSION' --include='/dkms.conf' --include='/siw.7' \
	--include='/include/***' --include='/systemd/***' --include='/debian/***' \
	--exclude='*' "$top/" "$stage/"

rev=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
when=$(git -C "$top" log -1 --format=%aD 2>/dev/null || date -R)
cat >"$stage/debian/changelog" <<EOF
siw-dkms ($ver) unstable; urgency=medium

  * siw $ver, built from $rev.

 -- siw developers <siw@localhost>  $when
EOF

if ! (cd "$stage" && dpkg-buildpackage -b -uc -us) >"$out/build.log" 2>&1; then
	tail -n 30 "$out/build.log" >&2
	echo "deb.sh: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
fi
deb=$out/siw-dkms_${ver}_all.deb
[[ -e $deb ]] || { echo "deb.sh: $deb was not produced (log: $out/build.log)" >&2; exit 1; }
echo "$deb"
