/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * siw: software iWARP RDMA provider. Core objects shared by all layers.
 *
 * Transmit runs verbs -> tx -> rdmap -> ddp -> mpa -> TCP; receive is
 * driven by the RX engine up through mpa, ddp and rdmap into the QP
 * (README, "Layout"). Each layer owns its source file and its part of
 * the TX/RX state; this header is the contract between them.
 */
#ifndef _SIW_H
#define _SIW_H

#include <linux/types.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <linux/ratelimit_types.h>
#include <linux/xarray.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/bvec.h>
#include <linux/crc32c.h>
#include <net/sock.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/siw-abi.h>

#include "siw_wire.h"
#include "siw_compat.h"

#define SIW_DRV_NAME		"siw"
#define SIW_VENDOR_ID		0x626d74	/* same as Linux siw */
#define SIW_VENDOR_PART_ID	0x0
#define SIW_FW_VER		((u64)1 << 32)

/* Every limit reported is a limit enforced. */
#define SIW_MAX_QP		(16 * 1024)
#define SIW_MAX_QP_WR		(16 * 1024)
#define SIW_MAX_ORD		128
#define SIW_MAX_IRD		128
#define SIW_MAX_SGE_RD		1
#define SIW_MAX_CQ		(16 * 1024)
/*
 * libfabric's ofi_rxm asks for one CQ of (rx + tx size) x universe size,
 * 262144 entries by default (libfabric 1.17): room for that four times
 * over; a full CQ of 32-byte entries is 32 MiB, charged to the creator.
 */
#define SIW_MAX_CQE		(1024 * 1024)
#define SIW_MAX_PD		(16 * 1024)
#define SIW_MAX_MR		(64 * 1024)
#define SIW_MAX_MR_SIZE		((u64)SZ_4G - 1)
#define SIW_MAX_SRQ		(4 * 1024)
#define SIW_MAX_SRQ_WR		(16 * 1024)
#define SIW_MAX_FR_PAGES	1024
#define SIW_MAX_CONTEXT		(16 * 1024)

/* STag = 24 bit index | 8 bit key (consumer owned part) */
/*
 * Memory allocated on behalf of a user's object: charged to its memory
 * cgroup, and at the cgroup's limit the verb fails with ENOMEM instead of
 * the cgroup's OOM killer picking a process (__GFP_RETRY_MAYFAIL).
 */
#define SIW_GFP_USER	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/*
 * A user's Sends and Writes up to this long keep their SQ slot VALID
 * while they are sent, and a stream of them is left to the TX work
 * (siw_sqe_hold(), siw_tx_doorbell()): the posts made meanwhile need no
 * doorbell. Larger messages take long enough to send that a doorbell per
 * post costs little, and holding them would delay the poster's reuse of
 * the slot. A ping-pong's slots are not held, as the hold would delay
 * its reply: held only from this many doorbells in a row with nothing
 * received.
 */
#define SIW_TX_STREAM_LEN	1024
#define SIW_TX_HOLD_DBS		2

/*
 * qp->tx_held_last: whether the last SQE the transmitter took was held,
 * and what it was. A Read is held when another Read is in flight: its
 * response resets the doorbell count a Send or Write stream is told by.
 */
enum siw_held {
	SIW_HELD_NONE,
	SIW_HELD_MSG,		/* a small Send or Write */
	SIW_HELD_READ,		/* a Read Request */
};

#define SIW_STAG_KEY_MASK	0xffU
#define SIW_STAG_IDX_SHIFT	8
#define SIW_STAG_IDX_MAX	0x00ffffffU

/* -------------------------------------------------------------- stats */

enum siw_stat {
	SIW_STAT_TX_FPDU,
	SIW_STAT_TX_BYTES,
	SIW_STAT_RX_FPDU,
	SIW_STAT_RX_BYTES,
	SIW_STAT_RX_CRC_ERR,
	SIW_STAT_RX_PROTO_ERR,
	SIW_STAT_TERM_TX,
	SIW_STAT_TERM_RX,
	SIW_STAT_TX_EAGAIN,
	SIW_STAT_BAD_WQE,
	SIW_STAT_CQ_OVERFLOW,
	SIW_STAT_CONN_ACTIVE,
	SIW_STAT_CONN_PASSIVE,
	SIW_STAT_CONN_FAIL,
	SIW_STAT_READ_REQ_RX,
	SIW_STAT_TX_ZCOPY_BYTES,
	SIW_STAT_TX_ZCOPY_MSG,
	SIW_STAT_RX_CRC_LATE,
	SIW_STAT_CONN_LOST,
	SIW_STAT_CONN_REFUSED,
	SIW_STAT_TX_DB_HANDOFF,
	SIW_STAT_CLOSE_TIMEOUT,
	SIW_NUM_STATS
};

struct siw_stats {
	u64 v[SIW_NUM_STATS];
};

/* ------------------------------------------------------------- device */

struct siw_device {
	struct ib_device base;
	struct net_device *netdev;
	netdevice_tracker netdev_tracker;
	struct list_head list;		/* siw_devices, under siw_dev_lock */
	u32 id;

	enum ib_port_state port_state;
	spinlock_t lock;		/* port_state */

	/* object tables; index is the object's number */
	struct xarray qp_xa;
	struct xarray mr_xa;		/* by STag index */
	u32 next_qp;
	u32 next_mr;
	u32 next_cq;
	atomic_t key_seq;		/* STag key bytes, siw_mem.c */

