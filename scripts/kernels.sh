#!/usr/bin/env bash
# The kernels the module is built and tested on, by name:
#   stock         Debian 12's kernel (6.1), installed by scripts/deps.sh
#   bookworm-bpo  bookworm-backports (6.12.x+deb12): image extracted under
#                 build/kernels/KVER, headers installed on the host (gcc-12)
#   trixie        Debian 13's kernel (6.12.x+deb13) and
#   trixie-bpo    trixie-backports (7.x): image extracted under
#                 build/kernels/KVER, headers installed in the trixie build
#                 root build/trixie-root (built there with trixie's gcc-14)
#   debug         our 6.12 debug kernel (../shared/kernels, scripts/deps.sh)
# The newest version of each line is resolved when fetched (never pinned).
#
#   scripts/kernels.sh list            "NAME KVER" per available kernel
#   scripts/kernels.sh names           the names above
#   scripts/kernels.sh kver NAME       KVER, or exit 1 with the reason
#   scripts/kernels.sh fetch [NAME..]  fetch/refresh the Debian kernels
#                                      (default: the three fetched lines);
#                                      a line that cannot be fetched is
#                                      recorded with the reason (kver says it)
#   scripts/kernels.sh image|moddir|kdir|root KVER   paths for one kernel
# Nothing here changes the host's apt sources: bookworm-backports is read
# with a private apt state under build/apt-bookworm-bpo, trixie through the
# build root's own apt.
set -euo pipefail
_ktop=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIW_KSTATE=$_ktop/build/kernels
SIW_TROOT=$_ktop/build/trixie-root

kernel_names() { echo "stock bookworm-bpo trixie trixie-bpo debug"; }

_pick() { # glob-pattern -> newest kver with image + headers
	local pat=$1 f k best=
	for f in /boot/vmlinuz-$pat; do
		[[ -e $f ]] || continue
		k=${f#/boot/vmlinuz-}
		[[ -r $f && -e /lib/modules/$k/build/Makefile ]] || continue
		best+="$k"$'\n'
	done
	[[ -n $best ]] || return 1
	printf '%s' "$best" | sort -V | tail -n1
}

_stock() { # the ABI linux-image-amd64 pulls, else the newest 6.1
	local k
	k=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
		grep -o 'linux-image-[0-9][^ ,]*-amd64' | head -n1 || true)
	k=${k#linux-image-}
	if [[ -n $k && -r /boot/vmlinuz-$k && -e /lib/modules/$k/build/Makefile ]]; then
		echo "$k"
	else
		_pick '6.1.*-amd64'
	fi
}

kernel_kver() {
	case $1 in
	stock) _stock || { echo "no stock kernel: need /boot/vmlinuz-6.1.*-amd64 and matching linux-headers (run scripts/deps.sh)" >&2; return 1; } ;;
	debug) _pick '6.12.*-siwdebug' || { echo "debug kernel not installed (no /boot/vmlinuz-6.12.*-siwdebug with headers; debs expected in ../shared/kernels or \$SIW_SHARED/kernels)" >&2; return 1; } ;;
	bookworm-bpo | trixie | trixie-bpo)
		local st=$SIW_KSTATE/$1.status s
		[[ -e $st ]] || { echo "$1 kernel not fetched (scripts/kernels.sh fetch $1, which tests/run runs unless --no-deps)" >&2; return 1; }
		s=$(<"$st")
		if [[ $s == ok\ * ]]; then
			local k=${s#ok }
			if [[ -r $(kernel_image "$k") && -e $(kernel_kdir_host "$k")/Makefile ]]; then
				echo "$k"; return 0
			fi
			echo "$1 kernel $k: image or headers missing (scripts/kernels.sh fetch $1)" >&2
		else
			echo "${s#fail }" >&2
		fi
		return 1
		;;
	*) echo "unknown kernel name '$1' ($(kernel_names))" >&2; return 2 ;;
	esac
}

