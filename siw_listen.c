// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: listening sockets, network namespace teardown and the address
 * helpers of connection management.
 *
 * Listening sockets are shared per (netns, address, port): rdma_cm asks
 * every device to listen on a wildcard address, and two devices of one
 * namespace cannot bind the same port twice. A shared socket hands each
 * new connection to the device that owns the connection's local address;
 * the endpoint (siw_cm.c) takes it from there.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/net.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inetdevice.h>
#include <linux/tcp.h>
#include <linux/rcupdate.h>
#include <net/sock.h>
#include <net/tcp_states.h>
#include <net/ipv6.h>
#include <net/addrconf.h>
#include <net/net_namespace.h>

#include "siw.h"
#include "siw_cm.h"

/* A kernel listening socket, shared by the devices listening on it */
struct siw_lgroup {
	struct kref ref;		/* one per member, plus namespace exit */
	struct list_head node;		/* on siw_lgroups while !dead */
	struct list_head dnode;		/* on a dying namespace's list */
	struct list_head members;	/* struct siw_listener */
	struct socket *sock;		/* NULL once the namespace died */
	struct sockaddr_storage addr;
	struct net *net;		/* compared only */
	bool afonly;
	bool dead;			/* unlinked; whoever set it releases */
	struct work_struct accept_work;
	void (*orig_data_ready)(struct sock *sk);
};

/*
 * Endpoints a listener lets wait for their MPA request: the listen
 * backlog, but never fewer than this, since a burst of connects is
 * accepted whole before the first request is read.
 */
#define SIW_LISTEN_PENDING_MIN	64

/* One iw_cm listen of one device */
struct siw_listener {
	struct list_head node;		/* on grp->members */
	struct list_head pending;	/* endpoints before CONNECT_REQUEST */
	u32 npending;			/* on @pending */
	u32 max_pending;		/* siw_listener_cap() */
	struct siw_lgroup *grp;
	struct iw_cm_id *cm_id;
	struct siw_device *sdev;
};

/* siw_lgroups, group members and listener pending lists */
static DEFINE_MUTEX(siw_listen_mutex);
static LIST_HEAD(siw_lgroups);

/* ------------------------------------------------------- addresses */

int siw_addr_size(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					  sizeof(struct sockaddr_in);
}

bool siw_addr_family_ok(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET || a->ss_family == AF_INET6;
}

u16 siw_addr_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return ntohs(((const struct sockaddr_in *)a)->sin_port);
}

void siw_addr_set_port(struct sockaddr_storage *a, u16 port)
{
	if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)a)->sin_port = htons(port);
}

bool siw_addr_is_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6)
		return ipv6_addr_any(&((const struct sockaddr_in6 *)a)->sin6_addr);
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
	       htonl(INADDR_ANY);
}

bool siw_addr_equal(const struct sockaddr_storage *a,
		    const struct sockaddr_storage *b)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
	const struct sockaddr_in6 *b6 = (const struct sockaddr_in6 *)b;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)a;
	const struct sockaddr_in *b4 = (const struct sockaddr_in *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_port == b4->sin_port &&
		       a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return a6->sin6_port == b6->sin6_port &&
	       ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr) &&
	       a6->sin6_scope_id == b6->sin6_scope_id;
}

/* IPv4 peers of a dual stack socket are reported as plain IPv4 */
static void siw_addr_unmap(struct sockaddr_storage *a)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
	struct sockaddr_in a4 = { .sin_family = AF_INET };

	if (a->ss_family != AF_INET6 || !ipv6_addr_v4mapped(&a6->sin6_addr))
		return;
	a4.sin_port = a6->sin6_port;
	a4.sin_addr.s_addr = a6->sin6_addr.s6_addr32[3];
	memset(a, 0, sizeof(*a));
	memcpy(a, &a4, sizeof(a4));
}

int siw_sock_addrs(struct socket *s, struct sockaddr_storage *local,
		   struct sockaddr_storage *remote)
{
	int rv;

	memset(local, 0, sizeof(*local));
	memset(remote, 0, sizeof(*remote));
	rv = kernel_getsockname(s, (struct sockaddr *)local);
	if (rv < 0)
		return rv;
	rv = kernel_getpeername(s, (struct sockaddr *)remote);
	if (rv < 0)
		return rv;
	siw_addr_unmap(local);
	siw_addr_unmap(remote);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_sock_addrs);

