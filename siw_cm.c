// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: connection management.
 *
 * Every TCP connection is owned by one endpoint (struct siw_cep). All of
 * its state changes run under the endpoint mutex, either in the endpoint
 * work item (socket activity, timers, QP requests) or in an iw_cm verb
 * (accept, reject). Socket callbacks and siw_cm_qp_disconnect() never
 * change state; they set an event bit and queue the work item.
 *
 * Listening sockets, namespace teardown and address helpers live in
 * siw_listen.c; the socket callbacks and the handshake's socket I/O in
 * siw_cmsock.c.
 *
 * Reference counting of an endpoint: one reference for the connection
 * (dropped when the socket is released), one per queued work item or
 * armed timer, and one for an iw_cm child id that may still call accept
 * or reject (passive side, after CONNECT_REQUEST was delivered).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inetdevice.h>
#include <linux/tcp.h>
#include <linux/jiffies.h>
#include <linux/rcupdate.h>
#include <net/sock.h>
#include <net/tcp_states.h>
#include <net/ipv6.h>
#include <net/addrconf.h>
#include <net/net_namespace.h>

#include "siw.h"
#include "siw_trace.h"
#include "siw_cm.h"

/* TCP handshake limit of an active connect */
#define SIW_CONNECT_TIMEOUT_MS	10000
/* how long a delivered connection request waits for accept/reject */
#define SIW_ULP_ANSWER_MS	30000
/* after our FIN, how long to wait for the peer's */
#define SIW_CLOSE_TIMEOUT_MS	5000

static bool mpa_crc_required;
module_param(mpa_crc_required, bool, 0644);
MODULE_PARM_DESC(mpa_crc_required,
		 "Ask peers for MPA CRC32c on new connections (default off)");

static bool mpa_crc_strict;
module_param(mpa_crc_strict, bool, 0644);
MODULE_PARM_DESC(mpa_crc_strict,
		 "Refuse connections whose MPA CRC setting differs from mpa_crc_required");

static int mpa_rev = MPA_REVISION_2;
static bool mpa_p2p;
static unsigned int mpa_timeout_ms = 10000;

static int siw_param_set_rev(const char *val, const struct kernel_param *kp)
{
	int rev, rv;

	rv = kstrtoint(val, 0, &rev);
	if (rv)
		return rv;
	if (rev != MPA_REVISION_1 && rev != MPA_REVISION_2)
		return -EINVAL;
	WRITE_ONCE(*(int *)kp->arg, rev);
	return 0;
}

static const struct kernel_param_ops siw_rev_ops = {
	.set = siw_param_set_rev,
	.get = param_get_int,
};

module_param_cb(mpa_rev, &siw_rev_ops, &mpa_rev, 0644);
MODULE_PARM_DESC(mpa_rev,
		 "MPA revision to request: 1 or 2 (RFC 6581, default)");

module_param(mpa_p2p, bool, 0644);
MODULE_PARM_DESC(mpa_p2p,
		 "Request MPA v2 peer-to-peer mode with a ready-to-receive message (default off)");

static int siw_param_set_timeout(const char *val,
				 const struct kernel_param *kp)
{
	unsigned int ms;
	int rv;

	rv = kstrtouint(val, 0, &ms);
	if (rv)
		return rv;
	if (ms < 100 || ms > 600000)
		return -ERANGE;
	WRITE_ONCE(*(unsigned int *)kp->arg, ms);
	return 0;
}

static const struct kernel_param_ops siw_timeout_ops = {
	.set = siw_param_set_timeout,
	.get = param_get_uint,
};

module_param_cb(mpa_timeout_ms, &siw_timeout_ops, &mpa_timeout_ms, 0644);
MODULE_PARM_DESC(mpa_timeout_ms,
		 "Time allowed for the MPA request/reply exchange, ms (100..600000, default 10000)");

unsigned int siw_cm_mpa_timeout(void)
{
	return READ_ONCE(mpa_timeout_ms);
}

/*
 * Connection work runs on one of SIW_CM_NWQ ordered queues, a device's
 * always on the same one (siw_cm_wq_of()), so the steps of a device's
 * connections keep their order while a flood of connections to one
 * device (or namespace) does not hold up the teardown and setup of
 * devices on the other queues. Listening sockets accept on their own
 * queue. The queues live as long as the module: an endpoint may be
 * kicked after its device is gone.
 */
#define SIW_CM_NWQ	4
static struct workqueue_struct *siw_cm_wqs[SIW_CM_NWQ];
struct workqueue_struct *siw_listen_wq;

static struct workqueue_struct *siw_cm_wq_of(struct siw_device *sdev)
{
	return siw_cm_wqs[sdev->id % SIW_CM_NWQ];
}

/* Wait for the connection work queued so far, of every device. */
void siw_cm_flush(void)
{
	int i;

	flush_workqueue(siw_listen_wq);
	for (i = 0; i < SIW_CM_NWQ; i++)
		flush_workqueue(siw_cm_wqs[i]);
}
EXPORT_SYMBOL_IF_KUNIT(siw_cm_flush);

static const char * const siw_cep_state_name[] = {
	[SIW_CEP_IDLE] = "IDLE",
	[SIW_CEP_CONNECTING] = "CONNECTING",
	[SIW_CEP_AWAIT_REPLY] = "AWAIT_REPLY",
	[SIW_CEP_AWAIT_REQUEST] = "AWAIT_REQUEST",
	[SIW_CEP_AWAIT_ULP] = "AWAIT_ULP",
	[SIW_CEP_RDMA] = "RDMA",
	[SIW_CEP_CLOSING] = "CLOSING",
	[SIW_CEP_CLOSED] = "CLOSED",
};

/* every endpoint, so unload and namespace exit can find them */
static DEFINE_SPINLOCK(siw_ceps_lock);
static LIST_HEAD(siw_ceps);

static void siw_cep_work(struct work_struct *w);
static void siw_cep_timer(struct work_struct *w);

/* ------------------------------------------------------- endpoints */

static void siw_cep_free(struct kref *ref)
{
	struct siw_cep *cep = container_of(ref, struct siw_cep, ref);
	unsigned long flags;

	spin_lock_irqsave(&siw_ceps_lock, flags);
	list_del_rcu(&cep->all);
	spin_unlock_irqrestore(&siw_ceps_lock, flags);

	kfree(cep->ulp_pd);
	/* siw_cm_qp_disconnect() may still look at it under RCU */
	kfree_rcu(cep, rcu);
}

void siw_cep_put(struct siw_cep *cep)
{
	kref_put(&cep->ref, siw_cep_free);
}
EXPORT_SYMBOL_IF_KUNIT(siw_cep_put);

static void siw_cep_queue(struct siw_cep *cep)
{
	kref_get(&cep->ref);
	if (!queue_work(cep->wq, &cep->work))
		siw_cep_put(cep);
}

/* Post an event bit and run the state machine; any context. */
void siw_cep_kick(struct siw_cep *cep, int ev)
{
	/* before the event: the work that finds it must also find this */
	if (ev == SIW_EV_KILL)
		set_bit(SIW_DEFER_KILL, &cep->deferred);
	set_bit(ev, &cep->events);
	siw_cep_queue(cep);
}
EXPORT_SYMBOL_IF_KUNIT(siw_cep_kick);

