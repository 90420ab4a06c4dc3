// SPDX-License-Identifier: GPL-2.0
/*
 * siw_cmtest: connection setup over rdma_cm, for the listener tests.
 *
 *   siw_cmtest listen [-m accept|reject] [-P DATA] [-n N] [-t SECS]
 *                     [-b BACKLOG] ADDR:PORT [ADDR:PORT ...]
 *       Listens on every ADDR:PORT (0.0.0.0 = wildcard; rdma_listen()
 *       backlog BACKLOG, default 8), prints
 *       "# listening" once all are up, then answers N connect requests:
 *       accept (the default) or reject with private data DATA. Prints
 *       "request on listener K (ADDR:PORT) from IP" for each. Accepted
 *       connections are kept until the peer disconnects. With -T FILE,
 *       each accepted connection's step times go to FILE, one line
 *       "P I T0 .. T5" (CLOCK_MONOTONIC s): CONNECT_REQUEST received, QP
 *       created (rdma_accept called), rdma_accept returned, ESTABLISHED,
 *       DISCONNECTED, destroyed (see siw_cmrate -T).
 *
 *   siw_cmtest connect [-e EXPECT] [-P DATA] [-t SECS] ADDR:PORT
 *       Connects (with an RC QP, as iWARP needs) and reports the outcome:
 *       EXPECT is established (then disconnects cleanly), rejected
 *       (REJECTED; with -P its private data must start with DATA) or
 *       failed (REJECTED, UNREACHABLE or CONNECT_ERROR). Prints
 *       "# outcome EVENT status S after MS ms"; exit 0 iff it matches.
 *       With -D MS: MS ms after rdma_connect, before any event, the QP
 *       is destroyed (as rdma_destroy_ep does when a connect is given
 *       up), which must return within -B MS ms (default 2000); prints
 *       "# destroy_qp took MS ms"; then the outcome must be 'failed'.
 */
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <netdb.h>
#include <arpa/inet.h>
#include "common.h"

#define MAX_LISTEN 4

enum { P_REQ, P_QP, P_ACCEPTED, P_ESTAB, P_DISC, P_DOWN, P_NUM };
static const char *tfile;
static int backlog = 8;

static struct ibv_pd *pd_of[8];
static struct ibv_context *ctx_of[8];

/* One PD per device, kept for the process's lifetime. */
static struct ibv_pd *pd_for(struct ibv_context *ctx)
{
	int i;

	for (i = 0; i < 8 && ctx_of[i]; i++)
		if (ctx_of[i] == ctx)
			return pd_of[i];
	if (i == 8)
		DIE("too many devices");
	ctx_of[i] = ctx;
	pd_of[i] = ibv_alloc_pd(ctx);
	if (!pd_of[i])
		DIE("ibv_alloc_pd: %s", strerror(errno));
	if (!mmap_key_pad(ctx))
		DIE("ibv_create_cq (pad): %s", strerror(errno));
	return pd_of[i];
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = QP_PAD_WR, .max_recv_wr = QP_PAD_WR,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_pd *pd = pd_for(id->verbs);	/* the pad CQ comes first */
	struct ibv_cq *cq = ibv_create_cq(id->verbs, CQ_PAD_N, NULL, NULL, 0);

	if (!cq)
		DIE("ibv_create_cq: %s", strerror(errno));
	a.send_cq = cq;
	a.recv_cq = cq;
	if (rdma_create_qp(id, pd, &a))
		DIE("rdma_create_qp: %s", strerror(errno));
}

static void drop_qp(struct rdma_cm_id *id)
{
	struct ibv_cq *cq = id->qp ? id->qp->send_cq : NULL;

	rdma_destroy_qp(id);
	if (cq)
		ibv_destroy_cq(cq);
}

static int do_listen(int argc, char **argv, int reject, const char *pdata,
		     int n, double t)
{
	struct rdma_event_channel *ch = cm_channel();
	struct rdma_cm_id *lid[MAX_LISTEN];
	int nl = argc, served = 0, open = 0, i;
	double end = now_s() + t, (*pt)[P_NUM] = calloc(n, sizeof(*pt));

	if (nl < 1 || nl > MAX_LISTEN)
		DIE("1..%d listen addresses", MAX_LISTEN);
	if (!pt)
		DIE("out of memory");
	for (i = 0; i < nl; i++)
		lid[i] = cm_listen(ch, argv[i], (void *)(long)i, backlog);
	NOTE("listening");
	while (served < n || open > 0) {
		struct rdma_cm_event *ev = cm_wait(ch, end - now_s());
		struct rdma_conn_param cp = { 0 };
		char ip[INET_ADDRSTRLEN] = "?";
		struct sockaddr_in *peer;
		double tev = now_s();
		long k, ci;

		if (!ev)
			DIE("timeout: %d of %d requests served, %d open", served,
			    n, open);
		/* accepted ids carry their index (set below) */
		ci = ev->id != ev->listen_id ? (long)ev->id->context : -1;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			ci = served;
			ev->id->context = (void *)ci;
			if (ci < n)
				pt[ci][P_REQ] = tev;
			k = (long)ev->listen_id->context;
			peer = (struct sockaddr_in *)rdma_get_peer_addr(ev->id);
			inet_ntop(AF_INET, &peer->sin_addr, ip, sizeof(ip));
			printf("request on listener %ld (%s) from %s\n", k,
			       argv[k], ip);
			fflush(stdout);
			served++;
			if (reject) {
				struct rdma_cm_id *id = ev->id;

				if (rdma_reject(id, pdata,
						pdata ? strlen(pdata) : 0))
					DIE("rdma_reject: %s", strerror(errno));
				rdma_ack_cm_event(ev);
				rdma_destroy_id(id);
				break;
			}
			make_qp(ev->id);
			cp.responder_resources = 1;
			cp.initiator_depth = 1;
			if (ci < n)
				pt[ci][P_QP] = now_s();
			if (rdma_accept(ev->id, &cp))
				DIE("rdma_accept: %s", strerror(errno));
			if (ci < n)
				pt[ci][P_ACCEPTED] = now_s();
			open++;
			rdma_ack_cm_event(ev);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (ci >= 0 && ci < n)
				pt[ci][P_ESTAB] = tev;
			rdma_ack_cm_event(ev);
			break;
		default:
			if (ev->event != RDMA_CM_EVENT_DISCONNECTED)
				NOTE("event %s status %d",
				     rdma_event_str(ev->event), ev->status);
			if (ev->id != ev->listen_id && ev->id->qp &&
			    (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			     ev->event == RDMA_CM_EVENT_CONNECT_ERROR ||
			     ev->event == RDMA_CM_EVENT_UNREACHABLE)) {
				/* an accepted connection ended */
				struct rdma_cm_id *id = ev->id;

				rdma_ack_cm_event(ev);
				drop_qp(id);
				rdma_destroy_id(id);
				if (ci >= 0 && ci < n) {
					pt[ci][P_DISC] = tev;
					pt[ci][P_DOWN] = now_s();
				}
				open--;
				break;
			}
			rdma_ack_cm_event(ev);
			break;
		}
	}
	for (i = 0; i < nl; i++)
		rdma_destroy_id(lid[i]);
	rdma_destroy_event_channel(ch);
	if (tfile)
		write_times(tfile, "P", pt[0], served < n ? served : n, P_NUM);
	free(pt);
	NOTE("served %d request(s)", served);
	return 0;
}

