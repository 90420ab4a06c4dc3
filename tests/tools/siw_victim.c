// SPDX-License-Identifier: GPL-2.0
/*
 * siw_victim: the RDMA end a hostile wire peer (siw_wirepeer.py) attacks.
 *
 *   siw_victim listen  [opts] ADDR:PORT   rdma_cm listener, accepts every
 *                                         request (any number at once)
 *   siw_victim connect [opts] ADDR:PORT   connects -n times, one after the
 *                                         other, to a peer that listens
 * opts: -t SECS  whole run (default 120)   -n N  connections (connect)
 *       -w SECS  one connection's limit (connect, default 20)
 *       -i IRD   responder resources offered (default 4)
 *       -g FILE  connect: start connection k only once FILE holds a number
 *                >= k (the peer's go-ahead, so no request waits in its
 *                backlog while it still checks the previous case)
 *       -r BYTES once connected, post RDMA Reads of BYTES each from the
 *                peer: Read k (k = 0, 1, ..; wr_id 100 + k) from STag 0xabc,
 *                TO 0x1000 * (k + 1) into the MR's last bytes (Read 0) or
 *                the BYTES before those of Read k - 1. One Read per
 *                connection, unless the go-ahead file (-g) says more: its
 *                line "K [READS]" lets connection K start and post READS
 *                Reads (at most 2, the ORD the victim asks for)
 *
 * Per connection: a target MR (remote write/read) placed unaligned between
 * guard bytes, a second MR in another PD, a local-only MR, and receive
 * buffers each followed by guard bytes, all prefilled with known bytes.
 * Its private data (accept or connect) tells the peer where they are:
 *   "VICT" rkey addr(8) len | pd2 rkey | local rkey | recv_len nrecv conn_id
 * (big endian). Everything it sees is printed as one line:
 *   CONN id qpn=.. | EV id EVENT status=S | WC id status=.. opcode=.. len=..
 *   wr=WR_ID [data=hex] | ASYNC id EVENT | END id guard=ok|bad@WHERE+OFF
 *   mr=same|changed fnv=HEX wc_ok=N wc_err=N async=N
 * A connection ends at DISCONNECTED (or an error event, or -w); its CQ is
 * drained, the guards checked, END printed and everything destroyed.
 * SIGINT/SIGTERM (the harness, once the peer is done) or -t: every open
 * connection ends as above, then "EXIT bad_guard=N conns=N why=WHY".
 * Exit 0 unless a guard was hit or setup failed.
 */
#include <signal.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <poll.h>
#include <fcntl.h>
#include <getopt.h>
#include <arpa/inet.h>
#include "common.h"

#define GUARD		4196	/* not a page multiple: guards share pages */
#define MR_LEN		(64 * 1024 - 200)
#define MR2_LEN		4096
#define NRECV		4
#define RECV_LEN	1024
#define RGUARD		64
#define GBYTE		0x5a
#define MAXC		64

struct conn {
	int id;
	struct rdma_cm_id *cm;
	struct ibv_cq *cq;
	struct ibv_pd *pd2;
	uint8_t *buf, *buf2, *buf3, *rbuf;
	struct ibv_mr *mr, *mr2, *mr3, *rmr;
	int established, closing, dead_ev;
	double close_at, start;
	int wc_ok, wc_err, async;
	int nreads;		/* RDMA Reads to post once established */
};

static struct conn *conns[MAXC];
static struct ibv_pd *pd;
static struct ibv_context *ctx;
static int next_id, bad_guard, ird = 4;
static unsigned int read_len;	/* -r: post RDMA Reads once connected */
static const char *gofile;
static int next_reads = 1;	/* Reads of the connection started next */
static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

static uint8_t init_byte(size_t i, int which)
{
	return (uint8_t)(i * 7 + 3 + which * 101);
}

