/*
 * gda_ft_ucp_failover: what the launcher, the server and the client share
 * (options, the region's layout, the control socket's messages, UCP
 * setup). The program itself is described in gda_ft_ucp_failover.c.
 */
#ifndef GDA_FT_UCP_FAILOVER_H_
#define GDA_FT_UCP_FAILOVER_H_

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include <ucp/api/ucp.h>

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


/* ---- configuration ------------------------------------------------------- */

typedef enum {
    MODE_NONE,     /* no failure */
    MODE_DOWN,     /* the server's primary port goes down and stays down */
    MODE_UPDOWN,   /* ... and comes back (failback) */
    MODE_BOTH      /* both of the server's ports go down: errors expected */
} fo_mode_t;

extern const char *fo_mode_names[];

typedef enum {
    FAULT_VIA_CTL,     /* server, in-process: gda_ft_soft_ctl_exec() */
    FAULT_VIA_SOFTCTL, /* server runs gda_ft_softctl -p <own pid> */
    FAULT_VIA_ENV      /* UCX_GDA_FT_SOFT_FAULTS of the server: time based */
} fo_fault_via_t;

extern const char *fo_fault_via_names[];

typedef enum {
    AMO_FETCH,
    AMO_POST,
    AMO_MIXED,
    AMO_NONE        /* UCX >= 1.22: no UCP atomics with error handling */
} fo_amo_t;

extern const char *fo_amo_names[];

typedef struct {
    const char     *role;         /* "server", "client", NULL = launcher */
    fo_mode_t       mode;
    unsigned long   iters;
    long            fault_at;     /* -1: iters / 3 */
    long            up_at;        /* -1: 2 * iters / 3 */
    unsigned        window;
    unsigned long   flush_every;  /* iterations between flushes, 0: end */
    fo_amo_t        amo;
    double          op_timeout;   /* s: longest wait for one operation */
    double          err_bound;    /* s: mode both, fault -> error */
    fo_fault_via_t  fault_via;
    const char     *softctl;
    unsigned        udp_port;     /* 0: from the pid */
    const char     *sock_path;
    size_t          max_size;
    uint64_t        seed;
    const char     *server_devices;
    const char     *client_devices;
    const char     *server_faults;
    const char     *primary;      /* server's "dev:port"; "" = 1st device */
    const char     *backup;       /* server's "dev:port"; "" = 2nd device */
    double          fault_delay;  /* s: pause after the fault is injected */
    double          after_up;     /* s: updown, keep going after the up */
    double          poll_pause;   /* s: a side waiting for a message on its
                                     control socket (the server, all run)
                                     pauses this long between two progress
                                     calls (0: none) */
    int             am;           /* active messages too */
    int             get;          /* gets too */
    int             verbose;
} fo_opt_t;

extern fo_opt_t opt;

extern const char *fo_self;

/* ---- small helpers ------------------------------------------------------- */

double fo_now(void);

void fo_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void fo_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
            noreturn));

uint64_t fo_mix64(uint64_t x);

/* ---- region layout ------------------------------------------------------- */

/*
 * Offset 0: the counter (8 bytes). Then, for each slot, at least FO_GUARD
 * guard bytes and the slot at a 64-byte aligned offset; the same for the
 * read-only area that gets read (as large as the largest slot, holding
 * fo_fill()'s content of FO_GET_SLOT from the start); FO_GUARD guard bytes
 * after it. Every byte that belongs to no slot or area and is not the
 * counter is a guard byte and must keep FO_GUARD_BYTE.
 */
#define FO_GUARD        64

#define FO_GUARD_BYTE   0xa5

#define FO_INIT_BYTE    0x5a   /* slot content before its first write */

#define FO_MAGIC        0x31544647u   /* "GFT1" */

#define FO_HDR_SIZE     24     /* magic, slot, generation, size */

#define FO_SUM_SIZE     8      /* checksum at the end of the slot */

#define FO_MAX_SLOTS    64

#define FO_GET_SLOT     0xa4   /* fo_fill()'s slot of the read-only area */

extern const size_t fo_all_sizes[];

typedef struct {
    unsigned nslots;
    size_t   size[FO_MAX_SLOTS];
    size_t   offset[FO_MAX_SLOTS];
    size_t   get_offset;     /* the read-only area */
    size_t   get_size;
    size_t   region_size;
} fo_layout_t;

void fo_layout_init(fo_layout_t *l, size_t max_size);

uint64_t fo_checksum(const uint8_t *p, size_t len);

