// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * KUnit suite for the connection endpoint state machine (siw_cm.c): real
 * TCP sockets on the loopback device of the initial namespace, the far
 * end driven byte by byte from here, the endpoint run by its own socket
 * callbacks, timer and work item. iw_cm is replaced by a recording cm_id,
 * the device by a bare siw_device with a reference count. Covered:
 * CONNECTING -> AWAIT_REPLY -> CLOSED (reject, bad reply, timeout, kill),
 * CONNECTING -> CLOSED (refused), AWAIT_REQUEST -> CLOSED (refused with an
 * MPA reply, timeout, peer gone), that a closed endpoint ignores every
 * event, and that the work leaves its events to a holder of the mutex.
 */
#include <kunit/test.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/net.h>
#include <linux/percpu.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "siw_kunit.h"
#include "siw_cm.h"

#define CMT_WAIT_MS	2000
#define CMT_STEP_MS	5

struct cmt {
	struct kunit *test;
	struct siw_device *sdev;
	struct siw_cep *cep;		/* the test holds a reference */
	struct socket *lsock;		/* listener on 127.0.0.1 */
	struct socket *peer;		/* far end, driven by the test */
	struct socket *spare;		/* bound, not listening */
	struct sockaddr_storage laddr;	/* lsock's address */

	/* recording iw_cm_id */
	struct iw_cm_id id;
	atomic_t id_refs;
	spinlock_t lock;		/* the event record */
	int nevents;
	enum iw_cm_event_type ev_type;
	int ev_status;
	u8 ev_pd[32];
	u8 ev_pd_len;
};

static int cmt_event(struct iw_cm_id *id, struct iw_cm_event *ev)
{
	struct cmt *t = container_of(id, struct cmt, id);
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	t->nevents++;
	t->ev_type = ev->event;
	t->ev_status = ev->status;
	t->ev_pd_len = min_t(u8, ev->private_data_len, sizeof(t->ev_pd));
	if (t->ev_pd_len)
		memcpy(t->ev_pd, ev->private_data, t->ev_pd_len);
	spin_unlock_irqrestore(&t->lock, flags);
	return 0;
}

static void cmt_add_ref(struct iw_cm_id *id)
{
	atomic_inc(&container_of(id, struct cmt, id)->id_refs);
}

static void cmt_rem_ref(struct iw_cm_id *id)
{
	atomic_dec(&container_of(id, struct cmt, id)->id_refs);
}

/* Wait until the endpoint is closed and its close has finished. */
static bool cmt_wait_closed(struct cmt *t)
{
	int i;

	for (i = 0; i < CMT_WAIT_MS / CMT_STEP_MS; i++) {
		if (READ_ONCE(t->cep->state) == SIW_CEP_CLOSED)
			break;
		msleep(CMT_STEP_MS);
	}
	mutex_lock(&t->cep->mtx);
	siw_cep_unlock(t->cep);
	return t->cep->state == SIW_CEP_CLOSED;
}

static bool cmt_wait_state(struct cmt *t, enum siw_cep_state s)
{
	int i;

	for (i = 0; i < CMT_WAIT_MS / CMT_STEP_MS; i++) {
		if (READ_ONCE(t->cep->state) == s)
			return true;
		msleep(CMT_STEP_MS);
	}
	return false;
}

/*
 * Read exactly @len bytes from the far end. Returns @len, 0 at EOF,
 * -ECONNRESET and the like, or -ETIMEDOUT if nothing came in time.
 */
static int cmt_read(struct cmt *t, void *buf, size_t len)
{
	struct msghdr msg = {};
	struct kvec iov;
	size_t got = 0;
	int i, rv;

	for (i = 0; i < CMT_WAIT_MS / CMT_STEP_MS && got < len; i++) {
		iov.iov_base = (u8 *)buf + got;
		iov.iov_len = len - got;
		msg.msg_flags = MSG_DONTWAIT;
		rv = kernel_recvmsg(t->peer, &msg, &iov, 1, len - got,
				    MSG_DONTWAIT);
		if (rv == -EAGAIN) {
			msleep(CMT_STEP_MS);
			continue;
		}
		if (rv <= 0)
			return got ? (int)got : rv;
		got += rv;
	}
	return got ? (int)got : -ETIMEDOUT;
}

