// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: module setup, the "siw" rdma link type and netdev tracking.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/if_arp.h>
#include <linux/etherdevice.h>
#include <linux/random.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>
#include <rdma/ib_verbs.h>

#include "siw.h"

MODULE_AUTHOR("siw developers");
MODULE_DESCRIPTION("Software iWARP RDMA provider (out-of-tree siw)");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("siw");
MODULE_VERSION(SIW_VERSION);

static LIST_HEAD(siw_devices);
static DEFINE_MUTEX(siw_dev_lock);
static DEFINE_IDA(siw_dev_ida);

static enum ib_port_state siw_netdev_port_state(struct net_device *nd)
{
	return netif_running(nd) && netif_carrier_ok(nd) ? IB_PORT_ACTIVE :
							    IB_PORT_DOWN;
}

static void siw_dealloc_driver(struct ib_device *ibdev)
{
	struct siw_device *sdev = to_siw_dev(ibdev);

	mutex_lock(&siw_dev_lock);
	list_del(&sdev->list);
	mutex_unlock(&siw_dev_lock);

	siw_mem_exit(sdev);
	xa_destroy(&sdev->qp_xa);
	free_percpu(sdev->stats);
	ida_free(&siw_dev_ida, sdev->id);
	netdev_put(sdev->netdev, &sdev->netdev_tracker);
}

/* who drives the device, and how it goes away; the verbs: siw_verbs.c */
static const struct ib_device_ops siw_main_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_SIW,
	.uverbs_abi_ver = SIW_ABI_VERSION,
	.dealloc_driver = siw_dealloc_driver,
};

/* Loopback has no MAC; derive a stable, locally administered one. */
static void siw_guid_from_netdev(struct siw_device *sdev,
				 struct net_device *nd)
{
	u8 mac[ETH_ALEN] = { 0x02, 0x73, 0x69, 0x77 };	/* 02:"siw" */

	if (nd->addr_len == ETH_ALEN && !is_zero_ether_addr(nd->dev_addr))
		ether_addr_copy(mac, nd->dev_addr);
	else
		mac[5] = sdev->id;

	addrconf_addr_eui48((u8 *)&sdev->base.node_guid, mac);
}

static struct siw_device *siw_find_by_netdev(struct net_device *nd)
{
	struct siw_device *sdev;

	lockdep_assert_held(&siw_dev_lock);
	list_for_each_entry(sdev, &siw_devices, list)
		if (sdev->netdev == nd)
			return sdev;
	return NULL;
}

static unsigned int max_objects;
module_param(max_objects, uint, 0644);
MODULE_PARM_DESC(max_objects,
		 "cap on user contexts, PDs, QPs, CQs, MRs and SRQs per device, read when a device is created (0: the built-in maxima)");

/* The object limits a new device enforces and reports. */
static void siw_limits_init(struct siw_limits *m)
{
	u32 cap = READ_ONCE(max_objects) ?: U32_MAX;

	m->ctx = min_t(u32, SIW_MAX_CONTEXT, cap);
	m->pd = min_t(u32, SIW_MAX_PD, cap);
	m->qp = min_t(u32, SIW_MAX_QP, cap);
	m->cq = min_t(u32, SIW_MAX_CQ, cap);
	m->mr = min_t(u32, SIW_MAX_MR, cap);
	m->srq = min_t(u32, SIW_MAX_SRQ, cap);
}

