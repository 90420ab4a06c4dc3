#!/usr/bin/env bash
# blktests' nvme group over siw, short form for the default tier (issue
# 22): nvme/003 (discovery controller with keep-alive), nvme/004 (a
# subsystem set up, connected and torn down) and nvme/010 (data
# verification with fio over NVMe/RDMA, file-backed namespace), run by
# ulp/50-blktests (see there) with the same checks. The whole group:
# ulp/50-blktests (--full).
# timeout: 900
# timeout-debug: 2400
BT_GROUP=nvme
BT_SEL="nvme/003 nvme/004 nvme/010"
# shellcheck source=tests/cases/ulp/50-blktests.sh
source "$(dirname "$0")/50-blktests.sh"