static int cmt_send(struct cmt *t, const void *buf, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };

	return kernel_sendmsg(t->peer, &msg, &iov, 1, len);
}

/* An MPA request or reply; a v2 block when @v2. Returns its length. */
static size_t cmt_frame(u8 *buf, const char *key, u16 bits, bool v2,
			u16 ird, u16 ord, const char *pd)
{
	struct mpa_rr *rr = (struct mpa_rr *)buf;
	size_t pd_len = pd ? strlen(pd) : 0;
	u8 *p = buf + sizeof(*rr);

	memcpy(rr->key, key, MPA_KEY_SIZE);
	rr->bits = cpu_to_be16(bits);
	rr->pd_len = cpu_to_be16(pd_len + (v2 ? sizeof(struct mpa_v2_data) :
					   0));
	if (v2) {
		struct mpa_v2_data *d = (struct mpa_v2_data *)p;

		d->ird = cpu_to_be16(ird);
		d->ord = cpu_to_be16(ord);
		p += sizeof(*d);
	}
	memcpy(p, pd, pd_len);
	return p + pd_len - buf;
}

static void cmt_exit(void *data)
{
	struct cmt *t = data;

	if (t->cep) {
		if (READ_ONCE(t->cep->state) != SIW_CEP_CLOSED)
			siw_cep_kick(t->cep, SIW_EV_KILL);
		cmt_wait_closed(t);
		flush_work(&t->cep->work);
		siw_cep_put(t->cep);
	}
	if (t->peer)
		sock_release(t->peer);
	if (t->spare)
		sock_release(t->spare);
	if (t->lsock)
		sock_release(t->lsock);
}

static struct cmt *cmt_new(struct kunit *test)
{
	struct cmt *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	struct sockaddr_in *sin;
	int rv;

	KUNIT_ASSERT_NOT_NULL(test, t);
	t->test = test;
	spin_lock_init(&t->lock);
	t->id.event_handler = cmt_event;
	t->id.add_ref = cmt_add_ref;
	t->id.rem_ref = cmt_rem_ref;

	t->sdev = siw_kunit_sdev(test);
	t->sdev->base.dev.init_name = "siw_kunit_cm";
	refcount_set(&t->sdev->base.refcount, 1);
	init_completion(&t->sdev->base.unreg_completion);
	t->sdev->netdev = init_net.loopback_dev;
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cmt_exit, t),
			0);

	rv = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			      &t->lsock);
	KUNIT_ASSERT_EQ(test, rv, 0);
	sin = (struct sockaddr_in *)&t->laddr;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rv = siw_kernel_bind(t->lsock, &t->laddr, sizeof(*sin));
	KUNIT_ASSERT_EQ_MSG(test, rv, 0, "bind 127.0.0.1 (loopback up?)");
	KUNIT_ASSERT_EQ(test, kernel_listen(t->lsock, 4), 0);
	KUNIT_ASSERT_GT(test, kernel_getsockname(t->lsock,
						 (struct sockaddr *)&t->laddr),
			0);
	return t;
}

/* Accept the far end of a connection the endpoint made to lsock. */
static int cmt_accept(struct cmt *t)
{
	int i, rv = -EAGAIN;

	for (i = 0; i < CMT_WAIT_MS / CMT_STEP_MS && rv == -EAGAIN; i++) {
		rv = kernel_accept(t->lsock, &t->peer, O_NONBLOCK);
		if (rv == -EAGAIN)
			msleep(CMT_STEP_MS);
	}
	return rv;
}