static int siw_newlink(const char *name, struct net_device *nd)
{
	struct siw_device *sdev, *other;
	struct ib_device *ibdev;
	int rv;

	if (nd->type != ARPHRD_ETHER && nd->type != ARPHRD_LOOPBACK) {
		pr_err("siw: %s: netdev %s has link type %u, only Ethernet and loopback are supported\n",
		       name, netdev_name(nd), nd->type);
		return -EINVAL;
	}

	sdev = ib_alloc_device(siw_device, base);
	if (!sdev)
		return -ENOMEM;
	ibdev = &sdev->base;

	rv = ida_alloc(&siw_dev_ida, GFP_KERNEL);
	if (rv < 0)
		goto err_dealloc;
	sdev->id = rv;

	sdev->stats = alloc_percpu(struct siw_stats);
	if (!sdev->stats) {
		rv = -ENOMEM;
		goto err_ida;
	}

	spin_lock_init(&sdev->lock);
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&sdev->mr_xa, XA_FLAGS_ALLOC1);
	atomic_set(&sdev->key_seq, get_random_u32());
	INIT_LIST_HEAD(&sdev->list);
	sdev->netdev = nd;
	netdev_hold(nd, &sdev->netdev_tracker, GFP_KERNEL);
	sdev->port_state = siw_netdev_port_state(nd);
	siw_limits_init(&sdev->max);

	ibdev->node_type = RDMA_NODE_RNIC;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->iw_driver_flags = IW_F_NO_PORT_MAP;
	/* libsiw's doorbell is the legacy POST_SEND command without WRs */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND);
	memcpy(ibdev->node_desc, SIW_NODE_DESC_COMMON,
	       sizeof(SIW_NODE_DESC_COMMON));
	strscpy(ibdev->iw_ifname, netdev_name(nd), sizeof(ibdev->iw_ifname));
	siw_guid_from_netdev(sdev, nd);

	rv = ib_device_set_netdev(ibdev, nd, 1);
	if (rv)
		goto err_netdev;

	/*
	 * One device per netdev: check and claim it in one step, but do not
	 * hold siw_dev_lock across registration. A failed registration
	 * unregisters under the device's unregistration lock, which
	 * rdma link delete holds when dealloc_driver takes siw_dev_lock.
	 */
	mutex_lock(&siw_dev_lock);
	other = siw_find_by_netdev(nd);
	if (other) {
		pr_err("siw: %s: netdev %s already has siw device %s\n",
		       name, netdev_name(nd),
		       dev_name(&other->base.dev) ?: "(being created)");
		mutex_unlock(&siw_dev_lock);
		rv = -EEXIST;
		goto err_netdev;
	}
	/* From here on dealloc_driver undoes the setup above. */
	list_add_tail(&sdev->list, &siw_devices);
	mutex_unlock(&siw_dev_lock);
	siw_verbs_set_ops(ibdev);
	ib_set_device_ops(ibdev, &siw_main_ops);

	rv = ib_register_device(ibdev, name, NULL);
	if (rv) {
		pr_err("siw: %s: registration on %s failed: %d%s\n", name,
		       netdev_name(nd), rv,
		       rv == -EEXIST || rv == -ENFILE ?
		       " (device name in use)" : "");
		ib_dealloc_device(ibdev);
		return rv;
	}

	siw_info(sdev, "created on %s (%s), port %s\n", netdev_name(nd),
		 nd->type == ARPHRD_LOOPBACK ? "loopback" : "ethernet",
		 sdev->port_state == IB_PORT_ACTIVE ? "active" : "down");
	return 0;

err_netdev:
	netdev_put(nd, &sdev->netdev_tracker);
	free_percpu(sdev->stats);
err_ida:
	ida_free(&siw_dev_ida, sdev->id);
err_dealloc:
	ib_dealloc_device(ibdev);
	return rv;
}

static struct rdma_link_ops siw_link_ops = {
	.type = "siw",
	.newlink = siw_newlink,
};

static void siw_port_update(struct siw_device *sdev, struct net_device *nd)
{
	enum ib_port_state new = siw_netdev_port_state(nd);
	enum ib_port_state old;

	spin_lock(&sdev->lock);
	old = sdev->port_state;
	sdev->port_state = new;
	spin_unlock(&sdev->lock);

	if (old == new)
		return;
	siw_dbg(sdev, "port %s\n", new == IB_PORT_ACTIVE ? "active" : "down");
	siw_port_event(sdev, new == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
						     IB_EVENT_PORT_ERR);
}

static int siw_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *arg)
{
	struct net_device *nd = netdev_notifier_info_to_dev(arg);
	struct ib_device *ibdev;
	struct siw_device *sdev;

	ibdev = ib_device_get_by_netdev(nd, RDMA_DRIVER_SIW);
	if (!ibdev)
		return NOTIFY_DONE;
	sdev = to_siw_dev(ibdev);

	switch (event) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		siw_port_update(sdev, nd);
		break;
	case NETDEV_CHANGENAME:
		strscpy(ibdev->iw_ifname, netdev_name(nd),
			sizeof(ibdev->iw_ifname));
		break;
	case NETDEV_UNREGISTER:
		siw_info(sdev, "netdev %s going away, removing device\n",
			 netdev_name(nd));
		ib_unregister_device_queued(ibdev);
		break;
	default:
		break;
	}
	ib_device_put(ibdev);
	return NOTIFY_OK;
}

static struct notifier_block siw_netdev_nb = {
	.notifier_call = siw_netdev_event,
};