	struct siw_limits {		/* per device, fixed at creation */
		u32 ctx, pd, qp, cq, mr, srq;
	} max;
	atomic_t num_ctx;
	atomic_t num_pd;
	atomic_t num_qp;
	atomic_t num_cq;
	atomic_t num_mr;		/* until freed (device teardown waits) */
	atomic_t num_mr_held;		/* until deregistered (the limit) */
	atomic_t num_srq;

	struct siw_stats __percpu *stats;
};

static inline struct siw_device *to_siw_dev(struct ib_device *d)
{
	return container_of(d, struct siw_device, base);
}

#define siw_stat_add(sdev, s, n) this_cpu_add((sdev)->stats->v[s], (n))
#define siw_stat_inc(sdev, s) siw_stat_add(sdev, s, 1)

/* A device's log lines always name it. */
#define siw_dbg(sdev, fmt, ...) \
	ibdev_dbg(&(sdev)->base, "%s: " fmt, __func__, ##__VA_ARGS__)
#define siw_err(sdev, fmt, ...) ibdev_err(&(sdev)->base, fmt, ##__VA_ARGS__)

/*
 * A warning's rate limit, one per call site: SIW_LOG_BURST lines per
 * SIW_LOG_INTERVAL, the rest counted and reported. The kernel's own
 * (___ratelimit() up to at least 6.1) drops a line uncounted when another
 * CPU holds the call site's lock, so two devices losing their connections
 * at once logged only one of them.
 */
struct siw_ratelimit {
	unsigned long begin;	/* jiffies | 1 of the window's start, 0: none */
	atomic_t printed;
	atomic_t missed;
};

/* the kernel's own budget for a rate-limited line, only lock-free */
#define SIW_LOG_INTERVAL	DEFAULT_RATELIMIT_INTERVAL
#define SIW_LOG_BURST		DEFAULT_RATELIMIT_BURST

bool siw_log_ratelimit(struct siw_ratelimit *rl, struct ib_device *ibdev);

#define siw_warn(sdev, fmt, ...)					\
	do {								\
		static struct siw_ratelimit _siw_rl;			\
		struct ib_device *_siw_ibdev = &(sdev)->base;		\
									\
		if (siw_log_ratelimit(&_siw_rl, _siw_ibdev))		\
			ibdev_warn(_siw_ibdev, fmt, ##__VA_ARGS__);	\
	} while (0)
#define siw_info(sdev, fmt, ...) ibdev_info(&(sdev)->base, fmt, ##__VA_ARGS__)

struct siw_ucontext {
	struct ib_ucontext base;
	struct siw_device *sdev;
};

static inline struct siw_ucontext *to_siw_ctx(struct ib_ucontext *c)
{
	return container_of(c, struct siw_ucontext, base);
}

struct siw_pd {
	struct ib_pd base;
};

static inline struct siw_pd *to_siw_pd(struct ib_pd *p)
{
	return container_of(p, struct siw_pd, base);
}

/* User mmap entry: one per mapped ring */
struct siw_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *addr;			/* a ring, siw_ring_alloc() */
};

/* --------------------------------------------------------------- mem */

enum siw_mr_type {
	SIW_MR_DMA,	/* kernel virtual addresses, whole address space */
	SIW_MR_USER,	/* pinned user pages */
	SIW_MR_FRMR,	/* fast register: page list of kernel addresses */
};

/*
 * A memory region and its STag. Lookups take a reference under RCU, so a
 * placement in flight keeps the object (and its pinned pages) alive
 * across a concurrent dereg. @valid is the STag state: an invalidated
 * STag stays in the table but refuses access.
 */
struct siw_mr {
	struct ib_mr base;
	struct siw_device *sdev;
	struct kref ref;
	struct rcu_head rcu;

	enum siw_mr_type type;
	int held;			/* counts in num_mr_held, xchg */
	bool remote_inv_ok;		/* may be invalidated remotely */
	struct ib_pd *pd;

	/*
	 * The registration: changed together under @lock inside @seq by
	 * fast-register, invalidate and dereg, read as one snapshot by
	 * siw_mr_check(). @gen counts the changes: placement resolves a
	 * page only while it is still the one checked (siw_mr_chunk()).
	 */
	spinlock_t lock;
	seqcount_spinlock_t seq;
	u32 stag;
	u32 gen;
	bool valid;
	int access;			/* IB_ACCESS_* */
	u64 va;				/* first valid address */
	u64 len;

	/* SIW_MR_USER: page array covering [va, va+len) */
	struct ib_umem *umem;
	struct page **pages;
	unsigned long npages;
	unsigned int first_off;		/* offset of va in pages[0] */

	/* SIW_MR_FRMR */
	u64 *pbl;			/* page addresses (kernel virtual) */
	unsigned int pbl_max;
	unsigned int pbl_n;

	struct rcu_work free_work;	/* final release, process context */
};

static inline struct siw_mr *to_siw_mr(struct ib_mr *m)
{
	return container_of(m, struct siw_mr, base);
}

/**
 * struct siw_mem_chunk - one physically contiguous piece of an MR
 * @page: page holding the piece
 * @off: offset in @page
 * @len: bytes available in @page from @off (capped by the request)
 */
struct siw_mem_chunk {
	struct page *page;
	unsigned int off;
	unsigned int len;
};

/* siw_mem.c */
struct siw_mr *siw_mr_lookup(struct siw_device *sdev, u32 stag);
void siw_mr_put(struct siw_mr *mr);
void siw_mr_init(struct siw_mr *mr);
int siw_mr_check(struct siw_mr *mr, u32 stag, struct ib_pd *pd, int access,
		 u64 va, u64 len, bool remote, u32 *gen);
int siw_mr_chunk(struct siw_mr *mr, u32 gen, u64 va, u64 len,
		 struct siw_mem_chunk *c);
int siw_mr_invalidate(struct siw_device *sdev, u32 stag, struct ib_pd *pd,
		      bool remote);
int siw_mr_fast_reg(struct siw_device *sdev, struct ib_pd *pd,
		    struct ib_mr *ibmr, u32 key, int access);
void siw_mem_exit(struct siw_device *sdev);
extern const struct ib_device_ops siw_mr_ops;

/*
 * Result codes of memory checks (siw_mr_check and lookup helpers), mapped
 * to completion status and Terminate codes by the callers.
 */
enum siw_access_err {
	SIW_ACC_OK = 0,
	SIW_ACC_STAG,		/* unknown or invalid STag */
	SIW_ACC_PD,		/* STag not associated with this PD/stream */
	SIW_ACC_RIGHTS,		/* access rights violation */
	SIW_ACC_BOUNDS,		/* base/bounds violation */
	SIW_ACC_WRAP,		/* offset wraps */
};

/* ---------------------------------------------------------------- CQ */

/*
 * CQ ring entries use struct siw_cqe for user and kernel CQs alike.
 * opcode is always an enum siw_opcode. status is an enum siw_wc_status
 * in user CQs (libsiw maps it) and an enum ib_wc_status in kernel CQs.
 * Kernel CQs carry base_qp, user CQs qp_id. SIW_CQE_INVAL in flags
 * (kernel CQs only) marks a receive that invalidated inval_stag.
 */
#define SIW_CQE_INVAL		SIW_WQE_REM_INVAL

struct siw_cq {
	struct ib_cq base;
	spinlock_t lock;		/* CQ ring and notify flags */
	struct siw_cqe *queue;
	struct siw_cq_ctrl *ctrl;	/* notify flags, after the ring */
	u32 num_cqe;			/* a power of 2, siw_cq_depth() */
	u32 put;
	u32 get;			/* kernel consumers only */
	u32 id;
	bool user;
	struct rdma_user_mmap_entry *mmap;
};

static inline struct siw_cq *to_siw_cq(struct ib_cq *c)
{
	return container_of(c, struct siw_cq, base);
}

/*
 * Ring depths are powers of 2: a u32 index taken modulo the depth then
 * goes on to slot 0 when it wraps at 2^32, as it does between any two
 * slots. With another depth it would jump back early, onto a slot written
 * fewer than depth entries before (a false overflow, an overwritten
 * entry). The CQ's is the depth user space is told (libsiw indexes the
 * same way).
 */
static inline u32 siw_cq_depth(u32 cqe)
{
	return roundup_pow_of_two(max(cqe, 1U));
}

static inline struct siw_cqe *siw_cq_slot(struct siw_cq *cq, u32 idx)
{
	return &cq->queue[idx & (cq->num_cqe - 1)];
}

/* --------------------------------------------------------------- SRQ */

struct siw_srq {
	struct ib_srq base;
	spinlock_t lock;		/* SRQ ring */
	struct siw_rqe *queue;
	u32 num_rqe;
	u32 max_sge;			/* SGEs per WR, as created */
	u32 get;
	u32 put;			/* kernel consumers only */
	u32 limit;			/* 0: not armed */
	bool armed;
	bool user;
	struct rdma_user_mmap_entry *mmap;
};

static inline struct siw_srq *to_siw_srq(struct ib_srq *s)
{
	return container_of(s, struct siw_srq, base);
}

/* ---------------------------------------------------------------- QP */

/* iWARP QP states (RFC 5040 / verbs) */
enum siw_qp_state {
	SIW_QP_IDLE,
	SIW_QP_RTS,
	SIW_QP_CLOSING,
	SIW_QP_TERMINATE,
	SIW_QP_ERROR,
	SIW_QP_NUM_STATES
};

/*
 * Work request being processed, copied out of the SQ/RQ ring (never read
 * from the ring twice). MRs of the SGL are looked up once and held.
 */
struct siw_wqe {
	struct siw_sqe sqe;		/* for RQEs only id/num_sge/sge used */
	struct siw_mr *mr[SIW_MAX_SGE];
	u32 mr_gen[SIW_MAX_SGE];	/* registration each was checked at */
	u32 bytes;			/* total message length */
	u32 done;			/* bytes transferred so far */
	enum ib_wc_status status;
	bool active;
	bool queued;			/* a Read's slot in qp->sq_done */
	u32 done_slot;
	u32 rreq_msn;			/* a Read: its request's DDP MSN */
};

/* Inbound RDMA Read Request waiting for its response */
struct siw_irq_entry {
	u32 sink_stag;
	u64 sink_to;
	u32 src_stag;
	u64 src_to;
	u32 size;
};

/*
 * A finished SQ work request whose completion waits for our earlier
 * Reads: SQ completions are reported in posting order.
 */
struct siw_sq_done {
	u64 id;
	u32 bytes;
	u32 read_seq;			/* due once this many Reads are done */
	u32 zc_seq;			/* ... and this many zero-copy sends */
	u8 opcode;
	u8 status;
	bool report;			/* signaled (or failed): make a CQE */
};

#define SIW_ZC_MAX	64		/* zero-copy messages awaiting release */

/*
 * Zero-copy transmit bookkeeping of a QP. TCP holds the payload pages
 * of a zero-copy message until the peer acknowledged them, possibly
 * after the QP is gone: this lives apart from the QP and goes with its
 * last message.
 */
struct siw_zc_ctx {
	refcount_t ref;
	spinlock_t lock;		/* all fields below */
	struct siw_qp *qp;		/* NULL once the QP is destroyed */
	u32 started;			/* zero-copy messages handed to TCP */
	u32 released;			/* all below this released by TCP */
	DECLARE_BITMAP(done, SIW_ZC_MAX);	/* released out of order */
};

/* One zero-copy message: TCP's skbs reference it while they hold pages */
struct siw_zc {
	struct ubuf_info ubuf;
	struct siw_zc_ctx *ctx;
	struct ib_device *dev;		/* held until TCP releases */
	u32 seq;
	struct rcu_head rcu;		/* the final puts, siw_zc_free() */
};

/* Outbound RDMA Read waiting for its response */
struct siw_orq_entry {
	struct siw_wqe wqe;
};

/* ------------------------------------------------------- opcode table */

struct siw_qp;

/* Where a segment's payload goes, set by RDMAP, advanced by DDP */
struct siw_rx_target {
	struct siw_mr *mr;		/* tagged: target MR ... */
	u32 gen;			/* ... its registration checked ... */
	u64 va;				/* ... and address */
	struct siw_wqe *wqe;		/* or an SGL: receive / read sink */
	u32 off;			/* message offset in @wqe */
};

/**
 * struct siw_op - everything the layers know about one RDMAP opcode
 * @name: for log lines
 * @opcode: the RDMAP opcode (the entry's index)
 * @tagged: DDP tagged buffer model (else untagged)
 * @qn: untagged: DDP queue number
 * @hdr_len: DDP + RDMAP header bytes after the MPA length field,
 *	including a fixed message body (Read Request); a Terminate's is
 *	the minimum, the rest of its header copy follows
 * @var_len: the whole ULPDU is header (Terminate)
 * @solicited: Send with Solicited Event
 * @invalidates: Send with Invalidate
 * @rx_hdr: receive: check a segment header, set the placement target
 * @rx_done: receive: the segment arrived intact; message semantics
 *
 * One table, siw_op_table[], indexed by the RDMAP opcode (siw_rdmap.c).
 * The RX and TX engines look entries up and hand them to DDP, so the
 * lower layers need no table of their own.
 */
struct siw_op {
	const char *name;
	u8 opcode;
	bool tagged;
	u8 qn;
	u8 hdr_len;
	bool var_len;
	bool solicited;
	bool invalidates;
	int (*rx_hdr)(struct siw_qp *qp, struct siw_rx_target *t);
	int (*rx_done)(struct siw_qp *qp);
};

extern const struct siw_op siw_op_table[RDMAP_NUM_OPCODES];

/* ----------------------------------------------------------- transmit */

#define SIW_SEG_FRAGS		16	/* payload pieces of one segment */
#define SIW_DDP_HDR_MAX		(sizeof(struct iwarp_terminate) - \
				 MPA_HDR_SIZE + TERM_MAX_HDR_COPY)
