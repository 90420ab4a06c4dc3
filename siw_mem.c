// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: memory regions and STags.
 *
 * An STag is a 24 bit table index and an 8 bit consumer key. The table
 * (sdev->mr_xa) holds one reference on each MR; data path users take
 * their own under RCU with siw_mr_lookup() and drop it with siw_mr_put().
 * The last put may happen in softirq context, so the release (which may
 * unpin user pages and sleep) runs from a work item, and only after an
 * RCU grace period, since lookups may still be looking at the object.
 */

#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/random.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/wait_bit.h>
#include <rdma/ib_umem.h>
#include <kunit/visibility.h>

#include "siw.h"

/* Access rights an MR may carry; others are refused at registration. */
#define SIW_MR_ACCESS_KNOWN						\
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |		\
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC |		\
	 IB_ACCESS_MW_BIND)

#define SIW_MR_ACCESS_RIGHTS						\
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |		\
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

#define SIW_MR_ACCESS_REMOTE						\
	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |		\
	 IB_ACCESS_REMOTE_ATOMIC)

static inline u32 siw_stag_index(u32 stag)
{
	return stag >> SIW_STAG_IDX_SHIFT;
}

static inline u32 siw_stag_make(u32 index, u32 key)
{
	return (index << SIW_STAG_IDX_SHIFT) | (key & SIW_STAG_KEY_MASK);
}

/*
 * Check access flags a consumer asks for. Atomics and MW binding are
 * accepted as rights (no operation will ever use them); optional hints
 * are ignored; features we lack are EOPNOTSUPP, garbage is EINVAL.
 */
static int siw_mr_access_ok(struct siw_device *sdev, int access)
{
	int rest = access & ~(SIW_MR_ACCESS_KNOWN | IB_ACCESS_OPTIONAL);

	if (rest & ~IB_ACCESS_SUPPORTED) {
		siw_dbg(sdev, "unknown access flags 0x%x\n", access);
		return -EINVAL;
	}
	if (rest) {
		siw_dbg(sdev, "unsupported access flags 0x%x\n", rest);
		return -EOPNOTSUPP;
	}
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE)) {
		siw_dbg(sdev, "remote write without local write 0x%x\n",
			access);
		return -EINVAL;
	}
	return 0;
}

/**
 * siw_mr_init() - the reference and registration lock of a new MR
 * @mr: zeroed MR
 */
void siw_mr_init(struct siw_mr *mr)
{
	kref_init(&mr->ref);
	spin_lock_init(&mr->lock);
	seqcount_spinlock_init(&mr->seq, &mr->lock);
}
EXPORT_SYMBOL_IF_KUNIT(siw_mr_init);

static struct siw_mr *siw_mr_new(struct siw_device *sdev, struct ib_pd *pd,
				 enum siw_mr_type type, int access)
{
	struct siw_mr *mr;

	if (atomic_inc_return(&sdev->num_mr_held) > sdev->max.mr) {
		atomic_dec(&sdev->num_mr_held);
		siw_warn(sdev, "out of MRs: the device's limit is %u\n",
			 sdev->max.mr);
		return ERR_PTR(-ENOMEM);
	}
	/* a user MR is charged to its process's memory cgroup */
	mr = kzalloc(sizeof(*mr), type == SIW_MR_USER ? SIW_GFP_USER :
							GFP_KERNEL);
	if (!mr) {
		atomic_dec(&sdev->num_mr_held);
		return ERR_PTR(-ENOMEM);
	}
	atomic_inc(&sdev->num_mr);
	mr->held = 1;
	mr->sdev = sdev;
	mr->type = type;
	mr->pd = pd;
	mr->access = access & SIW_MR_ACCESS_RIGHTS;
	siw_mr_init(mr);
	return mr;
}

/* final MR releases, which may sleep (unpinning user pages) */
static struct workqueue_struct *siw_mem_wq;

int siw_mem_init(void)
{
	siw_mem_wq = alloc_workqueue("siw_mem", WQ_MEM_RECLAIM | SIW_WQ_PERCPU, 0);
	return siw_mem_wq ? 0 : -ENOMEM;
}

