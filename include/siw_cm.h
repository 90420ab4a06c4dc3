/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * siw: connection management internals shared by siw_cm.c (endpoints,
 * MPA negotiation, iw_cm verbs), siw_cmsock.c (the endpoint's socket)
 * and siw_listen.c (listening sockets, namespaces, addresses). Not for
 * the other layers: they use siw.h.
 */
#ifndef _SIW_CM_H
#define _SIW_CM_H

#include <linux/socket.h>

#include "siw.h"

enum siw_cep_state {
	SIW_CEP_IDLE,
	SIW_CEP_CONNECTING,	/* active: TCP handshake */
	SIW_CEP_AWAIT_REPLY,	/* active: MPA request sent */
	SIW_CEP_AWAIT_REQUEST,	/* passive: accepted, reading MPA request */
	SIW_CEP_AWAIT_ULP,	/* passive: CONNECT_REQUEST delivered */
	SIW_CEP_RDMA,		/* attached to a QP */
	SIW_CEP_CLOSING,	/* our FIN sent, waiting for the peer's */
	SIW_CEP_CLOSED,		/* socket released; nothing left but memory */
};

/* bits of siw_cep.events */
enum {
	SIW_EV_SOCK,		/* socket readable or state changed */
	SIW_EV_TIMEOUT,		/* timer expired */
	SIW_EV_DISCONNECT,	/* QP asks for a graceful close */
	SIW_EV_ABORT,		/* QP asks for an abortive close */
	SIW_EV_KILL,		/* listener or namespace gone */
};

/* bits of siw_cep.deferred */
enum {
	SIW_DEFER_STEP,		/* the work left its step to the mutex's holder */
	SIW_DEFER_KILL,		/* a kill was kicked: the work waits for the mutex */
};

struct siw_listener;

struct siw_cep {
	struct kref ref;
	struct rcu_head rcu;
	struct list_head all;		/* on siw_ceps */
	struct mutex mtx;		/* serializes the state machine */
	enum siw_cep_state state;
	unsigned long events;		/* SIW_EV_* bits */
	unsigned long deferred;		/* SIW_DEFER_* bits */
	struct workqueue_struct *wq;	/* its device's, siw_cm_wq_of() */
	struct work_struct work;
	struct delayed_work timer;
	unsigned long deadline;
	bool armed;

	struct siw_device *sdev;
	struct net *net;		/* compared only, never dereferenced */
	bool dev_ref;			/* holds an ib_device reference */
	bool active;
	bool connect_sent;
	struct socket *sock;
	bool hooked;
	void (*orig_data_ready)(struct sock *sk);
	void (*orig_state_change)(struct sock *sk);
	void (*orig_write_space)(struct sock *sk);

	struct siw_qp *qp;		/* referenced */
	struct siw_qp *rx_qp;		/* published, under sk_callback_lock */
	bool attached;			/* siw_qp_to_rts() succeeded */
	struct iw_cm_id *cm_id;		/* add_ref held */
	bool cm_open;			/* a CLOSE event is owed to cm_id */
	bool keep_sent;			/* abort: still deliver what TCP holds */
	bool provider_ref;		/* iw_cm child may call accept/reject */
	struct siw_listener *listener;	/* until CONNECT_REQUEST delivered */
	struct list_head lnode;		/* on listener->pending */

	struct sockaddr_storage laddr;
	struct sockaddr_storage raddr;

	/* MPA negotiation */
	u8 rev;				/* revision we send */
	bool v2;			/* frames carry struct mpa_v2_data */
	bool crc;			/* active: asked; passive: decided */
	bool p2p;			/* active: offered; passive: asked */
	u16 ird;			/* active: what the ULP asked for */
	u16 ord;
	u16 peer_ird;			/* passive: from the request */
	u16 peer_ord;
	u16 offer_ird;			/* passive: RTR bits offered */
	u16 offer_ord;
	u8 ev_ird;			/* ird/ord reported in events */
	u8 ev_ord;
	void *ulp_pd;			/* active: ULP private data */
	u16 ulp_pd_len;

	u32 rx_have;			/* bytes of the MPA frame received */
	struct mpa_rr rx_hdr;
	u8 rx_pd[MPA_MAX_PRIVDATA];
};

extern struct workqueue_struct *siw_listen_wq;
void siw_cm_flush(void);
unsigned int siw_cm_mpa_timeout(void);

/* siw_cm.c: endpoints */
struct siw_cep *siw_cep_alloc(struct siw_device *sdev);
void siw_cep_put(struct siw_cep *cep);
void siw_cep_kick(struct siw_cep *cep, int ev);
void siw_cep_unlock(struct siw_cep *cep);
void siw_cep_kick_all(struct net *net, int ev);
void siw_cep_arm(struct siw_cep *cep, unsigned int ms);
void siw_cep_set_state(struct siw_cep *cep, enum siw_cep_state s);
int siw_cep_event(struct siw_cep *cep, struct iw_cm_id *id,
		  enum iw_cm_event_type type, int status, void *pd,
		  u16 pd_len);

/* siw_cmsock.c: the endpoint's socket */
bool siw_sk_gone(struct sock *sk);
void siw_cep_hook(struct siw_cep *cep, void (*inherited)(struct sock *sk));
void siw_cep_unhook(struct siw_cep *cep);
void siw_cep_publish(struct siw_cep *cep);
int siw_sock_create(struct siw_device *sdev, int family, struct socket **s);
int siw_cep_send_frame(struct siw_cep *cep, const char *key, u16 flags,
		       const struct mpa_v2_data *v2, const void *pd,
		       u16 pd_len);
int siw_cep_rx_frame(struct siw_cep *cep, bool request);
void siw_sock_discard_rx(struct socket *sock);

/* siw_listen.c: listeners, namespaces, addresses */
void siw_listen_forget(struct siw_cep *cep);
int siw_listen_deliver(struct siw_cep *cep, void *pd, u16 pd_len);
int siw_listen_init(void);
void siw_listen_exit(void);
int siw_addr_size(const struct sockaddr_storage *a);
bool siw_addr_family_ok(const struct sockaddr_storage *a);
u16 siw_addr_port(const struct sockaddr_storage *a);
void siw_addr_set_port(struct sockaddr_storage *a, u16 port);
bool siw_addr_is_any(const struct sockaddr_storage *a);
bool siw_addr_equal(const struct sockaddr_storage *a,
		    const struct sockaddr_storage *b);
int siw_sock_addrs(struct socket *s, struct sockaddr_storage *local,
		   struct sockaddr_storage *remote);
bool siw_addr_on_netdev(struct net_device *nd,
			const struct sockaddr_storage *a);

#endif
