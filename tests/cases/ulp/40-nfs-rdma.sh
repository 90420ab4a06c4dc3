#!/usr/bin/env bash
# NFS over RDMA on siw inside one guest: knfsd exports a tmpfs with an RDMA
# listener (portlist "rdma 20049", svcrdma), the client mounts it over
# xprtrdma at the siw device's own address (siw0 on veth ulp0), NFSv3 and
# NFSv4.2 (4.0 on kernels without NFS_V4_2): files 0 B .. 16 MiB (v3) / 64 MiB (v4.2) (2 / 4 MiB on the
# debug kernel) written,
# checked on the server side and read back (buffered after drop_caches and
# O_DIRECT), renamed, deleted; clean unmount; server stopped.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd rdma ss mount.nfs sha256sum
m=$(dmesg_mark)
step "${RDEV_PFX}0 on ulp0"
ulp_siw_local
step "nfsd with rdma listener"
nfs_server_up
for vers in 3 $(nfs_v4_vers); do
	mnt=/mnt/ulp-nfs$vers
	step "mount vers=$vers proto=rdma"
	nfs_mount "$ULP_IP" "$vers" "$mnt"
	qps=$(ulp_rdma_qps)
	((qps >= 2)) || ulp_fail "NFS/RDMA mount but only $qps QPs on $RDEV"
	step "files over NFSv$vers ($qps QPs on $RDEV)"
	NFS_MAX=$(scale 16777216 2097152)
	[[ $vers == 3 ]] || NFS_MAX=$(scale 67108864 4194304)
	nfs_client_exercise "$mnt" "v$vers" "$NFS_EXPORT"
	step "umount"
	nfs_umount "$mnt"
done
nfs_server_down
wait_for 30 ulp_no_qps || ulp_fail "QPs left on $RDEV after umount and nfsd stop: $(rdma res show qp)"
dmesg_problems_since "$m"
step "nfs over rdma passed"
