// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: MPA framing (RFC 5044). Receive: a stream parser fed straight from
 * the TCP receive queue (tcp_read_sock), which reassembles FPDU headers
 * across skb boundaries and hands payload to DDP placement without a
 * staging buffer. Transmit: framing of one FPDU (length, pad, CRC32c)
 * around a DDP segment and its non-blocking transmission.
 */
#include <linux/highmem.h>
#include <linux/skbuff.h>
#include <linux/uio.h>
#include <linux/crc32c.h>
#include <net/tcp.h>
#include <kunit/visibility.h>

#include "siw.h"

/* ---------------------------------------------------------- receive */

static void siw_rx_reset(struct siw_rx *rx)
{
	rx->state = SIW_RX_HDR;
	rx->hdr_have = 0;
	rx->hdr_need = sizeof(struct iwarp_ctrl);
	rx->trailer_have = 0;
	rx->payload_have = 0;
}

/*
 * First four bytes are in: decide how long the rest of the header is.
 * Read Request bodies and Terminate messages are small and fully
 * parsed, so they are collected as part of the header.
 */
static int siw_rx_hdr_size(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct iwarp_ctrl *ctrl = (struct iwarp_ctrl *)rx->hdr;
	u32 ulpdu = be16_to_cpu(ctrl->mpa_len);
	unsigned int op = iwarp_opcode(ctrl);
	u32 hlen;

	if (op == RDMAP_TERMINATE && !iwarp_tagged(ctrl)) {
		hlen = ulpdu;
		if (hlen > sizeof(rx->hdr) - MPA_HDR_SIZE ||
		    hlen < sizeof(struct iwarp_terminate) - MPA_HDR_SIZE)
			goto bad;
	} else if (iwarp_tagged(ctrl)) {
		hlen = sizeof(struct iwarp_tagged_hdr) - MPA_HDR_SIZE;
	} else if (op == RDMAP_READ_REQ) {
		hlen = sizeof(struct iwarp_read_req) - MPA_HDR_SIZE;
	} else {
		hlen = sizeof(struct iwarp_untagged_hdr) - MPA_HDR_SIZE;
	}
	if (ulpdu < hlen)
		goto bad;
	rx->hdr_need = MPA_HDR_SIZE + hlen;
	rx->fpdu_payload = ulpdu - hlen;
	rx->trailer_need = mpa_pad(ulpdu) + MPA_CRC_SIZE;
	return 0;
bad:
	siw_stat_inc(qp->sdev, SIW_STAT_RX_PROTO_ERR);
	siw_warn(qp->sdev, "QP %u: FPDU length %u invalid for opcode %u\n",
		 qp_id(qp), ulpdu, op);
	siw_term_set(qp, TERM_LAYER_LLP, 0, TERM_MPA_FRAME, rx->hdr,
		     rx->hdr_have);
	return -EPROTO;
}