void siw_cep_arm(struct siw_cep *cep, unsigned int ms)
{
	unsigned long delay = msecs_to_jiffies(ms);

	cep->deadline = jiffies + delay;
	cep->armed = true;
	kref_get(&cep->ref);
	if (mod_delayed_work(cep->wq, &cep->timer, delay))
		siw_cep_put(cep);	/* was pending: it holds a ref already */
}
EXPORT_SYMBOL_IF_KUNIT(siw_cep_arm);

static void siw_cep_disarm(struct siw_cep *cep)
{
	cep->armed = false;
	if (cancel_delayed_work(&cep->timer))
		siw_cep_put(cep);
}

void siw_cep_set_state(struct siw_cep *cep, enum siw_cep_state s)
{
	siw_dbg(cep->sdev, "cep %p %pISpc: %s -> %s\n", cep, &cep->raddr,
		siw_cep_state_name[cep->state], siw_cep_state_name[s]);
	siw_trace_cep(cep, s, siw_cep_state_name);
	cep->state = s;
}
EXPORT_SYMBOL_IF_KUNIT(siw_cep_set_state);

struct siw_cep *siw_cep_alloc(struct siw_device *sdev)
{
	struct siw_cep *cep;
	unsigned long flags;

	cep = kzalloc(sizeof(*cep), GFP_KERNEL);
	if (!cep)
		return ERR_PTR(-ENOMEM);
	/* the device must outlive the connection's teardown */
	if (!ib_device_try_get(&sdev->base)) {
		kfree(cep);
		return ERR_PTR(-ENODEV);
	}
	cep->dev_ref = true;
	cep->sdev = sdev;
	cep->wq = siw_cm_wq_of(sdev);
	cep->net = dev_net(sdev->netdev);
	kref_init(&cep->ref);
	mutex_init(&cep->mtx);
	INIT_LIST_HEAD(&cep->lnode);
	INIT_WORK(&cep->work, siw_cep_work);
	INIT_DELAYED_WORK(&cep->timer, siw_cep_timer);
	cep->state = SIW_CEP_IDLE;

	spin_lock_irqsave(&siw_ceps_lock, flags);
	list_add_tail_rcu(&cep->all, &siw_ceps);
	spin_unlock_irqrestore(&siw_ceps_lock, flags);
	return cep;
}
EXPORT_SYMBOL_IF_KUNIT(siw_cep_alloc);

/* ------------------------------------------------------- iw_cm events */

static const char *siw_event_name(enum iw_cm_event_type t)
{
	switch (t) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		return "CONNECT_REQUEST";
	case IW_CM_EVENT_CONNECT_REPLY:
		return "CONNECT_REPLY";
	case IW_CM_EVENT_ESTABLISHED:
		return "ESTABLISHED";
	case IW_CM_EVENT_DISCONNECT:
		return "DISCONNECT";
	case IW_CM_EVENT_CLOSE:
		return "CLOSE";
	}
	return "?";
}

/*
 * Hand an event to iw_cm. It only queues the event (copying private
 * data), so this may run under the endpoint mutex.
 */
int siw_cep_event(struct siw_cep *cep, struct iw_cm_id *id,
		  enum iw_cm_event_type type, int status, void *pd,
		  u16 pd_len)
{
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
	};
	int rv;

	memcpy(&ev.local_addr, &cep->laddr, sizeof(ev.local_addr));
	memcpy(&ev.remote_addr, &cep->raddr, sizeof(ev.remote_addr));
	if (type == IW_CM_EVENT_CONNECT_REQUEST ||
	    type == IW_CM_EVENT_CONNECT_REPLY ||
	    type == IW_CM_EVENT_ESTABLISHED) {
		ev.ird = cep->ev_ird;
		ev.ord = cep->ev_ord;
	}
	if (pd_len && (type == IW_CM_EVENT_CONNECT_REQUEST ||
		       type == IW_CM_EVENT_CONNECT_REPLY)) {
		if (pd_len > U8_MAX) {
			siw_warn(cep->sdev,
				 "private data of %pISpc truncated from %u to %u bytes\n",
				 &cep->raddr, pd_len, U8_MAX);
			pd_len = U8_MAX;
		}
		ev.private_data = pd;
		ev.private_data_len = pd_len;
	}
	if (type == IW_CM_EVENT_CONNECT_REQUEST)
		ev.provider_data = cep;

	rv = id->event_handler(id, &ev);
	siw_dbg(cep->sdev, "cep %p %pISpc: %s status %d: %d\n", cep,
		&cep->raddr, siw_event_name(type), status, rv);
	return rv;
}

/* ------------------------------------------------------- MPA frames */

static void siw_v2_fill(struct mpa_v2_data *v2, u16 ird, u16 ord)
{
	v2->ird = cpu_to_be16(ird);
	v2->ord = cpu_to_be16(ord);
}

/* Passive side refusal: a reply with the R bit. */
static void siw_cep_send_reject(struct siw_cep *cep, const void *pd,
				u16 pd_len)
{
	struct mpa_v2_data v2 = {};
	u16 flags = MPA_FLAG_REJECT;

	if (READ_ONCE(mpa_crc_required))
		flags |= MPA_FLAG_CRC;
	if (cep->v2)
		flags |= MPA_FLAG_ENHANCED;
	siw_cep_send_frame(cep, MPA_KEY_REP, flags, cep->v2 ? &v2 : NULL,
			   pd, pd_len);
}

/* ----------------------------------------------------------- teardown */

/**
 * siw_cep_close - release everything a connection holds
 * @cep: endpoint, mutex held; the caller holds its own reference
 * @abort: reset the TCP connection instead of closing with a FIN
 * @status: status of the CLOSE event owed to an established cm_id
 *
 * Idempotent. The QP is detached first (it stops using the socket), then
 * the socket goes, then the events: DISCONNECT for an orderly close and
 * CLOSE, always last, for an established cm_id.
 */
static void siw_cep_close(struct siw_cep *cep, bool abort, int status)
{
	struct iw_cm_id *id = cep->cm_id;
	bool reset = abort && !cep->keep_sent;

	if (cep->state == SIW_CEP_CLOSED)
		return;
	siw_cep_set_state(cep, SIW_CEP_CLOSED);
	siw_cep_disarm(cep);
	siw_listen_forget(cep);

	if (cep->sock)
		siw_cep_unhook(cep);
	if (cep->attached) {
		siw_qp_llp_closed(cep->qp);
		cep->attached = false;
	}
	/*
	 * Zero-copy payload TCP still holds keeps a device reference, and
	 * an orphaned socket may retransmit it for minutes after the peer
	 * is gone, stalling device removal: such a close resets. (Its work
	 * requests were flushed, not completed, so nothing reported as
	 * delivered is lost.)
	 */
	if (cep->sock && cep->qp &&
	    siw_zc_started(cep->qp) != siw_zc_released(cep->qp)) {
		siw_dbg(cep->sdev, "%pISpc: zero-copy data unacknowledged at close, resetting\n",
			&cep->raddr);
		reset = true;
	}
	if (cep->sock) {
		/*
		 * Released without a reset, the socket must keep its timers
		 * to deliver what TCP holds; in a namespace that is going away
		 * nothing can be delivered.
		 */
		if (!reset && !siw_sock_hold_net(cep->sock->sk))
			reset = true;
		if (reset) {
			sock_no_linger(cep->sock->sk);
		} else {
			if (abort)
				siw_sock_discard_rx(cep->sock);
			kernel_sock_shutdown(cep->sock, SHUT_WR);
		}
		sock_release(cep->sock);
		cep->sock = NULL;
	}
	if (cep->qp) {
		siw_qp_put(cep->qp);
		WRITE_ONCE(cep->qp, NULL);
	}
	if (id) {
		if (cep->cm_open) {
			if (!abort && !status)
				siw_cep_event(cep, id, IW_CM_EVENT_DISCONNECT,
					      0, NULL, 0);
			siw_cep_event(cep, id, IW_CM_EVENT_CLOSE, status,
				      NULL, 0);
			cep->cm_open = false;
		}
		cep->cm_id = NULL;
		id->rem_ref(id);
	}
	if (cep->dev_ref) {
		cep->dev_ref = false;
		ib_device_put(&cep->sdev->base);
	}
	siw_cep_put(cep);	/* the connection's reference */
}

