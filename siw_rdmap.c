// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: RDMAP (RFC 5040). The transmit engine that turns work requests
 * and inbound Read Requests into messages, the receive-side semantics of
 * each message type, and Terminate.
 */
#include <linux/slab.h>
#include <net/tcp.h>

#include "siw.h"

/* ------------------------------------------------------------ table */

/*
 * Per-opcode receive properties (RFC 5040 4.x, table driven): which DDP
 * queue an untagged message uses, whether it needs a posted receive.
 */
struct siw_op_info {
	const char *name;
	bool consumes_rqe;
	bool solicited;
	bool invalidates;
};

static const struct siw_op_info siw_ops[RDMAP_NUM_OPCODES] = {
	[RDMAP_WRITE] = { "Write" },
	[RDMAP_READ_REQ] = { "Read Request" },
	[RDMAP_READ_RESP] = { "Read Response" },
	[RDMAP_SEND] = { "Send", true },
	[RDMAP_SEND_INVAL] = { "Send with Invalidate", true, false, true },
	[RDMAP_SEND_SE] = { "Send with SE", true, true },
	[RDMAP_SEND_SE_INVAL] = { "Send with SE and Invalidate", true, true,
				  true },
	[RDMAP_TERMINATE] = { "Terminate" },
};

/*
 * Terminate codes for a failed MR check (RFC 5040 7.2, RFC 5041 7.2):
 * tagged placement faults are reported by DDP, except rights, which
 * are RDMAP's; faults of a Read Request's source are all RDMAP's.
 */
#define SIW_TERM_AT_RDMAP 0xff

static const struct {
	const char *why;
	u8 rdmap;
	u8 ddp;
} siw_acc_term[] = {
	[SIW_ACC_STAG] = { "invalid STag", TERM_RDMAP_INV_STAG,
			   TERM_DDP_T_INV_STAG },
	[SIW_ACC_PD] = { "STag of another protection domain",
			 TERM_RDMAP_STAG_PD, TERM_DDP_T_STAG_NOT_ASSOC },
	[SIW_ACC_RIGHTS] = { "access rights violation", TERM_RDMAP_ACCESS,
			     SIW_TERM_AT_RDMAP },
	[SIW_ACC_BOUNDS] = { "base or bounds violation",
			     TERM_RDMAP_BASE_BOUNDS, TERM_DDP_T_BASE_BOUNDS },
	[SIW_ACC_WRAP] = { "tagged offset wraps", TERM_RDMAP_TO_WRAP,
			   TERM_DDP_T_TO_WRAP },
};

/* --------------------------------------------------------- Terminate */

/**
 * siw_term_set - fatal error: send a Terminate, then close
 * @qp: the QP
 * @layer: TERM_LAYER_*
 * @etype: error type of that layer
 * @ecode: error code
 * @hdr: offending FPDU's header as received (with MPA length), or NULL
 * @hdr_len: bytes at @hdr
 *
 * Any context. Only the first error of a QP is reported.
 */
void siw_term_set(struct siw_qp *qp, unsigned int layer, unsigned int etype,
		  unsigned int ecode, const void *hdr, unsigned int hdr_len)
{
	unsigned long flags;
	bool first = false;

	spin_lock_irqsave(&qp->state_lock, flags);
	if (qp->attrs.state == SIW_QP_RTS ||
	    qp->attrs.state == SIW_QP_CLOSING) {
		qp->attrs.state = SIW_QP_TERMINATE;
		qp->term_ctrl = term_mk_ctrl(layer, etype, ecode);
		hdr_len = hdr && hdr_len > MPA_HDR_SIZE ? hdr_len - MPA_HDR_SIZE :
							  0;
		hdr_len = min_t(unsigned int, hdr_len, TERM_MAX_HDR_COPY);
		if (hdr_len && layer != TERM_LAYER_LLP) {
			memcpy(qp->term_hdr, (const u8 *)hdr + MPA_HDR_SIZE,
			       hdr_len);
			qp->term_ctrl |= TERM_FLAG_D | TERM_FLAG_R;
		} else {
			hdr_len = 0;
		}
		qp->term_hdr_len = hdr_len;
		qp->term_pending = true;
		first = true;
	}
	spin_unlock_irqrestore(&qp->state_lock, flags);

	if (!first)
		return;
	siw_dbg(qp->sdev, "QP %u: terminate layer %u etype %u code 0x%x\n",
		qp_id(qp), layer, etype, ecode);
	if (layer == TERM_LAYER_RDMAP && etype == TERM_RDMAP_ETYPE_REMOTE_PROT)
		siw_qp_event(qp, IB_EVENT_QP_ACCESS_ERR);
	else
		siw_qp_event(qp, IB_EVENT_QP_FATAL);
	siw_qp_schedule_tx(qp);
}

