// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: verbs entry points (struct ib_device_ops).
 *
 * Queues are rings of fixed size elements in zeroed vmalloc pages; user
 * space rings are mapped into the process through rdma_user_mmap
 * entries. Producers fill an element and set SIW_WQE_VALID last; the
 * consumer owns the element until it clears VALID again. The data path
 * (siw_queue.c) consumes; this file only produces for kernel consumers and
 * sets the rings up.
 */

#include <linux/vmalloc.h>
#include <linux/memcontrol.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/etherdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include <kunit/visibility.h>

#include "siw.h"

/*
 * libsiw fails QP creation when rq_key equals SIW_INVAL_UOBJ_KEY, even
 * with an SRQ where it maps no RQ. For that case we return this key: it
 * is not page aligned, so no mmap() can ever use it.
 */
#define SIW_NO_RING_KEY		((u64)SIW_UOBJ_MAX_KEY)

/* QP rights consumers may grant the peer */
#define SIW_QP_ACCESS							\
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |		\
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC |		\
	 IB_ACCESS_MW_BIND)

/* What iw_cm would grant anyway; used until modify_qp says otherwise. */
#define SIW_QP_ACCESS_DEFAULT	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

/* modify_qp attributes meaningful for an iWARP RC QP */
#define SIW_QP_ATTR_MASK						\
	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS | IB_QP_PORT |	\
	 IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC)

/*
 * IB transport tuning that TCP does for us. Tools written for both
 * transports (perftest) set these on iWARP too: accepted, ignored.
 * Attributes that would set up an IB connection (AV, DEST_QPN, ...)
 * are refused.
 */
#define SIW_QP_ATTR_IGNORED						\
	(IB_QP_EN_SQD_ASYNC_NOTIFY | IB_QP_PKEY_INDEX | IB_QP_PATH_MTU |	\
	 IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_RQ_PSN |	\
	 IB_QP_SQ_PSN | IB_QP_MIN_RNR_TIMER)

/* ---------------------------------------------------------- helpers */

/*
 * Take one object of a counted kind, or say (errno and log line) that the
 * device is full.
 */
static int siw_count_get(struct siw_device *sdev, atomic_t *count, u32 max,
			 const char *what)
{
	if (atomic_inc_return(count) <= max)
		return 0;
	atomic_dec(count);
	siw_warn(sdev, "out of %s: the device's limit is %u\n", what, max);
	return -ENOMEM;
}

/*
 * Accept only request data we understand (unknown bytes must be zero)
 * and response buffers large enough for what we will write.
 */
static int siw_udata_check(struct siw_device *sdev, struct ib_udata *udata,
			   size_t in_known, size_t out_need)
{
	if (!udata)
		return 0;
	if (udata->inlen > in_known &&
	    !ib_is_udata_cleared(udata, in_known, udata->inlen - in_known)) {
		siw_dbg(sdev, "unsupported request data, %zu bytes\n",
			udata->inlen);
		return -EOPNOTSUPP;
	}
	if (udata->outlen < out_need) {
		siw_dbg(sdev, "response buffer %zu bytes, need %zu\n",
			udata->outlen, out_need);
		return -EINVAL;
	}
	return 0;
}

static enum ib_mtu siw_active_mtu(struct siw_device *sdev)
{
	return ib_mtu_int_to_enum(READ_ONCE(sdev->netdev->mtu));
}

/* ------------------------------------------------ device and port */

static int siw_query_device(struct ib_device *ibdev,
			    struct ib_device_attr *attr,
			    struct ib_udata *udata)
{
	struct siw_device *sdev = to_siw_dev(ibdev);

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		siw_dbg(sdev, "unsupported request data\n");
		return -EINVAL;
	}
	memset(attr, 0, sizeof(*attr));

	attr->fw_ver = SIW_FW_VER;
	/* node GUID is the EUI-64 of the (possibly synthesized) MAC */
	attr->sys_image_guid = sdev->base.node_guid;
	attr->vendor_id = SIW_VENDOR_ID;
	attr->vendor_part_id = SIW_VENDOR_PART_ID;
	attr->max_mr_size = SIW_MAX_MR_SIZE;
	/* user MRs are page arrays, fast registration takes any block */
	attr->page_size_cap = GENMASK_ULL(63, PAGE_SHIFT);
	attr->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS;
	/* `rdma link delete` may remove us */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;

	attr->max_qp = sdev->max.qp;
	attr->max_qp_wr = SIW_MAX_QP_WR;
	attr->max_send_sge = SIW_MAX_SGE;
	attr->max_recv_sge = SIW_MAX_SGE;
	attr->max_sge_rd = SIW_MAX_SGE_RD;
	attr->max_cq = sdev->max.cq;
	attr->max_cqe = SIW_MAX_CQE;
	attr->max_mr = sdev->max.mr;
	attr->max_pd = sdev->max.pd;
	/* responder side (inbound reads) is IRD, initiator side ORD */
	attr->max_qp_rd_atom = SIW_MAX_IRD;
	attr->max_qp_init_rd_atom = SIW_MAX_ORD;
	attr->max_res_rd_atom = SIW_MAX_IRD * sdev->max.qp;
	attr->max_srq = sdev->max.srq;
	attr->max_srq_wr = SIW_MAX_SRQ_WR;
	attr->max_srq_sge = SIW_MAX_SGE;
	attr->max_fast_reg_page_list_len = SIW_MAX_FR_PAGES;
	attr->max_pkeys = 1;
	attr->atomic_cap = IB_ATOMIC_NONE;
	attr->masked_atomic_cap = IB_ATOMIC_NONE;
	return 0;
}

static int siw_query_port(struct ib_device *ibdev, u32 port,
			  struct ib_port_attr *attr)
{
	struct siw_device *sdev = to_siw_dev(ibdev);
	int rv;

	memset(attr, 0, sizeof(*attr));

	attr->state = READ_ONCE(sdev->port_state);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
			   IB_PORT_PHYS_STATE_LINK_UP :
			   IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = siw_active_mtu(sdev);
	attr->gid_tbl_len = 1;
	attr->pkey_tbl_len = 1;
	attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_DEVICE_MGMT_SUP;
	attr->max_msg_sz = SIW_MAX_MR_SIZE;