/*
 * An active endpoint, as siw_connect() leaves it, connecting to @to:
 * MPA @rev, CRC and peer-to-peer asked, IRD 4 / ORD 8, private data
 * "hello".
 */
static void cmt_connect(struct cmt *t, struct sockaddr_storage *to, u8 rev)
{
	struct kunit *test = t->test;
	struct siw_cep *cep;
	bool sock;

	cep = siw_cep_alloc(t->sdev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(cep));
	kref_get(&cep->ref);
	t->cep = cep;
	KUNIT_EXPECT_EQ(test, refcount_read(&t->sdev->base.refcount), 2);

	mutex_lock(&cep->mtx);
	cep->active = true;
	cep->raddr = *to;
	cep->rev = rev;
	cep->v2 = rev == MPA_REVISION_2;
	cep->crc = true;
	cep->p2p = cep->v2;
	cep->ird = 4;
	cep->ord = 8;
	cep->ulp_pd = kmemdup("hello", 5, GFP_KERNEL);
	cep->ulp_pd_len = cep->ulp_pd ? 5 : 0;
	KUNIT_EXPECT_EQ(test, siw_sock_create(t->sdev, AF_INET, &cep->sock),
			0);
	if (cep->sock) {
		t->id.add_ref(&t->id);
		cep->cm_id = &t->id;
		siw_cep_hook(cep, NULL);
		siw_cep_set_state(cep, SIW_CEP_CONNECTING);
		siw_cep_arm(cep, 5000);
		siw_cep_kick(cep, SIW_EV_SOCK);
	}
	/*
	 * Read before letting go: the unlock may run the step the kick's
	 * work left to it, and a refused connect closes the socket there.
	 */
	sock = cep->sock;
	siw_cep_unlock(cep);
	KUNIT_ASSERT_TRUE(test, sock);
}

/* Connect to lsock, accept, and check the MPA v2 request it sent. */
static void cmt_connect_v2(struct cmt *t)
{
	struct kunit *test = t->test;
	u8 got[64], want[64];
	size_t len;

	cmt_connect(t, &t->laddr, MPA_REVISION_2);
	KUNIT_ASSERT_EQ(test, cmt_accept(t), 0);
	len = cmt_frame(want, MPA_KEY_REQ,
			MPA_FLAG_CRC | MPA_FLAG_ENHANCED | MPA_REVISION_2,
			true, 4 | MPA_V2_PEER_TO_PEER,
			8 | MPA_V2_RTR_WRITE | MPA_V2_RTR_READ, "hello");
	KUNIT_ASSERT_EQ(test, cmt_read(t, got, len), (int)len);
	KUNIT_EXPECT_MEMEQ(test, got, want, len);
	KUNIT_EXPECT_TRUE(test, cmt_wait_state(t, SIW_CEP_AWAIT_REPLY));
}

/* One CONNECT_REPLY with @status, the endpoint closed, refs returned. */
static void cmt_expect_failed(struct cmt *t, int status)
{
	struct kunit *test = t->test;

	KUNIT_ASSERT_TRUE(test, cmt_wait_closed(t));
	KUNIT_EXPECT_EQ(test, t->nevents, 1);
	KUNIT_EXPECT_EQ(test, t->ev_type, IW_CM_EVENT_CONNECT_REPLY);
	KUNIT_EXPECT_EQ(test, t->ev_status, status);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->id_refs), 0);
	KUNIT_EXPECT_EQ(test, refcount_read(&t->sdev->base.refcount), 1);
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_CONN_FAIL), 1ULL);
	KUNIT_EXPECT_NULL(test, t->cep->sock);
}