void siw_mem_fini(void)
{
	destroy_workqueue(siw_mem_wq);
}

/*
 * The consumer's share of the device's MR limit ends when it deregisters,
 * not when the last in-flight user of the memory lets go.
 */
static void siw_mr_unhold(struct siw_mr *mr)
{
	if (xchg(&mr->held, 0))
		atomic_dec(&mr->sdev->num_mr_held);
}

/* Frees what siw_mr_new() and the type specific setup allocated. */
static void siw_mr_free(struct siw_mr *mr)
{
	struct siw_device *sdev = mr->sdev;

	siw_mr_unhold(mr);
	if (mr->umem)
		ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kfree(mr->pbl);
	kfree(mr);

	if (atomic_dec_and_test(&sdev->num_mr))
		wake_up_var(&sdev->num_mr);
}

static void siw_mr_free_work(struct work_struct *w)
{
	siw_mr_free(container_of(to_rcu_work(w), struct siw_mr, free_work));
}

static void siw_mr_release(struct kref *ref)
{
	struct siw_mr *mr = container_of(ref, struct siw_mr, ref);

	/* may be softirq; unpinning pages needs process context */
	INIT_RCU_WORK(&mr->free_work, siw_mr_free_work);
	queue_rcu_work(siw_mem_wq, &mr->free_work);
}

/**
 * siw_mr_put() - drop a reference taken by siw_mr_lookup()
 * @mr: memory region, may be NULL
 *
 * Safe in any context; the final release is deferred.
 */
void siw_mr_put(struct siw_mr *mr)
{
	if (mr)
		kref_put(&mr->ref, siw_mr_release);
}
EXPORT_SYMBOL_IF_KUNIT(siw_mr_put);

/**
 * siw_mr_lookup() - find the MR an STag names and reference it
 * @sdev: device
 * @stag: full STag, key included
 *
 * Return: the referenced MR, valid or not, or NULL if no MR carries
 * exactly this STag.
 */