	/*
	 * ib_get_eth_speed() takes rtnl (never call this under it) and
	 * warns on each call for netdevs without link settings (lo).
	 */
	rv = -EOPNOTSUPP;
	if (sdev->netdev->ethtool_ops &&
	    sdev->netdev->ethtool_ops->get_link_ksettings)
		rv = ib_get_eth_speed(ibdev, port, &attr->active_speed,
				      &attr->active_width);
	if (rv) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static int siw_get_port_immutable(struct ib_device *ibdev, u32 port,
				  struct ib_port_immutable *imm)
{
	imm->core_cap_flags = RDMA_CORE_PORT_IWARP;
	imm->gid_tbl_len = 1;
	imm->pkey_tbl_len = 1;
	return 0;
}

/*
 * The only GID is the MAC, zero padded: rdma_cm finds the device by it.
 * A netdev without a MAC (loopback) gets the one its node GUID was made
 * of, since a zero GID never enters ib_core's GID table.
 */
static int siw_query_gid(struct ib_device *ibdev, u32 port, int index,
			 union ib_gid *gid)
{
	struct siw_device *sdev = to_siw_dev(ibdev);
	struct net_device *nd = sdev->netdev;
	const u8 *eui = (const u8 *)&sdev->base.node_guid;

	if (index) {
		siw_dbg(sdev, "no GID at index %d\n", index);
		return -EINVAL;
	}
	memset(gid, 0, sizeof(*gid));
	if (nd->addr_len == ETH_ALEN && !is_zero_ether_addr(nd->dev_addr)) {
		ether_addr_copy(gid->raw, nd->dev_addr);
	} else {
		/* undo addrconf_addr_eui48(): drop ff:fe, flip U/L back */
		gid->raw[0] = eui[0] ^ 2;
		gid->raw[1] = eui[1];
		gid->raw[2] = eui[2];
		gid->raw[3] = eui[5];
		gid->raw[4] = eui[6];
		gid->raw[5] = eui[7];
	}
	return 0;
}

/* iWARP has no partitions; ib_core's cache still reads one entry. */
static int siw_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			  u16 *pkey)
{
	if (index) {
		siw_dbg(to_siw_dev(ibdev), "no pkey at index %u\n", index);
		return -EINVAL;
	}
	*pkey = 0xffff;
	return 0;
}

static struct net_device *siw_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct net_device *nd = to_siw_dev(ibdev)->netdev;

	if (nd)
		dev_hold(nd);
	return nd;
}

/**
 * siw_port_event() - tell ib_core consumers about a port change
 * @sdev: device
 * @type: IB_EVENT_PORT_ACTIVE, IB_EVENT_PORT_ERR, IB_EVENT_GID_CHANGE...
 */
void siw_port_event(struct siw_device *sdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &sdev->base,
		.event = type,
		.element.port_num = 1,
	};

	ib_dispatch_event(&ev);
}

/* ------------------------------------------- user context and mmap */

static int siw_alloc_ucontext(struct ib_ucontext *base, struct ib_udata *udata)
{
	struct siw_device *sdev = to_siw_dev(base->device);
	struct siw_ucontext *uctx = to_siw_ctx(base);
	struct siw_uresp_alloc_ctx uresp = { .dev_id = sdev->id };
	int rv;

	rv = siw_udata_check(sdev, udata, 0, sizeof(uresp));
	if (rv)
		return rv;
	rv = siw_count_get(sdev, &sdev->num_ctx, sdev->max.ctx,
			   "user contexts");
	if (rv)
		return rv;
	uctx->sdev = sdev;

	rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
	if (rv)
		atomic_dec(&sdev->num_ctx);
	return rv;
}

static void siw_dealloc_ucontext(struct ib_ucontext *base)
{
	atomic_dec(&to_siw_dev(base->device)->num_ctx);
}

/*
 * Device going away (rdma link delete, rmmod) while a process still has it
 * open. Having this op lets ib_uverbs destroy the process's objects itself
 * and go on, instead of pinning the module and waiting for the process:
 * the QPs' outstanding work requests are flushed to their CQs as on any
 * destroy. Nothing is left to undo here: every ring is vmalloc memory
 * whose pages a mapping keeps alive until the process unmaps them, so the
 * process reads its last (flush) completions and then sees -EIO.
 */
static void siw_disassociate_ucontext(struct ib_ucontext *base)
{
	siw_info(to_siw_dev(base->device),
		 "removed while open by a process: its objects are destroyed, its work requests flushed, further calls fail with EIO\n");
}

/*
 * Map @npages of a ring from siw_ring_alloc() at the whole of @vma
 * (rdma_user_mmap_entry_get checked that their sizes match). The pages are
 * refcounted: they outlive vfree() while mapped. remap_vmalloc_range()
 * would do the same, but only for vmalloc_user() memory, which cannot be
 * allocated without warn_alloc's stack dump on failure.
 */
static int siw_map_ring(struct vm_area_struct *vma, void *ring, u32 npages)
{
	unsigned long uaddr = vma->vm_start;
	u32 i;
	int rv;

	if ((vma->vm_end - vma->vm_start) >> PAGE_SHIFT != npages)
		return -EINVAL;
	for (i = 0; i < npages; i++, uaddr += PAGE_SIZE) {
		rv = vm_insert_page(vma, uaddr,
				    vmalloc_to_page(ring + i * PAGE_SIZE));
		if (rv)
			return rv;
	}
	siw_vma_fixed(vma);
	return 0;
}

static int siw_mmap(struct ib_ucontext *base, struct vm_area_struct *vma)
{
	struct siw_device *sdev = to_siw_dev(base->device);
	struct rdma_user_mmap_entry *re;
	struct siw_mmap_entry *e;
	int rv;

	/* checks shared mapping and exact size */
	re = rdma_user_mmap_entry_get(base, vma);
	if (!re) {
		siw_dbg(sdev, "no mapping at pgoff 0x%lx, %lu bytes\n",
			vma->vm_pgoff, vma->vm_end - vma->vm_start);
		return -EINVAL;
	}
	e = container_of(re, struct siw_mmap_entry, rdma);

	rv = siw_map_ring(vma, e->addr, re->npages);
	if (rv)
		siw_dbg(sdev, "remap at pgoff 0x%lx failed: %d\n",
			vma->vm_pgoff, rv);
	rdma_user_mmap_entry_put(re);
	return rv;
}

static void siw_mmap_free(struct rdma_user_mmap_entry *re)
{
	struct siw_mmap_entry *e = container_of(re, struct siw_mmap_entry,
						rdma);

	vfree(e->addr);
	kfree(e);
}

/**
 * siw_mmap_insert() - make a ring from siw_ring_alloc() mappable
 * @uctx: user context
 * @addr: buffer, owned by the entry from now on (freed in mmap_free)
 * @size: bytes to map
 * @entry: set to the new entry
 * @key: set to the mmap offset user space passes to mmap()
 *
 * Never hands out SIW_INVAL_UOBJ_KEY, which libsiw reads as failure.
 *
 * Return: 0 or -ENOMEM. On failure @addr still belongs to the caller.
 */
