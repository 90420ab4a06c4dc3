// SPDX-License-Identifier: GPL-2.0
/*
 * siw_ringattack: a hostile local process that keeps rewriting the siw
 * rings the kernel reads, while it makes the kernel read them.
 *
 *   siw_ringattack -a ADDR [-m attack|overflow|cqgarbage] [-t secs] [-r rounds]
 *                  [-P phase_s] [-L long_phase_s] [-l limit_s] [-S stuck_s]
 *                  [-T timeout] [-p port] [-Q ring_size] [-W]
 *
 * ADDR: a local IPv4 address of the siw device's netdev; the process
 * connects an RC pair to itself over rdma_cm (as siw_hostile does).
 *
 * Rings: every object whose ring libsiw maps (CQ: num_cqe siw_cqe + the
 * siw_cq_ctrl word; QP: SQ and RQ; SRQ) is created alone between two reads
 * of /proc/self/maps; its new uverbs mapping gives the ring's address,
 * length and mmap offset. The tool maps each ring a second time at that
 * offset (its alias): the writer threads write through the alias, which
 * stays mapped when libsiw unmaps its own copy in ibv_destroy_qp/cq, so
 * the rings can be written while the kernel destroys them. A self-check
 * per round proves each alias is the ring (marker WRs and completions
 * seen through it).
 *
 * -m attack (default): rounds of a fresh pair until -t seconds are used.
 *   Writer 1 keeps setting VALID on every slot of the client SQ and RQ,
 *   the server SQ and the SRQ (plausible WQEs, garbage, or both; also
 *   fields changed under a VALID slot); writer 2 sets/clears VALID and
 *   writes garbage on the CQEs and random flags into both CQ control
 *   words. Meanwhile: phase 1, doorbells on both QPs in RTS (actor thread:
 *   the server's doorbell, ibv_req_notify_cq, completion and async events,
 *   ibv_query_qp); phase 2, writer 1 alone with the main thread: the
 *   server QP to ERROR (its SQ is flushed; the client gets the reset) and
 *   client doorbells (in the first RQ-only round for -L s, with the
 *   watchdog's limit raised to match, so that a doorbell flushing for as
 *   long as the writer keeps up meets the soft-lockup detector); phase 3, the
 *   client to ERROR (modify_qp or rdma_disconnect) and doorbells; phase 4,
 *   every object destroyed while both writers still write.
 *   Every system call is timed (wall clock and the thread's CPU time); one
 *   taking more than -l s (1) is a FAIL when half of that was CPU time (a
 *   flush looping in the kernel is) or it took more than -S s; one that
 *   mostly waited for a CPU is a "slow" line, counted in the summary
 *   (-W: the wall clock alone decides).
 *   A call still in the kernel after -S s (5) makes the watchdog pause the
 *   writers (a livelocked flush then ends and the call's time is
 *   reported); one still there 20 s later is a hang: report, exit 3.
 *   Rings of -Q entries (16384, the most siw allows; the server SQ a
 *   quarter): the kernel takes a while to catch up with a writer that
 *   lost its CPU for a moment (a TCG vCPU on a busy host).
 *   Evidence that the attack reached the kernel: the number of slots the
 *   kernel took off each ring (VALID cleared under the writer) is counted
 *   and must be nonzero for the SQs and the receive rings.
 * -m overflow: a receive CQ of 4 entries, the server posts 7 receives and
 *   does not poll, the client sends 7 messages. Asserts: IBV_EVENT_CQ_ERR
 *   on that CQ, IBV_EVENT_QP_FATAL on the server QP, the QP in ERR, the 4
 *   completions that fit intact and in order, no successful completion
 *   after them.
 * -m cqgarbage: (a) every CQE of the receive CQ set VALID with garbage and
 *   a random control word before anything completes: overflow handling as
 *   for -m overflow, the garbage entries untouched by the kernel; (b) a
 *   fresh pair with garbage and VALID flipping on both CQs and their
 *   control words while messages flow, then ERROR and destroy while
 *   writing: only the timing rule.
 * Every mode ends with a fresh pair that must move data correctly.
 * Last line: "ringattack: N rounds, M syscalls, max X ms (call)".
 * Exit 0 only if nothing failed.
 */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <getopt.h>
#include <unistd.h>
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <rdma/siw-abi.h>

static const char *addr;
static int port = 18900;
static double duration = 60, phase_s = 1.0, long_s, limit_s = 1.0, stuck_s = 5.0, tmo = 10;
static int max_rounds = 100000;
static uint32_t qsize = 16384;
/* the watchdog's limit now: stuck_s, or more in the long phase (ms) */
static atomic_llong stuck_ms;

/* ---- output from any thread (stdout held: common.c's one-printf lines
 * never land inside one of these)
 */
static pthread_mutex_t out_mx = PTHREAD_MUTEX_INITIALIZER;
static atomic_int nfail;

#define RA_PRINT(pfx, ...)                     \
	do {                                   \
		pthread_mutex_lock(&out_mx);   \
		flockfile(stdout);             \
		printf(pfx);                   \
		printf(__VA_ARGS__);           \
		printf("\n");                  \
		fflush(stdout);                \
		funlockfile(stdout);           \
		pthread_mutex_unlock(&out_mx); \
	} while (0)
#define RA_FAIL(...)                              \
	do {                                      \
		atomic_fetch_add(&nfail, 1);      \
		RA_PRINT("FAIL - ", __VA_ARGS__); \
	} while (0)
#define RA_OK(...) RA_PRINT("ok - ", __VA_ARGS__)
#define RA_NOTE(...) RA_PRINT("# ", __VA_ARGS__)
#define RA_CHECK(c, ...)                      \
	do {                                  \
		if (c)                        \
			RA_OK(__VA_ARGS__);   \
		else                          \
			RA_FAIL(__VA_ARGS__); \
	} while (0)

/* ---- timed system calls */
enum { S_MAIN, S_ACTOR, NSLOT };
struct tslot {
	atomic_uintptr_t name;	/* const char *: the call in flight, or 0 */
	atomic_llong t0;	/* its start, us */
	long long cpu0;		/* the calling thread's CPU time then, us */
};

static struct tslot slots[NSLOT];
static atomic_long nsys;
static double max_dt, max_cpu;
static const char *max_name = "-";
static int strict;		/* -W: the wall-clock time alone decides */
static atomic_int nslow;	/* over the limit, but not working in the kernel */
static atomic_int hold; /* writers pause (watchdog) */
static atomic_int hold_by = -1; /* slot whose call made them, or HB */
#define HOLD_HB 99
static int rounds_done;

static long long now_us(void)
{
	return (long long)(now_s() * 1e6);
}

static const char *slot_name(int s)
{
	return (const char *)atomic_load(&slots[s].name);
}

/* seconds since the slot's call began */
static double slot_age(int s)
{
	return (now_us() - atomic_load(&slots[s].t0)) / 1e6;
}

/* CPU time of the calling thread (user + system), us */
static long long thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int tc_begin(int s, const char *name)
{
	slots[s].cpu0 = thread_cpu_us();
	atomic_store(&slots[s].t0, now_us());
	atomic_store(&slots[s].name, (uintptr_t)name);
	return s;
}

static void tc_end(int s)
{
	double dt = slot_age(s);
	double cpu = (thread_cpu_us() - slots[s].cpu0) / 1e6;
	const char *n = slot_name(s);
	int held = atomic_load(&hold_by) == s;

	atomic_store(&slots[s].name, 0);
	atomic_fetch_add(&nsys, 1);
	pthread_mutex_lock(&out_mx);
	if (dt > max_dt) {
		max_dt = dt;
		max_cpu = cpu;
		max_name = n;
	}
	pthread_mutex_unlock(&out_mx);
	/*
	 * Over the limit: a failure when the thread was working (in the
	 * kernel: a livelock counts as CPU time) for half of it, or was gone
	 * for longer than the watchdog's limit. A call that mostly waited for
	 * a CPU (two vCPUs under TCG on a host shared with other guests) is
	 * reported and counted, not failed, unless -W.
	 */
	if (dt > limit_s && (strict || cpu > limit_s / 2 || dt > stuck_s || held))
		RA_FAIL("%s took %.3f s (limit %.1f s), %.3f s of it on a CPU%s", n, dt, limit_s,
			cpu,
			held ? "; it returned only after the watchdog paused the ring writers" :
			       "");
	else if (dt > limit_s && atomic_fetch_add(&nslow, 1) < 20)
		RA_NOTE("slow: %s took %.3f s, only %.3f s of it on a CPU (waited for a CPU?)", n,
			dt, cpu);
	if (held) {
		atomic_store(&hold_by, -1);
		atomic_store(&hold, 0);
	}
}

