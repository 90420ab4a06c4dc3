// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: the receive engine. A stream parser fed straight from the TCP
 * receive queue (tcp_read_sock), which collects each FPDU's header
 * across skb boundaries and hands the payload to DDP placement straight
 * from the skbs. It drives the layers up: MPA sizes the FPDU, DDP and
 * RDMAP check the header and name the target, MPA checks the CRC, DDP
 * places, then DDP and RDMAP finish the segment. With CRC on, an FPDU is
 * checked before a byte of it is placed: where it lies when one skb
 * holds all of it, else after its pieces were copied into a staging skb.
 * A layer that finds the input wrong records why (siw_rx_error());
 * siw_rx_fail() alone counts, logs and terminates.
 *
 * It runs in the socket's data_ready (softirq, socket bh-locked) or in
 * process context under lock_sock(): never twice at once for a QP.
 */
#include <linux/skbuff.h>
#include <net/tcp.h>
#include <kunit/visibility.h>

#include "siw.h"
#include "siw_trace.h"

static void siw_rx_next(struct siw_rx *rx)
{
	rx->state = SIW_RX_HDR;
	rx->op = NULL;
	rx->hdr_have = 0;
	rx->payload_have = 0;
	rx->trailer_have = 0;
}

/* The one receive error path: count, log, Terminate, stop parsing. */
static void siw_rx_fail(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct siw_rx_err *e = &rx->err;
	bool crc = e->layer == TERM_LAYER_LLP && e->ecode == TERM_MPA_CRC;

	siw_stat_inc(qp->sdev, crc ? SIW_STAT_RX_CRC_ERR :
				     SIW_STAT_RX_PROTO_ERR);
	trace_siw_rx_error(qp);
	siw_warn(qp->sdev, "QP %u: received %s%s%s, terminating\n",
		 qp_id(qp), rx->op ? rx->op->name : "", rx->op ? ": " : "",
		 e->why);
	siw_term_set(qp, e->layer, e->etype, e->ecode, rx->hdr, rx->hdr_have);
	rx->state = SIW_RX_DEAD;
}

/*
 * The control bits are in: how long is the rest of the header? Read
 * Request bodies and Terminates are small and fully parsed, so they are
 * collected as part of the header. An unknown opcode gets the plain DDP
 * header length, to be refused with the whole header quoted.
 */
static int siw_rx_sized(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_ctrl *ctrl = (const void *)rx->hdr;
	const struct siw_op *op = siw_rx_op_of(ctrl);
	u32 ulpdu = be16_to_cpu(ctrl->mpa_len);
	u32 hlen = op ? op->hdr_len : siw_ddp_rx_hdr_len(ctrl);

	if (op && op->var_len) {
		if (ulpdu > sizeof(rx->hdr) - MPA_HDR_SIZE)
			return siw_rx_error(&rx->err, TERM_LAYER_LLP, 0,
					    TERM_MPA_FRAME,
					    "Terminate too long");
		hlen = max(hlen, ulpdu);
	}
	rx->hdr_need = MPA_HDR_SIZE + hlen;
	return siw_mpa_rx_fpdu(&rx->err, ulpdu, hlen, &rx->fpdu_payload,
			       &rx->trailer_need);
}

/* The whole header is in: every layer checks its part, RDMAP targets. */
static int siw_rx_hdr_done(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_ctrl *ctrl = (const void *)rx->hdr;
	struct siw_rx_target t = {};
	int rv;

	siw_mpa_rx_begin(&rx->mpa, qp->attrs.crc, rx->hdr, rx->hdr_have);
	rv = siw_ddp_rx_version(&rx->err, ctrl);
	if (!rv)
		rv = siw_rdmap_rx_check(&rx->err, ctrl, &rx->op);
	if (!rv)
		rv = siw_ddp_rx_hdr(&rx->ddp, &rx->err, rx->hdr, rx->op);
	if (!rv)
		rv = rx->op->rx_hdr(qp, &t);
	if (!rv)
		siw_ddp_rx_set_target(&rx->ddp, &t);
	return rv;
}

/*
 * A larger FPDU is placed as it comes and its CRC checked at the end:
 * staging it would cost a 64 KiB buffer per QP for what only fpdu_max
 * or a peer's GSO-sized FPDUs send.
 */
#define SIW_RX_VERIFY_MAX	(16 * 1024)

/* Where the payload goes first: the CRC check of the whole FPDU, or DDP. */
static enum siw_rx_state siw_rx_payload_state(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;

	if (!rx->fpdu_payload)
		return SIW_RX_TRAILER;
	if (!rx->mpa.crc_on)
		return SIW_RX_PAYLOAD;
	if (rx->fpdu_payload + rx->trailer_need > SIW_RX_VERIFY_MAX) {
		siw_stat_inc(qp->sdev, SIW_STAT_RX_CRC_LATE);
		return SIW_RX_PAYLOAD;
	}
	return SIW_RX_VERIFY;
}