static void siw_test_cep_active_reject(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	u8 buf[64];
	size_t len;

	cmt_connect_v2(t);
	len = cmt_frame(buf, MPA_KEY_REP,
			MPA_FLAG_REJECT | MPA_FLAG_ENHANCED | MPA_REVISION_2,
			true, 0, 0, "no");
	/* the reply in two pieces: the endpoint waits for all of it */
	KUNIT_ASSERT_EQ(test, cmt_send(t, buf, 7), 7);
	msleep(20);
	KUNIT_EXPECT_EQ(test, t->cep->state, SIW_CEP_AWAIT_REPLY);
	KUNIT_ASSERT_EQ(test, cmt_send(t, buf + 7, len - 7), (int)len - 7);

	cmt_expect_failed(t, -ECONNREFUSED);
	KUNIT_EXPECT_EQ(test, t->ev_pd_len, 2);
	KUNIT_EXPECT_MEMEQ(test, t->ev_pd, "no", 2);
	/* a refusal is an orderly close: FIN, not reset */
	KUNIT_EXPECT_EQ(test, cmt_read(t, buf, 1), 0);
}

/*
 * The work finds the endpoint held, as by a connect or accept call that
 * drives the handshake itself: it leaves the event to the holder instead
 * of waiting (or spinning) for the mutex, and the holder's
 * siw_cep_unlock() runs the step before it lets go.
 */
static void siw_test_cep_busy_holder(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	bool left = false;
	u8 buf[64];
	size_t len;
	int i;

	cmt_connect_v2(t);
	mutex_lock(&t->cep->mtx);
	len = cmt_frame(buf, MPA_KEY_REP,
			MPA_FLAG_REJECT | MPA_FLAG_ENHANCED | MPA_REVISION_2,
			true, 0, 0, "no");
	KUNIT_ASSERT_EQ(test, cmt_send(t, buf, len), (int)len);
	/* the reply's data-ready queued the work, which must not wait */
	for (i = 0; i < CMT_WAIT_MS / CMT_STEP_MS && !left; i++) {
		left = test_bit(0, &t->cep->deferred);
		if (!left)
			msleep(CMT_STEP_MS);
	}
	KUNIT_EXPECT_TRUE(test, left);
	if (left)
		flush_work(&t->cep->work);	/* returns: the work did */
	KUNIT_EXPECT_EQ(test, t->cep->state, SIW_CEP_AWAIT_REPLY);
	KUNIT_EXPECT_EQ(test, t->nevents, 0);

	siw_cep_unlock(t->cep);
	/* the step ran within the unlock, not in a work item after it */
	KUNIT_EXPECT_EQ(test, t->nevents, 1);
	KUNIT_EXPECT_EQ(test, t->cep->state, SIW_CEP_CLOSED);
	cmt_expect_failed(t, -ECONNREFUSED);
	KUNIT_EXPECT_FALSE(test, test_bit(0, &t->cep->deferred));
}

static void siw_test_cep_active_bad_reply(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	u8 got[64], want[64];
	size_t len;

	/* revision 1: no v2 block, no peer-to-peer */
	cmt_connect(t, &t->laddr, MPA_REVISION_1);
	KUNIT_ASSERT_EQ(test, cmt_accept(t), 0);
	len = cmt_frame(want, MPA_KEY_REQ, MPA_FLAG_CRC | MPA_REVISION_1,
			false, 0, 0, "hello");
	KUNIT_ASSERT_EQ(test, cmt_read(t, got, len), (int)len);
	KUNIT_EXPECT_MEMEQ(test, got, want, len);

	len = cmt_frame(got, "MPA ID Bad Frame", MPA_REVISION_1, false, 0, 0,
			NULL);
	KUNIT_ASSERT_EQ(test, cmt_send(t, got, len), (int)len);
	cmt_expect_failed(t, -EPROTO);
	KUNIT_EXPECT_EQ(test, cmt_read(t, got, 1), -ECONNRESET);
}