struct siw_mr *siw_mr_lookup(struct siw_device *sdev, u32 stag)
{
	struct siw_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, siw_stag_index(stag));
	if (mr && (READ_ONCE(mr->stag) != stag ||
		   !kref_get_unless_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mr_lookup);

/*
 * Give a set-up MR an STag and make it visible. The index is reserved
 * first and the pointer stored only once the STag is final, so lookups
 * never see a half-built MR.
 */
static int siw_mr_publish(struct siw_mr *mr, u32 key)
{
	struct siw_device *sdev = mr->sdev;
	u32 index;
	int rv;

	/* index 0 is never used: an all-zero STag names nothing */
	rv = xa_alloc_cyclic(&sdev->mr_xa, &index, NULL,
			     XA_LIMIT(1, SIW_STAG_IDX_MAX), &sdev->next_mr,
			     GFP_KERNEL);
	if (rv < 0) {
		siw_dbg(sdev, "no STag index: %d\n", rv);
		return rv == -EBUSY ? -ENOMEM : rv;
	}
	mr->stag = siw_stag_make(index, key);
	mr->base.lkey = mr->stag;
	mr->base.rkey = mr->stag;

	xa_store(&sdev->mr_xa, index, mr, GFP_KERNEL);
	return 0;
}

/*
 * Key byte for an MR whose consumer named none: a per-device sequence
 * from a random start, so a re-registration never gets the previous key.
 */
static u32 siw_next_key(struct siw_device *sdev)
{
	return (u32)atomic_inc_return(&sdev->key_seq) & SIW_STAG_KEY_MASK;
}

/*
 * The last put in process context (deregistration): the pages are
 * unpinned now, so the process's locked-memory budget is back when
 * ib_dereg_mr() returns; the rest goes after a grace period, as
 * lookups may still look at the object.
 */
static void siw_mr_release_now(struct kref *ref)
{
	struct siw_mr *mr = container_of(ref, struct siw_mr, ref);

	if (mr->umem)
		ib_umem_release(mr->umem);
	mr->umem = NULL;
	kvfree(mr->pages);
	mr->pages = NULL;
	siw_mr_release(ref);
}

/*
 * Unpublish and drop the table's reference; process context. An MR a
 * work request or placement in flight still holds is freed by its last
 * user instead (siw_mr_put()).
 */
static void siw_mr_retire(struct siw_mr *mr)
{
	unsigned long flags;

	spin_lock_irqsave(&mr->lock, flags);
	write_seqcount_begin(&mr->seq);
	mr->valid = false;
	mr->gen++;
	write_seqcount_end(&mr->seq);
	spin_unlock_irqrestore(&mr->lock, flags);
	xa_erase(&mr->sdev->mr_xa, siw_stag_index(mr->stag));
	siw_mr_unhold(mr);
	might_sleep();
	kref_put(&mr->ref, siw_mr_release_now);
}

/**
 * siw_get_dma_mr() - MR covering all kernel virtual addresses
 * @pd: protection domain
 * @access: IB_ACCESS_* rights
 *
 * siw does virtual DMA: ib_dma_map_*() hands out kernel virtual
 * addresses, so an SGE address is a kernel pointer within this MR.
 */
static struct ib_mr *siw_get_dma_mr(struct ib_pd *pd, int access)
{
	struct siw_device *sdev = to_siw_dev(pd->device);
	struct siw_mr *mr;
	int rv;

	rv = siw_mr_access_ok(sdev, access);
	if (rv)
		return ERR_PTR(rv);

	mr = siw_mr_new(sdev, pd, SIW_MR_DMA, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->va = 0;
	mr->len = U64_MAX;
	mr->valid = true;

	rv = siw_mr_publish(mr, siw_next_key(sdev));
	if (rv) {
		siw_mr_free(mr);
		return ERR_PTR(rv);
	}
	siw_dbg(sdev, "DMA MR stag 0x%08x access 0x%x\n", mr->stag, access);
	return &mr->base;
}

/* Flatten the pinned pages of a user MR into mr->pages. */
static int siw_mr_fill_pages(struct siw_mr *mr)
{
	struct sg_page_iter it;
	unsigned long n = 0;

	mr->npages = ib_umem_num_pages(mr->umem);
	/* the length is the caller's: one line on failure, not a stack */
	mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages),
				   SIW_GFP_USER | __GFP_NOWARN);
	if (!mr->pages) {
		siw_warn(mr->sdev, "no memory for the page list of a %lu-page MR\n",
			 mr->npages);
		return -ENOMEM;
	}

	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &it, 0) {
		if (n == mr->npages)
			break;
		mr->pages[n++] = sg_page_iter_page(&it);
	}
	if (n != mr->npages) {
		siw_warn(mr->sdev, "umem has %lu of %lu pages\n", n,
			 mr->npages);
		return -EFAULT;
	}
	return 0;
}

/**
 * siw_reg_user_mr() - register user memory
 * @pd: protection domain
 * @start: user address of the buffer
 * @len: length in bytes
 * @virt_addr: I/O virtual address the peer and SGEs use for @start
 * @access: IB_ACCESS_* rights
 * @udata: carries struct siw_ureq_reg_mr in, struct siw_uresp_reg_mr out
 *
 * From 6.17 a DMA handle comes before @udata (SIW_REG_MR_DMAH_ARG); it is
 * always NULL here, siw has no alloc_dmah.
 *
 * Return: the MR or an ERR_PTR.
 */
static struct ib_mr *siw_reg_user_mr(struct ib_pd *pd, u64 start, u64 len,
				     u64 virt_addr, int access,
				     SIW_REG_MR_DMAH_ARG
				     struct ib_udata *udata)
{
	struct siw_device *sdev = to_siw_dev(pd->device);
	struct siw_ureq_reg_mr ureq = {};
	struct siw_uresp_reg_mr uresp = {};
	struct ib_umem *umem;
	struct siw_mr *mr;
	u64 end;
	int rv;