/* Active side failure before CONNECT_REPLY: report it, then close. */
static void siw_cep_fail_connect(struct siw_cep *cep, int status, void *pd,
				 u16 pd_len, bool abort)
{
	siw_stat_inc(cep->sdev, SIW_STAT_CONN_FAIL);
	siw_trace_mpa(cep, cep->qp, cep->rev, NULL, status);
	if (cep->cm_id)
		siw_cep_event(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY,
			      status, pd, pd_len);
	siw_cep_close(cep, abort, 0);
}

/* ------------------------------------------------------- active side */

static int siw_cep_send_request(struct siw_cep *cep)
{
	struct mpa_v2_data v2;
	u16 flags = 0, ird = cep->ird, ord = cep->ord;

	if (cep->crc)
		flags |= MPA_FLAG_CRC;
	if (cep->v2) {
		flags |= MPA_FLAG_ENHANCED;
		if (cep->p2p) {
			/* offer zero length Write and Read as RTR */
			ird |= MPA_V2_PEER_TO_PEER;
			ord |= MPA_V2_RTR_WRITE | MPA_V2_RTR_READ;
		}
		siw_v2_fill(&v2, ird, ord);
	}
	return siw_cep_send_frame(cep, MPA_KEY_REQ, flags,
				  cep->v2 ? &v2 : NULL, cep->ulp_pd,
				  cep->ulp_pd_len);
}

/**
 * siw_cep_got_reply - negotiate from a complete MPA reply, go to RTS
 * @cep: active endpoint in AWAIT_REPLY
 *
 * IRD/ORD (RFC 6581 3.2): our ORD may not exceed the responder's IRD. The
 * responder's ORD is what it will issue at us; we size our IRD to hold
 * that too (up to SIW_MAX_IRD), so a responder that kept a larger ORD
 * than we offered costs memory instead of a broken connection.
 */
static void siw_cep_got_reply(struct siw_cep *cep)
{
	struct siw_llp_params p = { .sock = cep->sock, .cep = cep };
	struct siw_device *sdev = cep->sdev;
	u32 ird = cep->ird, ord = cep->ord;
	struct siw_mpa_info mi;
	u8 *pd;
	int rv;

	rv = siw_mpa_decode(&cep->rx_hdr, cep->rx_pd, &mi);
	if (rv || mi.rev > cep->rev) {
		siw_warn(sdev, "peer %pISpc replied with MPA revision %u%s to our %u\n",
			 &cep->raddr, mi.rev,
			 mi.rev == MPA_REVISION_2 ? " without IRD/ORD" : "",
			 cep->rev);
		siw_cep_fail_connect(cep, -EPROTO, NULL, 0, true);
		return;
	}
	pd = cep->rx_pd + mi.ulp_off;
	if (mi.reject) {
		siw_warn(sdev, "peer %pISpc rejected the connection\n",
			 &cep->raddr);
		siw_cep_fail_connect(cep, -ECONNREFUSED, pd, mi.ulp_len, false);
		return;
	}
	if (mi.markers) {
		siw_warn(sdev, "peer %pISpc requests MPA markers, not supported\n",
			 &cep->raddr);
		siw_cep_fail_connect(cep, -EPROTO, NULL, 0, true);
		return;
	}
	rv = siw_mpa_crc_decide(cep->crc, mi.crc, READ_ONCE(mpa_crc_strict));
	if (rv < 0) {
		siw_warn(sdev, "peer %pISpc: MPA CRC %s, local policy requires %s\n",
			 &cep->raddr, mi.crc ? "on" : "off",
			 cep->crc ? "on" : "off");
		siw_cep_fail_connect(cep, -ECONNREFUSED, NULL, 0, true);
		return;
	}
	p.crc = rv;

	if (mi.v2) {
		siw_mpa_initiator_irdord(&ird, &ord, mi.ird, mi.ord);
		if (cep->p2p && (mi.ird_bits & MPA_V2_PEER_TO_PEER)) {
			if (mi.ord_bits & MPA_V2_RTR_WRITE) {
				p.rtr_send = RDMAP_WRITE;
			} else if (mi.ord_bits & MPA_V2_RTR_READ) {
				p.rtr_send = RDMAP_READ_REQ;
			} else {
				siw_warn(sdev, "peer %pISpc chose an RTR type we did not offer\n",
					 &cep->raddr);
				siw_cep_fail_connect(cep, -EPROTO, NULL, 0,
						     true);
				return;
			}
			p.rtr_enable = true;
		} else if (cep->p2p) {
			siw_dbg(sdev, "peer %pISpc declined peer-to-peer mode\n",
				&cep->raddr);
		}
	}
	p.ird = ird;
	p.ord = ord;
	siw_trace_mpa(cep, cep->qp, mi.rev, &p, 0);

	siw_cep_disarm(cep);
	rv = siw_qp_to_rts(cep->qp, &p);
	if (rv) {
		siw_warn(sdev, "QP %u cannot enter RTS for %pISpc: %d\n",
			 qp_id(cep->qp), &cep->raddr, rv);
		siw_cep_fail_connect(cep, rv, NULL, 0, true);
		return;
	}
	cep->attached = true;
	siw_cep_publish(cep);
	siw_tx_now(cep->qp);
	siw_cep_set_state(cep, SIW_CEP_RDMA);
	siw_rx_start(cep->qp);

	cep->ev_ird = ird;
	cep->ev_ord = ord;
	rv = siw_cep_event(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, 0,
			   pd, mi.ulp_len);
	if (rv) {
		siw_err(sdev, "iw_cm refused CONNECT_REPLY for %pISpc: %d\n",
			&cep->raddr, rv);
		siw_stat_inc(sdev, SIW_STAT_CONN_FAIL);
		siw_cep_close(cep, true, 0);
		return;
	}
	cep->cm_open = true;
	siw_stat_inc(sdev, SIW_STAT_CONN_ACTIVE);
	siw_dbg(sdev, "QP %u connected to %pISpc, rev %u crc %d ird %u ord %u rtr %d\n",
		qp_id(cep->qp), &cep->raddr, mi.rev, p.crc, ird, ord,
		p.rtr_enable);
}

