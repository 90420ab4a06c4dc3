/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * siw tracepoints: the "siw" trace system.
 *
 *   echo 1 > /sys/kernel/tracing/events/siw/enable
 *   cat /sys/kernel/tracing/trace_pipe
 *
 * Connection setup (CEP states, MPA outcome), QP states with the function
 * that changed them, Terminates both ways, receive errors, and one event
 * per work request taken from a send or receive queue and per completion.
 * Disabled tracepoints cost a patched-out branch.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM siw

#if !defined(_SIW_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _SIW_TRACE_H

#include <linux/tracepoint.h>
#include <linux/socket.h>
#include <linux/in6.h>

#include "siw.h"

/* symbolic values as user space tools (trace-cmd, perf) see them too */
TRACE_DEFINE_ENUM(SIW_QP_IDLE);
TRACE_DEFINE_ENUM(SIW_QP_RTS);
TRACE_DEFINE_ENUM(SIW_QP_CLOSING);
TRACE_DEFINE_ENUM(SIW_QP_TERMINATE);
TRACE_DEFINE_ENUM(SIW_QP_ERROR);
#define siw_show_qp_state(s)						\
	__print_symbolic(s, { SIW_QP_IDLE, "IDLE" }, { SIW_QP_RTS, "RTS" }, \
			 { SIW_QP_CLOSING, "CLOSING" },			\
			 { SIW_QP_TERMINATE, "TERMINATE" },		\
			 { SIW_QP_ERROR, "ERROR" })

TRACE_DEFINE_ENUM(SIW_OP_WRITE);
TRACE_DEFINE_ENUM(SIW_OP_READ);
TRACE_DEFINE_ENUM(SIW_OP_READ_LOCAL_INV);
TRACE_DEFINE_ENUM(SIW_OP_SEND);
TRACE_DEFINE_ENUM(SIW_OP_SEND_WITH_IMM);
TRACE_DEFINE_ENUM(SIW_OP_SEND_REMOTE_INV);
TRACE_DEFINE_ENUM(SIW_OP_FETCH_AND_ADD);
TRACE_DEFINE_ENUM(SIW_OP_COMP_AND_SWAP);
TRACE_DEFINE_ENUM(SIW_OP_RECEIVE);
TRACE_DEFINE_ENUM(SIW_OP_READ_RESPONSE);
TRACE_DEFINE_ENUM(SIW_OP_INVAL_STAG);
TRACE_DEFINE_ENUM(SIW_OP_REG_MR);
#define siw_show_opcode(op)						\
	__print_symbolic(op, { SIW_OP_WRITE, "WRITE" },			\
			 { SIW_OP_READ, "READ" },			\
			 { SIW_OP_READ_LOCAL_INV, "READ_LOCAL_INV" },	\
			 { SIW_OP_SEND, "SEND" },			\
			 { SIW_OP_SEND_WITH_IMM, "SEND_WITH_IMM" },	\
			 { SIW_OP_SEND_REMOTE_INV, "SEND_REMOTE_INV" },	\
			 { SIW_OP_FETCH_AND_ADD, "FETCH_AND_ADD" },	\
			 { SIW_OP_COMP_AND_SWAP, "COMP_AND_SWAP" },	\
			 { SIW_OP_RECEIVE, "RECEIVE" },			\
			 { SIW_OP_READ_RESPONSE, "READ_RESPONSE" },	\
			 { SIW_OP_INVAL_STAG, "INVAL_STAG" },		\
			 { SIW_OP_REG_MR, "REG_MR" })