static int siw_rx_trailer_done(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	unsigned int pad = rx->trailer_need - MPA_CRC_SIZE;
	__le32 got;

	if (qp->attrs.crc) {
		if (pad)
			rx->crc = crc32c(rx->crc, rx->trailer, pad);
		memcpy(&got, rx->trailer + pad, sizeof(got));
		if (got != mpa_crc_wire(rx->crc)) {
			siw_stat_inc(qp->sdev, SIW_STAT_RX_CRC_ERR);
			siw_warn(qp->sdev, "QP %u: MPA CRC error, terminating\n",
				 qp_id(qp));
			siw_term_set(qp, TERM_LAYER_LLP, 0, TERM_MPA_CRC,
				     rx->hdr, rx->hdr_have);
			return -EPROTO;
		}
	}
	siw_stat_inc(qp->sdev, SIW_STAT_RX_FPDU);
	return siw_rdmap_rx_done(qp);
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

static int siw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			unsigned int off, size_t len)
{
	struct siw_qp *qp = desc->arg.data;
	struct siw_rx *rx = &qp->rx;
	size_t left = len;
	u32 n;

	while (left) {
		switch (rx->state) {
		case SIW_RX_HDR:
			n = siw_rx_gather(skb, off, left, rx->hdr,
					  &rx->hdr_have, rx->hdr_need);
			if (!n)
				goto dead;
			off += n;
			left -= n;
			if (rx->hdr_have < rx->hdr_need)
				break;
			if (rx->hdr_need == sizeof(struct iwarp_ctrl)) {
				if (siw_rx_hdr_size(qp))
					goto dead;
				if (rx->hdr_have < rx->hdr_need)
					break;
			}
			if (qp->attrs.crc)
				rx->crc = crc32c(~0U, rx->hdr, rx->hdr_have);
			if (siw_ddp_rx_hdr(qp))
				goto dead;
			rx->state = rx->fpdu_payload ? SIW_RX_PAYLOAD :
						       SIW_RX_TRAILER;
			break;
		case SIW_RX_PAYLOAD:
			n = min_t(u32, left, rx->fpdu_payload - rx->payload_have);
			if (siw_ddp_rx_place(qp, skb, off, n))
				goto dead;
			rx->payload_have += n;
			off += n;
			left -= n;
			if (rx->payload_have == rx->fpdu_payload)
				rx->state = SIW_RX_TRAILER;
			break;
		case SIW_RX_TRAILER:
			n = siw_rx_gather(skb, off, left, rx->trailer,
					  &rx->trailer_have, rx->trailer_need);
			if (!n)
				goto dead;
			off += n;
			left -= n;
			if (rx->trailer_have < rx->trailer_need)
				break;
			if (siw_rx_trailer_done(qp))
				goto dead;
			siw_rx_reset(rx);
			break;
		case SIW_RX_DEAD:
			/* after a fatal error: drain the stream silently */
			return len;
		}
	}
	siw_stat_add(qp->sdev, SIW_STAT_RX_BYTES, len);
	return len;
dead:
	rx->state = SIW_RX_DEAD;
	desc->count = 0;
	return len;
}

static void siw_rx_read(struct siw_qp *qp, struct sock *sk)
{
	read_descriptor_t desc = {
		.arg.data = qp,
		.count = 1,
	};

	if (READ_ONCE(qp->attrs.state) == SIW_QP_ERROR &&
	    qp->rx.state != SIW_RX_DEAD)
		qp->rx.state = SIW_RX_DEAD;
	tcp_read_sock(sk, &desc, siw_rx_actor);
}

void siw_qp_rx(struct siw_qp *qp, struct sock *sk)
{
	siw_rx_read(qp, sk);
}

void siw_qp_rx_kick(struct siw_qp *qp)
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

/* --------------------------------------------------------- transmit */

static void siw_tx_frag(struct bio_vec *bv, struct page *pg,
			unsigned int off, unsigned int len)
{
	bv->bv_page = pg;
	bv->bv_offset = off;
	bv->bv_len = len;
}

/**
 * siw_tx_fpdu_payload - collect the payload of the next segment
 * @qp: the QP; payload comes from tx.wqe at tx.msg_off
 * @seg_max: most payload bytes the segment may carry
 *
 * Payload is referenced where it lives (registered pages, inline data in
 * the WQE), one fragment per contiguous piece. The segment ends early if
 * the fragment array is full. Returns the payload length or -EFAULT.
 */
int siw_tx_fpdu_payload(struct siw_qp *qp, u32 seg_max)
{
	struct siw_tx *tx = &qp->tx;
	struct siw_mem_chunk c;
	u32 done = 0;

	tx->nfrags = 1;		/* [0] is the header */
	while (done < seg_max && tx->nfrags < SIW_TX_FRAGS - 1) {
		if (siw_sgl_chunk(tx->wqe, tx->msg_off + done, seg_max - done,
				  &c))
			return -EFAULT;
		siw_tx_frag(&tx->frags[tx->nfrags++], c.page, c.off, c.len);
		done += c.len;
	}
	tx->seg_len = done;
	tx->fpdu_zc = tx->zc && done && siw_tx_zc_pages_ok(tx);
	return done;
}

/**
 * siw_tx_fpdu_seal - complete the FPDU: header fragment, pad and CRC
 * @qp: the QP; tx.hdr holds the header for tx.seg_len payload bytes
 */