/* The FPDU is complete: CRC, then DDP and RDMAP finish the segment. */
static int siw_rx_fpdu_done(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	int rv;

	rv = siw_mpa_rx_trailer(&rx->mpa, &rx->err, rx->trailer,
				rx->trailer_need);
	if (rv)
		return rv;
	siw_stat_inc(qp->sdev, SIW_STAT_RX_FPDU);
	/* the peer talks back: the user's doorbells transmit inline */
	if (READ_ONCE(qp->db_streak))
		WRITE_ONCE(qp->db_streak, 0);
	siw_ddp_rx_done(&rx->ddp, rx->op);
	return rx->op->rx_done(qp);
}

/*
 * The staged FPDU is whole: check its CRC, place its payload, finish it
 * (its trailer is checked with the CRC; nothing else reads it).
 * Return: 0 or the error of the step that failed.
 */
static int siw_rx_staged(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct sk_buff *st = rx->stage;
	int rv;

	rv = siw_mpa_rx_verify(&rx->mpa, &rx->err, st, 0, st->len);
	if (!rv)
		rv = siw_ddp_rx_place(&rx->ddp, &rx->err, &rx->mpa, st, 0,
				      rx->fpdu_payload);
	if (!rv)
		rv = siw_rx_fpdu_done(qp);
	skb_trim(st, 0);
	return rv;
}

/*
 * CRC on, before any payload is placed: an FPDU one skb holds whole is
 * checked where it lies (@n stays 0: go on to place it); one split over
 * skbs is copied into the staging skb piece by piece (@n taken) and
 * handled when complete. Return: 0 or an error.
 */
static int siw_rx_verify(struct siw_qp *qp, struct sk_buff *skb,
			 unsigned int off, u32 len, u32 *n)
{
	struct siw_rx *rx = &qp->rx;
	u32 need = rx->fpdu_payload + rx->trailer_need;
	struct sk_buff *st = rx->stage;
	int rv;

	*n = 0;
	if ((!st || !st->len) && len >= need) {
		rv = siw_mpa_rx_verify(&rx->mpa, &rx->err, skb, off, need);
		if (!rv)
			rx->state = SIW_RX_PAYLOAD;
		return rv;
	}
	if (!st) {
		st = alloc_skb(SIW_RX_VERIFY_MAX, GFP_ATOMIC | __GFP_NOWARN);
		if (!st) {	/* no room to stage: check at the end */
			siw_stat_inc(qp->sdev, SIW_STAT_RX_CRC_LATE);
			rx->state = SIW_RX_PAYLOAD;
			return 0;
		}
		rx->stage = st;
	}
	*n = min(len, need - st->len);
	if (skb_copy_bits(skb, off, skb_put(st, *n), *n))
		return -EFAULT;
	if (st->len < need)
		return 0;
	rv = siw_rx_staged(qp);
	if (!rv)
		siw_rx_next(rx);
	return rv;
}

/*
 * Take up to @len bytes at @off into a small accumulation buffer.
 * Returns bytes taken.
 */
static u32 siw_rx_gather(const struct sk_buff *skb, int off, u32 len,
			 u8 *buf, u32 *have, u32 need)
{
	u32 n = min(len, need - *have);

	if (skb_copy_bits(skb, off, buf + *have, n))
		return 0;
	*have += n;
	return n;
}

/*
 * One parser step on @len bytes at @skb/@off. Return: bytes consumed;
 * 0 when the parser must stop (rx->state is DEAD then) or after an FPDU
 * was checked in place (rx->state is PAYLOAD then).
 */
static u32 siw_rx_step(struct siw_qp *qp, struct sk_buff *skb,
		       unsigned int off, u32 len)
{
	struct siw_rx *rx = &qp->rx;
	u32 n = 0, need;
	int rv = 0;

	switch (rx->state) {
	case SIW_RX_HDR:
		/* the control bits first, then as much as they say */
		need = rx->hdr_have < sizeof(struct iwarp_ctrl) ?
		       sizeof(struct iwarp_ctrl) : rx->hdr_need;
		n = siw_rx_gather(skb, off, len, rx->hdr, &rx->hdr_have, need);
		if (!n || rx->hdr_have < need)
			break;
		if (need == sizeof(struct iwarp_ctrl)) {
			rv = siw_rx_sized(qp);
			if (rv || rx->hdr_have < rx->hdr_need)
				break;
		}
		rv = siw_rx_hdr_done(qp);
		if (!rv)
			rx->state = siw_rx_payload_state(qp);
		break;
	case SIW_RX_VERIFY:
		rv = siw_rx_verify(qp, skb, off, len, &n);
		if (!rv && !n)
			return 0;	/* checked in place: place it */
		break;
	case SIW_RX_PAYLOAD:
		n = min(len, rx->fpdu_payload - rx->payload_have);
		rv = siw_ddp_rx_place(&rx->ddp, &rx->err, &rx->mpa, skb, off, n);
		rx->payload_have += n;
		if (rx->payload_have == rx->fpdu_payload)
			rx->state = SIW_RX_TRAILER;
		break;
	case SIW_RX_TRAILER:
		n = siw_rx_gather(skb, off, len, rx->trailer, &rx->trailer_have,
				  rx->trailer_need);
		if (!n || rx->trailer_have < rx->trailer_need)
			break;
		rv = siw_rx_fpdu_done(qp);
		if (!rv)
			siw_rx_next(rx);
		break;
	case SIW_RX_DEAD:
		return 0;
	}
	if (rv == -EPROTO)
		siw_rx_fail(qp);
	else if (rv || !n)
		rx->state = SIW_RX_DEAD;	/* Terminate received, or fault */
	return rx->state == SIW_RX_DEAD ? 0 : n;
}

