// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: the transmit engine, the one owner of a QP's transmit state.
 *
 * It picks what goes next (an MPA v2 ready-to-receive message, a Read
 * Response, a Terminate or the next send queue work request), has RDMAP
 * turn it into a message, then builds FPDUs in one pass down the layers:
 * DDP cuts the next segment, MPA frames it into the batch; the batch goes
 * to TCP in one socket call. A message completes once all of its FPDUs
 * are queued to TCP (or, zero-copy, once TCP released its pages).
 *
 * It runs from the QP's TX work (siw_qp_schedule_tx()), inline from a
 * user doorbell or a user's graceful close (siw_tx_now()), or from the
 * CM's close (siw_tx_sync()), one at a time under tx_mutex, and never
 * blocks on the socket: a full socket ends the run, sk_write_space
 * schedules the next.
 */
#include <linux/slab.h>
#include <net/tcp.h>

#include <kunit/visibility.h>

#include "siw.h"
#include "siw_trace.h"

#define SIW_TX_BUDGET		64	/* batches per TX work run */
#define SIW_TX_INLINE_BUDGET	16	/* ... per doorbell */
#define SIW_TX_AGAIN		0	/* qp->tx_flags bit, siw_tx_work() */
#define SIW_TX_STREAM_DBS	4	/* doorbells with nothing received */

static void siw_tx_fail(struct siw_qp *qp, struct siw_wqe *wqe,
			enum ib_wc_status status)
{
	siw_sq_release(qp);
	siw_sq_complete(qp, wqe, status, 0);
	siw_qp_event(qp, IB_EVENT_QP_FATAL);
	siw_qp_to_error(qp);
}

/* Local invalidate / fast register: no message, completes right here. */
static int siw_tx_local_op(struct siw_qp *qp, struct siw_wqe *wqe)
{
	struct siw_sqe *sqe = &wqe->sqe;
	int rv;

	if (sqe->opcode == SIW_OP_INVAL_STAG)
		rv = siw_mr_invalidate(qp->sdev, sqe->rkey, qp->pd, false) ?
		     -EINVAL : 0;
	else
		rv = siw_mr_fast_reg(qp->sdev, qp->pd,
				     (struct ib_mr *)(uintptr_t)sqe->base_mr,
				     sqe->rkey, (int)sqe->access);
	siw_sq_release(qp);
	siw_sq_complete(qp, wqe, rv ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS, 0);
	return rv;
}

/* Take the next work request off the SQ and start its message. */
static int siw_tx_start_sqe(struct siw_qp *qp)
{
	struct siw_wqe *wqe = &qp->tx.sq_wqe;
	struct siw_sqe *sqe = &wqe->sqe;
	u8 held;
	int rv;

	rv = siw_sqe_fetch(qp, wqe);
	if (rv == -ENOENT || rv == -EBUSY)
		return rv;
	if (rv) {
		siw_tx_fail(qp, wqe, wqe->status);
		return -EINVAL;
	}
	held = !qp->tx.held ? SIW_HELD_NONE :
	       siw_sqe_is_read(sqe) ? SIW_HELD_READ : SIW_HELD_MSG;
	/* read by the doorbell on another CPU: written only on a change */
	if (READ_ONCE(qp->tx_held_last) != held)
		WRITE_ONCE(qp->tx_held_last, held);
	qp->tx.run_sqes++;
	if (sqe->opcode == SIW_OP_INVAL_STAG || sqe->opcode == SIW_OP_REG_MR) {
		if (siw_tx_local_op(qp, wqe)) {
			siw_qp_to_error(qp);
			return -EINVAL;
		}
		return -EAGAIN;		/* nothing to send: next one */
	}
	return siw_rdmap_tx_start(qp, wqe);
}

/* What goes next. Return: 0 with a message started, else why not. */
static int siw_tx_pick(struct siw_qp *qp)
{
	int rv;

	if (qp->rtr_pending) {
		siw_rdmap_tx_rtr(qp);
		return 0;
	}
	rv = siw_rdmap_tx_rresp(qp);
	if (rv != -ENOENT)
		return rv;
	return siw_tx_start_sqe(qp);
}

