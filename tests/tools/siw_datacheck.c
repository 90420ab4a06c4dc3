// SPDX-License-Identifier: GPL-2.0
/*
 * siw_datacheck: byte-exact data integrity checker over librdmacm (RC).
 *
 *   server: siw_datacheck -s [-b bindaddr] [-p port]
 *   client: siw_datacheck -c host [-p port] [-n iters] [-S seed] [-m maxsize]
 *           [--error=KIND] [--srq]
 *
 * Protocol (lock step, all driven by the client's seed, reproducible):
 *   client -> HELLO(seed, iters, max_size, error kind, srq)
 *   for each iteration i:
 *     server generates op i (type SEND/WRITE/READ, size, remote offset) from
 *       (seed, i), prepares (posts a receive for SEND, fills the remote
 *       region with the pattern for READ), posts a control receive, then
 *     server -> READY(i, op, region addr/rkey/len)
 *     client builds a random SGE list (random count, unaligned addresses,
 *       gaps between pieces), issues the op (maybe inline/fenced/unsignaled),
 *     client -> DONE(i)
 *     server verifies: receive completion (status, byte_len, wr_id), the
 *       received data, and that every byte of its region and receive buffer
 *       (including guard bytes around and outside each MR) equals a shadow
 *       copy of what it should be; client verifies its own buffer likewise.
 *   server -> FIN
 * Every buffer has a shadow copy that is updated with the expected effect of
 * each operation; after each operation the whole buffer (guards included) is
 * compared with the shadow, so any stray byte is caught.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>
#include <signal.h>
#include <netdb.h>
#include <poll.h>
#include <sys/mman.h>

#define MAGIC 0x51574443u /* "SWDC" */
#define GUARD 4096         /* guard bytes outside each MR, both sides */
#define SLACK 8192         /* room for unaligned offsets and SGE gaps */
#define NCTRL 64           /* control message slots */
#define SQ_DEPTH 128
#define RQ_DEPTH 64
#define MAX_SGE_USE 32

enum msg_type { M_HELLO = 1, M_READY, M_DONE, M_FIN, M_BURST, M_CONT };
enum op_type { OP_SEND, OP_WRITE, OP_READ };
static const char * const op_name[] = { "SEND", "WRITE", "READ" };

enum err_kind { E_NONE, E_BAD_RKEY, E_BAD_RKEY_READ, E_OOB_WRITE, E_OOB_READ,
		E_NO_REMOTE_WRITE, E_SEND_NO_RECV, E_INVALIDATED, E_NUM };

/*
 * Expected client-side status of the faulty operation, per error kind.
 *
 * iWARP (RFC 5040 5.5 "Ordering and Completions"): a Send or RDMA Write
 * completes at the Data Source once the message was handed to the LLP; it
 * is NOT acknowledged by the Data Sink.  A remote fault detected by the
 * Data Sink (RFC 5041 7.2 tagged-buffer errors: invalid STag, base/bounds
 * violation, access rights; untagged: no buffer for the MSN) is reported
 * with a Terminate message (RFC 5040 7.1-7.4, Terminate layer/error
 * type/code) and the stream is closed: the Data Source QP goes to error.
 * So for WRITE/SEND faults an iWARP provider may legitimately complete the
 * faulty WR with SUCCESS and report the fault only through the QP error
 * (a following WR then fails / flushes), while an InfiniBand/RoCE provider
 * (acked transport) reports REM_ACCESS_ERR / REM_INV_REQ_ERR on the WR.
 * An RDMA Read needs a Read Response (RFC 5040 4.4, 5.2), so a Read fault
 * must fail the Read WR itself: REM_ACCESS_ERR is preferred; REM_OP_ERR /
 * GENERAL_ERR (how the Terminate is mapped differs between providers) and
 * WR_FLUSH_ERR (QP already flushed when the Terminate arrived) are tolerated.
 * In every kind a probe WR posted after the faulty one must not succeed:
 * that is the "QP went to error" check.
 */
#define S(x) (1u << (x))
static const struct err_spec {
	const char *name;
	unsigned int preferred;  /* bitmask of enum ibv_wc_status */
	unsigned int accepted;   /* also acceptable (documented above) */
} err_table[E_NUM] = {
	[E_NONE]            = { "none", S(IBV_WC_SUCCESS), 0 },
	/*
	 * A faulty Write may also be flushed: the peer's Terminate can put
	 * the QP in error before the Write's own completion is written.
	 */
	/* RFC 5041 7.2: tagged, Invalid STag (0x00); RFC 5040 7.4 prot. error */
	[E_BAD_RKEY]        = { "bad-rkey", S(IBV_WC_REM_ACCESS_ERR),
				S(IBV_WC_SUCCESS) | S(IBV_WC_REM_OP_ERR) |
				S(IBV_WC_REM_INV_REQ_ERR) |
				S(IBV_WC_WR_FLUSH_ERR) },
	[E_BAD_RKEY_READ]   = { "bad-rkey-read", S(IBV_WC_REM_ACCESS_ERR),
				S(IBV_WC_REM_OP_ERR) | S(IBV_WC_GENERAL_ERR) |
				S(IBV_WC_WR_FLUSH_ERR) },
	/* RFC 5041 7.2: tagged, Base or bounds violation (0x01) */
	[E_OOB_WRITE]       = { "oob-write", S(IBV_WC_REM_ACCESS_ERR),
				S(IBV_WC_SUCCESS) | S(IBV_WC_REM_OP_ERR) |
				S(IBV_WC_REM_INV_REQ_ERR) |
				S(IBV_WC_WR_FLUSH_ERR) },
	[E_OOB_READ]        = { "oob-read", S(IBV_WC_REM_ACCESS_ERR),
				S(IBV_WC_REM_OP_ERR) | S(IBV_WC_GENERAL_ERR) |
				S(IBV_WC_WR_FLUSH_ERR) },
	/* RFC 5040 7.4: Remote Protection Error, access rights violation (0x02) */
	[E_NO_REMOTE_WRITE] = { "no-remote-write", S(IBV_WC_REM_ACCESS_ERR),
				S(IBV_WC_SUCCESS) | S(IBV_WC_REM_OP_ERR) |
				S(IBV_WC_REM_INV_REQ_ERR) |
				S(IBV_WC_WR_FLUSH_ERR) },
	/* RFC 5041 7.2: untagged, Invalid MSN - no buffer available (0x02) */
	[E_SEND_NO_RECV]    = { "send-no-recv", S(IBV_WC_REM_OP_ERR),
				S(IBV_WC_SUCCESS) | S(IBV_WC_REM_INV_REQ_ERR) |
				S(IBV_WC_RNR_RETRY_EXC_ERR) |
				S(IBV_WC_REM_ACCESS_ERR) | S(IBV_WC_GENERAL_ERR) },
	/* RFC 5040 6.x/7.4: Send with Invalidate then RDMA Write with the
	 * invalidated STag (Invalid STag).  The op checked is the WRITE; if the
	 * provider refuses to invalidate a plain MR, the Send itself fails and
	 * that is accepted too (see do_client_error), unless --require-inv
	 * (a provider that must invalidate: this project's siw): then a refused
	 * or unsupported Send with Invalidate fails, and the server must see
	 * the receive with IBV_WC_WITH_INV naming its region's rkey.
	 */
	[E_INVALIDATED]     = { "invalidated", S(IBV_WC_REM_ACCESS_ERR),
				S(IBV_WC_SUCCESS) | S(IBV_WC_REM_OP_ERR) |
				S(IBV_WC_REM_INV_REQ_ERR) |
				S(IBV_WC_WR_FLUSH_ERR) | S(IBV_WC_RETRY_EXC_ERR) },
};