static void siw_tx_build_terminate(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	struct iwarp_terminate *t = (void *)tx->hdr;
	unsigned int len = sizeof(*t) + qp->term_hdr_len;

	tx->op = RDMAP_TERMINATE;
	tx->qn = DDP_QN_TERMINATE;
	tx->msn = tx->msn_next[DDP_QN_TERMINATE]++;
	tx->inval = 0;
	tx->msg_off = 0;
	tx->msg_len = 0;
	siw_ddp_tx_hdr(tx, 0, true);
	t->ctrl = cpu_to_be32(qp->term_ctrl);
	memcpy(t + 1, qp->term_hdr, qp->term_hdr_len);
	t->hdr.ctrl.mpa_len = cpu_to_be16(len - MPA_HDR_SIZE);
	tx->hdr_len = len;
	tx->nfrags = 1;
	tx->fpdu_zc = false;
	tx->seg_len = 0;
	siw_tx_fpdu_seal(qp);
	tx->fpdu_busy = true;
	tx->term_busy = true;
}

static const char *const siw_term_layer_name[] = {
	[TERM_LAYER_RDMAP] = "RDMAP",
	[TERM_LAYER_DDP] = "DDP",
	[TERM_LAYER_LLP] = "MPA",
};

/* Completion status for our outstanding Read the peer terminated */
static enum ib_wc_status siw_term_wc_status(u32 ctrl)
{
	unsigned int layer = ctrl >> TERM_LAYER_SHIFT;
	unsigned int etype = (ctrl >> TERM_ETYPE_SHIFT) & 0xf;

	if (layer == TERM_LAYER_RDMAP && etype == TERM_RDMAP_ETYPE_REMOTE_PROT)
		return IB_WC_REM_ACCESS_ERR;
	if (layer == TERM_LAYER_DDP && etype == TERM_DDP_ETYPE_TAGGED)
		return IB_WC_REM_ACCESS_ERR;
	if (layer == TERM_LAYER_DDP && etype == TERM_DDP_ETYPE_UNTAGGED)
		return IB_WC_REM_INV_REQ_ERR;
	return IB_WC_REM_OP_ERR;
}

static int siw_rx_terminate(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct iwarp_terminate *t = (void *)rx->hdr;
	u32 ctrl = be32_to_cpu(t->ctrl);
	unsigned int layer = ctrl >> TERM_LAYER_SHIFT;
	struct siw_orq_entry *e = NULL;
	struct siw_wqe w;

	siw_stat_inc(qp->sdev, SIW_STAT_TERM_RX);
	siw_warn(qp->sdev,
		 "QP %u: peer sent Terminate: layer %s etype %u code 0x%02x\n",
		 qp_id(qp), layer < ARRAY_SIZE(siw_term_layer_name) ?
		 siw_term_layer_name[layer] : "?",
		 (ctrl >> TERM_ETYPE_SHIFT) & 0xf,
		 (ctrl >> TERM_ECODE_SHIFT) & 0xff);

	/* a Read of ours the peer refused completes with the reason */
	spin_lock_bh(&qp->orq_lock);
	if (qp->orq_get != qp->orq_put) {
		e = &qp->orq[qp->orq_get % qp->attrs.ord];
		memcpy(&w, &e->wqe, sizeof(w));
		qp->orq_get++;
	}
	spin_unlock_bh(&qp->orq_lock);
	if (e)
		siw_sq_read_done(qp, &w, siw_term_wc_status(ctrl), 0);

	siw_qp_event(qp, siw_term_wc_status(ctrl) == IB_WC_REM_ACCESS_ERR ?
			 IB_EVENT_QP_ACCESS_ERR : IB_EVENT_QP_FATAL);
	siw_qp_to_error(qp);
	return -ECONNRESET;
}

/* --------------------------------------------------------- transmit */