#define SIW_MSG_BODY_MAX	(SIW_DDP_HDR_MAX - \
				 (sizeof(struct iwarp_untagged_hdr) - MPA_HDR_SIZE))
#define SIW_TX_BATCH		16	/* FPDUs per socket call */
#define SIW_TX_IOV		64	/* pieces per socket call */
#define SIW_TX_BATCH_BYTES	65536

/*
 * RDMAP: the message being sent. Written by siw_rdmap.c only (the TX
 * engine asks it to start one); read by DDP to build segments.
 */
struct siw_rdmap_tx {
	const struct siw_op *op;
	struct siw_wqe *wqe;		/* payload source, NULL if none */
	struct siw_wqe rresp;		/* Read Response source */
	u32 len;			/* payload bytes */
	u32 stag;			/* tagged: sink STag ... */
	u64 to;				/* ... and base tagged offset */
	u32 inval;			/* Send with Invalidate: the STag */
	u8 body[SIW_MSG_BODY_MAX];	/* Read Request, Terminate */
	u8 body_len;
};

/*
 * DDP: segmentation of the current message. Written by siw_ddp.c only.
 * hdr holds the segment's header laid out as on the wire; its first
 * MPA_HDR_SIZE bytes, the MPA length, are MPA's and stay unused here.
 */