	rv = siw_mr_access_ok(sdev, access);
	if (rv)
		return ERR_PTR(rv);
	if (!len || len > SIW_MAX_MR_SIZE ||
	    check_add_overflow(virt_addr, len, &end)) {
		siw_dbg(sdev, "bad MR length 0x%llx at 0x%llx\n", len,
			virt_addr);
		return ERR_PTR(-EINVAL);
	}
	if (udata && udata->inlen) {
		if (udata->inlen > sizeof(ureq) &&
		    !ib_is_udata_cleared(udata, sizeof(ureq),
					 udata->inlen - sizeof(ureq))) {
			siw_dbg(sdev, "unknown reg_mr request data\n");
			return ERR_PTR(-EOPNOTSUPP);
		}
		rv = ib_copy_from_udata(&ureq, udata,
					min(sizeof(ureq), udata->inlen));
		if (rv)
			return ERR_PTR(rv);
	}
	if (udata && udata->outlen < sizeof(uresp)) {
		siw_dbg(sdev, "reg_mr response buffer too small\n");
		return ERR_PTR(-EINVAL);
	}

	mr = siw_mr_new(sdev, pd, SIW_MR_USER, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	umem = siw_umem_get(pd->device, start, len, access);
	if (IS_ERR(umem)) {
		rv = PTR_ERR(umem);
		siw_dbg(sdev, "pinning 0x%llx bytes failed: %d\n", len, rv);
		goto err;
	}
	mr->umem = umem;
	mr->va = virt_addr;
	mr->len = len;
	mr->first_off = offset_in_page(start);
	mr->remote_inv_ok = !!(access & SIW_MR_ACCESS_REMOTE);
	rv = siw_mr_fill_pages(mr);
	if (rv)
		goto err;
	mr->base.iova = virt_addr;
	mr->base.length = len;
	mr->base.page_size = PAGE_SIZE;
	mr->valid = true;

	/* libsiw always sends key 0: "no preference" */
	rv = siw_mr_publish(mr, ureq.stag_key ? ureq.stag_key :
					      siw_next_key(sdev));
	if (rv)
		goto err;

	if (udata) {
		uresp.stag = mr->stag;
		rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (rv) {
			siw_mr_retire(mr);
			return ERR_PTR(rv);
		}
	}
	siw_dbg(sdev, "user MR stag 0x%08x va 0x%llx len 0x%llx\n", mr->stag,
		virt_addr, len);
	return &mr->base;
err:
	siw_mr_free(mr);
	return ERR_PTR(rv);
}

/**
 * siw_alloc_mr() - fast registration MR, invalid until IB_WR_REG_MR
 * @pd: protection domain
 * @type: only IB_MR_TYPE_MEM_REG
 * @max_num_sg: page list capacity
 *
 * Return: the MR or an ERR_PTR.
 */
static struct ib_mr *siw_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
				  u32 max_num_sg)
{
	struct siw_device *sdev = to_siw_dev(pd->device);
	struct siw_mr *mr;
	int rv;

	if (type != IB_MR_TYPE_MEM_REG) {
		siw_dbg(sdev, "MR type %d not supported\n", type);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!max_num_sg || max_num_sg > SIW_MAX_FR_PAGES) {
		siw_dbg(sdev, "bad page list size %u\n", max_num_sg);
		return ERR_PTR(-EINVAL);
	}
	mr = siw_mr_new(sdev, pd, SIW_MR_FRMR, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	mr->pbl = kcalloc(max_num_sg, sizeof(*mr->pbl), GFP_KERNEL);
	if (!mr->pbl) {
		rv = -ENOMEM;
		goto err;
	}
	mr->pbl_max = max_num_sg;
	mr->remote_inv_ok = true;

	rv = siw_mr_publish(mr, siw_next_key(sdev));
	if (rv)
		goto err;
	return &mr->base;
err:
	siw_mr_free(mr);
	return ERR_PTR(rv);
}

static int siw_mr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct siw_mr *mr = to_siw_mr(ibmr);

	if (mr->pbl_n >= mr->pbl_max)
		return -ENOMEM;
	mr->pbl[mr->pbl_n++] = addr;
	return 0;
}

/**
 * siw_map_mr_sg() - load the page list of a fast registration MR
 * @ibmr: FRMR, must be invalid
 * @sg: DMA mapped (kernel virtual) scatterlist
 * @sg_nents: entries in @sg
 * @sg_offset: byte offset into the first entry
 *
 * Return: number of entries mapped, or -errno.
 */
