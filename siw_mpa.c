// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: MPA (RFC 5044). Transmit: framing of DDP segments into FPDUs
 * (length, pad, CRC32c) and their non-blocking transmission, several
 * FPDUs per socket call. Receive: the FPDU sizes and CRC check the RX
 * engine (siw_rx.c) asks for. Connection setup: MPA request/reply
 * decoding for the CM.
 */
#include <linux/highmem.h>
#include <linux/skbuff.h>
#include <linux/uio.h>
#include <linux/crc32c.h>
#include <net/tcp.h>
#include <kunit/visibility.h>

#include "siw.h"

/* ---------------------------------------------------------- receive */

/**
 * siw_mpa_rx_fpdu - sizes of an FPDU from its ULPDU length
 * @e: receive error to fill
 * @ulpdu: the MPA length field
 * @hdr_len: DDP/RDMAP header bytes the segment's opcode has
 * @payload: set to the payload bytes after the header
 * @trailer: set to pad plus CRC bytes
 *
 * Return: 0, or -EPROTO (@e filled) if the ULPDU cannot hold the header.
 */
int siw_mpa_rx_fpdu(struct siw_rx_err *e, u32 ulpdu, u32 hdr_len,
		    u32 *payload, u32 *trailer)
{
	if (ulpdu < hdr_len)
		return siw_rx_error(e, TERM_LAYER_LLP, 0, TERM_MPA_FRAME,
				    "FPDU shorter than its header");
	*payload = ulpdu - hdr_len;
	*trailer = mpa_pad(ulpdu) + MPA_CRC_SIZE;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mpa_rx_fpdu);

/* A new FPDU: its CRC starts over the length field and header. */
void siw_mpa_rx_begin(struct siw_mpa_rx *m, bool crc, const u8 *hdr, u32 len)
{
	m->crc_on = crc;
	if (crc)
		m->crc = crc32c(~0U, hdr, len);
}

/* Payload bytes as they are placed (DDP calls this). */
void siw_mpa_rx_crc(struct siw_mpa_rx *m, const void *p, u32 len)
{
	if (m->crc_on)
		m->crc = crc32c(m->crc, p, len);
}

/* The FPDU's CRC field against what was computed: 0 or -EPROTO. */
static int siw_mpa_crc_match(struct siw_rx_err *e, u32 crc, __le32 got)
{
	if (got != mpa_crc_wire(crc))
		return siw_rx_error(e, TERM_LAYER_LLP, 0, TERM_MPA_CRC,
				    "MPA CRC error");
	return 0;
}

/* CRC32c over @len bytes at @off of @skb, wherever they lie in it */
static u32 siw_mpa_crc_skb(struct sk_buff *skb, u32 off, u32 len, u32 crc)
{
	struct skb_seq_state st;
	const u8 *p;
	u32 done = 0, n;

	skb_prepare_seq_read(skb, off, off + len, &st);
	while (done < len && (n = skb_seq_read(done, &p, &st))) {
		/* a block can run past the range asked for */
		n = min(n, len - done);
		crc = crc32c(crc, p, n);
		done += n;
	}
	skb_abort_seq_read(&st);
	return crc;
}

/**
 * siw_mpa_rx_verify - check an FPDU's CRC before any of it is placed
 * @m: the FPDU's CRC state, holding the header's part
 * @e: receive error to fill
 * @skb: the buffer holding the rest of the FPDU, at @off
 * @off: offset in @skb
 * @len: the rest of the FPDU: payload, pad and CRC
 *
 * On a match the CRC is done for this FPDU (placement and the trailer
 * skip it), so corrupted payload is refused before a byte of it lands.
 * Return: 0 on a match, -EPROTO (@e filled) otherwise.
 */
int siw_mpa_rx_verify(struct siw_mpa_rx *m, struct siw_rx_err *e,
		      struct sk_buff *skb, u32 off, u32 len)
{
	u32 crc = siw_mpa_crc_skb(skb, off, len - MPA_CRC_SIZE, m->crc);
	__le32 got;