struct siw_ddp_tx {
	u32 msn_last[DDP_NUM_QUEUES];	/* last MSN sent per queue, 0: none */
	u32 msn;			/* untagged: of the current message */
	u32 off;			/* payload bytes segmented so far */
	u32 seg_len;			/* payload bytes in this segment */
	bool last;
	u8 hdr_len;			/* bytes after the MPA length */
	u8 hdr[MPA_HDR_SIZE + SIW_DDP_HDR_MAX];
	unsigned int npay;
	struct bio_vec pay[SIW_SEG_FRAGS];
};

/* One FPDU's framing bytes, owned by the MPA batch */
struct siw_mpa_fpdu {
	u8 hdr[MPA_HDR_SIZE + SIW_DDP_HDR_MAX];
	u8 trailer[3 + MPA_CRC_SIZE];
};

/*
 * MPA: FPDUs framed and waiting to go into the socket in one call.
 * Written by siw_mpa.c only.
 */
struct siw_mpa_tx {
	unsigned int nfpdu;
	unsigned int niov;
	u32 len;			/* bytes in iov */
	u32 sent;			/* bytes TCP took */
	u32 hdr_end;			/* zero-copy: header, payload, trailer */
	u32 pay_end;			/* ... sent in separate calls */
	struct ubuf_info *zc;		/* payload goes zero-copy, or NULL */
	struct bio_vec iov[SIW_TX_IOV];
	struct siw_mpa_fpdu fpdu[SIW_TX_BATCH];
};

