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
 * Completions keep posting order (siw_qp.c): a completion due after a
 * zero-copy message waits until that message is released.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/skbuff.h>
#include <net/sock.h>
#include <kunit/visibility.h>

#include "siw.h"

/*
 * Off by default, measured: FPDUs are one MSS each, so every FPDU puts a
 * header/trailer piece and one or two payload pieces into the skb, and
 * skbs fill up their fragment slots at ~10 KB instead of 64 KB. Between
 * two guests (virtio-net) and over veth that cost more than the copy it
 * saves: zero-copy/copy 0.88 for ib_write_bw 64 KiB, 0.55 ib_read_bw,
 * 0.37 ib_send_bw 1 MiB in the latest benchmark run (docs/bench.md,
 * "ours zero-copy"). On loopback and veth the receiving stack copies zero-copy
 * fragments again anyway. Larger FPDUs do not rescue it: over veth at MTU
 * 9000 ib_write_bw 64 KiB went 204 -> 107 MB/s with zero-copy, at MTU
 * 65000 250 -> 161 (ib_read_bw and ib_send_bw alike), so the fragment
 * count is not the whole cost; page references, release notifications
 * and completions held until the peer's ACK are the rest (not isolated).
 */
static unsigned int zcopy_min;
module_param(zcopy_min, uint, 0644);
MODULE_PARM_DESC(zcopy_min,
		 "Send, Write and Read Response payloads of at least this many bytes go to TCP without a copy (completions then wait for the peer's ACK); 0 = always copy (default)");

int siw_zc_ctx_create(struct siw_qp *qp)
{
	struct siw_zc_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

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

/* All zero-copy messages before this sequence number were released. */
u32 siw_zc_released(struct siw_qp *qp)
{
	return qp->zc ? READ_ONCE(qp->zc->released) : 0;
}

/* Sequence number the next zero-copy message will get. */
u32 siw_zc_started(struct siw_qp *qp)
{
	return qp->zc ? READ_ONCE(qp->zc->started) : 0;
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
 * TCP dropped a reference (it calls this for every one). The last one
 * means the peer acknowledged every byte: record the release, in order,
 * and let the TX work report the completions that waited for it. May run
 * in softirq context, and after the QP is gone.
 */
static void siw_zc_release(struct sk_buff *skb, struct ubuf_info *uarg,
			   bool success)
{
	struct siw_zc *zc = container_of(uarg, struct siw_zc, ubuf);
	struct siw_zc_ctx *ctx = zc->ctx;
	unsigned long flags;

	if (!refcount_dec_and_test(&uarg->refcnt))
		return;

	spin_lock_irqsave(&ctx->lock, flags);
	siw_zc_mark_released(ctx, zc->seq);
	if (ctx->qp)
		siw_qp_schedule_tx(ctx->qp);
	spin_unlock_irqrestore(&ctx->lock, flags);

	kfree(zc);
	siw_zc_ctx_put(ctx);
	/* last: this code must stay loaded until here */
	module_put(THIS_MODULE);
}

SIW_DEFINE_UBUF_OPS(siw_zc_ops, siw_zc_release);

/**
 * siw_tx_zc_begin - choose how the payload of a new message goes to TCP
 * @qp: the QP; tx.msg_len is set
 *
 * Payloads below zcopy_min are copied by TCP: copying a few pages costs
 * less than referencing them, and the work request can complete once
 * queued instead of waiting for the peer's ACK. They are also copied
 * while SIW_ZC_MAX zero-copy messages await release, or when the
 * bookkeeping cannot be allocated.
 */
void siw_tx_zc_begin(struct siw_qp *qp)
{
	struct siw_zc_ctx *ctx = qp->zc;
	u32 min = READ_ONCE(zcopy_min);
	unsigned long flags;
	struct siw_zc *zc;

	qp->tx.zc = NULL;
	if (!ctx || !min || qp->tx.msg_len < min)
		return;
	zc = kmalloc(sizeof(*zc), GFP_NOWAIT | __GFP_NOWARN);
	if (!zc)
		return;

	spin_lock_irqsave(&ctx->lock, flags);
	if (ctx->started - ctx->released >= SIW_ZC_MAX) {
		spin_unlock_irqrestore(&ctx->lock, flags);
		kfree(zc);
		return;
	}
	zc->seq = ctx->started;
	WRITE_ONCE(ctx->started, ctx->started + 1);
	spin_unlock_irqrestore(&ctx->lock, flags);

	refcount_inc(&ctx->ref);
	zc->ctx = ctx;
	/* our reference, dropped by siw_tx_zc_end() */
	refcount_set(&zc->ubuf.refcnt, 1);
	zc->ubuf.flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	siw_ubuf_bind(&zc->ubuf, siw_zc_ops);
	/* TCP may call siw_zc_release() after the QP and device are gone */
	__module_get(THIS_MODULE);
	qp->tx.zc = zc;
	siw_stat_inc(qp->sdev, SIW_STAT_TX_ZCOPY_MSG);
}

/* The message is fully queued to TCP, or abandoned: drop our reference. */
void siw_tx_zc_end(struct siw_qp *qp)
{
	struct siw_zc *zc = qp->tx.zc;

	qp->tx.zc = NULL;
	if (zc)
		net_zcopy_put(&zc->ubuf);
}

/**
 * siw_tx_zc_pages_ok - may this FPDU's payload pages be referenced?
 * @tx: the FPDU, payload in frags[1 .. nfrags - 1]
 *
 * Slab memory (kernel consumers may post kmalloc'ed buffers) must not
 * be referenced by skbs: such an FPDU is copied.
 */
bool siw_tx_zc_pages_ok(const struct siw_tx *tx)
{
	unsigned int i;

	for (i = 1; i < tx->nfrags; i++)
		if (!sendpage_ok(tx->frags[i].bv_page))
			return false;
	return true;
}