/**
 * siw_rx_actor - tcp_read_sock() actor: parse @len bytes at @skb/@off
 * @desc: read descriptor, arg.data is the QP
 * @skb: the buffer
 * @off: offset of the new bytes in @skb
 * @len: how many
 *
 * Everything offered is consumed: after a fatal error the rest of the
 * stream is drained unread. Return: @len.
 */
int siw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
		 unsigned int off, size_t len)
{
	struct siw_qp *qp = desc->arg.data;
	size_t left = len;
	u32 n;

	while (left) {
		/*
		 * Nothing is placed once the QP is in ERROR: a flush may
		 * complete (and the consumer free) what a segment targets.
		 */
		if (READ_ONCE(qp->attrs.state) == SIW_QP_ERROR)
			qp->rx.state = SIW_RX_DEAD;
		else
			n = siw_rx_step(qp, skb, off, left);
		if (qp->rx.state == SIW_RX_DEAD) {
			desc->count = 0;
			return len;
		}
		off += n;
		left -= n;
	}
	siw_stat_add(qp->sdev, SIW_STAT_RX_BYTES, len);
	return len;
}
EXPORT_SYMBOL_IF_KUNIT(siw_rx_actor);

static void siw_rx_read(struct siw_qp *qp, struct sock *sk)
{
	read_descriptor_t desc = {
		.arg.data = qp,
		.count = 1,
	};

	if (READ_ONCE(qp->attrs.state) == SIW_QP_ERROR)
		qp->rx.state = SIW_RX_DEAD;
	tcp_read_sock(sk, &desc, siw_rx_actor);
}

void siw_qp_rx(struct siw_qp *qp, struct sock *sk)
{
	siw_rx_read(qp, sk);
}

void siw_rx_start(struct siw_qp *qp)
{
	struct socket *sock;

	spin_lock_bh(&qp->state_lock);
	sock = qp->sock;
	spin_unlock_bh(&qp->state_lock);
	if (!sock)
		return;
	lock_sock(sock->sk);
	siw_rx_read(qp, sock->sk);
	release_sock(sock->sk);
}

/* Flush what the receive side owns; the parser does not run. */
static void siw_rx_flush(struct siw_qp *qp)
{
	siw_rdmap_rx_flush(qp);
	siw_ddp_rx_target_put(&qp->rx.ddp);
	siw_qp_flush_rq(qp);
}

/**
 * siw_qp_llp_closed - the TCP connection is gone (or going)
 * @qp: the QP
 *
 * Stops both engines: after this returns the QP never touches the socket
 * again, and everything outstanding is flushed.
 */
void siw_qp_llp_closed(struct siw_qp *qp)
{
	struct socket *sock;

	trace_siw_qp_state(qp, READ_ONCE(qp->attrs.state), SIW_QP_ERROR, _RET_IP_);
	siw_qp_set_state_error(qp);

	/* the transmitter flushes what it owns and keeps off the socket */
	siw_tx_quiesce(qp);

	spin_lock_bh(&qp->state_lock);
	sock = qp->sock;
	spin_unlock_bh(&qp->state_lock);

	/* the RX parser runs under the socket lock: exclude it */
	if (sock) {
		lock_sock(sock->sk);
		siw_rx_flush(qp);
		qp->rx.state = SIW_RX_DEAD;
		release_sock(sock->sk);
	}
	siw_qp_llp_detach(qp);
	/* the send side's flush, here rather than in a TX work of its own */
	siw_tx_sync(qp);
}

/* The QP is being destroyed, its connection long gone. */
void siw_rx_fini(struct siw_qp *qp)
{
	siw_rx_flush(qp);
	kfree_skb(qp->rx.stage);
	qp->rx.stage = NULL;
}