static int siw_mmap_insert(struct siw_ucontext *uctx, void *addr,
			   size_t size, struct rdma_user_mmap_entry **entry,
			   u64 *key)
{
	const u32 bad = SIW_INVAL_UOBJ_KEY >> PAGE_SHIFT;
	struct siw_mmap_entry *e;
	int rv;

	e = kzalloc(sizeof(*e), SIW_GFP_USER);
	if (!e)
		return -ENOMEM;
	e->addr = addr;

	if (SIW_INVAL_UOBJ_KEY & ~PAGE_MASK) {
		rv = rdma_user_mmap_entry_insert(&uctx->base, &e->rdma, size);
	} else {
		rv = rdma_user_mmap_entry_insert_range(&uctx->base, &e->rdma,
						       size, 0, bad - 1);
		if (rv)
			rv = rdma_user_mmap_entry_insert_range(&uctx->base,
							       &e->rdma, size,
							       bad + 1,
							       U32_MAX);
	}
	if (rv) {
		kfree(e);
		return rv;
	}
	*entry = &e->rdma;
	*key = rdma_user_mmap_get_offset(&e->rdma);
	return 0;
}

/*
 * Allocate a zeroed ring of whole pages (no kernel data left in a page a
 * process maps): mappable for user objects (@uctx set), plain for kernel
 * ones. The size is the caller's choice, so a failure is one line naming
 * the device, not warn_alloc's stack dump (__GFP_NOWARN).
 */
static void *siw_ring_alloc(struct siw_device *sdev,
			    struct siw_ucontext *uctx, size_t size,
			    struct rdma_user_mmap_entry **entry, u64 *key)
{
	void *ring;

	/* a user object's ring is charged to its process's memory cgroup */
	ring = __vmalloc(PAGE_ALIGN(size), __GFP_ZERO | (uctx ? SIW_GFP_USER :
					GFP_KERNEL | __GFP_NOWARN));
	if (!ring) {
		siw_warn(sdev, "no memory for a %zu-byte ring\n", size);
		return NULL;
	}
	if (!uctx)
		return ring;
	if (siw_mmap_insert(uctx, ring, size, entry, key)) {
		siw_dbg(sdev, "no mmap key for %zu bytes\n", size);
		vfree(ring);
		return NULL;
	}
	return ring;
}

/* A mapped ring is freed by mmap_free once the entry goes away. */
static void siw_ring_free(void *ring, struct rdma_user_mmap_entry *entry)
{
	if (entry)
		rdma_user_mmap_entry_remove(entry);
	else
		vfree(ring);
}

/* ---------------------------------------------------------------- PD */

static int siw_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	struct siw_device *sdev = to_siw_dev(pd->device);
	int rv;

	rv = siw_udata_check(sdev, udata, 0, 0);
	if (rv)
		return rv;
	return siw_count_get(sdev, &sdev->num_pd, sdev->max.pd, "PDs");
}

static int siw_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	atomic_dec(&to_siw_dev(pd->device)->num_pd);
	return 0;
}

/* ---------------------------------------------------------------- CQ */

static int siw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			 SIW_CREATE_CQ_ARG *arg)
{
	struct ib_udata *udata = siw_cq_udata(arg);
	struct siw_device *sdev = to_siw_dev(ibcq->device);
	struct siw_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct siw_ucontext, base);
	struct siw_cq *cq = to_siw_cq(ibcq);
	struct siw_uresp_create_cq uresp = {};
	unsigned long flags;
	size_t size;
	int rv;

	if (attr->flags) {
		siw_dbg(sdev, "CQ flags 0x%x not supported\n", attr->flags);
		return -EOPNOTSUPP;
	}
	if (attr->cqe < 1 || attr->cqe > SIW_MAX_CQE) {
		siw_warn(sdev, "CQ of %u entries refused: 1..%u (max_cqe)\n",
			 attr->cqe, SIW_MAX_CQE);
		return -EINVAL;
	}
	rv = siw_udata_check(sdev, udata, 0, sizeof(uresp));
	if (rv)
		return rv;
	rv = siw_count_get(sdev, &sdev->num_cq, sdev->max.cq, "CQs");
	if (rv)
		return rv;

	/* libsiw is told the depth: uresp.num_cqe, below */
	cq->num_cqe = siw_cq_depth(attr->cqe);
	size = cq->num_cqe * sizeof(struct siw_cqe) + sizeof(struct siw_cq_ctrl);
	cq->queue = siw_ring_alloc(sdev, uctx, size, &cq->mmap, &uresp.cq_key);
	if (!cq->queue) {
		rv = -ENOMEM;
		goto err_count;
	}
	/* notify word lives right behind the ring, as libsiw expects */
	cq->ctrl = (struct siw_cq_ctrl *)&cq->queue[cq->num_cqe];
	spin_lock_init(&cq->lock);
	cq->user = !!udata;
	ibcq->cqe = cq->num_cqe;

	spin_lock_irqsave(&sdev->lock, flags);
	cq->id = sdev->next_cq++;
	spin_unlock_irqrestore(&sdev->lock, flags);

	if (udata) {
		uresp.cq_id = cq->id;
		uresp.num_cqe = cq->num_cqe;
		rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (rv)
			goto err_ring;
	}
	return 0;

err_ring:
	siw_ring_free(cq->queue, cq->mmap);
err_count:
	atomic_dec(&sdev->num_cq);
	return rv;
}

static int siw_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct siw_cq *cq = to_siw_cq(ibcq);

	siw_ring_free(cq->queue, cq->mmap);
	cq->queue = NULL;
	atomic_dec(&to_siw_dev(ibcq->device)->num_cq);
	return 0;
}

static enum ib_wc_opcode siw_wc_opcode(u8 op)
{
	switch (op) {
	case SIW_OP_WRITE:
		return IB_WC_RDMA_WRITE;
	case SIW_OP_READ:
	case SIW_OP_READ_LOCAL_INV:
		return IB_WC_RDMA_READ;
	case SIW_OP_RECEIVE:
		return IB_WC_RECV;
	case SIW_OP_INVAL_STAG:
		return IB_WC_LOCAL_INV;
	case SIW_OP_REG_MR:
		return IB_WC_REG_MR;
	default:
		return IB_WC_SEND;
	}
}

static void siw_wc_fill(struct ib_wc *wc, const struct siw_cqe *cqe)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->id;
	wc->status = cqe->status;
	wc->opcode = siw_wc_opcode(cqe->opcode);
	wc->byte_len = cqe->bytes;
	wc->qp = cqe->base_qp;
	wc->port_num = 1;
	if (cqe->flags & SIW_CQE_INVAL) {
		wc->wc_flags = IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = cqe->inval_stag;
	}
}

