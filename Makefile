# SPDX-License-Identifier: GPL-2.0
# Out-of-tree build of siw.ko.
#   make                      build against the running kernel's headers,
#                             else the newest installed headers
#   make KVER=6.1.0-57-amd64  build for that kernel: installed headers, or
#                             one fetched by scripts/kernels.sh (compiler:
#                             the kernel's own, via the trixie build root
#                             for Debian 13 kernels)
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
# tree with scripts/kernels.sh (scripts/build.sh builds in a copy and
# passes it)
SIW_TOP ?= $(SRC)
KERNELS := $(SIW_TOP)/scripts/kernels.sh

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
# installed headers, or a kernel fetched by scripts/kernels.sh: extracted
# under build/kernels/ (bookworm-backports) or in the trixie build root
ifneq ($(wildcard /lib/modules/$(KVER)/build/Makefile),)
KDIR := /lib/modules/$(KVER)/build
else ifneq ($(wildcard $(KERNELS)),)
KDIR := $(shell $(KERNELS) kdir $(KVER))
SIW_ROOT ?= $(shell $(KERNELS) root $(KVER))
else
KDIR := /lib/modules/$(KVER)/build
endif
endif

# A kernel from the trixie build root is built inside it, with the compiler
# it was built with (gcc-14): chroot in a private mount namespace with this
# tree bound at the same path.
ifneq ($(SIW_ROOT),)
KRUN := unshare -m -- sh -c 'r=$$0 t=$$1; shift; mkdir -p "$$r$$t" && \
	mount -t proc proc "$$r/proc" && mount --rbind /dev "$$r/dev" && \
	mount --bind "$$t" "$$r$$t" && exec chroot "$$r" "$$@"' $(SIW_ROOT) $(SRC)
endif
endif

KBUILD_ARGS := -C $(KDIR) M=$(SRC) CONFIG_RDMA_SIW=m

.PHONY: all modules clean install install-man check deb

all modules:
	$(KRUN) $(MAKE) $(KBUILD_ARGS) modules

# Not kbuild's clean: that deletes every *.ko below this directory, the
# per-kernel builds in build/<kver>/ included.
CLEAN_DIRS := . tests/kunit
clean:
	rm -f $(foreach d,$(CLEAN_DIRS),$(addprefix $(SRC)/$(d)/,*.o *.ko *.mod *.mod.c \
		.*.cmd *.o.d *.symvers *.order .*.o.d *.gcno *.gcda)) $(SRC)/Module.symvers $(SRC)/modules.order
	rm -rf $(SRC)/.tmp_versions

install: modules install-man
	$(MAKE) $(KBUILD_ARGS) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(notdir $(patsubst %/build,%,$(KDIR)))

install-man:
	install -D -m 0644 $(SRC)/siw.7 $(DESTDIR)$(MANDIR)/man7/siw.7

deb:
	$(SRC)/scripts/deb.sh

check:
	$(KRUN) $(MAKE) $(KBUILD_ARGS) W=1 C=2 CF="-D__CHECK_ENDIAN__" modules
endif
