// SPDX-License-Identifier: GPL-2.0
/*
 * siw_manyconn: many concurrent RC connections over rdma_cm, every byte
 * verified, with connections closed and opened while the others transfer.
 *
 *   server: siw_manyconn -s -b ADDR -p PORT[,PORT..] -n CONNS [-m REGION]
 *           [-t SECS] [-T SECS]
 *       Listens on every PORT of ADDR and serves exactly CONNS connections
 *       (one thread each), then exits. Prints "# listening" when ready.
 *   client: siw_manyconn -c ADDR -p PORT[,PORT..] -P PROCS -Q QPS [-r ROUNDS]
 *           [-C CHURN] [-J CONNECTS] [-m REGION] [-S SEED] [-t SECS] [-T SECS]
 *       Forks PROCS processes with QPS connections (threads) each;
 *       connection g goes to PORT[g % nports]. At most CONNECTS (8)
 *       connection setups are under way at a time, over all processes: the
 *       server must accept each within the MPA timeout (10 s).
 *
 * Every connection: the server registers a region of REGION bytes (guard
 * pages around it) and sends its address and rkey in the MPA reply's
 * private data. A round: the client RDMA-Writes a pattern into the first
 * half of the region, then Sends a CHECK message carrying a second pattern
 * after its header; the server verifies the Send's length and payload, the
 * unused rest of its receive buffer, and its whole region (guards
 * included) against a shadow copy, then writes a third pattern into the
 * region's second half and answers REPLY; the client RDMA-Reads it into
 * its own buffer and compares its whole buffer with its shadow copy.
 * Patterns are keyed by (seed, connection, life, round): bytes delivered to
 * the wrong connection do not match.
 *
 * Phases: every connection connects and runs round 0; then all PROCS*QPS
 * meet at a barrier (so that many are established at once; the server
 * reports its peak). After it, a quarter of the connections (QPS index
 * % 4 == 3, the churners) close (BYE, disconnect) and reconnect CHURN
 * times, ROUNDS rounds per life, while the others keep running rounds
 * until every churner is done (at least (CHURN + 1) * ROUNDS rounds each).
 * At each churn close and reconnect, every non-churning connection must be
 * established: checked, so that the interleaving is a fact, not a hope.
 *
 * Output: "ok - ..." / "FAIL - ..." lines and one summary line each side:
 *   "ok - client: N connections at the barrier, L lives, R rounds, B bytes verified"
 *   "ok - server: L connections served, peak P concurrent, R rounds, B bytes verified"
 * Exit 0 only when nothing failed.
 */
#include "common.h"
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>
#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sys/resource.h>

#define MC_MAGIC 0x4d434f4eu /* "MCON" */
#define GUARD 4096
#define MAX_PORTS 8
#define QDEPTH 8

enum { T_CHECK = 1, T_REPLY, T_BYE };

struct mc_msg {
	uint32_t magic, type, conn, life;
	uint32_t round, status;
	uint64_t wkey, skey, rkey;
	uint32_t woff, wlen, slen, roff, rlen, pad;
	char text[96];
};

/* MPA private data: client -> server, server -> client */
struct mc_req {
	uint32_t magic, conn, life, pad;
};

struct mc_rep {
	uint32_t magic, rkey;
	uint64_t addr, len;
};

/* counters shared by every process and thread of one side */
struct shared {
	long lives, rounds, bytes, fails;
	long arrived, abort_all, churn_done, steady;
	long active, peak, threads;
	long accept_ms;
	long res_ms, setup_ms, est_ms;	/* client: slowest step of a connect */
	sem_t slots;	/* client: connects that may be under way */
	sem_t gate;	/* client: the barrier opens */
};

static struct {
	int server;
	const char *addr;
	int ports[MAX_PORTS], nports;
	int conns, procs, qps, rounds, churn, inflight;
	size_t region;
	struct t_run run;	/* -S, -t, -T */
} o = { .rounds = 4, .churn = 2, .inflight = 8, .region = 65536,
	.run = { .timeout = 30, .total = 1200 } };

static struct shared *sh;
static int nconn, nchurn; /* client: PROCS * QPS, churners among them */
static double t_start;

static long add(long *p, long v)
{
	return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST);
}

static long get(long *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* CLOCK_REALTIME deadline secs from now, for sem_timedwait */
static struct timespec deadline(unsigned int secs)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	return ts;
}

/* *p = max(*p, v) */
static void set_max(long *p, long v)
{
	long cur = get(p);

	while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_SEQ_CST,
						       __ATOMIC_SEQ_CST))
		;
}

/* one printf per line: threads print concurrently */
#define LOG(...) do { printf(__VA_ARGS__); fflush(stdout); } while (0)