/*
 * TX engine state (siw_tx.c), with each layer's part: every part is
 * written by its own file.
 */
struct siw_tx {
	struct siw_wqe sq_wqe;		/* SQ work request in progress */
	struct siw_sqe *held;		/* its user ring slot, kept VALID
					 * until sent, siw_sq_release()
					 */
	bool active;			/* message not fully framed */
	bool busy;			/* framed, not fully queued to TCP */
	bool term_busy;			/* what is queued is our Terminate */
	u32 run_sqes;			/* SQ messages started in this run */
	u32 corked;			/* bytes sent with MSG_MORE for a
					 * next message, siw_tx_run()
					 */
	struct siw_zc *zc;		/* zero-copy of the message, or NULL */
	struct siw_rdmap_tx rdmap;
	struct siw_ddp_tx ddp;
	struct siw_mpa_tx mpa;
};

/* ------------------------------------------------------------ receive */

/* RX parser states */
enum siw_rx_state {
	SIW_RX_HDR,
	SIW_RX_VERIFY,		/* CRC on: the whole FPDU checked first */
	SIW_RX_PAYLOAD,
	SIW_RX_TRAILER,
	SIW_RX_DEAD,
};

/* What is wrong with received data: the Terminate to send, and why */
struct siw_rx_err {
	u8 layer;
	u8 etype;
	u8 ecode;
	const char *why;
};

/**
 * siw_rx_error - record a receive error (any layer)
 * @e: the QP's rx.err
 * @layer: TERM_LAYER_*
 * @etype: error type of that layer
 * @ecode: error code
 * @why: what was wrong, for the log line
 *
 * Return: -EPROTO, for the caller to return; the RX engine then counts,
 * logs and terminates once (siw_rx.c).
 */
static inline int siw_rx_error(struct siw_rx_err *e, unsigned int layer,
			       unsigned int etype, unsigned int ecode,
			       const char *why)
{
	e->layer = layer;
	e->etype = etype;
	e->ecode = ecode;
	e->why = why;
	return -EPROTO;
}

/* DDP: the current segment, decoded and checked. siw_ddp.c only. */
struct siw_ddp_rx {
	u32 msn_done[DDP_NUM_QUEUES];	/* messages received per queue */
	bool last;
	u32 mo;
	u32 qn;
	u32 msn_got;
	struct siw_rx_target target;
};

/* RDMAP: messages in progress. siw_rdmap.c only. */
struct siw_rdmap_rx {
	struct siw_wqe rwqe;		/* receive WQE of the current Send */
	struct siw_wqe rresp;		/* our Read being answered */
	bool rtr_rresp;			/* expect answer to our RTR Read */
	bool rtr_send;			/* segment is a zero-length RTR Send */
	u32 inval;			/* STag a Send invalidated */
};

/* MPA: the running CRC of the current FPDU. siw_mpa.c only. */
struct siw_mpa_rx {
	bool crc_on;
	u32 crc;
};

/* received header bytes: a Terminate carries a copy of another header */
#define SIW_RX_HDR_BUF		96

/* RX engine state (siw_rx.c), with each layer's part */
struct siw_rx {
	enum siw_rx_state state;
	const struct siw_op *op;	/* of the current segment */
	u32 hdr_have;
	u32 hdr_need;
	u32 fpdu_payload;		/* payload bytes in this FPDU */
	u32 payload_have;
	u32 trailer_have;
	u32 trailer_need;
	struct siw_rx_err err;
	struct sk_buff *stage;		/* an FPDU split over skbs, CRC on */
	u8 hdr[SIW_RX_HDR_BUF];
	u8 trailer[3 + MPA_CRC_SIZE];
	struct siw_mpa_rx mpa;
	struct siw_ddp_rx ddp;
	struct siw_rdmap_rx rdmap;
};

struct siw_qp_attrs {
	enum siw_qp_state state;
	u32 sq_size;
	u32 rq_size;
	u32 sq_max_sges;
	u32 rq_max_sges;
	u32 ird;			/* inbound reads we serve */
	u32 ord;			/* outbound reads we issue */
	u32 max_inline;
	int access;			/* IB_ACCESS_REMOTE_* set by modify */
	bool crc;			/* MPA CRC negotiated */
};

struct siw_cep;

struct siw_qp {
	struct ib_qp base;
	struct siw_device *sdev;
	struct kref ref;
	struct completion freed;
	u32 id;

	/* protects attrs.state and the connection pointers */
	spinlock_t state_lock;
	struct siw_qp_attrs attrs;
	struct siw_cep *cep;
	struct socket *sock;

	struct siw_cq *scq;
	struct siw_cq *rcq;
	struct siw_srq *srq;
	struct ib_pd *pd;
	bool user;
	bool sig_all;
	struct mem_cgroup *memcg;	/* user QP: its creator's, charged */

	/* SQ ring (user mmap'd or kernel), sq_lock for kernel posting */
	spinlock_t sq_lock;
	struct siw_sqe *sendq;
	u32 sq_get;
	u32 sq_put;			/* kernel posting only */
	struct rdma_user_mmap_entry *sq_mmap;

