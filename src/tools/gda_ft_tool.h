/*
 * Helpers shared by the soft HCA programs (gda_ft_soft_demo and the test
 * peer gda_ft_soft_peer): one RC endpoint whose rings live in host memory
 * and are driven through the device/ datapath, a rendezvous channel that
 * carries connection parameters and reports between two processes, a
 * stream of checksummed RDMA writes and fetch-add atomics that runs until
 * the QP fails, and the server-side verification of what it left behind.
 *
 * Nothing here is a test: every function returns a status and lets its
 * caller decide what a failure means.
 */
#ifndef GDA_FT_TOOL_H_
#define GDA_FT_TOOL_H_

#include "gda_ft_hca.h"
#include "gda_ft_soft.h"
#include "gda_ft_wqe.h"
#include "gda_ft_cq.h"

#include <stddef.h>
#include <stdint.h>

#define GDA_FT_TOOL_SQ_SIZE      256   /* WQEBBs */
#define GDA_FT_TOOL_CQ_SIZE      1024  /* > SQ size: one CQE per WQE fits */
#define GDA_FT_TOOL_MAX_WINDOW   128   /* operations in flight */
#define GDA_FT_TOOL_SLOT_HDR     32    /* bytes of a write's header */


/* ---- time ---------------------------------------------------------------- */

/* CLOCK_MONOTONIC: shared by all processes and namespaces of one host */
double gda_ft_tool_now(void);


/* ---- endpoint ------------------------------------------------------------ */

typedef struct gda_ft_tool_ep {
    gda_ft_hca_dev_t *dev;
    gda_ft_hca_pd_t  *pd;
    gda_ft_hca_cq_t  *scq;
    gda_ft_hca_qp_t  *qp;
    void             *sq_buf;
    void             *scq_buf;
    uint32_t         *dbrec;
    gda_ft_dev_sq_t   sq;
    gda_ft_dev_cq_t   dscq;
    uint8_t           port;
} gda_ft_tool_ep_t;

/*
 * Declares one soft device by spec ("name=IP[:UDP_PORT]", exported as
 * UCX_GDA_FT_SOFT_DEVICES) and opens it. Call before any other soft HCA
 * use in the process (after fork(), never before).
 */
ucs_status_t gda_ft_tool_open_dev(const char *spec, gda_ft_hca_dev_t **dev_p);

ucs_status_t gda_ft_tool_ep_create(gda_ft_tool_ep_t *ep, gda_ft_hca_dev_t *dev,
                                   uint8_t port);
void gda_ft_tool_ep_destroy(gda_ft_tool_ep_t *ep);

/* Registers buf on the endpoint's PD */
ucs_status_t gda_ft_tool_mr_reg(gda_ft_tool_ep_t *ep, void *buf, size_t len,
                                unsigned access, gda_ft_hca_mr_t **mr_p);

/* Consumes one send CQE and retires the WQEs it covers */
gda_ft_dev_status_t gda_ft_tool_ep_poll(gda_ft_tool_ep_t *ep,
                                        gda_ft_dev_cqe_info_t *info);


/* ---- rendezvous ---------------------------------------------------------- */

#define GDA_FT_TOOL_MSG_MAGIC 0x67646674u /* "gdft" */

typedef enum {
    GDA_FT_TOOL_MSG_CONN = 1,   /* qpn, gid, buffer and counter */
    GDA_FT_TOOL_MSG_DOWN_REQ,   /* client: take your port down now */
    GDA_FT_TOOL_MSG_DOWN_DONE,  /* server: port is down, arg[0] = time in ns */
    GDA_FT_TOOL_MSG_VERIFY,     /* client: check what the counts describe */
    GDA_FT_TOOL_MSG_RESULT,     /* server: arg[0] = 1 when all was intact */
    GDA_FT_TOOL_MSG_DONE        /* client: finished, the server may exit */
} gda_ft_tool_msg_type_t;

/* One fixed-size message; both ends run on one host (host byte order) */
typedef struct gda_ft_tool_msg {
    uint32_t magic;
    uint32_t type;          /* gda_ft_tool_msg_type_t */
    uint32_t qpn;
    uint32_t rkey;
    uint32_t counter_rkey;
    uint32_t slot_size;
    uint64_t addr;
    uint64_t nslots;
    uint64_t counter_addr;
    uint64_t arg[4];        /* VERIFY: completed writes, posted writes,
                               completed atomics, posted atomics */
    uint8_t  gid[GDA_FT_HCA_GID_LEN];
} gda_ft_tool_msg_t;

/* UNIX stream socket at path: listen and accept one peer */
int gda_ft_tool_chan_listen(const char *path);
int gda_ft_tool_chan_accept(int listen_fd, double timeout);

/* Connects to path, retrying until the listener appears or timeout */
int gda_ft_tool_chan_connect(const char *path, double timeout);

ucs_status_t gda_ft_tool_msg_send(int fd, gda_ft_tool_msg_type_t type,
                                  gda_ft_tool_msg_t *msg);

/*
 * Receives one message of any type within timeout seconds (0: only when
 * one is already waiting). UCS_ERR_TIMED_OUT, UCS_ERR_IO_ERROR (peer gone,
 * or a message without the magic).
 */