struct conn {
	unsigned int g, life;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *cmr;
	uint8_t *mem, *shadow;	/* GUARD | area | GUARD */
	size_t area;
	struct mc_msg *ctl;	/* [0] send, [1..] receive slots */
	size_t ctl_len;
	uint64_t raddr;		/* client: the server's region */
	uint32_t rkey;
	long rounds, bytes;
	int established;
};

static void cfail(struct conn *c, const char *fmt, ...)
{
	char b[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	add(&sh->fails, 1);
	LOG("FAIL - conn %u life %u: %s\n", c->g, c->life, b);
}

#define AREA(c) ((c)->mem + GUARD)
#define SHADOW(c) ((c)->shadow + GUARD)
/* the server's receive slot: header, then up to region/2 payload bytes */
#define RSLOT_LEN (sizeof(struct mc_msg) + o.region / 2)

static uint64_t key_of(unsigned int g, unsigned int life, unsigned int round, int which)
{
	uint64_t s = o.run.seed ^ ((uint64_t)g << 40) ^ ((uint64_t)life << 24) ^
		     ((uint64_t)round << 4) ^ (uint64_t)which;

	return sm64(&s);
}

/* --------------------------------------------------------------- verbs */

/* wait for one completion (comp channel, poll(2)): 1, 0 timeout, -1 error */
static int cq_wait(struct conn *c, struct ibv_wc *wc, double timeout)
{
	double end = now_s() + timeout;

	for (;;) {
		int n = ibv_poll_cq(c->cq, 1, wc);

		if (n)
			return n < 0 ? -1 : 1;
		if (ibv_req_notify_cq(c->cq, 0))
			return -1;
		n = ibv_poll_cq(c->cq, 1, wc);
		if (n)
			return n < 0 ? -1 : 1;
		double left = end - now_s();

		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = c->cc->fd, .events = POLLIN };

		if (poll(&p, 1, (int)(left * 1000) + 1) > 0) {
			struct ibv_cq *ecq;
			void *ectx;

			if (!ibv_get_cq_event(c->cc, &ecq, &ectx))
				ibv_ack_cq_events(ecq, 1);
		}
	}
}

static int post_recv(struct conn *c, int slot)
{
	struct mc_msg *m = (struct mc_msg *)((uint8_t *)c->ctl + slot * RSLOT_LEN);
	struct ibv_sge sg = { (uintptr_t)m, (uint32_t)RSLOT_LEN, c->cmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sg, .num_sge = 1 }, *bad;

	/* poison: an overrun past the Send's length shows */
	pat_fill((uint8_t *)m, 0xdead0000ull + slot, 0, RSLOT_LEN);
	return ibv_post_recv(c->id->qp, &wr, &bad);
}

static struct mc_msg *rslot(struct conn *c, uint64_t slot)
{
	return (struct mc_msg *)((uint8_t *)c->ctl + slot * RSLOT_LEN);
}

/* PD, CQ, QP, buffers on c->id; area bytes of data buffer */
static int conn_setup(struct conn *c, size_t area, int access)
{
	struct ibv_qp_init_attr qa = { 0 };

	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cc = ibv_create_comp_channel(c->id->verbs);
	if (!c->pd || !c->cc)
		return -1;
	fcntl(c->cc->fd, F_SETFL, fcntl(c->cc->fd, F_GETFL) | O_NONBLOCK);
	c->cq = ibv_create_cq(c->id->verbs, 4 * QDEPTH, NULL, c->cc, 0);
	if (!c->cq)
		return -1;
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.cap.max_send_wr = QDEPTH;
	qa.cap.max_recv_wr = QDEPTH;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->pd, &qa))
		return -1;
	c->area = area;
	c->mem = mmap(NULL, area + 2 * GUARD, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	c->shadow = malloc(area + 2 * GUARD);
	if (c->mem == MAP_FAILED || !c->shadow) {
		c->mem = NULL;
		return -1;
	}
	pat_fill(c->mem, key_of(c->g, c->life, 0, 9), 0, area + 2 * GUARD);
	memcpy(c->shadow, c->mem, area + 2 * GUARD);
	c->mr = ibv_reg_mr(c->pd, AREA(c), area, access);
	c->ctl_len = 3 * RSLOT_LEN;
	c->ctl = aligned_alloc(4096, (c->ctl_len + 4095) & ~(size_t)4095);
	if (!c->mr || !c->ctl)
		return -1;
	memset(c->ctl, 0, c->ctl_len);
	c->cmr = ibv_reg_mr(c->pd, c->ctl, c->ctl_len, IBV_ACCESS_LOCAL_WRITE);
	return c->cmr ? 0 : -1;
}