	spinlock_t rq_lock;		/* RQ ring (kernel posting, consumption) */
	struct siw_rqe *recvq;
	u32 rq_get;
	u32 rq_put;
	struct rdma_user_mmap_entry *rq_mmap;

	/* inbound read queue: requests from peer; irq_lock */
	spinlock_t orq_lock;
	struct siw_irq_entry *irq;	/* irq_size (a power of 2) slots */
	u32 irq_size;
	u32 irq_put;
	u32 irq_get;
	/* outbound read queue: our reads waiting for responses */
	struct siw_orq_entry *orq;	/* orq_size (a power of 2) slots */
	u32 orq_size;
	u32 orq_put;
	u32 orq_get;
	u32 reads_done;			/* Reads completed or flushed */
	bool tx_waits;			/* orq_lock: SQ stopped, siw_sqe_fetch */
	struct siw_sq_done *sq_done;	/* deferred SQ completions */
	u32 sq_done_size;
	u32 sq_done_put;
	u32 sq_done_get;
	struct siw_zc_ctx *zc;		/* zero-copy transmit, siw_zcopy.c */

	/* transmit: by tx_work, or inline from the user's doorbell */
	struct work_struct tx_work;
	struct work_struct flush_work;	/* siw_qp_flush_posted() */
	struct mutex tx_mutex;		/* one transmitter at a time */
	unsigned long tx_flags;		/* SIW_TX_AGAIN: work found it held */
	struct siw_tx tx;
	int tx_sock_err;		/* a send's error (TCP consumed sk_err) */
	/* hints for the user doorbell, siw_tx_doorbell(); no lock */
	u8 db_streak;			/* doorbells since an FPDU came in */
	u8 tx_held_last;		/* the last SQE taken was held: SIW_HELD_* */

	/* receive: runs from the socket's data_ready under its lock */
	struct siw_rx rx;

	/* MPA v2 ready-to-receive: RDMAP opcode to send first, or 0 */
	u8 rtr_send;
	bool rtr_pending;		/* RTR message not yet sent */
	bool tx_hold;			/* responder: wait for peer's RTR */
	bool close_sent;		/* CLOSING: orderly close requested */
	bool cm_active;			/* siw_connect() ran for it */

	/* terminate to send / received */
	u32 term_ctrl;
	u8 term_hdr[TERM_MAX_HDR_COPY];
	u8 term_hdr_len;
	bool term_pending;
	bool term_sent;
};

static inline struct siw_qp *to_siw_qp(struct ib_qp *q)
{
	return container_of(q, struct siw_qp, base);
}

static inline bool siw_sqe_is_read(const struct siw_sqe *sqe)
{
	return sqe->opcode == SIW_OP_READ ||
	       sqe->opcode == SIW_OP_READ_LOCAL_INV;
}

/* The user asked for a completion of this work request */
static inline bool siw_sqe_signalled(const struct siw_qp *qp,
				     const struct siw_sqe *sqe)
{
	return (sqe->flags & SIW_WQE_SIGNALLED) || qp->sig_all;
}

/*
 * A peer's Read waits for its response: a look without orq_lock, for
 * the transmitter's choice of what goes next (a Read queued after the
 * look schedules the transmitter again).
 */
static inline bool siw_irq_waiting(const struct siw_qp *qp)
{
	return READ_ONCE(qp->irq_get) != READ_ONCE(qp->irq_put);
}

static inline u32 qp_id(struct siw_qp *qp)
{
	return qp->base.qp_num;
}

/* ORQ and IRQ slots (siw_cq_depth() says why the sizes are powers of 2) */
static inline struct siw_orq_entry *siw_orq_slot(struct siw_qp *qp, u32 idx)
{
	return &qp->orq[idx & (qp->orq_size - 1)];
}

static inline struct siw_irq_entry *siw_irq_slot(struct siw_qp *qp, u32 idx)
{
	return &qp->irq[idx & (qp->irq_size - 1)];
}

/* Connection parameters handed from CM to the QP when it goes to RTS */
struct siw_llp_params {
	struct socket *sock;
	struct siw_cep *cep;
	bool crc;
	u32 ird;			/* negotiated: reads we serve */
	u32 ord;			/* negotiated: reads we may issue */
	/*
	 * MPA v2 peer-to-peer ready-to-receive: the initiator sends one
	 * zero-length RDMAP message of opcode @rtr_send (RDMAP_WRITE,
	 * RDMAP_READ_REQ or RDMAP_SEND) first; the responder, with
	 * @rtr_wait, must not transmit until that message arrived.
	 */
	bool rtr_enable;
	u8 rtr_send;
	bool rtr_wait;
};