static void siw_test_cep_active_newer_rev(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	u8 buf[64];
	size_t len;

	cmt_connect(t, &t->laddr, MPA_REVISION_1);
	KUNIT_ASSERT_EQ(test, cmt_accept(t), 0);
	KUNIT_ASSERT_EQ(test, cmt_read(t, buf, 25), 25);
	/* a responder may not answer a revision 1 request in revision 2 */
	len = cmt_frame(buf, MPA_KEY_REP, MPA_FLAG_ENHANCED | MPA_REVISION_2,
			true, 4, 4, NULL);
	KUNIT_ASSERT_EQ(test, cmt_send(t, buf, len), (int)len);
	cmt_expect_failed(t, -EPROTO);
}

static void siw_test_cep_active_timeout(struct kunit *test)
{
	struct cmt *t = cmt_new(test);

	cmt_connect_v2(t);
	mutex_lock(&t->cep->mtx);
	siw_cep_arm(t->cep, 20);
	siw_cep_unlock(t->cep);
	cmt_expect_failed(t, -ETIMEDOUT);
}

static void siw_test_cep_active_refused(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	struct sockaddr_storage to = {};
	struct sockaddr_in *sin = (struct sockaddr_in *)&to;
	int rv;

	/* a port that is bound but not listening answers with a reset */
	rv = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			      &t->spare);
	KUNIT_ASSERT_EQ(test, rv, 0);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	KUNIT_ASSERT_EQ(test, siw_kernel_bind(t->spare, &to, sizeof(*sin)), 0);
	KUNIT_ASSERT_GT(test, kernel_getsockname(t->spare,
						 (struct sockaddr *)&to), 0);

	cmt_connect(t, &to, MPA_REVISION_2);
	cmt_expect_failed(t, -ECONNREFUSED);
}

/* A kill (listener, namespace or module gone) and what follows it. */
static void siw_test_cep_kill_then_ignore(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	u8 buf[64];
	size_t len;

	cmt_connect_v2(t);
	siw_cep_kick(t->cep, SIW_EV_KILL);
	cmt_expect_failed(t, -ECONNABORTED);

	/* a closed endpoint reacts to nothing: no event, no second close */
	len = cmt_frame(buf, MPA_KEY_REP, MPA_FLAG_ENHANCED | MPA_REVISION_2,
			true, 4, 4, NULL);
	cmt_send(t, buf, len);
	siw_cep_kick(t->cep, SIW_EV_SOCK);
	siw_cep_kick(t->cep, SIW_EV_TIMEOUT);
	siw_cep_kick(t->cep, SIW_EV_DISCONNECT);
	siw_cep_kick(t->cep, SIW_EV_KILL);
	flush_work(&t->cep->work);
	KUNIT_EXPECT_EQ(test, t->nevents, 1);
	KUNIT_EXPECT_EQ(test, t->cep->state, SIW_CEP_CLOSED);
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_CONN_FAIL), 1ULL);
	KUNIT_EXPECT_EQ(test, refcount_read(&t->sdev->base.refcount), 1);
}

/*
 * A passive endpoint, as the listener leaves it: the far end is a client
 * socket connected to lsock, the endpoint owns the accepted one.
 */
static void cmt_passive(struct cmt *t)
{
	struct kunit *test = t->test;
	struct socket *ns = NULL;
	struct siw_cep *cep;
	int rv;

	rv = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			      &t->peer);
	KUNIT_ASSERT_EQ(test, rv, 0);
	rv = siw_kernel_connect(t->peer, &t->laddr,
				sizeof(struct sockaddr_in), 0);
	KUNIT_ASSERT_EQ(test, rv, 0);
	KUNIT_ASSERT_EQ(test, kernel_accept(t->lsock, &ns, 0), 0);

	cep = siw_cep_alloc(t->sdev);
	if (IS_ERR(cep))
		sock_release(ns);
	KUNIT_ASSERT_FALSE(test, IS_ERR(cep));
	kref_get(&cep->ref);
	t->cep = cep;
	mutex_lock(&cep->mtx);
	cep->sock = ns;
	KUNIT_EXPECT_EQ(test, siw_sock_addrs(ns, &cep->laddr, &cep->raddr), 0);
	siw_cep_set_state(cep, SIW_CEP_AWAIT_REQUEST);
	siw_cep_arm(cep, 5000);
	siw_cep_hook(cep, NULL);
	siw_cep_kick(cep, SIW_EV_SOCK);
	siw_cep_unlock(cep);
}