static void conn_free(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cmr)
		ibv_dereg_mr(c->cmr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
	if (c->mem)
		munmap(c->mem, c->area + 2 * GUARD);
	free(c->shadow);
	free(c->ctl);
	c->id = NULL;
	c->ch = NULL;
	c->pd = NULL;
	c->cc = NULL;
	c->cq = NULL;
	c->mr = NULL;
	c->cmr = NULL;
	c->mem = NULL;
	c->shadow = NULL;
	c->ctl = NULL;
}

/* post a Send of the control message in slot 0 (+ payload SGE) */
static int send_msg(struct conn *c, struct mc_msg *m, uint8_t *pl, uint32_t plen, uint64_t wrid)
{
	struct ibv_sge sg[2] = {
		{ (uintptr_t)c->ctl, sizeof(*m), c->cmr->lkey },
		{ (uintptr_t)pl, plen, c->mr ? c->mr->lkey : 0 },
	};
	struct ibv_send_wr wr = { .wr_id = wrid, .sg_list = sg, .num_sge = plen ? 2 : 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	m->magic = MC_MAGIC;
	*c->ctl = *m;
	return ibv_post_send(c->id->qp, &wr, &bad);
}

/* compare the data buffer (guards included) with its shadow */
static int verify_buf(struct conn *c, const char *what, unsigned int round)
{
	size_t d = first_diff(c->mem, c->shadow, c->area + 2 * GUARD);

	if (d == (size_t)-1)
		return 0;
	long rel = (long)d - GUARD;

	cfail(c, "round %u: %s mismatch at offset %ld (%s): got 0x%02x expected 0x%02x",
	      round, what, rel, rel < 0 || (size_t)rel >= c->area ? "guard, outside the MR" : "inside the MR",
	      c->mem[d], c->shadow[d]);
	return -1;
}

/* wait for the next cm event of type want on c->ch */
static int cm_want(struct conn *c, enum rdma_cm_event_type want, struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev = cm_wait(c->ch, o.run.timeout);

	if (!ev) {
		cfail(c, "no %s within %.0f s", rdma_event_str(want), o.run.timeout);
		return -1;
	}
	if (ev->event != want) {
		cfail(c, "expected %s, got %s (status %d)", rdma_event_str(want),
		      rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
	return 0;
}

/* -------------------------------------------------------------- server */

struct srv_arg {
	struct rdma_cm_id *id;
	struct mc_req req;
	double t0;	/* when the connect request was read */
};

/* verify one CHECK; returns 0 and fills the REPLY's text on failure */
static int srv_check(struct conn *c, struct ibv_wc *wc, struct mc_msg *rep)
{
	struct mc_msg *m = rslot(c, wc->wr_id);
	uint8_t *pl = (uint8_t *)(m + 1);
	size_t half = o.region / 2, d;

	if (wc->byte_len != sizeof(*m) + m->slen || m->slen > half) {
		snprintf(rep->text, sizeof(rep->text), "Send of %u bytes, header says %u + %u",
			 wc->byte_len, (unsigned int)sizeof(*m), m->slen);
		return -1;
	}
	d = pat_check(pl, m->skey, 0, m->slen);
	if (d != (size_t)-1) {
		snprintf(rep->text, sizeof(rep->text), "round %u: Send payload byte %zu wrong",
			 m->round, d);
		return -1;
	}
	d = pat_check(pl + m->slen, 0xdead0000ull + wc->wr_id, sizeof(*m) + m->slen,
		      half - m->slen);
	if (d != (size_t)-1) {
		snprintf(rep->text, sizeof(rep->text),
			 "round %u: receive buffer changed %zu bytes past the Send's end",
			 m->round, d);
		return -1;
	}
	if ((size_t)m->woff + m->wlen > half || (size_t)m->roff + m->rlen > half) {
		snprintf(rep->text, sizeof(rep->text), "bad offsets in CHECK");
		return -1;
	}
	pat_fill(SHADOW(c) + m->woff, m->wkey, 0, m->wlen);
	d = first_diff(c->mem, c->shadow, c->area + 2 * GUARD);
	if (d != (size_t)-1) {
		snprintf(rep->text, sizeof(rep->text),
			 "round %u: region byte at offset %ld is 0x%02x, expected 0x%02x (Write of %u at %u)",
			 m->round, (long)d - GUARD, c->mem[d], c->shadow[d], m->wlen, m->woff);
		return -1;
	}
	pat_fill(AREA(c) + half + m->roff, m->rkey, 0, m->rlen);
	pat_fill(SHADOW(c) + half + m->roff, m->rkey, 0, m->rlen);
	c->bytes += m->wlen + m->slen;
	return 0;
}

static void *srv_thread(void *arg)
{
	struct srv_arg *a = arg;
	struct conn cs = { .g = a->req.conn, .life = a->req.life, .id = a->id }, *c = &cs;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct mc_rep rp = { .magic = MC_MAGIC };
	struct rdma_cm_event *ev;
	int bye = 0, counted = 0;
	double t0 = a->t0;
	long act;

	free(a);
	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_migrate_id(c->id, c->ch)) {
		cfail(c, "event channel / migrate: %s", strerror(errno));
		goto out;
	}
	if (conn_setup(c, o.region, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ)) {
		cfail(c, "server resources: %s", strerror(errno));
		rdma_reject(c->id, NULL, 0);
		goto out;
	}
	if (post_recv(c, 1) || post_recv(c, 2)) {
		cfail(c, "post receive: %s", strerror(errno));
		goto out;
	}
	rp.addr = (uintptr_t)AREA(c);
	rp.len = o.region;
	rp.rkey = c->mr->rkey;
	cp.private_data = &rp;
	cp.private_data_len = sizeof(rp);
	set_max(&sh->accept_ms, (long)((now_s() - t0) * 1000));
	if (rdma_accept(c->id, &cp)) {
		cfail(c, "rdma_accept: %s", strerror(errno));
		goto out;
	}
	if (cm_want(c, RDMA_CM_EVENT_ESTABLISHED, NULL))
		goto out;
	counted = 1;
	act = add(&sh->active, 1);

	set_max(&sh->peak, act);
	while (!bye) {
		struct ibv_wc wc;
		int r = cq_wait(c, &wc, o.run.timeout);

		if (r <= 0) {
			cfail(c, "no message from the client within %.0f s (%d rounds done)",
			      o.run.timeout, (int)c->rounds);
			goto disc;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			cfail(c, "completion wr_id %llu: %s", (unsigned long long)wc.wr_id,
			      wc_status_name(wc.status));
			goto disc;
		}
		if (!(wc.opcode & IBV_WC_RECV))
			continue; /* our REPLY's completion */
		struct mc_msg *m = rslot(c, wc.wr_id), rep = { .type = T_REPLY };

		if (m->magic != MC_MAGIC || m->conn != c->g || m->life != c->life) {
			cfail(c, "message from conn %u life %u (magic 0x%x) on this connection",
			      m->conn, m->life, m->magic);
			goto disc;
		}
		if (m->type == T_BYE) {
			if (m->round != c->rounds)
				cfail(c, "client counted %u rounds, server verified %ld",
				      m->round, c->rounds);
			bye = 1;
			break;
		}
		rep.round = m->round;
		rep.conn = c->g;
		rep.life = c->life;
		if (m->type != T_CHECK || m->round != c->rounds) {
			snprintf(rep.text, sizeof(rep.text), "got type %u round %u, expected CHECK %ld",
				 m->type, m->round, c->rounds);
			rep.status = 1;
		} else if (srv_check(c, &wc, &rep)) {
			rep.status = 1;
		}
		if (rep.status)
			cfail(c, "%s", rep.text);
		else
			c->rounds++;
		if (post_recv(c, (int)wc.wr_id) || send_msg(c, &rep, NULL, 0, 100)) {
			cfail(c, "post: %s", strerror(errno));
			goto disc;
		}
		if (rep.status)
			goto disc;
	}
	/* the client disconnects after BYE */
	if (cm_want(c, RDMA_CM_EVENT_DISCONNECTED, NULL))
		goto disc;
	goto done;
disc:
	rdma_disconnect(c->id);
	/* an event left unacknowledged blocks rdma_destroy_id() for ever */
	ev = cm_wait(c->ch, 2);
	if (ev)
		rdma_ack_cm_event(ev);
done:
	add(&sh->rounds, c->rounds);
	add(&sh->bytes, c->bytes);
out:
	if (counted)
		add(&sh->active, -1);
	conn_free(c);
	add(&sh->lives, 1);
	add(&sh->threads, -1);
	return NULL;
}

static int run_server(void)
{
	struct rdma_event_channel *lch = rdma_create_event_channel();
	struct rdma_cm_id *lid[MAX_PORTS];
	pthread_attr_t pa;
	int got = 0;

	if (!lch)
		DIE("rdma_create_event_channel: %s", strerror(errno));
	pthread_attr_init(&pa);
	pthread_attr_setstacksize(&pa, 256 * 1024);
	pthread_attr_setdetachstate(&pa, PTHREAD_CREATE_DETACHED);
	for (int k = 0; k < o.nports; k++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(o.ports[k]) };

		if (inet_pton(AF_INET, o.addr, &sa.sin_addr) != 1)
			DIE("bad address %s", o.addr);
		if (rdma_create_id(lch, &lid[k], NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(lid[k], (struct sockaddr *)&sa) || rdma_listen(lid[k], 1024))
			DIE("listen on %s:%d: %s", o.addr, o.ports[k], strerror(errno));
	}
	LOG("# listening on %s, %d port(s), for %d connections\n", o.addr, o.nports, o.conns);
	double end = now_s() + o.run.total;

	while (get(&sh->lives) < o.conns) {
		struct rdma_cm_event *ev = cm_wait(lch, 0.2);

		if (now_s() > end) {
			LOG("FAIL - server: %ld of %d connections served before the deadline (%d accepted)\n",
			    get(&sh->lives), o.conns, got);
			return 1;
		}
		if (!ev)
			continue;
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			LOG("FAIL - server: listener event %s status %d\n",
			    rdma_event_str(ev->event), ev->status);
			add(&sh->fails, 1);
			rdma_ack_cm_event(ev);
			continue;
		}
		struct srv_arg *a = calloc(1, sizeof(*a));
		const struct mc_req *rq = ev->param.conn.private_data;

		if (!a)
			DIE("out of memory");
		a->id = ev->id;
		a->t0 = now_s();
		if (ev->param.conn.private_data_len < sizeof(*rq) || rq->magic != MC_MAGIC) {
			LOG("FAIL - server: connect request without our private data (%u bytes)\n",
			    ev->param.conn.private_data_len);
			add(&sh->fails, 1);
		} else {
			a->req = *rq;
		}
		rdma_ack_cm_event(ev);
		if (++got > o.conns) {
			LOG("FAIL - server: connection %d, more than the %d expected\n",
			    got, o.conns);
			add(&sh->fails, 1);
		}
		pthread_t t;

		add(&sh->threads, 1);
		if (pthread_create(&t, &pa, srv_thread, a))
			DIE("pthread_create: %s", strerror(errno));
	}
	while (get(&sh->threads) > 0 && now_s() < end)
		usleep(10000);
	for (int k = 0; k < o.nports; k++)
		rdma_destroy_id(lid[k]);
	rdma_destroy_event_channel(lch);
	LOG("# server: at most %ld ms from a connect request to its accept\n", get(&sh->accept_ms));
	LOG("%s - server: %ld connections served, peak %ld concurrent, %ld rounds, %ld bytes verified, %ld failure(s)\n",
	    get(&sh->fails) ? "FAIL" : "ok", get(&sh->lives), get(&sh->peak),
	    get(&sh->rounds), get(&sh->bytes), get(&sh->fails));
	return get(&sh->fails) ? 1 : 0;
}

/* -------------------------------------------------------------- client */

static int cli_connect_one(struct conn *c, struct sockaddr_in *sa, struct rdma_conn_param *cp);

static int cli_connect(struct conn *c)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(o.ports[c->g % o.nports]) };
	struct mc_req rq = { .magic = MC_MAGIC, .conn = c->g, .life = c->life };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .private_data = &rq, .private_data_len = sizeof(rq) };

	inet_pton(AF_INET, o.addr, &sa.sin_addr);
	/* at most o.inflight connects under way (all processes): the server
	 * must answer each within the MPA timeout, under TCG too
	 */
	struct timespec dl = deadline(o.run.total);

	while (sem_timedwait(&sh->slots, &dl)) {
		if (errno != EINTR) {
			cfail(c, "no connect slot: %s", strerror(errno));
			return -1;
		}
	}
	int rc = cli_connect_one(c, &sa, &cp);

	sem_post(&sh->slots);
	return rc;
}