static void siw_tx_fail(struct siw_qp *qp, struct siw_wqe *wqe,
			enum ib_wc_status status)
{
	siw_sq_complete(qp, wqe, status, 0);
	siw_qp_event(qp, IB_EVENT_QP_FATAL);
	siw_qp_to_error(qp);
}

/* Start the Read Response for the oldest inbound Read Request. */
static int siw_tx_start_rresp(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	struct siw_irq_entry e;
	struct siw_mr *mr = NULL;
	int err;

	spin_lock_bh(&qp->orq_lock);
	if (qp->irq_get == qp->irq_put) {
		spin_unlock_bh(&qp->orq_lock);
		return -ENOENT;
	}
	e = qp->irq[qp->irq_get % qp->attrs.ird];
	qp->irq_get++;
	spin_unlock_bh(&qp->orq_lock);

	memset(&tx->rresp, 0, sizeof(tx->rresp));
	if (e.size) {
		/* re-checked now: the STag may have changed since the request */
		mr = siw_mr_lookup(qp->sdev, e.src_stag);
		err = mr ? siw_mr_check(mr, qp->pd, IB_ACCESS_REMOTE_READ,
					e.src_to, e.size, true) : SIW_ACC_STAG;
		if (err) {
			if (mr)
				siw_mr_put(mr);
			siw_term_set(qp, TERM_LAYER_RDMAP,
				     TERM_RDMAP_ETYPE_REMOTE_PROT,
				     siw_acc_term[err].rdmap, NULL, 0);
			return -EPROTO;
		}
		tx->rresp.sqe.num_sge = 1;
		tx->rresp.sqe.sge[0].laddr = e.src_to;
		tx->rresp.sqe.sge[0].length = e.size;
		tx->rresp.sqe.sge[0].lkey = e.src_stag;
		tx->rresp.mr[0] = mr;
	}
	tx->rresp.bytes = e.size;
	tx->rresp.active = true;
	tx->wqe = &tx->rresp;
	tx->op = RDMAP_READ_RESP;
	tx->stag = e.sink_stag;
	tx->to = e.sink_to;
	tx->msg_len = e.size;
	tx->msg_off = 0;
	tx->active = true;
	siw_tx_zc_begin(qp);
	return 0;
}

static void siw_tx_start_rreq(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	struct siw_wqe *wqe = &tx->sq_wqe;
	struct iwarp_read_req_body *b;
	struct siw_orq_entry *e;

	/* the ORQ entry owns the WQE (and its MR refs) from here */
	spin_lock_bh(&qp->orq_lock);
	e = &qp->orq[qp->orq_put % qp->attrs.ord];
	siw_sq_read_issue(qp, wqe);
	memcpy(&e->wqe, wqe, sizeof(*wqe));
	qp->orq_put++;
	spin_unlock_bh(&qp->orq_lock);
	memset(wqe->mr, 0, sizeof(wqe->mr));
	wqe->active = false;

	tx->wqe = NULL;
	tx->op = RDMAP_READ_REQ;
	tx->qn = DDP_QN_READ_REQ;
	tx->msn = tx->msn_next[DDP_QN_READ_REQ]++;
	tx->inval = 0;
	tx->msg_len = 0;
	tx->msg_off = 0;
	tx->active = true;

	b = &((struct iwarp_read_req *)tx->hdr)->body;
	b->sink_stag = cpu_to_be32(wqe->sqe.num_sge ? wqe->sqe.sge[0].lkey : 0);
	b->sink_to = cpu_to_be64(wqe->sqe.num_sge ? wqe->sqe.sge[0].laddr : 0);
	b->size = cpu_to_be32(wqe->bytes);
	b->src_stag = cpu_to_be32(wqe->sqe.rkey);
	b->src_to = cpu_to_be64(wqe->sqe.raddr);
}

/* Zero-length message that tells an MPA v2 responder we are ready. */
static void siw_tx_start_rtr(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	qp->rtr_pending = false;
	tx->wqe = NULL;
	tx->op = qp->rtr_send;
	tx->stag = 0;
	tx->to = 0;
	tx->inval = 0;
	tx->msg_len = 0;
	tx->msg_off = 0;
	tx->active = true;
	if (tx->op == RDMAP_READ_REQ) {
		struct iwarp_read_req_body *b =
			&((struct iwarp_read_req *)tx->hdr)->body;

		memset(b, 0, sizeof(*b));
		tx->qn = DDP_QN_READ_REQ;
		tx->msn = tx->msn_next[DDP_QN_READ_REQ]++;
		qp->rx.rtr_rresp = true;
	} else if (tx->op == RDMAP_SEND) {
		tx->qn = DDP_QN_SEND;
		tx->msn = tx->msn_next[DDP_QN_SEND]++;
	} else {
		tx->op = RDMAP_WRITE;
	}
}