# kernel_name KVER -> the line a kver belongs to
kernel_name() {
	case $1 in
	*siwdebug*) echo debug ;;
	*+deb12-*) echo bookworm-bpo ;;
	*+deb13-*) if [[ $1 == 6.* ]]; then echo trixie; else echo trixie-bpo; fi ;;
	*) echo stock ;;
	esac
}
# a kernel whose headers live in the trixie build root
kernel_in_root() { [[ $1 == *+deb13-* ]]; }
# image: installed in /boot or extracted under build/kernels/KVER
kernel_image() {
	if [[ -r /boot/vmlinuz-$1 ]]; then echo "/boot/vmlinuz-$1"; else echo "$SIW_KSTATE/$1/boot/vmlinuz-$1"; fi
}
# module tree the guest uses as /lib/modules/KVER
kernel_moddir() {
	if [[ -d $SIW_KSTATE/$1/lib/modules/$1 ]]; then echo "$SIW_KSTATE/$1/lib/modules/$1"; else echo "/lib/modules/$1"; fi
}
# depmod/modprobe base dir (-b/-d) for that module tree ("" = /)
kernel_modbase() {
	if [[ -d $SIW_KSTATE/$1/lib/modules/$1 ]]; then echo "$SIW_KSTATE/$1"; fi
}
# headers: path as seen by the compiler (inside the root for trixie kernels)
kernel_kdir() {
	if [[ -e /lib/modules/$1/build/Makefile ]]; then echo "/lib/modules/$1/build"
	elif kernel_in_root "$1"; then echo "/usr/src/linux-headers-$1"
	else echo "$SIW_KSTATE/$1/usr/src/linux-headers-$1"; fi
}
kernel_kdir_host() {
	if kernel_in_root "$1"; then echo "$SIW_TROOT/usr/src/linux-headers-$1"; else kernel_kdir "$1"; fi
}
kernel_root() { if kernel_in_root "$1"; then echo "$SIW_TROOT"; fi; }

# Guest memory in MiB for a kver (debug kernel needs >= 3 GiB for KASAN).
kernel_mem() { case $1 in *siwdebug*) echo 3072 ;; *) echo 2048 ;; esac; }
kernel_is_debug() { [[ $1 == *siwdebug* ]]; }

# ---- fetching ------------------------------------------------------------
_mirror() { # URIs: of the host's sources for the main archive / security
	local f=/etc/apt/sources.list.d/debian.sources want=$1
	[[ -r $f ]] || return 1
	awk -v w="$want" '/^URIs:/ { for (i = 2; i <= NF; i++) if ((w == "sec") == ($i ~ /security/)) { print $i; exit } }' "$f"
}

# _inroot CMD...: run CMD in the trixie build root (private mount namespace:
# /proc, /dev and the tree bound in it vanish with the command)
_inroot() {
	mkdir -p "$SIW_TROOT$_ktop"
	# shellcheck disable=SC2016 # expanded by the inner sh
	unshare -m -- sh -c 'r=$0 t=$1; shift
		mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" &&
		mount --bind "$t" "$r$t" && exec chroot "$r" "$@"' "$SIW_TROOT" "$_ktop" "$@"
}

