#!/usr/bin/env bash
# NFS over RDMA on siw between two guests: role b runs knfsd (tmpfs export,
# RDMA listener 20049), role a mounts it over xprtrdma with vers=3 and
# vers=4.2 (4.0 on kernels without NFS_V4_2): files 0 B .. 16 MiB / 32 MiB (debug
# kernel: v4 only, 4 MiB)
# written, checked by the server against the same deterministic patterns,
# read back (drop_caches, O_DIRECT), renamed, deleted; clean unmount.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd rdma ss sha256sum openssl
[[ -n ${SIW_ROLE:-} ]] || skip "pair group case run outside a pair"
[[ $SIW_ROLE == a ]] && need_cmd mount.nfs
[[ $SIW_ROLE == b ]] && need_cmd rpc.nfsd exportfs rpc.mountd rpcbind
m=$(dmesg_mark)
ulp_siw_pair
T=$(scale 300 1200)
# the debug kernel mounts NFSv4 only here (v3 and v4 both in the one-guest
# ulp group there): CI time
NFS_VERS="3 $(nfs_v4_vers)"
is_debug_kernel && NFS_VERS=$(nfs_v4_vers)
if [[ $SIW_ROLE == b ]]; then
	step "nfsd with rdma listener on $ULP_IP"
	nfs_server_up
	ulp_barrier server-up "$T"
	for vers in $NFS_VERS; do
		NFS_MAX=$(scale 16777216 2097152)
		[[ $vers == 3 ]] || NFS_MAX=$(scale 33554432 4194304)
		ulp_barrier "v$vers-written" "$T"
		# regenerate the client's patterns and compare the server's files
		mkdir -p "$TMPD/x"
		( nfs_files_write "$TMPD/x" "v$vers" ) >/dev/null
		if (nfs_files_check "$NFS_EXPORT/v$vers" "v$vers") 2>"$TMPD/chk"; then
			info "server side: v$vers files match"
			ulp_barrier "v$vers-server-ok" "$T"
		else
			cat "$TMPD/chk" >&2
			ulp_barrier "v$vers-server-BAD" "$T"
			fail "server-side files written over NFSv$vers differ"
		fi
		rm -rf "$TMPD/x"
		ulp_barrier "v$vers-done" "$T"
		[[ ! -e $NFS_EXPORT/v$vers ]] || ulp_fail "server still has v$vers after the client removed it"
	done
	ulp_barrier client-done "$T"
	nfs_server_down
else
	ulp_barrier server-up "$T"
	for vers in $NFS_VERS; do
		NFS_MAX=$(scale 16777216 2097152)
		[[ $vers == 3 ]] || NFS_MAX=$(scale 33554432 4194304)
		mnt=/mnt/ulp-nfs$vers
		step "mount $SIW_PEER_IP vers=$vers proto=rdma"
		nfs_mount "$SIW_PEER_IP" "$vers" "$mnt"
		step "files over NFSv$vers"
		d=$mnt/v$vers t0=$SECONDS
		mkdir "$d" || ulp_fail "mkdir $d failed"
		nfs_files_write "$d" "v$vers"
		info "written in $((SECONDS - t0)) s"
		ulp_barrier "v$vers-written" "$T"
		ulp_barrier "v$vers-server-ok" "$T"
		echo 3 >/proc/sys/vm/drop_caches
		nfs_files_check "$d" "v$vers"
		nfs_files_check_direct "$d" "v$vers"
		for sz in $(nfs_sizes); do mv "$d/f$sz" "$d/f$sz.renamed" || ulp_fail "rename f$sz failed"; done
		echo 3 >/proc/sys/vm/drop_caches
		nfs_files_check "$d" "v$vers" .renamed
		rm -f "$d"/f*.renamed || ulp_fail "rm failed"
		rmdir "$d" || ulp_fail "rmdir $d failed: $(ls -la "$d")"
		info "checked, renamed, removed in $((SECONDS - t0)) s"
		nfs_umount "$mnt"
		ulp_barrier "v$vers-done" "$T"
	done
	ulp_barrier client-done "$T"
fi
wait_for 30 ulp_no_qps || ulp_fail "QPs left on $RDEV: $(rdma res show qp)"
dmesg_problems_since "$m"
step "pair nfs passed ($SIW_ROLE)"
