/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Small named helpers for kernel API differences between the kernels we
 * build for (6.1 and later). Keep every version test in this file.
 */
#ifndef _SIW_COMPAT_H
#define _SIW_COMPAT_H

#include <linux/version.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/* 6.11 passes the uverbs attribute bundle to create_cq */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define SIW_CREATE_CQ_ARG struct uverbs_attr_bundle
static inline struct ib_udata *siw_cq_udata(struct uverbs_attr_bundle *a)
{
	return a ? &a->driver_udata : NULL;
}
#else
#define SIW_CREATE_CQ_ARG struct ib_udata
static inline struct ib_udata *siw_cq_udata(struct ib_udata *u)
{
	return u;
}
#endif

#endif
