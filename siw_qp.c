// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * siw: the QP object, its lifecycle and state machine, and the
 * scheduling of its transmitter. Its work queues are siw_queue.c's, its
 * completions siw_cq.c's.
 */
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/sched/isolation.h>
#include <net/tcp.h>
#include <rdma/restrack.h>

#include <kunit/visibility.h>

#include "siw.h"
#include "siw_trace.h"

/* siw_qp_destroy() logs a wait for references this long, and again */
#define SIW_QP_DESTROY_NAG_S 30

static void siw_qp_release(struct kref *ref)
{
	struct siw_qp *qp = container_of(ref, struct siw_qp, ref);

	complete(&qp->freed);
}

void siw_qp_get(struct siw_qp *qp)
{
	kref_get(&qp->ref);
}

void siw_qp_put(struct siw_qp *qp)
{
	kref_put(&qp->ref, siw_qp_release);
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_put);

struct siw_qp *siw_qp_lookup(struct siw_device *sdev, u32 id)
{
	struct siw_qp *qp;

	/*
	 * Under the xarray's lock, not RCU: ib_core frees the QP with kfree()
	 * right after siw_destroy_qp(), with no grace period after our
	 * xa_erase(), so a pointer loaded before the erase must not be
	 * touched after it. The erase waits for this lock.
	 */
	xa_lock(&sdev->qp_xa);
	qp = xa_load(&sdev->qp_xa, id);
	if (qp && !kref_get_unless_zero(&qp->ref))
		qp = NULL;
	xa_unlock(&sdev->qp_xa);
	return qp;
}

/* Receives posted to a QP in ERROR, flushed (siw_qp_flush_posted()). */
static void siw_qp_flush_work(struct work_struct *w)
{
	struct siw_qp *qp = container_of(w, struct siw_qp, flush_work);

	siw_qp_flush_rq(qp);
	siw_qp_put(qp);
}

int siw_qp_init(struct siw_qp *qp, struct siw_device *sdev)
{
	u32 id;
	int rv;

	qp->sdev = sdev;
	kref_init(&qp->ref);
	init_completion(&qp->freed);
	spin_lock_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	spin_lock_init(&qp->orq_lock);
	INIT_WORK(&qp->flush_work, siw_qp_flush_work);
	qp->attrs.state = SIW_QP_IDLE;

	rv = xa_alloc_cyclic(&sdev->qp_xa, &id, qp, XA_LIMIT(1, 0xffffff),
			     &sdev->next_qp, GFP_KERNEL);
	if (rv < 0)
		return rv;
	qp->id = id;
	qp->base.qp_num = id;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_init);

static const char *const siw_qp_state_name[SIW_QP_NUM_STATES] = {
	[SIW_QP_IDLE] = "IDLE",
	[SIW_QP_RTS] = "RTS",
	[SIW_QP_CLOSING] = "CLOSING",
	[SIW_QP_TERMINATE] = "TERMINATE",
	[SIW_QP_ERROR] = "ERROR",
};

enum ib_qp_state siw_qp_ib_state(const struct siw_qp *qp)
{
	static const enum ib_qp_state map[SIW_QP_NUM_STATES] = {
		[SIW_QP_IDLE] = IB_QPS_INIT,
		[SIW_QP_RTS] = IB_QPS_RTS,
		[SIW_QP_CLOSING] = IB_QPS_SQD,
		[SIW_QP_TERMINATE] = IB_QPS_SQE,
		[SIW_QP_ERROR] = IB_QPS_ERR,
	};

	return map[READ_ONCE(qp->attrs.state)];
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_ib_state);

void siw_qp_event(struct siw_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->base.device,
		.element.qp = &qp->base,
		.event = type,
	};

	if (qp->base.event_handler)
		qp->base.event_handler(&ev, qp->base.qp_context);
}

/*
 * The TX work of every QP. Unbound: the TX work of a QP whose RX softirq
 * runs on one CPU may run on another, so a Read Response or the next
 * FPDUs go out while this CPU still receives. A QP's work never runs
 * twice at once. A Read Response goes the same way: on the receiving
 * CPU it would wait for the softirq that queued it to finish.
 */
static struct workqueue_struct *siw_tx_wq;