# The trixie build root: made once with mmdebstrap from the host's mirror,
# reused afterwards (apt inside it keeps it current).
_troot_pkgs=debian-archive-keyring,make,gcc-14,libc6-dev,kmod,xz-utils,zstd,bc,libelf-dev,libssl-dev,perl,sparse
_troot() {
	if [[ -e $SIW_TROOT/.siw-ready ]]; then
		[[ $(<"$SIW_TROOT/.siw-ready") == "$_troot_pkgs" ]] && return 0
		# made by an older version of this script: add what is missing
		if ! { _inroot apt-get -qq update && _inroot env DEBIAN_FRONTEND=noninteractive \
			apt-get -y -qq --no-install-recommends install ${_troot_pkgs//,/ }; } >"$SIW_KSTATE/trixie-root.log" 2>&1; then
			tail -n 5 "$SIW_KSTATE/trixie-root.log" >&2
			echo "updating the trixie build root failed" >&2
			return 1
		fi
		echo "$_troot_pkgs" >"$SIW_TROOT/.siw-ready"
		return 0
	fi
	local u s tmp=$SIW_TROOT.tmp
	u=$(_mirror main) || true
	[[ -n $u ]] || { echo "no URIs: in /etc/apt/sources.list.d/debian.sources" >&2; return 1; }
	s=$(_mirror sec) || true
	command -v mmdebstrap >/dev/null || { echo "mmdebstrap missing (scripts/deps.sh installs it)" >&2; return 1; }
	rm -rf "$tmp"
	local srcs=("deb $u trixie main" "deb $u trixie-updates main" "deb $u trixie-backports main")
	[[ -n $s ]] && srcs+=("deb $s trixie-security main")
	mmdebstrap --variant=apt --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		--include="$_troot_pkgs" \
		trixie "$tmp" "${srcs[@]}" >"$SIW_KSTATE/mmdebstrap.log" 2>&1 ||
		{ tail -n 5 "$SIW_KSTATE/mmdebstrap.log" >&2; echo "mmdebstrap of the trixie build root failed" >&2; return 1; }
	rm -rf "$SIW_TROOT"
	mv "$tmp" "$SIW_TROOT"
	echo "$_troot_pkgs" >"$SIW_TROOT/.siw-ready"
}

# _newest SUITES -> kver that the newest linux-image-amd64 of SUITES (an ERE
# alternation) points at; apt-cache command in $_acache
_newest() {
	local suite=$1 ver dep
	ver=$("${_acache[@]}" madison linux-image-amd64 | awk -F'|' -v s="$suite" '$3 ~ ("[ /](" s ")/") { gsub(/ /, "", $2); print $2 }' | sort -V | tail -n1)
	[[ -n $ver ]] || return 1
	dep=$("${_acache[@]}" show "linux-image-amd64=$ver" | sed -n 's/^Depends: //p' | head -n1 |
		grep -o 'linux-image-[0-9][^ ,]*-amd64' | head -n1)
	[[ -n $dep ]] || return 1
	echo "${dep#linux-image-}"
}

# _extract KVER DEB...: the image's files under build/kernels/KVER, with a
# module index made here (the packages' postinst would run depmod). From
# 7.x the image package is a stub: vmlinuz, modules and the rest come in
# linux-binary/linux-modules/linux-base-KVER packages.
_extract() {
	local k=$1 d=$SIW_KSTATE/$1 f
	shift
	rm -rf "$d.tmp"
	mkdir -p "$d.tmp"
	for f; do dpkg-deb -x "$f" "$d.tmp" || return 1; done
	# merged-/usr packages ship usr/lib/modules
	if [[ ! -e $d.tmp/lib && -d $d.tmp/usr/lib/modules ]]; then ln -s usr/lib "$d.tmp/lib"; fi
	# 7.x keeps the image at /usr/lib/modules/KVER/vmlinuz
	if [[ ! -e $d.tmp/boot/vmlinuz-$k && -e $d.tmp/lib/modules/$k/vmlinuz ]]; then
		mkdir -p "$d.tmp/boot"
		ln -s "../lib/modules/$k/vmlinuz" "$d.tmp/boot/vmlinuz-$k"
	fi
	[[ -r $d.tmp/boot/vmlinuz-$k && -d $d.tmp/lib/modules/$k ]] || { echo "$*: no vmlinuz-$k or modules" >&2; return 1; }
	depmod -b "$d.tmp" "$k" || return 1
	rm -rf "$d"
	mv "$d.tmp" "$d"
}

# _imagepkgs KVER: the packages holding the image (apt-cache in $_acache)
_imagepkgs() {
	local k=$1 p
	echo "linux-image-$k"
	for p in "linux-base-$k" "linux-modules-$k" "linux-binary-$k"; do
		"${_acache[@]}" show "$p" >/dev/null 2>&1 && echo "$p"
	done
	"${_acache[@]}" show "linux-binary-$k" >/dev/null 2>&1 ||
		{ "${_acache[@]}" show "linux-binary-unsigned-$k" >/dev/null 2>&1 && echo "linux-binary-unsigned-$k"; }
	return 0
}

_fetch_bpo12() {
	local u a=$_ktop/build/apt-bookworm-bpo k
	u=$(_mirror main) || true
	[[ -n $u ]] || { echo "no URIs: in /etc/apt/sources.list.d/debian.sources" >&2; return 1; }
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/debs"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $u bookworm-backports main" >"$a/sources.list"
	local o=(-o "Dir::Etc::SourceList=$a/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
	apt-get "${o[@]}" -qq update >"$a/update.log" 2>&1 || { tail -n 3 "$a/update.log" >&2; echo "apt-get update of bookworm-backports failed" >&2; return 1; }
	_acache=(apt-cache "${o[@]}")
	k=$(_newest bookworm-backports) || { echo "no linux-image-amd64 in bookworm-backports" >&2; return 1; }
	# the headers' own common and kbuild packages (named after the upstream
	# version) come along
	local pk=()
	mapfile -t pk < <(_imagepkgs "$k"; echo "linux-headers-$k"
		"${_acache[@]}" depends "linux-headers-$k" | grep -oE 'linux-(headers-[^ ]*-common|kbuild-[^ ]*)' | sort -u)
	(cd "$a/debs" && rm -f ./*.deb && apt-get "${o[@]}" -qq download "${pk[@]}") >"$a/download.log" 2>&1 ||
		{ tail -n 3 "$a/download.log" >&2; echo "download of ${pk[*]} failed" >&2; return 1; }
	# everything extracted under build/kernels/KVER (the headers need the
	# image package and a newer linux-base: not installed on the host); the
	# headers build with the host's gcc-12, as that kernel was built
	if [[ ! -e $SIW_KSTATE/$k/usr/src/linux-headers-$k/Makefile ]]; then
		local f img=()
		for f in "$a"/debs/*.deb; do
			case ${f##*/} in linux-headers-* | linux-kbuild-*) ;; *) img+=("$f") ;; esac
		done
		_extract "$k" "${img[@]}" || return 1
		for f in "$a"/debs/linux-headers-*.deb "$a"/debs/linux-kbuild-*.deb; do dpkg-deb -x "$f" "$SIW_KSTATE/$k" || return 1; done
		# the flavour's Makefile includes the common tree by absolute path
		sed -i "s|^include /usr/src/|include $SIW_KSTATE/$k/usr/src/|" "$SIW_KSTATE/$k/usr/src/linux-headers-$k/Makefile"
	fi
	echo "$k"
}

_fetch_trixie() { # SUITE
	local suite=$1 k
	_troot || return 1
	[[ -n ${_troot_updated:-} ]] || {
		_inroot apt-get -qq update >"$SIW_KSTATE/trixie-update.log" 2>&1 ||
			{ tail -n 3 "$SIW_KSTATE/trixie-update.log" >&2; echo "apt-get update in the trixie build root failed" >&2; return 1; }
		_troot_updated=1
	}
	_acache=(_inroot apt-cache)
	k=$(_newest "$suite") || { echo "no linux-image-amd64 in $suite" >&2; return 1; }
	if [[ ! -e $SIW_TROOT/usr/src/linux-headers-$k/Makefile ]]; then
		_inroot env DEBIAN_FRONTEND=noninteractive apt-get -y -qq --no-install-recommends install "linux-headers-$k" \
			>"$SIW_KSTATE/$k.install.log" 2>&1 ||
			{ tail -n 5 "$SIW_KSTATE/$k.install.log" >&2; echo "installing linux-headers-$k in the trixie build root failed" >&2; return 1; }
	fi
	if [[ ! -r $SIW_KSTATE/$k/boot/vmlinuz-$k ]]; then
		local dl=/var/cache/siw-debs
		local pk
		pk=$(_imagepkgs "$k" | xargs)
		# -o APT::Sandbox::User=root: the download dir is root's
		_inroot sh -c "mkdir -p $dl && cd $dl && rm -f ./*.deb && apt-get -qq -o APT::Sandbox::User=root download $pk" \
			>"$SIW_KSTATE/$k.download.log" 2>&1 ||
			{ tail -n 3 "$SIW_KSTATE/$k.download.log" >&2; echo "download of linux-image-$k failed" >&2; return 1; }
		_extract "$k" "$SIW_TROOT$dl"/*.deb || return 1
		rm -f "$SIW_TROOT$dl"/*.deb
	fi
	echo "$k"
}

# kernel_fetch NAME: resolve + fetch; records "ok KVER" or "fail REASON"
kernel_fetch() {
	local n=$1 k err rc=0
	mkdir -p "$SIW_KSTATE"
	err=$(mktemp)
	case $n in
	bookworm-bpo) k=$(_fetch_bpo12 2>"$err") || rc=1 ;;
	trixie) k=$(_fetch_trixie 'trixie|trixie-updates|trixie-security' 2>"$err") || rc=1 ;;
	trixie-bpo) k=$(_fetch_trixie trixie-backports 2>"$err") || rc=1 ;;
	*) echo "kernels.sh: $n is not fetched from Debian" >&2; rm -f "$err"; return 2 ;;
	esac
	if ((rc == 0)); then
		echo "ok $k" >"$SIW_KSTATE/$n.status"
		echo "$n $k"
	else
		local why
		why=$(tr '\n' ' ' <"$err" | sed 's/ *$//')
		# keep a kernel fetched before when only the refresh failed
		if [[ -e $SIW_KSTATE/$n.status && $(<"$SIW_KSTATE/$n.status") == ok\ * ]] &&
			kernel_kver "$n" >/dev/null 2>&1; then
			echo "$n $(kernel_kver "$n") (refresh failed, kept: $why)"
		else
			echo "fail cannot fetch the $n kernel: $why" >"$SIW_KSTATE/$n.status"
			echo "$n SKIP: $why"
		fi
	fi
	rm -f "$err"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	case ${1:-list} in
	list) for n in $(kernel_names); do k=$(kernel_kver "$n" 2>/dev/null) && echo "$n $k"; done; true ;;
	names) kernel_names ;;
	kver) kernel_kver "${2:?name}" ;;
	mem) kernel_mem "${2:?kver}" ;;
	image | moddir | kdir | root) "kernel_$1" "${2:?kver}" ;;
	fetch)
		shift
		(($#)) || set -- bookworm-bpo trixie trixie-bpo
		for n; do kernel_fetch "$n"; done
		;;
	*) echo "usage: $0 list|names|kver NAME|mem KVER|fetch [NAME..]|image|moddir|kdir|root KVER" >&2; exit 2 ;;
	esac
fi