TRACE_DEFINE_ENUM(IB_WC_SUCCESS);
TRACE_DEFINE_ENUM(IB_WC_LOC_LEN_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_QP_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_PROT_ERR);
TRACE_DEFINE_ENUM(IB_WC_WR_FLUSH_ERR);
TRACE_DEFINE_ENUM(IB_WC_BAD_RESP_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_ACCESS_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_INV_REQ_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_ACCESS_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_GENERAL_ERR);
#define siw_show_wc_status(st)						\
	__print_symbolic(st, { IB_WC_SUCCESS, "SUCCESS" },		\
			 { IB_WC_LOC_LEN_ERR, "LOC_LEN_ERR" },		\
			 { IB_WC_LOC_QP_OP_ERR, "LOC_QP_OP_ERR" },	\
			 { IB_WC_LOC_PROT_ERR, "LOC_PROT_ERR" },	\
			 { IB_WC_WR_FLUSH_ERR, "WR_FLUSH_ERR" },	\
			 { IB_WC_BAD_RESP_ERR, "BAD_RESP_ERR" },	\
			 { IB_WC_LOC_ACCESS_ERR, "LOC_ACCESS_ERR" },	\
			 { IB_WC_REM_INV_REQ_ERR, "REM_INV_REQ_ERR" },	\
			 { IB_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR" },	\
			 { IB_WC_REM_OP_ERR, "REM_OP_ERR" },		\
			 { IB_WC_GENERAL_ERR, "GENERAL_ERR" })

TRACE_DEFINE_ENUM(TERM_LAYER_RDMAP);
TRACE_DEFINE_ENUM(TERM_LAYER_DDP);
TRACE_DEFINE_ENUM(TERM_LAYER_LLP);
#define siw_show_term_layer(l)						\
	__print_symbolic(l, { TERM_LAYER_RDMAP, "RDMAP" },		\
			 { TERM_LAYER_DDP, "DDP" }, { TERM_LAYER_LLP, "MPA" })

#define SIW_TRACE_NAME	16	/* CEP state names */

#ifndef _SIW_TRACE_HELPERS
#define _SIW_TRACE_HELPERS
/* a sockaddr_storage as far as an IPv6 address goes, for %pISpc */
static inline void siw_trace_addr(u8 *dst, const struct sockaddr_storage *src)
{
	memcpy(dst, src, sizeof(struct sockaddr_in6));
}
#endif

/*
 * siw_qp_state - a QP changes state
 *
 * @caller is the function that asked for the change (for ERROR: who
 * found the fault). No event when the state stays.
 */
TRACE_EVENT_CONDITION(siw_qp_state,
	TP_PROTO(const struct siw_qp *qp, unsigned int from, unsigned int to,
		 unsigned long caller),
	TP_ARGS(qp, from, to, caller),
	TP_CONDITION(from != to),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u8, from)
		__field(u8, to)
		__field(unsigned long, caller)
	),
	TP_fast_assign(
		strscpy(__entry->dev, qp->sdev->base.name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qp->base.qp_num;
		__entry->from = from;
		__entry->to = to;
		__entry->caller = caller;
	),
	TP_printk("%s qpn %u %s -> %s by %pS", __entry->dev, __entry->qpn,
		  siw_show_qp_state(__entry->from),
		  siw_show_qp_state(__entry->to),
		  (void *)__entry->caller)
);

/*
 * siw_cep_state - a connection endpoint changes state
 *
 * @qp is the QP attached to the connection, or NULL (qpn 0).
 */
TRACE_EVENT(siw_cep_state,
	TP_PROTO(const struct siw_device *sdev, const struct siw_qp *qp,
		 bool active, const struct sockaddr_storage *laddr,
		 const struct sockaddr_storage *raddr, const char *from,
		 const char *to),
	TP_ARGS(sdev, qp, active, laddr, raddr, from, to),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(bool, active)
		__array(u8, laddr, sizeof(struct sockaddr_in6))
		__array(u8, raddr, sizeof(struct sockaddr_in6))
		__array(char, from, SIW_TRACE_NAME)
		__array(char, to, SIW_TRACE_NAME)
	),
	TP_fast_assign(
		strscpy(__entry->dev, sdev->base.name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qp ? qp->base.qp_num : 0;
		__entry->active = active;
		siw_trace_addr(__entry->laddr, laddr);
		siw_trace_addr(__entry->raddr, raddr);
		strscpy(__entry->from, from, SIW_TRACE_NAME);
		strscpy(__entry->to, to, SIW_TRACE_NAME);
	),
	TP_printk("%s qpn %u %s local %pISpc peer %pISpc %s -> %s",
		  __entry->dev, __entry->qpn,
		  __entry->active ? "active" : "passive",
		  __entry->laddr, __entry->raddr, __entry->from, __entry->to)
);

/*
 * siw_mpa - outcome of an MPA negotiation
 *
 * @p: the parameters the QP goes to RTS with, NULL if it failed
 * @err: 0, or why the connection was not made
 */
TRACE_EVENT(siw_mpa,
	TP_PROTO(const struct siw_device *sdev, const struct siw_qp *qp,
		 bool active, const struct sockaddr_storage *raddr, u8 rev,
		 const struct siw_llp_params *p, int err),
	TP_ARGS(sdev, qp, active, raddr, rev, p, err),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(bool, active)
		__array(u8, raddr, sizeof(struct sockaddr_in6))
		__field(u8, rev)
		__field(bool, crc)
		__field(bool, rtr)
		__field(u8, rtr_op)
		__field(u32, ird)
		__field(u32, ord)
		__field(int, err)
	),
	TP_fast_assign(
		strscpy(__entry->dev, sdev->base.name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qp ? qp->base.qp_num : 0;
		__entry->active = active;
		siw_trace_addr(__entry->raddr, raddr);
		__entry->rev = rev;
		__entry->crc = p && p->crc;
		__entry->rtr = p && p->rtr_enable;
		__entry->rtr_op = p ? p->rtr_send : 0;
		__entry->ird = p ? p->ird : 0;
		__entry->ord = p ? p->ord : 0;
		__entry->err = err;
	),
	TP_printk("%s qpn %u %s peer %pISpc rev %u crc %u ird %u ord %u rtr %u rtr_op %u err %d",
		  __entry->dev, __entry->qpn,
		  __entry->active ? "active" : "passive", __entry->raddr,
		  __entry->rev, __entry->crc, __entry->ird, __entry->ord,
		  __entry->rtr, __entry->rtr_op, __entry->err)
);

/* Terminate: @ctrl is the host-order first word (layer, type, code) */
DECLARE_EVENT_CLASS(siw_term_class,
	TP_PROTO(const struct siw_qp *qp, u32 ctrl),
	TP_ARGS(qp, ctrl),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u8, layer)
		__field(u8, etype)
		__field(u8, ecode)
	),
	TP_fast_assign(
		strscpy(__entry->dev, qp->sdev->base.name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qp->base.qp_num;
		__entry->layer = (ctrl >> TERM_LAYER_SHIFT) & 0xf;
		__entry->etype = (ctrl >> TERM_ETYPE_SHIFT) & 0xf;
		__entry->ecode = (ctrl >> TERM_ECODE_SHIFT) & 0xff;
	),
	TP_printk("%s qpn %u layer %s etype %u ecode 0x%02x", __entry->dev,
		  __entry->qpn,
		  siw_show_term_layer(__entry->layer),
		  __entry->etype, __entry->ecode)
);

