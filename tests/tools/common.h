/* SPDX-License-Identifier: GPL-2.0 */
/* Shared helpers for the siw test tools (tests/tools). */
#ifndef SIW_TOOLS_COMMON_H
#define SIW_TOOLS_COMMON_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "pattern.h"

extern int t_failures;
extern int t_verbose;

#define OK(...) do {				\
		printf("ok - ");		\
		printf(__VA_ARGS__);		\
		printf("\n");			\
		fflush(stdout);			\
	} while (0)
#define FAIL(...) do {				\
		t_failures++;			\
		printf("FAIL - ");		\
		printf(__VA_ARGS__);		\
		printf("\n");			\
		fflush(stdout);			\
	} while (0)
#define NOTE(...) do {				\
		printf("# ");			\
		printf(__VA_ARGS__);		\
		printf("\n");			\
		fflush(stdout);			\
	} while (0)
extern char t_context[256]; /* what the tool is doing now; printed by DIE */
#define DIE(...) do {						\
		printf("FAIL - fatal: ");			\
		printf(__VA_ARGS__);				\
		if (t_context[0])				\
			printf(" [during: %s]", t_context);	\
		printf("\n");					\
		fflush(stdout);					\
		exit(1);					\
	} while (0)
#define CHECK(cond, ...) do {			\
		if (cond)			\
			OK(__VA_ARGS__);	\
		else				\
			FAIL(__VA_ARGS__);	\
	} while (0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* splitmix64: deterministic PRNG, identical on both peers for a given seed */
static inline uint64_t sm64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* uniform in [lo, hi] */
static inline uint64_t rnd_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + sm64(s) % (hi - lo + 1);
}

/* index of first differing byte of a and b, or (size_t)-1 */
size_t first_diff(const uint8_t *a, const uint8_t *b, size_t len);

double now_s(void);
/* ROWS lines "TAG I T..." (COLS times each, seconds) to FILE; dies on error */
void write_times(const char *file, const char *tag, const double *t,
		 int rows, int cols);
struct ibv_context *open_dev(const char *name);
const char *wc_status_name(enum ibv_wc_status st);

/* Poll 'cq' for one completion; busy-poll with short sleeps until deadline
 * (seconds from now).  Returns 1 with *wc filled, 0 on timeout, -1 on error.
 */
int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double timeout);

/* Wait for the next rdma_cm event on 'ch' (timeout seconds).
 * Returns the event (must be acked) or NULL on timeout/error.
 */
struct rdma_cm_event *cm_wait(struct rdma_event_channel *ch, double timeout);
const char *cm_ev_name(enum rdma_cm_event_type t);
/* Wait for event of type 'want'; returns it (caller acks) or NULL. */
struct rdma_cm_event *cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
				double timeout);
/* wait for an async event on ctx; returns 1 and fills ev (acked), 0 timeout */
int async_wait(struct ibv_context *ctx, struct ibv_async_event *ev, double timeout);
void parse_addr_port(const char *s, struct sockaddr_in *sa);

/* A new rdma_cm event channel, or die. */
struct rdma_event_channel *cm_channel(void);
/*
 * Client side up to the QP, or die: an RC id on @ch for ADDR:PORT @ap
 * (parse_addr_port), its address and route resolved (rdma_cm's timeouts
 * 2 s, 10 s for each event).
 */
struct rdma_cm_id *cm_resolve(struct rdma_event_channel *ch, const char *ap);
/* Server side, or die: an id on @ch with context @ctx, bound to ADDR:PORT
 * @ap and listening with @backlog.
 */
struct rdma_cm_id *cm_listen(struct rdma_event_channel *ch, const char *ap, void *ctx,
			     int backlog);

/*
 * Optional hooks around each rdma_cm call that lb_resolve() and
 * lb_connect() make (siw_ringattack times every system call):
 * t_call_begin(name) right before the call, t_call_end(what it returned)
 * right after it.
 */
extern int (*t_call_begin)(const char *name);
extern void (*t_call_end)(int token);

/*
 * A connection to itself in one process over rdma_cm, in two steps, for
 * tools that make the QPs their own way (lb_pair_create() uses them too).
 * Step 1: a new event channel *@ch, a listener *@lid bound to @addr:@port
 * and listening, an active id *@cli with its address and route resolved
 * to it (rdma_cm's timeouts 2 s, @timeout for each event). Returns 0, or
 * -1 after a "# " line saying why; the caller destroys what was made.
 */