static bool siw_ipv4_on_netdev(struct net_device *nd, __be32 addr)
{
	const struct in_ifaddr *ifa;
	struct in_device *idev;
	bool found = false;

	if (ipv4_is_loopback(addr) && (nd->flags & IFF_LOOPBACK))
		return true;
	rcu_read_lock();
	idev = __in_dev_get_rcu(nd);
	if (idev) {
		in_dev_for_each_ifa_rcu(ifa, idev) {
			if (ifa->ifa_local == addr) {
				found = true;
				break;
			}
		}
	}
	rcu_read_unlock();
	return found;
}

/* Is @a an address of @nd (the device a wildcard listener serves)? */
bool siw_addr_on_netdev(struct net_device *nd,
			const struct sockaddr_storage *a)
{
	const struct in6_addr *ip6;

	if (a->ss_family == AF_INET)
		return siw_ipv4_on_netdev(nd,
				((const struct sockaddr_in *)a)->sin_addr.s_addr);
	if (a->ss_family != AF_INET6)
		return false;
	ip6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
	if (ipv6_addr_v4mapped(ip6))
		return siw_ipv4_on_netdev(nd, ip6->s6_addr32[3]);
	if (ipv6_addr_loopback(ip6) && (nd->flags & IFF_LOOPBACK))
		return true;
	return ipv6_chk_addr(dev_net(nd), ip6, nd, 1);
}

/* Off its listener's pending list; siw_listen_mutex held. */
static void siw_listen_unpend(struct siw_cep *cep)
{
	lockdep_assert_held(&siw_listen_mutex);
	list_del_init(&cep->lnode);
	cep->listener->npending--;
	cep->listener = NULL;
}

/* The endpoint leaves its listener's pending list (if still on it). */
void siw_listen_forget(struct siw_cep *cep)
{
	if (cep->active)
		return;
	mutex_lock(&siw_listen_mutex);
	if (cep->listener)
		siw_listen_unpend(cep);
	mutex_unlock(&siw_listen_mutex);
}

/**
 * siw_listen_deliver - hand a connection request to its listener
 * @cep: passive endpoint with a decoded MPA request
 * @pd: the ULP's private data
 * @pd_len: its length
 *
 * Return: 0 when iw_cm took it (its child id owns the request from here),
 * -ENOENT when the listener is gone, or iw_cm's error.
 */
int siw_listen_deliver(struct siw_cep *cep, void *pd, u16 pd_len)
{
	struct siw_listener *l;
	int rv;

	mutex_lock(&siw_listen_mutex);
	l = cep->listener;
	if (!l) {
		mutex_unlock(&siw_listen_mutex);
		return -ENOENT;
	}
	rv = siw_cep_event(cep, l->cm_id, IW_CM_EVENT_CONNECT_REQUEST, 0,
			   pd, pd_len);
	if (!rv) {
		siw_listen_unpend(cep);
		kref_get(&cep->ref);
		cep->provider_ref = true;
	}
	mutex_unlock(&siw_listen_mutex);
	return rv;
}

/* ------------------------------------------------------------ listen */