/* a Terminate went to TCP */
DEFINE_EVENT(siw_term_class, siw_term_send,
	TP_PROTO(const struct siw_qp *qp, u32 ctrl),
	TP_ARGS(qp, ctrl)
);

/* the peer's Terminate arrived */
DEFINE_EVENT(siw_term_class, siw_term_recv,
	TP_PROTO(const struct siw_qp *qp, u32 ctrl),
	TP_ARGS(qp, ctrl)
);

/*
 * siw_rx_error - a received FPDU is refused (the receive engine's one
 * error path): what was wrong, the RDMAP opcode of the segment if its
 * header was decoded, and the Terminate it causes (layer, type, code).
 */
TRACE_EVENT(siw_rx_error,
	TP_PROTO(const struct siw_qp *qp),
	TP_ARGS(qp),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__array(char, op, 32)
		__field(u8, layer)
		__field(u8, etype)
		__field(u8, ecode)
		__array(char, what, 48)
	),
	TP_fast_assign(
		strscpy(__entry->dev, qp->sdev->base.name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qp->base.qp_num;
		strscpy(__entry->op, qp->rx.op ? qp->rx.op->name : "-",
			sizeof(__entry->op));
		__entry->layer = qp->rx.err.layer;
		__entry->etype = qp->rx.err.etype;
		__entry->ecode = qp->rx.err.ecode;
		strscpy(__entry->what, qp->rx.err.why ?: "?",
			sizeof(__entry->what));
	),
	TP_printk("%s qpn %u op %s: %s (layer %s etype %u ecode 0x%02x)",
		  __entry->dev, __entry->qpn, __entry->op, __entry->what,
		  siw_show_term_layer(__entry->layer), __entry->etype,
		  __entry->ecode)
);