static int cli_connect_one(struct conn *c, struct sockaddr_in *sa, struct rdma_conn_param *cp)
{
	struct rdma_cm_event *ev;
	double t0 = now_s(), t1, t2;

	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP)) {
		cfail(c, "rdma_create_id: %s", strerror(errno));
		return -1;
	}
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)sa, 5000) ||
	    cm_want(c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(c->id, 5000) || cm_want(c, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL)) {
		cfail(c, "resolving %s:%d: %s", o.addr, o.ports[c->g % o.nports], strerror(errno));
		return -1;
	}
	t1 = now_s();
	if (conn_setup(c, 3 * (o.region / 2), IBV_ACCESS_LOCAL_WRITE)) {
		cfail(c, "client resources: %s", strerror(errno));
		return -1;
	}
	if (post_recv(c, 1) || post_recv(c, 2)) {
		cfail(c, "post receive: %s", strerror(errno));
		return -1;
	}
	t2 = now_s();
	if (rdma_connect(c->id, cp)) {
		cfail(c, "rdma_connect: %s", strerror(errno));
		return -1;
	}
	if (cm_want(c, RDMA_CM_EVENT_ESTABLISHED, &ev))
		return -1;
	set_max(&sh->res_ms, (long)((t1 - t0) * 1000));
	set_max(&sh->setup_ms, (long)((t2 - t1) * 1000));
	set_max(&sh->est_ms, (long)((now_s() - t2) * 1000));
	const struct mc_rep *rp = ev->param.conn.private_data;

	if (ev->param.conn.private_data_len < sizeof(*rp) || rp->magic != MC_MAGIC ||
	    rp->len != o.region) {
		cfail(c, "MPA reply without our private data (%u bytes)",
		      ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
		return -1;
	}
	c->raddr = rp->addr;
	c->rkey = rp->rkey;
	rdma_ack_cm_event(ev);
	c->established = 1;
	add(&sh->lives, 1);
	return 0;
}