static int siw_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
			 int sg_nents, unsigned int *sg_offset)
{
	struct siw_mr *mr = to_siw_mr(ibmr);
	int n;

	/*
	 * The MR may still be valid here: rdma_rw maps first and chains a
	 * LOCAL_INV in front of the REG_MR. The page list never moves, so
	 * a racing (buggy) user of the old registration stays in bounds.
	 */
	if (mr->type != SIW_MR_FRMR) {
		siw_dbg(mr->sdev, "stag 0x%08x: not an FRMR\n", mr->stag);
		return -EINVAL;
	}
	mr->pbl_n = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, siw_mr_set_page);
	/* ULPs may rebase iova later (zero based); keep the page offset */
	if (ibmr->page_size)
		mr->first_off = ibmr->iova & (ibmr->page_size - 1);
	return n;
}

/**
 * siw_mr_fast_reg() - execute an IB_WR_REG_MR work request
 * @sdev: device of the QP executing the request
 * @pd: the QP's protection domain
 * @ibmr: the MR named in the request, not yet trusted (a kernel
 *	consumer's pointer): found in the STag table first and held
 * @key: new STag (its index must be the MR's)
 * @access: IB_ACCESS_* rights to grant
 *
 * Return: 0 or -EINVAL if the MR is not an invalid FRMR of this device
 * and PD, the STag or rights are wrong, or the page list does not cover
 * the registered range.
 */
int siw_mr_fast_reg(struct siw_device *sdev, struct ib_pd *pd,
		    struct ib_mr *ibmr, u32 key, int access)
{
	struct siw_mr *mr = NULL, *found;
	unsigned long flags;
	int rv = -EINVAL;
	u32 psz;
	u64 need;

	/* the pointer counts only if the table holds it at the key's index */
	rcu_read_lock();
	found = xa_load(&sdev->mr_xa, siw_stag_index(key));
	if (found && &found->base == ibmr && kref_get_unless_zero(&found->ref))
		mr = found;
	rcu_read_unlock();
	if (!mr) {
		siw_dbg(sdev, "REG_MR for key 0x%08x: not an MR of this device\n",
			key);
		return -EINVAL;
	}
	if (mr->type != SIW_MR_FRMR || mr->pd != pd) {
		siw_dbg(sdev, "REG_MR on stag 0x%08x: %s\n", mr->stag,
			mr->pd != pd ? "another PD's MR" : "not an FRMR");
		goto out;
	}
	if (siw_mr_access_ok(sdev, access))
		goto out;
	psz = ibmr->page_size;
	if (!psz || !is_power_of_2(psz) || ibmr->length > SIW_MAX_MR_SIZE) {
		siw_dbg(sdev, "REG_MR bad page size %u or length %llu\n", psz,
			ibmr->length);
		goto out;
	}
	need = DIV_ROUND_UP((u64)mr->first_off + ibmr->length, psz);
	if (need > mr->pbl_n) {
		siw_dbg(sdev, "REG_MR needs %llu pages, has %u\n", need,
			mr->pbl_n);
		goto out;
	}
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->valid) {
		spin_unlock_irqrestore(&mr->lock, flags);
		siw_dbg(sdev, "REG_MR on valid stag 0x%08x\n", mr->stag);
		goto out;
	}
	/* key, range and rights turn valid at once for every reader */
	write_seqcount_begin(&mr->seq);
	mr->access = access & SIW_MR_ACCESS_RIGHTS;
	mr->va = ibmr->iova;
	mr->len = ibmr->length;
	mr->stag = siw_stag_make(siw_stag_index(mr->stag), key);
	mr->valid = true;
	mr->gen++;
	write_seqcount_end(&mr->seq);
	spin_unlock_irqrestore(&mr->lock, flags);
	rv = 0;
out:
	siw_mr_put(mr);
	return rv;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mr_fast_reg);