/*
 * Content of a slot of `size` bytes in generation gen (>= 0): a header
 * (magic, slot, generation, size), a pattern derived from (seed, slot,
 * generation), and a checksum of everything before it; slots shorter than
 * header + checksum hold the pattern only.
 */
void fo_fill(uint8_t *p, size_t size, unsigned slot, uint64_t gen);

/* Messages on the control socket */
enum {
    MSG_HELLO = 1,   /* server -> client: region, worker address, rkey */
    MSG_CLIENT_ADDR, /* client -> server: worker address */
    MSG_FAULT,       /* client -> server: fo_fault_t */
    MSG_FAULT_ACK,   /* server -> client: status and the command's reply */
    MSG_DONE,        /* client -> server: fo_done_t + slots */
    MSG_RESULT       /* server -> client: fo_result_t */
};

typedef enum {
    FAULT_PRIMARY_DOWN = 1,
    FAULT_PRIMARY_UP,
    FAULT_BOTH_DOWN
} fo_fault_t;

typedef struct {
    uint32_t type;
    uint32_t len;
} fo_msg_hdr_t;

typedef struct {
    int32_t  pid;
    uint32_t addr_len;
    uint32_t rkey_len;
    uint32_t reserved;
    uint64_t region_addr;
    uint64_t region_size;
    uint64_t max_size;
    uint64_t seed;
} fo_hello_t;

typedef struct {
    int64_t last_ok_gen;   /* -1: never written successfully */
    int64_t doubt_gen;     /* -1: none; else a later gen completed in error */
} fo_slot_state_t;

typedef struct {
    uint64_t iters;
    uint64_t puts_ok, puts_err;
    uint64_t amo_ok, amo_err;
    uint64_t amo_ok_sum, amo_err_sum;
    uint64_t am_ok, am_err;
    uint32_t nslots;
    int32_t  mode;
    fo_slot_state_t slot[FO_MAX_SLOTS];
} fo_done_t;

typedef struct {
    uint64_t bytes_checked;
    uint64_t guard_bad;
    uint64_t counter;
    uint32_t slots_ok, slots_bad, slots_doubt, slots_unwritten;
    int32_t  pass;
    char     detail[256];
} fo_result_t;

void fo_write_all(int fd, const void *buf, size_t len);

void fo_send(int fd, uint32_t type, const void *p1, size_t l1,
             const void *p2, size_t l2, const void *p3, size_t l3);

/* Reads exactly len bytes; 0 on EOF before the first byte */
int fo_read_all(int fd, void *buf, size_t len);

/* Returns a malloc'ed payload (NULL and *type = 0 on EOF) */
void *fo_recv(int fd, uint32_t *type, uint32_t *len);

/*
 * Waits until fd is readable, progressing the worker meanwhile; dies after
 * timeout seconds
 */
void fo_wait_readable(int fd, ucp_worker_h worker, double timeout,
                      const char *what);

/* ---- active messages ----------------------------------------------------- */

#define FO_AM_ID     7

#define FO_AM_SLOT   0xa3    /* fo_fill()'s slot of the messages' data */

extern const size_t fo_am_sizes[];

#define FO_AM_MAX    (256 * 1024)

size_t fo_am_size(uint64_t iter);

uint32_t fo_am_flags(uint64_t iter);

/* ---- UCP setup ----------------------------------------------------------- */

typedef struct {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    int           ep_failed;
    ucs_status_t  ep_status;
    double        ep_failed_at;
} fo_ucp_t;

extern fo_ucp_t fo_ucp;

void fo_ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status);

void fo_ucp_init(fo_ucp_t *u);

void fo_ucp_connect(fo_ucp_t *u, const void *peer_addr);

/* Waits for a request; returns its status, or UCS_ERR_TIMED_OUT */
ucs_status_t fo_wait_req(ucp_worker_h worker, void *req, double timeout);

void fo_ucp_close(fo_ucp_t *u, int force);

/*
 * The plugin's counters, through the soft HCA's "counters" control command
 * when the transport registered one (it runs in-process: the library is
 * preloaded). Prints one "counters: ..." line per reply line.
 */
typedef ucs_status_t (*fo_ctl_exec_t)(const char *cmd, char *reply,
                                      size_t max);

fo_ctl_exec_t fo_ctl_exec_func(void);

void fo_print_counters(void);

/* The two roles (gda_ft_ucp_failover_server.c, _client.c): run one side
 * of the test to its end; the exit status of the process */
int fo_server(void);
int fo_client(void);

#endif