static void fill(uint8_t *p, size_t n, int which)
{
	for (size_t i = 0; i < n; i++)
		p[i] = init_byte(i, which);
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* first non-guard byte in [p, p+n), or -1 */
static long guard_hit(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != GBYTE)
			return (long)i;
	return -1;
}

static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static uint8_t *guarded(size_t len)
{
	uint8_t *p = malloc(len + 2 * GUARD);

	if (!p)
		DIE("malloc");
	memset(p, GBYTE, len + 2 * GUARD);
	return p;
}

static struct conn *conn_new(struct rdma_cm_id *cm)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int i, slot;

	for (slot = 0; slot < MAXC && conns[slot]; slot++)
		;
	if (!c || slot == MAXC) {
		out("# too many connections");
		free(c);
		return NULL;
	}
	if (!ctx) {
		ctx = cm->verbs;
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			DIE("ibv_alloc_pd: %s", strerror(errno));
		fcntl(ctx->async_fd, F_SETFL,
		      fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	}
	c->id = next_id++;
	c->nreads = next_reads;
	c->start = now_s();
	c->cm = cm;
	cm->context = c;
	c->buf = guarded(MR_LEN);
	fill(c->buf + GUARD, MR_LEN, 0);
	c->buf2 = guarded(MR2_LEN);
	fill(c->buf2 + GUARD, MR2_LEN, 1);
	c->buf3 = guarded(MR2_LEN);
	fill(c->buf3 + GUARD, MR2_LEN, 2);
	c->rbuf = guarded(NRECV * (RECV_LEN + RGUARD));
	for (i = 0; i < NRECV; i++)
		fill(c->rbuf + GUARD + i * (RECV_LEN + RGUARD), RECV_LEN, 3);
	c->pd2 = ibv_alloc_pd(ctx);
	c->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!c->pd2 || !c->cq)
		DIE("pd2/cq: %s", strerror(errno));
	c->mr = ibv_reg_mr(pd, c->buf + GUARD, MR_LEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	c->mr2 = ibv_reg_mr(c->pd2, c->buf2 + GUARD, MR2_LEN,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ);
	c->mr3 = ibv_reg_mr(pd, c->buf3 + GUARD, MR2_LEN, IBV_ACCESS_LOCAL_WRITE);
	c->rmr = ibv_reg_mr(pd, c->rbuf + GUARD, NRECV * (RECV_LEN + RGUARD),
			    IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr || !c->mr2 || !c->mr3 || !c->rmr)
		DIE("ibv_reg_mr: %s", strerror(errno));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (rdma_create_qp(cm, pd, &qa))
		DIE("rdma_create_qp: %s", strerror(errno));
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)c->rbuf + GUARD + i * (RECV_LEN + RGUARD),
			.length = RECV_LEN, .lkey = c->rmr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(cm->qp, &wr, &bad))
			DIE("ibv_post_recv: %s", strerror(errno));
	}
	conns[slot] = c;
	out("CONN %d qpn=%u rkey=0x%08x addr=0x%llx len=%u rkey2=0x%08x rkey3=0x%08x",
	    c->id, cm->qp->qp_num, c->mr->rkey,
	    (unsigned long long)(uintptr_t)(c->buf + GUARD), MR_LEN,
	    c->mr2->rkey, c->mr3->rkey);
	return c;
}

/* private data telling the peer where the buffers are */
static void conn_pdata(struct conn *c, uint8_t pdata[36])
{
	uint32_t w[9];
	uint64_t a = (uintptr_t)(c->buf + GUARD);

	w[0] = htonl(0x56494354);	/* "VICT" */
	w[1] = htonl(c->mr->rkey);
	w[2] = htonl((uint32_t)(a >> 32));
	w[3] = htonl((uint32_t)a);
	w[4] = htonl(MR_LEN);
	w[5] = htonl(c->mr2->rkey);
	w[6] = htonl(c->mr3->rkey);
	w[7] = htonl(RECV_LEN);
	w[8] = htonl((NRECV << 16) | (c->id & 0xffff));
	memcpy(pdata, w, sizeof(w));
}