/* A message is set up in tx.rdmap: segment it from the start. */
static void siw_tx_begin(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	/* a message given up for a Terminate lets go of its pages */
	siw_zc_end(tx->zc);
	siw_ddp_tx_begin(&tx->ddp, tx->rdmap.op);
	tx->zc = tx->rdmap.op->tagged || tx->rdmap.op->qn == DDP_QN_SEND ?
		 siw_zc_begin(qp, tx->rdmap.len) : NULL;
	tx->active = true;
}

/**
 * siw_tx_fill - frame FPDUs of the active message into the batch
 * @qp: the QP
 *
 * Stops when the message is framed completely or the batch is full.
 * Return: 0 or -EFAULT if the payload is not accessible.
 */
static int siw_tx_fill(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	const struct siw_op *op = tx->rdmap.op;
	u32 seg_max = siw_tx_seg_max(qp, op);
	int rv;

	do {
		rv = siw_ddp_tx_segment(&tx->ddp, op, &tx->rdmap, seg_max);
		if (rv)
			return rv;
		if (!siw_mpa_tx_room(&tx->mpa, &tx->ddp))
			break;
		siw_mpa_tx_frame(&tx->mpa, &tx->ddp, qp->attrs.crc,
				 siw_zc_ubuf(tx->zc));
		if (siw_ddp_tx_advance(&tx->ddp, &tx->rdmap))
			tx->active = false;
	} while (tx->active);
	/* a Read's response may complete it within the call that sends it */
	if (op->opcode == RDMAP_READ_REQ)
		siw_sq_release(qp);
	tx->busy = true;
	return 0;
}

/* All of the message is queued to TCP: complete it. */
static void siw_tx_msg_done(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	siw_sq_release(qp);
	/* a zero-copy message's completion waits for its release */
	if (tx->rdmap.wqe == &tx->sq_wqe)
		siw_sq_complete(qp, &tx->sq_wqe, IB_WC_SUCCESS, tx->rdmap.len);
	siw_rdmap_tx_done(qp);
	siw_zc_end(tx->zc);
	tx->zc = NULL;
}

/*
 * Flush what the transmitter owns: our Reads, its current WQE, then the
 * rings, in posting order. Not while the receiver still holds a Read:
 * its end runs the transmitter again (siw_sq_read_done()).
 */
static void siw_tx_flush(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	siw_sq_release(qp);
	if (siw_sq_flush_reads(qp))
		return;
	if (tx->sq_wqe.active)
		siw_sq_complete(qp, &tx->sq_wqe, IB_WC_WR_FLUSH_ERR, 0);
	siw_sq_done_flush(qp);
	siw_zc_end(tx->zc);
	tx->zc = NULL;
	siw_rdmap_tx_flush(qp);
	siw_mpa_tx_reset(&tx->mpa);
	tx->active = false;
	tx->busy = false;
	tx->term_busy = false;
	tx->corked = 0;
	siw_qp_flush_sq(qp);
}

/* The batch went into the socket completely. Return: stop running. */
static bool siw_tx_pushed(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	tx->busy = false;
	if (tx->term_busy) {
		tx->term_busy = false;
		qp->term_sent = true;
		siw_stat_inc(qp->sdev, SIW_STAT_TERM_TX);
		trace_siw_term_send(qp, qp->term_ctrl);
		siw_qp_to_error(qp);
		return true;
	}
	if (!tx->active)
		siw_tx_msg_done(qp);
	return false;
}

/* Nothing of ours is in flight any more: a closing QP may close. */
static bool siw_tx_all_done(struct siw_qp *qp)
{
	bool idle;

	spin_lock_bh(&qp->orq_lock);
	idle = qp->orq_get == qp->orq_put &&
	       !READ_ONCE(qp->rx.rdmap.rresp.active);
	spin_unlock_bh(&qp->orq_lock);
	return idle;
}

/* TCP's segment size on this connection, read without its lock. */
static u32 siw_tx_seg(struct siw_qp *qp)
{
	return READ_ONCE(tcp_sk(qp->sock->sk)->mss_cache);
}

/* Another message waits to be sent (a hint, see siw_sq_peek()). */
static bool siw_tx_more(struct siw_qp *qp)
{
	return siw_irq_waiting(qp) || siw_sq_peek(qp);
}