static int siw_tx_local_op(struct siw_qp *qp, struct siw_wqe *wqe)
{
	struct siw_sqe *sqe = &wqe->sqe;
	int rv;

	if (sqe->opcode == SIW_OP_INVAL_STAG)
		rv = siw_mr_invalidate(qp->sdev, sqe->rkey, qp->pd, false) ?
		     -EINVAL : 0;
	else
		rv = siw_mr_fast_reg(qp->sdev,
				     (struct ib_mr *)(uintptr_t)sqe->base_mr,
				     sqe->rkey,
				     (int)sqe->access);
	siw_sq_complete(qp, wqe, rv ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS, 0);
	return rv;
}

/* Take the next work request off the SQ and start its message. */
static int siw_tx_start_sqe(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	struct siw_wqe *wqe = &tx->sq_wqe;
	struct siw_sqe *sqe = &wqe->sqe;
	int rv;

	rv = siw_sqe_fetch(qp, wqe, false);
	if (rv == -ENOENT || rv == -EBUSY)
		return rv;
	if (rv) {
		wqe->active = true;
		siw_tx_fail(qp, wqe, wqe->status);
		return -EINVAL;
	}
	if (sqe->opcode == SIW_OP_INVAL_STAG || sqe->opcode == SIW_OP_REG_MR) {
		if (siw_tx_local_op(qp, wqe)) {
			siw_qp_to_error(qp);
			return -EINVAL;
		}
		return 0;
	}
	/* a Read writes its local sink */
	rv = siw_wqe_resolve(qp, wqe, sqe->opcode == SIW_OP_READ ||
			     sqe->opcode == SIW_OP_READ_LOCAL_INV);
	if (rv != IB_WC_SUCCESS) {
		siw_tx_fail(qp, wqe, rv);
		return -EINVAL;
	}

	tx->msg_off = 0;
	tx->active = true;
	switch (sqe->opcode) {
	case SIW_OP_READ:
	case SIW_OP_READ_LOCAL_INV:
		siw_tx_start_rreq(qp);
		return 0;
	case SIW_OP_WRITE:
		tx->op = RDMAP_WRITE;
		tx->stag = sqe->rkey;
		tx->to = sqe->raddr;
		break;
	default:
		if (sqe->opcode == SIW_OP_SEND_REMOTE_INV) {
			tx->op = sqe->flags & SIW_WQE_SOLICITED ?
				 RDMAP_SEND_SE_INVAL : RDMAP_SEND_INVAL;
			tx->inval = sqe->rkey;
		} else {
			tx->op = sqe->flags & SIW_WQE_SOLICITED ?
				 RDMAP_SEND_SE : RDMAP_SEND;
			tx->inval = 0;
		}
		tx->qn = DDP_QN_SEND;
		tx->msn = tx->msn_next[DDP_QN_SEND]++;
		break;
	}
	tx->wqe = wqe;
	tx->msg_len = wqe->bytes;
	siw_tx_zc_begin(qp);
	return 0;
}

/* Frame the next FPDU of the active message. */
static int siw_tx_next_fpdu(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	u32 seg = min(siw_tx_seg_max(qp, tx->op), tx->msg_len - tx->msg_off);
	int n = 0;

	if (seg) {
		n = siw_tx_fpdu_payload(qp, seg);
		if (n < 0)
			return n;
	} else {
		tx->nfrags = 1;
		tx->seg_len = 0;
		tx->fpdu_zc = false;
	}
	siw_ddp_tx_hdr(tx, n, tx->msg_off + n == tx->msg_len);
	if (tx->op == RDMAP_READ_REQ)
		tx->hdr_len = sizeof(struct iwarp_read_req);
	siw_tx_fpdu_seal(qp);
	tx->fpdu_busy = true;
	return 0;
}