VISIBLE_IF_KUNIT int siw_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct siw_cq *cq = to_siw_cq(ibcq);
	unsigned long flags;
	int n = 0;

	/* user CQ entries carry no kernel QP pointer, and are user data */
	if (cq->user) {
		siw_dbg(to_siw_dev(ibcq->device),
			"CQ %u: kernel poll of a user CQ\n", cq->id);
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&cq->lock, flags);
	while (n < num) {
		struct siw_cqe *cqe = siw_cq_slot(cq, cq->get);

		/* pairs with the producer's release of VALID */
		if (!(smp_load_acquire(&cqe->flags) & SIW_WQE_VALID))
			break;
		siw_wc_fill(&wc[n++], cqe);
		/* slot goes back to the producer only after it was read */
		smp_store_release(&cqe->flags, 0);
		cq->get++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(siw_poll_cq);

VISIBLE_IF_KUNIT int siw_req_notify_cq(struct ib_cq *ibcq,
				       enum ib_cq_notify_flags how)
{
	struct siw_cq *cq = to_siw_cq(ibcq);
	struct siw_cqe *cqe;
	u32 want = SIW_NOTIFY_SOLICITED;

	if ((how & IB_CQ_SOLICITED_MASK) == IB_CQ_NEXT_COMP)
		want |= SIW_NOTIFY_NEXT_COMPLETION;
	WRITE_ONCE(cq->ctrl->flags, want);
	/*
	 * Store the flags, then load VALID; siw_cqe_put() stores VALID,
	 * then loads the flags. A full barrier on both sides: one of the
	 * two then sees the other's store, so a completion arriving now is
	 * either notified or reported here as missed.
	 */
	smp_mb();

	if (!(how & IB_CQ_REPORT_MISSED_EVENTS) || cq->user)
		return 0;
	/* no lock: may be called from the completion handler */
	cqe = siw_cq_slot(cq, READ_ONCE(cq->get));
	return !!(READ_ONCE(cqe->flags) & SIW_WQE_VALID);
}
EXPORT_SYMBOL_IF_KUNIT(siw_req_notify_cq);

/* --------------------------------------------------------------- SRQ */

static int siw_create_srq(struct ib_srq *ibsrq,
			  struct ib_srq_init_attr *init,
			  struct ib_udata *udata)
{
	struct siw_device *sdev = to_siw_dev(ibsrq->device);
	struct siw_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct siw_ucontext, base);
	struct siw_srq *srq = to_siw_srq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	struct siw_uresp_create_srq uresp = {};
	int rv;

	if (init->srq_type != IB_SRQT_BASIC) {
		siw_dbg(sdev, "SRQ type %d not supported\n", init->srq_type);
		return -EOPNOTSUPP;
	}
	if (!attr->max_wr || attr->max_wr > SIW_MAX_SRQ_WR ||
	    attr->max_sge > SIW_MAX_SGE) {
		siw_dbg(sdev, "SRQ size %u / %u SGEs over limits\n",
			attr->max_wr, attr->max_sge);
		return -EINVAL;
	}
	rv = siw_udata_check(sdev, udata, 0, sizeof(uresp));
	if (rv)
		return rv;
	rv = siw_count_get(sdev, &sdev->num_srq, sdev->max.srq, "SRQs");
	if (rv)
		return rv;

	srq->num_rqe = roundup_pow_of_two(attr->max_wr);
	srq->max_sge = attr->max_sge;
	srq->queue = siw_ring_alloc(sdev, uctx,
				    srq->num_rqe * sizeof(struct siw_rqe),
				    &srq->mmap, &uresp.srq_key);
	if (!srq->queue) {
		rv = -ENOMEM;
		goto err_count;
	}
	spin_lock_init(&srq->lock);
	srq->user = !!udata;
	/* the limit is armed by modify_srq only */
	srq->limit = 0;
	srq->armed = false;

	if (udata) {
		uresp.num_rqe = srq->num_rqe;
		rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (rv)
			goto err_ring;
	}
	attr->max_wr = srq->num_rqe;
	attr->srq_limit = 0;
	return 0;

err_ring:
	siw_ring_free(srq->queue, srq->mmap);
err_count:
	atomic_dec(&sdev->num_srq);
	return rv;
}

static int siw_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			  enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct siw_device *sdev = to_siw_dev(ibsrq->device);
	struct siw_srq *srq = to_siw_srq(ibsrq);
	unsigned long flags;
	int rv;

	rv = siw_udata_check(sdev, udata, 0, 0);
	if (rv)
		return rv;
	if (mask & IB_SRQ_MAX_WR) {
		siw_dbg(sdev, "SRQ resize not supported\n");
		return -EOPNOTSUPP;
	}
	if (mask & ~IB_SRQ_LIMIT) {
		siw_dbg(sdev, "SRQ attribute mask 0x%x invalid\n", mask);
		return -EINVAL;
	}
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->num_rqe) {
		siw_dbg(sdev, "SRQ limit %u over size %u\n", attr->srq_limit,
			srq->num_rqe);
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	srq->limit = attr->srq_limit;
	srq->armed = attr->srq_limit != 0;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

static int siw_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct siw_srq *srq = to_siw_srq(ibsrq);
	unsigned long flags;

	attr->max_wr = srq->num_rqe;
	attr->max_sge = srq->max_sge;
	spin_lock_irqsave(&srq->lock, flags);
	/* a fired limit event disarms; a disarmed SRQ reports 0 */
	attr->srq_limit = srq->armed ? srq->limit : 0;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

static int siw_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct siw_srq *srq = to_siw_srq(ibsrq);

	siw_ring_free(srq->queue, srq->mmap);
	srq->queue = NULL;
	atomic_dec(&to_siw_dev(ibsrq->device)->num_srq);
	return 0;
}

/* ---------------------------------------------------------------- QP */

static int siw_qp_attr_check(struct siw_device *sdev,
			     const struct ib_qp_init_attr *attr)
{
	const struct ib_qp_cap *cap = &attr->cap;

	if (attr->qp_type != IB_QPT_RC) {
		siw_dbg(sdev, "QP type %d not supported\n", attr->qp_type);
		return -EOPNOTSUPP;
	}
	if (attr->create_flags) {
		siw_dbg(sdev, "QP create flags 0x%x not supported\n",
			attr->create_flags);
		return -EOPNOTSUPP;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		siw_dbg(sdev, "QP without send or receive CQ\n");
		return -EINVAL;
	}
	if (cap->max_send_wr > SIW_MAX_QP_WR ||
	    cap->max_send_sge > SIW_MAX_SGE ||
	    cap->max_inline_data > SIW_MAX_INLINE) {
		siw_dbg(sdev, "SQ %u WRs, %u SGEs, %u inline over limits\n",
			cap->max_send_wr, cap->max_send_sge,
			cap->max_inline_data);
		return -EINVAL;
	}
	if (!attr->srq && (cap->max_recv_wr > SIW_MAX_QP_WR ||
			   cap->max_recv_sge > SIW_MAX_SGE)) {
		siw_dbg(sdev, "RQ %u WRs, %u SGEs over limits\n",
			cap->max_recv_wr, cap->max_recv_sge);
		return -EINVAL;
	}
	return 0;
}