static void siw_cep_do_reply(struct siw_cep *cep, unsigned long ev,
			     bool expired)
{
	int rv = siw_cep_rx_frame(cep, false);

	if (!rv) {
		siw_cep_got_reply(cep);
		return;
	}
	if (rv == -EAGAIN) {
		if (expired) {
			siw_warn(cep->sdev, "no MPA reply from %pISpc within %u ms\n",
				 &cep->raddr, READ_ONCE(mpa_timeout_ms));
			siw_cep_fail_connect(cep, -ETIMEDOUT, NULL, 0, true);
		}
		return;
	}
	siw_cep_fail_connect(cep, rv == -EPROTO ? -EPROTO : -ECONNRESET,
			     NULL, 0, true);
}

static void siw_cep_do_connect(struct siw_cep *cep, unsigned long ev,
			       bool expired)
{
	struct sock *sk = cep->sock->sk;
	int rv, st;

	if (!cep->connect_sent) {
		cep->connect_sent = true;
		rv = siw_kernel_connect(cep->sock, &cep->raddr,
					siw_addr_size(&cep->raddr), O_NONBLOCK);
		if (rv && rv != -EINPROGRESS) {
			siw_warn(cep->sdev, "TCP connect to %pISpc failed: %d\n",
				 &cep->raddr, rv);
			siw_cep_fail_connect(cep, rv, NULL, 0, true);
			return;
		}
		/*
		 * Hooked only now: a handshake that completed within the
		 * connect (a local link) would have woken the work for a step
		 * the caller takes below anyway. The state read after the hook
		 * sees what came before it; what comes after kicks the work.
		 */
		siw_cep_hook(cep, NULL);
	}
	st = READ_ONCE(sk->sk_state);
	if (st == TCP_ESTABLISHED) {
		siw_sock_addrs(cep->sock, &cep->laddr, &cep->raddr);
		rv = siw_cep_send_request(cep);
		if (rv) {
			siw_cep_fail_connect(cep, -ECONNRESET, NULL, 0, true);
			return;
		}
		siw_cep_set_state(cep, SIW_CEP_AWAIT_REPLY);
		siw_cep_arm(cep, READ_ONCE(mpa_timeout_ms));
		siw_cep_do_reply(cep, 0, false);
		return;
	}
	if (st == TCP_CLOSE || READ_ONCE(sk->sk_err)) {
		rv = sock_error(sk);
		if (!rv)
			rv = -ECONNREFUSED;
		siw_warn(cep->sdev, "TCP connect to %pISpc failed: %d\n",
			 &cep->raddr, rv);
		siw_cep_fail_connect(cep, rv, NULL, 0, true);
	} else if (expired) {
		siw_warn(cep->sdev, "TCP connect to %pISpc timed out after %u ms\n",
			 &cep->raddr, SIW_CONNECT_TIMEOUT_MS);
		siw_cep_fail_connect(cep, -ETIMEDOUT, NULL, 0, true);
	}
}

/**
 * siw_connect - iw_cm connect verb
 * @id: active cm_id
 * @param: QP number, IRD/ORD and private data of the ULP
 *
 * Sets up the socket and returns; the TCP handshake and MPA exchange run
 * in the endpoint's work item and end in exactly one CONNECT_REPLY.
 *
 * Return: 0, or -errno with no event to follow.
 */
static int siw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct siw_device *sdev = to_siw_dev(id->device);
	struct sockaddr_storage laddr = id->local_addr;
	const struct sockaddr_storage *raddr = &id->remote_addr;
	u8 rev = READ_ONCE(mpa_rev);
	u16 max_pd = MPA_MAX_PRIVDATA;
	enum siw_qp_state qstate;
	struct siw_cep *cep;
	struct siw_qp *qp;
	int rv;

	if (rev == MPA_REVISION_2)
		max_pd -= sizeof(struct mpa_v2_data);
	if (!siw_addr_family_ok(raddr) ||
	    laddr.ss_family != raddr->ss_family) {
		siw_warn(sdev, "connect: unsupported address family %u\n",
			 raddr->ss_family);
		return -EAFNOSUPPORT;
	}
	if (param->private_data_len > max_pd ||
	    (param->private_data_len && !param->private_data)) {
		siw_warn(sdev, "connect to %pISpc: private data length %u > %u\n",
			 raddr, param->private_data_len, max_pd);
		return -EINVAL;
	}
	qp = siw_qp_lookup(sdev, param->qpn);
	if (!qp) {
		siw_warn(sdev, "connect to %pISpc: no QP %u\n", raddr,
			 param->qpn);
		return -EINVAL;
	}
	spin_lock_bh(&qp->state_lock);
	qstate = qp->attrs.state;
	spin_unlock_bh(&qp->state_lock);
	if (qstate != SIW_QP_IDLE) {
		siw_warn(sdev, "connect to %pISpc: QP %u is not idle\n", raddr,
			 param->qpn);
		siw_qp_put(qp);
		return -EINVAL;
	}
	cep = siw_cep_alloc(sdev);
	if (IS_ERR(cep)) {
		siw_warn(sdev, "connect to %pISpc: no endpoint: %ld\n", raddr,
			 PTR_ERR(cep));
		siw_qp_put(qp);
		return PTR_ERR(cep);
	}
	mutex_lock(&cep->mtx);
	cep->active = true;
	WRITE_ONCE(cep->qp, qp);
	WRITE_ONCE(qp->cm_active, true);
	cep->laddr = laddr;
	cep->raddr = *raddr;
	cep->rev = rev;
	cep->v2 = rev == MPA_REVISION_2;
	cep->crc = READ_ONCE(mpa_crc_required);
	cep->p2p = cep->v2 && READ_ONCE(mpa_p2p);
	cep->ird = min_t(u32, param->ird, SIW_MAX_IRD);
	cep->ord = min_t(u32, param->ord, SIW_MAX_ORD);
	if (param->private_data_len) {
		cep->ulp_pd = kmemdup(param->private_data,
				      param->private_data_len, GFP_KERNEL);
		if (!cep->ulp_pd) {
			rv = -ENOMEM;
			goto fail;
		}
		cep->ulp_pd_len = param->private_data_len;
	}
	rv = siw_sock_create(sdev, raddr->ss_family, &cep->sock);
	if (rv) {
		siw_warn(sdev, "connect to %pISpc: no socket: %d\n", raddr, rv);
		goto fail;
	}
	rv = siw_kernel_bind(cep->sock, &laddr, siw_addr_size(&laddr));
	if (rv == -EADDRINUSE && siw_addr_port(&laddr)) {
		/* rdma_cm's port space is not TCP's: let TCP choose */
		siw_dbg(sdev, "port of %pISpc busy, binding port 0\n", &laddr);
		siw_addr_set_port(&laddr, 0);
		rv = siw_kernel_bind(cep->sock, &laddr,
				     siw_addr_size(&laddr));
	}
	if (rv) {
		siw_warn(sdev, "connect to %pISpc: cannot bind %pISpc: %d\n",
			 raddr, &laddr, rv);
		goto fail;
	}
	id->add_ref(id);
	cep->cm_id = id;
	siw_cep_set_state(cep, SIW_CEP_CONNECTING);
	siw_cep_arm(cep, SIW_CONNECT_TIMEOUT_MS);
	/*
	 * Start the handshake here rather than in a work item: on a local
	 * link it often completes within the call, and then the MPA request
	 * leaves at once. A failure is reported by CONNECT_REPLY as always,
	 * and its close may drop the connection's reference: hold our own.
	 */
	kref_get(&cep->ref);
	siw_cep_do_connect(cep, 0, false);
	siw_cep_unlock(cep);
	siw_cep_put(cep);
	return 0;

