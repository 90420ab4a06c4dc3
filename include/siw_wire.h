/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Wire formats of MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and
 * RDMAP (RFC 5040), with typed accessors. Everything here is big endian
 * on the wire; the structs are only ever overlaid on byte buffers that
 * were copied out of the TCP stream, never on skb data in place.
 */
#ifndef _SIW_WIRE_H
#define _SIW_WIRE_H

#include <linux/types.h>
#include <linux/bits.h>
#include <asm/byteorder.h>

/* ---------------------------------------------------------------- MPA */

#define MPA_KEY_REQ		"MPA ID Req Frame"
#define MPA_KEY_REP		"MPA ID Rep Frame"
#define MPA_KEY_SIZE		16
#define MPA_MAX_PRIVDATA	512

#define MPA_FLAG_MARKERS	0x8000
#define MPA_FLAG_CRC		0x4000
#define MPA_FLAG_REJECT		0x2000
/* Not in RFC 6581; set by Linux siw on revision 2 frames, accepted here. */
#define MPA_FLAG_ENHANCED	0x1000
#define MPA_FLAG_GSO_EXP	0x0800
#define MPA_REV_MASK		0x00ff

#define MPA_REVISION_1		1
#define MPA_REVISION_2		2

/* MPA request / reply frame header (RFC 5044 7.1) */
struct mpa_rr {
	u8 key[MPA_KEY_SIZE];
	__be16 bits;		/* M C R res... | revision */
	__be16 pd_len;		/* private data length */
} __packed;

/* RFC 6581 enhanced connection setup: leads the private data */
#define MPA_V2_PEER_TO_PEER	0x8000	/* in ird */
#define MPA_V2_RTR_ZERO_SEND	0x4000	/* in ird */
#define MPA_V2_RTR_WRITE	0x8000	/* in ord */
#define MPA_V2_RTR_READ		0x4000	/* in ord */
#define MPA_V2_IRD_ORD_MASK	0x3fff

struct mpa_v2_data {
	__be16 ird;
	__be16 ord;
} __packed;

/* FPDU framing: 2 byte ULPDU length, DDP segment, pad, CRC32c */
#define MPA_HDR_SIZE		2
#define MPA_CRC_SIZE		4
#define MPA_MAX_ULPDU		0xffff

static inline unsigned int mpa_pad(unsigned int ulpdu_len)
{
	/* pad covers the 2 byte length field plus the ULPDU */
	return (4 - ((ulpdu_len + MPA_HDR_SIZE) & 3)) & 3;
}

/**
 * mpa_seg_max - payload bytes one FPDU may carry
 * @mss: TCP maximum segment size of the connection
 * @ddp_hdr_len: DDP/RDMAP header bytes of the segment
 *
 * The whole FPDU (length field, header, payload, CRC) fits one TCP
 * segment (RFC 5044 MULPDU). The result is a multiple of 4, so only a
 * message's last segment needs pad, and stays clear of the 16 bit
 * ULPDU length limit.
 */
static inline u32 mpa_seg_max(u32 mss, u32 ddp_hdr_len)
{
	u32 over = MPA_HDR_SIZE + ddp_hdr_len + MPA_CRC_SIZE;

	if (mss < 256)
		mss = 256;
	if (mss > MPA_MAX_ULPDU - 64)
		mss = MPA_MAX_ULPDU - 64;
	return (mss - over) & ~3U;
}

/* MPA CRC on the wire: CRC32c complemented, least significant byte first */
static inline __le32 mpa_crc_wire(u32 crc32c_state)
{
	return cpu_to_le32(~crc32c_state);
}

/* ------------------------------------------------------- DDP / RDMAP */

/* First 16 bits after the MPA length: DDP control, RDMAP control */
#define DDP_FLAG_TAGGED		0x8000
#define DDP_FLAG_LAST		0x4000
#define DDP_VERSION_MASK	0x0300
#define DDP_VERSION_SHIFT	8
#define DDP_VERSION		1
#define RDMAP_VERSION_MASK	0x00c0
#define RDMAP_VERSION_SHIFT	6
#define RDMAP_VERSION		1
#define RDMAP_OPCODE_MASK	0x000f

enum rdmap_opcode {
	RDMAP_WRITE = 0,
	RDMAP_READ_REQ = 1,
	RDMAP_READ_RESP = 2,
	RDMAP_SEND = 3,
	RDMAP_SEND_INVAL = 4,
	RDMAP_SEND_SE = 5,
	RDMAP_SEND_SE_INVAL = 6,
	RDMAP_TERMINATE = 7,
	RDMAP_NUM_OPCODES
};

/* Untagged queue numbers (RFC 5040 5.1) */
enum ddp_queue {
	DDP_QN_SEND = 0,
	DDP_QN_READ_REQ = 1,
	DDP_QN_TERMINATE = 2,
	DDP_NUM_QUEUES
};

struct iwarp_ctrl {
	__be16 mpa_len;
	__be16 ddp_rdmap;
} __packed;

struct iwarp_tagged_hdr {
	struct iwarp_ctrl ctrl;
	__be32 stag;
	__be64 to;
} __packed;

struct iwarp_untagged_hdr {
	struct iwarp_ctrl ctrl;
	__be32 inval_stag;	/* RDMAP: STag to invalidate, else 0 */
	__be32 qn;
	__be32 msn;
	__be32 mo;
} __packed;

/* RDMA Read Request message body (RFC 5040 4.4), untagged QN 1 */
struct iwarp_read_req_body {
	__be32 sink_stag;
	__be64 sink_to;
	__be32 size;
	__be32 src_stag;
	__be64 src_to;
} __packed;