static int do_connect(const char *ap, const char *expect, const char *pdata,
		      double t, int drop_ms, int bound_ms)
{
	struct rdma_event_channel *ch = cm_channel();
	struct rdma_cm_id *id = cm_resolve(ch, ap);
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1 };
	struct rdma_cm_event *ev;
	double t0;
	int match, ok = 1;

	make_qp(id);

	t0 = now_s();
	if (rdma_connect(id, &cp))
		DIE("rdma_connect: %s", strerror(errno));
	if (drop_ms >= 0) {
		double d0;

		usleep(drop_ms * 1000);
		d0 = now_s();
		drop_qp(id);
		d0 = (now_s() - d0) * 1000;
		printf("# destroy_qp took %.0f ms\n", d0);
		CHECK(d0 <= bound_ms, "destroy_qp of a connecting QP returned within %d ms",
		      bound_ms);
		ok &= d0 <= bound_ms;
	}
	ev = cm_wait(ch, t);
	if (!ev) {
		printf("# outcome none after %.0f ms\n", (now_s() - t0) * 1000);
		printf("FAIL - no connection event within %.0f s\n", t);
		return 1;
	}
	printf("# outcome %s status %d after %.0f ms\n",
	       rdma_event_str(ev->event), ev->status, (now_s() - t0) * 1000);
	if (!strcmp(expect, "established"))
		match = ev->event == RDMA_CM_EVENT_ESTABLISHED;
	else if (!strcmp(expect, "rejected"))
		match = ev->event == RDMA_CM_EVENT_REJECTED;
	else
		match = ev->event == RDMA_CM_EVENT_REJECTED ||
			ev->event == RDMA_CM_EVENT_UNREACHABLE ||
			ev->event == RDMA_CM_EVENT_CONNECT_ERROR;
	CHECK(match, "outcome %s is '%s'", rdma_event_str(ev->event), expect);
	ok &= match;
	if (pdata && ev->event == RDMA_CM_EVENT_REJECTED) {
		const struct rdma_conn_param *p = &ev->param.conn;
		size_t want = strlen(pdata);
		int same = p->private_data && p->private_data_len >= want &&
			   !memcmp(p->private_data, pdata, want);

		printf("# reject private data: %u byte(s) '%.*s'\n",
		       p->private_data_len,
		       (int)(p->private_data ? p->private_data_len : 0),
		       p->private_data ? (const char *)p->private_data : "");
		CHECK(same, "reject carried the private data '%s'", pdata);
		ok &= same;
	}
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		rdma_ack_cm_event(ev);
		if (rdma_disconnect(id))
			DIE("rdma_disconnect: %s", strerror(errno));
		ev = cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 15);
		CHECK(ev, "disconnected");
		ok &= !!ev;
	}
	if (ev)
		rdma_ack_cm_event(ev);
	if (drop_ms < 0)
		drop_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode, *expect = "established", *pdata = NULL;
	int reject = 0, n = 1, c, drop_ms = -1, bound_ms = 2000;
	double t = 30;

	if (argc < 2)
		DIE("usage: siw_cmtest listen|connect ... (see the source)");
	mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "m:P:n:t:e:D:B:T:b:")) != -1) {
		switch (c) {
		case 'm':
			reject = !strcmp(optarg, "reject");
			break;
		case 'P':
			pdata = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 't':
			t = atof(optarg);
			break;
		case 'e':
			expect = optarg;
			break;
		case 'D':
			drop_ms = atoi(optarg);
			break;
		case 'B':
			bound_ms = atoi(optarg);
			break;
		case 'T':
			tfile = optarg;
			break;
		case 'b':
			backlog = atoi(optarg);
			break;
		default:
			DIE("bad option");
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "listen"))
		return do_listen(argc - optind, argv + optind, reject, pdata,
				 n, t);
	if (!strcmp(mode, "connect") && optind == argc - 1)
		return do_connect(argv[optind], expect, pdata, t, drop_ms,
				  bound_ms);
	DIE("usage: siw_cmtest listen|connect ... (see the source)");
}