#define TC(s, name, expr)                              \
	__extension__({                                \
		int tc_s_ = tc_begin((s), (name));     \
		__typeof__(expr) tc_r_ = (expr);       \
		tc_end(tc_s_);                         \
		tc_r_;                                 \
	})
#define TCV(s, name, stmt)                             \
	do {                                           \
		int tc_s_ = tc_begin((s), (name));     \
		stmt;                                  \
		tc_end(tc_s_);                         \
	} while (0)

static void summary(void)
{
	pthread_mutex_lock(&out_mx);
	printf("ringattack: %d rounds, %ld syscalls, max %.1f ms (%s, %.1f ms CPU), %d slow while waiting for a CPU, %d failure(s)\n",
	       rounds_done, atomic_load(&nsys), max_dt * 1000, max_name, max_cpu * 1000,
	       atomic_load(&nslow), atomic_load(&nfail));
	fflush(stdout);
	pthread_mutex_unlock(&out_mx);
}

/* ---- watchdog */
static atomic_int wd_stop;
static atomic_llong heartbeat; /* us: main thread, in the attack phases */
static atomic_int hb_on;
static double hard_deadline;

static void beat(void)
{
	atomic_store(&heartbeat, now_us());
	if (atomic_load(&hold_by) == HOLD_HB) {
		atomic_store(&hold_by, -1);
		atomic_store(&hold, 0);
	}
}

static void *watchdog(void *arg)
{
	(void)arg;
	while (!atomic_load(&wd_stop)) {
		usleep(50000);
		double t = now_s();

		for (int s = 0; s < NSLOT; s++) {
			const char *n = slot_name(s);
			double el = slot_age(s);

			if (!n)
				continue;
			double lim = atomic_load(&stuck_ms) / 1e3;

			if (el > lim && atomic_load(&hold_by) == -1) {
				atomic_store(&hold_by, s);
				atomic_store(&hold, 1);
				RA_NOTE("watchdog: %s in the kernel for %.1f s: pausing the ring writers",
					n, el);
			}
			if (el > lim + 20) {
				RA_FAIL("%s did not return %.0f s after the ring writers paused: hang",
					n, el - lim);
				summary();
				_exit(3);
			}
		}
		double quiet_s = (now_us() - atomic_load(&heartbeat)) / 1e6;

		if (atomic_load(&hb_on) && !slot_name(S_MAIN) && quiet_s > stuck_s &&
		    atomic_load(&hold_by) == -1) {
			RA_FAIL("main thread made no progress for %.1f s outside system calls (CPU taken by the kernel?): pausing the ring writers",
				quiet_s);
			atomic_store(&hold_by, HOLD_HB);
			atomic_store(&hold, 1);
		}
		if (t > hard_deadline) {
			RA_FAIL("global deadline passed (%.0f s): hang", hard_deadline);
			summary();
			_exit(3);
		}
	}
	return NULL;
}

/* ---- rings */
enum rkind { RK_SQ, RK_RQ, RK_CQ };
struct ring {
	enum rkind kind;
	const char *name;
	uint8_t *mem; /* our alias */
	size_t len;
	uint32_t n;
	unsigned long off;
	struct siw_cq_ctrl *ctrl; /* CQ */
	uint16_t *fl; /* SQ/RQ: flags we set per slot */
	uint8_t *mine; /* we set VALID on this slot last */
	atomic_int attack; /* writer targets it this round */
	/* counted by the writer alone, read after writers_detach() */
	unsigned long taken; /* SQ/RQ: our VALID slots the kernel took */
	unsigned long written; /* CQ: VALID entries we did not set */
	/* WQE templates: the peer's buffer for plausible WQEs */
	uint64_t lbuf, rbuf;
	uint32_t lkey, rkey;
	int srv;	/* a ring of the server QP */
};

static inline struct siw_sqe *sqe_at(struct ring *r, uint32_t i)
{
	return (struct siw_sqe *)(r->mem + (size_t)i * sizeof(struct siw_sqe));
}

static inline struct siw_rqe *rqe_at(struct ring *r, uint32_t i)
{
	return (struct siw_rqe *)(r->mem + (size_t)i * sizeof(struct siw_rqe));
}

static inline struct siw_cqe *cqe_at(struct ring *r, uint32_t i)
{
	return (struct siw_cqe *)(r->mem + (size_t)i * sizeof(struct siw_cqe));
}

static size_t page_up(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

/* ---- a connected pair, rings located */
struct cfg {
	uint32_t cli_sq, cli_rq, srv_sq, srv_rq; /* srv_rq 0: SRQ of srq */
	uint32_t srq;
	int cq_cli, cq_srv_s, cq_srv_r;
	int qp_rings; /* locate SQ/RQ/SRQ */
	int cq_rings; /* locate CQs */
};

#define MAXRING 8
struct pair {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *cid, *sid;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq_cli, *cq_srv_s, *cq_srv_r;
	struct ibv_srq *srq;
	struct ibv_mr *mr_c, *mr_s;
	uint8_t *buf_c, *buf_s;
	size_t len;
	struct ring r[MAXRING];
	int nr;
	struct ring *sq_c, *rq_c, *sq_s, *rq_s, *cqc, *cqss, *cqsr;
	int setup_ok;
	const struct cfg *cfg;	/* as p_up was asked */
};

static struct ring *ring_add(struct pair *p, enum rkind k, const char *name,
			     const struct uv_map *m, uint32_t n)
{
	struct ring *r;
	size_t need = k == RK_SQ ? n * sizeof(struct siw_sqe) :
		      k == RK_RQ ? n * sizeof(struct siw_rqe) :
				   n * sizeof(struct siw_cqe) + sizeof(struct siw_cq_ctrl);

	if (p->nr >= MAXRING)
		return NULL;
	if (m->end - m->start < need) {
		RA_NOTE("%s: mapping of %lu bytes is smaller than %u entries (%zu bytes)", name,
			m->end - m->start, n, need);
		return NULL;
	}
	r = &p->r[p->nr];
	memset(r, 0, sizeof(*r));
	r->kind = k;
	r->name = name;
	r->n = n;
	r->len = m->end - m->start;
	r->off = m->off;
	r->mem = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, p->ctx->cmd_fd,
		      (off_t)m->off);
	if (r->mem == MAP_FAILED) {
		RA_NOTE("%s: second mapping at offset 0x%lx failed: %s", name, m->off,
			strerror(errno));
		r->mem = NULL;
		return NULL;
	}
	if (k == RK_CQ)
		r->ctrl = (struct siw_cq_ctrl *)(r->mem + n * sizeof(struct siw_cqe));
	r->fl = calloc(n, sizeof(*r->fl));
	r->mine = calloc(n, 1);
	p->nr++;
	return r;
}

static void rings_unmap(struct pair *p)
{
	for (int i = 0; i < p->nr; i++) {
		munmap(p->r[i].mem, p->r[i].len);
		free(p->r[i].fl);
		free(p->r[i].mine);
	}
	p->nr = 0;
}

static struct ibv_cq *mk_cq(struct pair *p, int n, const char *name, struct ring **rp, int locate)
{
	static struct uv_map b[UV_MAPS_MAX];
	struct uv_map nw[4];
	int nb = uv_maps_read(b);
	struct ibv_cq *cq = TC(S_MAIN, "ibv_create_cq", ibv_create_cq(p->ctx, n, NULL, p->cc, 0));

	if (!cq) {
		RA_NOTE("ibv_create_cq(%d): %s", n, strerror(errno));
		return NULL;
	}
	if (!locate)
		return cq;
	int k = uv_maps_new(b, nb, nw, 4);

	if (k != 1) {
		RA_NOTE("%s: %d new uverbs mappings, expected 1", name, k);
		return cq;
	}
	*rp = ring_add(p, RK_CQ, name, &nw[0], (uint32_t)cq->cqe);
	return cq;
}