fail:
	siw_stat_inc(sdev, SIW_STAT_CONN_FAIL);
	kref_get(&cep->ref);	/* close drops the last one */
	siw_cep_close(cep, true, 0);
	siw_cep_unlock(cep);
	siw_cep_put(cep);
	return rv;
}

/* ------------------------------------------------------ passive side */

static void siw_cep_got_request(struct siw_cep *cep)
{
	struct siw_device *sdev = cep->sdev;
	bool want_crc = READ_ONCE(mpa_crc_required);
	struct siw_mpa_info mi;
	u8 *pd;
	int rv;

	if (siw_mpa_decode(&cep->rx_hdr, cep->rx_pd, &mi)) {
		siw_warn(sdev, "peer %pISpc sent an MPA request of revision %u%s\n",
			 &cep->raddr, mi.rev,
			 mi.rev == MPA_REVISION_2 ? " without IRD/ORD" :
						    ", not supported");
		goto drop;
	}
	/*
	 * Answer in the peer's revision unless we are limited to 1. A
	 * revision 2 request without the enhanced-connection flag carries
	 * no IRD/ORD: it gets a revision 1 reply, which every initiator
	 * takes (RFC 5044: the reply's revision may be lower), where a
	 * revision 2 reply would have its first 4 bytes of private data
	 * read as IRD/ORD by a peer that always expects them (RFC 6581).
	 */
	cep->rev = mi.v2 && READ_ONCE(mpa_rev) == 2 ? MPA_REVISION_2 :
						      MPA_REVISION_1;
	if (mi.rev == MPA_REVISION_2 && !mi.v2)
		siw_dbg(sdev, "peer %pISpc: revision 2 request without IRD/ORD, replying in revision 1\n",
			&cep->raddr);
	cep->peer_ird = SIW_MAX_IRD;
	cep->peer_ord = SIW_MAX_ORD;
	if (mi.v2) {
		cep->peer_ird = mi.ird;
		cep->peer_ord = mi.ord;
		cep->p2p = mi.ird_bits & MPA_V2_PEER_TO_PEER;
		cep->offer_ird = mi.ird_bits & MPA_V2_RTR_ZERO_SEND;
		cep->offer_ord = mi.ord_bits & (MPA_V2_RTR_WRITE |
						MPA_V2_RTR_READ);
		cep->v2 = cep->rev == MPA_REVISION_2;
	}
	pd = cep->rx_pd + mi.ulp_off;
	if (mi.markers) {
		siw_warn(sdev, "peer %pISpc requests MPA markers, not supported\n",
			 &cep->raddr);
		goto refuse;
	}
	rv = siw_mpa_crc_decide(want_crc, mi.crc, READ_ONCE(mpa_crc_strict));
	if (rv < 0) {
		siw_warn(sdev, "peer %pISpc: MPA CRC %s, local policy requires %s\n",
			 &cep->raddr, mi.crc ? "on" : "off",
			 want_crc ? "on" : "off");
		goto refuse;
	}
	cep->crc = rv;
	cep->ev_ird = min_t(u16, cep->peer_ird, SIW_MAX_IRD);
	cep->ev_ord = min_t(u16, cep->peer_ord, SIW_MAX_ORD);

	rv = siw_listen_deliver(cep, pd, mi.ulp_len);
	if (rv == -ENOENT) {
		siw_dbg(sdev, "listener gone, dropping %pISpc\n", &cep->raddr);
		goto drop;
	}
	if (rv) {
		siw_warn(sdev, "listener cannot take request from %pISpc: %d\n",
			 &cep->raddr, rv);
		goto refuse;
	}
	siw_cep_set_state(cep, SIW_CEP_AWAIT_ULP);
	siw_cep_arm(cep, SIW_ULP_ANSWER_MS);
	return;

refuse:
	siw_trace_mpa(cep, NULL, cep->rev, NULL, -ECONNREFUSED);
	siw_cep_send_reject(cep, NULL, 0);
	siw_stat_inc(sdev, SIW_STAT_CONN_FAIL);
	siw_cep_close(cep, false, 0);
	return;
drop:
	siw_stat_inc(sdev, SIW_STAT_CONN_FAIL);
	siw_cep_close(cep, true, 0);
}

static void siw_cep_do_request(struct siw_cep *cep, unsigned long ev,
			       bool expired)
{
	int rv;

	rv = siw_cep_rx_frame(cep, true);
	if (!rv) {
		siw_cep_got_request(cep);
		return;
	}
	if (rv == -EAGAIN && !expired)
		return;
	if (rv == -EAGAIN)
		siw_warn(cep->sdev, "no MPA request from %pISpc within %u ms\n",
			 &cep->raddr, READ_ONCE(mpa_timeout_ms));
	siw_stat_inc(cep->sdev, SIW_STAT_CONN_FAIL);
	siw_cep_close(cep, true, 0);
}

static void siw_cep_do_ulp_wait(struct siw_cep *cep, unsigned long ev,
				bool expired)
{
	if (expired) {
		siw_warn(cep->sdev, "connection request from %pISpc not answered within %u ms\n",
			 &cep->raddr, SIW_ULP_ANSWER_MS);
		siw_stat_inc(cep->sdev, SIW_STAT_CONN_FAIL);
		siw_cep_close(cep, true, 0);
	} else if (siw_sk_gone(cep->sock->sk)) {
		siw_dbg(cep->sdev, "peer %pISpc left before accept\n",
			&cep->raddr);
		siw_stat_inc(cep->sdev, SIW_STAT_CONN_FAIL);
		siw_cep_close(cep, true, 0);
	}
}

/*
 * Responder's choice among the RTR types the initiator offered, in order
 * of least ULP visibility: Write, Read (uses an IRD slot), Send (uses a
 * receive buffer). Returns false if none was offered.
 */
static bool siw_cep_pick_rtr(struct siw_cep *cep, u8 *op, u16 *ird_bits,
			     u16 *ord_bits)
{
	*ird_bits = MPA_V2_PEER_TO_PEER;
	*ord_bits = 0;
	if (cep->offer_ord & MPA_V2_RTR_WRITE) {
		*ord_bits = MPA_V2_RTR_WRITE;
		*op = RDMAP_WRITE;
	} else if (cep->offer_ord & MPA_V2_RTR_READ) {
		*ord_bits = MPA_V2_RTR_READ;
		*op = RDMAP_READ_REQ;
	} else if (cep->offer_ird & MPA_V2_RTR_ZERO_SEND) {
		*ird_bits |= MPA_V2_RTR_ZERO_SEND;
		*op = RDMAP_SEND;
	} else {
		*ird_bits = 0;
		return false;
	}
	return true;
}