static void drain_cq(struct conn *c)
{
	struct ibv_wc wc[8];
	int n, i;

	while ((n = ibv_poll_cq(c->cq, 8, wc)) > 0) {
		for (i = 0; i < n; i++) {
			char hex[80] = "";

			if (wc[i].status == IBV_WC_SUCCESS) {
				c->wc_ok++;
				if (wc[i].opcode == IBV_WC_RECV &&
				    wc[i].wr_id < NRECV) {
					const uint8_t *p = c->rbuf + GUARD +
						wc[i].wr_id * (RECV_LEN + RGUARD);
					unsigned int k, m = wc[i].byte_len;

					if (m > 32)
						m = 32;
					for (k = 0; k < m; k++)
						sprintf(hex + 2 * k, "%02x", p[k]);
				}
			} else {
				c->wc_err++;
			}
			out("WC %d status=%s opcode=%d len=%u wr=%llu%s%s",
			    c->id, ibv_wc_status_str(wc[i].status),
			    wc[i].opcode, wc[i].byte_len,
			    (unsigned long long)wc[i].wr_id,
			    hex[0] ? " data=" : "", hex);
		}
	}
}

static void conn_end(int slot)
{
	struct conn *c = conns[slot];
	char where[64] = "ok";
	long off;
	int i;
	uint64_t h;
	int changed;

	drain_cq(c);
	{
		const struct {
			const uint8_t *p;
			size_t len;
			const char *name;
		} g[] = {
			{ c->buf, GUARD, "mr-before" },
			{ c->buf + GUARD + MR_LEN, GUARD, "mr-after" },
			{ c->buf2, GUARD, "mr2-guard" },
			{ c->buf2 + GUARD + MR2_LEN, GUARD, "mr2-guard" },
			{ c->buf3, GUARD, "mr3-guard" },
			{ c->buf3 + GUARD + MR2_LEN, GUARD, "mr3-guard" },
			{ c->rbuf, GUARD, "recv-before" },
		};

		for (i = 0; i < (int)ARRAY_SIZE(g); i++) {
			off = guard_hit(g[i].p, g[i].len);
			if (off >= 0) {
				snprintf(where, sizeof(where), "bad@%s+%ld",
					 g[i].name, off);
				break;
			}
		}
	}
	for (i = 0; i < NRECV && !strcmp(where, "ok"); i++) {
		const uint8_t *g = c->rbuf + GUARD + i * (RECV_LEN + RGUARD) +
				   RECV_LEN;

		off = guard_hit(g, i == NRECV - 1 ? GUARD : RGUARD);
		if (off >= 0)
			snprintf(where, sizeof(where), "bad@recv%d-after+%ld",
				 i, off);
	}
	/* MRs of another PD and without remote rights never change */
	for (i = 0; i < MR2_LEN && !strcmp(where, "ok"); i++) {
		if (c->buf2[GUARD + i] != init_byte(i, 1))
			snprintf(where, sizeof(where), "bad@mr2+%d", i);
		else if (c->buf3[GUARD + i] != init_byte(i, 2))
			snprintf(where, sizeof(where), "bad@mr3+%d", i);
	}
	h = fnv(c->buf + GUARD, MR_LEN);
	changed = 0;
	for (i = 0; i < MR_LEN && !changed; i++)
		changed = c->buf[GUARD + i] != init_byte(i, 0);
	if (strcmp(where, "ok"))
		bad_guard++;
	out("END %d guard=%s mr=%s fnv=%016llx wc_ok=%d wc_err=%d async=%d",
	    c->id, where, changed ? "changed" : "same",
	    (unsigned long long)h, c->wc_ok, c->wc_err, c->async);

	if (c->cm->qp)
		rdma_destroy_qp(c->cm);
	rdma_destroy_id(c->cm);
	ibv_dereg_mr(c->mr);
	ibv_dereg_mr(c->mr2);
	ibv_dereg_mr(c->mr3);
	ibv_dereg_mr(c->rmr);
	ibv_destroy_cq(c->cq);
	ibv_dealloc_pd(c->pd2);
	free(c->buf);
	free(c->buf2);
	free(c->buf3);
	free(c->rbuf);
	free(c);
	conns[slot] = NULL;
}