#ifdef SIW_TEST_LEAK
#define SIW_TEST_LEAKS 8
#define SIW_TEST_LEAK_SIZE 64
/*
 * Test-only, built only with -DSIW_TEST_LEAK (tests/run's leak variant for
 * tests/cases/harness): lose allocations at load, so that the harness
 * proves its kmemleak checks catch a leak of ours. kmemleak is
 * conservative: any stale word in scanned memory equal to an object's
 * address hides it, and kmemleak follows the words of what it hides. From
 * kmalloc-64 (no init-on-alloc, no free-list hardening in the debug
 * kernel) each of ours still held the free pointer to the next one taken,
 * so one stale word hid the rest of the chain: loads reported 0 to 8 of 8.
 * So they come from a zeroed cache of their own, which no one else
 * allocates from and which a constructor keeps from being merged (its
 * free pointer then lies outside the object, too).
 * Their addresses are kept inverted, which kmemleak does not take for
 * references, and freed at unload: one that was hidden at the harness's
 * scan cannot surface in a later check.
 */
static struct kmem_cache *siw_test_leak_cache;
static unsigned long siw_test_leaked[SIW_TEST_LEAKS];

static void siw_test_leak_ctor(void *p)
{
	memset(p, 0, SIW_TEST_LEAK_SIZE);
}

static noinline void siw_test_leak(void)
{
	int i, n = 0;

	siw_test_leak_cache = kmem_cache_create("siw_test_leak",
						SIW_TEST_LEAK_SIZE, 0, 0,
						siw_test_leak_ctor);
	for (i = 0; i < SIW_TEST_LEAKS && siw_test_leak_cache; i++) {
		void *p = kmem_cache_alloc(siw_test_leak_cache, GFP_KERNEL);

		siw_test_leaked[i] = ~(unsigned long)p;
		n += !!p;
	}
	pr_info("siw: SIW_TEST_LEAK build, lost %dx%d bytes: %s\n", n,
		SIW_TEST_LEAK_SIZE, n == SIW_TEST_LEAKS ? "yes" : "no");
}

static void siw_test_leak_free(void)
{
	int i;

	if (!siw_test_leak_cache)
		return;
	for (i = 0; i < SIW_TEST_LEAKS; i++)
		if (siw_test_leaked[i] != ~0UL)
			kmem_cache_free(siw_test_leak_cache,
					(void *)~siw_test_leaked[i]);
	kmem_cache_destroy(siw_test_leak_cache);
}
#else
static inline void siw_test_leak(void) { }
static inline void siw_test_leak_free(void) { }
#endif

/*
 * User verbs need ib_uverbs. Up to 6.12 siw uses its symbols, so it is
 * loaded first; on later kernels (7.x, SIW_LOAD_UVERBS) nothing siw uses
 * pulls it in, and a host without rdma-core's udev rules would not have
 * it. Loaded here, not by a soft dependency: with one, `modprobe -r siw`
 * also unloads ib_uverbs, and `modprobe -r --wait` (blktests) waits out
 * its timeout while rdma_ucm still uses it.
 */
static void __init siw_load_uverbs(void)
{
	int rv;

	if (!SIW_LOAD_UVERBS)
		return;
	rv = request_module("ib_uverbs");
	if (rv)
		pr_warn("siw: loading ib_uverbs failed (%d): no user verbs until it is loaded\n",
			rv);
}

static int __init siw_init(void)
{
	int rv;

	siw_test_leak();
	rv = siw_qp_wq_init();
	if (rv)
		return rv;
	rv = siw_mem_init();
	if (rv)
		goto err_wq;
	rv = siw_cm_init();
	if (rv)
		goto err_mem;

	rv = register_netdevice_notifier(&siw_netdev_nb);
	if (rv)
		goto err_cm;

	rdma_link_register(&siw_link_ops);
	siw_load_uverbs();
	pr_info("siw: software iWARP provider loaded\n");
	return 0;

err_cm:
	siw_cm_exit();
err_mem:
	siw_mem_fini();
err_wq:
	siw_qp_wq_exit();
	siw_test_leak_free();
	return rv;
}

static void __exit siw_exit(void)
{
	rdma_link_unregister(&siw_link_ops);
	unregister_netdevice_notifier(&siw_netdev_nb);
	ib_unregister_driver(RDMA_DRIVER_SIW);
	/* zero-copy releases: their final device puts (siw_zc_free()) */
	rcu_barrier();
	siw_cm_exit();
	siw_mem_fini();
	siw_qp_wq_exit();
	ida_destroy(&siw_dev_ida);
	siw_test_leak_free();
	pr_info("siw: unloaded\n");
}

module_init(siw_init);
module_exit(siw_exit);