static void siw_cep_drop_provider(struct siw_cep *cep)
{
	bool drop;

	mutex_lock(&cep->mtx);
	drop = cep->provider_ref;
	cep->provider_ref = false;
	siw_cep_unlock(cep);
	if (drop)
		siw_cep_put(cep);
}

/**
 * siw_accept - iw_cm accept verb for a delivered connection request
 * @id: the child cm_id iw_cm created for the request
 * @param: QP number, IRD/ORD and private data of the ULP
 *
 * Sends the MPA reply, moves the QP to RTS and delivers ESTABLISHED
 * before returning 0 (iw_cm waits for it). On error no event follows and
 * the connection is closed.
 *
 * Return: 0 or -errno.
 */
static int siw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct siw_device *sdev = to_siw_dev(id->device);
	struct siw_cep *cep = id->provider_data;
	struct siw_llp_params p = {};
	u16 max_pd = MPA_MAX_PRIVDATA;
	u16 rtr_ird = 0, rtr_ord = 0;
	struct mpa_v2_data v2;
	enum siw_qp_state qstate;
	struct siw_qp *qp;
	u32 ird, ord;
	u16 flags = 0;
	int rv;

	if (!cep) {
		siw_warn(sdev, "accept without a connection request\n");
		return -EINVAL;
	}
	id->provider_data = NULL;
	mutex_lock(&cep->mtx);
	if (cep->state != SIW_CEP_AWAIT_ULP) {
		siw_warn(sdev, "cannot accept %pISpc: peer left or request timed out\n",
			 &cep->raddr);
		rv = -ECONNRESET;
		goto out;
	}
	if (cep->v2)
		max_pd -= sizeof(v2);
	if (param->ird > SIW_MAX_IRD || param->ord > SIW_MAX_ORD) {
		siw_warn(sdev, "accept %pISpc: ird %u ord %u exceed %u/%u\n",
			 &cep->raddr, param->ird, param->ord, SIW_MAX_IRD,
			 SIW_MAX_ORD);
		rv = -EINVAL;
		goto refuse;
	}
	if (param->private_data_len > max_pd ||
	    (param->private_data_len && !param->private_data)) {
		siw_warn(sdev, "accept %pISpc: private data length %u > %u\n",
			 &cep->raddr, param->private_data_len, max_pd);
		rv = -EINVAL;
		goto refuse;
	}
	qp = siw_qp_lookup(sdev, param->qpn);
	if (!qp) {
		siw_warn(sdev, "accept %pISpc: no QP %u\n", &cep->raddr,
			 param->qpn);
		rv = -EINVAL;
		goto refuse;
	}
	WRITE_ONCE(cep->qp, qp);
	spin_lock_bh(&qp->state_lock);
	qstate = qp->attrs.state;
	spin_unlock_bh(&qp->state_lock);
	if (qstate != SIW_QP_IDLE) {
		siw_warn(sdev, "accept %pISpc: QP %u is not idle\n",
			 &cep->raddr, param->qpn);
		rv = -EINVAL;
		goto refuse;
	}

	ird = param->ird;
	ord = param->ord;
	if (cep->v2) {
		/* see siw_cep_got_reply() for the IRD/ORD rule */
		ord = min_t(u32, ord, cep->peer_ird);
		ird = min_t(u32, max_t(u32, ird, cep->peer_ord), SIW_MAX_IRD);
		if (cep->p2p)
			p.rtr_enable = siw_cep_pick_rtr(cep, &p.rtr_send,
							&rtr_ird, &rtr_ord);
		p.rtr_wait = p.rtr_enable;
		if (p.rtr_send == RDMAP_READ_REQ && !ird)
			ird = 1;	/* the RTR read needs a slot */
		siw_v2_fill(&v2, ird | rtr_ird, ord | rtr_ord);
		flags |= MPA_FLAG_ENHANCED;
	}
	if (cep->crc)
		flags |= MPA_FLAG_CRC;
	p.sock = cep->sock;
	p.cep = cep;
	p.crc = cep->crc;
	p.ird = ird;
	p.ord = ord;
	siw_trace_mpa(cep, qp, cep->rev, &p, 0);

	siw_cep_disarm(cep);
	/* reply first: the QP may transmit as soon as it is in RTS */
	rv = siw_cep_send_frame(cep, MPA_KEY_REP, flags, cep->v2 ? &v2 : NULL,
				param->private_data, param->private_data_len);
	if (rv)
		goto fail;
	rv = siw_qp_to_rts(qp, &p);
	if (rv) {
		siw_warn(sdev, "QP %u cannot enter RTS for %pISpc: %d\n",
			 qp_id(qp), &cep->raddr, rv);
		goto fail;
	}
	cep->attached = true;
	id->add_ref(id);
	cep->cm_id = id;
	siw_cep_publish(cep);
	siw_tx_now(qp);
	siw_cep_set_state(cep, SIW_CEP_RDMA);
	siw_rx_start(qp);

	cep->ev_ird = ird;
	cep->ev_ord = ord;
	rv = siw_cep_event(cep, id, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	if (rv) {
		siw_err(sdev, "iw_cm refused ESTABLISHED for %pISpc: %d\n",
			&cep->raddr, rv);
		goto fail;
	}
	cep->cm_open = true;
	siw_stat_inc(sdev, SIW_STAT_CONN_PASSIVE);
	siw_dbg(sdev, "QP %u accepted %pISpc, rev %u crc %d ird %u ord %u rtr %d\n",
		qp_id(qp), &cep->raddr, cep->rev, p.crc, ird, ord,
		p.rtr_enable);
	goto out;

refuse:
	siw_trace_mpa(cep, NULL, cep->rev, NULL, rv);
	siw_cep_send_reject(cep, NULL, 0);
	siw_stat_inc(sdev, SIW_STAT_CONN_FAIL);
	siw_cep_close(cep, false, 0);
	goto out;
fail:
	siw_stat_inc(sdev, SIW_STAT_CONN_FAIL);
	siw_cep_close(cep, true, 0);
out:
	siw_cep_unlock(cep);
	siw_cep_drop_provider(cep);
	return rv;
}

/**
 * siw_reject - iw_cm reject verb for a delivered connection request
 * @id: the child cm_id iw_cm created for the request
 * @pdata: private data for the peer
 * @pd_len: its length
 *
 * Also called by iw_cm when the child id is destroyed unanswered.
 *
 * Return: 0 (a request that already died needs no reject), or -EINVAL.
 */
static int siw_reject(struct iw_cm_id *id, const void *pdata, u8 pd_len)
{
	struct siw_device *sdev = to_siw_dev(id->device);
	struct siw_cep *cep = id->provider_data;

	if (!cep) {
		siw_warn(sdev, "reject without a connection request\n");
		return -EINVAL;
	}
	id->provider_data = NULL;
	mutex_lock(&cep->mtx);
	if (cep->state == SIW_CEP_AWAIT_ULP) {
		siw_dbg(sdev, "rejecting %pISpc\n", &cep->raddr);
		siw_cep_disarm(cep);
		siw_cep_send_reject(cep, pd_len ? pdata : NULL, pd_len);
		siw_cep_close(cep, false, 0);
	} else {
		siw_dbg(sdev, "reject %pISpc: already closed\n", &cep->raddr);
	}
	siw_cep_unlock(cep);
	siw_cep_drop_provider(cep);
	return 0;
}