/* The FPDU went out: advance, and complete the message when done. */
static void siw_tx_fpdu_done(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	tx->fpdu_busy = false;
	tx->msg_off += tx->seg_len;
	if (tx->msg_off < tx->msg_len)
		return;

	tx->active = false;
	/* a zero-copy message's completion waits for its release */
	if (tx->wqe == &tx->sq_wqe)
		siw_sq_complete(qp, &tx->sq_wqe, IB_WC_SUCCESS, tx->msg_len);
	else if (tx->wqe == &tx->rresp)
		siw_wqe_release(&tx->rresp);
	siw_tx_zc_end(qp);
	tx->wqe = NULL;
}

static int siw_tx_start(struct siw_qp *qp)
{
	int rv;

	if (qp->rtr_pending) {
		siw_tx_start_rtr(qp);
		return 0;
	}
	rv = siw_tx_start_rresp(qp);
	if (rv != -ENOENT)
		return rv;
	return siw_tx_start_sqe(qp);
}

#define SIW_TX_BUDGET 64

/* no Read of ours waits for its response */
static bool siw_orq_empty(struct siw_qp *qp)
{
	bool empty;

	spin_lock_bh(&qp->orq_lock);
	empty = qp->orq_get == qp->orq_put && !READ_ONCE(qp->rx.rresp.active);
	spin_unlock_bh(&qp->orq_lock);
	return empty;
}

static void siw_tx_run(struct siw_qp *qp, int budget)
{
	struct siw_tx *tx = &qp->tx;
	int rv;

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

		if (tx->fpdu_busy) {
			rv = siw_tx_fpdu_send(qp, tx->active &&
					      tx->msg_off + tx->seg_len <
					      tx->msg_len);
			if (rv == -EAGAIN)
				return;
			if (rv) {
				siw_dbg(qp->sdev, "QP %u: send error %d\n",
					qp_id(qp), rv);
				siw_qp_to_error(qp);
				return;
			}
			if (tx->term_busy) {
				tx->term_busy = false;
				qp->term_sent = true;
				siw_stat_inc(qp->sdev, SIW_STAT_TERM_TX);
				siw_qp_to_error(qp);
				return;
			}
			siw_tx_fpdu_done(qp);
			continue;
		}
		if (state == SIW_QP_TERMINATE) {
			if (qp->term_pending) {
				qp->term_pending = false;
				siw_tx_build_terminate(qp);
				continue;
			}
			return;
		}
		if (tx->active) {
			rv = siw_tx_next_fpdu(qp);
			if (rv) {
				siw_err(qp->sdev, "QP %u: payload not accessible\n",
					qp_id(qp));
				if (tx->wqe == &tx->sq_wqe)
					siw_tx_fail(qp, &tx->sq_wqe,
						    IB_WC_LOC_PROT_ERR);
				else
					siw_qp_to_error(qp);
				siw_tx_zc_end(qp);
				tx->active = false;
				return;
			}
			continue;
		}
		if (READ_ONCE(qp->tx_hold))
			return;
		rv = siw_tx_start(qp);
		if (rv == -ENOENT && state == SIW_QP_CLOSING &&
		    !qp->close_sent && siw_orq_empty(qp)) {
			/* all sent: now the orderly close */
			qp->close_sent = true;
			siw_cm_qp_disconnect(qp, false);
		}
		if (rv)
			return;
	}
	/* let others run; come back */
	siw_qp_schedule_tx(qp);
}

void siw_tx_work(struct work_struct *w)
{
	struct siw_qp *qp = container_of(w, struct siw_qp, tx_work);

	mutex_lock(&qp->tx_mutex);
	siw_tx_run(qp, SIW_TX_BUDGET);
	mutex_unlock(&qp->tx_mutex);
	siw_qp_put(qp);
}

#define SIW_TX_INLINE_BUDGET 16

/**
 * siw_tx_now - transmit from the caller's context
 * @qp: the QP; caller may sleep (the user QP doorbell)
 *
 * Saves the hand-over to the TX work on the latency path: a small message
 * is framed and queued to TCP before the doorbell returns. While the work
 * (or another caller) transmits, or after SIW_TX_INLINE_BUDGET FPDUs, the
 * rest is left to the work.
 */
void siw_tx_now(struct siw_qp *qp)
{
	if (!mutex_trylock(&qp->tx_mutex)) {
		siw_qp_schedule_tx(qp);
		return;
	}
	siw_tx_run(qp, SIW_TX_INLINE_BUDGET);
	mutex_unlock(&qp->tx_mutex);
}