/* siw_qp.c: the QP object, its state machine, TX work scheduling */
void siw_qp_get(struct siw_qp *qp);
void siw_qp_put(struct siw_qp *qp);
struct siw_qp *siw_qp_lookup(struct siw_device *sdev, u32 id);
int siw_qp_init(struct siw_qp *qp, struct siw_device *sdev);
void siw_qp_destroy(struct siw_qp *qp);
void siw_qp_free(struct siw_qp *qp);
int siw_qp_to_rts(struct siw_qp *qp, const struct siw_llp_params *p);
void siw_qp_to_error(struct siw_qp *qp);
enum siw_qp_state siw_qp_set_state_error(struct siw_qp *qp);
void siw_qp_error_async(struct siw_qp *qp, enum siw_qp_state old);
void siw_qp_llp_detach(struct siw_qp *qp);
bool siw_qp_close_graceful(struct siw_qp *qp);
void siw_qp_flush(struct siw_qp *qp);
void siw_qp_sq_drained(struct siw_qp *qp);
void siw_qp_schedule_tx(struct siw_qp *qp);
int siw_qp_hand_cpu(unsigned int self, const struct cpumask *allowed);
void siw_qp_hand_tx(struct siw_qp *qp);
void siw_qp_tx_unblock(struct siw_qp *qp);
void siw_qp_event(struct siw_qp *qp, enum ib_event_type type);
enum ib_qp_state siw_qp_ib_state(const struct siw_qp *qp);
int siw_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int siw_qp_wq_init(void);
void siw_qp_wq_exit(void);

/*
 * siw_queue.c: the work queues. The engines take work requests off the
 * SQ (the transmitter), the RQ or SRQ and the ORQ (the RX engine); a QP
 * in ERROR has them flushed.
 */
int siw_sqe_fetch(struct siw_qp *qp, struct siw_wqe *wqe);
bool siw_sq_peek(struct siw_qp *qp);
void siw_sq_release(struct siw_qp *qp);
int siw_rqe_fetch(struct siw_qp *qp, struct siw_wqe *wqe);
void siw_wqe_put_mrs(struct siw_wqe *wqe);
void siw_wqe_release(struct siw_wqe *wqe);
bool siw_orq_pop(struct siw_qp *qp, struct siw_wqe *w);
bool siw_orq_pop_before(struct siw_qp *qp, struct siw_wqe *w, u32 msn);
void siw_qp_flush_posted(struct siw_qp *qp);
void siw_qp_flush_sq(struct siw_qp *qp);
void siw_qp_flush_rq(struct siw_qp *qp);

/*
 * siw_cq.c: completions into the CQ (notification, overflow); send
 * queue completions in posting order.
 */
#define SIW_CQE_NOTIFY	1	/* siw_cqe_put(): call the consumer */
int siw_cqe_put(struct siw_cq *cq, u64 id, u8 opcode, u32 bytes,
		enum ib_wc_status status, bool solicited, u32 inval_stag,
		struct siw_qp *qp);
void siw_cqe_after(struct siw_cq *cq, struct siw_qp *qp, int note);
void siw_recv_complete(struct siw_qp *qp, struct siw_wqe *wqe,
		       enum ib_wc_status status, u32 bytes, u32 inval_stag,
		       bool solicited);
void siw_sq_complete(struct siw_qp *qp, struct siw_wqe *wqe,
		     enum ib_wc_status status, u32 bytes);
void siw_sq_done_report(struct siw_qp *qp);
void siw_sq_done_flush(struct siw_qp *qp);
void siw_sq_read_issue(struct siw_qp *qp, struct siw_wqe *wqe);
void siw_sq_read_done(struct siw_qp *qp, struct siw_wqe *wqe,
		      enum ib_wc_status status, u32 bytes);
int siw_sq_flush_reads(struct siw_qp *qp);

/*
 * siw_tx.c: the transmit engine, the one owner of a QP's transmit state.
 * Runs from the QP's TX work or inline from the user doorbell
 * (siw_tx_now), one at a time (tx_mutex).
 */
int siw_tx_init(struct siw_qp *qp);
void siw_tx_fini(struct siw_qp *qp);
void siw_tx_now(struct siw_qp *qp);
void siw_tx_doorbell(struct siw_qp *qp, enum siw_qp_state state);
void siw_tx_sync(struct siw_qp *qp);
void siw_tx_quiesce(struct siw_qp *qp);

/*
 * siw_rx.c: the receive engine. siw_qp_rx() is called by the CM's
 * sk_data_ready while the QP is attached (softirq, socket bh-locked,
 * sk_callback_lock read-held); siw_rx_start() in process context right
 * after attaching, for data that arrived behind the MPA reply, and when
 * the peer's FIN is seen, for data that came with it;
 * siw_qp_llp_closed() when the connection is gone.
 */
void siw_qp_rx(struct siw_qp *qp, struct sock *sk);
int siw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
		 unsigned int off, size_t len);
void siw_rx_start(struct siw_qp *qp);
void siw_qp_llp_closed(struct siw_qp *qp);
void siw_rx_fini(struct siw_qp *qp);

/* siw_mpa.c: FPDU framing (RFC 5044) */
bool siw_mpa_tx_room(const struct siw_mpa_tx *m, const struct siw_ddp_tx *d);
void siw_mpa_tx_frame(struct siw_mpa_tx *m, const struct siw_ddp_tx *d,
		      bool crc, struct ubuf_info *zc);
int siw_mpa_tx_push(struct siw_qp *qp, struct siw_mpa_tx *m, bool more);
void siw_mpa_tx_reset(struct siw_mpa_tx *m);
int siw_mpa_rx_fpdu(struct siw_rx_err *e, u32 ulpdu, u32 hdr_len,
		    u32 *payload, u32 *trailer);
void siw_mpa_rx_begin(struct siw_mpa_rx *m, bool crc, const u8 *hdr,
		      u32 len);
void siw_mpa_rx_crc(struct siw_mpa_rx *m, const void *p, u32 len);
int siw_mpa_rx_verify(struct siw_mpa_rx *m, struct siw_rx_err *e,
		      struct sk_buff *skb, u32 off, u32 len);