static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	c->close_at = now_s() + 0.3;	/* flushes still to come */
	if (c->established)
		rdma_disconnect(c->cm);
}

static void on_async(void)
{
	struct ibv_async_event ev;
	int i;

	if (!ctx)
		return;
	while (!ibv_get_async_event(ctx, &ev)) {
		int id = -1;

		for (i = 0; i < MAXC; i++) {
			if (conns[i] && conns[i]->cm->qp &&
			    ev.element.qp == conns[i]->cm->qp) {
				conns[i]->async++;
				id = conns[i]->id;
			}
		}
		out("ASYNC %d %s", id, ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

static struct rdma_event_channel *ch;

/* the peer's go-ahead "K [READS]": K, and READS into *reads (1 if absent) */
static int go_count(int *reads)
{
	FILE *f = fopen(gofile, "r");
	int n = 0, r = 1;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 0;
		else if (fscanf(f, "%d", &r) != 1)
			r = 1;
		fclose(f);
	}
	if (r < 1 || r > 2)
		r = 1;
	*reads = r;
	return n;
}

static void start_connect(struct sockaddr_in *sa)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		DIE("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)sa, 2000))
		DIE("rdma_resolve_addr: %s", strerror(errno));
}

static void post_reads(struct conn *c)
{
	int k;

	for (k = 0; k < c->nreads; k++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)c->buf + GUARD + MR_LEN -
				(k + 1) * read_len,
			.length = read_len, .lkey = c->mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 100 + k, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = 0x1000 * (k + 1),
				     .rkey = 0xabc },
		}, *bad;
		int rc = ibv_post_send(c->cm->qp, &wr, &bad);

		if (rc)
			out("# post read %d: %s", k, strerror(rc));
		else
			out("READ %d wr=%d len=%u to=0x%x", c->id, 100 + k,
			    read_len, 0x1000 * (k + 1));
	}
}