void siw_qp_write_space(struct siw_qp *qp)
{
	siw_qp_schedule_tx(qp);
}

/* ---------------------------------------------------------- receive */

static int siw_rx_term(struct siw_qp *qp, unsigned int layer,
		       unsigned int etype, unsigned int ecode, const char *why)
{
	struct siw_rx *rx = &qp->rx;

	siw_stat_inc(qp->sdev, SIW_STAT_RX_PROTO_ERR);
	siw_warn(qp->sdev, "QP %u: %s: %s, terminating\n", qp_id(qp),
		 siw_ops[rx->op].name, why);
	siw_term_set(qp, layer, etype, ecode, rx->hdr, rx->hdr_have);
	return -EPROTO;
}

static int siw_rx_access_err(struct siw_qp *qp, int err, bool tagged)
{
	if (err <= SIW_ACC_OK || err >= ARRAY_SIZE(siw_acc_term))
		err = SIW_ACC_BOUNDS;
	if (tagged && siw_acc_term[err].ddp != SIW_TERM_AT_RDMAP)
		return siw_rx_term(qp, TERM_LAYER_DDP, TERM_DDP_ETYPE_TAGGED,
				   siw_acc_term[err].ddp, siw_acc_term[err].why);
	return siw_rx_term(qp, TERM_LAYER_RDMAP, TERM_RDMAP_ETYPE_REMOTE_PROT,
			   siw_acc_term[err].rdmap, siw_acc_term[err].why);
}

static void siw_rx_release_hold(struct siw_qp *qp)
{
	if (READ_ONCE(qp->tx_hold)) {
		WRITE_ONCE(qp->tx_hold, false);
		siw_qp_schedule_tx(qp);
	}
}

static int siw_rx_write(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct iwarp_tagged_hdr *h = (void *)rx->hdr;
	u32 stag = be32_to_cpu(h->stag);
	u64 to = be64_to_cpu(h->to);
	struct siw_mr *mr;
	int err;

	if (!rx->fpdu_payload) {
		/* zero-length Write: nothing placed (also MPA v2 RTR) */
		siw_rx_release_hold(qp);
		return 0;
	}
	mr = siw_mr_lookup(qp->sdev, stag);
	if (!mr)
		return siw_rx_access_err(qp, SIW_ACC_STAG, true);
	err = siw_mr_check(mr, qp->pd, IB_ACCESS_REMOTE_WRITE, to,
			   rx->fpdu_payload, true);
	if (err) {
		siw_mr_put(mr);
		return siw_rx_access_err(qp, err, true);
	}
	rx->tmr = mr;
	rx->tva = to;
	return 0;
}

static int siw_rx_rresp(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct iwarp_tagged_hdr *h = (void *)rx->hdr;
	struct siw_wqe *w = &rx->rresp;
	u32 stag = be32_to_cpu(h->stag);
	u64 to = be64_to_cpu(h->to);
	u32 sink_stag;
	u64 sink_to;

	if (rx->rtr_rresp && !rx->fpdu_payload && !w->active) {
		/* answer to our zero-length RTR Read */
		rx->rtr_rresp = false;
		return 0;
	}
	if (!w->active) {
		bool got = false;

		spin_lock_bh(&qp->orq_lock);
		if (qp->orq_get != qp->orq_put) {
			memcpy(w, &qp->orq[qp->orq_get % qp->attrs.ord].wqe,
			       sizeof(*w));
			qp->orq_get++;
			got = true;
		}
		spin_unlock_bh(&qp->orq_lock);
		if (!got)
			return siw_rx_term(qp, TERM_LAYER_RDMAP,
					   TERM_RDMAP_ETYPE_REMOTE_OP,
					   TERM_RDMAP_OPCODE,
					   "no Read outstanding");
		w->active = true;
		w->done = 0;
		/* ORD slot free: a read waiting for it may go */
		siw_qp_schedule_tx(qp);
	}
	sink_stag = w->sqe.num_sge ? w->sqe.sge[0].lkey : 0;
	sink_to = w->sqe.num_sge ? w->sqe.sge[0].laddr : 0;
	if (stag != sink_stag || to != sink_to + w->done ||
	    rx->fpdu_payload > w->bytes - w->done) {
		siw_warn(qp->sdev,
			 "QP %u: Read Response STag 0x%08x TO 0x%llx len %u, expected STag 0x%08x TO 0x%llx, %u of %u bytes left\n",
			 qp_id(qp), stag, to, rx->fpdu_payload, sink_stag,
			 sink_to + w->done, w->bytes - w->done, w->bytes);
		return siw_rx_access_err(qp, stag != sink_stag ?
					 SIW_ACC_STAG : SIW_ACC_BOUNDS, true);
	}
	rx->target = w;
	rx->toff = w->done;
	return 0;
}