/* --------------------------------------------------- established side */

static void siw_cep_do_rdma(struct siw_cep *cep, unsigned long ev,
			    bool expired)
{
	struct sock *sk = cep->sock->sk;
	int err = -READ_ONCE(sk->sk_err);

	/* a failed send took sk_err (sock_error()) and put the QP in error */
	if (!err && cep->qp && cep->attached)
		err = READ_ONCE(cep->qp->tx_sock_err);
	if (err) {
		/* reset, or the peer stopped answering (-ETIMEDOUT) */
		siw_stat_inc(cep->sdev, SIW_STAT_CONN_LOST);
		siw_warn(cep->sdev, "connection to %pISpc lost: %d\n",
			 &cep->raddr, err);
		siw_cep_close(cep, true, -ECONNRESET);
	} else if (ev & BIT(SIW_EV_ABORT)) {
		/*
		 * The QP is in error (its consumer moved it there or destroys
		 * it): the connection ends now, but work requests that
		 * completed are in TCP's queue and still reach the peer,
		 * followed by a FIN, as with the kernel's siw.
		 */
		siw_dbg(cep->sdev, "abortive close of %pISpc\n", &cep->raddr);
		cep->keep_sent = true;
		siw_cep_close(cep, true, 0);
	} else if (siw_sk_gone(sk)) {
		siw_dbg(cep->sdev, "peer %pISpc closed\n", &cep->raddr);
		/*
		 * A FIN that arrives with data (one segment, or the one that
		 * fills a hole) reaches sk_state_change before sk_data_ready
		 * parses that data, and this work may run on another CPU in
		 * between: take what TCP holds before the QP goes to error,
		 * or the peer's last messages are flushed unread.
		 */
		if (cep->attached)
			siw_rx_start(cep->qp);
		siw_cep_close(cep, false, 0);
	} else if (cep->state == SIW_CEP_CLOSING && expired) {
		/*
		 * Our FIN may still sit behind unacknowledged data (a slow
		 * receiver, a lossy path): what completed as sent must still
		 * reach the peer, so TCP keeps delivering it on its own, as
		 * after any orderly close. A reset would throw it away.
		 */
		siw_stat_inc(cep->sdev, SIW_STAT_CLOSE_TIMEOUT);
		siw_warn(cep->sdev, "peer %pISpc did not close within %u ms; TCP still delivers what was sent\n",
			 &cep->raddr, SIW_CLOSE_TIMEOUT_MS);
		cep->keep_sent = true;
		siw_cep_close(cep, true, 0);
	} else if (cep->state == SIW_CEP_RDMA &&
		   (ev & BIT(SIW_EV_DISCONNECT))) {
		/* FIN now; the QP keeps receiving until the peer's FIN */
		kernel_sock_shutdown(cep->sock, SHUT_WR);
		siw_cep_set_state(cep, SIW_CEP_CLOSING);
		siw_cep_arm(cep, SIW_CLOSE_TIMEOUT_MS);
	}
}

/**
 * siw_cm_qp_disconnect - the QP wants its connection closed
 * @qp: the QP
 * @abortive: reset instead of an orderly close
 *
 * Any context, possibly under qp->state_lock: only queues work. Endpoints
 * are freed after an RCU grace period, so a qp->cep read racing with
 * siw_qp_llp_closed() still points to valid memory.
 */
void siw_cm_qp_disconnect(struct siw_qp *qp, bool abortive)
{
	struct siw_cep *cep;

	rcu_read_lock();
	cep = READ_ONCE(qp->cep);
	if (cep && kref_get_unless_zero(&cep->ref)) {
		siw_cep_kick(cep, abortive ? SIW_EV_ABORT : SIW_EV_DISCONNECT);
		siw_cep_put(cep);
	}
	rcu_read_unlock();
}

/*
 * Kick every endpoint in @net (all if NULL) or, with @qp, the active ones
 * connecting that QP. Walked under RCU, not siw_ceps_lock: our reference
 * may be the last, and the final put takes that lock to unlink the
 * endpoint (endpoints are freed after a grace period, so the walk may go
 * on past it).
 */
static void siw_cep_kick_where(struct net *net, struct siw_qp *qp, int ev)
{
	struct siw_cep *cep;

	rcu_read_lock();
	list_for_each_entry_rcu(cep, &siw_ceps, all) {
		if (net && cep->net != net)
			continue;
		if (qp && (!cep->active || READ_ONCE(cep->qp) != qp))
			continue;
		if (kref_get_unless_zero(&cep->ref)) {
			siw_cep_kick(cep, ev);
			siw_cep_put(cep);
		}
	}
	rcu_read_unlock();
}

/**
 * siw_cm_qp_abort_connect - an IDLE QP goes to ERROR while it connects
 * @qp: the QP
 *
 * Its connection is not the QP's yet (qp->cep is set at RTS), so the
 * disconnect does not reach it; the endpoint holds a QP reference until
 * it ends, and destroy would wait for the TCP connect or the MPA reply to
 * time out (up to mpa_timeout_ms). Kill it now: CONNECT_REPLY with
 * -ECONNABORTED, as when the device goes away.
 */
void siw_cm_qp_abort_connect(struct siw_qp *qp)
{
	siw_cep_kick_where(NULL, qp, SIW_EV_KILL);
}

/* -------------------------------------------------------- state machine */

/* Listener, namespace or module going away: end the connection now. */
static void siw_cep_kill(struct siw_cep *cep)
{
	siw_dbg(cep->sdev, "killing %s endpoint of %pISpc\n",
		siw_cep_state_name[cep->state], &cep->raddr);
	switch (cep->state) {
	case SIW_CEP_CONNECTING:
	case SIW_CEP_AWAIT_REPLY:
		siw_cep_fail_connect(cep, -ECONNABORTED, NULL, 0, true);
		break;
	case SIW_CEP_RDMA:
	case SIW_CEP_CLOSING:
		siw_cep_close(cep, true, -ECONNRESET);
		break;
	case SIW_CEP_AWAIT_REQUEST:
	case SIW_CEP_AWAIT_ULP:
		siw_stat_inc(cep->sdev, SIW_STAT_CONN_FAIL);
		siw_cep_close(cep, true, 0);
		break;
	case SIW_CEP_IDLE:
	case SIW_CEP_CLOSED:
		break;
	}
}