static void siw_lsock_data_ready(struct sock *sk)
{
	struct siw_lgroup *grp;

	/* accepted sockets inherit this callback, but not the pointer */
	read_lock_bh(&sk->sk_callback_lock);
	rcu_read_lock();
	grp = rcu_dereference_sk_user_data(sk);
	if (grp && READ_ONCE(sk->sk_state) == TCP_LISTEN)
		queue_work(siw_listen_wq, &grp->accept_work);
	rcu_read_unlock();
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * A new TCP connection on @grp: find its device, start an endpoint.
 * siw_listen_mutex held; @addr_err is siw_sock_addrs()' result for @ns,
 * @la and @ra the addresses it gave. The endpoint goes on its listener's
 * pending list and gets its callbacks in one go under the mutex, so a
 * listener destroyed meanwhile finds it complete.
 *
 * Return: true if the endpoint took @ns, false if the caller releases
 * it (outside the mutex: a release may send a reset, and a flood of
 * refused connections would otherwise hold every device's connection
 * requests and passive closes behind it).
 */
static bool siw_lgroup_dispatch(struct siw_lgroup *grp, struct socket *ns,
				int addr_err,
				const struct sockaddr_storage *la,
				const struct sockaddr_storage *ra)
{
	struct siw_listener *l, *hit = NULL;
	struct siw_cep *cep;

	lockdep_assert_held(&siw_listen_mutex);
	l = list_first_entry_or_null(&grp->members, struct siw_listener,
				     node);
	if (!l)
		return false;
	if (addr_err) {
		/* reset by the peer before we got to it: count it */
		siw_stat_inc(l->sdev, SIW_STAT_CONN_FAIL);
		siw_dbg(l->sdev, "connection on %pISpc gone before accept\n",
			&grp->addr);
		return false;
	}
	if (!siw_addr_is_any(&grp->addr)) {
		hit = l;
	} else {
		list_for_each_entry(l, &grp->members, node) {
			if (siw_addr_on_netdev(l->sdev->netdev, la)) {
				hit = l;
				break;
			}
		}
	}
	if (!hit) {
		l = list_first_entry(&grp->members, struct siw_listener, node);
		siw_dbg(l->sdev, "%pISpc -> %pISpc: no siw device owns the address, closed\n",
			ra, la);
		return false;
	}
	/*
	 * A peer may open connections and never send an MPA request: each
	 * would hold a socket and a device reference until mpa_timeout_ms.
	 * Past the cap the new one is reset, as TCP drops SYNs past a full
	 * backlog (the ULP's own backlog bounds the requests it was handed).
	 */
	if (hit->npending >= hit->max_pending) {
		siw_stat_inc(hit->sdev, SIW_STAT_CONN_REFUSED);
		siw_warn(hit->sdev, "listener %pISpc: %u connections wait for their MPA request, refusing %pISpc\n",
			 &grp->addr, hit->npending, ra);
		sock_no_linger(ns->sk);
		return false;
	}
	cep = siw_cep_alloc(hit->sdev);
	if (IS_ERR(cep)) {
		siw_warn(hit->sdev, "dropping connection from %pISpc: %ld\n",
			 ra, PTR_ERR(cep));
		return false;
	}
	/*
	 * Not locking cep->mtx here (lock order is cep->mtx, then the
	 * listen mutex): nothing runs for the endpoint before the hook,
	 * and after it only the atomic kick touches it.
	 */
	cep->sock = ns;
	cep->laddr = *la;
	cep->raddr = *ra;
	tcp_sock_set_nodelay(ns->sk);
	cep->listener = hit;
	list_add_tail(&cep->lnode, &hit->pending);
	hit->npending++;
	siw_cep_set_state(cep, SIW_CEP_AWAIT_REQUEST);
	siw_cep_arm(cep, siw_cm_mpa_timeout());
	siw_cep_hook(cep, grp->orig_data_ready);
	/*
	 * The request may have arrived, or the peer left, before the hook:
	 * no callback told us. Anything after it kicks by itself, so the
	 * common case (nothing yet) needs no work item.
	 */
	if (!skb_queue_empty_lockless(&ns->sk->sk_receive_queue) ||
	    READ_ONCE(ns->sk->sk_state) != TCP_ESTABLISHED ||
	    READ_ONCE(ns->sk->sk_err))
		siw_cep_kick(cep, SIW_EV_SOCK);
	return true;
}

/*
 * Connections one run of the accept work takes: a peer that connects
 * without pause must not keep the worker to itself; the work requeues
 * itself behind what was queued meanwhile.
 */
#define SIW_ACCEPT_BATCH	16

/*
 * The accept work. grp->sock stays while it runs: siw_lgroup_release()
 * unhooks the socket, then cancels this work (a requeue included) before
 * releasing it. siw_listen_mutex is held only for the group's lists, not
 * across kernel_accept() or sock_release().
 */
static void siw_lgroup_accept(struct work_struct *w)
{
	struct siw_lgroup *grp = container_of(w, struct siw_lgroup,
					      accept_work);
	struct sockaddr_storage la, ra;
	struct socket *ns;
	bool taken;
	int n, err;

	for (n = 0; n < SIW_ACCEPT_BATCH; n++) {
		if (READ_ONCE(grp->dead) ||
		    kernel_accept(grp->sock, &ns, O_NONBLOCK))
			return;
		err = siw_sock_addrs(ns, &la, &ra);
		mutex_lock(&siw_listen_mutex);
		taken = !grp->dead &&
			siw_lgroup_dispatch(grp, ns, err, &la, &ra);
		mutex_unlock(&siw_listen_mutex);
		if (!taken)
			sock_release(ns);
	}
	queue_work(siw_listen_wq, &grp->accept_work);
}

static struct siw_lgroup *siw_lgroup_find(struct net *net,
					  const struct sockaddr_storage *a,
					  bool afonly)
{
	struct siw_lgroup *grp;

	list_for_each_entry(grp, &siw_lgroups, node) {
		if (grp->net == net && grp->afonly == afonly &&
		    siw_addr_equal(&grp->addr, a))
			return grp;
	}
	return NULL;
}

static struct siw_lgroup *siw_lgroup_create(struct siw_device *sdev,
					    struct iw_cm_id *id, int backlog)
{
	struct siw_lgroup *grp;
	struct socket *s;
	struct sock *sk;
	int rv;

	grp = kzalloc(sizeof(*grp), GFP_KERNEL);
	if (!grp)
		return ERR_PTR(-ENOMEM);
	rv = siw_sock_create(sdev, id->local_addr.ss_family, &s);
	if (rv) {
		kfree(grp);
		return ERR_PTR(rv);
	}
	sk = s->sk;
	if (id->local_addr.ss_family == AF_INET6 && id->afonly)
		ip6_sock_set_v6only(sk);
	rv = siw_kernel_bind(s, &id->local_addr,
			     siw_addr_size(&id->local_addr));
	if (!rv)
		rv = kernel_listen(s, backlog);
	if (rv) {
		sock_release(s);
		kfree(grp);
		return ERR_PTR(rv);
	}
	kref_init(&grp->ref);
	grp->sock = s;
	grp->addr = id->local_addr;
	grp->net = dev_net(sdev->netdev);
	grp->afonly = id->afonly;
	INIT_LIST_HEAD(&grp->members);
	INIT_WORK(&grp->accept_work, siw_lgroup_accept);

	write_lock_bh(&sk->sk_callback_lock);
	grp->orig_data_ready = sk->sk_data_ready;
	/* NOCOPY: accepted sockets must not inherit the group pointer */
	__rcu_assign_sk_user_data_with_flags(sk, grp, SK_USER_DATA_NOCOPY);
	sk->sk_data_ready = siw_lsock_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);

	list_add_tail(&grp->node, &siw_lgroups);
	/* connections completed before the hook raised no callback */
	queue_work(siw_listen_wq, &grp->accept_work);
	return grp;
}