struct msg {
	uint32_t magic, type, iter, status;
	uint64_t seed, max_size;
	uint32_t iters, errkind, srq, optype;
	uint64_t size, roff, key;
	uint64_t addr, len;
	uint32_t rkey, count;
	uint32_t no_empty_read;	/* HELLO: server never picks a zero-length READ */
	char text[96];
};

struct buf {
	uint8_t *mem;       /* GUARD | mr area | GUARD */
	uint8_t *shadow;
	size_t total, mrlen;
	struct ibv_mr *mr;
};

#define MRBASE(b) ((b)->mem + GUARD)

static struct {
	int server, port, iters, srq;
	const char *host, *bind;
	size_t max_size;
	int err;
	struct t_run run;	/* -S, -t, -T */
	int verbose;
	int fence_reads;
	int no_empty_sge;	/* every SGE carries >= 1 byte */
	int no_empty_read;	/* no zero-length READ (asked by the client) */
	int require_inv;	/* 'invalidated': remote invalidation must work */
} o = { .port = 18515, .iters = 200, .max_size = 8u << 20,
	.run = { .timeout = 30, .total = 1800 } };

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_srq *srq;
static struct ibv_mr *ctrl_mr;
static struct msg *ctrl_send, *ctrl_recv; /* NCTRL each */
static struct buf data;   /* client: local buffer; server: region */
static struct buf rbuf;   /* server: receive buffer for SENDs */
static struct ibv_device_attr dattr;
static int max_send_sge, max_recv_sge, max_inline, max_rd_sge;
static int send_slot, unsignaled, sig_outstanding;
static int recv_slot;