static void on_cm(int *live)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { 0 };
	uint8_t pdata[36];

	while (!rdma_get_cm_event(ch, &ev)) {
		struct rdma_cm_id *id = ev->id;
		struct conn *c = id->context;
		int cid = c ? c->id : -1;

		out("EV %d %s status=%d", cid, rdma_event_str(ev->event),
		    ev->status);
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (rdma_resolve_route(id, 2000))
				DIE("rdma_resolve_route: %s", strerror(errno));
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			c = conn_new(id);
			if (!c)
				DIE("no connection slot");
			conn_pdata(c, pdata);
			cp.private_data = pdata;
			cp.private_data_len = sizeof(pdata);
			cp.responder_resources = ird;
			cp.initiator_depth = 2;
			if (rdma_connect(id, &cp)) {
				out("# rdma_connect: %s", strerror(errno));
				conn_close(c);
			}
			break;
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			c = conn_new(id);
			if (!c) {
				rdma_reject(id, NULL, 0);
				break;
			}
			conn_pdata(c, pdata);
			cp.private_data = pdata;
			cp.private_data_len = sizeof(pdata);
			cp.responder_resources = ird;
			cp.initiator_depth = 2;
			if (rdma_accept(id, &cp)) {
				out("ACCEPTFAIL %d %s", c->id, strerror(errno));
				conn_close(c);
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (c)
				c->established = 1;
			if (c && read_len)
				post_reads(c);
			break;
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
			rdma_ack_cm_event(ev);
			rdma_destroy_id(id);
			(*live)--;
			continue;
		default:
			/* DISCONNECTED, REJECTED, CONNECT_ERROR, UNREACHABLE... */
			if (c) {
				c->dead_ev = 1;
				conn_close(c);
			}
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

int main(int argc, char **argv)
{
	double t = 120, w = 20, end, cstart = 0;
	int n = 1, started = 0, live = 0, opt, i, connect_mode, nconn = 0;
	const char *why = "time";
	struct sigaction sa_sig = { .sa_handler = on_signal };
	struct sockaddr_in sa;
	struct rdma_cm_id *lid = NULL;

	while ((opt = getopt(argc, argv, "t:n:w:i:r:g:")) != -1) {
		switch (opt) {
		case 't':
			t = atof(optarg);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'w':
			w = atof(optarg);
			break;
		case 'i':
			ird = atoi(optarg);
			break;
		case 'r':
			read_len = atoi(optarg);
			break;
		case 'g':
			gofile = optarg;
			break;
		default:
			DIE("usage: siw_victim listen|connect [-t s] [-n n] [-w s] [-i ird] ADDR:PORT");
		}
	}
	if (argc - optind != 2)
		DIE("usage: siw_victim listen|connect [opts] ADDR:PORT");
	if (read_len && 2 * read_len > MR_LEN)
		DIE("-r %u: two Reads do not fit the MR (%d bytes)", read_len, MR_LEN);
	sigemptyset(&sa_sig.sa_mask);
	sigaction(SIGINT, &sa_sig, NULL);
	sigaction(SIGTERM, &sa_sig, NULL);
	connect_mode = !strcmp(argv[optind], "connect");
	parse_addr_port(argv[optind + 1], &sa);
	end = now_s() + t;
	ch = rdma_create_event_channel();
	if (!ch)
		DIE("rdma_create_event_channel: %s", strerror(errno));
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	if (!connect_mode) {
		if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(lid, (struct sockaddr *)&sa) ||
		    rdma_listen(lid, 64))
			DIE("listen %s: %s", argv[optind + 1], strerror(errno));
		out("READY listen");
	}
	while (now_s() < end) {
		int reads = 1;

		if (stop_sig) {
			why = stop_sig == SIGINT ? "SIGINT" : "SIGTERM";
			break;
		}
		struct pollfd pf[2] = { { .fd = ch->fd, .events = POLLIN },
					{ .fd = ctx ? ctx->async_fd : -1,
					  .events = POLLIN } };
		int any = 0;

		if (connect_mode) {
			for (i = 0; i < MAXC; i++)
				any |= !!conns[i];
			if (!any && !live && started >= n) {
				why = "done";
				break;
			}
			if (!any && !live && gofile &&
			    go_count(&reads) <= started) {
				/* wait for the peer's go-ahead */
			} else if (!any && !live) {
				next_reads = reads;
				start_connect(&sa);
				started++;
				live = 1;
				cstart = now_s();
			} else if (live && now_s() > cstart + w) {
				for (i = 0; i < MAXC; i++)
					if (conns[i] && !conns[i]->closing) {
						out("TIMEOUT %d", conns[i]->id);
						conn_close(conns[i]);
					}
			}
		}
		poll(pf, 2, 20);
		on_cm(&live);
		on_async();
		for (i = 0; i < MAXC; i++) {
			struct conn *c = conns[i];

			if (!c)
				continue;
			drain_cq(c);
			if (!c->closing && now_s() > c->start + w) {
				out("TIMEOUT %d", c->id);
				conn_close(c);
			}
			if (c->closing && now_s() >= c->close_at) {
				nconn++;
				conn_end(i);
				live = 0;
			}
		}
	}
	for (i = 0; i < MAXC; i++) {
		if (conns[i]) {
			out("TIMEOUT %d", conns[i]->id);
			conn_close(conns[i]);
			nconn++;
			conn_end(i);
		}
	}
	if (lid)
		rdma_destroy_id(lid);
	if (pd)
		ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	out("EXIT bad_guard=%d conns=%d why=%s", bad_guard, nconn, why);
	return bad_guard ? 1 : 0;
}
