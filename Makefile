# SPDX-License-Identifier: GPL-2.0
# Out-of-tree build of siw.ko.
#   make                      build against the running kernel's headers,
#                             else the newest installed headers
#   make KVER=6.1.0-57-amd64  build for that installed kernel
#   make KDIR=/path/to/build  build against that tree
#   make install              install into /lib/modules/KVER/updates + depmod,
#                             and the siw(7) manual page into MANDIR
#   make check                sparse (C=2) and W=1 build
#   make deb                  the Debian package siw-dkms_VERSION_all.deb
#                             (scripts/deb.sh; no kernel headers needed)
# kbuild itself reads Kbuild; this is for a kbuild that reads Makefile
# (src set). Not KERNELRELEASE: DKMS passes that to every make it runs.
ifneq ($(src),)
include $(src)/Kbuild
else

SRC := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
MANDIR ?= /usr/local/share/man

# goals that need no kernel tree
NOKERNEL_GOALS := deb install-man
ifneq ($(filter-out $(NOKERNEL_GOALS),$(or $(MAKECMDGOALS),all)),)
ifeq ($(KDIR),)
ifeq ($(KVER),)
KVER := $(shell uname -r)
ifeq ($(wildcard /lib/modules/$(KVER)/build/Makefile),)
KVER := $(shell ls -d /lib/modules/*/build/Makefile 2>/dev/null | \
	  cut -d/ -f4 | sort -V | tail -n 1)
ifeq ($(KVER),)
$(error no kernel headers found; install linux-headers-amd64 or set KDIR)
endif
$(info siw: running kernel has no headers, building for $(KVER))
endif
endif
KDIR := /lib/modules/$(KVER)/build
endif
endif

KBUILD_ARGS := -C $(KDIR) M=$(SRC) CONFIG_RDMA_SIW=m

.PHONY: all modules clean install install-man check deb

all modules:
	$(MAKE) $(KBUILD_ARGS) modules

clean:
	$(MAKE) $(KBUILD_ARGS) clean

install: modules install-man
	$(MAKE) $(KBUILD_ARGS) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(notdir $(patsubst %/build,%,$(KDIR)))

install-man:
	install -D -m 0644 $(SRC)/siw.7 $(DESTDIR)$(MANDIR)/man7/siw.7

deb:
	$(SRC)/scripts/deb.sh

check:
	$(MAKE) $(KBUILD_ARGS) W=1 C=2 CF="-D__CHECK_ENDIAN__" modules
endif
