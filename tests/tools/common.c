// SPDX-License-Identifier: GPL-2.0
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <rdma/ib_user_verbs.h>

int t_failures;
char t_context[256];
void (*lb_pre_cli_qp)(void);
void (*lb_post_cli_qp)(void);
int t_verbose;

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

uint8_t pat_byte(uint64_t key, uint64_t k)
{
	uint64_t w = mix64(key * 0x9E3779B97F4A7C15ULL + (k >> 3) + 1);

	return (uint8_t)(w >> ((k & 7) * 8));
}

void pat_fill(uint8_t *dst, uint64_t key, uint64_t k0, size_t len)
{
	size_t i = 0;

	while (i < len && ((k0 + i) & 7))
		dst[i] = pat_byte(key, k0 + i), i++;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix64(key * 0x9E3779B97F4A7C15ULL + ((k0 + i) >> 3) + 1);

		memcpy(dst + i, &w, 8); /* little endian: byte j == w >> 8j */
	}
	for (; i < len; i++)
		dst[i] = pat_byte(key, k0 + i);
}

size_t pat_check(const uint8_t *p, uint64_t key, uint64_t k0, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pat_byte(key, k0 + i))
			return i;
	return (size_t)-1;
}

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

int lb_pair_create(struct lb_pair *lp, const char *addr, int port,
		   struct ibv_qp_init_attr *cap, double timeout)
{
	struct rdma_addrinfo hints = { 0 }, *res = NULL;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { 0 };
	char ps[16];
	struct ibv_qp_init_attr qa;

	memset(lp, 0, sizeof(*lp));
	lp->ch = rdma_create_event_channel();
	if (!lp->ch)
		return -1;
	if (rdma_create_id(lp->ch, &lp->listen, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(lp->ch, &lp->cli, NULL, RDMA_PS_TCP))
		return -1;
	snprintf(ps, sizeof(ps), "%d", port);
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr, ps, &hints, &res)) {
		printf("# rdma_getaddrinfo(%s): %s\n", addr, strerror(errno));
		return -1;
	}
	if (rdma_bind_addr(lp->listen, res->ai_src_addr) || rdma_listen(lp->listen, 4)) {
		printf("# bind/listen %s:%d: %s\n", addr, port, strerror(errno));
		rdma_freeaddrinfo(res);
		return -1;
	}
	if (rdma_resolve_addr(lp->cli, NULL, res->ai_src_addr, 2000)) {
		rdma_freeaddrinfo(res);
		return -1;
	}
	rdma_freeaddrinfo(res);
	ev = cm_expect(lp->ch, RDMA_CM_EVENT_ADDR_RESOLVED, timeout);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(lp->cli, 2000))
		return -1;
	ev = cm_expect(lp->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
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
	if (rdma_connect(lp->cli, &cp)) {
		printf("# rdma_connect: %s\n", strerror(errno));
		return -1;
	}
	int est = 0;
	double end = now_s() + timeout;

	while (est < 2) {
		ev = cm_wait(lp->ch, end - now_s());
		if (!ev) {
			printf("# loopback connect timed out\n");
			return -1;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			lp->srv = ev->id;
			qa = *cap;
			qa.qp_type = IBV_QPT_RC;
			qa.send_cq = lp->cq_srv;
			qa.recv_cq = lp->cq_srv;
			if (lp->srv->verbs != lp->ctx)
				printf("# note: server id on a different verbs context\n");
			if (rdma_create_qp(lp->srv, lp->pd, &qa) || rdma_accept(lp->srv, &cp)) {
				printf("# server create_qp/accept: %s\n", strerror(errno));
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

void lb_pair_destroy(struct lb_pair *lp)
{
	if (lp->cli && lp->cli->qp)
		rdma_disconnect(lp->cli);
	/* drain events briefly */
	struct rdma_cm_event *ev;
	double end = now_s() + 1.0;
	int disc = 0;

	while (disc < 2 && (ev = cm_wait(lp->ch, end - now_s()))) {
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