struct iwarp_read_req {
	struct iwarp_untagged_hdr hdr;
	struct iwarp_read_req_body body;
} __packed;

/* Terminate message (RFC 5040 4.8), untagged QN 2 */
#define TERM_LAYER_SHIFT	28
#define TERM_ETYPE_SHIFT	24
#define TERM_ECODE_SHIFT	16
#define TERM_FLAG_M		0x00008000	/* DDP segment length present */
#define TERM_FLAG_D		0x00004000	/* DDP header present */
#define TERM_FLAG_R		0x00002000	/* RDMAP header present */

struct iwarp_terminate {
	struct iwarp_untagged_hdr hdr;
	__be32 ctrl;		/* layer:4 etype:4 ecode:8 M D R rsvd:13 */
} __packed;

#define TERM_MAX_HDR_COPY	(sizeof(struct iwarp_read_req))

enum term_layer {
	TERM_LAYER_RDMAP = 0,
	TERM_LAYER_DDP = 1,
	TERM_LAYER_LLP = 2,	/* MPA */
};

/* RDMAP layer error types and codes (RFC 5040 7.2) */
enum term_rdmap_etype {
	TERM_RDMAP_ETYPE_LOCAL_CATA = 0,
	TERM_RDMAP_ETYPE_REMOTE_PROT = 1,
	TERM_RDMAP_ETYPE_REMOTE_OP = 2,
};

enum term_rdmap_ecode {
	TERM_RDMAP_INV_STAG = 0x00,
	TERM_RDMAP_BASE_BOUNDS = 0x01,
	TERM_RDMAP_ACCESS = 0x02,
	TERM_RDMAP_STAG_PD = 0x03,
	TERM_RDMAP_TO_WRAP = 0x04,
	TERM_RDMAP_VERSION = 0x05,
	TERM_RDMAP_OPCODE = 0x06,
	TERM_RDMAP_STREAM_CATA = 0x07,
	TERM_RDMAP_GLOBAL_CATA = 0x08,
	TERM_RDMAP_CANNOT_INVAL = 0x09,
	TERM_RDMAP_UNSPECIFIED = 0xff,
};

/* DDP layer (RFC 5041 7.2) */
enum term_ddp_etype {
	TERM_DDP_ETYPE_CATA = 0,
	TERM_DDP_ETYPE_TAGGED = 1,
	TERM_DDP_ETYPE_UNTAGGED = 2,
	TERM_DDP_ETYPE_RSVD = 3,
};

enum term_ddp_ecode {
	/* tagged buffer errors */
	TERM_DDP_T_INV_STAG = 0x00,
	TERM_DDP_T_BASE_BOUNDS = 0x01,
	TERM_DDP_T_STAG_NOT_ASSOC = 0x02,
	TERM_DDP_T_TO_WRAP = 0x03,
	TERM_DDP_T_VERSION = 0x04,
	/* untagged buffer errors */
	TERM_DDP_U_INV_QN = 0x01,
	TERM_DDP_U_INV_MSN_NOBUF = 0x02,
	TERM_DDP_U_INV_MSN_RANGE = 0x03,
	TERM_DDP_U_INV_MO = 0x04,
	TERM_DDP_U_MSG_TOO_LONG = 0x05,
	TERM_DDP_U_VERSION = 0x06,
	/* catastrophic */
	TERM_DDP_CATA_UNSPEC = 0x00,
};

/* LLP (MPA) layer errors (RFC 5044 8) */
enum term_llp_ecode {
	TERM_MPA_CRC = 0x02,
	TERM_MPA_MARKER = 0x03,
	TERM_MPA_FRAME = 0x04,	/* invalid MPA request / unexpected frame */
	TERM_MPA_PEER = 0x05,
};

/* Typed accessors for the 16 bit DDP/RDMAP control field */
static inline u16 iwarp_ctrl_bits(const struct iwarp_ctrl *c)
{
	return be16_to_cpu(c->ddp_rdmap);
}

static inline bool iwarp_tagged(const struct iwarp_ctrl *c)
{
	return iwarp_ctrl_bits(c) & DDP_FLAG_TAGGED;
}

static inline bool iwarp_last(const struct iwarp_ctrl *c)
{
	return iwarp_ctrl_bits(c) & DDP_FLAG_LAST;
}

static inline unsigned int iwarp_opcode(const struct iwarp_ctrl *c)
{
	return iwarp_ctrl_bits(c) & RDMAP_OPCODE_MASK;
}

static inline unsigned int iwarp_ddp_version(const struct iwarp_ctrl *c)
{
	return (iwarp_ctrl_bits(c) & DDP_VERSION_MASK) >> DDP_VERSION_SHIFT;
}

static inline unsigned int iwarp_rdmap_version(const struct iwarp_ctrl *c)
{
	return (iwarp_ctrl_bits(c) & RDMAP_VERSION_MASK) >>
	       RDMAP_VERSION_SHIFT;
}

static inline __be16 iwarp_mk_ctrl(unsigned int opcode, bool tagged,
				   bool last)
{
	u16 v = (DDP_VERSION << DDP_VERSION_SHIFT) |
		(RDMAP_VERSION << RDMAP_VERSION_SHIFT) | opcode;

	if (tagged)
		v |= DDP_FLAG_TAGGED;
	if (last)
		v |= DDP_FLAG_LAST;
	return cpu_to_be16(v);
}

static inline u32 term_mk_ctrl(unsigned int layer, unsigned int etype,
			       unsigned int ecode)
{
	return (layer << TERM_LAYER_SHIFT) | (etype << TERM_ETYPE_SHIFT) |
	       (ecode << TERM_ECODE_SHIFT);
}

#endif