/* Returns once nothing references the QP or its rings. */
static void siw_qp_teardown(struct siw_qp *qp)
{
	siw_qp_destroy(qp);
	siw_rx_fini(qp);
	siw_tx_fini(qp);
	siw_qp_free(qp);
}

static int siw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
			 struct ib_udata *udata)
{
	struct siw_device *sdev = to_siw_dev(ibqp->device);
	struct siw_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct siw_ucontext, base);
	struct siw_qp *qp = to_siw_qp(ibqp);
	struct siw_uresp_create_qp uresp = {};
	struct ib_qp_cap *cap = &attr->cap;
	u32 num_sqe, num_rqe = 0;
	int rv;

	rv = siw_qp_attr_check(sdev, attr);
	if (rv)
		return rv;
	rv = siw_udata_check(sdev, udata, 0, sizeof(uresp));
	if (rv)
		return rv;
	rv = siw_count_get(sdev, &sdev->num_qp, sdev->max.qp, "QPs");
	if (rv)
		return rv;

	/* at least one slot each: ib_drain_*() posts even to "empty" QPs */
	num_sqe = roundup_pow_of_two(max(1U, cap->max_send_wr));
	qp->sendq = siw_ring_alloc(sdev, uctx, num_sqe * sizeof(struct siw_sqe),
				   &qp->sq_mmap, &uresp.sq_key);
	if (!qp->sendq) {
		rv = -ENOMEM;
		goto err_count;
	}
	if (!attr->srq) {
		num_rqe = roundup_pow_of_two(max(1U, cap->max_recv_wr));
		qp->recvq = siw_ring_alloc(sdev, uctx,
					   num_rqe * sizeof(struct siw_rqe),
					   &qp->rq_mmap, &uresp.rq_key);
		if (!qp->recvq) {
			rv = -ENOMEM;
			goto err_rings;
		}
	} else {
		uresp.rq_key = SIW_NO_RING_KEY;
	}

	qp->sdev = sdev;
	qp->pd = ibqp->pd;
	qp->scq = to_siw_cq(attr->send_cq);
	qp->rcq = to_siw_cq(attr->recv_cq);
	qp->srq = attr->srq ? to_siw_srq(attr->srq) : NULL;
	qp->user = !!udata;
	qp->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;

	qp->attrs.sq_size = num_sqe;
	qp->attrs.rq_size = num_rqe;
	qp->attrs.sq_max_sges = cap->max_send_sge;
	qp->attrs.rq_max_sges = attr->srq ? 0 : cap->max_recv_sge;
	qp->attrs.max_inline = SIW_MAX_INLINE;
	/* lowered by modify_qp, then negotiated by the CM */
	qp->attrs.ird = SIW_MAX_IRD;
	qp->attrs.ord = SIW_MAX_ORD;
	qp->attrs.access = SIW_QP_ACCESS_DEFAULT;

	rv = siw_tx_init(qp);
	if (!rv) {
		rv = siw_qp_init(qp, sdev);
		if (rv)
			siw_tx_fini(qp);
	}
	if (rv) {
		siw_dbg(sdev, "QP init failed: %d\n", rv);
		goto err_rings;
	}

	if (udata) {
		uresp.qp_id = qp_id(qp);
		uresp.num_sqe = num_sqe;
		uresp.num_rqe = num_rqe;
		rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (rv) {
			siw_qp_teardown(qp);
			goto err_rings;
		}
	}

	if (udata)
		qp->memcg = get_mem_cgroup_from_mm(current->mm);
	cap->max_send_wr = num_sqe;
	cap->max_recv_wr = num_rqe;
	cap->max_recv_sge = qp->attrs.rq_max_sges;
	cap->max_inline_data = SIW_MAX_INLINE;
	siw_dbg(sdev, "QP %u: SQ %u RQ %u%s%s\n", qp_id(qp), num_sqe,
		num_rqe, qp->srq ? " SRQ" : "", udata ? " user" : "");
	return 0;

err_rings:
	siw_ring_free(qp->recvq, qp->rq_mmap);
	siw_ring_free(qp->sendq, qp->sq_mmap);
	qp->recvq = NULL;
	qp->sendq = NULL;
err_count:
	atomic_dec(&sdev->num_qp);
	return rv;
}

static int siw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct siw_qp *qp = to_siw_qp(ibqp);

	siw_qp_teardown(qp);

	siw_ring_free(qp->recvq, qp->rq_mmap);
	siw_ring_free(qp->sendq, qp->sq_mmap);
	qp->recvq = NULL;
	qp->sendq = NULL;
	atomic_dec(&qp->sdev->num_qp);
	return 0;
}

/*
 * The verbs state machine of an iWARP QP is mostly driven by the CM:
 * consumers may prepare an idle QP (INIT/RTR, rights, read depths) and
 * may tear it down (SQD: graceful close, SQE/ERR: error). Only the CM
 * moves a QP to RTS.
 */