/**
 * siw_mr_check() - may this access use this MR
 * @mr: referenced MR
 * @stag: the STag the access names (its key was compared at lookup and
 *	is compared again here, in the same snapshot as the rest)
 * @pd: PD of the accessing QP
 * @access: rights needed: 0 for local read, IB_ACCESS_LOCAL_WRITE,
 *	    IB_ACCESS_REMOTE_READ or IB_ACCESS_REMOTE_WRITE
 * @va: first address
 * @len: bytes, may be 0
 * @remote: access requested by the peer
 * @gen: set to the registration checked, for siw_mr_chunk(); may be NULL
 *
 * A Local Invalidate and a fast-register with a new key may run between
 * the lookup and this check: the key, state, range and rights are read
 * as one snapshot, so the old key never gets the new range or rights.
 *
 * Return: enum siw_access_err, SIW_ACC_OK (0) if permitted.
 */
int siw_mr_check(struct siw_mr *mr, u32 stag, struct ib_pd *pd, int access,
		 u64 va, u64 len, bool remote, u32 *gen)
{
	u64 end, mva, mlen;
	unsigned int seq;
	u32 key, g;
	bool valid;
	int macc;

	do {
		seq = read_seqcount_begin(&mr->seq);
		valid = mr->valid;
		key = mr->stag;
		macc = mr->access;
		mva = mr->va;
		mlen = mr->len;
		g = mr->gen;
	} while (read_seqcount_retry(&mr->seq, seq));

	if (!valid || key != stag)
		return SIW_ACC_STAG;
	if (mr->pd != pd)
		return SIW_ACC_PD;
	if (access & ~macc & SIW_MR_ACCESS_RIGHTS)
		return SIW_ACC_RIGHTS;
	/* a peer must name a remote right; catches callers passing 0 */
	if (remote && !(access & SIW_MR_ACCESS_REMOTE))
		return SIW_ACC_RIGHTS;
	if (check_add_overflow(va, len, &end))
		return SIW_ACC_WRAP;
	if (va < mva || end - mva > mlen)
		return SIW_ACC_BOUNDS;
	if (gen)
		*gen = g;
	return SIW_ACC_OK;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mr_check);

static int siw_chunk_kva(unsigned long kva, u64 len, struct siw_mem_chunk *c)
{
	struct page *p;

	if (is_vmalloc_addr((void *)kva))
		p = vmalloc_to_page((void *)kva);
	else if (virt_addr_valid((void *)kva))
		p = virt_to_page((void *)kva);
	else
		p = NULL;
	if (!p)
		return -EFAULT;
	c->page = p;
	c->off = offset_in_page(kva);
	c->len = min_t(u64, len, PAGE_SIZE - c->off);
	return 0;
}

/* The lookup of siw_mr_chunk(), inside its read section. */
static int siw_mr_locate(struct siw_mr *mr, u64 va, u64 len,
			 struct siw_mem_chunk *c)
{
	u64 off, idx;
	u32 psz;

	if (va < mr->va || va - mr->va > mr->len)
		return -EFAULT;
	if (!len) {
		/* nothing to place; va may be the end of the MR */
		c->page = NULL;
		c->off = 0;
		c->len = 0;
		return 0;
	}
	off = va - mr->va + mr->first_off;

	switch (mr->type) {
	case SIW_MR_DMA:
		return siw_chunk_kva((unsigned long)va, len, c);

	case SIW_MR_USER:
		idx = off >> PAGE_SHIFT;
		if (idx >= mr->npages)
			return -EFAULT;
		c->page = mr->pages[idx];
		c->off = offset_in_page(off);
		c->len = min_t(u64, len, PAGE_SIZE - c->off);
		return 0;

	case SIW_MR_FRMR:
		psz = mr->base.page_size;
		if (!psz)
			return -EFAULT;
		idx = off / psz;
		if (idx >= mr->pbl_n)
			return -EFAULT;
		off &= psz - 1;
		if (siw_chunk_kva(mr->pbl[idx] + off, len, c))
			return -EFAULT;
		/* a page list block may be smaller than a CPU page */
		c->len = min_t(u64, c->len, psz - off);
		return 0;
	}
	return -EFAULT;
}

/**
 * siw_mr_chunk() - locate the page piece holding an MR address
 * @mr: MR, range already accepted by siw_mr_check()
 * @gen: the registration siw_mr_check() accepted
 * @va: address within the MR
 * @len: bytes wanted from @va
 * @c: result; @c->len is at most @len and never crosses a page
 *
 * Return: 0, or -EFAULT if the MR cannot resolve @va (never expected
 * after a successful check, but the data path must not crash on it).
 */