static void siw_cep_step(struct siw_cep *cep)
{
	unsigned long ev = xchg(&cep->events, 0);
	bool expired = false;

	/* a closed endpoint may outlive its device: touch nothing */
	if (cep->state == SIW_CEP_CLOSED)
		return;
	if ((ev & BIT(SIW_EV_TIMEOUT)) && cep->armed &&
	    time_after_eq(jiffies, cep->deadline)) {
		cep->armed = false;
		expired = true;
	}
	if (ev & BIT(SIW_EV_KILL)) {
		siw_cep_kill(cep);
		return;
	}
	switch (cep->state) {
	case SIW_CEP_CONNECTING:
		siw_cep_do_connect(cep, ev, expired);
		break;
	case SIW_CEP_AWAIT_REPLY:
		siw_cep_do_reply(cep, ev, expired);
		break;
	case SIW_CEP_AWAIT_REQUEST:
		siw_cep_do_request(cep, ev, expired);
		break;
	case SIW_CEP_AWAIT_ULP:
		siw_cep_do_ulp_wait(cep, ev, expired);
		break;
	case SIW_CEP_RDMA:
	case SIW_CEP_CLOSING:
		siw_cep_do_rdma(cep, ev, expired);
		break;
	case SIW_CEP_IDLE:
	case SIW_CEP_CLOSED:
		break;
	}
}

/*
 * The work's lock. A connect, accept or reject call holds the mutex while
 * it drives the handshake itself, and the socket events that handshake
 * causes queue the work on another CPU meanwhile: rather than spin there
 * until the call is done, the work leaves its events to the holder,
 * which runs the step before letting go (siw_cep_unlock()).
 *
 * A kill waits for the mutex instead: siw_cm_flush() must not return
 * while a kill queued before it is still running. The kill's event bit
 * cannot tell, since a holder's step may have taken it (xchg) and be
 * running the kill right now; SIW_DEFER_KILL, set by the kick and
 * cleared only here, can: the work then returns only after that holder
 * let go, with the kill done.
 * Return: true with the mutex held, false if the holder was told.
 */
static bool siw_cep_lock_work(struct siw_cep *cep)
{
	if (test_and_clear_bit(SIW_DEFER_KILL, &cep->deferred)) {
		mutex_lock(&cep->mtx);
		return true;
	}
	if (mutex_trylock(&cep->mtx))
		return true;
	set_bit(SIW_DEFER_STEP, &cep->deferred);
	/* pairs with siw_cep_unlock(): it sees the bit or we get the mutex */
	smp_mb__after_atomic();
	if (!mutex_trylock(&cep->mtx))
		return false;
	/* the holder let go in between: the step is ours, run it once */
	clear_bit(SIW_DEFER_STEP, &cep->deferred);
	return true;
}

/*
 * Let go of the endpoint, running first a step the work left to us.
 * Every holder of cep->mtx, the work included, lets go through here.
 */
void siw_cep_unlock(struct siw_cep *cep)
{
	while (test_and_clear_bit(SIW_DEFER_STEP, &cep->deferred))
		siw_cep_step(cep);
	mutex_unlock(&cep->mtx);
	/* a work that failed its trylock since the loop: let it run again */
	smp_mb();
	if (test_and_clear_bit(SIW_DEFER_STEP, &cep->deferred))
		siw_cep_queue(cep);
}
EXPORT_SYMBOL_IF_KUNIT(siw_cep_unlock);

static void siw_cep_work(struct work_struct *w)
{
	struct siw_cep *cep = container_of(w, struct siw_cep, work);

	if (siw_cep_lock_work(cep)) {
		siw_cep_step(cep);
		siw_cep_unlock(cep);
	}
	siw_cep_put(cep);
}

static void siw_cep_timer(struct work_struct *w)
{
	struct siw_cep *cep = container_of(to_delayed_work(w), struct siw_cep,
					   timer);

	siw_cep_kick(cep, SIW_EV_TIMEOUT);
	siw_cep_put(cep);
}

/* -------------------------------------------------- namespace, module */

/* Kick every endpoint in @net (or all, for NULL) with @ev. */
void siw_cep_kick_all(struct net *net, int ev)
{
	siw_cep_kick_where(net, NULL, ev);
}
EXPORT_SYMBOL_IF_KUNIT(siw_cep_kick_all);

static void siw_cm_wq_destroy(void)
{
	int i;

	for (i = 0; i < SIW_CM_NWQ; i++) {
		if (siw_cm_wqs[i])
			destroy_workqueue(siw_cm_wqs[i]);
		siw_cm_wqs[i] = NULL;
	}
	if (siw_listen_wq)
		destroy_workqueue(siw_listen_wq);
	siw_listen_wq = NULL;
}

int siw_cm_init(void)
{
	int i, rv;

	/*
	 * Ordered: connection steps run in the order they were triggered, so
	 * connect requests reach iw_cm in the order the peer made them and
	 * our own MPA requests leave in the order the ULP connected. ULPs
	 * that open several connections at once pair them up by that order
	 * (perftest -q N did, and stalled when two swapped).
	 *
	 * High priority: a step is short, but its worker is one thread for
	 * all of a device's connections, and at normal priority a CPU busy
	 * with the data path (softirqs, the ULP's own threads) starves it
	 * until peers' MPA timeouts expire. On the debug kernel with 256
	 * connections moving data, 66 of the queue's 82 s of run time were
	 * spent preempted, and connect requests waited 2.7 s on average.
	 */
	for (i = 0; i < SIW_CM_NWQ; i++) {
		siw_cm_wqs[i] = alloc_ordered_workqueue("siw_cm_wq%d",
							WQ_MEM_RECLAIM |
							WQ_HIGHPRI, i);
		if (!siw_cm_wqs[i])
			goto nomem;
	}
	siw_listen_wq = alloc_workqueue("siw_listen", WQ_MEM_RECLAIM |
					WQ_HIGHPRI | SIW_WQ_PERCPU, 0);
	if (!siw_listen_wq)
		goto nomem;
	rv = siw_listen_init();
	if (rv)
		siw_cm_wq_destroy();
	return rv;
nomem:
	siw_cm_wq_destroy();
	return -ENOMEM;
}

void siw_cm_exit(void)
{
	struct siw_cep *cep, *next;
	unsigned long flags;
	int i;
	unsigned int left = 0;
	LIST_HEAD(shells);

	if (!siw_listen_wq)
		return;
	siw_listen_exit();
	/* devices are gone: whatever still runs is closing down */
	siw_cep_kick_all(NULL, SIW_EV_KILL);
	for (i = 0; i < SIW_CM_NWQ; i++)
		drain_workqueue(siw_cm_wqs[i]);

	/*
	 * What is left are closed requests whose CONNECT_REQUEST iw_cm
	 * dropped, so neither accept nor reject ever came.
	 */
	spin_lock_irqsave(&siw_ceps_lock, flags);
	list_for_each_entry_safe(cep, next, &siw_ceps, all) {
		if (WARN_ON_ONCE(cep->state != SIW_CEP_CLOSED))
			continue;
		list_move(&cep->all, &shells);
	}
	spin_unlock_irqrestore(&siw_ceps_lock, flags);
	list_for_each_entry_safe(cep, next, &shells, all) {
		list_del_init(&cep->all);
		kfree(cep->ulp_pd);
		kfree(cep);
		left++;
	}
	if (left)
		pr_info("freed %u unanswered connection requests\n", left);
	siw_cm_wq_destroy();
}

/* The iw_cm entry points, merged into a device by siw_verbs_set_ops() */
const struct ib_device_ops siw_cm_ops = {
	.iw_create_listen = siw_create_listen,
	.iw_destroy_listen = siw_destroy_listen,
	.iw_connect = siw_connect,
	.iw_accept = siw_accept,
	.iw_reject = siw_reject,
};