static void buf_alloc(struct buf *b, size_t mrlen, int access)
{
	b->mrlen = mrlen;
	b->total = mrlen + 2 * GUARD;
	b->mem = mmap(NULL, b->total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	b->shadow = malloc(b->total);
	if (b->mem == MAP_FAILED || !b->shadow)
		DIE("out of memory for %zu bytes", b->total);
	/* canary / initial content: pattern with a distinct key */
	pat_fill(b->mem, 0xC0FFEEull ^ mrlen, 0, b->total);
	memcpy(b->shadow, b->mem, b->total);
	b->mr = ibv_reg_mr(pd, MRBASE(b), mrlen, access);
	if (!b->mr)
		DIE("ibv_reg_mr(%zu, 0x%x): %s", mrlen, access, strerror(errno));
}

/* compare whole buffer with shadow; returns 0 if equal */
static int buf_verify(struct buf *b, const char *what, int iter, const char *op, size_t size,
		      size_t off)
{
	size_t d = first_diff(b->mem, b->shadow, b->total);

	if (d == (size_t)-1)
		return 0;
	long rel = (long)d - GUARD;
	const char *where = rel < 0 ? "front guard (outside MR)" :
			    (size_t)rel >= b->mrlen ? "back guard (outside MR)" : "inside MR";
	printf("FAIL - mismatch in %s: iter %d op %s size %zu offset %zu: first bad byte at MR offset %ld (%s): got 0x%02x expected 0x%02x\n",
	       what, iter, op, size, off, rel, where, b->mem[d], b->shadow[d]);
	t_failures++;
	return -1;
}

/* ---------------------------------------------------------------- verbs */

static void post_ctrl_recv(void)
{
	int s = recv_slot++ % NCTRL;
	struct ibv_sge sge = { (uintptr_t)&ctrl_recv[s], sizeof(struct msg), ctrl_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 0x10000 | s, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(id->qp, &wr, &bad);

	if (rc)
		DIE("post ctrl recv: %s", strerror(rc));
}

/* process a send completion (retire signaled ones) */
static void handle_send_wc(struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		DIE("send completion wr_id 0x%llx: %s (%d) opcode %d",
		    (unsigned long long)wc->wr_id, wc_status_name(wc->status), wc->status,
		    wc->opcode);
	sig_outstanding--;
}

/* receive completions seen while draining sends, delivered later in order */
static struct ibv_wc pend[RQ_DEPTH];
static int npend;

/* wait for next receive completion; send completions are processed meanwhile */
static int wait_recv(struct ibv_wc *out)
{
	struct ibv_wc wc;

	if (npend) {
		*out = pend[0];
		npend--;
		memmove(pend, pend + 1, (size_t)npend * sizeof(pend[0]));
		return 0;
	}
	for (;;) {
		int r = poll_one(cq, &wc, o.run.timeout);

		if (r <= 0)
			DIE("timeout/error (%d) waiting for receive completion", r);
		if (wc.opcode & IBV_WC_RECV) {
			*out = wc;
			return 0;
		}
		handle_send_wc(&wc);
	}
}

/* wait until all signaled sends completed */
static void drain_sends(void)
{
	struct ibv_wc wc;

	while (sig_outstanding > 0) {
		int r = poll_one(cq, &wc, o.run.timeout);

		if (r <= 0)
			DIE("timeout waiting for send completions (%d outstanding)",
			    sig_outstanding);
		if (wc.opcode & IBV_WC_RECV) {
			/* e.g. the peer's next message overtook our send
			 * completion: keep it for wait_recv()
			 */
			if (npend == RQ_DEPTH)
				DIE("too many receive completions while draining sends");
			pend[npend++] = wc;
			continue;
		}
		handle_send_wc(&wc);
	}
}

static void post_send_wr(struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int rc;

	if (!(wr->send_flags & IBV_SEND_SIGNALED) && ++unsignaled >= 16)
		wr->send_flags |= IBV_SEND_SIGNALED;
	if (wr->send_flags & IBV_SEND_SIGNALED) {
		unsignaled = 0;
		if (sig_outstanding >= 2)
			drain_sends();
		sig_outstanding++;
	}
	rc = ibv_post_send(id->qp, wr, &bad);
	if (rc)
		DIE("ibv_post_send opcode %d num_sge %d flags 0x%x: rc %d (%s)", wr->opcode,
		    wr->num_sge,
		    wr->send_flags, rc,
		    rc > 0 ? strerror(rc) : rc == -1 ? strerror(errno) : strerror(-rc));
}

/*
 * The control messages cross architectures (an s390x client, an amd64
 * server): little-endian on the wire. On a little-endian host this does
 * nothing, on a big-endian one it swaps every integer field; either way it
 * is its own inverse, so it turns a message to the wire and back.
 */
static void msg_wire(struct msg *m)
{
	uint32_t *w32[] = { &m->magic, &m->type, &m->iter, &m->status, &m->iters,
			    &m->errkind, &m->srq, &m->optype, &m->rkey, &m->count,
			    &m->no_empty_read };
	uint64_t *w64[] = { &m->seed, &m->max_size, &m->size, &m->roff, &m->key,
			    &m->addr, &m->len };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(w32); i++)
		*w32[i] = htole32(*w32[i]);
	for (i = 0; i < ARRAY_SIZE(w64); i++)
		*w64[i] = htole64(*w64[i]);
}

static void send_ctrl(struct msg *m, int signaled)
{
	int s = send_slot++ % NCTRL;
	/* slot reuse is safe: at most 2 signaled (each after <= 16 unsignaled) outstanding */
	ctrl_send[s] = *m;
	ctrl_send[s].magic = MAGIC;
	msg_wire(&ctrl_send[s]);
	struct ibv_sge sge = { (uintptr_t)&ctrl_send[s], sizeof(struct msg), ctrl_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x20000 | s, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = signaled ? IBV_SEND_SIGNALED : 0 };
	post_send_wr(&wr);
}

static struct msg *recv_ctrl(uint32_t want)
{
	struct ibv_wc wc;

	wait_recv(&wc);
	if (wc.status != IBV_WC_SUCCESS)
		DIE("control receive failed: %s", wc_status_name(wc.status));
	if (!(wc.wr_id & 0x10000))
		DIE("expected control receive, got wr_id 0x%llx", (unsigned long long)wc.wr_id);
	struct msg *m = &ctrl_recv[wc.wr_id & 0xffff];

	if (wc.byte_len == sizeof(*m))
		msg_wire(m);
	if (wc.byte_len != sizeof(*m) || m->magic != MAGIC)
		DIE("bad control message (len %u magic 0x%x)", wc.byte_len, m->magic);
	if (m->type != want && !(want == M_READY && m->type == M_FIN)) {
		if (m->status)
			DIE("peer reported failure: %s", m->text);
		DIE("expected control message %u, got %u", want, m->type);
	}
	return m;
}

static void setup_qp(struct rdma_cm_id *cid)
{
	struct ibv_qp_init_attr qa = { 0 };

	if (ibv_query_device(cid->verbs, &dattr))
		DIE("ibv_query_device");
	max_send_sge = dattr.max_sge < MAX_SGE_USE ? dattr.max_sge : MAX_SGE_USE;
	max_recv_sge = max_send_sge;
	max_rd_sge = dattr.max_sge_rd ? dattr.max_sge_rd : 1;
	if (max_rd_sge > max_send_sge)
		max_rd_sge = max_send_sge;
	pd = ibv_alloc_pd(cid->verbs);
	cq = ibv_create_cq(cid->verbs, SQ_DEPTH + RQ_DEPTH + 8, NULL, NULL, 0);
	if (!pd || !cq)
		DIE("alloc pd/cq: %s", strerror(errno));
	if (o.srq && o.server) {
		if (dattr.max_srq_sge > 0 && max_recv_sge > dattr.max_srq_sge)
			max_recv_sge = dattr.max_srq_sge;
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = RQ_DEPTH,
							  .max_sge = (uint32_t)max_recv_sge } };

		srq = ibv_create_srq(pd, &sa);
		if (!srq)
			DIE("ibv_create_srq: %s", strerror(errno));
	}
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.srq = srq;
	qa.cap.max_send_wr = SQ_DEPTH;
	qa.cap.max_recv_wr = srq ? 0 : RQ_DEPTH;
	qa.cap.max_send_sge = max_send_sge;
	qa.cap.max_recv_sge = srq ? 0 : max_recv_sge;
	qa.cap.max_inline_data = 64;
	if (rdma_create_qp(cid, pd, &qa)) {
		qa.cap.max_inline_data = 0;
		if (rdma_create_qp(cid, pd, &qa))
			DIE("rdma_create_qp: %s", strerror(errno));
	}
	max_inline = qa.cap.max_inline_data;
	id = cid;
	ctrl_send = aligned_alloc(4096, 2 * NCTRL * sizeof(struct msg) + 4096);
	memset(ctrl_send, 0, 2 * NCTRL * sizeof(struct msg));
	ctrl_recv = ctrl_send + NCTRL;
	ctrl_mr = ibv_reg_mr(pd, ctrl_send, 2 * NCTRL * sizeof(struct msg), IBV_ACCESS_LOCAL_WRITE);
	if (!ctrl_mr)
		DIE("reg ctrl mr: %s", strerror(errno));
	NOTE("device %s: max_sge %d max_sge_rd %d inline %d (using send %d recv %d rd %d)",
	     ibv_get_device_name(cid->verbs->device), dattr.max_sge, dattr.max_sge_rd,
	     max_inline, max_send_sge, max_recv_sge, max_rd_sge);
}

/* ------------------------------------------------------------ op model */

struct op {
	int type;
	size_t size, roff;
	uint64_t key;
};

static void gen_op(uint64_t seed, int i, size_t region_len, struct op *op)
{
	uint64_t s = seed ^ (0x5151ull * (uint64_t)(i + 1)) ^ 0xabcdefull;

	sm64(&s);
	op->type = (int)rnd_range(&s, 0, 2);
	unsigned int b = (unsigned int)rnd_range(&s, 0, 99);
	size_t mx = o.max_size;

	if (b < 5)
		op->size = 0;
	else if (b < 25)
		op->size = rnd_range(&s, 1, 64 < mx ? 64 : mx);
	else if (b < 55)
		op->size = rnd_range(&s, 1, 4096 < mx ? 4096 : mx);
	else if (b < 85)
		op->size = rnd_range(&s, 1, 65536 < mx ? 65536 : mx);
	else
		op->size = rnd_range(&s, 1, mx);
	if (op->size > mx)
		op->size = mx;
	if (op->type == OP_READ && op->size == 0 && o.no_empty_read && mx > 0)
		op->size = 1;
	op->roff = rnd_range(&s, 0, region_len - op->size);
	op->key = seed * 1000003ull + (uint64_t)i * 7919ull + 1;
}

struct piece { size_t off, len; };