static int siw_rx_send(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct siw_wqe *w = &rx->rwqe;
	int rv;

	if (!w->active) {
		if (rx->mo)
			return siw_rx_term(qp, TERM_LAYER_DDP,
					   TERM_DDP_ETYPE_UNTAGGED,
					   TERM_DDP_U_INV_MO,
					   "first segment with MO != 0");
		if (READ_ONCE(qp->tx_hold) && !rx->fpdu_payload &&
		    rx->last) {
			/* zero-length Send RTR: ready, consumes no buffer */
			rx->rtr_send = true;
			siw_rx_release_hold(qp);
			return 0;
		}
		rv = siw_rqe_fetch(qp, w);
		if (rv == -ENOENT)
			return siw_rx_term(qp, TERM_LAYER_DDP,
					   TERM_DDP_ETYPE_UNTAGGED,
					   TERM_DDP_U_INV_MSN_NOBUF,
					   "no receive posted");
		if (rv) {
			w->active = true;
			siw_wqe_complete(qp, w, w->status, true, 0, 0, false);
			return siw_rx_term(qp, TERM_LAYER_RDMAP,
					   TERM_RDMAP_ETYPE_LOCAL_CATA, 0,
					   "malformed receive WQE");
		}
		rv = siw_wqe_resolve(qp, w, true);
		if (rv != IB_WC_SUCCESS) {
			siw_wqe_complete(qp, w, rv, true, 0, 0, false);
			return siw_rx_term(qp, TERM_LAYER_RDMAP,
					   TERM_RDMAP_ETYPE_LOCAL_CATA, 0,
					   "receive buffer not accessible");
		}
	}
	if (rx->mo != w->done)
		return siw_rx_term(qp, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				   TERM_DDP_U_INV_MO, "unexpected MO");
	if (rx->fpdu_payload > w->bytes - w->done) {
		siw_wqe_complete(qp, w, IB_WC_LOC_LEN_ERR, true, w->done, 0,
				 false);
		return siw_rx_term(qp, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				   TERM_DDP_U_MSG_TOO_LONG,
				   "message longer than the receive buffer");
	}
	rx->target = w;
	rx->toff = w->done;
	return 0;
}

static int siw_rx_rreq(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct iwarp_read_req *r = (void *)rx->hdr;
	u32 size = be32_to_cpu(r->body.size);
	u64 src_to = be64_to_cpu(r->body.src_to);
	struct siw_mr *mr;
	int err;

	if (!rx->last || rx->mo || rx->fpdu_payload)
		return siw_rx_term(qp, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				   TERM_DDP_U_INV_MO, "malformed Read Request");
	if (qp->irq_put - qp->irq_get >= qp->attrs.ird)
		return siw_rx_term(qp, TERM_LAYER_DDP, TERM_DDP_ETYPE_UNTAGGED,
				   TERM_DDP_U_INV_MSN_NOBUF,
				   "more Read Requests than IRD");
	if (!size)
		return 0;
	/*
	 * Rights come from the MR alone: librdmacm leaves the active side's
	 * QP access flags at 0 for iWARP, so they can't be relied upon.
	 */
	mr = siw_mr_lookup(qp->sdev, be32_to_cpu(r->body.src_stag));
	if (!mr) {
		err = SIW_ACC_STAG;
	} else {
		err = siw_mr_check(mr, qp->pd, IB_ACCESS_REMOTE_READ, src_to,
				   size, true);
		siw_mr_put(mr);
	}
	return err ? siw_rx_access_err(qp, err, false) : 0;
}

/**
 * siw_rdmap_rx_hdr - message semantics of a received segment header
 * @qp: the QP; DDP fields are checked, rx.op/last/mo/qn are set
 *
 * Sets up the placement target. Nothing visible to the consumer happens
 * here; that waits for siw_rdmap_rx_done(), after the CRC was checked.
 */
