// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: zero-copy transmit. The payload pages of larger messages are handed
 * to TCP by reference (MSG_ZEROCOPY with a ubuf_info of ours) instead of
 * being copied into TCP's buffers. TCP holds the pages until the peer has
 * acknowledged the bytes; the ubuf_info's last reference going tells us
 * so, and only then may the work request complete: after its completion
 * the consumer owns the buffer again, while TCP must be able to retransmit
 * the original bytes until they are acknowledged (with CRC on, changed
 * bytes would also fail the peer's CRC check).
 *
 * Completions keep posting order (siw_cq.c): a completion due after a
 * zero-copy message waits until that message is released.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/skbuff.h>
#include <net/sock.h>
#include <kunit/visibility.h>

#include "siw.h"

/*
 * Off by default: lending pages costs a ubuf and a release callback per
 * message, and where the copy into TCP is cheap (small frames, a CPU
 * that copies fast) that is more than the copy it saves.
 */
static unsigned int zcopy_min;
module_param(zcopy_min, uint, 0644);
MODULE_PARM_DESC(zcopy_min,
		 "Send, Write and Read Response payloads of at least this many bytes go to TCP without a copy (completions then wait for the peer's ACK); 0 = always copy (default)");

int siw_zc_ctx_create(struct siw_qp *qp)
{
	struct siw_zc_ctx *ctx = kzalloc(sizeof(*ctx), qp->user ? SIW_GFP_USER :
								  GFP_KERNEL);

	if (!ctx)
		return -ENOMEM;
	refcount_set(&ctx->ref, 1);
	spin_lock_init(&ctx->lock);
	ctx->qp = qp;
	qp->zc = ctx;
	return 0;
}

static void siw_zc_ctx_put(struct siw_zc_ctx *ctx)
{
	if (refcount_dec_and_test(&ctx->ref))
		kfree(ctx);
}

/* The QP is being destroyed: releases still to come no longer reach it. */
void siw_zc_ctx_detach(struct siw_qp *qp)
{
	struct siw_zc_ctx *ctx = qp->zc;
	unsigned long flags;

	if (!ctx)
		return;
	spin_lock_irqsave(&ctx->lock, flags);
	ctx->qp = NULL;
	spin_unlock_irqrestore(&ctx->lock, flags);
}

/* The QP is gone: drop its reference (zero-copy messages hold theirs). */
void siw_zc_ctx_free(struct siw_qp *qp)
{
	if (qp->zc)
		siw_zc_ctx_put(qp->zc);
	qp->zc = NULL;
}

/**
 * siw_zc_mark_released - record the release of zero-copy message @seq
 * @ctx: the QP's bookkeeping, lock held (or private to a test)
 * @seq: the message's sequence number
 *
 * Releases may come out of order (a clone of an earlier skb can outlive a
 * later one); ctx->released only moves over an unbroken run of released
 * messages. Return: the new ctx->released.
 */
u32 siw_zc_mark_released(struct siw_zc_ctx *ctx, u32 seq)
{
	__set_bit(seq % SIW_ZC_MAX, ctx->done);
	while (test_bit(ctx->released % SIW_ZC_MAX, ctx->done)) {
		__clear_bit(ctx->released % SIW_ZC_MAX, ctx->done);
		WRITE_ONCE(ctx->released, ctx->released + 1);
	}
	return ctx->released;
}
EXPORT_SYMBOL_IF_KUNIT(siw_zc_mark_released);

/*
 * After a grace period: the message's last references. The device put
 * may let the device, and then the module, go: module exit waits for
 * this callback to have returned (rcu_barrier() in siw_exit()), so no
 * code of ours runs after it.
 */
static void siw_zc_free(struct rcu_head *rcu)
{
	struct siw_zc *zc = container_of(rcu, struct siw_zc, rcu);
	struct ib_device *dev = zc->dev;

	siw_zc_ctx_put(zc->ctx);
	kfree(zc);
	ib_device_put(dev);
}

/*
 * TCP dropped a reference (it calls this for every one). The last one
 * means the peer acknowledged every byte: record the release, in order,
 * and let the TX work report the completions that waited for it. May run
 * in softirq context, and after the QP is gone.
 *
 * Each message holds a reference on the ib_device: unregistering the
 * device, and so unloading the module, waits for every message TCP still
 * holds. That reference is dropped from an RCU callback queued inside a
 * read-side section here, so it goes only after this function left the
 * section, and module exit waits for the callback itself.
 */
static void siw_zc_release(struct sk_buff *skb, struct ubuf_info *uarg,
			   bool success)
{
	struct siw_zc *zc = container_of(uarg, struct siw_zc, ubuf);
	struct siw_zc_ctx *ctx = zc->ctx;
	unsigned long flags;

	if (!refcount_dec_and_test(&uarg->refcnt))
		return;

	rcu_read_lock();
	spin_lock_irqsave(&ctx->lock, flags);
	siw_zc_mark_released(ctx, zc->seq);
	if (ctx->qp)
		siw_qp_schedule_tx(ctx->qp);
	spin_unlock_irqrestore(&ctx->lock, flags);
	call_rcu(&zc->rcu, siw_zc_free);
	rcu_read_unlock();
}

SIW_DEFINE_UBUF_OPS(siw_zc_ops, siw_zc_release);

/**
 * siw_zc_begin - choose how the payload of a new message goes to TCP
 * @qp: the QP
 * @len: the message's payload bytes
 *
 * Payloads below zcopy_min are copied by TCP: copying a few pages costs
 * less than referencing them, and the work request can complete once
 * queued instead of waiting for the peer's ACK. They are also copied
 * while SIW_ZC_MAX zero-copy messages await release, or when the
 * bookkeeping cannot be allocated.
 *
 * Return: the message's zero-copy state, or NULL to copy.
 */
struct siw_zc *siw_zc_begin(struct siw_qp *qp, u32 len)
{
	struct siw_zc_ctx *ctx = qp->zc;
	u32 min = READ_ONCE(zcopy_min);
	unsigned long flags;
	struct siw_zc *zc;

	if (!ctx || !min || len < min)
		return NULL;
	zc = kmalloc(sizeof(*zc), GFP_NOWAIT | __GFP_NOWARN);
	if (!zc)
		return NULL;
	/* TCP may call siw_zc_release() after the QP and device are gone */
	if (!ib_device_try_get(&qp->sdev->base)) {
		kfree(zc);
		return NULL;
	}

	spin_lock_irqsave(&ctx->lock, flags);
	if (ctx->started - ctx->released >= SIW_ZC_MAX) {
		spin_unlock_irqrestore(&ctx->lock, flags);
		ib_device_put(&qp->sdev->base);
		kfree(zc);
		return NULL;
	}
	zc->seq = ctx->started;
	WRITE_ONCE(ctx->started, ctx->started + 1);
	spin_unlock_irqrestore(&ctx->lock, flags);

	refcount_inc(&ctx->ref);
	zc->ctx = ctx;
	zc->dev = &qp->sdev->base;
	/* our reference, dropped by siw_zc_end() */
	refcount_set(&zc->ubuf.refcnt, 1);
	zc->ubuf.flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	siw_ubuf_bind(&zc->ubuf, siw_zc_ops);
	siw_stat_inc(qp->sdev, SIW_STAT_TX_ZCOPY_MSG);
	return zc;
}

/* The message is fully queued to TCP, or abandoned: drop our reference. */
void siw_zc_end(struct siw_zc *zc)
{
	if (zc)
		net_zcopy_put(&zc->ubuf);
}
