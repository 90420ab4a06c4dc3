#!/usr/bin/env bash
# iSER over IPv6 (issue 22): ulp/60-iser with its target portal, login and
# data checks on the ULA fd00:89::1 ([fd00:89::1]:3260), the login's TCP
# connection checked to be an IPv6 one.
# timeout: 400
# timeout-debug: 1500
ISER_V6=1
# shellcheck source=tests/cases/ulp/60-iser.sh
source "$(dirname "$0")/60-iser.sh"
