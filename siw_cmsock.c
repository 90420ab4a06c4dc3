// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: the TCP socket of a connection endpoint.
 *
 * Its callbacks (they only kick the endpoint, or hand the socket to its
 * QP once published), taking them over and giving them back, and the
 * non-blocking reads and writes of the MPA handshake on it. The state
 * machine that drives them is in siw_cm.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "siw.h"
#include "siw_cm.h"

/* ------------------------------------------------- socket callbacks */

/* Peer finished, reset or errored: nothing more will come. */
bool siw_sk_gone(struct sock *sk)
{
	int st = READ_ONCE(sk->sk_state);

	return READ_ONCE(sk->sk_err) || (sk->sk_shutdown & RCV_SHUTDOWN) ||
	       st == TCP_CLOSE || st == TCP_CLOSE_WAIT ||
	       st == TCP_LAST_ACK || st == TCP_TIME_WAIT ||
	       st == TCP_CLOSING;
}

static void siw_sk_data_ready(struct sock *sk)
{
	struct siw_cep *cep;
	struct siw_qp *qp;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep) {
		qp = READ_ONCE(cep->rx_qp);
		if (qp)
			siw_qp_rx(qp, sk);
		else
			siw_cep_kick(cep, SIW_EV_SOCK);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

#ifdef SIW_TEST_HOOKS
/*
 * Test-only, built only with -DSIW_TEST_HOOKS (tests/run's hooks variant
 * for datapath/fin-with-data): hold the softirq that delivers the peer's
 * FIN for test_fin_delay_ms after its state change, so the endpoint's
 * work runs before sk_data_ready parses data that came with the FIN, as
 * it may when the CPUs interleave that way.
 */
static unsigned int test_fin_delay_ms;
module_param(test_fin_delay_ms, uint, 0644);
MODULE_PARM_DESC(test_fin_delay_ms, "test build only: delay after a FIN's state change (ms)");

static void siw_test_fin_delay(struct sock *sk)
{
	unsigned int ms = READ_ONCE(test_fin_delay_ms);

	if (ms && in_softirq() && (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN))
		mdelay(min(ms, 100U));
}
#else
static inline void siw_test_fin_delay(struct sock *sk)
{
}
#endif

/*
 * The state machine acts on a connect's end and on the peer's close,
 * reset or error; our own shutdown (inet_shutdown() calls this too) and
 * FIN_WAIT2 (the peer acknowledged our FIN) change nothing for it: no
 * work item (and context switch) for them.
 */
static void siw_sk_state_change(struct sock *sk)
{
	struct siw_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep) {
		if (READ_ONCE(sk->sk_state) == TCP_ESTABLISHED ||
		    siw_sk_gone(sk))
			siw_cep_kick(cep, SIW_EV_SOCK);
		cep->orig_state_change(sk);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	siw_test_fin_delay(sk);
}

static void siw_sk_write_space(struct sock *sk)
{
	struct siw_cep *cep;
	struct siw_qp *qp;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep) {
		qp = READ_ONCE(cep->rx_qp);
		if (qp) {
			/* stop further wakeups until the QP blocks again */
			if (sk->sk_socket && sk_stream_is_writeable(sk))
				clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
			siw_qp_schedule_tx(qp);
		} else {
			cep->orig_write_space(sk);
		}
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/**
 * siw_cep_hook - take over the callbacks of a connection socket
 * @cep: endpoint owning cep->sock
 * @inherited: original data_ready of the listener a passive socket was
 *	cloned from, or NULL
 *
 * An accepted socket inherits the listener's data_ready (ours, see
 * siw_listen.c); the listener's original is what must be restored on
 * teardown.
 */
void siw_cep_hook(struct siw_cep *cep, void (*inherited)(struct sock *sk))
{
	struct sock *sk = cep->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	if (inherited)
		cep->orig_data_ready = inherited;
	else
		cep->orig_data_ready = sk->sk_data_ready;
	cep->orig_state_change = sk->sk_state_change;
	cep->orig_write_space = sk->sk_write_space;
	sk->sk_user_data = cep;
	sk->sk_data_ready = siw_sk_data_ready;
	sk->sk_state_change = siw_sk_state_change;
	sk->sk_write_space = siw_sk_write_space;
	cep->hooked = true;
	write_unlock_bh(&sk->sk_callback_lock);
}
EXPORT_SYMBOL_IF_KUNIT(siw_cep_hook);

void siw_cep_unhook(struct siw_cep *cep)
{
	struct sock *sk = cep->sock->sk;

	if (!cep->hooked)
		return;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = cep->orig_data_ready;
	sk->sk_state_change = cep->orig_state_change;
	sk->sk_write_space = cep->orig_write_space;
	WRITE_ONCE(cep->rx_qp, NULL);
	cep->hooked = false;
	write_unlock_bh(&sk->sk_callback_lock);
}

/*
 * From now on received bytes go to the QP's stream parser, and write
 * space wakes its transmitter: the first transmit after RTS (siw_tx_now()
 * by the caller) must come after this, or a send that finds the socket
 * full and gets its write space back before it (on loopback, within the
 * sendmsg) would leave its wakeup to the original callback and stall.
 */
void siw_cep_publish(struct siw_cep *cep)
{
	struct sock *sk = cep->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(cep->rx_qp, cep->qp);
	write_unlock_bh(&sk->sk_callback_lock);
}

int siw_sock_create(struct siw_device *sdev, int family, struct socket **s)
{
	int rv;

	rv = sock_create_kern(dev_net(sdev->netdev), family, SOCK_STREAM,
			      IPPROTO_TCP, s);
	if (rv)
		return rv;
	sock_set_reuseaddr((*s)->sk);
	tcp_sock_set_nodelay((*s)->sk);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_sock_create);

/* ------------------------------------------------------ handshake I/O */

/* Send one MPA request or reply: header, v2 IRD/ORD if any, private data. */
int siw_cep_send_frame(struct siw_cep *cep, const char *key,
		       u16 flags, const struct mpa_v2_data *v2,
		       const void *pd, u16 pd_len)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec iov[3];
	struct mpa_rr hdr;
	size_t len = 0;
	int n = 0, i, rv;

	memcpy(hdr.key, key, MPA_KEY_SIZE);
	hdr.bits = cpu_to_be16(flags | cep->rev);
	hdr.pd_len = cpu_to_be16(pd_len + (v2 ? sizeof(*v2) : 0));

	iov[n].iov_base = &hdr;
	iov[n++].iov_len = sizeof(hdr);
	if (v2) {
		iov[n].iov_base = (void *)v2;
		iov[n++].iov_len = sizeof(*v2);
	}
	if (pd_len) {
		iov[n].iov_base = (void *)pd;
		iov[n++].iov_len = pd_len;
	}
	for (i = 0; i < n; i++)
		len += iov[i].iov_len;

	/* a fresh connection always has room for 532 bytes */
	rv = kernel_sendmsg(cep->sock, &msg, iov, n, len);
	if (rv == len)
		return 0;
	siw_warn(cep->sdev, "sending MPA frame to %pISpc failed: %d\n",
		 &cep->raddr, rv);
	return rv < 0 ? rv : -ECONNRESET;
}

static int siw_cep_recv(struct siw_cep *cep, void *buf, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	struct kvec iov = { .iov_base = buf, .iov_len = len };

	return kernel_recvmsg(cep->sock, &msg, &iov, 1, len, MSG_DONTWAIT);
}

/**
 * siw_cep_rx_frame - continue reading an MPA request or reply
 * @cep: endpoint
 * @request: expect a request (passive side), else a reply
 *
 * Reads exactly the frame (header plus private data) and never more:
 * FPDUs may follow in the same stream and belong to the QP.
 *
 * Return: 0 when the frame is complete, -EAGAIN when more bytes are
 * needed, -EPROTO for a malformed frame, other -errno if the stream
 * failed or ended.
 */
int siw_cep_rx_frame(struct siw_cep *cep, bool request)
{
	const u32 hlen = sizeof(struct mpa_rr);
	u32 want;
	void *buf;
	int rv;

	for (;;) {
		if (cep->rx_have < hlen) {
			buf = (u8 *)&cep->rx_hdr + cep->rx_have;
			want = hlen - cep->rx_have;
		} else {
			want = hlen + be16_to_cpu(cep->rx_hdr.pd_len) -
			       cep->rx_have;
			if (!want)
				return 0;
			buf = cep->rx_pd + (cep->rx_have - hlen);
		}
		rv = siw_cep_recv(cep, buf, want);
		if (rv == -EAGAIN)
			return rv;
		if (rv <= 0) {
			siw_warn(cep->sdev,
				 "connection to %pISpc lost during MPA negotiation: %d\n",
				 &cep->raddr, rv);
			return rv ? rv : -ECONNRESET;
		}
		cep->rx_have += rv;
		if (cep->rx_have != hlen)
			continue;
		rv = siw_mpa_hdr_check(&cep->rx_hdr, request);
		if (rv == -EBADMSG) {
			siw_warn(cep->sdev, "peer %pISpc sent no valid MPA %s frame\n",
				 &cep->raddr, request ? "request" : "reply");
			return -EPROTO;
		}
		if (rv) {
			siw_warn(cep->sdev,
				 "peer %pISpc sent MPA private data length %u > %u\n",
				 &cep->raddr, be16_to_cpu(cep->rx_hdr.pd_len),
				 MPA_MAX_PRIVDATA);
			return -EPROTO;
		}
	}
}

/*
 * Drop what the peer sent and nobody will read: TCP answers a close with
 * unread data by a reset, which would also discard what we still have to
 * send.
 */
void siw_sock_discard_rx(struct socket *sock)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	int n;

	do {
		n = kernel_recvmsg(sock, &msg, NULL, 0, INT_MAX,
				   MSG_DONTWAIT | MSG_TRUNC);
	} while (n > 0);
}