/* split 'size' into n pieces placed at random unaligned offsets with gaps */
static int gen_layout(uint64_t *s, size_t size, int minn, int maxn, size_t space, struct piece *p)
{
	int n = size == 0 ? (int)rnd_range(s, (uint64_t)minn, 1) : (int)rnd_range(s, 1, maxn);

	if (o.no_empty_sge && size == 0 && minn == 0)
		n = 0;
	if (n == 0)
		return 0;
	if ((size_t)n > size && size > 0)
		n = (int)size;
	size_t left = size, pos = rnd_range(s, 0, 63);

	for (int k = 0; k < n; k++) {
		size_t upper = left / (size_t)(n - k) * 2 < left ?
			       left / (size_t)(n - k) * 2 : left;
		size_t len = (k == n - 1) ? left : rnd_range(s, o.no_empty_sge ? 1 : 0, upper);

		/* leave at least one byte for each later SGE */
		if (o.no_empty_sge && k < n - 1 && len > left - (size_t)(n - 1 - k))
			len = left - (size_t)(n - 1 - k);
		p[k].off = pos;
		p[k].len = len;
		left -= len;
		pos += len + rnd_range(s, 0, 64);
	}
	if (pos > space)
		DIE("layout overflow (%zu > %zu)", pos, space);
	return n;
}

/* ---------------------------------------------------------------- server */

static void server_send_ready(struct msg *r)
{
	r->type = M_READY;
	r->addr = (uintptr_t)MRBASE(&data);
	r->rkey = data.mr->rkey;
	r->len = data.mrlen;
	send_ctrl(r, (r->iter % 8) == 0);
}

static int server_error_mode(int kind);

static int srq_burst_phase(void)
{
	struct ibv_srq_attr sa = { 0 };
	struct ibv_async_event ev;
	const int N = 16, LIMIT = 8;
	int got = 0;

	for (int k = 0; k < N; k++)
		post_ctrl_recv();
	sa.srq_limit = LIMIT;
	if (ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT))
		DIE("ibv_modify_srq(limit %d): %s", LIMIT, strerror(errno));
	struct msg r = { .type = M_BURST, .count = N / 2 };

	r.type = M_BURST;
	send_ctrl(&r, 1);
	for (int k = 0; k < N / 2; k++)
		recv_ctrl(M_BURST);
	/* N/2 still posted == limit: no event yet */
	if (async_wait(id->verbs, &ev, 0.3)) {
		FAIL("srq: async event %s before the posted count dropped below the limit",
		     ibv_event_type_str(ev.event_type));
	} else {
		OK("srq: no limit event while %d WQEs posted (limit %d)", N / 2, LIMIT);
	}
	r.type = M_CONT;
	r.count = N / 2;
	send_ctrl(&r, 1);
	for (int k = 0; k < N / 2; k++)
		recv_ctrl(M_BURST);
	double end = now_s() + 5;

	while (now_s() < end && async_wait(id->verbs, &ev, end - now_s())) {
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
			got = 1;
			break;
		}
		NOTE("srq: other async event %s", ibv_event_type_str(ev.event_type));
	}
	CHECK(got, "srq: IBV_EVENT_SRQ_LIMIT_REACHED after consumption below limit %d", LIMIT);
	int qr = ibv_query_srq(srq, &sa);

	if (qr == EOPNOTSUPP || qr == ENOSYS)
		NOTE("srq: ibv_query_srq not supported by the provider: limit read-back skipped");
	else if (qr)
		FAIL("ibv_query_srq: %s", strerror(qr));
	else
		CHECK(sa.srq_limit == 0, "srq: limit disarmed after event (srq_limit=%u)",
		      sa.srq_limit);
	return got ? 0 : -1;
}