static void siw_lgroup_free(struct kref *ref)
{
	kfree(container_of(ref, struct siw_lgroup, ref));
}

/* Stop a listening socket; siw_listen_mutex not held, grp unlinked. */
static void siw_lgroup_release(struct siw_lgroup *grp)
{
	struct socket *s = grp->sock;
	struct sock *sk;

	if (!s)
		return;
	sk = s->sk;
	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	sk->sk_data_ready = grp->orig_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	cancel_work_sync(&grp->accept_work);
	grp->sock = NULL;
	sock_release(s);
}

/**
 * siw_create_listen - iw_cm listen verb
 * @id: listening cm_id; id->local_addr may be a wildcard address
 * @backlog: TCP backlog of a newly created listening socket, and how many
 *	connections may wait for their MPA request (at least
 *	SIW_LISTEN_PENDING_MIN; more are refused and counted)
 *
 * Joins the listening socket another device already has on the same
 * address in the same namespace, or creates one.
 *
 * Return: 0 or -errno.
 */
int siw_create_listen(struct iw_cm_id *id, int backlog)
{
	struct siw_device *sdev = to_siw_dev(id->device);
	struct siw_listener *l;
	struct siw_lgroup *grp;

	if (!siw_addr_family_ok(&id->local_addr)) {
		siw_warn(sdev, "listen: unsupported address family %u\n",
			 id->local_addr.ss_family);
		return -EAFNOSUPPORT;
	}
	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	INIT_LIST_HEAD(&l->pending);
	l->cm_id = id;
	l->sdev = sdev;
	l->max_pending = max_t(int, backlog, SIW_LISTEN_PENDING_MIN);

	mutex_lock(&siw_listen_mutex);
	grp = siw_lgroup_find(dev_net(sdev->netdev), &id->local_addr,
			      id->afonly);
	if (grp) {
		kref_get(&grp->ref);
		siw_dbg(sdev, "sharing listening socket %pISpc\n",
			&id->local_addr);
	} else {
		grp = siw_lgroup_create(sdev, id, backlog);
		if (IS_ERR(grp)) {
			mutex_unlock(&siw_listen_mutex);
			siw_warn(sdev, "cannot listen on %pISpc: %ld\n",
				 &id->local_addr, PTR_ERR(grp));
			kfree(l);
			return PTR_ERR(grp);
		}
	}
	l->grp = grp;
	list_add_tail(&l->node, &grp->members);
	id->provider_data = l;
	mutex_unlock(&siw_listen_mutex);

	siw_dbg(sdev, "listening on %pISpc, backlog %d\n", &id->local_addr,
		backlog);
	return 0;
}

