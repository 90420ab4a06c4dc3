#!/usr/bin/env bash
# The demo: install deps, build siw for the stock kernel, boot it, load our
# module, create siw devices on a veth pair between two network namespaces
# and show them (rdma link show, ibv_devinfo -v).
#   scripts/demo.sh   (then rping and ib_write_bw between the namespaces;
#                      SIW_DEMO_TRAFFIC=0 skips the traffic)
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
scripts/deps.sh
kver=$(scripts/kernels.sh kver stock)
echo "== building siw for $kver"
mkdir -p build/logs
scripts/build.sh "$kver" >build/logs/demo-build.log 2>&1 ||
	{ tail -n 40 build/logs/demo-build.log; echo "demo: build failed" >&2; exit 1; }
echo "== booting $kver (console log build/logs/demo.log)"
exec scripts/vm.sh --kernel stock --timeout 900 --log "$top/build/logs/demo.log" tests/demo-guest.sh