static int run_server(void)
{
	struct rdma_addrinfo hints = { 0 }, *res;
	struct rdma_cm_id *lid;
	struct rdma_cm_event *ev;
	char ps[16];

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP))
		DIE("rdma_create_id: %s", strerror(errno));
	snprintf(ps, sizeof(ps), "%d", o.port);
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(o.bind, ps, &hints, &res))
		DIE("rdma_getaddrinfo(%s): %s", o.bind ? o.bind : "*", strerror(errno));
	if (rdma_bind_addr(lid, res->ai_src_addr) || rdma_listen(lid, 1))
		DIE("bind/listen: %s", strerror(errno));
	rdma_freeaddrinfo(res);
	printf("# listening on %s:%d\n", o.bind ? o.bind : "*", o.port);
	fflush(stdout);
	ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, o.run.timeout * 4);
	if (!ev)
		DIE("no connection request");
	struct rdma_cm_id *cid = ev->id;

	rdma_ack_cm_event(ev);
	setup_qp(cid);
	post_ctrl_recv(); /* for HELLO */
	struct rdma_conn_param cp = { .responder_resources = 8, .initiator_depth = 8 };

	if (cp.responder_resources > dattr.max_qp_rd_atom)
		cp.responder_resources = dattr.max_qp_rd_atom;
	if (cp.initiator_depth > dattr.max_qp_init_rd_atom)
		cp.initiator_depth = dattr.max_qp_init_rd_atom;
	if (rdma_accept(cid, &cp))
		DIE("rdma_accept: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, o.run.timeout);
	if (!ev)
		DIE("connection not established");
	rdma_ack_cm_event(ev);
	struct msg *h = recv_ctrl(M_HELLO);

	o.run.seed = h->seed;
	o.iters = (int)h->iters;
	o.max_size = h->max_size;
	o.err = (int)h->errkind;
	o.no_empty_read = (int)h->no_empty_read;
	if (h->srq && !srq)
		NOTE("client asked for srq mode but server was not started with --srq");
	printf("# server: seed %llu iters %d max_size %zu error %s srq %d no-empty-read %d\n",
	       (unsigned long long)o.run.seed, o.iters, o.max_size, err_table[o.err].name, !!srq,
	       o.no_empty_read);
	fflush(stdout);
	if (o.err != E_NONE)
		return server_error_mode(o.err);

	buf_alloc(&data, o.max_size + SLACK,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	buf_alloc(&rbuf, o.max_size + SLACK, IBV_ACCESS_LOCAL_WRITE);

	if (srq && srq_burst_phase())
		t_failures++;

	for (int i = 0; i < o.iters; i++) {
		struct op op;
		struct piece rp[MAX_SGE_USE];
		struct ibv_sge sg[MAX_SGE_USE];
		int nr = 0;
		size_t cap = 0;

		gen_op(o.run.seed, i, data.mrlen, &op);
		snprintf(t_context, sizeof(t_context), "server iter %d %s size %zu roff %zu", i,
			 op_name[op.type], op.size, op.roff);
		uint64_t ls = o.run.seed ^ (0x7777ull * (uint64_t)(i + 1));

		if (op.type == OP_SEND) {
			size_t extra = rnd_range(&ls, 0, 3) ? 0 : rnd_range(&ls, 1, 1024);

			cap = op.size + extra;
			/* receives get >= 1 SGE: libsiw refuses a receive WR
			 * with num_sge 0 (EINVAL)
			 */
			nr = gen_layout(&ls, cap, 1, max_recv_sge, rbuf.mrlen, rp);
			/* receive area: fresh poison so we see exactly what lands */
			for (int k = 0; k < nr; k++) {
				pat_fill(MRBASE(&rbuf) + rp[k].off, op.key ^ 0xdeadull, rp[k].off,
					 rp[k].len);
				memcpy(rbuf.shadow + GUARD + rp[k].off, MRBASE(&rbuf) + rp[k].off,
				       rp[k].len);
				sg[k].addr = (uintptr_t)MRBASE(&rbuf) + rp[k].off;
				sg[k].length = (uint32_t)rp[k].len;
				sg[k].lkey = rbuf.mr->lkey;
			}
			struct ibv_recv_wr wr = { .wr_id = 0x30000000ull | (uint64_t)i,
						  .sg_list = sg, .num_sge = nr }, *bad;
			int rc = srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(id->qp,
					&wr, &bad);

			if (rc)
				DIE("post data recv (%d sge, %zu bytes): %s", nr, cap,
				    strerror(rc));
			/* expected: first op.size bytes of the SGE list get the pattern */
			size_t k0 = 0;

			for (int k = 0; k < nr && k0 < op.size; k++) {
				size_t n = rp[k].len < op.size - k0 ? rp[k].len : op.size - k0;

				pat_fill(rbuf.shadow + GUARD + rp[k].off, op.key, k0, n);
				k0 += n;
			}
		} else if (op.type == OP_READ) {
			pat_fill(MRBASE(&data) + op.roff, op.key, 0, op.size);
			memcpy(data.shadow + GUARD + op.roff, MRBASE(&data) + op.roff, op.size);
		} else {
			pat_fill(data.shadow + GUARD + op.roff, op.key, 0, op.size);
		}
		post_ctrl_recv();
		struct msg r = { .iter = (uint32_t)i, .optype = (uint32_t)op.type, .size = op.size,
				 .roff = op.roff, .key = op.key };
		server_send_ready(&r);
		if (op.type == OP_SEND) {
			struct ibv_wc wc;

			wait_recv(&wc);
			if (wc.status != IBV_WC_SUCCESS)
				DIE("iter %d SEND size %zu: receive completion %s", i, op.size,
				    wc_status_name(wc.status));
			if (wc.wr_id != (0x30000000ull | (uint64_t)i))
				DIE("iter %d SEND: receive wr_id 0x%llx, expected 0x%llx", i,
				    (unsigned long long)wc.wr_id, 0x30000000ull |
				    (unsigned long long)i);
			if (wc.byte_len != op.size)
				DIE("iter %d SEND: byte_len %u, expected %zu (recv capacity %zu in %d sge)",
				    i, wc.byte_len, op.size, cap, nr);
			if (wc.opcode != IBV_WC_RECV)
				DIE("iter %d SEND: wc opcode %d, expected IBV_WC_RECV", i,
				    wc.opcode);
		}
		struct msg *d = recv_ctrl(M_DONE);

		if (d->iter != (uint32_t)i)
			DIE("DONE for iter %u, expected %d", d->iter, i);
		int bad = buf_verify(&data, "server region", i, op_name[op.type], op.size, op.roff);

		bad |= buf_verify(&rbuf, "server receive buffer", i, op_name[op.type], op.size, 0);
		if (bad) {
			struct msg f = { .type = M_FIN, .status = 1 };

			snprintf(f.text, sizeof(f.text),
				 "server data mismatch at iter %d op %s size %zu offset %zu",
				 i, op_name[op.type], op.size, op.roff);
			send_ctrl(&f, 1);
			drain_sends();
			return 1;
		}
		if (o.verbose)
			printf("# iter %d %s size %zu roff %zu ok\n", i, op_name[op.type], op.size,
			       op.roff);
	}
	struct msg f = { .type = M_FIN };

	send_ctrl(&f, 1);
	drain_sends();
	/* The side whose last send just completed closes: the client's last
	 * send (DONE) completed a round trip ago. A peer that completes a
	 * send only some time after the bytes left may report a delivered
	 * message in error if the close overtakes it (the kernel's siw did
	 * once when the client closed first).
	 */
	rdma_disconnect(id);
	ev = cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED, o.run.timeout);
	if (ev)
		rdma_ack_cm_event(ev);
	printf("%s - server: %d iterations verified (seed %llu)\n", t_failures ? "FAIL" : "ok",
	       o.iters, (unsigned long long)o.run.seed);
	return t_failures ? 1 : 0;
}