/* One failed connection on the passive side: no event reaches iw_cm. */
static void cmt_expect_dropped(struct cmt *t)
{
	struct kunit *test = t->test;

	KUNIT_ASSERT_TRUE(test, cmt_wait_closed(t));
	KUNIT_EXPECT_EQ(test, t->nevents, 0);
	KUNIT_EXPECT_EQ(test, siw_kunit_stat(t->sdev, SIW_STAT_CONN_FAIL), 1ULL);
	KUNIT_EXPECT_EQ(test, refcount_read(&t->sdev->base.refcount), 1);
	KUNIT_EXPECT_NULL(test, t->cep->sock);
}

static void siw_test_cep_passive_refuse(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	u8 req[64], got[64], want[64];
	size_t len, i;

	cmt_passive(t);
	/* markers are not supported: the answer is a reject reply */
	len = cmt_frame(req, MPA_KEY_REQ,
			MPA_FLAG_MARKERS | MPA_FLAG_ENHANCED | MPA_REVISION_2,
			true, 4 | MPA_V2_PEER_TO_PEER, 4 | MPA_V2_RTR_WRITE,
			"abc");
	/* byte by byte: nothing happens before the frame is complete */
	for (i = 0; i + 1 < len; i++) {
		KUNIT_ASSERT_EQ(test, cmt_send(t, req + i, 1), 1);
		usleep_range(1000, 2000);
		flush_work(&t->cep->work);
		KUNIT_ASSERT_EQ(test, READ_ONCE(t->cep->state),
				SIW_CEP_AWAIT_REQUEST);
	}
	KUNIT_ASSERT_EQ(test, cmt_send(t, req + i, 1), 1);

	cmt_expect_dropped(t);
	len = cmt_frame(want, MPA_KEY_REP,
			MPA_FLAG_REJECT | MPA_FLAG_ENHANCED | MPA_REVISION_2,
			true, 0, 0, NULL);
	KUNIT_ASSERT_EQ(test, cmt_read(t, got, len), (int)len);
	/* CRC in a reject follows the local policy: not compared */
	got[16] &= ~(MPA_FLAG_CRC >> 8);
	KUNIT_EXPECT_MEMEQ(test, got, want, len);
	KUNIT_EXPECT_EQ(test, cmt_read(t, got, 1), 0);
}

/*
 * A revision 2 request without the enhanced-connection flag carries no
 * IRD/ORD: the answer is in revision 1 (here a reject, for the markers
 * it asks for), never a revision 2 frame a peer would read IRD/ORD from.
 */
static void siw_test_cep_passive_rev2_plain(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	u8 req[64], got[64], want[64];
	size_t len;

	cmt_passive(t);
	len = cmt_frame(req, MPA_KEY_REQ, MPA_FLAG_MARKERS | MPA_REVISION_2,
			false, 0, 0, "abcd");
	KUNIT_ASSERT_EQ(test, cmt_send(t, req, len), (int)len);

	cmt_expect_dropped(t);
	len = cmt_frame(want, MPA_KEY_REP, MPA_FLAG_REJECT | MPA_REVISION_1,
			false, 0, 0, NULL);
	KUNIT_ASSERT_EQ(test, cmt_read(t, got, len), (int)len);
	got[16] &= ~(MPA_FLAG_CRC >> 8);
	KUNIT_EXPECT_MEMEQ(test, got, want, len);
	KUNIT_EXPECT_EQ(test, cmt_read(t, got, 1), 0);
}