	if (skb_copy_bits(skb, off + len - MPA_CRC_SIZE, &got, sizeof(got)))
		return siw_rx_error(e, TERM_LAYER_LLP, 0, TERM_MPA_FRAME,
				    "unreadable FPDU");
	if (siw_mpa_crc_match(e, crc, got))
		return -EPROTO;
	m->crc_on = false;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mpa_rx_verify);

/**
 * siw_mpa_rx_trailer - check pad and CRC of a complete FPDU
 * @m: the FPDU's CRC state
 * @e: receive error to fill
 * @trailer: pad bytes followed by the CRC field
 * @len: bytes at @trailer
 *
 * Return: 0 or -EPROTO (@e filled) on a CRC mismatch.
 */
int siw_mpa_rx_trailer(struct siw_mpa_rx *m, struct siw_rx_err *e,
		       const u8 *trailer, u32 len)
{
	unsigned int pad = len - MPA_CRC_SIZE;
	__le32 got;

	if (!m->crc_on)
		return 0;
	if (pad)
		m->crc = crc32c(m->crc, trailer, pad);
	memcpy(&got, trailer + pad, sizeof(got));
	return siw_mpa_crc_match(e, m->crc, got);
}

/* --------------------------------------------------------- transmit */

static void siw_mpa_iov(struct siw_mpa_tx *m, struct page *pg,
			unsigned int off, unsigned int len)
{
	struct bio_vec *bv = &m->iov[m->niov++];

	bv->bv_page = pg;
	bv->bv_offset = off;
	bv->bv_len = len;
	m->len += len;
}

static void siw_mpa_iov_buf(struct siw_mpa_tx *m, const void *p,
			    unsigned int len)
{
	siw_mpa_iov(m, virt_to_page(p), offset_in_page(p), len);
}

void siw_mpa_tx_reset(struct siw_mpa_tx *m)
{
	m->nfpdu = 0;
	m->niov = 0;
	m->len = 0;
	m->sent = 0;
	m->zc = NULL;
}

/**
 * siw_mpa_tx_room - may the segment in @d join the FPDUs already framed?
 * @m: the batch
 * @d: the next segment
 *
 * FPDUs go to TCP several at a time, one socket call for up to
 * SIW_TX_BATCH of them (SIW_TX_BATCH_BYTES). A zero-copy FPDU goes
 * alone: its regions need calls of their own.
 */
bool siw_mpa_tx_room(const struct siw_mpa_tx *m, const struct siw_ddp_tx *d)
{
	if (!m->nfpdu)
		return true;
	return !m->zc && m->nfpdu < SIW_TX_BATCH &&
	       m->niov + d->npay + 2 <= SIW_TX_IOV &&
	       m->len + MPA_HDR_SIZE + d->hdr_len + d->seg_len + 7 <=
	       SIW_TX_BATCH_BYTES;
}
EXPORT_SYMBOL_IF_KUNIT(siw_mpa_tx_room);

static bool siw_mpa_pages_ok(const struct siw_ddp_tx *d)
{
	unsigned int i;

	/* slab memory (kmalloc'ed kernel buffers) must not be referenced */
	for (i = 0; i < d->npay; i++)
		if (!sendpage_ok(d->pay[i].bv_page))
			return false;
	return true;
}

/**
 * siw_mpa_tx_frame - add the segment in @d to the batch as one FPDU
 * @m: the batch; siw_mpa_tx_room() said yes
 * @d: DDP segment: header and payload pieces
 * @crc: MPA CRC negotiated
 * @zc: hand the payload pages to TCP by reference, or NULL to copy
 *
 * The length field and header are copied into the batch's own buffer
 * (DDP reuses its header buffer for the next segment); the payload is
 * referenced where it lives. Pad and CRC32c follow.
 */
