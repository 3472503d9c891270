/*
 * Two processes with a software HCA each, for the tests that need a peer
 * of their own: the requester in this process, the responder in a child
 * with its own soft device and engine, connection parameters exchanged
 * over pipes as two nodes would, and the commands the child serves.
 */
#ifndef GDA_FT_SOFT_2PROC_H_
#define GDA_FT_SOFT_2PROC_H_

#include "soft_harness.h"

#include <sys/types.h>

#define P2_MB            (1024ul * 1024ul)
#define P2_BUF_SIZE      (12 * P2_MB)  /* the responder's buffer */
#define P2_GUARD         0xa5
#define P2_IO_TIMEOUT    60.0          /* seconds for one command */

/* Commands the parent sends to the child that serves them */
typedef enum {
    P2_CMD_RESET = 1,   /* fill the whole buffer with the guard byte */
    P2_CMD_FILL,        /* pattern(seed) at [off, off + len) */
    P2_CMD_CHECK,       /* pattern(seed) at [off, off + len), guards around */
    P2_CMD_POST_RECV,   /* receive WQE of [off, off + len) */
    P2_CMD_WAIT_RECV,   /* one receive completion */
    P2_CMD_READ64,
    P2_CMD_WRITE64,
    P2_CMD_FETCH_ADDS,  /* len fetch-adds of `value` on the parent's off */
    P2_CMD_PORT_STATE,  /* state of the device's port 1 */
    P2_CMD_EVENTS,      /* port events seen since the last query */
    P2_CMD_LOOP_WRITE,  /* one write between the child's two devices */
    P2_CMD_STATS,       /* counters of the device's port 1 */
    P2_CMD_EXIT
} p2_cmd_op_t;

typedef struct p2_cmd {
    uint32_t op;
    uint32_t seed;
    uint64_t off;
    uint64_t len;
    uint64_t value;
} p2_cmd_t;

typedef struct p2_reply {
    int32_t               status;   /* 0: ok */
    uint32_t              reserved;
    uint64_t              value;
    uint64_t              value2;
    gda_ft_dev_cqe_info_t info;
    char                  text[128];
} p2_reply_t;

/* What one side tells the other, as a CM exchange would */
typedef struct p2_info {
    uint32_t qpn;
    uint32_t rkey;
    uint8_t  gid[GDA_FT_HCA_GID_LEN];
    uint64_t addr;
    uint64_t len;
} p2_info_t;

typedef struct p2 {
    pid_t             child;
    int               to_child, from_child;
    gda_ft_hca_dev_t *dev;
    soft_ep_t         ep;
    p2_info_t         remote;
    uint8_t          *buf;     /* the parent's own registered buffer */
    gda_ft_hca_mr_t  *mr;
} p2_t;

/* The child's state */
typedef struct p2_child {
    int               in, out;
    gda_ft_hca_dev_t *dev;
    soft_ep_t         ep;
    p2_info_t         remote;
    uint8_t          *buf;
    gda_ft_hca_mr_t  *mr;
    /* control-socket tests: a second device and a connected pair on it */
    gda_ft_hca_dev_t *dev2;
    soft_ep_t         la, lb;
    uint64_t          events;  /* bit per event type seen */
} p2_child_t;


/* Writes all of buf into the pipe */
void p2_write_all(int fd, const void *buf, size_t len);

/* 0 on success, -1 when the other end closed */
int p2_read_all(int fd, void *buf, size_t len, double timeout);

/* One UDP port per test process: parallel runs do not collide */
unsigned p2_udp_port(void);

/* Forks the child, which opens child_spec's device child_name; returns in
 * the parent with the pipes set up. The parent opens nothing here. */
void p2_fork(p2_t *p, const char *child_spec, const char *child_name,
             int control);

/* Waits for the child; fails unless it exited with 0 */
void p2_reap(p2_t *p);

/* One command to the child, and its reply */
p2_reply_t p2_call(p2_t *p, p2_cmd_op_t op, uint64_t off, uint64_t len,
                   uint32_t seed, uint64_t value);

/* Forks a responder on p2b, opens p2a here and connects the two QPs */
void p2_start(p2_t *p);
void p2_stop(p2_t *p);

/* The next send completion is a success, of WQE idx */
void p2_expect_ok(p2_t *p, uint16_t idx, const char *what);

/* The child's buffer holds pattern(seed) at [off, off + len), its guards
 * around untouched */
void p2_expect_remote(p2_t *p, uint64_t off, uint64_t len,
                      uint32_t seed, const char *what);

/* Runs a command line, output (stdout and stderr) into out; exit status */
int p2_sh(char *out, size_t max, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