static void siw_test_cep_passive_timeout(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	u8 req[64], buf[4];

	cmt_passive(t);
	cmt_frame(req, MPA_KEY_REQ, MPA_REVISION_1, false, 0, 0, NULL);
	KUNIT_ASSERT_EQ(test, cmt_send(t, req, 10), 10);
	mutex_lock(&t->cep->mtx);
	siw_cep_arm(t->cep, 20);
	siw_cep_unlock(t->cep);
	cmt_expect_dropped(t);
	KUNIT_EXPECT_EQ(test, cmt_read(t, buf, 1), -ECONNRESET);
}

static void siw_test_cep_passive_peer_gone(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	u8 req[64];

	cmt_passive(t);
	cmt_frame(req, MPA_KEY_REQ, MPA_REVISION_1, false, 0, 0, NULL);
	KUNIT_ASSERT_EQ(test, cmt_send(t, req, 12), 12);
	kernel_sock_shutdown(t->peer, SHUT_WR);
	cmt_expect_dropped(t);
}

/*
 * siw_cep_kick_all() while endpoints lose their last other reference:
 * the walk's own reference is then the last, and its put frees the
 * endpoint, which unlinks it under siw_ceps_lock. The walk must not hold
 * that lock (it did: a self-deadlock at namespace exit and rmmod).
 */
struct cmt_churn {
	struct siw_device *sdev;
	atomic_t stop;
	unsigned long done;
};

static int cmt_churner(void *data)
{
	struct cmt_churn *c = data;
	struct siw_cep *cep;

	while (!atomic_read(&c->stop)) {
		cep = siw_cep_alloc(c->sdev);
		if (IS_ERR(cep))
			break;
		/* no connection: give the device reference back ourselves */
		cep->dev_ref = false;
		ib_device_put(&c->sdev->base);
		siw_cep_put(cep);
		c->done++;
		if (!(c->done & 15))
			cond_resched();
	}
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

static void siw_test_cep_kick_all_last_put(struct kunit *test)
{
	struct cmt *t = cmt_new(test);
	struct cmt_churn *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	unsigned long kicks = 0, t0 = jiffies;
	struct task_struct *k;

	KUNIT_ASSERT_NOT_NULL(test, c);
	c->sdev = t->sdev;
	k = kthread_run(cmt_churner, c, "siw_kunit_churn");
	KUNIT_ASSERT_FALSE(test, IS_ERR(k));
	while (time_before(jiffies, t0 + 5 * HZ)) {
		siw_cep_kick_all(&init_net, SIW_EV_SOCK);
		kicks++;
		cond_resched();
	}
	atomic_set(&c->stop, 1);
	kthread_stop(k);
	siw_cm_flush();
	kunit_info(test, "%lu walks, %lu endpoints made and dropped", kicks,
		   c->done);
	KUNIT_EXPECT_GT(test, c->done, 0UL);
	KUNIT_EXPECT_GT(test, kicks, 0UL);
}

static struct kunit_case siw_cm_cases[] = {
	KUNIT_CASE(siw_test_cep_active_reject),
	KUNIT_CASE(siw_test_cep_busy_holder),
	KUNIT_CASE(siw_test_cep_active_bad_reply),
	KUNIT_CASE(siw_test_cep_active_newer_rev),
	KUNIT_CASE(siw_test_cep_active_timeout),
	KUNIT_CASE(siw_test_cep_active_refused),
	KUNIT_CASE(siw_test_cep_kill_then_ignore),
	KUNIT_CASE(siw_test_cep_passive_refuse),
	KUNIT_CASE(siw_test_cep_passive_rev2_plain),
	KUNIT_CASE(siw_test_cep_kick_all_last_put),
	KUNIT_CASE(siw_test_cep_passive_timeout),
	KUNIT_CASE(siw_test_cep_passive_peer_gone),
	{}
};

static struct kunit_suite siw_cm_suite = {
	.name = "siw_cm_endpoint",
	.test_cases = siw_cm_cases,
};

kunit_test_suites(&siw_cm_suite);