static int siw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			 int mask, struct ib_udata *udata)
{
	struct siw_qp *qp = to_siw_qp(ibqp);
	struct siw_device *sdev = qp->sdev;
	enum ib_qp_state target = IB_QPS_RESET;
	enum siw_qp_state cur;
	unsigned long flags;
	int rv;

	rv = siw_udata_check(sdev, udata, 0, 0);
	if (rv)
		return rv;
	if (mask & ~(SIW_QP_ATTR_MASK | SIW_QP_ATTR_IGNORED)) {
		siw_dbg(sdev, "QP %u: attributes 0x%x not supported\n",
			qp_id(qp), mask & ~(SIW_QP_ATTR_MASK | SIW_QP_ATTR_IGNORED));
		return -EOPNOTSUPP;
	}
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~SIW_QP_ACCESS)) {
		siw_dbg(sdev, "QP %u: access flags 0x%x invalid\n", qp_id(qp),
			attr->qp_access_flags);
		return -EINVAL;
	}
	if (((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	     attr->max_rd_atomic > SIW_MAX_ORD) ||
	    ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	     attr->max_dest_rd_atomic > SIW_MAX_IRD)) {
		siw_dbg(sdev, "QP %u: read depth %u/%u over %u/%u\n",
			qp_id(qp), attr->max_rd_atomic,
			attr->max_dest_rd_atomic, SIW_MAX_ORD, SIW_MAX_IRD);
		return -EINVAL;
	}
	if ((mask & IB_QP_CUR_STATE) &&
	    attr->cur_qp_state != siw_qp_ib_state(qp)) {
		siw_dbg(sdev, "QP %u: not in state %d\n", qp_id(qp),
			attr->cur_qp_state);
		return -EINVAL;
	}
	if (mask & IB_QP_STATE)
		target = attr->qp_state;

	spin_lock_irqsave(&qp->state_lock, flags);
	cur = qp->attrs.state;
	rv = -EINVAL;
	if ((mask & (IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC)) &&
	    cur != SIW_QP_IDLE)
		goto out_unlock;
	/* rights may change while connected (siw_qp_to_rts()) */
	if ((mask & IB_QP_ACCESS_FLAGS) && cur != SIW_QP_IDLE &&
	    cur != SIW_QP_RTS)
		goto out_unlock;
	if (mask & IB_QP_STATE) {
		switch (target) {
		case IB_QPS_RESET:
		case IB_QPS_INIT:
		case IB_QPS_RTR:
			if (cur != SIW_QP_IDLE)
				goto out_unlock;
			break;
		case IB_QPS_RTS:
			if (cur != SIW_QP_RTS)
				goto out_unlock;
			break;
		case IB_QPS_SQD:
		case IB_QPS_SQE:
		case IB_QPS_ERR:
			break;
		default:
			goto out_unlock;
		}
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		WRITE_ONCE(qp->attrs.access, attr->qp_access_flags);
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attrs.ord = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->attrs.ird = attr->max_dest_rd_atomic;
	rv = 0;
out_unlock:
	spin_unlock_irqrestore(&qp->state_lock, flags);

	if (rv) {
		siw_dbg(sdev, "QP %u: modify 0x%x to %d refused in state %d\n",
			qp_id(qp), mask, target, cur);
		return rv;
	}
	if (!(mask & IB_QP_STATE))
		return 0;

	/* these take state_lock themselves */
	switch (target) {
	case IB_QPS_SQD:
		/*
		 * A user QP's modify comes from a system call (uverbs, or
		 * rdma_cm through iw_cm), never under a lock: drain here, no
		 * work item. A kernel consumer's may come from any context.
		 */
		if (!siw_qp_close_graceful(qp))
			break;
		if (qp->user)
			siw_tx_now(qp);
		else
			siw_qp_schedule_tx(qp);
		break;
	case IB_QPS_SQE:
	case IB_QPS_ERR:
		siw_qp_to_error(qp);
		break;
	default:
		break;
	}
	return 0;
}

static int siw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			int mask, struct ib_qp_init_attr *init)
{
	struct siw_qp *qp = to_siw_qp(ibqp);
	unsigned long flags;

	/* callers may pass uninitialized memory that goes to user space */
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	attr->qp_state = siw_qp_ib_state(qp);
	attr->cur_qp_state = attr->qp_state;
	spin_lock_irqsave(&qp->state_lock, flags);
	attr->qp_access_flags = qp->attrs.access;
	attr->max_rd_atomic = qp->attrs.ord;
	attr->max_dest_rd_atomic = qp->attrs.ird;
	spin_unlock_irqrestore(&qp->state_lock, flags);

	attr->path_mtu = siw_active_mtu(qp->sdev);
	attr->port_num = 1;
	attr->cap.max_send_wr = qp->attrs.sq_size;
	attr->cap.max_recv_wr = qp->attrs.rq_size;
	attr->cap.max_send_sge = qp->attrs.sq_max_sges;
	attr->cap.max_recv_sge = qp->attrs.rq_max_sges;
	attr->cap.max_inline_data = qp->attrs.max_inline;

	init->qp_type = IB_QPT_RC;
	init->send_cq = &qp->scq->base;
	init->recv_cq = &qp->rcq->base;
	init->srq = qp->srq ? &qp->srq->base : NULL;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->port_num = 1;
	return 0;
}

/* ------------------------------------------------------ work requests */

/*
 * After posting: start transmission if connected; a QP in error gets
 * what was just posted flushed (ib_drain_qp() relies on this), a kernel
 * consumer's once it let go of the CPU (siw_qp_flush_posted()). An idle
 * or closing QP keeps the work queued for later.
 */
static void siw_qp_kick(struct siw_qp *qp, bool send)
{
	enum siw_qp_state state;

	/* order the VALID stores above against the state read */
	smp_mb();
	state = READ_ONCE(qp->attrs.state);
	/*
	 * The user doorbell is a system call: transmit right here. Kernel
	 * consumers post from any context (softirq, under their locks), so
	 * their work goes to the TX work.
	 */
	if ((state == SIW_QP_RTS || state == SIW_QP_ERROR) && send &&
	    qp->user)
		siw_tx_doorbell(qp, state);	/* in ERROR it flushes */
	else if ((state == SIW_QP_RTS || state == SIW_QP_ERROR) && send)
		siw_qp_schedule_tx(qp);	/* in ERROR it flushes the SQ */
	else if (state == SIW_QP_ERROR)
		siw_qp_flush_posted(qp);
}

/* Copy inline payload from kernel buffers into the SQE, from sge[1]. */
static int siw_sqe_inline(struct siw_sqe *sqe, const struct ib_send_wr *wr)
{
	u8 *dst = (u8 *)&sqe->sge[1];
	u32 total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		u32 len = wr->sg_list[i].length;

		if (len > SIW_MAX_INLINE - total)
			return -EINVAL;
		memcpy(dst + total, (void *)(uintptr_t)wr->sg_list[i].addr,
		       len);
		total += len;
	}
	sqe->sge[0].laddr = (uintptr_t)dst;
	sqe->sge[0].length = total;
	sqe->sge[0].lkey = 0;
	sqe->num_sge = 1;
	return 0;
}