/* One step of the engine. Return: 0 to go on, else stop. */
static int siw_tx_step(struct siw_qp *qp, enum siw_qp_state state)
{
	struct siw_tx *tx = &qp->tx;
	int rv;

	if (tx->busy) {
		/*
		 * Small messages in a row share a TCP segment: while another
		 * one waits and less than a segment is held, the batch goes
		 * with MSG_MORE; the run's end pushes what is held. Larger
		 * ones go at once, so the peer works while we frame.
		 */
		u32 len = tx->mpa.len - tx->mpa.sent;
		bool next = !tx->active && state == SIW_QP_RTS &&
			    tx->corked + len < siw_tx_seg(qp) &&
			    siw_tx_more(qp);

		rv = siw_mpa_tx_push(qp, &tx->mpa, tx->active || next);
		if (rv == -EAGAIN)
			return rv;
		if (rv) {
			/* the connection's end reports it (siw_cep_do_rdma) */
			WRITE_ONCE(qp->tx_sock_err, rv);
			siw_qp_to_error(qp);
			return rv;
		}
		if (!tx->active)
			tx->corked = next ? tx->corked + len : 0;
		return siw_tx_pushed(qp) ? -ESHUTDOWN : 0;
	}
	if (state == SIW_QP_TERMINATE) {
		if (!qp->term_pending)
			return -ESHUTDOWN;
		siw_rdmap_tx_term(qp);
		siw_tx_begin(qp);
		tx->term_busy = true;
	}
	if (tx->active) {
		rv = siw_tx_fill(qp);
		if (rv) {
			siw_err(qp->sdev, "QP %u: payload not accessible\n",
				qp_id(qp));
			if (tx->rdmap.wqe == &tx->sq_wqe)
				siw_tx_fail(qp, &tx->sq_wqe,
					    IB_WC_LOC_PROT_ERR);
			else
				siw_qp_to_error(qp);
		}
		return rv;
	}
	if (READ_ONCE(qp->tx_hold))
		return -EBUSY;
	rv = siw_tx_pick(qp);
	if (!rv)
		siw_tx_begin(qp);
	else if (rv == -EAGAIN)
		rv = 0;
	else if (rv == -ENOENT && state == SIW_QP_CLOSING &&
		 !qp->close_sent && siw_tx_all_done(qp))
		siw_qp_sq_drained(qp);
	return rv;
}

static void siw_tx_steps(struct siw_qp *qp, int budget)
{
	/* completions that waited for zero-copy releases */
	siw_sq_done_report(qp);

	while (budget--) {
		enum siw_qp_state state = READ_ONCE(qp->attrs.state);

		if (state == SIW_QP_ERROR) {
			siw_tx_flush(qp);
			return;
		}
		if (state == SIW_QP_IDLE || !qp->sock)
			return;
		if (siw_tx_step(qp, state))
			return;
	}
	/* let others run; come back */
	siw_qp_schedule_tx(qp);
}

static void siw_tx_run(struct siw_qp *qp, int budget)
{
	qp->tx.run_sqes = 0;
	siw_tx_steps(qp, budget);
	/* the next message did not follow in this run: send what waits */
	if (qp->tx.corked) {
		qp->tx.corked = 0;
		if (qp->sock)
			tcp_sock_set_cork(qp->sock->sk, false);
	}
}

/*
 * Unlock the transmitter. A TX work that found it held left a note
 * instead of waiting (siw_tx_work): run the work again for it.
 */
static void siw_tx_unlock(struct siw_qp *qp)
{
	mutex_unlock(&qp->tx_mutex);
	/* a value-returning bit op: fully ordered after the unlock */
	if (test_and_clear_bit(SIW_TX_AGAIN, &qp->tx_flags))
		siw_qp_schedule_tx(qp);
}

static void siw_tx_work(struct work_struct *w)
{
	struct siw_qp *qp = container_of(w, struct siw_qp, tx_work);

	/*
	 * While a doorbell transmits inline, waiting for its mutex would
	 * spin a CPU for nothing: note that the work is wanted; the holder
	 * reads the note after it unlocks. Set before the try, so that a
	 * holder unlocking in between is seen by the try itself.
	 */
	set_bit(SIW_TX_AGAIN, &qp->tx_flags);
	smp_mb__after_atomic();	/* the note before the try */
	if (mutex_trylock(&qp->tx_mutex)) {
		clear_bit(SIW_TX_AGAIN, &qp->tx_flags);
		siw_tx_run(qp, SIW_TX_BUDGET);
		/*
		 * A stream handed over by the doorbell pays a wake-up per run:
		 * worth it only while posts pile up behind the held slot. A
		 * user that waits for each completion gets inline sends back.
		 */
		if (qp->tx.run_sqes < 2 && READ_ONCE(qp->db_streak))
			WRITE_ONCE(qp->db_streak, 0);
		siw_tx_unlock(qp);
	}
	siw_qp_put(qp);
}

