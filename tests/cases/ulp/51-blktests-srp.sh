#!/usr/bin/env bash
# blktests' srp group over siw (issue 22): the SCSI RDMA Protocol
# initiator (ib_srp) and LIO's SRP target (ib_srpt) over siw, with
# dm-multipath, scsi_debug and null_blk, run by ulp/50-blktests with
# BT_GROUP=srp (see there), which starts udevd for it: the multipath
# tests find their devices by udev's /dev/disk/by-id/dm-uuid-mpath-*
# links. --full only. 2026-12-03, stock: 13 passed, srp/003 and 004 not
# run by blktests (no legacy device mapper since 5.0), 1526 s.
# timeout: 2400
# timeout-debug: 6000
BT_GROUP=srp
# shellcheck source=tests/cases/ulp/50-blktests.sh
source "$(dirname "$0")/50-blktests.sh"