/* create the QP on @id and locate its rings */
static int mk_qp(struct pair *p, struct rdma_cm_id *id, struct ibv_qp_init_attr *qa,
		 const char *sqn, struct ring **sq, const char *rqn, struct ring **rq, int locate)
{
	static struct uv_map b[UV_MAPS_MAX];
	struct uv_map nw[4];
	int nb = uv_maps_read(b);
	int rv = TC(S_MAIN, "rdma_create_qp", rdma_create_qp(id, p->pd, qa));

	if (rv) {
		RA_NOTE("rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	if (!locate)
		return 0;
	int k = uv_maps_new(b, nb, nw, 4), want = qa->srq ? 1 : 2;
	size_t sl = page_up(qa->cap.max_send_wr * sizeof(struct siw_sqe));
	size_t rl = page_up(qa->cap.max_recv_wr * sizeof(struct siw_rqe));

	if (k != want) {
		RA_NOTE("%s: %d new uverbs mappings, expected %d", sqn, k, want);
		return 0;
	}
	if (want == 2 && sl == rl) {
		RA_NOTE("%s: SQ and RQ mappings of equal size: not told apart", sqn);
		return 0;
	}
	for (int i = 0; i < k; i++) {
		size_t l = nw[i].end - nw[i].start;

		if (l == sl)
			*sq = ring_add(p, RK_SQ, sqn, &nw[i], qa->cap.max_send_wr);
		else if (want == 2 && l == rl)
			*rq = ring_add(p, RK_RQ, rqn, &nw[i], qa->cap.max_recv_wr);
	}
	return 0;
}

static void nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* drain the rdma_cm channel (acking), up to @t seconds of quiet */
static void cm_drain(struct pair *p, double t)
{
	struct rdma_cm_event *ev;

	if (!p->ch)
		return;
	while ((ev = cm_wait(p->ch, t)))
		rdma_ack_cm_event(ev);
}

static atomic_long n_comp, n_async, n_cq_err, n_qp_fatal;

/* completion and async events, all acked (destroy_cq/qp wait for acks) */
static void ev_drain(struct pair *p, int s)
{
	struct ibv_cq *cq;
	void *cctx;
	struct ibv_async_event ae;

	if (p->cc)
		while (TC(s, "read(completion channel)", ibv_get_cq_event(p->cc, &cq, &cctx)) ==
		       0) {
			ibv_ack_cq_events(cq, 1);
			atomic_fetch_add(&n_comp, 1);
		}
	if (p->ctx)
		while (TC(s, "read(async event fd)", ibv_get_async_event(p->ctx, &ae)) == 0) {
			atomic_fetch_add(&n_async, 1);
			if (ae.event_type == IBV_EVENT_CQ_ERR)
				atomic_fetch_add(&n_cq_err, 1);
			if (ae.event_type == IBV_EVENT_QP_FATAL)
				atomic_fetch_add(&n_qp_fatal, 1);
			ibv_ack_async_event(&ae);
		}
}

static void p_down(struct pair *p)
{
	cm_drain(p, 0.05);
	if (p->cid && p->cid->qp)
		TCV(S_MAIN, "rdma_destroy_qp(client)", rdma_destroy_qp(p->cid));
	if (p->sid && p->sid->qp)
		TCV(S_MAIN, "rdma_destroy_qp(server)", rdma_destroy_qp(p->sid));
	if (p->srq)
		TC(S_MAIN, "ibv_destroy_srq", ibv_destroy_srq(p->srq));
	ev_drain(p, S_MAIN);
	if (p->cq_cli)
		TC(S_MAIN, "ibv_destroy_cq(client)", ibv_destroy_cq(p->cq_cli));
	if (p->cq_srv_s)
		TC(S_MAIN, "ibv_destroy_cq(server send)", ibv_destroy_cq(p->cq_srv_s));
	if (p->cq_srv_r)
		TC(S_MAIN, "ibv_destroy_cq(server recv)", ibv_destroy_cq(p->cq_srv_r));
	if (p->cc)
		TC(S_MAIN, "ibv_destroy_comp_channel", ibv_destroy_comp_channel(p->cc));
	if (p->mr_c)
		TC(S_MAIN, "ibv_dereg_mr", ibv_dereg_mr(p->mr_c));
	if (p->mr_s)
		TC(S_MAIN, "ibv_dereg_mr", ibv_dereg_mr(p->mr_s));
	if (p->pd)
		TC(S_MAIN, "ibv_dealloc_pd", ibv_dealloc_pd(p->pd));
	cm_drain(p, 0.02);
	if (p->sid)
		TC(S_MAIN, "rdma_destroy_id(server)", rdma_destroy_id(p->sid));
	if (p->cid)
		TC(S_MAIN, "rdma_destroy_id(client)", rdma_destroy_id(p->cid));
	if (p->lid)
		TC(S_MAIN, "rdma_destroy_id(listener)", rdma_destroy_id(p->lid));
	if (p->ch)
		rdma_destroy_event_channel(p->ch);
	free(p->buf_c);
	free(p->buf_s);
	/* the ring aliases stay until the writers let go: rings_unmap() */
	p->ch = NULL;
	p->lid = NULL;
	p->cid = NULL;
	p->sid = NULL;
	p->ctx = NULL;
	p->pd = NULL;
	p->cc = NULL;
	p->cq_cli = NULL;
	p->cq_srv_s = NULL;
	p->cq_srv_r = NULL;
	p->srq = NULL;
	p->mr_c = NULL;
	p->mr_s = NULL;
	p->buf_c = NULL;
	p->buf_s = NULL;
}

/* a call of the shared rdma_cm setup (lb_resolve, lb_connect), timed */
static int tc_main(const char *name)
{
	return tc_begin(S_MAIN, name);
}

/* the passive side of p_up: the server QP (rings located), accepted */
static int p_accept(struct rdma_cm_id *sid, struct rdma_conn_param *cp, void *arg)
{
	struct pair *p = arg;
	const struct cfg *c = p->cfg;
	struct ibv_qp_init_attr qa = { 0 };

	p->sid = sid;
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = p->cq_srv_s;
	qa.recv_cq = p->cq_srv_r;
	qa.srq = p->srq;
	qa.cap.max_send_wr = c->srv_sq;
	qa.cap.max_recv_wr = p->srq ? 0 : c->srv_rq;
	qa.cap.max_send_sge = SIW_MAX_SGE;
	qa.cap.max_recv_sge = p->srq ? 0 : SIW_MAX_SGE;
	if (p->sid->verbs != p->ctx) {
		RA_NOTE("server id on another verbs context");
		return -1;
	}
	if (mk_qp(p, p->sid, &qa, "server SQ", &p->sq_s, "server RQ", &p->rq_s, c->qp_rings) ||
	    TC(S_MAIN, "rdma_accept", rdma_accept(p->sid, cp))) {
		RA_NOTE("server create_qp/accept: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int p_up(struct pair *p, const struct cfg *c, int prt)
{
	struct rdma_conn_param cp = { 0 };
	struct ibv_qp_init_attr qa;

	memset(p, 0, sizeof(*p));
	p->cfg = c;
	if (lb_resolve(&p->ch, &p->lid, &p->cid, addr, prt, tmo))
		return -1;
	p->ctx = p->cid->verbs;
	nonblock(p->ctx->async_fd);
	p->pd = TC(S_MAIN, "ibv_alloc_pd", ibv_alloc_pd(p->ctx));
	p->cc = TC(S_MAIN, "ibv_create_comp_channel", ibv_create_comp_channel(p->ctx));
	if (!p->pd || !p->cc)
		return -1;
	nonblock(p->cc->fd);
	p->cq_cli = mk_cq(p, c->cq_cli, "client CQ", &p->cqc, c->cq_rings);
	p->cq_srv_s = mk_cq(p, c->cq_srv_s, "server send CQ", &p->cqss, c->cq_rings);
	p->cq_srv_r = mk_cq(p, c->cq_srv_r, "server recv CQ", &p->cqsr, c->cq_rings);
	if (!p->cq_cli || !p->cq_srv_s || !p->cq_srv_r)
		return -1;
	if (!c->srv_rq) {
		static struct uv_map b[UV_MAPS_MAX];
		struct uv_map nw[4];
		int nb = uv_maps_read(b);
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = c->srq, .max_sge = 1 } };

		p->srq = TC(S_MAIN, "ibv_create_srq", ibv_create_srq(p->pd, &sa));
		if (!p->srq) {
			RA_NOTE("ibv_create_srq: %s", strerror(errno));
			return -1;
		}
		if (c->qp_rings) {
			int k = uv_maps_new(b, nb, nw, 4);

			if (k == 1)
				p->rq_s = ring_add(p, RK_RQ, "SRQ", &nw[0], sa.attr.max_wr);
			else
				RA_NOTE("SRQ: %d new uverbs mappings, expected 1", k);
		}
	}
	p->len = 1 << 18;
	p->buf_c = aligned_alloc(4096, p->len);
	p->buf_s = aligned_alloc(4096, p->len);
	memset(p->buf_c, 0x11, p->len);
	memset(p->buf_s, 0x22, p->len);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	p->mr_c = TC(S_MAIN, "ibv_reg_mr", ibv_reg_mr(p->pd, p->buf_c, p->len, acc));
	p->mr_s = TC(S_MAIN, "ibv_reg_mr", ibv_reg_mr(p->pd, p->buf_s, p->len, acc));
	if (!p->mr_c || !p->mr_s)
		return -1;

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = p->cq_cli;
	qa.recv_cq = p->cq_cli;
	qa.cap.max_send_wr = c->cli_sq;
	qa.cap.max_recv_wr = c->cli_rq;
	qa.cap.max_send_sge = SIW_MAX_SGE;
	qa.cap.max_recv_sge = SIW_MAX_SGE;
	if (mk_qp(p, p->cid, &qa, "client SQ", &p->sq_c, "client RQ", &p->rq_c, c->qp_rings))
		return -1;
	cp.responder_resources = 4;
	cp.initiator_depth = 4;
	cp.retry_count = 7;
	if (lb_connect(p->ch, p->cid, &cp, p_accept, p, tmo))
		return -1;
	/* templates of plausible WQEs: towards the peer's buffer */
	for (int i = 0; i < p->nr; i++) {
		struct ring *r = &p->r[i];
		int cli = r == p->sq_c || r == p->rq_c;

		r->lbuf = (uintptr_t)(cli ? p->buf_c : p->buf_s);
		r->lkey = cli ? p->mr_c->lkey : p->mr_s->lkey;
		r->rbuf = (uintptr_t)(cli ? p->buf_s : p->buf_c);
		r->rkey = cli ? p->mr_s->rkey : p->mr_c->rkey;
		r->srv = !cli;
	}
	p->setup_ok = 1;
	return 0;
}

/* a CQE for @id appears in the CQ ring (alias) within @t seconds */
static int cqe_seen(struct ring *cq, uint64_t id, double t)
{
	double end = now_s() + t;

	while (now_s() < end) {
		for (uint32_t i = 0; i < cq->n; i++) {
			struct siw_cqe *e = cqe_at(cq, i);

			if ((__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) & SIW_WQE_VALID) &&
			    e->id == id)
				return 1;
		}
		usleep(200);
	}
	return 0;
}

/* drop all completions (ring not under attack): libsiw's poll */
static void cq_flush(struct ibv_cq *cq)
{
	struct ibv_wc wc[8];

	while (ibv_poll_cq(cq, 8, wc) > 0)
		;
}

/*
 * Prove each alias is the ring: markers libsiw writes (post) appear in it,
 * completions the kernel writes appear in the CQ aliases.
 */
static int rings_check(struct pair *p)
{
	const uint64_t MR = 0x52510000c11ull, MS = 0x53525100005ull, MW = 0x57000000c11ull,
		       MX = 0x5300000c11ull, MV = 0x5700000005ull;
	struct ibv_sge sg;
	struct ibv_recv_wr rw = { .sg_list = &sg, .num_sge = 1 }, *rbad;
	struct ibv_send_wr sw = { .sg_list = &sg, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED },
			   *sbad;
	int ok = 1;

	if (!p->sq_c || !p->rq_c || !p->sq_s || !p->rq_s || !p->cqc || !p->cqss || !p->cqsr) {
		RA_NOTE("not every ring located (client SQ %p RQ %p, server SQ %p SRQ %p, CQs %p %p %p)",
			(void *)p->sq_c, (void *)p->rq_c, (void *)p->sq_s, (void *)p->rq_s,
			(void *)p->cqc, (void *)p->cqss, (void *)p->cqsr);
		return -1;
	}
	sg = (struct ibv_sge){ (uintptr_t)p->buf_c, 256, p->mr_c->lkey };
	rw.wr_id = MR;
	if (ibv_post_recv(p->cid->qp, &rw, &rbad) || rqe_at(p->rq_c, 0)->id != MR) {
		RA_NOTE("client RQ: marker receive not in the located ring");
		ok = 0;
	}
	sg = (struct ibv_sge){ (uintptr_t)p->buf_s, 256, p->mr_s->lkey };
	rw.wr_id = MS;
	if (ibv_post_srq_recv(p->srq, &rw, &rbad) || rqe_at(p->rq_s, 0)->id != MS) {
		RA_NOTE("SRQ: marker receive not in the located ring");
		ok = 0;
	}
	/* client: WRITE then SEND (into the SRQ marker) */
	sg = (struct ibv_sge){ (uintptr_t)p->buf_c, 64, p->mr_c->lkey };
	sw.wr_id = MW;
	sw.opcode = IBV_WR_RDMA_WRITE;
	sw.wr.rdma.remote_addr = (uintptr_t)p->buf_s + 4096;
	sw.wr.rdma.rkey = p->mr_s->rkey;
	if (TC(S_MAIN, "ibv_post_send", ibv_post_send(p->cid->qp, &sw, &sbad)) ||
	    sqe_at(p->sq_c, 0)->id != MW) {
		RA_NOTE("client SQ: marker WRITE not in the located ring");
		ok = 0;
	}
	if (ok && !cqe_seen(p->cqc, MW, tmo)) {
		RA_NOTE("client CQ: the marker WRITE's completion not seen in the located ring");
		ok = 0;
	}
	cq_flush(p->cq_cli);
	sw.wr_id = MX;
	sw.opcode = IBV_WR_SEND;
	if (ok && (TC(S_MAIN, "ibv_post_send", ibv_post_send(p->cid->qp, &sw, &sbad)) ||
		   !cqe_seen(p->cqsr, MS, tmo))) {
		RA_NOTE("server recv CQ: the SRQ marker's completion not seen in the located ring");
		ok = 0;
	}
	cq_flush(p->cq_srv_r);
	sg = (struct ibv_sge){ (uintptr_t)p->buf_s, 64, p->mr_s->lkey };
	sw.wr_id = MV;
	sw.opcode = IBV_WR_RDMA_WRITE;
	sw.wr.rdma.remote_addr = (uintptr_t)p->buf_c + 4096;
	sw.wr.rdma.rkey = p->mr_c->rkey;
	if (ok && (TC(S_MAIN, "ibv_post_send", ibv_post_send(p->sid->qp, &sw, &sbad)) ||
		   sqe_at(p->sq_s, 0)->id != MV || !cqe_seen(p->cqss, MV, tmo))) {
		RA_NOTE("server SQ / send CQ: the marker WRITE not seen in the located rings");
		ok = 0;
	}
	cq_flush(p->cq_srv_s);
	cq_flush(p->cq_cli);
	return ok ? 0 : -1;
}

/* ---- writers */
static atomic_uintptr_t cur; /* struct pair *: rings under attack, or 0 */
static atomic_int wstop, quiet; /* quiet: writer 2 and the actor pause */
static atomic_ulong wgen[2];
static atomic_int wmode, cmode; /* this round's modes */
enum { WM_PLAUSIBLE, WM_GARBAGE, WM_MIXED, WM_N };
static const char *const wm_name[] = { "plausible WQEs", "garbage WQEs", "mixed WQEs" };
enum { CM_CONSUME, CM_FULL, CM_TOGGLE, CM_N };
static const char *const cm_name[] = { "CQEs consumed", "CQ kept full of garbage",
				       "CQE VALID toggled" };

static void fill_garbage(void *e, size_t sz, uint64_t *rs)
{
	uint64_t *q = e;

	for (size_t i = 0; i < sz / 8; i++)
		q[i] = sm64(rs);
}

/* write slot @i's content; returns the flags to publish (VALID set) */
static uint16_t fill_slot(struct ring *r, uint32_t i, int garbage, uint64_t *rs)
{
	if (r->kind == RK_SQ) {
		struct siw_sqe *s = sqe_at(r, i);
		uint16_t fl;

		if (garbage) {
			fill_garbage(s, sizeof(*s), rs);
			fl = (uint16_t)sm64(rs);
			/* some with opcodes/num_sge in range, to get further in */
			if (sm64(rs) & 1) {
				s->opcode = (uint8_t)(sm64(rs) % SIW_NUM_OPCODES);
				s->num_sge = (uint8_t)(sm64(rs) % (SIW_MAX_SGE + 2));
			}
		} else {
			/* the server sends no messages: receive completions
			 * at the client would fill its CQ
			 */
			static const uint8_t ops[2][4] = {
				{ SIW_OP_WRITE, SIW_OP_SEND, SIW_OP_READ, SIW_OP_WRITE },
				{ SIW_OP_WRITE, SIW_OP_WRITE, SIW_OP_READ, SIW_OP_WRITE } };
			uint64_t o = (uint64_t)(i % 64) * 1024;

			s->id = 0xa77ac000000ull | i;
			s->opcode = ops[r->srv][i % 4];
			s->num_sge = 1;
			s->rkey = r->rkey;
			s->raddr = r->rbuf + o;
			s->sge[0].laddr = r->lbuf + o;
			s->sge[0].length = 64;
			s->sge[0].lkey = r->lkey;
			/* few completions in RTS: a CQ that overflows puts
			 * the QP in error before the Sends reach the SRQ
			 */
			fl = (i & 63) == 63 ? SIW_WQE_SIGNALLED : 0;
		}
		fl = (uint16_t)(fl | SIW_WQE_VALID);
		return fl;
	}
	struct siw_rqe *q = rqe_at(r, i);

	if (garbage) {
		fill_garbage(q, sizeof(*q), rs);
		if (sm64(rs) & 1)
			q->num_sge = (uint8_t)(sm64(rs) % (SIW_MAX_SGE + 2));
		return (uint16_t)(sm64(rs) | SIW_WQE_VALID);
	}
	q->id = 0xa77ac100000ull | i;
	q->num_sge = 1;
	q->sge[0].laddr = r->lbuf + (uint64_t)(i % 64) * 1024;
	q->sge[0].length = 1024;
	q->sge[0].lkey = r->lkey;
	return SIW_WQE_VALID;
}

/* a field of a VALID slot changed under the kernel's feet */
static void flip_field(struct ring *r, uint32_t i, uint64_t *rs)
{
	uint64_t v = sm64(rs);

	if (r->kind == RK_SQ) {
		volatile struct siw_sqe *s = sqe_at(r, i);

		switch (v % 4) {
		case 0:
			s->num_sge = (uint8_t)(v >> 8);
			break;
		case 1:
			s->sge[(v >> 8) % SIW_MAX_SGE].length = (uint32_t)(v >> 16);
			break;
		case 2:
			s->opcode = (uint8_t)(v >> 8);
			break;
		default:
			s->sge[0].laddr = v;
			break;
		}
	} else {
		volatile struct siw_rqe *q = rqe_at(r, i);

		if (v & 1)
			q->num_sge = (uint8_t)(v >> 8);
		else
			q->sge[(v >> 8) % SIW_MAX_SGE].length = (uint32_t)(v >> 16);
	}
}

/*
 * Every slot of @r the kernel took made VALID again: per slot only a load,
 * and a store where the kernel took it (the writer must stay ahead of the
 * kernel's flush); new content now and then.
 */
static void ring_refill(struct ring *r, int m, int flips, uint64_t *rs, unsigned int *cnt)
{
	size_t stride = r->kind == RK_SQ ? sizeof(struct siw_sqe) : sizeof(struct siw_rqe);

	for (uint32_t i = 0; i < r->n; i++) {
		uint16_t *fp = (uint16_t *)(r->mem + i * stride + 8);
		uint16_t f = __atomic_load_n(fp, __ATOMIC_ACQUIRE);

		if (f & SIW_WQE_VALID) {
			if (flips && !(++*cnt & 15))
				flip_field(r, i, rs);
			continue;
		}
		if (r->mine[i])
			r->taken++;
		if (!r->fl[i] || !(++*cnt & 7)) {
			int g = m == WM_GARBAGE || (m == WM_MIXED && (sm64(rs) & 1));

			r->fl[i] = fill_slot(r, i, g, rs);
		}
		__atomic_store_n(fp, r->fl[i], __ATOMIC_RELEASE);
		r->mine[i] = 1;
	}
}

/* writer 1: SQ, RQ and SRQ slots VALID, all of them, all the time */
static void *writer_wq(void *arg)
{
	uint64_t rs = (uintptr_t)arg;
	unsigned int sweep = 0, cnt = 0;

	while (!atomic_load(&wstop)) {
		struct pair *p = (struct pair *)atomic_load(&cur);

		if (!p || atomic_load(&hold)) {
			atomic_fetch_add(&wgen[0], 1);
			usleep(200);
			continue;
		}
		int m = atomic_load(&wmode);
		/* fields changed under VALID slots: every 8th sweep */
		int flips = m != WM_PLAUSIBLE && !(++sweep & 7);

		for (int k = 0; k < p->nr; k++)
			if (p->r[k].kind != RK_CQ && atomic_load(&p->r[k].attack))
				ring_refill(&p->r[k], m, flips, &rs, &cnt);
		atomic_fetch_add(&wgen[0], 1);
	}
	return NULL;
}

static uint32_t ctrl_word(uint64_t *rs)
{
	static const uint32_t v[] = { 0, SIW_NOTIFY_ALL, SIW_NOTIFY_SOLICITED,
				      SIW_NOTIFY_NEXT_COMPLETION, 0xffffffffu };
	uint64_t x = sm64(rs);

	return x & 1 ? (uint32_t)(x >> 8) : v[(x >> 8) % ARRAY_SIZE(v)];
}

/* writer 2: CQEs and the CQ control words */
static void *writer_cq(void *arg)
{
	uint64_t rs = (uintptr_t)arg;

	while (!atomic_load(&wstop)) {
		struct pair *p = (struct pair *)atomic_load(&cur);

		if (!p || atomic_load(&hold) || atomic_load(&quiet)) {
			atomic_fetch_add(&wgen[1], 1);
			usleep(200);
			continue;
		}
		int m = atomic_load(&cmode);

		for (int k = 0; k < p->nr; k++) {
			struct ring *r = &p->r[k];

			if (r->kind != RK_CQ || !atomic_load(&r->attack))
				continue;
			for (uint32_t i = 0; i < r->n; i++) {
				struct siw_cqe *e = cqe_at(r, i);
				uint8_t f = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
				int set;

				if ((f & SIW_WQE_VALID) && !r->mine[i])
					r->written++;
				switch (m) {
				case CM_CONSUME:
					set = 0;
					break;
				case CM_FULL:
					set = 1;
					break;
				default:
					set = sm64(&rs) & 1;
					break;
				}
				if (set) {
					if (!(f & SIW_WQE_VALID) || !(sm64(&rs) & 15)) {
						fill_garbage(e, sizeof(*e), &rs);
						__atomic_store_n(&e->flags,
								 (uint8_t)(sm64(&rs) |
									   SIW_WQE_VALID),
								 __ATOMIC_RELEASE);
					}
					r->mine[i] = 1;
				} else {
					if (f & SIW_WQE_VALID)
						__atomic_store_n(&e->flags, 0, __ATOMIC_RELEASE);
					r->mine[i] = 0;
				}
				__atomic_store_n(&r->ctrl->flags, ctrl_word(&rs), __ATOMIC_RELAXED);
			}
			r->ctrl->pad = (uint32_t)sm64(&rs);
		}
		atomic_fetch_add(&wgen[1], 1);
	}
	return NULL;
}

/*
 * Stop attacking @p's rings; wait until both writers let go of them.
 * cur goes first: a generation read before it could be passed by pause
 * iterations (hold, quiet) while this thread waits for a CPU, and a
 * writer could then start a sweep of the rings about to be unmapped.
 */
static void writers_detach(void)
{
	unsigned long g0, g1;
	double end = now_s() + 30;

	atomic_store(&cur, 0);
	g0 = atomic_load(&wgen[0]);
	g1 = atomic_load(&wgen[1]);
	while ((atomic_load(&wgen[0]) < g0 + 2 || atomic_load(&wgen[1]) < g1 + 2) && now_s() < end)
		usleep(1000);
	if (now_s() >= end) {
		RA_FAIL("ring writers did not let go within 30 s");
		summary();
		_exit(3);
	}
}

/* ---- actor: the server's doorbell, notify requests, events, queries */
static atomic_int actor_stop;

static void *actor(void *arg)
{
	struct pair *p = arg;
	unsigned int k = 0;

	while (!atomic_load(&actor_stop)) {
		if (atomic_load(&quiet)) {
			usleep(1000);
			continue;
		}
		if (p->sid && p->sid->qp)
			TC(S_ACTOR, "doorbell(server QP)", siw_doorbell(p->sid->qp));
		/* libsiw writes the control words: races writer 2 */
		ibv_req_notify_cq(p->cq_cli, k & 1);
		ibv_req_notify_cq(p->cq_srv_s, k & 1);
		ibv_req_notify_cq(p->cq_srv_r, !(k & 1));
		ev_drain(p, S_ACTOR);
		if (!(k % 16)) {
			struct ibv_qp_attr a;
			struct ibv_qp_init_attr ia;

			TC(S_ACTOR, "ibv_query_qp(client)",
			   ibv_query_qp(p->cid->qp, &a, IBV_QP_STATE, &ia));
			TC(S_ACTOR, "ibv_query_qp(server)",
			   ibv_query_qp(p->sid->qp, &a, IBV_QP_STATE, &ia));
		}
		k++;
	}
	return NULL;
}

static int qp_to_err(struct ibv_qp *qp, const char *name)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return TC(S_MAIN, name, ibv_modify_qp(qp, &a, IBV_QP_STATE));
}

/* doorbells on @qp for @secs (heartbeat for the watchdog) */
static long bell_loop(struct ibv_qp *qp, double secs, const char *name)
{
	double end = now_s() + secs;
	long n = 0;

	atomic_store(&hb_on, 1);
	beat();
	while (now_s() < end) {
		TC(S_MAIN, name, siw_doorbell(qp));
		n++;
		beat();
	}
	atomic_store(&hb_on, 0);
	return n;
}

static int ncpus_online(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

/* ---- mode attack */
static unsigned long tot_taken[4]; /* client SQ, client RQ, server SQ, SRQ */
static int long_done;

static void attack_round(int rno)
{
	/* large rings: a writer that loses its CPU for a few ms (a TCG vCPU
	 * on a busy host) is still ahead of the kernel when it is back
	 */
	struct cfg c = { .cli_sq = qsize,
			 .cli_rq = qsize,
			 .srv_sq = qsize / 4,
			 .srv_rq = 0,
			 .srq = qsize,
			 .cq_cli = 64,
			 .cq_srv_s = 32,
			 .cq_srv_r = 32,
			 .qp_rings = 1,
			 .cq_rings = 1 };
	struct pair p;
	/* every WQE mode meets every CQ mode within 9 rounds; round 1
	 * (plausible WQEs on all rings, CQEs consumed) is the one where
	 * Sends reach the SRQ before a CQ overflow ends the QPs
	 */
	int tgt = (rno + 2) % 3, wm = (rno / 3) % WM_N, cm = (2 * rno + 1 + rno / 3) % CM_N;
	static const char *const tgt_name[] = { "all rings", "send queues only",
						"receive queues only" };
	pthread_t th;

	atomic_store(&n_comp, 0);
	atomic_store(&n_async, 0);
	atomic_store(&n_cq_err, 0);
	atomic_store(&n_qp_fatal, 0);
	if (p_up(&p, &c, port + rno % 100) || rings_check(&p)) {
		RA_FAIL("round %d: could not set up a connected pair with all rings located%s", rno,
			rno ? "" : " (is this siw with libsiw?)");
		p_down(&p);
		rings_unmap(&p);
		return;
	}
	if (!rno)
		RA_OK("rings located and verified: client SQ %u, RQ %u, server SQ %u, SRQ %u, CQs %u/%u/%u entries",
		      p.sq_c->n, p.rq_c->n, p.sq_s->n, p.rq_s->n, p.cqc->n, p.cqss->n, p.cqsr->n);
	atomic_store(&p.sq_c->attack, tgt != 2);
	atomic_store(&p.sq_s->attack, tgt != 2);
	atomic_store(&p.rq_c->attack, tgt != 1);
	atomic_store(&p.rq_s->attack, tgt != 1);
	atomic_store(&p.cqc->attack, 1);
	atomic_store(&p.cqss->attack, 1);
	atomic_store(&p.cqsr->attack, 1);
	atomic_store(&wmode, wm);
	atomic_store(&cmode, cm);
	/* the first fill here, receive rings first: a Send must not find the
	 * SRQ empty because the writer had not got that far yet
	 */
	uint64_t rs = 0x9e11 + rno;
	unsigned int cnt = 0;
	struct ring *order[] = { p.rq_c, p.rq_s, p.sq_c, p.sq_s };

	for (size_t i = 0; i < ARRAY_SIZE(order); i++)
		if (atomic_load(&order[i]->attack))
			ring_refill(order[i], wm, 0, &rs, &cnt);
	atomic_store(&cur, (uintptr_t)&p);
	atomic_store(&actor_stop, 0);
	pthread_create(&th, NULL, actor, &p);

	/* 1: both QPs in RTS, doorbells */
	long b1 = bell_loop(p.cid->qp, phase_s, "doorbell(client QP, RTS)");

	/* 2: writer 1 alone: the server to ERROR (SQ flush), the client gets
	 * the reset and is rung
	 */
	double p2 = phase_s;

	if (long_s > 0 && tgt == 2 && !long_done) {
		p2 = long_s;
		long_done = 1;
	}
	atomic_store(&quiet, 1);
	if (qp_to_err(p.sid->qp, "ibv_modify_qp(server, ERR)"))
		RA_NOTE("round %d: modify_qp(server, ERR): %s", rno, strerror(errno));
	long b2 = 0;

	if (p2 > phase_s) {
		/* a doorbell that flushes for as long as writer 1 keeps up
		 * is left in the kernel for this long: the soft-lockup
		 * detector needs > 20 s
		 */
		atomic_store(&stuck_ms, (long long)((p2 + stuck_s) * 1e3));
		b2 = bell_loop(p.cid->qp, p2, "doorbell(client QP, peer in ERR, long phase)");
		atomic_store(&stuck_ms, (long long)(stuck_s * 1e3));
	} else {
		b2 = bell_loop(p.cid->qp, p2, "doorbell(client QP, peer in ERR)");
	}

	atomic_store(&quiet, 0);
	/* 3: the client to ERROR, doorbells on both */
	if (rno & 1) {
		if (TC(S_MAIN, "rdma_disconnect(client)", rdma_disconnect(p.cid)))
			RA_NOTE("round %d: rdma_disconnect: %s", rno, strerror(errno));
	} else if (qp_to_err(p.cid->qp, "ibv_modify_qp(client, ERR)")) {
		RA_NOTE("round %d: modify_qp(client, ERR): %s", rno, strerror(errno));
	}
	long b3 = bell_loop(p.cid->qp, phase_s, "doorbell(client QP, ERR)");

	atomic_store(&actor_stop, 1);
	pthread_join(th, NULL);
	/* 4: destroy everything while both writers write */
	p_down(&p);
	writers_detach();
	unsigned long t[4] = { p.sq_c->taken, p.rq_c->taken, p.sq_s->taken, p.rq_s->taken };

	for (int i = 0; i < 4; i++)
		tot_taken[i] += t[i];
	RA_NOTE("round %d: %s, %s, %s; doorbells %ld/%ld/%ld; kernel took SQE %lu (client) %lu (server), RQE %lu, SRQE %lu; kernel CQEs seen %lu; events: %ld completion, %ld async (%ld CQ_ERR, %ld QP_FATAL)%s",
		rno, wm_name[wm], tgt_name[tgt], cm_name[cm], b1, b2, b3, t[0], t[2], t[1], t[3],
		(unsigned long)(p.cqc->written + p.cqss->written + p.cqsr->written),
		atomic_load(&n_comp), atomic_load(&n_async), atomic_load(&n_cq_err),
		atomic_load(&n_qp_fatal), p2 > phase_s ? " (long phase 2)" : "");
	rings_unmap(&p);
}

static void mode_attack(void)
{
	double end = now_s() + duration;
	int r;

	if (ncpus_online() < 2)
		RA_NOTE("only %d CPU online: the writers cannot race the kernel", ncpus_online());
	for (r = 0; r < max_rounds && (r == 0 || now_s() < end); r++) {
		attack_round(r);
		rounds_done++;
	}
	if (rounds_done >= 3) {
		RA_CHECK(tot_taken[0] && tot_taken[2],
			 "the kernel took SQEs the writer made VALID (client %lu, server %lu)",
			 tot_taken[0], tot_taken[2]);
		RA_CHECK(tot_taken[1] && tot_taken[3],
			 "the kernel took RQEs and SRQEs the writer made VALID (RQ %lu, SRQ %lu)",
			 tot_taken[1], tot_taken[3]);
	}
}

/* ---- mode overflow */

/* wait for CQ_ERR on @cq, QP_FATAL on @qp and @qp in ERR */
static void overflow_expect(struct pair *p, struct ibv_cq *cq, struct ibv_qp *qp, const char *what)
{
	int cq_err = 0, fatal = 0, qerr = 0;
	enum ibv_qp_state st = IBV_QPS_UNKNOWN;
	double end = now_s() + tmo;

	while (now_s() < end && !(cq_err && fatal && qerr)) {
		struct ibv_async_event ae;

		if (async_wait(p->ctx, &ae, 0.05)) {
			if (ae.event_type == IBV_EVENT_CQ_ERR && ae.element.cq == cq)
				cq_err++;
			else if (ae.event_type == IBV_EVENT_QP_FATAL && ae.element.qp == qp)
				fatal++;
			else
				RA_NOTE("%s: async event %s", what,
					ibv_event_type_str(ae.event_type));
		}
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (!TC(S_MAIN, "ibv_query_qp", ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))) {
			st = a.qp_state;
			qerr = st == IBV_QPS_ERR;
		}
	}
	RA_CHECK(cq_err, "%s: IBV_EVENT_CQ_ERR on the CQ (%d event(s))", what, cq_err);
	RA_CHECK(fatal, "%s: IBV_EVENT_QP_FATAL on the QP that lost a completion (%d event(s))",
		 what, fatal);
	RA_CHECK(qerr, "%s: that QP is in ERR (ibv_query_qp: state %d)", what, (int)st);
}

static void post_recvs(struct pair *p, int n, uint64_t base, int must)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sg = { (uintptr_t)p->buf_s + (uint64_t)i * 1024, 1024,
				      p->mr_s->lkey };
		struct ibv_recv_wr rw = { .wr_id = base + i, .sg_list = &sg, .num_sge = 1 }, *bad;

		if (ibv_post_recv(p->sid->qp, &rw, &bad) && must)
			RA_FAIL("server post_recv %d: %s", i, strerror(errno));
	}
}