void siw_tx_fpdu_seal(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	unsigned int pad = mpa_pad(tx->hdr_len - MPA_HDR_SIZE + tx->seg_len);
	__le32 crc_wire = 0;

	siw_tx_frag(&tx->frags[0], virt_to_page(tx->hdr),
		    offset_in_page(tx->hdr), tx->hdr_len);
	memset(tx->trailer, 0, pad);

	if (qp->attrs.crc) {
		u32 crc = crc32c(~0U, tx->hdr, tx->hdr_len);
		unsigned int i;

		for (i = 1; i < tx->nfrags; i++) {
			struct bio_vec *bv = &tx->frags[i];
			u8 *p = kmap_local_page(bv->bv_page);

			crc = crc32c(crc, p + bv->bv_offset, bv->bv_len);
			kunmap_local(p);
		}
		crc = crc32c(crc, tx->trailer, pad);
		crc_wire = mpa_crc_wire(crc);
	}
	memcpy(tx->trailer + pad, &crc_wire, MPA_CRC_SIZE);
	tx->trailer_len = pad + MPA_CRC_SIZE;
	siw_tx_frag(&tx->frags[tx->nfrags++], virt_to_page(tx->trailer),
		    offset_in_page(tx->trailer), tx->trailer_len);

	tx->fpdu_len = tx->hdr_len + tx->seg_len + tx->trailer_len;
	tx->fpdu_sent = 0;
}

/**
 * siw_tx_fpdu_send - push (the rest of) the current FPDU into TCP
 * @qp: the QP
 * @more: more FPDUs of this message follow
 *
 * Non-blocking: returns 0 when the FPDU is fully queued, -EAGAIN when
 * the socket is full (sk_write_space reschedules us), or -errno.
 *
 * With tx.fpdu_zc the payload pages are handed to TCP by reference
 * (siw_zcopy.c). Header and trailer are always copied: they are rebuilt
 * in place for every FPDU. Otherwise TCP copies the payload too; see
 * siw_tx_zc_begin() and siw_tx_zc_pages_ok() for when and why.
 */
int siw_tx_fpdu_send(struct siw_qp *qp, bool more)
{
	struct siw_tx *tx = &qp->tx;
	u32 pay_end = tx->hdr_len + tx->seg_len;
	int rv;

	while (tx->fpdu_sent < tx->fpdu_len) {
		struct msghdr msg = {
			.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL,
		};
		bool zc = tx->fpdu_zc && tx->fpdu_sent >= tx->hdr_len &&
			  tx->fpdu_sent < pay_end;
		u32 end = tx->fpdu_len;

		/* one call per region: header, payload, trailer */
		if (tx->fpdu_zc)
			end = tx->fpdu_sent < tx->hdr_len ? tx->hdr_len :
			      zc ? pay_end : tx->fpdu_len;
		if (end < tx->fpdu_len || more)
			msg.msg_flags |= MSG_MORE;
		if (zc) {
			msg.msg_flags |= MSG_ZEROCOPY;
			msg.msg_ubuf = &tx->zc->ubuf;
		}
		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, tx->frags,
			      tx->nfrags, end);
		iov_iter_advance(&msg.msg_iter, tx->fpdu_sent);
		rv = sock_sendmsg(qp->sock, &msg);
		if (rv <= 0) {
			if (rv == -EAGAIN || rv == 0) {
				siw_stat_inc(qp->sdev, SIW_STAT_TX_EAGAIN);
				return -EAGAIN;
			}
			return rv;
		}
		tx->fpdu_sent += rv;
		siw_stat_add(qp->sdev, SIW_STAT_TX_BYTES, rv);
		if (zc)
			siw_stat_add(qp->sdev, SIW_STAT_TX_ZCOPY_BYTES, rv);
	}
	siw_stat_inc(qp->sdev, SIW_STAT_TX_FPDU);
	return 0;
}

/* ------------------------------------------------ connection setup */

