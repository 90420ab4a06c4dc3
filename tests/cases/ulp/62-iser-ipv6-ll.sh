#!/usr/bin/env bash
# iSER over an IPv6 link-local address (issue 22): ulp/60-iser with its
# portal, discovery, login and data checks on fe80::89:1%ulp0
# ([fe80::89:1%ulp0]:3260), the login's TCP connection an IPv6 one.
# timeout: 400
# timeout-debug: 1500
ISER_V6=ll
# shellcheck source=tests/cases/ulp/60-iser.sh
source "$(dirname "$0")/60-iser.sh"