/* one round; 0 ok */
static int cli_round(struct conn *c, unsigned int round)
{
	size_t half = o.region / 2;
	uint64_t rs = key_of(c->g, c->life, round, 7);
	struct mc_msg m = { .type = T_CHECK, .conn = c->g, .life = c->life, .round = round };
	uint8_t *wsrc = AREA(c), *ssrc = AREA(c) + half, *sink = AREA(c) + 2 * half;
	uint32_t loff;

	m.wkey = key_of(c->g, c->life, round, 1);
	m.skey = key_of(c->g, c->life, round, 2);
	m.rkey = key_of(c->g, c->life, round, 3);
	m.wlen = (uint32_t)rnd_range(&rs, 1, half);
	m.woff = (uint32_t)rnd_range(&rs, 0, half - m.wlen);
	m.slen = (uint32_t)rnd_range(&rs, 1, half);
	m.rlen = (uint32_t)rnd_range(&rs, 1, half);
	m.roff = (uint32_t)rnd_range(&rs, 0, half - m.rlen);
	loff = (uint32_t)rnd_range(&rs, 0, half - m.rlen);
	pat_fill(wsrc, m.wkey, 0, m.wlen);
	pat_fill(ssrc, m.skey, 0, m.slen);
	memcpy(SHADOW(c), wsrc, m.wlen);
	memcpy(SHADOW(c) + half, ssrc, m.slen);

	struct ibv_sge wsg = { (uintptr_t)wsrc, m.wlen, c->mr->lkey };
	struct ibv_send_wr *bad, w = { .wr_id = 10, .sg_list = &wsg, .num_sge = 1,
				       .opcode = IBV_WR_RDMA_WRITE,
				       .send_flags = IBV_SEND_SIGNALED };

	w.wr.rdma.remote_addr = c->raddr + m.woff;
	w.wr.rdma.rkey = c->rkey;
	if (ibv_post_send(c->id->qp, &w, &bad) || send_msg(c, &m, ssrc, m.slen, 11)) {
		cfail(c, "round %u: post Write/Send: %s", round, strerror(errno));
		return -1;
	}
	/* Write, Send and the REPLY, in any order */
	int need = 3;
	struct mc_msg *rep = NULL;

	while (need) {
		struct ibv_wc wc;
		int r = cq_wait(c, &wc, o.run.timeout);

		if (r <= 0) {
			cfail(c, "round %u: %d completion(s) missing after %.0f s", round, need,
			      o.run.timeout);
			return -1;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			cfail(c, "round %u: completion wr_id %llu: %s", round,
			      (unsigned long long)wc.wr_id, wc_status_name(wc.status));
			return -1;
		}
		need--;
		if (!(wc.opcode & IBV_WC_RECV))
			continue;
		rep = rslot(c, wc.wr_id);
		if (wc.byte_len != sizeof(*rep) || rep->magic != MC_MAGIC || rep->type != T_REPLY ||
		    rep->round != round || rep->conn != c->g) {
			cfail(c, "round %u: bad REPLY (%u bytes, type %u round %u conn %u)", round,
			      wc.byte_len, rep->type, rep->round, rep->conn);
			return -1;
		}
		if (rep->status) {
			cfail(c, "round %u: server: %s", round, rep->text);
			return -1;
		}
		if (post_recv(c, (int)wc.wr_id)) {
			cfail(c, "post receive: %s", strerror(errno));
			return -1;
		}
	}
	/* Read the server's third pattern into a poisoned sink */
	pat_fill(sink, rs, 0, half);
	memcpy(SHADOW(c) + 2 * half, sink, half);
	pat_fill(SHADOW(c) + 2 * half + loff, m.rkey, 0, m.rlen);

	struct ibv_sge rsg = { (uintptr_t)sink + loff, m.rlen, c->mr->lkey };
	struct ibv_send_wr rd = { .wr_id = 12, .sg_list = &rsg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	rd.wr.rdma.remote_addr = c->raddr + half + m.roff;
	rd.wr.rdma.rkey = c->rkey;
	if (ibv_post_send(c->id->qp, &rd, &bad)) {
		cfail(c, "round %u: post Read: %s", round, strerror(errno));
		return -1;
	}
	if (cq_wait(c, &wc, o.run.timeout) <= 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 12) {
		cfail(c, "round %u: Read did not complete successfully", round);
		return -1;
	}
	if (verify_buf(c, "client buffer after the Read", round))
		return -1;
	c->rounds++;
	c->bytes += m.wlen + m.slen + m.rlen;
	return 0;
}

/* BYE, disconnect, free; 0 ok */
static int cli_close(struct conn *c, int ok)
{
	int rc = 0;

	if (c->established && ok) {
		struct mc_msg m = { .type = T_BYE, .conn = c->g, .life = c->life,
				    .round = (uint32_t)c->rounds };
		struct ibv_wc wc;

		if (send_msg(c, &m, NULL, 0, 13) || cq_wait(c, &wc, o.run.timeout) <= 0 ||
		    wc.status != IBV_WC_SUCCESS) {
			cfail(c, "BYE not sent");
			rc = -1;
		}
	}
	if (c->established) {
		rdma_disconnect(c->id);
		if (cm_want(c, RDMA_CM_EVENT_DISCONNECTED, NULL))
			rc = -1;
	}
	add(&sh->rounds, c->rounds);
	add(&sh->bytes, c->bytes);
	c->rounds = 0;
	c->bytes = 0;
	c->established = 0;
	conn_free(c);
	return rc;
}

/* end everything: the barrier's waiters wake and see abort_all */
static void abort_all(void)
{
	if (__atomic_exchange_n(&sh->abort_all, 1, __ATOMIC_SEQ_CST))
		return;
	for (int i = 0; i < nconn; i++)
		sem_post(&sh->gate);
}

static int barrier(struct conn *c)
{
	struct timespec dl = deadline(o.run.total / 2);

	if (add(&sh->arrived, 1) == nconn)
		for (int i = 0; i < nconn; i++)
			sem_post(&sh->gate);
	while (sem_timedwait(&sh->gate, &dl)) {
		if (errno == EINTR)
			continue;
		cfail(c, "barrier: %ld of %d connections up after %u s", get(&sh->arrived),
		      nconn, o.run.total / 2);
		return -1;
	}
	if (get(&sh->abort_all))
		return -1;
	if (!c->g)
		LOG("# client: all %d connections established and verified once after %.1f s\n",
		    nconn, now_s() - t_start);
	return 0;
}

static void check_steady(struct conn *c, const char *what)
{
	int s = get(&sh->steady);

	if (s != nconn - nchurn)
		cfail(c, "%s while %d of the %d other connections were established", what, s,
		      nconn - nchurn);
}

static void *cli_thread(void *arg)
{
	struct conn cs = { .g = (unsigned int)(uintptr_t)arg }, *c = &cs;
	int churner = (c->g % o.qps) % 4 == 3, ok = 0;
	unsigned int round = 0;

	if (cli_connect(c) || cli_round(c, round++))
		goto out;
	if (!churner)
		add(&sh->steady, 1);
	if (barrier(c))
		goto out;
	if (churner) {
		for (int life = 0; life <= o.churn; life++) {
			for (; round < (unsigned int)o.rounds; round++)
				if (get(&sh->abort_all) || cli_round(c, round))
					goto out;
			if (life == o.churn)
				break;
			check_steady(c, "closing");
			if (cli_close(c, 1))
				goto out;
			c->life++;
			round = 0;
			check_steady(c, "reconnecting");
			if (cli_connect(c))
				goto out;
		}
		add(&sh->churn_done, 1);
	} else {
		unsigned int min = (unsigned int)((o.churn + 1) * o.rounds);

		while (round < min || get(&sh->churn_done) < nchurn)
			if (get(&sh->abort_all) || cli_round(c, round++))
				goto out;
		add(&sh->steady, -1);
	}
	ok = 1;
out:
	if (!ok)
		abort_all();
	if (cli_close(c, ok))
		abort_all();
	return NULL;
}

static int run_client(void)
{
	nconn = o.procs * o.qps;
	for (int g = 0; g < nconn; g++)
		nchurn += (g % o.qps) % 4 == 3;
	LOG("# client: %d processes x %d connections = %d, %d churning %d time(s), %d rounds per life, seed %llu\n",
	    o.procs, o.qps, nconn, nchurn, o.churn, o.rounds, (unsigned long long)o.run.seed);
	pid_t pids[256];

	t_start = now_s();

	for (int p = 0; p < o.procs; p++) {
		pids[p] = fork();
		if (pids[p] < 0)
			DIE("fork: %s", strerror(errno));
		if (pids[p])
			continue;
		pthread_t t[1024];
		pthread_attr_t pa;

		pthread_attr_init(&pa);
		pthread_attr_setstacksize(&pa, 256 * 1024);
		for (int q = 0; q < o.qps; q++) {
			void *g = (void *)(uintptr_t)(p * o.qps + q);

			if (pthread_create(&t[q], &pa, cli_thread, g))
				DIE("pthread_create: %s", strerror(errno));
		}
		for (int q = 0; q < o.qps; q++)
			pthread_join(t[q], NULL);
		_exit(0);
	}
	int bad = 0;

	for (int p = 0; p < o.procs; p++) {
		int st;

		if (waitpid(pids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			LOG("FAIL - client process %d ended with status 0x%x\n", p, st);
			bad++;
		}
	}
	long want_lives = nconn + (long)nchurn * o.churn;

	if (get(&sh->lives) != want_lives) {
		LOG("FAIL - client: %ld connections made, expected %ld\n", get(&sh->lives),
		    want_lives);
		bad++;
	}
	if (get(&sh->rounds) < (long)nconn * (o.churn + 1) * o.rounds) {
		LOG("FAIL - client: %ld rounds verified, expected at least %ld\n", get(&sh->rounds),
		    (long)nconn * (o.churn + 1) * o.rounds);
		bad++;
	}
	bad += (int)get(&sh->fails);
	LOG("# client: slowest connect steps: resolve %ld ms, resources %ld ms, connect to established %ld ms\n",
	    get(&sh->res_ms), get(&sh->setup_ms), get(&sh->est_ms));
	LOG("%s - client: %ld connections at the barrier, %ld lives, %ld rounds, %ld bytes verified, %d failure(s)\n",
	    bad ? "FAIL" : "ok", get(&sh->arrived), get(&sh->lives), get(&sh->rounds),
	    get(&sh->bytes), bad);
	return bad ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: siw_manyconn -s -b ADDR -p PORT[,PORT..] -n CONNS [-m REGION] [-t S] [-T S]\n"
		"       siw_manyconn -c ADDR -p PORT[,PORT..] -P PROCS -Q QPS [-r ROUNDS] [-C CHURN]\n"
		"                    [-J CONNECTS] [-m REGION] [-S SEED] [-t S] [-T S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int c;
	char *tok, *save;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "sb:c:p:n:P:Q:r:C:J:m:S:t:T:h")) != -1) {
		switch (c) {
		case 's':
			o.server = 1;
			break;
		case 'b':
		case 'c':
			o.addr = optarg;
			break;
		case 'p':
			for (tok = strtok_r(optarg, ",", &save); tok && o.nports < MAX_PORTS;
			     tok = strtok_r(NULL, ",", &save))
				o.ports[o.nports++] = atoi(tok);
			break;
		case 'n':
			o.conns = atoi(optarg);
			break;
		case 'P':
			o.procs = atoi(optarg);
			break;
		case 'Q':
			o.qps = atoi(optarg);
			break;
		case 'r':
			o.rounds = atoi(optarg);
			break;
		case 'C':
			o.churn = atoi(optarg);
			break;
		case 'J':
			o.inflight = atoi(optarg);
			break;
		case 'm':
			o.region = strtoull(optarg, NULL, 0);
			break;
		default:
			if (!t_run_opt(&o.run, c, optarg))
				usage();
		}
	}
	if (!o.addr || !o.nports || o.region < 64 || o.region > (64u << 20) || o.region % 2)
		usage();
	if (o.server ? o.conns < 1 : (o.procs < 1 || o.procs > 256 || o.qps < 1 ||
				      o.qps > 1024 || o.rounds < 1 || o.churn < 0 ||
				      o.inflight < 1))
		usage();
	/* a few descriptors per connection (cm and completion channels) */
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		DIE("mmap: %s", strerror(errno));
	memset(sh, 0, sizeof(*sh));
	if (sem_init(&sh->slots, 1, (unsigned int)o.inflight) || sem_init(&sh->gate, 1, 0))
		DIE("sem_init: %s", strerror(errno));
	t_alarm(o.run.total, "FAIL - global timeout (alarm) expired: hang\n");
	return o.server ? run_server() : run_client();
}