/* server side of the error modes: expose a region, wait for the QP to die */
static int server_error_mode(int kind)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_async_event aev;
	struct ibv_wc wc;
	const char *how = NULL;
	int inv_seen = 0;

	if (kind == E_NO_REMOTE_WRITE)
		acc &= ~IBV_ACCESS_REMOTE_WRITE;
	buf_alloc(&data, 64 * 1024, acc);
	if (kind != E_SEND_NO_RECV)
		post_ctrl_recv(); /* consumed by SEND_WITH_INV in 'invalidated' */
	struct msg r = { .iter = 0 };

	server_send_ready(&r);
	/* wait: recv flush, async QP error, or disconnect */
	double end = now_s() + o.run.timeout;

	while (!how && now_s() < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n == 1) {
			if (wc.opcode & IBV_WC_RECV || wc.status != IBV_WC_SUCCESS) {
				if (wc.status == IBV_WC_SUCCESS && kind == E_INVALIDATED) {
					int inv = !!(wc.wc_flags & IBV_WC_WITH_INV);

					NOTE("server: receive completed, WITH_INV=%d invalidated_rkey 0x%x (region rkey 0x%x)",
					     inv, inv ? wc.invalidated_rkey : 0, data.mr->rkey);
					if (inv && wc.invalidated_rkey != data.mr->rkey)
						FAIL("server: invalidated rkey 0x%x != region rkey 0x%x",
						     wc.invalidated_rkey, data.mr->rkey);
					/*
					 * A receive completing without an error
					 * means the STag was invalidated (siw
					 * refuses one it cannot invalidate with
					 * IBV_WC_REM_INV_REQ_ERR); libsiw never
					 * reports IBV_WC_WITH_INV (its copy_cqe
					 * clears wc_flags)
					 */
					inv_seen = 1;
					continue;
				}
				if (wc.status == IBV_WC_SUCCESS)
					FAIL("server: unexpected successful completion opcode %d",
					     wc.opcode);
				else
					how = wc.status == IBV_WC_WR_FLUSH_ERR ?
					      "receive flushed" : "receive error";
				NOTE("server: completion status %s", wc_status_name(wc.status));
			}
			continue;
		}
		if (async_wait(id->verbs, &aev, 0.01)) {
			NOTE("server: async event %s", ibv_event_type_str(aev.event_type));
			if (aev.event_type == IBV_EVENT_QP_FATAL ||
			    aev.event_type == IBV_EVENT_QP_REQ_ERR ||
			    aev.event_type == IBV_EVENT_QP_ACCESS_ERR)
				how = "async QP error event";
		}
		struct rdma_cm_event *ev = cm_wait(ch, 0.01);

		if (ev) {
			NOTE("server: cm event %s", rdma_event_str(ev->event));
			if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
				how = "disconnected";
			rdma_ack_cm_event(ev);
		}
	}
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;

	if (!ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qia))
		NOTE("server: QP state now %d (ERR=%d)", qa.qp_state, IBV_QPS_ERR);
	CHECK(how, "server (%s): QP went to error: %s", err_table[kind].name,
	      how ? how : "no sign within timeout");
	if (kind == E_INVALIDATED && o.require_inv)
		CHECK(inv_seen, "server (%s): the Send with Invalidate completed without an invalidation error (the Write after it, refused, and the unchanged region prove the invalidation)",
		      err_table[kind].name);
	/* region: nothing may have changed, except for oob-write the in-MR
	 * tail [mrlen-32, mrlen) may hold the (legal part of the) pattern
	 */
	if (kind == E_OOB_WRITE) {
		size_t off = data.mrlen - 32;
		uint8_t *m = MRBASE(&data) + off;

		for (size_t k = 0; k < 32; k++)
			if (m[k] == pat_byte(0xbadull, k))
				data.shadow[GUARD + off + k] = m[k];
	}
	if (!buf_verify(&data, "server region", 0, err_table[kind].name, 0, 0))
		OK("server (%s): region and guards unchanged", err_table[kind].name);
	rdma_disconnect(id);
	return t_failures ? 1 : 0;
}

/* ---------------------------------------------------------------- client */

static void client_connect(void)
{
	struct rdma_addrinfo hints = { 0 }, *res;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *cid;
	char ps[16];

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &cid, NULL, RDMA_PS_TCP))
		DIE("rdma_create_id: %s", strerror(errno));
	snprintf(ps, sizeof(ps), "%d", o.port);
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(o.host, ps, &hints, &res))
		DIE("rdma_getaddrinfo(%s): %s", o.host, strerror(errno));
	if (rdma_resolve_addr(cid, o.bind ? NULL : res->ai_src_addr, res->ai_dst_addr, 2000))
		DIE("rdma_resolve_addr: %s", strerror(errno));
	rdma_freeaddrinfo(res);
	ev = cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, o.run.timeout);
	if (!ev)
		DIE("address resolution failed");
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(cid, 2000))
		DIE("rdma_resolve_route: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, o.run.timeout);
	if (!ev)
		DIE("route resolution failed");
	rdma_ack_cm_event(ev);
	setup_qp(cid);
	post_ctrl_recv();
	post_ctrl_recv();
	struct rdma_conn_param cp = { .responder_resources = 8, .initiator_depth = 8,
				      .retry_count = 7,
				      .rnr_retry_count = 0 };
	if (cp.responder_resources > dattr.max_qp_rd_atom)
		cp.responder_resources = dattr.max_qp_rd_atom;
	if (cp.initiator_depth > dattr.max_qp_init_rd_atom)
		cp.initiator_depth = dattr.max_qp_init_rd_atom;
	if (rdma_connect(cid, &cp))
		DIE("rdma_connect: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, o.run.timeout);
	if (!ev)
		DIE("connection to %s:%d not established", o.host, o.port);
	rdma_ack_cm_event(ev);
}

/* post one RDMA op against the server region; returns wr posted */
static void post_data_op(int type, struct ibv_sge *sg, int n, uint64_t raddr, uint32_t rkey,
			 unsigned int flags, uint64_t wr_id)
{
	static const enum ibv_wr_opcode opc[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE,
						  IBV_WR_RDMA_READ };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sg, .num_sge = n,
				  .opcode = opc[type], .send_flags = flags };
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	post_send_wr(&wr);
}

/* wait for completion of the WR with wr_id (error completions returned) */
static int wait_wr(uint64_t wr_id, struct ibv_wc *out, double timeout)
{
	double end = now_s() + timeout;

	for (;;) {
		int r = poll_one(cq, out, end - now_s());

		if (r <= 0)
			return -1;
		if (out->wr_id == wr_id)
			return 0;
		NOTE("completion wr_id 0x%llx status %s (skipped)", (unsigned long long)out->wr_id,
		     wc_status_name(out->status));
	}
}