/**
 * siw_mpa_hdr_check - sanity of a received MPA request or reply header
 * @rr: the 20 byte header
 * @request: a request is expected (else a reply)
 *
 * Return: 0, -EBADMSG for a wrong key, -EMSGSIZE for private data longer
 * than RFC 5044 allows.
 */
int siw_mpa_hdr_check(const struct mpa_rr *rr, bool request)
{
	if (memcmp(rr->key, request ? MPA_KEY_REQ : MPA_KEY_REP, MPA_KEY_SIZE))
		return -EBADMSG;
	if (be16_to_cpu(rr->pd_len) > MPA_MAX_PRIVDATA)
		return -EMSGSIZE;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mpa_hdr_check);

/**
 * siw_mpa_decode - decode a checked MPA request/reply and its private data
 * @rr: header (passed siw_mpa_hdr_check())
 * @pd: its private data, be16_to_cpu(rr->pd_len) bytes
 * @mi: decoded flags, RFC 6581 IRD/ORD and where the ULP's data is
 *
 * Return: 0, or -EPROTO for an unknown revision or a revision 2 frame
 * announcing IRD/ORD without carrying them.
 */
int siw_mpa_decode(const struct mpa_rr *rr, const u8 *pd,
		   struct siw_mpa_info *mi)
{
	u16 bits = be16_to_cpu(rr->bits);
	u16 len = be16_to_cpu(rr->pd_len);

	memset(mi, 0, sizeof(*mi));
	mi->rev = bits & MPA_REV_MASK;
	mi->crc = bits & MPA_FLAG_CRC;
	mi->markers = bits & MPA_FLAG_MARKERS;
	mi->reject = bits & MPA_FLAG_REJECT;
	mi->ulp_len = len;
	if (mi->rev != MPA_REVISION_1 && mi->rev != MPA_REVISION_2)
		return -EPROTO;
	/* Linux siw marks its revision 2 frames; RFC 6581 peers need not */
	if (mi->rev == MPA_REVISION_2 && (bits & MPA_FLAG_ENHANCED)) {
		struct mpa_v2_data v2;

		if (len < sizeof(v2))
			return -EPROTO;
		memcpy(&v2, pd, sizeof(v2));
		mi->v2 = true;
		mi->ird_bits = be16_to_cpu(v2.ird);
		mi->ord_bits = be16_to_cpu(v2.ord);
		mi->ird = mi->ird_bits & MPA_V2_IRD_ORD_MASK;
		mi->ord = mi->ord_bits & MPA_V2_IRD_ORD_MASK;
		mi->ulp_off = sizeof(v2);
		mi->ulp_len = len - sizeof(v2);
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mpa_decode);

/**
 * siw_mpa_crc_decide - whether a connection uses MPA CRC
 * @local: our policy asks for CRC (mpa_crc_required)
 * @peer: the peer's frame asks for CRC
 * @strict: the two must agree (mpa_crc_strict)
 *
 * Return: 1 (CRC on), 0 (off) or -ECONNREFUSED.
 */
int siw_mpa_crc_decide(bool local, bool peer, bool strict)
{
	if (strict && local != peer)
		return -ECONNREFUSED;
	return local || peer;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mpa_crc_decide);

/**
 * siw_mpa_initiator_irdord - initiator's IRD/ORD after the reply
 * @ird: in: what we offered; out: inbound Reads we provide for
 * @ord: in: what we offered; out: Reads we may have outstanding
 * @peer_ird: responder's IRD from the reply
 * @peer_ord: responder's ORD from the reply
 *
 * RFC 6581 3.2: our ORD may not exceed the responder's IRD. The
 * responder's ORD is what it will issue at us; our IRD grows to hold it
 * (up to SIW_MAX_IRD), so a responder that kept a larger ORD than we
 * offered costs memory rather than a broken connection.
 */
void siw_mpa_initiator_irdord(u32 *ird, u32 *ord, u32 peer_ird, u32 peer_ord)
{
	*ord = min(*ord, peer_ird);
	*ird = min_t(u32, max(*ird, peer_ord), SIW_MAX_IRD);
}
EXPORT_SYMBOL_IF_KUNIT(siw_mpa_initiator_irdord);