static void siw_sge_copy(struct siw_sge *dst, const struct ib_sge *src,
			 int n)
{
	int i;

	for (i = 0; i < n; i++) {
		dst[i].laddr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
}

/*
 * Translate one kernel send WR into a free SQ slot. Everything but
 * flags is written here; the caller publishes with VALID.
 */
static int siw_sqe_build(struct siw_qp *qp, struct siw_sqe *sqe,
			 const struct ib_send_wr *wr, u16 *flagsp)
{
	struct siw_device *sdev = qp->sdev;
	bool inline_ok = false;
	u32 max_sge = qp->attrs.sq_max_sges;
	u16 flags = SIW_WQE_VALID;

	sqe->id = wr->wr_id;
	sqe->rkey = 0;
	sqe->raddr = 0;
	sqe->num_sge = 0;

	switch (wr->opcode) {
	case IB_WR_SEND:
		sqe->opcode = SIW_OP_SEND;
		inline_ok = true;
		break;
	case IB_WR_SEND_WITH_INV:
		sqe->opcode = SIW_OP_SEND_REMOTE_INV;
		sqe->rkey = wr->ex.invalidate_rkey;
		inline_ok = true;
		break;
	case IB_WR_RDMA_WRITE:
		sqe->opcode = SIW_OP_WRITE;
		sqe->raddr = rdma_wr(wr)->remote_addr;
		sqe->rkey = rdma_wr(wr)->rkey;
		inline_ok = true;
		break;
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		/* READ_WITH_INV invalidates the sink, sge[0].lkey */
		sqe->opcode = wr->opcode == IB_WR_RDMA_READ ?
			      SIW_OP_READ : SIW_OP_READ_LOCAL_INV;
		sqe->raddr = rdma_wr(wr)->remote_addr;
		sqe->rkey = rdma_wr(wr)->rkey;
		max_sge = min_t(u32, max_sge, SIW_MAX_SGE_RD);
		break;
	case IB_WR_LOCAL_INV:
		sqe->opcode = SIW_OP_INVAL_STAG;
		sqe->rkey = wr->ex.invalidate_rkey;
		goto done;
	case IB_WR_REG_MR:
		sqe->opcode = SIW_OP_REG_MR;
		sqe->base_mr = (uintptr_t)reg_wr(wr)->mr;
		sqe->rkey = reg_wr(wr)->key;
		sqe->access = reg_wr(wr)->access;
		goto done;
	default:
		siw_dbg(sdev, "QP %u: opcode %d not supported\n", qp_id(qp),
			wr->opcode);
		return -EINVAL;
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		if (!inline_ok || siw_sqe_inline(sqe, wr)) {
			siw_dbg(sdev, "QP %u: bad inline opcode %d or size\n",
				qp_id(qp), wr->opcode);
			return -EINVAL;
		}
		flags |= SIW_WQE_INLINE;
	} else {
		if (wr->num_sge < 0 || wr->num_sge > max_sge) {
			siw_dbg(sdev, "QP %u: %d SGEs, max %u\n", qp_id(qp),
				wr->num_sge, max_sge);
			return -EINVAL;
		}
		siw_sge_copy(sqe->sge, wr->sg_list, wr->num_sge);
		sqe->num_sge = wr->num_sge;
	}
done:
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		flags |= SIW_WQE_SIGNALLED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		flags |= SIW_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		flags |= SIW_WQE_READ_FENCE;
	*flagsp = flags;
	return 0;
}

static int siw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad_wr)
{
	struct siw_qp *qp = to_siw_qp(ibqp);
	unsigned long lflags;
	int rv = 0, posted = 0;

	/* user QPs post into their mmap'd ring; a WR-less call is the bell */
	if (qp->user) {
		if (wr) {
			siw_dbg(qp->sdev, "QP %u: kernel WRs for a user QP\n",
				qp_id(qp));
			*bad_wr = wr;
			return -EINVAL;
		}
		siw_qp_kick(qp, true);
		return 0;
	}

	spin_lock_irqsave(&qp->sq_lock, lflags);
	for (; wr; wr = wr->next) {
		struct siw_sqe *sqe =
			&qp->sendq[qp->sq_put % qp->attrs.sq_size];
		u16 flags;

		/* the consumer releases a slot after copying it out */
		if (smp_load_acquire(&sqe->flags) & SIW_WQE_VALID) {
			siw_dbg(qp->sdev, "QP %u: SQ full\n", qp_id(qp));
			rv = -ENOMEM;
			break;
		}
		rv = siw_sqe_build(qp, sqe, wr, &flags);
		if (rv)
			break;
		/* publish: all SQE fields before VALID */
		smp_store_release(&sqe->flags, flags);
		qp->sq_put++;
		posted++;
	}
	spin_unlock_irqrestore(&qp->sq_lock, lflags);

	if (rv)
		*bad_wr = wr;
	if (posted)
		siw_qp_kick(qp, true);
	return rv;
}

/* Fill a free RQ/SRQ slot; VALID is set last. */
static int siw_rqe_post(struct siw_rqe *rqe, const struct ib_recv_wr *wr,
			u32 max_sge)
{
	/* the consumer releases a slot after copying it out */
	if (smp_load_acquire(&rqe->flags) & SIW_WQE_VALID)
		return -ENOMEM;
	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;

	rqe->id = wr->wr_id;
	rqe->opcode = SIW_OP_RECEIVE;
	rqe->num_sge = wr->num_sge;
	siw_sge_copy(rqe->sge, wr->sg_list, wr->num_sge);
	/* publish: all RQE fields before VALID */
	smp_store_release(&rqe->flags, SIW_WQE_VALID);
	return 0;
}

static int siw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	struct siw_qp *qp = to_siw_qp(ibqp);
	unsigned long flags;
	int rv = 0, posted = 0;

	if (qp->user || qp->srq) {
		siw_dbg(qp->sdev, "QP %u: no kernel RQ (%s)\n", qp_id(qp),
			qp->srq ? "SRQ attached" : "user QP");
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->rq_lock, flags);
	for (; wr; wr = wr->next) {
		struct siw_rqe *rqe =
			&qp->recvq[qp->rq_put % qp->attrs.rq_size];

		rv = siw_rqe_post(rqe, wr, qp->attrs.rq_max_sges);
		if (rv) {
			siw_dbg(qp->sdev, "QP %u: RQ %s\n", qp_id(qp),
				rv == -ENOMEM ? "full" : "WR too many SGEs");
			break;
		}
		qp->rq_put++;
		posted++;
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);

	if (rv)
		*bad_wr = wr;
	if (posted)
		siw_qp_kick(qp, false);
	return rv;
}