void siw_mpa_tx_frame(struct siw_mpa_tx *m, const struct siw_ddp_tx *d,
		      bool crc, struct ubuf_info *zc)
{
	struct siw_mpa_fpdu *f = &m->fpdu[m->nfpdu++];
	u32 ulpdu = d->hdr_len + d->seg_len;
	unsigned int hlen = MPA_HDR_SIZE + d->hdr_len;
	unsigned int pad = mpa_pad(ulpdu), i;
	__be16 len_wire = cpu_to_be16(ulpdu);
	__le32 crc_wire = 0;

	memcpy(f->hdr, &len_wire, MPA_HDR_SIZE);
	memcpy(f->hdr + MPA_HDR_SIZE, d->hdr + MPA_HDR_SIZE, d->hdr_len);
	siw_mpa_iov_buf(m, f->hdr, hlen);
	m->hdr_end = m->len;
	for (i = 0; i < d->npay; i++)
		siw_mpa_iov(m, d->pay[i].bv_page, d->pay[i].bv_offset,
			    d->pay[i].bv_len);
	m->pay_end = m->len;
	if (zc && d->seg_len && m->nfpdu == 1 && siw_mpa_pages_ok(d))
		m->zc = zc;

	memset(f->trailer, 0, pad);
	if (crc) {
		u32 c = crc32c(~0U, f->hdr, hlen);

		for (i = 0; i < d->npay; i++) {
			const struct bio_vec *bv = &d->pay[i];
			u8 *p = kmap_local_page(bv->bv_page);

			c = crc32c(c, p + bv->bv_offset, bv->bv_len);
			kunmap_local(p);
		}
		c = crc32c(c, f->trailer, pad);
		crc_wire = mpa_crc_wire(c);
	}
	memcpy(f->trailer + pad, &crc_wire, MPA_CRC_SIZE);
	siw_mpa_iov_buf(m, f->trailer, pad + MPA_CRC_SIZE);
}
EXPORT_SYMBOL_IF_KUNIT(siw_mpa_tx_frame);

/**
 * siw_mpa_tx_push - queue (the rest of) the batch to TCP
 * @qp: the QP, its socket
 * @m: the batch
 * @more: more of this message follows the batch
 *
 * Non-blocking. Return: 0 once all is queued (the batch is then empty),
 * -EAGAIN when the socket is full (sk_write_space reschedules us), or a
 * negative errno.
 */
int siw_mpa_tx_push(struct siw_qp *qp, struct siw_mpa_tx *m, bool more)
{
	int rv;

	while (m->sent < m->len) {
		struct msghdr msg = {
			.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL,
		};
		bool zc = m->zc && m->sent >= m->hdr_end &&
			  m->sent < m->pay_end;
		u32 end = m->len;

		/* zero-copy: one call per region, header, payload, trailer */
		if (m->zc)
			end = m->sent < m->hdr_end ? m->hdr_end :
			      zc ? m->pay_end : m->len;
		if (end < m->len || more)
			msg.msg_flags |= MSG_MORE;
		if (zc) {
			msg.msg_flags |= MSG_ZEROCOPY;
			msg.msg_ubuf = m->zc;
		}
		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, m->iov, m->niov, end);
		iov_iter_advance(&msg.msg_iter, m->sent);
		rv = sock_sendmsg(qp->sock, &msg);
		if (rv <= 0) {
			if (rv == -EAGAIN || rv == 0) {
				siw_stat_inc(qp->sdev, SIW_STAT_TX_EAGAIN);
				return -EAGAIN;
			}
			return rv;
		}
		m->sent += rv;
		siw_stat_add(qp->sdev, SIW_STAT_TX_BYTES, rv);
		if (zc)
			siw_stat_add(qp->sdev, SIW_STAT_TX_ZCOPY_BYTES, rv);
	}
	siw_stat_add(qp->sdev, SIW_STAT_TX_FPDU, m->nfpdu);
	siw_mpa_tx_reset(m);
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
