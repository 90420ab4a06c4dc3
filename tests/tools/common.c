// SPDX-License-Identifier: GPL-2.0
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <rdma/ib_user_verbs.h>

int t_failures;
char t_context[256];
void (*lb_pre_cli_qp)(void);
void (*lb_post_cli_qp)(void);
int (*t_call_begin)(const char *name);
void (*t_call_end)(int token);
int t_verbose;

size_t first_diff(const uint8_t *a, const uint8_t *b, size_t len)
{
	if (!memcmp(a, b, len))
		return (size_t)-1;
	for (size_t i = 0; i < len; i++)
		if (a[i] != b[i])
			return i;
	return (size_t)-1;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void write_times(const char *file, const char *tag, const double *t,
		 int rows, int cols)
{
	FILE *f = fopen(file, "w");
	int i, j;

	if (!f)
		DIE("%s: %s", file, strerror(errno));
	for (i = 0; i < rows; i++) {
		fprintf(f, "%s %d", tag, i);
		for (j = 0; j < cols; j++)
			fprintf(f, " %.6f", t[i * cols + j]);
		fputc('\n', f);
	}
	if (fclose(f))
		DIE("%s: %s", file, strerror(errno));
}

struct ibv_context *open_dev(const char *name)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;

	if (!l)
		return NULL;
	for (int i = 0; i < n; i++)
		if (!name || !strcmp(ibv_get_device_name(l[i]), name)) {
			ctx = ibv_open_device(l[i]);
			break;
		}
	ibv_free_device_list(l);
	return ctx;
}

struct ibv_cq *mmap_key_pad(struct ibv_context *ctx)
{
	return ibv_create_cq(ctx, 1, NULL, NULL, 0);
}

const char *wc_status_name(enum ibv_wc_status st)
{
	return ibv_wc_status_str(st);
}

int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double timeout)
{
	double end = now_s() + timeout;
	unsigned int spin = 0;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return 1;
		if (now_s() > end)
			return 0;
		if (++spin > 1000) {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
}

const char *cm_ev_name(enum rdma_cm_event_type t)
{
	return rdma_event_str(t);
}

struct rdma_cm_event *cm_wait(struct rdma_event_channel *ch, double timeout)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int fl = fcntl(ch->fd, F_GETFL);

	if (!(fl & O_NONBLOCK))
		fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	double end = now_s() + timeout;

	for (;;) {
		if (!rdma_get_cm_event(ch, &ev))
			return ev;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return NULL;
		double left = end - now_s();

		if (left <= 0)
			return NULL;
		poll(&pfd, 1, (int)(left * 1000) + 1);
	}
}

