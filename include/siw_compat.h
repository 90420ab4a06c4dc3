/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Small named helpers for kernel API differences between the kernels we
 * build for (6.1 and later). Keep every version test in this file.
 */
#ifndef _SIW_COMPAT_H
#define _SIW_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/net.h>
#include <net/sock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
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

/*
 * 6.17 gives reg_user_mr a DMA handle before udata. siw offers no
 * alloc_dmah, so ib_uverbs never passes one (it stays NULL, unused).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define SIW_REG_MR_DMAH_ARG	struct ib_dmah *dmah,
#else
#define SIW_REG_MR_DMAH_ARG
#endif

/*
 * ib_uverbs, which user verbs need: up to 6.12 siw uses its symbols
 * (ib_umem), so modprobe loads it first; later kernels (7.x) have those
 * in ib_core, and siw_init() loads it itself (siw_load_uverbs()).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0) && \
	IS_MODULE(CONFIG_INFINIBAND_USER_ACCESS)
#define SIW_LOAD_UVERBS	1
#else
#define SIW_LOAD_UVERBS	0
#endif

/*
 * Pin a user virtual address range: ib_umem_get() is ib_umem_get_va()
 * from 7.2 (Debian's 7.2 headers, the oldest 7.x we build for).
 */
static inline struct ib_umem *siw_umem_get(struct ib_device *dev,
					   unsigned long addr, size_t len,
					   int access)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
	return ib_umem_get_va(dev, addr, len, access);
#else
	return ib_umem_get(dev, addr, len, access);
#endif
}

/* 6.19 types the address of kernel_bind()/kernel_connect() sockaddr_unsized */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0)
#define SIW_SOCKADDR(a)	((struct sockaddr_unsized *)(a))
#else
#define SIW_SOCKADDR(a)	((struct sockaddr *)(a))
#endif

static inline int siw_kernel_bind(struct socket *s,
				  struct sockaddr_storage *a, int len)
{
	return kernel_bind(s, SIW_SOCKADDR(a), len);
}

static inline int siw_kernel_connect(struct socket *s,
				     struct sockaddr_storage *a, int len,
				     int flags)
{
	return kernel_connect(s, SIW_SOCKADDR(a), len, flags);
}

/*
 * 6.17 adds WQ_PERCPU; 7.x warns on a workqueue that is neither
 * WQ_PERCPU nor WQ_UNBOUND.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define SIW_WQ_PERCPU	WQ_PERCPU
#else
#define SIW_WQ_PERCPU	0
#endif

/*
 * A driver-mapped area that must neither grow (mremap) nor go into a core
 * dump, as remap_vmalloc_range() marks it. vm_flags is written through
 * vm_flags_set() from 6.3.
 */
static inline void siw_vma_fixed(struct vm_area_struct *vma)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
}

/*
 * A kernel socket holds no reference on its network namespace, so
 * tcp_close() stops its timers (since 6.9, and in the stable kernels we
 * build for): after an orderly release TCP would never retransmit the
 * data or the FIN it still owes the peer. Taking the reference a user
 * socket holds lets the orphan finish on its own. The helper,
 * sk_net_refcnt_upgrade(), came with 6.15 and stable 6.12 (Kbuild looks
 * for it: a version test misses the backport); before it, the socket's
 * fields are set as the kernel's own SMB client does. The reference is
 * taken only while the namespace lives (maybe_get_net()).
 *
 * Return: false if the namespace is already going away.
 */
static inline bool siw_sock_hold_net(struct sock *sk)
{
	struct net *net = sock_net(sk);

	if (!maybe_get_net(net))
		return false;
#ifdef SIW_HAVE_SK_NET_REFCNT_UPGRADE
	sk_net_refcnt_upgrade(sk);
	put_net(net);
#else
	netns_tracker_alloc(net, &sk->ns_tracker, GFP_KERNEL);
	sk->sk_net_refcnt = 1;
	sock_inuse_add(net, 1);
#endif
	return true;
}

#endif