/**
 * siw_destroy_listen - iw_cm verb to stop listening
 * @id: listening cm_id
 *
 * Connections still negotiating MPA for this listener are dropped.
 * Requests already delivered belong to their child cm_ids.
 *
 * Return: 0 or -EINVAL.
 */
int siw_destroy_listen(struct iw_cm_id *id)
{
	struct siw_device *sdev = to_siw_dev(id->device);
	struct siw_listener *l = id->provider_data;
	struct siw_lgroup *grp;
	struct siw_cep *cep, *next;
	bool release = false;

	if (!l) {
		siw_warn(sdev, "destroy_listen: not listening\n");
		return -EINVAL;
	}
	mutex_lock(&siw_listen_mutex);
	grp = l->grp;
	list_del(&l->node);
	list_for_each_entry_safe(cep, next, &l->pending, lnode) {
		siw_listen_unpend(cep);
		siw_cep_kick(cep, SIW_EV_KILL);
	}
	if (list_empty(&grp->members) && !grp->dead) {
		list_del_init(&grp->node);
		WRITE_ONCE(grp->dead, true);
		release = true;
	}
	mutex_unlock(&siw_listen_mutex);

	if (release)
		siw_lgroup_release(grp);
	kref_put(&grp->ref, siw_lgroup_free);
	id->provider_data = NULL;
	siw_dbg(sdev, "stopped listening on %pISpc\n", &id->local_addr);
	kfree(l);
	return 0;
}

/* ---------------------------------------------------------- namespace */

/*
 * Kernel sockets do not pin their namespace: release ours before TCP's
 * own per-namespace exit runs (it is registered earlier, so exits later).
 */
static void siw_listen_net_exit(struct net *net)
{
	struct siw_lgroup *grp, *next;
	LIST_HEAD(dying);

	mutex_lock(&siw_listen_mutex);
	list_for_each_entry_safe(grp, next, &siw_lgroups, node) {
		if (grp->net != net)
			continue;
		/* members stay until iw_cm destroys their listens */
		list_del_init(&grp->node);
		WRITE_ONCE(grp->dead, true);
		kref_get(&grp->ref);
		list_add_tail(&grp->dnode, &dying);
	}
	mutex_unlock(&siw_listen_mutex);
	list_for_each_entry_safe(grp, next, &dying, dnode) {
		list_del(&grp->dnode);
		siw_lgroup_release(grp);
		kref_put(&grp->ref, siw_lgroup_free);
	}

	siw_cep_kick_all(net, SIW_EV_KILL);
	siw_cm_flush();
}

static struct pernet_operations siw_listen_net_ops = {
	.exit = siw_listen_net_exit,
};

int siw_listen_init(void)
{
	return register_pernet_subsys(&siw_listen_net_ops);
}

void siw_listen_exit(void)
{
	unregister_pernet_subsys(&siw_listen_net_ops);
}