static int post_sends(struct pair *p, int n, uint64_t base, int poll)
{
	int ok = 0;

	for (int i = 0; i < n; i++) {
		uint8_t *b = p->buf_c + (uint64_t)i * 1024;
		struct ibv_sge sg = { (uintptr_t)b, 64, p->mr_c->lkey };
		struct ibv_send_wr sw = { .wr_id = base + i,
					  .sg_list = &sg,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		pat_fill(b, base + i, 0, 64);
		if (!TC(S_MAIN, "ibv_post_send", ibv_post_send(p->cid->qp, &sw, &bad)))
			ok++;
		else if (poll)
			RA_NOTE("client post_send %d: %s", i, strerror(errno));
	}
	for (int i = 0; poll && i < ok; i++) {
		struct ibv_wc wc;

		if (poll_one(p->cq_cli, &wc, tmo) != 1) {
			RA_NOTE("client: %d of %d send completions", i, ok);
			break;
		}
		if (wc.status != IBV_WC_SUCCESS)
			RA_NOTE("client send %llx: %s", (unsigned long long)wc.wr_id,
				ibv_wc_status_str(wc.status));
	}
	return ok;
}

static void mode_overflow(void)
{
	struct cfg c = { .cli_sq = 16,
			 .cli_rq = 4,
			 .srv_sq = 4,
			 .srv_rq = 16,
			 .cq_cli = 64,
			 .cq_srv_s = 16,
			 .cq_srv_r = 4 };
	struct pair p;
	const uint64_t base = 0x0f100000ull;

	if (p_up(&p, &c, port)) {
		RA_FAIL("overflow: could not set up a connected pair");
		p_down(&p);
		return;
	}
	int ncqe = p.cq_srv_r->cqe, nmsg = ncqe + 3;

	RA_NOTE("overflow: device %s, receive CQ of %d entries, %d messages, nobody polls",
		ibv_get_device_name(p.ctx->device), ncqe, nmsg);
	post_recvs(&p, nmsg, base, 1);
	post_sends(&p, nmsg, base, 1);
	overflow_expect(&p, p.cq_srv_r, p.sid->qp, "CQ overflow");

	/* the entries that fit: intact and in order */
	int good = 0, later = 0, later_ok = 0;
	char why[160] = "";

	for (int i = 0; i < ncqe; i++) {
		struct ibv_wc wc;

		if (poll_one(p.cq_srv_r, &wc, 1.0) != 1) {
			snprintf(why, sizeof(why), "entry %d missing", i);
			break;
		}
		if (wc.wr_id != base + i || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_RECV || wc.byte_len != 64 ||
		    pat_check(p.buf_s + (uint64_t)i * 1024, base + i, 0, 64) != (size_t)-1) {
			snprintf(why, sizeof(why),
				 "entry %d: wr_id 0x%llx status %s opcode %d len %u (want 0x%llx, success, recv, 64, data)",
				 i, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
				 wc.opcode, wc.byte_len, (unsigned long long)(base + i));
			break;
		}
		good++;
	}
	RA_CHECK(good == ncqe,
		 "CQ overflow: the %d completions that fit are intact and in order (%d%s%s)", ncqe,
		 good, why[0] ? "; " : "", why);
	double end = now_s() + 1.0;

	while (now_s() < end) {
		struct ibv_wc wc;

		if (ibv_poll_cq(p.cq_srv_r, 1, &wc) == 1) {
			later++;
			later_ok += wc.status == IBV_WC_SUCCESS;
		}
	}
	RA_CHECK(!later_ok,
		 "CQ overflow: no successful completion after the lost one (%d later entries, %d successful)",
		 later, later_ok);
	p_down(&p);
	rings_unmap(&p);
	rounds_done++;
}

/* ---- mode cqgarbage */
static void mode_cqgarbage(void)
{
	struct cfg c = { .cli_sq = 16,
			 .cli_rq = 4,
			 .srv_sq = 4,
			 .srv_rq = 16,
			 .cq_cli = 16,
			 .cq_srv_s = 16,
			 .cq_srv_r = 8,
			 .cq_rings = 1 };
	struct pair p;
	uint64_t rs = 0xc0ffee;

	/* (a) VALID garbage in every slot before anything completes */
	if (p_up(&p, &c, port) || !p.cqsr) {
		RA_FAIL("cqgarbage: could not set up a pair with its CQ rings located (is this siw?)");
		p_down(&p);
		rings_unmap(&p);
		return;
	}
	struct ring *r = p.cqsr;
	size_t cqbytes = r->n * sizeof(struct siw_cqe);
	uint8_t *copy = malloc(cqbytes);

	for (uint32_t i = 0; i < r->n; i++) {
		struct siw_cqe *e = cqe_at(r, i);

		fill_garbage(e, sizeof(*e), &rs);
		e->flags |= SIW_WQE_VALID;
	}
	r->ctrl->flags = ctrl_word(&rs);
	p.cqc->ctrl->flags = ctrl_word(&rs);
	memcpy(copy, r->mem, cqbytes);
	RA_NOTE("cqgarbage: device %s, receive CQ of %u entries all VALID garbage, control word 0x%x",
		ibv_get_device_name(p.ctx->device), r->n, r->ctrl->flags);
	post_recvs(&p, 4, 0x9a000000ull, 1);
	post_sends(&p, 2, 0x9a000000ull, 1);
	overflow_expect(&p, p.cq_srv_r, p.sid->qp, "CQ ring full of garbage");
	RA_CHECK(!memcmp(copy, r->mem, cqbytes),
		 "CQ ring full of garbage: the consumer-owned entries were left untouched");
	free(copy);
	p_down(&p);
	rings_unmap(&p);
	rounds_done++;

	/* (b) VALID toggled, garbage and control words rewritten, while
	 * messages flow; then ERROR and destroy while writing
	 */
	if (p_up(&p, &c, port + 1) || !p.cqc || !p.cqss || !p.cqsr) {
		RA_FAIL("cqgarbage: could not set up the second pair");
		p_down(&p);
		rings_unmap(&p);
		return;
	}
	atomic_store(&p.cqc->attack, 1);
	atomic_store(&p.cqss->attack, 1);
	atomic_store(&p.cqsr->attack, 1);
	atomic_store(&cmode, CM_TOGGLE);
	atomic_store(&cur, (uintptr_t)&p);
	atomic_store(&actor_stop, 0);
	pthread_t th;

	pthread_create(&th, NULL, actor, &p);
	double end = now_s() + 3 * phase_s;
	long sends = 0;
	uint64_t id = 0x9b000000ull;

	atomic_store(&hb_on, 1);
	while (now_s() < end) {
		post_recvs(&p, 1, id, 0);
		sends += post_sends(&p, 1, id, 0);
		id++;
		beat();
		usleep(1000);
	}
	atomic_store(&hb_on, 0);
	qp_to_err(p.sid->qp, "ibv_modify_qp(server, ERR)");
	qp_to_err(p.cid->qp, "ibv_modify_qp(client, ERR)");
	bell_loop(p.cid->qp, phase_s, "doorbell(client QP, ERR)");
	atomic_store(&actor_stop, 1);
	pthread_join(th, NULL);
	p_down(&p);
	writers_detach();
	RA_NOTE("cqgarbage: %ld sends under CQ garbage; kernel CQEs seen %lu; events: %ld completion, %ld async (%ld CQ_ERR, %ld QP_FATAL)",
		sends, (unsigned long)(p.cqc->written + p.cqss->written + p.cqsr->written),
		atomic_load(&n_comp), atomic_load(&n_async), atomic_load(&n_cq_err),
		atomic_load(&n_qp_fatal));
	rings_unmap(&p);
	rounds_done++;
}

/* ---- a fresh pair must move data correctly */
static void final_check(void)
{
	struct cfg c = { .cli_sq = 16,
			 .cli_rq = 16,
			 .srv_sq = 16,
			 .srv_rq = 16,
			 .cq_cli = 64,
			 .cq_srv_s = 64,
			 .cq_srv_r = 64 };
	struct pair p;

	if (p_up(&p, &c, port + 150)) {
		RA_FAIL("final: could not set up a fresh connected pair");
		p_down(&p);
		return;
	}
	const size_t L = 64 * 1024;
	struct ibv_wc wc;

	pat_fill(p.buf_c, 77, 0, L);
	memset(p.buf_s, 0, L);
	struct ibv_sge sg = { (uintptr_t)p.buf_c, (uint32_t)L, p.mr_c->lkey };
	struct ibv_send_wr wr = { .wr_id = 1,
				  .sg_list = &sg,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)p.buf_s;
	wr.wr.rdma.rkey = p.mr_s->rkey;
	int ok = !TC(S_MAIN, "ibv_post_send", ibv_post_send(p.cid->qp, &wr, &bad)) &&
		 poll_one(p.cq_cli, &wc, tmo) == 1 && wc.status == IBV_WC_SUCCESS;
	struct ibv_sge sg2 = { (uintptr_t)p.buf_c + L, (uint32_t)L, p.mr_c->lkey };

	wr.wr_id = 2;
	wr.sg_list = &sg2;
	wr.opcode = IBV_WR_RDMA_READ;
	ok = ok && !TC(S_MAIN, "ibv_post_send", ibv_post_send(p.cid->qp, &wr, &bad)) &&
	     poll_one(p.cq_cli, &wc, tmo) == 1 && wc.status == IBV_WC_SUCCESS;
	size_t d1 = pat_check(p.buf_s, 77, 0, L), d2 = pat_check(p.buf_c + L, 77, 0, L);

	post_recvs(&p, 1, 0xf1, 1);
	post_sends(&p, 1, 0xf1, 1);
	int rok = poll_one(p.cq_srv_r, &wc, tmo) == 1 && wc.status == IBV_WC_SUCCESS &&
		  wc.byte_len == 64 && pat_check(p.buf_s, 0xf1, 0, 64) == (size_t)-1;

	RA_CHECK(ok && rok && d1 == (size_t)-1 && d2 == (size_t)-1,
		 "fresh pair afterwards: 64 KiB WRITE + READ back and a SEND verified (ok %d/%d, write mismatch at %zd, read mismatch at %zd)",
		 ok, rok, (ssize_t)d1, (ssize_t)d2);
	p_down(&p);
	rings_unmap(&p);
}

int main(int argc, char **argv)
{
	const char *mode = "attack";
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "a:p:t:r:P:L:l:S:T:m:Q:W")) != -1) {
		switch (c) {
		case 't':
			duration = atof(optarg);
			break;
		case 'r':
			max_rounds = atoi(optarg);
			break;
		case 'P':
			phase_s = atof(optarg);
			break;
		case 'L':
			long_s = atof(optarg);
			break;
		case 'l':
			limit_s = atof(optarg);
			break;
		case 'S':
			stuck_s = atof(optarg);
			break;
		case 'T':
			tmo = atof(optarg);
			break;
		case 'm':
			mode = optarg;
			break;
		case 'Q':
			qsize = (uint32_t)atoi(optarg);
			break;
		case 'W':
			strict = 1;
			break;
		default:
			if (lb_opt(c, optarg, &addr, &port))
				break;
			addr = NULL;
			optind = argc;
			break;
		}
	}
	if (qsize < 16)
		addr = NULL;
	if (!addr ||
	    (strcmp(mode, "attack") && strcmp(mode, "overflow") && strcmp(mode, "cqgarbage"))) {
		fprintf(stderr,
			"usage: siw_ringattack -a ADDR [-m attack|overflow|cqgarbage] [-t secs] [-r rounds] [-P phase_s] [-L long_phase_s] [-l limit_s] [-S stuck_s] [-T timeout] [-p port] [-Q ring_size] [-W]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	t_call_begin = tc_main;
	t_call_end = tc_end;
	atomic_store(&stuck_ms, (long long)(stuck_s * 1e3));
	/* a round can overrun -t by its own length and the watchdog's limits */
	double budget = duration + 2 * long_s + 8 * phase_s + 4 * (stuck_s + 20) + 6 * tmo + 120;

	hard_deadline = now_s() + budget;
	t_alarm((unsigned int)budget + 30, "FAIL - siw_ringattack: alarm (hang)\n");
	RA_NOTE("siw_ringattack -m %s on %s: -t %.0f -P %.2f -L %.0f, limit %.1f s per call, writers paused after %.1f s; %d CPUs",
		mode, addr, duration, phase_s, long_s, limit_s, stuck_s, ncpus_online());

	pthread_t wd, w1, w2;

	pthread_create(&wd, NULL, watchdog, NULL);
	pthread_create(&w1, NULL, writer_wq, (void *)(uintptr_t)0x5eed1);
	pthread_create(&w2, NULL, writer_cq, (void *)(uintptr_t)0x5eed2);
	if (!strcmp(mode, "attack"))
		mode_attack();
	else if (!strcmp(mode, "overflow"))
		mode_overflow();
	else
		mode_cqgarbage();
	final_check();
	atomic_store(&wstop, 1);
	pthread_join(w1, NULL);
	pthread_join(w2, NULL);
	atomic_store(&wd_stop, 1);
	pthread_join(wd, NULL);
	summary();
	return atomic_load(&nfail) ? 1 : 0;
}