static int client_error_mode(struct msg *rdy)
{
	int kind = o.err;
	const struct err_spec *es = &err_table[kind];
	struct ibv_sge sg = { (uintptr_t)MRBASE(&data), 64, data.mr->lkey };
	struct ibv_wc wc;
	uint64_t raddr = rdy->addr;
	uint32_t rkey = rdy->rkey;
	int type = OP_WRITE;

	pat_fill(MRBASE(&data), 0xbadull, 0, 64);
	memcpy(data.shadow + GUARD, MRBASE(&data), 64);
	switch (kind) {
	case E_BAD_RKEY:
		rkey = rkey + 1;
		break;
	case E_BAD_RKEY_READ:
		rkey = rkey + 1;
		type = OP_READ;
		break;
	case E_OOB_WRITE:
		raddr = rdy->addr + rdy->len - 32;
		break;
	case E_OOB_READ:
		raddr = rdy->addr + rdy->len - 32;
		type = OP_READ;
		break;
	case E_NO_REMOTE_WRITE:
		break;
	case E_SEND_NO_RECV:
		type = OP_SEND;
		break;
	case E_INVALIDATED: {
		struct ibv_send_wr wr = { .wr_id = 0x4001, .opcode = IBV_WR_SEND_WITH_INV,
					  .send_flags = IBV_SEND_SIGNALED };
		wr.invalidate_rkey = rkey;
		/*
		 * libsiw (rdma-core providers/siw/siw.c, push_send_wqe) takes
		 * the STag to invalidate from wr.rdma.rkey, not from
		 * invalidate_rkey; other providers ignore rdma.rkey on a Send
		 */
		wr.wr.rdma.rkey = rkey;
		struct ibv_send_wr *bad;
		int rc = ibv_post_send(id->qp, &wr, &bad);

		if (rc && o.require_inv) {
			FAIL("invalidated: SEND_WITH_INV refused at post (%s) with --require-inv",
			     strerror(rc));
			return 1;
		}
		if (rc) {
			printf("skip - SEND_WITH_INV not supported by provider: %s\n",
			       strerror(rc));
			return 77;
		}
		if (wait_wr(0x4001, &wc, o.run.timeout))
			DIE("timeout waiting for SEND_WITH_INV completion");
		NOTE("SEND_WITH_INV completed: %s", wc_status_name(wc.status));
		if (wc.status != IBV_WC_SUCCESS && o.require_inv) {
			FAIL("invalidated: SEND_WITH_INV completed %s; with --require-inv the provider must invalidate",
			     wc_status_name(wc.status));
			return 1;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			OK("invalidated: provider refused to invalidate a plain MR (%s): accepted",
			   wc_status_name(wc.status));
			return t_failures ? 1 : 0;
		}
		usleep(200000);
		break;
	}
	}
	printf("# client: error kind %s: %s of 64 bytes to raddr 0x%llx (region 0x%llx+%llu) rkey 0x%x (region rkey 0x%x)\n",
	       es->name, op_name[type], (unsigned long long)raddr, (unsigned long long)rdy->addr,
	       (unsigned long long)rdy->len, rkey, rdy->rkey);
	if (type == OP_READ) { /* poison the sink so any stray placement shows */
		pat_fill(MRBASE(&data), 0x5151ull, 0, 64);
		memcpy(data.shadow + GUARD, MRBASE(&data), 64);
	}
	post_data_op(type, &sg, 1, raddr, rkey, IBV_SEND_SIGNALED, 0x4002);
	/* 'invalidated' on RoCE: the responder may have died silently after
	 * refusing the invalidation; the WRITE then ends by retry exhaustion,
	 * which takes longer
	 */
	if (wait_wr(0x4002, &wc, kind == E_INVALIDATED ? 3 * o.run.timeout : o.run.timeout)) {
		FAIL("%s: no completion for the faulty %s within %.0fs", es->name, op_name[type],
		     o.run.timeout);
		return 1;
	}
	unsigned int bit = S(wc.status);

	if (bit & es->preferred)
		OK("%s: faulty %s completed with %s (preferred)", es->name, op_name[type],
		   wc_status_name(wc.status));
	else if (bit & es->accepted)
		OK("%s: faulty %s completed with %s (accepted, not preferred)", es->name,
		   op_name[type],
		   wc_status_name(wc.status));
	else
		FAIL("%s: faulty %s completed with %s (%d): not in the accepted set", es->name,
		     op_name[type], wc_status_name(wc.status), wc.status);
	/* probe: a valid READ must not succeed any more (QP in error) */
	if (wc.status == IBV_WC_SUCCESS)
		usleep(300000);
	struct ibv_sge psg = { (uintptr_t)MRBASE(&data) + 1024, 8, data.mr->lkey };
	struct ibv_send_wr pwr = { .wr_id = 0x4003, .sg_list = &psg, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
	pwr.wr.rdma.remote_addr = rdy->addr;
	pwr.wr.rdma.rkey = rdy->rkey;
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(id->qp, &pwr, &bad);

	if (rc) {
		OK("%s: QP in error: probe post_send refused (%s)", es->name, strerror(rc));
	} else if (wait_wr(0x4003, &wc, o.run.timeout)) {
		/* a WR posted to a QP already in ERR should be flushed; the
		 * kernel's siw does not complete it at all: accept that when
		 * the QP reports ERR, and say so
		 */
		struct ibv_qp_attr pa;
		struct ibv_qp_init_attr pia;

		if (!ibv_query_qp(id->qp, &pa, IBV_QP_STATE, &pia) && pa.qp_state == IBV_QPS_ERR)
			OK("%s: QP in error (state ERR); note: the probe WR posted after the error was never flushed",
			   es->name);
		else
			FAIL("%s: probe READ after the fault never completed and the QP is not in ERR (hang)",
			     es->name);
	} else if (wc.status == IBV_WC_SUCCESS) {
		FAIL("%s: probe READ after the fault succeeded: QP did not go to error", es->name);
	} else {
		OK("%s: QP in error: probe READ completed with %s", es->name,
		   wc_status_name(wc.status));
	}
	/* the probe may have been flushed before it ran: its sink must be untouched
	 * unless it succeeded (then it holds region bytes; already a FAIL)
	 */
	if (!buf_verify(&data, "client buffer", 0, es->name, 64, 0))
		OK("%s: client buffer and guards unchanged", es->name);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;

	if (!ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qia))
		CHECK(qa.qp_state == IBV_QPS_ERR, "%s: client QP state is ERR (%d)", es->name,
		      qa.qp_state);
	rdma_disconnect(id);
	return t_failures ? 1 : 0;
}