int lb_resolve(struct rdma_event_channel **ch, struct rdma_cm_id **lid, struct rdma_cm_id **cli,
	       const char *addr, int port, double timeout);
/*
 * Step 2, once the active QP is made on @cli: rdma_connect(@cli, @cp); at
 * the connect request, @accept(its id, @cp, @arg) makes the passive QP and
 * calls rdma_accept (0, or nonzero after saying why); until both sides
 * are ESTABLISHED, at most @timeout seconds. Returns 0, or -1 (said why).
 */
int lb_connect(struct rdma_event_channel *ch, struct rdma_cm_id *cli, struct rdma_conn_param *cp,
	       int (*accept)(struct rdma_cm_id *srv, struct rdma_conn_param *cp, void *arg),
	       void *arg, double timeout);
/*
 * -a ADDR and -p PORT of the tools that connect to themselves: option @c
 * with argument @arg stored in *@addr or *@port (atoi): 1; another: 0.
 */
int lb_opt(int c, const char *arg, const char **addr, int *port);

/* Loopback RC pair in one process over rdma_cm (listen on addr:port and
 * connect to it).  Both QPs share pd (created on the listener's device).
 */
struct lb_pair {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen, *cli, *srv;
	struct ibv_pd *pd;
	struct ibv_cq *cq_cli, *cq_srv;
	struct ibv_context *ctx;
	struct ibv_qp_cap cli_cap; /* as returned by rdma_create_qp */
};

/* optional hooks run right before/after the client QP is created */
extern void (*lb_pre_cli_qp)(void);
extern void (*lb_post_cli_qp)(void);
int lb_pair_create(struct lb_pair *lp, const char *addr, int port,
		   struct ibv_qp_init_attr *cap, double timeout);
void lb_pair_destroy(struct lb_pair *lp);

/*
 * The uverbs mappings of this process (lines of /proc/self/maps naming
 * /dev/infiniband/uverbs*): libsiw maps each SQ, RQ, SRQ and CQ ring
 * there, so a mapping that appears while an object is created is its ring.
 */
struct uv_map {
	unsigned long start, end, off;	/* off: the mmap offset (the ring's key) */
};

#define UV_MAPS_MAX 512
/* Read them into @m (room for UV_MAPS_MAX): their count, 0 if unreadable. */
int uv_maps_read(struct uv_map *m);
/* The mappings now present that are not among @before[0..@nb) (same start
 * and offset), at most @max of them into @out: their count.
 */
int uv_maps_new(const struct uv_map *before, int nb, struct uv_map *out, int max);

/*
 * A bound against hangs: after @secs seconds SIGALRM writes @msg (a whole
 * line; the pointer is kept) to stdout and ends the process, exit status 3.
 */
void t_alarm(unsigned int secs, const char *msg);

/*
 * Run options of the two-sided tools (siw_datacheck, siw_manyconn):
 *   -S SEED  the pattern seed (strtoull, any base); seed_given set
 *   -t SECS  how long one step may take
 *   -T SECS  the bound of the whole run (t_alarm)
 */
struct t_run {
	uint64_t seed;
	int seed_given;
	double timeout;
	unsigned int total;
};

/* Store option @c with argument @arg if it is -S, -t or -T: 1; else 0. */
int t_run_opt(struct t_run *r, int c, const char *arg);

/* libsiw's doorbell for a user QP: a POST_SEND command with wr_count 0
 * written to the uverbs command fd (ibv_qp->handle is public).
 * Returns 0 or -errno.
 */
int siw_doorbell(struct ibv_qp *qp);

/* The kernel's siw (6.1) gives the object that starts at mmap page 0x90 of
 * a context the key 0x90000, libsiw's SIW_INVAL_UOBJ_KEY, and libsiw then
 * fails that CQ or QP: the 25th CQ+QP pair of siw_cmrate's sizes. Tools
 * that hold many objects in one context call this once per context before
 * their first CQ: a 1-page CQ kept for the process's lifetime, so their
 * 2-page rings (CQ_PAD_N entries, QP_PAD_WR WRs) all start at odd pages. Any
 * provider accepts it; it returns the CQ or NULL.
 */
#define CQ_PAD_N 128
#define QP_PAD_WR 64
struct ibv_cq *mmap_key_pad(struct ibv_context *ctx);

#endif