/* a work request taken from a send or receive queue */
DECLARE_EVENT_CLASS(siw_wqe_class,
	TP_PROTO(const struct siw_qp *qp, const struct siw_wqe *wqe),
	TP_ARGS(qp, wqe),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u64, wr_id)
		__field(u8, opcode)
		__field(u16, flags)
		__field(u8, num_sge)
		__field(u32, len)
		__field(u8, status)
	),
	TP_fast_assign(
		strscpy(__entry->dev, qp->sdev->base.name, IB_DEVICE_NAME_MAX);
		__entry->qpn = qp->base.qp_num;
		__entry->wr_id = wqe->sqe.id;
		__entry->opcode = wqe->sqe.opcode;
		__entry->flags = wqe->sqe.flags;
		__entry->num_sge = wqe->sqe.num_sge;
		__entry->len = wqe->bytes;
		__entry->status = wqe->status;
	),
	TP_printk("%s qpn %u wr_id 0x%llx %s len %u num_sge %u flags 0x%x %s",
		  __entry->dev, __entry->qpn, __entry->wr_id,
		  siw_show_opcode(__entry->opcode),
		  __entry->len, __entry->num_sge, __entry->flags,
		  siw_show_wc_status(__entry->status))
);

/* posted send WR taken by the transmitter (a bad one with its status) */
DEFINE_EVENT(siw_wqe_class, siw_sqe,
	TP_PROTO(const struct siw_qp *qp, const struct siw_wqe *wqe),
	TP_ARGS(qp, wqe)
);

/* posted receive WR (RQ or SRQ) taken for an arriving message */
DEFINE_EVENT(siw_wqe_class, siw_rqe,
	TP_PROTO(const struct siw_qp *qp, const struct siw_wqe *wqe),
	TP_ARGS(qp, wqe)
);

/* a completion written to a CQ */
TRACE_EVENT(siw_cqe,
	TP_PROTO(const struct siw_cq *cq, const struct siw_qp *qp, u64 wr_id,
		 u8 opcode, u32 len, unsigned int status),
	TP_ARGS(cq, qp, wr_id, opcode, len, status),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, cq)
		__field(u32, qpn)
		__field(u64, wr_id)
		__field(u8, opcode)
		__field(u32, len)
		__field(u8, status)
	),
	TP_fast_assign(
		strscpy(__entry->dev, qp->sdev->base.name, IB_DEVICE_NAME_MAX);
		__entry->cq = cq->id;
		__entry->qpn = qp->base.qp_num;
		__entry->wr_id = wr_id;
		__entry->opcode = opcode;
		__entry->len = len;
		__entry->status = status;
	),
	TP_printk("%s cq %u qpn %u wr_id 0x%llx %s len %u %s",
		  __entry->dev, __entry->cq, __entry->qpn, __entry->wr_id,
		  siw_show_opcode(__entry->opcode),
		  __entry->len,
		  siw_show_wc_status(__entry->status))
);

/*
 * One-line call sites for the connection endpoint of the CM (its struct
 * is the CM's own): arguments are only evaluated when the event is on.
 */
#define siw_trace_cep(cep, to, names)					\
	do {								\
		typeof(cep) _c = (cep);					\
		const char * const *_n = (names);			\
									\
		if (trace_siw_cep_state_enabled())			\
			trace_siw_cep_state(_c->sdev, _c->qp, _c->active, \
					    &_c->laddr, &_c->raddr,	\
					    _n[_c->state], _n[to]);	\
	} while (0)
#define siw_trace_mpa(cep, qp, rev, p, err)				\
	do {								\
		typeof(cep) _c = (cep);					\
									\
		if (trace_siw_mpa_enabled())				\
			trace_siw_mpa(_c->sdev, qp, _c->active, &_c->raddr, \
				      rev, p, err);			\
	} while (0)

#endif /* _SIW_TRACE_H */

/* out of tree: define_trace.h finds this header on the include path */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE siw_trace
#include <trace/define_trace.h>