int siw_mr_chunk(struct siw_mr *mr, u32 gen, u64 va, u64 len,
		 struct siw_mem_chunk *c)
{
	unsigned int seq;
	int rv;

	/*
	 * One read section for the generation and everything the lookup
	 * reads (range, page offset): an invalidate and a new registration
	 * between them would give this registration's address the other's
	 * page.
	 */
	do {
		seq = read_seqcount_begin(&mr->seq);
		/* invalidated or registered anew since the check: not ours */
		if (mr->gen != gen)
			return -EFAULT;
		rv = siw_mr_locate(mr, va, len, c);
	} while (read_seqcount_retry(&mr->seq, seq));
	return rv;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mr_chunk);

/**
 * siw_mr_invalidate() - invalidate an STag (local or Send with Invalidate)
 * @sdev: device
 * @stag: STag to invalidate
 * @pd: PD of the QP asking
 * @remote: requested by the peer
 *
 * Return: enum siw_access_err, SIW_ACC_OK (0) on success.
 */
int siw_mr_invalidate(struct siw_device *sdev, u32 stag, struct ib_pd *pd,
		      bool remote)
{
	struct siw_mr *mr = siw_mr_lookup(sdev, stag);
	unsigned long flags;
	int rv = SIW_ACC_OK;

	if (!mr)
		return SIW_ACC_STAG;
	if (mr->pd != pd) {
		rv = SIW_ACC_PD;
	} else if (mr->type == SIW_MR_DMA || (remote && !mr->remote_inv_ok)) {
		rv = SIW_ACC_RIGHTS;
	} else {
		/* the key is compared again: it may have rotated since lookup */
		spin_lock_irqsave(&mr->lock, flags);
		if (!mr->valid || mr->stag != stag) {
			rv = SIW_ACC_STAG;
		} else {
			write_seqcount_begin(&mr->seq);
			mr->valid = false;
			mr->gen++;
			write_seqcount_end(&mr->seq);
		}
		spin_unlock_irqrestore(&mr->lock, flags);
	}

	if (rv)
		siw_dbg(sdev, "invalidate stag 0x%08x%s refused: %d\n", stag,
			remote ? " (remote)" : "", rv);
	siw_mr_put(mr);
	return rv;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mr_invalidate);

/**
 * siw_dereg_mr() - destroy an MR
 * @ibmr: MR
 * @udata: unused
 *
 * The STag stops resolving at once; the memory and pinned pages go when
 * the last in-flight user lets go.
 */
static int siw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct siw_mr *mr = to_siw_mr(ibmr);

	siw_dbg(mr->sdev, "stag 0x%08x\n", mr->stag);
	siw_mr_retire(mr);
	return 0;
}

/**
 * siw_mem_exit() - STag table teardown at device removal
 * @sdev: device, all verbs objects gone
 *
 * Waits until every MR is freed, so no release work touches @sdev
 * after it is gone.
 */
void siw_mem_exit(struct siw_device *sdev)
{
	struct siw_mr *mr;
	unsigned long i;

	xa_for_each(&sdev->mr_xa, i, mr) {
		WARN_ONCE(1, "siw: %s: MR stag 0x%08x left at removal\n",
			  dev_name(&sdev->base.dev), mr->stag);
		siw_mr_retire(mr);
	}
	/* release work queued from RCU callbacks must be on its way */
	rcu_barrier();
	while (!wait_var_event_timeout(&sdev->num_mr,
				       !atomic_read(&sdev->num_mr), 10 * HZ))
		siw_warn(sdev, "waiting for %d MRs still referenced\n",
			 atomic_read(&sdev->num_mr));
	xa_destroy(&sdev->mr_xa);
}

/* The MR verbs, merged into a device by siw_verbs_set_ops() */
const struct ib_device_ops siw_mr_ops = {
	.get_dma_mr = siw_get_dma_mr,
	.reg_user_mr = siw_reg_user_mr,
	.alloc_mr = siw_alloc_mr,
	.map_mr_sg = siw_map_mr_sg,
	.dereg_mr = siw_dereg_mr,
};