int siw_mpa_rx_trailer(struct siw_mpa_rx *m, struct siw_rx_err *e,
		       const u8 *trailer, u32 len);

/* siw_zcopy.c: payload pages handed to TCP, completions after release */
int siw_zc_ctx_create(struct siw_qp *qp);
void siw_zc_ctx_detach(struct siw_qp *qp);
void siw_zc_ctx_free(struct siw_qp *qp);
struct siw_zc *siw_zc_begin(struct siw_qp *qp, u32 len);
void siw_zc_end(struct siw_zc *zc);
u32 siw_zc_mark_released(struct siw_zc_ctx *ctx, u32 seq);

/* All zero-copy messages before this sequence number were released. */
static inline u32 siw_zc_released(struct siw_qp *qp)
{
	return qp->zc ? READ_ONCE(qp->zc->released) : 0;
}

/* Sequence number the next zero-copy message will get. */
static inline u32 siw_zc_started(struct siw_qp *qp)
{
	return qp->zc ? READ_ONCE(qp->zc->started) : 0;
}

static inline struct ubuf_info *siw_zc_ubuf(struct siw_zc *zc)
{
	return zc ? &zc->ubuf : NULL;
}

/* MPA connection setup, decoded (siw_mpa.c, used by siw_cm.c) */
struct siw_mpa_info {
	u8 rev;
	bool crc;
	bool markers;
	bool reject;
	bool v2;			/* RFC 6581 IRD/ORD block present */
	u16 ird;			/* IRD/ORD values ... */
	u16 ord;
	u16 ird_bits;			/* ... and the raw fields with flags */
	u16 ord_bits;
	u16 ulp_off;			/* ULP private data in the frame's */
	u16 ulp_len;
};

int siw_mpa_hdr_check(const struct mpa_rr *rr, bool request);
int siw_mpa_decode(const struct mpa_rr *rr, const u8 *pd,
		   struct siw_mpa_info *mi);
int siw_mpa_crc_decide(bool local, bool peer, bool strict);
void siw_mpa_initiator_irdord(u32 *ird, u32 *ord, u32 peer_ird, u32 peer_ord);

/* siw_ddp.c: segments (RFC 5041), placement */
u32 siw_tx_seg_max(struct siw_qp *qp, const struct siw_op *op);
void siw_ddp_tx_begin(struct siw_ddp_tx *d, const struct siw_op *op);
int siw_ddp_tx_segment(struct siw_ddp_tx *d, const struct siw_op *op,
		       const struct siw_rdmap_tx *m, u32 seg_max);
bool siw_ddp_tx_advance(struct siw_ddp_tx *d, const struct siw_rdmap_tx *m);
u32 siw_ddp_rx_hdr_len(const struct iwarp_ctrl *ctrl);
int siw_ddp_rx_version(struct siw_rx_err *e, const struct iwarp_ctrl *ctrl);
int siw_ddp_rx_hdr(struct siw_ddp_rx *d, struct siw_rx_err *e,
		   const u8 *hdr, const struct siw_op *op);
int siw_ddp_rx_place(struct siw_ddp_rx *d, struct siw_rx_err *e,
		     struct siw_mpa_rx *crc, const struct sk_buff *skb,
		     int off, u32 len);
void siw_ddp_rx_set_target(struct siw_ddp_rx *d,
			   const struct siw_rx_target *t);
void siw_ddp_rx_done(struct siw_ddp_rx *d, const struct siw_op *op);
void siw_ddp_rx_target_put(struct siw_ddp_rx *d);

/* siw_rdmap.c: RDMAP messages (RFC 5040), Read, Terminate */
int siw_rdmap_rx_check(struct siw_rx_err *e, const struct iwarp_ctrl *ctrl,
		       const struct siw_op **op);
const struct siw_op *siw_rx_op_of(const struct iwarp_ctrl *ctrl);
int siw_rdmap_tx_start(struct siw_qp *qp, struct siw_wqe *sq_wqe);
int siw_rdmap_tx_rresp(struct siw_qp *qp);
void siw_irq_push(struct siw_qp *qp, const struct siw_irq_entry *e);
void siw_rdmap_tx_rtr(struct siw_qp *qp);
void siw_rdmap_tx_term(struct siw_qp *qp);
void siw_rdmap_tx_done(struct siw_qp *qp);
void siw_rdmap_tx_flush(struct siw_qp *qp);
void siw_rdmap_rx_flush(struct siw_qp *qp);
void siw_term_set(struct siw_qp *qp, unsigned int layer,
		  unsigned int etype, unsigned int ecode,
		  const void *hdr, unsigned int hdr_len);

/* siw_cm.c: iw_cm verbs and MPA negotiation */
int siw_create_listen(struct iw_cm_id *id, int backlog);
int siw_destroy_listen(struct iw_cm_id *id);
void siw_cm_qp_disconnect(struct siw_qp *qp, bool abortive);
void siw_cm_qp_abort_connect(struct siw_qp *qp);
extern const struct ib_device_ops siw_cm_ops;
int siw_cm_init(void);
void siw_cm_exit(void);

/* siw_mem.c, module-wide */
int siw_mem_init(void);
void siw_mem_fini(void);

/* siw_verbs.c */
void siw_verbs_set_ops(struct ib_device *ibdev);
#if IS_ENABLED(CONFIG_KUNIT)
int siw_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int siw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags how);
#endif
void siw_port_event(struct siw_device *sdev, enum ib_event_type type);

#endif
