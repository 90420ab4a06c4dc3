/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Small named helpers for kernel API differences between the kernels we
 * build for (6.1 and later). Keep every version test in this file.
 */
#ifndef _SIW_COMPAT_H
#define _SIW_COMPAT_H

#include <linux/version.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
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

/*
 * Zero-copy transmit release callback: a plain function pointer in the
 * ubuf_info up to 6.9, a const ubuf_info_ops table from 6.10.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define SIW_DEFINE_UBUF_OPS(name, fn) \
	static const struct ubuf_info_ops name = { .complete = fn }
#define siw_ubuf_bind(u, name)	((u)->ops = &(name))
#else
#define SIW_DEFINE_UBUF_OPS(name, fn) \
	static void (*const name)(struct sk_buff *, struct ubuf_info *, \
				  bool) = fn
#define siw_ubuf_bind(u, name)	((u)->callback = (name))
#endif

#endif