/**
 * siw_tx_now - transmit from the caller's context
 * @qp: the QP; caller may sleep (the user QP doorbell)
 *
 * Saves the hand-over to the TX work on the latency path: a small message
 * is framed and queued to TCP before the doorbell returns. While the work
 * (or another caller) transmits, or after SIW_TX_INLINE_BUDGET steps, the
 * rest is left to the work.
 */
void siw_tx_now(struct siw_qp *qp)
{
	if (!mutex_trylock(&qp->tx_mutex)) {
		siw_qp_schedule_tx(qp);
		return;
	}
	siw_tx_run(qp, SIW_TX_INLINE_BUDGET);
	siw_tx_unlock(qp);
}

/**
 * siw_tx_doorbell - a user's doorbell on a QP in RTS or ERROR
 * @qp: the QP
 * @state: its state, as the caller read it after the posts
 *
 * Transmits inline (siw_tx_now()), unless the user streams messages
 * whose slots are held while they are sent (siw_sqe_take()): small Sends
 * and Writes after several doorbells in a row with nothing received, or
 * Reads while another is in flight. Then the TX work sends on another
 * CPU while the user goes on posting; its posts find the slot before
 * theirs still held (siw_sq_release()) and need no doorbell, and the
 * messages they add share TCP segments, so a Read stream's responder
 * gets its requests in batches too. A ping-pong receives between its
 * doorbells, or has no Read in flight, and stays inline.
 */
void siw_tx_doorbell(struct siw_qp *qp, enum siw_qp_state state)
{
	u8 streak = READ_ONCE(qp->db_streak);
	u8 held = READ_ONCE(qp->tx_held_last);

	if (streak < SIW_TX_STREAM_DBS)
		WRITE_ONCE(qp->db_streak, streak + 1);
	if (state == SIW_QP_RTS &&
	    (held == SIW_HELD_READ ||
	     (held == SIW_HELD_MSG && streak >= SIW_TX_STREAM_DBS))) {
		siw_stat_inc(qp->sdev, SIW_STAT_TX_DB_HANDOFF);
		siw_qp_hand_tx(qp);
	} else {
		siw_tx_now(qp);
	}
}

/**
 * siw_tx_sync - run the transmitter here, waiting for its mutex
 * @qp: the QP; the caller may sleep
 *
 * For the CM's close (siw_tx_quiesce(), siw_qp_llp_detach()): what the
 * TX work would do, without a work item and a wake-up for it.
 */
void siw_tx_sync(struct siw_qp *qp)
{
	mutex_lock(&qp->tx_mutex);
	siw_tx_run(qp, SIW_TX_BUDGET);
	siw_tx_unlock(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_tx_sync);

/**
 * siw_tx_quiesce - wait until no transmitter runs
 * @qp: the QP, already in ERROR: whatever transmits after this only
 *	flushes and keeps off the socket
 *
 * Flushes what the transmitter owns from here (no worker to wake and wait
 * for), then waits for a TX work still queued or running, and for a
 * doorbell transmitting inline (its mutex).
 */
void siw_tx_quiesce(struct siw_qp *qp)
{
	siw_tx_sync(qp);
	flush_work(&qp->tx_work);
	mutex_lock(&qp->tx_mutex);
	siw_tx_unlock(qp);
}

/* A new QP: its transmitter and zero-copy bookkeeping. */
int siw_tx_init(struct siw_qp *qp)
{
	INIT_WORK(&qp->tx_work, siw_tx_work);
	mutex_init(&qp->tx_mutex);
	return siw_zc_ctx_create(qp);
}

/*
 * The QP is being destroyed and no TX work is left: flush what the
 * transmitter still holds. TCP may release zero-copy pages later: that
 * no longer reaches the QP.
 */
void siw_tx_fini(struct siw_qp *qp)
{
	siw_zc_ctx_detach(qp);
	siw_tx_flush(qp);
	siw_zc_ctx_free(qp);
}