int siw_rdmap_rx_hdr(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;

	rx->tmr = NULL;
	rx->target = NULL;
	rx->rtr_send = false;

	switch (rx->op) {
	case RDMAP_WRITE:
		return siw_rx_write(qp);
	case RDMAP_READ_RESP:
		return siw_rx_rresp(qp);
	case RDMAP_READ_REQ:
		return siw_rx_rreq(qp);
	case RDMAP_TERMINATE:
		return 0;
	default:
		return siw_rx_send(qp);
	}
}

static int siw_rx_send_done(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct siw_wqe *w = &rx->rwqe;
	const struct siw_op_info *info = &siw_ops[rx->op];
	struct iwarp_untagged_hdr *h = (void *)rx->hdr;
	u32 inval = 0;

	rx->msn[DDP_QN_SEND] += rx->last;
	if (rx->rtr_send)
		return 0;
	w->done += rx->fpdu_payload;
	if (!rx->last)
		return 0;

	if (info->invalidates) {
		inval = be32_to_cpu(h->inval_stag);
		if (siw_mr_invalidate(qp->sdev, inval, qp->pd, true)) {
			siw_wqe_complete(qp, w, IB_WC_REM_INV_REQ_ERR, true,
					 w->done, 0, false);
			return siw_rx_term(qp, TERM_LAYER_RDMAP,
					   TERM_RDMAP_ETYPE_REMOTE_OP,
					   TERM_RDMAP_CANNOT_INVAL,
					   "STag cannot be invalidated");
		}
	}
	siw_wqe_complete(qp, w, IB_WC_SUCCESS, true, w->done, inval,
			 info->solicited);
	return 0;
}

static int siw_rx_rresp_done(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct siw_wqe *w = &rx->rresp;

	if (!w->active)
		return 0;	/* RTR answer */
	w->done += rx->fpdu_payload;
	if (!rx->last)
		return 0;
	if (w->done != w->bytes) {
		siw_sq_read_done(qp, w, IB_WC_BAD_RESP_ERR, w->done);
		return siw_rx_term(qp, TERM_LAYER_DDP, TERM_DDP_ETYPE_TAGGED,
				   TERM_DDP_T_BASE_BOUNDS,
				   "Read Response shorter than requested");
	}
	if (w->sqe.opcode == SIW_OP_READ_LOCAL_INV && w->sqe.num_sge)
		siw_mr_invalidate(qp->sdev, w->sqe.sge[0].lkey, qp->pd, false);
	siw_sq_read_done(qp, w, IB_WC_SUCCESS, w->done);
	/* a fenced WQE may wait for this */
	siw_qp_schedule_tx(qp);
	return 0;
}

static int siw_rx_rreq_done(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct iwarp_read_req *r = (void *)rx->hdr;
	struct siw_irq_entry *e;

	rx->msn[DDP_QN_READ_REQ]++;
	siw_stat_inc(qp->sdev, SIW_STAT_READ_REQ_RX);
	siw_rx_release_hold(qp);

	spin_lock_bh(&qp->orq_lock);
	e = &qp->irq[qp->irq_put % qp->attrs.ird];
	e->sink_stag = be32_to_cpu(r->body.sink_stag);
	e->sink_to = be64_to_cpu(r->body.sink_to);
	e->size = be32_to_cpu(r->body.size);
	e->src_stag = be32_to_cpu(r->body.src_stag);
	e->src_to = be64_to_cpu(r->body.src_to);
	qp->irq_put++;
	spin_unlock_bh(&qp->orq_lock);

	siw_qp_schedule_tx(qp);
	return 0;
}

/**
 * siw_rdmap_rx_done - a segment arrived completely and intact
 * @qp: the QP
 *
 * Returns 0, or a negative errno when the QP stops receiving.
 */
int siw_rdmap_rx_done(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;

	if (rx->tmr) {
		siw_mr_put(rx->tmr);
		rx->tmr = NULL;
	}
	switch (rx->op) {
	case RDMAP_WRITE:
		return 0;
	case RDMAP_READ_RESP:
		return siw_rx_rresp_done(qp);
	case RDMAP_READ_REQ:
		return siw_rx_rreq_done(qp);
	case RDMAP_TERMINATE:
		return siw_rx_terminate(qp);
	default:
		return siw_rx_send_done(qp);
	}
}