struct rdma_cm_event *cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
				double timeout)
{
	struct rdma_cm_event *ev = cm_wait(ch, timeout);

	if (!ev) {
		printf("# timeout waiting for %s\n", rdma_event_str(want));
		return NULL;
	}
	if (ev->event != want) {
		printf("# expected %s, got %s (status %d)\n", rdma_event_str(want),
		       rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

int async_wait(struct ibv_context *ctx, struct ibv_async_event *ev, double timeout)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int fl = fcntl(ctx->async_fd, F_GETFL);

	if (!(fl & O_NONBLOCK))
		fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	double end = now_s() + timeout;

	for (;;) {
		if (!ibv_get_async_event(ctx, ev)) {
			ibv_ack_async_event(ev);
			return 1;
		}
		double left = end - now_s();

		if (left <= 0)
			return 0;
		poll(&pfd, 1, (int)(left * 1000) + 1);
	}
}

static int call_begin(const char *name)
{
	return t_call_begin ? t_call_begin(name) : 0;
}

static void call_end(int token)
{
	if (t_call_end)
		t_call_end(token);
}

/* @expr, between the t_call_begin/t_call_end hooks */
#define T_CALL(name, expr)                             \
	__extension__({                                \
		int t_tok_ = call_begin(name);         \
		__typeof__(expr) t_ret_ = (expr);      \
		call_end(t_tok_);                      \
		t_ret_;                                \
	})

int lb_resolve(struct rdma_event_channel **ch, struct rdma_cm_id **lid, struct rdma_cm_id **cli,
	       const char *addr, int port, double timeout)
{
	struct rdma_addrinfo hints = { 0 }, *res = NULL;
	struct rdma_cm_event *ev;
	char ps[16];

	*ch = rdma_create_event_channel();
	if (!*ch || T_CALL("rdma_create_id", rdma_create_id(*ch, lid, NULL, RDMA_PS_TCP)) ||
	    T_CALL("rdma_create_id", rdma_create_id(*ch, cli, NULL, RDMA_PS_TCP))) {
		printf("# rdma_create_id: %s\n", strerror(errno));
		return -1;
	}
	snprintf(ps, sizeof(ps), "%d", port);
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr, ps, &hints, &res)) {
		printf("# rdma_getaddrinfo(%s): %s\n", addr, strerror(errno));
		return -1;
	}
	if (T_CALL("rdma_bind_addr", rdma_bind_addr(*lid, res->ai_src_addr)) ||
	    T_CALL("rdma_listen", rdma_listen(*lid, 4)) ||
	    T_CALL("rdma_resolve_addr", rdma_resolve_addr(*cli, NULL, res->ai_src_addr, 2000))) {
		printf("# bind/listen/resolve %s:%d: %s\n", addr, port, strerror(errno));
		rdma_freeaddrinfo(res);
		return -1;
	}
	rdma_freeaddrinfo(res);
	ev = cm_expect(*ch, RDMA_CM_EVENT_ADDR_RESOLVED, timeout);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	if (T_CALL("rdma_resolve_route", rdma_resolve_route(*cli, 2000)))
		return -1;
	ev = cm_expect(*ch, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	return 0;
}

int lb_connect(struct rdma_event_channel *ch, struct rdma_cm_id *cli, struct rdma_conn_param *cp,
	       int (*accept)(struct rdma_cm_id *srv, struct rdma_conn_param *cp, void *arg),
	       void *arg, double timeout)
{
	struct rdma_cm_event *ev;
	double end = now_s() + timeout;
	int est = 0;

	if (T_CALL("rdma_connect", rdma_connect(cli, cp))) {
		printf("# rdma_connect: %s\n", strerror(errno));
		return -1;
	}
	while (est < 2) {
		ev = cm_wait(ch, end - now_s());
		if (!ev) {
			printf("# loopback connect timed out\n");
			return -1;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (accept(ev->id, cp, arg)) {
				rdma_ack_cm_event(ev);
				return -1;
			}
		} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			est++;
		} else {
			printf("# loopback connect: unexpected %s status %d\n",
			       rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			return -1;
		}
		rdma_ack_cm_event(ev);
	}
	return 0;
}

int lb_opt(int c, const char *arg, const char **addr, int *port)
{
	if (c == 'a')
		*addr = arg;
	else if (c == 'p')
		*port = atoi(arg);
	else
		return 0;
	return 1;
}

struct lb_accept_arg {
	struct lb_pair *lp;
	const struct ibv_qp_init_attr *cap;
};

/* lb_pair_create's passive side: its QP on cq_srv, accepted */
static int lb_accept(struct rdma_cm_id *srv, struct rdma_conn_param *cp, void *arg)
{
	struct lb_accept_arg *a = arg;
	struct lb_pair *lp = a->lp;
	struct ibv_qp_init_attr qa = *a->cap;

	lp->srv = srv;
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = lp->cq_srv;
	qa.recv_cq = lp->cq_srv;
	if (srv->verbs != lp->ctx)
		printf("# note: server id on a different verbs context\n");
	if (rdma_create_qp(srv, lp->pd, &qa) || rdma_accept(srv, cp)) {
		printf("# server create_qp/accept: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

int lb_pair_create(struct lb_pair *lp, const char *addr, int port,
		   struct ibv_qp_init_attr *cap, double timeout)
{
	struct lb_accept_arg aa = { .lp = lp, .cap = cap };
	struct rdma_conn_param cp = { 0 };
	struct ibv_qp_init_attr qa;

	memset(lp, 0, sizeof(*lp));
	if (lb_resolve(&lp->ch, &lp->listen, &lp->cli, addr, port, timeout))
		return -1;
	lp->ctx = lp->cli->verbs;
	lp->pd = ibv_alloc_pd(lp->ctx);
	lp->cq_cli = ibv_create_cq(lp->ctx, cap->cap.max_send_wr + cap->cap.max_recv_wr + 1, NULL,
				   NULL, 0);
	lp->cq_srv = ibv_create_cq(lp->ctx, cap->cap.max_send_wr + cap->cap.max_recv_wr + 1, NULL,
				   NULL, 0);
	if (!lp->pd || !lp->cq_cli || !lp->cq_srv)
		return -1;
	qa = *cap;
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = lp->cq_cli;
	qa.recv_cq = lp->cq_cli;
	if (lb_pre_cli_qp)
		lb_pre_cli_qp();
	if (rdma_create_qp(lp->cli, lp->pd, &qa)) {
		printf("# rdma_create_qp(cli): %s\n", strerror(errno));
		return -1;
	}
	lp->cli_cap = qa.cap;
	if (lb_post_cli_qp)
		lb_post_cli_qp();
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	return lb_connect(lp->ch, lp->cli, &cp, lb_accept, &aa, timeout);
}

void lb_pair_destroy(struct lb_pair *lp)
{
	if (lp->cli && lp->cli->qp)
		rdma_disconnect(lp->cli);
	/* drain events briefly */
	struct rdma_cm_event *ev;
	double end = now_s() + 1.0;
	int disc = 0;

	while (lp->ch && disc < 2 && (ev = cm_wait(lp->ch, end - now_s()))) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			disc++;
		rdma_ack_cm_event(ev);
	}
	if (lp->srv) {
		if (lp->srv->qp)
			rdma_destroy_qp(lp->srv);
		rdma_destroy_id(lp->srv);
	}
	if (lp->cli) {
		if (lp->cli->qp)
			rdma_destroy_qp(lp->cli);
	}
	if (lp->cq_cli)
		ibv_destroy_cq(lp->cq_cli);
	if (lp->cq_srv)
		ibv_destroy_cq(lp->cq_srv);
	if (lp->pd)
		ibv_dealloc_pd(lp->pd);
	if (lp->cli)
		rdma_destroy_id(lp->cli);
	if (lp->listen)
		rdma_destroy_id(lp->listen);
	if (lp->ch)
		rdma_destroy_event_channel(lp->ch);
	memset(lp, 0, sizeof(*lp));
}

/* "A.B.C.D:PORT" into @sa, or die */
void parse_addr_port(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *c = strrchr(s, ':');

	if (!c || c - s >= (long)sizeof(host))
		DIE("bad ADDR:PORT '%s'", s);
	memcpy(host, s, c - s);
	host[c - s] = 0;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(atoi(c + 1));
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		DIE("bad address '%s'", host);
}

struct rdma_event_channel *cm_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		DIE("rdma_create_event_channel: %s", strerror(errno));
	return ch;
}

struct rdma_cm_id *cm_resolve(struct rdma_event_channel *ch, const char *ap)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_in sa;

	parse_addr_port(ap, &sa);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		DIE("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sa, 2000))
		DIE("rdma_resolve_addr: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 10);
	if (!ev)
		DIE("address %s not resolved", ap);
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		DIE("rdma_resolve_route: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 10);
	if (!ev)
		DIE("route to %s not resolved", ap);
	rdma_ack_cm_event(ev);
	return id;
}

struct rdma_cm_id *cm_listen(struct rdma_event_channel *ch, const char *ap, void *ctx,
			     int backlog)
{
	struct rdma_cm_id *id;
	struct sockaddr_in sa;

	parse_addr_port(ap, &sa);
	if (rdma_create_id(ch, &id, ctx, RDMA_PS_TCP))
		DIE("rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(id, (struct sockaddr *)&sa))
		DIE("rdma_bind_addr %s: %s", ap, strerror(errno));
	if (rdma_listen(id, backlog))
		DIE("rdma_listen %s: %s", ap, strerror(errno));
	return id;
}

int uv_maps_read(struct uv_map *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && n < UV_MAPS_MAX) {
		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%lx-%lx %*s %lx", &m[n].start, &m[n].end, &m[n].off) == 3)
			n++;
	}
	fclose(f);
	return n;
}

int uv_maps_new(const struct uv_map *before, int nb, struct uv_map *out, int max)
{
	struct uv_map now[UV_MAPS_MAX];
	int nn = uv_maps_read(now), n = 0;

	for (int i = 0; i < nn; i++) {
		int old = 0;

		for (int j = 0; j < nb; j++)
			if (now[i].start == before[j].start && now[i].off == before[j].off)
				old = 1;
		if (!old && n < max)
			out[n++] = now[i];
	}
	return n;
}

static const char *alarm_msg;
static size_t alarm_len;

static void alarm_handler(int sig)
{
	(void)sig;
	if (write(STDOUT_FILENO, alarm_msg, alarm_len) < 0)
		_exit(3);
	_exit(3);
}

void t_alarm(unsigned int secs, const char *msg)
{
	alarm_msg = msg;
	alarm_len = strlen(msg);
	signal(SIGALRM, alarm_handler);
	alarm(secs);
}

int t_run_opt(struct t_run *r, int c, const char *arg)
{
	switch (c) {
	case 'S':
		r->seed = strtoull(arg, NULL, 0);
		r->seed_given = 1;
		return 1;
	case 't':
		r->timeout = atof(arg);
		return 1;
	case 'T':
		r->total = (unsigned int)atoi(arg);
		return 1;
	}
	return 0;
}

int siw_doorbell(struct ibv_qp *qp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req;
	struct ib_uverbs_post_send_resp resp;
	ssize_t w;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = qp->handle;
	req.cmd.wqe_size = sizeof(struct ibv_send_wr);
	w = write(qp->context->cmd_fd, &req, sizeof(req));
	return w == (ssize_t)sizeof(req) ? 0 : -errno;
}