/*
 * The doorbell's hand-over (siw_qp_hand_tx()): per CPU, so that it names
 * the CPU. WQ_MEM_RECLAIM like siw_tx_wq: the connection's close flushes
 * the TX work from the CM's reclaim-safe queue (siw_tx_quiesce()), and
 * flushing work of a queue without it from there is what the workqueue
 * code warns about (check_flush_dependency()), as the system queue this
 * used before did once on the debug kernel.
 */
static struct workqueue_struct *siw_hand_wq;

/*
 * Flushes of work requests a kernel consumer posts to a QP in ERROR
 * (siw_qp_flush_posted()): per CPU at normal priority, so that the work
 * waits for the poster to return or sleep. WQ_MEM_RECLAIM: storage
 * consumers drain their QPs (ib_drain_qp()) on the way to freeing memory.
 */
static struct workqueue_struct *siw_flush_wq;

int siw_qp_wq_init(void)
{
	siw_tx_wq = alloc_workqueue("siw_tx",
				    WQ_UNBOUND | WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	siw_hand_wq = alloc_workqueue("siw_tx_hand", WQ_HIGHPRI |
				      WQ_MEM_RECLAIM | SIW_WQ_PERCPU, 0);
	siw_flush_wq = alloc_workqueue("siw_flush",
				       WQ_MEM_RECLAIM | SIW_WQ_PERCPU, 0);
	if (siw_tx_wq && siw_hand_wq && siw_flush_wq)
		return 0;
	siw_qp_wq_exit();
	return -ENOMEM;
}

void siw_qp_wq_exit(void)
{
	if (siw_flush_wq)
		destroy_workqueue(siw_flush_wq);
	siw_flush_wq = NULL;
	if (siw_hand_wq)
		destroy_workqueue(siw_hand_wq);
	siw_hand_wq = NULL;
	if (siw_tx_wq)
		destroy_workqueue(siw_tx_wq);
	siw_tx_wq = NULL;
}

/*
 * Run the QP's transmitter (siw_tx.c) soon: the one way to queue its TX
 * work, from any context. The queued work holds a QP reference; a QP
 * whose last one is gone is being destroyed, and its teardown flushes
 * what the transmitter holds (siw_tx_fini()).
 */
void siw_qp_schedule_tx(struct siw_qp *qp)
{
	if (!kref_get_unless_zero(&qp->ref))
		return;
	if (!queue_work(siw_tx_wq, &qp->tx_work))
		siw_qp_put(qp);
}

/**
 * siw_qp_hand_cpu - the CPU a doorbell hands its stream to
 * @self: the poster's CPU
 * @allowed: where the poster may run (its affinity and cpuset), or every
 *	online CPU for a poster that is no user task (softirq, kthread)
 *
 * The next CPU after @self, wrapping, that is online, that @allowed
 * holds and that kernel work may use: not isolated from the scheduler's
 * domains or from unbound work (isolcpus=, nohz_full=). A job pinned to
 * its CPUs, or isolated ones kept free for it, gets no transmit work on
 * CPUs it was kept from.
 *
 * Return: the CPU, or -1 if there is none but @self.
 */
int siw_qp_hand_cpu(unsigned int self, const struct cpumask *allowed)
{
	const struct cpumask *wq, *dom;
	unsigned int cpu;
	int found = -1;

	/* newer kernels change the isolated set at run time, under RCU */
	rcu_read_lock();
	wq = housekeeping_cpumask(HK_TYPE_WQ);
	dom = housekeeping_cpumask(HK_TYPE_DOMAIN);
	for_each_cpu_wrap(cpu, allowed, self) {
		if (cpu != self && cpu_online(cpu) &&
		    cpumask_test_cpu(cpu, wq) && cpumask_test_cpu(cpu, dom)) {
			found = cpu;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_hand_cpu);

/**
 * siw_qp_hand_tx - the doorbell leaves a stream to the TX work
 * @qp: the QP
 *
 * On a CPU other than the caller's (siw_qp_hand_cpu()): the caller goes
 * on posting, and a worker woken on its CPU would preempt it, so the two
 * would take turns instead of overlapping. The unbound queue may place
 * it either way, so this goes to a per-CPU high-priority queue, which
 * names the CPU; with no other CPU to use, to the unbound one. The
 * work may then run on both queues at once; its mutex (siw_tx_work())
 * keeps one transmitter, and each queuing holds a QP reference, so
 * siw_qp_destroy() still waits for both.
 */
void siw_qp_hand_tx(struct siw_qp *qp)
{
	/*
	 * A user task's affinity is where its job was placed; a kernel
	 * thread's (a per-CPU kworker of a ULP) is its queue's, not a limit
	 * for the work it hands on.
	 */
	bool user = in_task() && !(current->flags & PF_KTHREAD);
	int cpu = siw_qp_hand_cpu(raw_smp_processor_id(),
				  user ? current->cpus_ptr : cpu_online_mask);

	if (cpu < 0) {
		/* the unbound queue keeps to the workqueue's own CPU mask */
		siw_qp_schedule_tx(qp);
		return;
	}
	siw_qp_get(qp);
	if (!queue_work_on(cpu, siw_hand_wq, &qp->tx_work))
		siw_qp_put(qp);
}

/**
 * siw_qp_tx_unblock - one of our Reads ended, or its ORD slot came free
 * @qp: the QP, the Read's requester
 *
 * Wakes the transmitter only if it stopped at a work request that waits
 * for that (siw_sqe_fetch() returned -EBUSY): a wake-up per Read
 * Response for nothing costs another CPU's time and the Read's latency.
 * A closing QP's transmitter also waits for its last Read to end before
 * the orderly close (siw_tx_all_done()): it is woken too.
 */
void siw_qp_tx_unblock(struct siw_qp *qp)
{
	unsigned long flags;
	bool wake;

	spin_lock_irqsave(&qp->orq_lock, flags);
	wake = qp->tx_waits || READ_ONCE(qp->attrs.state) == SIW_QP_CLOSING;
	qp->tx_waits = false;
	spin_unlock_irqrestore(&qp->orq_lock, flags);
	if (wake)
		siw_qp_schedule_tx(qp);
}

/**
 * siw_qp_flush_posted - a kernel consumer posted receives to a QP in ERROR
 * @qp: the QP
 *
 * They complete with a flush error from a work item on this
 * CPU, not before the post returns. A consumer may take a buffer, post
 * it, and go on while buffers are left, each flush completion giving its
 * buffer back: the SMB client's receive refill (smbd_post_send_credits()
 * in 6.12) does, and with the flush inline its completion softirq on the
 * same CPU handed every buffer back before the next post; the loop held
 * the CPU for 26 s (a soft lockup). The work waits for the poster to
 * return or sleep (no forced preemption, as in Debian's kernels), so the
 * loop runs out of buffers first; then the work flushes them all.
 */
void siw_qp_flush_posted(struct siw_qp *qp)
{
	if (!kref_get_unless_zero(&qp->ref))
		return;
	if (!queue_work(siw_flush_wq, &qp->flush_work))
		siw_qp_put(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_flush_posted);

int siw_qp_to_rts(struct siw_qp *qp, const struct siw_llp_params *p)
{
	struct siw_irq_entry *irq = NULL;
	struct siw_orq_entry *orq = NULL;
	/* 0 is a valid answer: no RDMA Reads that way (RFC 6581 3.2) */
	u32 ird = min_t(u32, p->ird, SIW_MAX_IRD);
	u32 ord = min_t(u32, p->ord, SIW_MAX_ORD);
	/* powers of 2 for the index wrap (siw_cq_depth()); limits: ird, ord */
	u32 nirq = siw_cq_depth(ird), norq = siw_cq_depth(ord);
	u32 ndone = siw_cq_depth(max_t(u32, qp->attrs.sq_size, 16));
	struct siw_sq_done *done;

	struct mem_cgroup *old_memcg;
	gfp_t gfp = qp->memcg ? SIW_GFP_USER : GFP_KERNEL | __GFP_NOWARN;

	/*
	 * A user QP's arrays are charged to its creator's memory cgroup,
	 * also when the CM's work item (the active side) gets here. A
	 * failure is reported by the caller ("cannot enter RTS").
	 */
	old_memcg = set_active_memcg(qp->memcg);
	irq = kvcalloc(nirq, sizeof(*irq), gfp);
	orq = kvcalloc(norq, sizeof(*orq), gfp);
	done = kvcalloc(ndone, sizeof(*done), gfp);
	set_active_memcg(old_memcg);
	if (!irq || !orq || !done) {
		kvfree(irq);
		kvfree(orq);
		kvfree(done);
		return -ENOMEM;
	}

	spin_lock_bh(&qp->state_lock);
	if (qp->attrs.state != SIW_QP_IDLE) {
		spin_unlock_bh(&qp->state_lock);
		kvfree(irq);
		kvfree(orq);
		kvfree(done);
		siw_dbg(qp->sdev, "QP %u: connect in state %s\n", qp_id(qp),
			siw_qp_state_name[qp->attrs.state]);
		return -EINVAL;
	}
	qp->irq = irq;
	qp->irq_size = nirq;
	qp->orq = orq;
	qp->orq_size = norq;
	qp->sq_done = done;
	qp->sq_done_size = ndone;
	qp->sq_done_put = 0;
	qp->sq_done_get = 0;
	qp->reads_done = 0;
	qp->attrs.ird = ird;
	qp->attrs.ord = ord;
	qp->attrs.crc = p->crc;
	/*
	 * Before RTS a user QP's access flags are librdmacm's, not the
	 * consumer's: 0 on the active side (rdma_init_qp_attr() without an
	 * iw_cm id), remote Write and Read on the passive side. It enters
	 * RTS allowing both; IB_QP_ACCESS_FLAGS in RTS narrows them. A
	 * kernel QP keeps what rdma_cm (or its consumer) set.
	 */
	if (qp->user)
		WRITE_ONCE(qp->attrs.access, IB_ACCESS_REMOTE_WRITE |
					     IB_ACCESS_REMOTE_READ);
	qp->sock = p->sock;
	qp->cep = p->cep;
	qp->irq_put = 0;
	qp->irq_get = 0;
	qp->orq_put = 0;
	qp->orq_get = 0;
	/* fresh transmitter and parser: all zeros is their initial state */
	memset(&qp->tx, 0, sizeof(qp->tx));
	memset(&qp->rx, 0, sizeof(qp->rx));
	qp->rtr_send = p->rtr_enable && !p->rtr_wait ? p->rtr_send : 0;
	qp->rtr_pending = p->rtr_enable && !p->rtr_wait;
	qp->tx_hold = p->rtr_enable && p->rtr_wait;
	trace_siw_qp_state(qp, qp->attrs.state, SIW_QP_RTS, _RET_IP_);
	qp->attrs.state = SIW_QP_RTS;
	spin_unlock_bh(&qp->state_lock);

	siw_dbg(qp->sdev, "QP %u: RTS, ird %u ord %u crc %d\n", qp_id(qp),
		ird, ord, p->crc);
	/*
	 * What waits (an RTR, work posted before RTS) is sent by the CM
	 * once the socket's write space reaches the QP (siw_tx_now() after
	 * siw_cep_publish()), from its sleeping context: a work item per
	 * connection only to find the queue empty cost a worker wake-up.
	 */
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_to_rts);

/**
 * siw_qp_set_state_error - move to ERROR, return the previous state
 * @qp: the QP
 *
 * Only the state changes here; callers decide about events, disconnect
 * and flushing, which must not run under the state lock.
 */
enum siw_qp_state siw_qp_set_state_error(struct siw_qp *qp)
{
	enum siw_qp_state old;
	unsigned long flags;

	spin_lock_irqsave(&qp->state_lock, flags);
	old = qp->attrs.state;
	qp->attrs.state = SIW_QP_ERROR;
	spin_unlock_irqrestore(&qp->state_lock, flags);
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_set_state_error);

/**
 * siw_qp_flush - complete the queued work of a QP in ERROR
 * @qp: the QP
 *
 * The receive queue is flushed here; the send side (ORQ, queued
 * completions, SQ) only by the transmitter, which alone takes SQEs and
 * waits for a Read the receiver holds (siw_sq_flush_reads()): it is run
 * for that (siw_tx_run()).
 */
void siw_qp_flush(struct siw_qp *qp)
{
	if (READ_ONCE(qp->attrs.state) != SIW_QP_ERROR)
		return;
	siw_qp_flush_rq(qp);
	siw_qp_schedule_tx(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_flush);

/**
 * siw_qp_to_error - move to ERROR, close the connection, flush
 * @qp: the QP
 *
 * After a Terminate went out the close is graceful, so the peer gets to
 * read it; otherwise the connection is reset.
 */
void siw_qp_to_error(struct siw_qp *qp)
{
	enum siw_qp_state old = siw_qp_set_state_error(qp);

	if (old == SIW_QP_ERROR)
		return;
	trace_siw_qp_state(qp, old, SIW_QP_ERROR, _RET_IP_);
	siw_dbg(qp->sdev, "QP %u: %s -> ERROR\n", qp_id(qp),
		siw_qp_state_name[old]);
	if (old != SIW_QP_IDLE && READ_ONCE(qp->cep))
		siw_cm_qp_disconnect(qp, !qp->term_sent);
	else if (old == SIW_QP_IDLE && READ_ONCE(qp->cm_active))
		siw_cm_qp_abort_connect(qp);
	siw_qp_flush(qp);
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_to_error);

/**
 * siw_qp_error_async - the rest of a move to ERROR, for any context
 * @qp: the QP
 * @old: its state before siw_qp_set_state_error(), not ERROR
 *
 * For a context that may hold RX, ring or CQ locks: the state changed
 * already (siw_qp_set_state_error()); the disconnect and the flush,
 * which take those locks, run from the CM and TX work.
 */
void siw_qp_error_async(struct siw_qp *qp, enum siw_qp_state old)
{
	trace_siw_qp_state(qp, old, SIW_QP_ERROR, _RET_IP_);
	if (old != SIW_QP_IDLE)
		siw_cm_qp_disconnect(qp, true);
	siw_qp_schedule_tx(qp);
}

/**
 * siw_qp_close_graceful - the move to SQD: finish what is queued, then close
 * @qp: the QP
 *
 * A connected QP goes to CLOSING; its transmitter, which the caller runs,
 * sends what is queued and then asks the CM for an orderly TCP close
 * (siw_qp_sq_drained()). One not yet connected goes to ERROR.
 *
 * Return: true if the caller is to run the transmitter.
 */
bool siw_qp_close_graceful(struct siw_qp *qp)
{
	bool connected = false, idle = false;

	spin_lock_bh(&qp->state_lock);
	if (qp->attrs.state == SIW_QP_RTS) {
		trace_siw_qp_state(qp, SIW_QP_RTS, SIW_QP_CLOSING, _RET_IP_);
		qp->attrs.state = SIW_QP_CLOSING;
		connected = true;
	} else if (qp->attrs.state == SIW_QP_IDLE) {
		trace_siw_qp_state(qp, SIW_QP_IDLE, SIW_QP_ERROR, _RET_IP_);
		qp->attrs.state = SIW_QP_ERROR;
		idle = true;
	}
	spin_unlock_bh(&qp->state_lock);

	if (idle)
		siw_qp_flush(qp);
	return connected;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_close_graceful);

/*
 * CLOSING and everything sent, no Read of ours outstanding (the
 * transmitter found): now the orderly close.
 */
void siw_qp_sq_drained(struct siw_qp *qp)
{
	qp->close_sent = true;
	siw_cm_qp_disconnect(qp, false);
}

/*
 * The engines stopped using the connection (siw_qp_llp_closed(), the
 * CM's work, QP in ERROR): the QP lets go of it and flushes its receives;
 * the caller runs the transmitter for the send side.
 */
void siw_qp_llp_detach(struct siw_qp *qp)
{
	spin_lock_bh(&qp->state_lock);
	qp->sock = NULL;
	qp->cep = NULL;
	spin_unlock_bh(&qp->state_lock);

	siw_qp_flush_rq(qp);
}

/**
 * siw_qp_destroy - take the QP out of service
 * @qp: the QP
 *
 * Returns once nothing references it any more (its connection closed,
 * its TX work done). The engines then flush what they hold
 * (siw_tx_fini(), siw_rx_fini()) before siw_qp_free().
 */
void siw_qp_destroy(struct siw_qp *qp)
{
	unsigned int waited = 0;

	siw_qp_to_error(qp);
	xa_erase(&qp->sdev->qp_xa, qp->id);

	/* CM and iw_cm references go once the connection is closed */
	siw_qp_put(qp);
	/*
	 * The CM's timers bound that wait: the TCP connect (10 s), the MPA
	 * exchange (mpa_timeout_ms, up to 600 s), the consumer's answer to
	 * a request (30 s) and the close (5 s). Past them a reference is
	 * lost; each nag says so, as the hung-task detector would (the
	 * tests' log scan flags both), and the wait goes on.
	 */
	while (!wait_for_completion_timeout(&qp->freed,
					    SIW_QP_DESTROY_NAG_S * HZ)) {
		waited += SIW_QP_DESTROY_NAG_S;
		siw_err(qp->sdev,
			"QP %u: destroy blocked for more than %u s, %u reference(s) left\n",
			qp_id(qp), waited, kref_read(&qp->ref));
	}
	cancel_work_sync(&qp->tx_work);
	cancel_work_sync(&qp->flush_work);
}

void siw_qp_free(struct siw_qp *qp)
{
	/* the engines flushed what they hold (siw_tx_fini, siw_rx_fini) */
	siw_qp_flush_rq(qp);
	kvfree(qp->irq);
	kvfree(qp->orq);
	kvfree(qp->sq_done);
	qp->irq = NULL;
	qp->orq = NULL;
	qp->sq_done = NULL;
	mem_cgroup_put(qp->memcg);
	qp->memcg = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(siw_qp_free);

/* ------------------------------------------------- observability */

/**
 * siw_fill_res_qp_entry - driver details for `rdma res show qp -dd`
 * @msg: netlink message being built
 * @ibqp: the QP
 *
 * A snapshot without locks (values may be mid-update): where the send
 * queue, the transmitter, the read queues and the socket stand, enough to
 * tell a stalled QP from a busy one.
 */
int siw_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct siw_qp *qp = to_siw_qp(ibqp);
	struct siw_sqe *next = NULL;
	struct socket *sock;
	u32 sndbuf = 0, queued = 0, nospace = 0;
	struct nlattr *nest;

	spin_lock_bh(&qp->state_lock);
	sock = qp->sock;
	if (sock && sock->sk) {
		sndbuf = READ_ONCE(sock->sk->sk_sndbuf);
		queued = READ_ONCE(sock->sk->sk_wmem_queued);
		nospace = test_bit(SOCK_NOSPACE, &sock->flags);
	}
	spin_unlock_bh(&qp->state_lock);
	if (qp->sendq)
		next = &qp->sendq[READ_ONCE(qp->sq_get) % qp->attrs.sq_size];

	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "state", READ_ONCE(qp->attrs.state)) ||
	    rdma_nl_put_driver_u32(msg, "sq_get", READ_ONCE(qp->sq_get)) ||
	    rdma_nl_put_driver_u32(msg, "sq_next_valid", next &&
				   (READ_ONCE(next->flags) & SIW_WQE_VALID)) ||
	    rdma_nl_put_driver_u32(msg, "tx_active", READ_ONCE(qp->tx.active)) ||
	    rdma_nl_put_driver_u32(msg, "tx_fpdu_busy",
				   READ_ONCE(qp->tx.busy)) ||
	    rdma_nl_put_driver_u32(msg, "tx_work_pending",
				   work_pending(&qp->tx_work)) ||
	    rdma_nl_put_driver_u32(msg, "orq_out", READ_ONCE(qp->orq_put) -
				   READ_ONCE(qp->reads_done)) ||
	    rdma_nl_put_driver_u32(msg, "irq_out", READ_ONCE(qp->irq_put) -
				   READ_ONCE(qp->irq_get)) ||
	    rdma_nl_put_driver_u32(msg, "cqe_waiting",
				   READ_ONCE(qp->sq_done_put) -
				   READ_ONCE(qp->sq_done_get)) ||
	    rdma_nl_put_driver_u32(msg, "zc_unreleased", siw_zc_started(qp) -
				   siw_zc_released(qp)) ||
	    rdma_nl_put_driver_u32(msg, "rx_state", READ_ONCE(qp->rx.state)) ||
	    rdma_nl_put_driver_u32(msg, "sk_sndbuf", sndbuf) ||
	    rdma_nl_put_driver_u32(msg, "sk_wmem_queued", queued) ||
	    rdma_nl_put_driver_u32(msg, "sk_nospace", nospace)) {
		nla_nest_cancel(msg, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, nest);
	return 0;
}