static int run_client(void)
{
	client_connect();
	struct msg h = { .type = M_HELLO, .seed = o.run.seed, .iters = (uint32_t)o.iters,
			 .max_size = o.max_size, .errkind = (uint32_t)o.err, .srq = (uint32_t)o.srq,
			 .no_empty_read = (uint32_t)o.no_empty_read };
	printf("# client: seed %llu iters %d max_size %zu error %s\n",
	       (unsigned long long)o.run.seed, o.iters, o.max_size, err_table[o.err].name);
	fflush(stdout);
	send_ctrl(&h, 1);
	buf_alloc(&data, o.err ? 64 * 1024 : o.max_size + SLACK, IBV_ACCESS_LOCAL_WRITE);
	if (o.srq) {
		struct msg *b = recv_ctrl(M_BURST);
		uint32_t n = b->count;

		post_ctrl_recv();
		struct msg m = { .type = M_BURST };

		for (uint32_t k = 0; k < n; k++)
			send_ctrl(&m, 0);
		recv_ctrl(M_CONT);
		post_ctrl_recv();
		for (uint32_t k = 0; k < n; k++)
			send_ctrl(&m, 0);
	}
	int done = 0;

	for (int i = 0;; i++) {
		struct msg *r = recv_ctrl(M_READY);

		if (r->type == M_FIN) {
			if (r->status) {
				printf("FAIL - server reported: %s\n", r->text);
				return 1;
			}
			break;
		}
		struct msg rdy = *r;

		post_ctrl_recv();
		if (o.err)
			return client_error_mode(&rdy);
		if (rdy.iter != (uint32_t)i)
			DIE("READY for iter %u, expected %d", rdy.iter, i);
		int type = (int)rdy.optype;
		size_t size = rdy.size;
		uint64_t ls = o.run.seed ^ (0x3333ull * (uint64_t)(i + 1));
		struct piece p[MAX_SGE_USE];
		struct ibv_sge sg[MAX_SGE_USE];
		int maxn = type == OP_READ ? max_rd_sge : max_send_sge;
		int n = gen_layout(&ls, size, 0, maxn, data.mrlen, p);
		size_t k0 = 0;

		for (int k = 0; k < n; k++) {
			uint8_t *a = MRBASE(&data) + p[k].off;

			if (type == OP_READ) {
				pat_fill(a, rdy.key ^ 0xfeedull, p[k].off, p[k].len); /* poison */
				memcpy(data.shadow + GUARD + p[k].off, a, p[k].len);
				pat_fill(data.shadow + GUARD + p[k].off, rdy.key, k0, p[k].len);
			} else {
				pat_fill(a, rdy.key, k0, p[k].len);
				memcpy(data.shadow + GUARD + p[k].off, a, p[k].len);
			}
			k0 += p[k].len;
			sg[k].addr = (uintptr_t)a;
			sg[k].length = (uint32_t)p[k].len;
			sg[k].lkey = data.mr->lkey;
		}
		snprintf(t_context, sizeof(t_context),
			 "client iter %d %s size %zu n_sge %d roff %llu", i,
			 op_name[type], size, n, (unsigned long long)rdy.roff);
		unsigned int flags = 0;
		int inl = type != OP_READ && size <= (size_t)max_inline && rnd_range(&ls, 0, 1);

		if (inl)
			flags |= IBV_SEND_INLINE;
		/* IBV_SEND_FENCE on SEND/WRITE (wait for prior READs). Not on
		 * READs by default: the kernel's siw refuses a fenced READ
		 * with EINVAL ("A READ cannot be fenced") and breaks the QP;
		 * --fence-reads enables them (rxe accepts them).
		 */
		if (rnd_range(&ls, 0, 3) == 0 && (type != OP_READ || o.fence_reads))
			flags |= IBV_SEND_FENCE;
		if (rnd_range(&ls, 0, 2) == 0)
			flags |= IBV_SEND_SIGNALED;
		post_data_op(type, sg, n, rdy.addr + rdy.roff, rdy.rkey, flags,
			     0x50000000ull | (uint64_t)i);
		if (inl) { /* inline data was copied at post time: scribble the source */
			for (int k = 0; k < n; k++) {
				memset(MRBASE(&data) + p[k].off, 0xA5, p[k].len);
				memset(data.shadow + GUARD + p[k].off, 0xA5, p[k].len);
			}
		}
		struct msg d = { .type = M_DONE, .iter = (uint32_t)i };
		int fence = type == OP_READ || rnd_range(&ls, 0, 3) == 0;
		/* DONE after a READ: fenced + signaled, so that its completion
		 * implies the READ data is placed
		 */
		ctrl_send[send_slot % NCTRL] = d;
		{
			int s = send_slot++ % NCTRL;

			ctrl_send[s].magic = MAGIC;
			msg_wire(&ctrl_send[s]);
			struct ibv_sge csg = { (uintptr_t)&ctrl_send[s], sizeof(struct msg),
					       ctrl_mr->lkey };
			struct ibv_send_wr wr = { .wr_id = 0x20000 | s, .sg_list = &csg,
						  .num_sge = 1,
						  .opcode = IBV_WR_SEND,
						  .send_flags = (fence ? IBV_SEND_FENCE : 0) |
							(type == OP_READ ? IBV_SEND_SIGNALED : 0) };
			post_send_wr(&wr);
		}
		if (type == OP_READ)
			drain_sends();
		if (buf_verify(&data, "client buffer", i, op_name[type], size, rdy.roff))
			return 1;
		if (o.verbose)
			printf("# iter %d %s size %zu n_sge %d%s%s ok\n", i, op_name[type], size, n,
			       inl ? " inline" : "", flags & IBV_SEND_FENCE ? " fence" : "");
		done++;
	}
	drain_sends();
	/* the server closes once its FIN has completed (see run_server) */
	struct rdma_cm_event *ev = cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED, o.run.timeout);

	if (ev)
		rdma_ack_cm_event(ev);
	else
		NOTE("server did not close the connection");
	rdma_disconnect(id);
	printf("%s - client: %d iterations verified (seed %llu, max size %zu)\n",
	       t_failures ? "FAIL" : "ok", done, (unsigned long long)o.run.seed, o.max_size);
	return t_failures ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: siw_datacheck -s [-b bindaddr] [-p port] [--srq] [-t timeout] [-T total]\n"
		"       siw_datacheck -c host [-p port] [-n iters] [-S seed] [-m maxsize]\n"
		"                     [--error=KIND] [--srq] [--fence-reads] [--no-empty-sge]\n"
		"                     [--no-empty-read] [--require-inv]\n"
		"                     [-t timeout] [-v]\n"
		"error kinds:");
	for (int k = 1; k < E_NUM; k++)
		fprintf(stderr, " %s", err_table[k].name);
	fprintf(stderr, "\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "error", required_argument, 0, 'E' }, { "srq", no_argument, 0, 'Q' },
		{ "seed", required_argument, 0, 'S' }, { "max-size", required_argument, 0, 'm' },
		{ "fence-reads", no_argument, 0, 'F' },
		{ "no-empty-sge", no_argument, 0, 'Z' },
		{ "no-empty-read", no_argument, 0, 'R' },
		{ "require-inv", no_argument, 0, 'I' },
		{ 0 }
	};
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "sc:b:p:n:S:m:t:T:vh", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o.server = 1;
			break;
		case 'c':
			o.host = optarg;
			break;
		case 'b':
			o.bind = optarg;
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'n':
			o.iters = atoi(optarg);
			break;
		case 'm':
			o.max_size = strtoull(optarg, NULL, 0);
			break;
		case 'v':
			o.verbose = 1;
			break;
		case 'Q':
			o.srq = 1;
			break;
		case 'F':
			o.fence_reads = 1;
			break;
		case 'Z':
			o.no_empty_sge = 1;
			break;
		case 'R':
			o.no_empty_read = 1;
			break;
		case 'I':
			o.require_inv = 1;
			break;
		case 'E':
			for (o.err = 1; o.err < E_NUM; o.err++)
				if (!strcmp(optarg, err_table[o.err].name))
					break;
			if (o.err == E_NUM)
				usage();
			break;
		default:
			if (!t_run_opt(&o.run, c, optarg))
				usage();
		}
	}
	if (o.server == !!o.host)
		usage();
	if (o.max_size > (1u << 30))
		DIE("max size too large");
	if (!o.run.seed_given) {
		uint64_t t = (uint64_t)now_s() * 1000003u ^ (uint64_t)getpid();

		o.run.seed = sm64(&t) % 1000000000ull;
	}
	/* global bound against hangs (the harness has its own timeout too) */
	t_alarm(o.run.total, "FAIL - global timeout (alarm) expired: hang\n");
	return o.server ? run_server() : run_client();
}