ucs_status_t gda_ft_tool_msg_recv(int fd, gda_ft_tool_msg_t *msg,
                                  double timeout);

/* Receives a message of the given type; any other is an error */
ucs_status_t gda_ft_tool_msg_expect(int fd, gda_ft_tool_msg_type_t type,
                                    gda_ft_tool_msg_t *msg, double timeout);

/* Fills qpn and gid of the endpoint into msg */
void gda_ft_tool_msg_set_ep(gda_ft_tool_msg_t *msg, gda_ft_tool_ep_t *ep);

/* RESET -> RTS towards the peer described by msg (its CONN message) */
ucs_status_t gda_ft_tool_ep_connect(gda_ft_tool_ep_t *ep,
                                    const gda_ft_tool_msg_t *peer,
                                    uint8_t timeout, uint8_t retry_cnt);


/* ---- checksummed writes -------------------------------------------------- */

/* Write `seq` into a slot of slot_size bytes: header, then a pattern of
 * seq; the header holds the CRC32 of the payload */
void gda_ft_tool_slot_fill(void *slot, size_t slot_size, uint64_t seq);

/* 1 when the slot holds write `seq` intact */
int gda_ft_tool_slot_check(const void *slot, size_t slot_size, uint64_t seq);


/* ---- the writer ---------------------------------------------------------- */

typedef struct gda_ft_tool_op {
    uint16_t wqe_idx;
    uint8_t  is_atomic;
    uint64_t seq;           /* write number or atomic number */
} gda_ft_tool_op_t;

typedef struct gda_ft_tool_stream {
    gda_ft_tool_ep_t     *ep;
    /* the server's buffer and counter */
    uint64_t              raddr;
    uint32_t              rkey;
    uint64_t              nslots;
    size_t                slot_size;
    uint64_t              counter_addr;
    uint32_t              counter_rkey;
    /* parameters */
    unsigned              window;        /* operations in flight */
    unsigned              atomic_every;  /* every Nth operation; 0 = none */
    /* local buffers: one source slot and one fetch word per window entry */
    uint8_t              *src;
    uint64_t             *fetch;
    gda_ft_hca_mr_t      *src_mr;
    gda_ft_hca_mr_t      *fetch_mr;
    gda_ft_tool_op_t      ops[GDA_FT_TOOL_MAX_WINDOW];
    uint64_t              op_head, op_tail; /* posted, not completed */
    /* counts */
    uint64_t              posted_writes, completed_writes;
    uint64_t              posted_atomics, completed_atomics;
    uint64_t              fetch_mismatch; /* fetch-add returned a value
                                             other than its number */
    uint64_t              flushed;        /* WR_FLUSH_ERR after the first */
    uint64_t              other_errors;   /* any other later error */
    double                last_ok_time;   /* of the last good completion */
    /* the first error CQE */
    int                   failed;
    gda_ft_dev_cqe_info_t first_error;
    double                first_error_time;
} gda_ft_tool_stream_t;

/* peer: the server's CONN message */
ucs_status_t gda_ft_tool_stream_init(gda_ft_tool_stream_t *s,
                                     gda_ft_tool_ep_t *ep,
                                     const gda_ft_tool_msg_t *peer,
                                     unsigned window, unsigned atomic_every);
void gda_ft_tool_stream_cleanup(gda_ft_tool_stream_t *s);

/*
 * One pass: posts new operations while post is nonzero, the window has room
 * and the QP has not failed, rings the doorbell, and consumes every CQE
 * that is there. Returns the number of CQEs consumed.
 */
unsigned gda_ft_tool_stream_progress(gda_ft_tool_stream_t *s, int post);

/* Operations posted and not completed yet */
static inline unsigned gda_ft_tool_stream_inflight(gda_ft_tool_stream_t *s)
{
    return (unsigned)(s->op_tail - s->op_head);
}

/* Progress without posting until nothing is in flight, or timeout */
ucs_status_t gda_ft_tool_stream_drain(gda_ft_tool_stream_t *s,
                                      double timeout);


/* ---- server-side verification -------------------------------------------- */

typedef struct gda_ft_tool_verify {
    uint64_t writes_checked;  /* slots holding their last completed write */
    uint64_t bytes_checked;
    uint64_t slots_empty;     /* never written, found zero */
    uint64_t slots_in_doubt;  /* also targeted by a write that failed */
    uint64_t slots_bad;       /* damaged: checksum, sequence or stray data */
    uint64_t first_bad_slot;
    uint64_t counter;         /* value of the counter */
    uint64_t atomics_in_doubt;/* counter - completed atomics, when within
                                 the atomics that failed */
    int      counter_ok;
} gda_ft_tool_verify_t;

/*
 * Checks the server's buffer against the counts of the VERIFY message:
 * writes 0..completed-1 completed (in order), completed..posted-1 failed
 * and may or may not have landed; likewise for the atomics. Returns 1 when
 * everything is as RC semantics require.
 */
int gda_ft_tool_verify(const void *buf, size_t slot_size, uint64_t nslots,
                       uint64_t counter, const gda_ft_tool_msg_t *report,
                       gda_ft_tool_verify_t *result);

/* "1.5 MiB" style; returns buf */
const char *gda_ft_tool_bytes_str(double bytes, char *buf, size_t max);

#endif