static int siw_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			     const struct ib_recv_wr **bad_wr)
{
	struct siw_srq *srq = to_siw_srq(ibsrq);
	struct siw_device *sdev = to_siw_dev(ibsrq->device);
	unsigned long flags;
	int rv = 0;

	if (srq->user) {
		siw_dbg(sdev, "kernel WRs for a user SRQ\n");
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		struct siw_rqe *rqe = &srq->queue[srq->put % srq->num_rqe];

		rv = siw_rqe_post(rqe, wr, srq->max_sge);
		if (rv) {
			siw_dbg(sdev, "SRQ %s\n",
				rv == -ENOMEM ? "full" : "WR too many SGEs");
			break;
		}
		srq->put++;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (rv)
		*bad_wr = wr;
	return rv;
}

/* ------------------------------------------------------------ stats */

static const struct rdma_stat_desc siw_stat_descs[SIW_NUM_STATS] = {
	[SIW_STAT_TX_FPDU].name = "tx_fpdu",
	[SIW_STAT_TX_BYTES].name = "tx_bytes",
	[SIW_STAT_RX_FPDU].name = "rx_fpdu",
	[SIW_STAT_RX_BYTES].name = "rx_bytes",
	[SIW_STAT_RX_CRC_ERR].name = "rx_crc_err",
	[SIW_STAT_RX_PROTO_ERR].name = "rx_proto_err",
	[SIW_STAT_TERM_TX].name = "term_tx",
	[SIW_STAT_TERM_RX].name = "term_rx",
	[SIW_STAT_TX_EAGAIN].name = "tx_eagain",
	[SIW_STAT_BAD_WQE].name = "bad_wqe",
	[SIW_STAT_CQ_OVERFLOW].name = "cq_overflow",
	[SIW_STAT_CONN_ACTIVE].name = "conn_active",
	[SIW_STAT_CONN_PASSIVE].name = "conn_passive",
	[SIW_STAT_CONN_FAIL].name = "conn_fail",
	[SIW_STAT_READ_REQ_RX].name = "read_req_rx",
	[SIW_STAT_TX_ZCOPY_BYTES].name = "tx_zcopy_bytes",
	[SIW_STAT_TX_ZCOPY_MSG].name = "tx_zcopy_msg",
	[SIW_STAT_RX_CRC_LATE].name = "rx_crc_late",
	[SIW_STAT_CONN_LOST].name = "conn_lost",
	[SIW_STAT_CONN_REFUSED].name = "conn_refused",
	[SIW_STAT_TX_DB_HANDOFF].name = "tx_db_handoff",
	[SIW_STAT_CLOSE_TIMEOUT].name = "close_timeout",
};

static struct rdma_hw_stats *siw_alloc_hw_port_stats(struct ib_device *ibdev,
						     u32 port)
{
	return rdma_alloc_hw_stats_struct(siw_stat_descs, SIW_NUM_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int siw_get_hw_stats(struct ib_device *ibdev,
			    struct rdma_hw_stats *stats, u32 port, int index)
{
	struct siw_device *sdev = to_siw_dev(ibdev);
	int cpu, i;

	for (i = 0; i < SIW_NUM_STATS; i++)
		stats->value[i] = 0;
	for_each_possible_cpu(cpu) {
		const struct siw_stats *s = per_cpu_ptr(sdev->stats, cpu);

		for (i = 0; i < SIW_NUM_STATS; i++)
			stats->value[i] += READ_ONCE(s->v[i]);
	}
	return SIW_NUM_STATS;
}

/* ------------------------------------------------------------ iw_cm */

static void siw_iw_add_ref(struct ib_qp *ibqp)
{
	siw_qp_get(to_siw_qp(ibqp));
}

static void siw_iw_rem_ref(struct ib_qp *ibqp)
{
	siw_qp_put(to_siw_qp(ibqp));
}

static struct ib_qp *siw_iw_get_qp(struct ib_device *ibdev, int qpn)
{
	struct siw_qp *qp = siw_qp_lookup(to_siw_dev(ibdev), qpn);

	if (!qp)
		return NULL;
	/* iw_cm takes its own reference through iw_add_ref */
	siw_qp_put(qp);
	return &qp->base;
}

/*
 * One table per kind of object, each with the size of what ib_core
 * allocates for it (our struct around its own); siw_verbs_set_ops()
 * merges them, with the MR (siw_mem.c) and iw_cm (siw_cm.c) tables.
 * Who we are (module, driver id, ABI) is siw_main.c's.
 */
static const struct ib_device_ops siw_port_ops = {
	.query_device = siw_query_device,
	.query_port = siw_query_port,
	.get_port_immutable = siw_get_port_immutable,
	.query_gid = siw_query_gid,
	.query_pkey = siw_query_pkey,
	.get_netdev = siw_get_netdev,
};

/* what `rdma stat` and `rdma res -dd` show */
static const struct ib_device_ops siw_observe_ops = {
	.alloc_hw_port_stats = siw_alloc_hw_port_stats,
	.get_hw_stats = siw_get_hw_stats,
	.fill_res_qp_entry = siw_fill_res_qp_entry,
};

/* a user context is where the rings get mapped */
static const struct ib_device_ops siw_ctx_ops = {
	.alloc_ucontext = siw_alloc_ucontext,
	.dealloc_ucontext = siw_dealloc_ucontext,
	.disassociate_ucontext = siw_disassociate_ucontext,
	.mmap = siw_mmap,
	.mmap_free = siw_mmap_free,
	INIT_RDMA_OBJ_SIZE(ib_ucontext, siw_ucontext, base),
};

static const struct ib_device_ops siw_pd_ops = {
	.alloc_pd = siw_alloc_pd,
	.dealloc_pd = siw_dealloc_pd,
	INIT_RDMA_OBJ_SIZE(ib_pd, siw_pd, base),
};

static const struct ib_device_ops siw_cq_ops = {
	.create_cq = siw_create_cq,
	.poll_cq = siw_poll_cq,
	.req_notify_cq = siw_req_notify_cq,
	.destroy_cq = siw_destroy_cq,
	INIT_RDMA_OBJ_SIZE(ib_cq, siw_cq, base),
};

static const struct ib_device_ops siw_qp_ops = {
	.create_qp = siw_create_qp,
	.modify_qp = siw_modify_qp,
	.query_qp = siw_query_qp,
	.post_send = siw_post_send,
	.post_recv = siw_post_recv,
	.destroy_qp = siw_destroy_qp,
	INIT_RDMA_OBJ_SIZE(ib_qp, siw_qp, base),
};

/* iw_cm holds QPs by number, with references of its own */
static const struct ib_device_ops siw_iw_qp_ops = {
	.iw_get_qp = siw_iw_get_qp,
	.iw_add_ref = siw_iw_add_ref,
	.iw_rem_ref = siw_iw_rem_ref,
};

static const struct ib_device_ops siw_srq_ops = {
	.create_srq = siw_create_srq,
	.modify_srq = siw_modify_srq,
	.query_srq = siw_query_srq,
	.post_srq_recv = siw_post_srq_recv,
	.destroy_srq = siw_destroy_srq,
	INIT_RDMA_OBJ_SIZE(ib_srq, siw_srq, base),
};

void siw_verbs_set_ops(struct ib_device *ibdev)
{
	static const struct ib_device_ops *const kinds[] = {
		&siw_port_ops, &siw_observe_ops, &siw_ctx_ops, &siw_pd_ops,
		&siw_mr_ops, &siw_cq_ops, &siw_qp_ops, &siw_iw_qp_ops,
		&siw_srq_ops, &siw_cm_ops,
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(kinds); i++)
		ib_set_device_ops(ibdev, kinds[i]);
}
