/*
 * gda_ft_ucp_failover: UCP puts and atomics through a NIC port failure,
 * verified byte by byte and increment by increment on the receiver.
 *
 * Two processes, a server (the target of the RMA) and a client (the
 * initiator), each with two software HCAs: a primary and a backup.
 *
 *  - The server registers a region: a 64-bit counter, then one slot per
 *    message size (1 byte .. 3 MiB), each slot between guard bytes.
 *  - The client writes slot i % nslots with generation i / nslots of a
 *    checksummed pattern (ucp_put_nbx), and adds 1 to the counter
 *    (ucp_atomic_op_nbx UCP_ATOMIC_OP_ADD, 64-bit; posted, fetched, or both
 *    in turns), keeping a window of operations in flight.
 *  - With --get the client also reads a piece of a read-only area of the
 *    server (ucp_get_nbx: 1 byte to the largest slot, at any offset) each
 *    iteration, and checks every byte it got against the area's pattern;
 *    the server checks that the area never changed.
 *  - With --am the client also sends an active message each iteration
 *    (ucp_am_send_nbx: a short one, one by bcopy, one by rendezvous, in
 *    turns) whose header is the iteration and whose data a checksummed
 *    pattern; the server checks each one, once, and counts them.
 *  - At iteration --fault-at the client asks the server, over the
 *    out-of-band UNIX socket, to take its primary soft port down (in-process
 *    through the soft HCA's control command, or with gda_ft_softctl); with
 *    --mode updown the port comes back at --up-at; with --mode both both of
 *    the server's ports go down.
 *  - The client flushes and sends what it saw complete (per slot, the last
 *    generation that completed successfully and any generation that
 *    completed with an error; the number and sum of successful and failed
 *    increments); the server checks every byte of the region (pattern,
 *    checksum, guards) and the exact counter value, and both print a
 *    summary. Exit status 0 when everything holds.
 *
 * Without --role the program is a launcher: it forks and re-executes
 * itself as server and client, each with its own UCX_GDA_FT_SOFT_DEVICES
 * (server s0=127.0.0.1:P,s1=127.0.0.2:P, client c0=127.0.0.3:P,
 * c1=127.0.0.4:P, P from the pid), and exits 0 when both do.
 *
 * Run it with the plugin preloaded:
 *   contrib/gda_ft-run.sh build/test/ucp/gda_ft_ucp_failover --mode down
 */
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

static const char *fo_mode_names[] = {"none", "down", "updown", "both"};

typedef enum {
    FAULT_VIA_CTL,     /* server, in-process: gda_ft_soft_ctl_exec() */
    FAULT_VIA_SOFTCTL, /* server runs gda_ft_softctl -p <own pid> */
    FAULT_VIA_ENV      /* UCX_GDA_FT_SOFT_FAULTS of the server: time based */
} fo_fault_via_t;

static const char *fo_fault_via_names[] = {"ctl", "softctl", "env"};

typedef enum {
    AMO_FETCH,
    AMO_POST,
    AMO_MIXED
} fo_amo_t;

static const char *fo_amo_names[] = {"fetch", "post", "mixed"};

static struct {
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
} opt = {
    .role           = NULL,
    .mode           = MODE_DOWN,
    .iters          = 400,
    .fault_at       = -1,
    .up_at          = -1,
    .window         = 8,
    .flush_every    = 50,
    .amo            = AMO_MIXED,
    .op_timeout     = 60.0,
    .err_bound      = 30.0,
    .fault_via      = FAULT_VIA_CTL,
    .softctl        = NULL,
    .udp_port       = 0,
    .sock_path      = NULL,
    .max_size       = 3u << 20,
    .seed           = 0x6a0592eeull,
    .server_devices = NULL,
    .client_devices = NULL,
    .server_faults  = NULL,
    .primary        = "",
    .backup         = "",
    .fault_delay    = 0.0,
    .after_up       = 0.0,
    .poll_pause     = 0.001,
    .verbose        = 0
};

static const char *fo_self = "launcher";


/* ---- small helpers ------------------------------------------------------- */

static double fo_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fo_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fo_log(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    printf("[%s] %s\n", fo_self, buf);
    fflush(stdout);
}

static void fo_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                        noreturn));
static void fo_die(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    printf("[%s] RESULT FAIL: %s\n", fo_self, buf);
    fflush(stdout);
    /* no cleanup: a hung UCX object must not hang the exit as well */
    _exit(1);
}

static uint64_t fo_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}


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

static const size_t fo_all_sizes[] = {
    1, 2, 7, 8, 31, 32, 33, 64, 127, 128, 129, 255, 1000, 2048, 4095, 4096,
    4097, 8191, 8192, 8193, 16384, 65535, 65536, 100000, 262144,
    1048575, 1048576, 1048577, (2u << 20) + 3, 3u << 20
};

typedef struct {
    unsigned nslots;
    size_t   size[FO_MAX_SLOTS];
    size_t   offset[FO_MAX_SLOTS];
    size_t   get_offset;     /* the read-only area */
    size_t   get_size;
    size_t   region_size;
} fo_layout_t;

static void fo_layout_init(fo_layout_t *l, size_t max_size)
{
    size_t cur = 8, i;

    l->nslots = 0;
    for (i = 0; i < sizeof(fo_all_sizes) / sizeof(fo_all_sizes[0]); ++i) {
        if (fo_all_sizes[i] > max_size) {
            continue;
        }
        cur += FO_GUARD;
        cur  = (cur + 63) & ~(size_t)63;
        l->size[l->nslots]   = fo_all_sizes[i];
        l->offset[l->nslots] = cur;
        cur += fo_all_sizes[i];
        ++l->nslots;
    }
    cur           += FO_GUARD;
    l->get_offset  = (cur + 63) & ~(size_t)63;
    l->get_size    = l->size[l->nslots - 1];
    cur            = l->get_offset + l->get_size;
    l->region_size = ((cur + FO_GUARD) + 63) & ~(size_t)63;
}

static uint64_t fo_checksum(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull, w;
    size_t i;

    for (i = 0; i + 8 <= len; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < len; ++i) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

/*
 * Content of a slot of `size` bytes in generation gen (>= 0): a header
 * (magic, slot, generation, size), a pattern derived from (seed, slot,
 * generation), and a checksum of everything before it; slots shorter than
 * header + checksum hold the pattern only.
 */
static void fo_fill(uint8_t *p, size_t size, unsigned slot, uint64_t gen)
{
    uint64_t base = fo_mix64(opt.seed ^ ((uint64_t)slot << 48) ^ gen), w, sum;
    uint32_t hdr32[2] = {FO_MAGIC, slot};
    uint64_t hdr64[2] = {gen, size};
    size_t i, body = 0, body_end = size;

    if (size >= FO_HDR_SIZE + FO_SUM_SIZE + 8) {
        memcpy(p, hdr32, 8);
        memcpy(p + 8, hdr64, 16);
        body     = FO_HDR_SIZE;
        body_end = size - FO_SUM_SIZE;
    }
    for (i = body; i < body_end; i += 8) {
        w = fo_mix64(base + i);
        memcpy(p + i, &w, ((body_end - i) < 8) ? (body_end - i) : 8);
    }
    if (body_end != size) {
        sum = fo_checksum(p, body_end);
        memcpy(p + body_end, &sum, FO_SUM_SIZE);
    }
}


/* ---- out-of-band channel ------------------------------------------------- */

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

static void fo_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fo_die("out-of-band write: %s", strerror(errno));
        }
        p   += n;
        len -= n;
    }
}

static void fo_send(int fd, uint32_t type, const void *p1, size_t l1,
                    const void *p2, size_t l2, const void *p3, size_t l3)
{
    fo_msg_hdr_t hdr = {type, (uint32_t)(l1 + l2 + l3)};

    fo_write_all(fd, &hdr, sizeof(hdr));
    if (l1) fo_write_all(fd, p1, l1);
    if (l2) fo_write_all(fd, p2, l2);
    if (l3) fo_write_all(fd, p3, l3);
}

/* Reads exactly len bytes; 0 on EOF before the first byte */
static int fo_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t done = 0;
    ssize_t n;

    while (done < len) {
        n = read(fd, p + done, len - done);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fo_die("out-of-band read: %s", strerror(errno));
        }
        if (n == 0) {
            if (done == 0) {
                return 0;
            }
            fo_die("out-of-band channel closed in the middle of a message");
        }
        done += n;
    }
    return 1;
}

/* Returns a malloc'ed payload (NULL and *type = 0 on EOF) */
static void *fo_recv(int fd, uint32_t *type, uint32_t *len)
{
    fo_msg_hdr_t hdr;
    void *payload;

    if (!fo_read_all(fd, &hdr, sizeof(hdr))) {
        *type = 0;
        *len  = 0;
        return NULL;
    }
    if (hdr.len > (64u << 20)) {
        fo_die("out-of-band message of %u bytes", hdr.len);
    }
    payload = malloc(hdr.len + 1);
    if ((payload == NULL) || (hdr.len && !fo_read_all(fd, payload, hdr.len))) {
        fo_die("out-of-band message lost");
    }
    ((char*)payload)[hdr.len] = '\0';
    *type = hdr.type;
    *len  = hdr.len;
    return payload;
}

/*
 * Waits until fd is readable, progressing the worker meanwhile; dies after
 * timeout seconds
 */
static void fo_wait_readable(int fd, ucp_worker_h worker, double timeout,
                             const char *what)
{
    double deadline = fo_now() + timeout;
    double pause    = (worker != NULL) ? opt.poll_pause : 0.1;
    struct timespec ts;
    struct pollfd pfd;

    ts.tv_sec  = (time_t)pause;
    ts.tv_nsec = (long)((pause - (double)ts.tv_sec) * 1e9);

    for (;;) {
        if (worker != NULL) {
            while (ucp_worker_progress(worker) != 0) {
            }
        }
        pfd.fd     = fd;
        pfd.events = POLLIN;
        if (ppoll(&pfd, 1, &ts, NULL) > 0) {
            return;
        }
        if (fo_now() > deadline) {
            fo_die("no %s after %.0f s", what, timeout);
        }
    }
}


/* ---- active messages ----------------------------------------------------- */

#define FO_AM_ID     7
#define FO_AM_SLOT   0xa3    /* fo_fill()'s slot of the messages' data */

/* Message of an iteration: short (one am_short), bcopy (eager, one
 * fragment), rendezvous */
static const size_t fo_am_sizes[] = {16, 4000, 256 * 1024};

#define FO_AM_MAX    (256 * 1024)

static size_t fo_am_size(uint64_t iter)
{
    return fo_am_sizes[iter % 3];
}

static uint32_t fo_am_flags(uint64_t iter)
{
    return ((iter % 3) == 2) ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER;
}


/* ---- UCP setup ----------------------------------------------------------- */

typedef struct {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    int           ep_failed;
    ucs_status_t  ep_status;
    double        ep_failed_at;
} fo_ucp_t;

static fo_ucp_t fo_ucp;

static void fo_ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    fo_ucp_t *u = arg;

    if (!u->ep_failed) {
        u->ep_failed    = 1;
        u->ep_status    = status;
        u->ep_failed_at = fo_now();
    }
    fo_log("endpoint error handler: %s", ucs_status_string(status));
}

static void fo_ucp_init(fo_ucp_t *u)
{
    ucp_worker_params_t wparams;
    ucp_params_t params;
    ucp_config_t *config;
    ucs_status_t status;

    memset(u, 0, sizeof(*u));
    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        fo_die("ucp_config_read: %s", ucs_status_string(status));
    }
    if (getenv("UCX_TLS") == NULL) {
        ucp_config_modify(config, "TLS", "gda_ft,tcp");
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 |
                        (opt.am ? UCP_FEATURE_AM : 0);
    status = ucp_init(&params, config, &u->context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        fo_die("ucp_init: %s", ucs_status_string(status));
    }

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(u->context, &wparams, &u->worker);
    if (status != UCS_OK) {
        fo_die("ucp_worker_create: %s", ucs_status_string(status));
    }
}

static void fo_ucp_connect(fo_ucp_t *u, const void *peer_addr)
{
    ucp_ep_params_t eparams;
    ucs_status_t status;

    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                              UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                              UCP_EP_PARAM_FIELD_ERR_HANDLER;
    eparams.address         = peer_addr;
    eparams.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    eparams.err_handler.cb  = fo_ep_err_cb;
    eparams.err_handler.arg = u;
    status = ucp_ep_create(u->worker, &eparams, &u->ep);
    if (status != UCS_OK) {
        fo_die("ucp_ep_create: %s", ucs_status_string(status));
    }
}

/* Waits for a request; returns its status, or UCS_ERR_TIMED_OUT */
static ucs_status_t fo_wait_req(ucp_worker_h worker, void *req, double timeout)
{
    double deadline = fo_now() + timeout;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
        if (fo_now() > deadline) {
            return UCS_ERR_TIMED_OUT;
        }
    }
    ucp_request_free(req);
    return status;
}

static void fo_ucp_close(fo_ucp_t *u, int force)
{
    ucp_request_param_t param;
    ucs_status_t status;
    void *req;

    if (u->ep != NULL) {
        memset(&param, 0, sizeof(param));
        if (force || u->ep_failed) {
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        }
        req    = ucp_ep_close_nbx(u->ep, &param);
        status = fo_wait_req(u->worker, req, opt.op_timeout);
        if (status == UCS_ERR_TIMED_OUT) {
            fo_die("closing the endpoint did not complete in %.0f s",
                   opt.op_timeout);
        }
        if ((status != UCS_OK) && opt.verbose) {
            fo_log("endpoint closed: %s", ucs_status_string(status));
        }
        u->ep = NULL;
    }
}

/*
 * The plugin's counters, through the soft HCA's "counters" control command
 * when the transport registered one (it runs in-process: the library is
 * preloaded). Prints one "counters: ..." line per reply line.
 */
typedef ucs_status_t (*fo_ctl_exec_t)(const char *cmd, char *reply,
                                      size_t max);

static fo_ctl_exec_t fo_ctl_exec_func(void)
{
    return (fo_ctl_exec_t)dlsym(RTLD_DEFAULT, "gda_ft_soft_ctl_exec");
}

static void fo_print_counters(void)
{
    fo_ctl_exec_t exec = fo_ctl_exec_func();
    char reply[8192], *line, *save = NULL;
    ucs_status_t status;

    if (exec == NULL) {
        fo_log("counters: unavailable (gda_ft_soft_ctl_exec not found: "
               "is the plugin preloaded?)");
        return;
    }
    reply[0] = '\0';
    status   = exec("counters", reply, sizeof(reply));
    if (status != UCS_OK) {
        fo_log("counters: unavailable (the transport registers no "
               "'counters' control command: %s)", ucs_status_string(status));
        return;
    }
    for (line = strtok_r(reply, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        fo_log("counters: %s", line);
    }
}


/* ---- server -------------------------------------------------------------- */

/* "dev" or "dev:port" of the n-th (0-based) device of a devices string */
static void fo_nth_device(const char *devices, unsigned n, char *out,
                          size_t max)
{
    const char *p = devices;
    size_t len;
    unsigned i;

    out[0] = '\0';
    for (i = 0; (p != NULL) && (i < n); ++i) {
        p = strchr(p, ',');
        p = (p != NULL) ? p + 1 : NULL;
    }
    if (p == NULL) {
        return;
    }
    len = strcspn(p, "=,");
    if (len >= max - 3) {
        len = max - 3;
    }
    snprintf(out, max, "%.*s:1", (int)len, p);
}

static int fo_server_port_cmd(const char *devport, const char *state,
                              char *reply, size_t max)
{
    char dev[128], cmd[256], buf[256];
    const char *colon = strrchr(devport, ':');
    fo_ctl_exec_t exec;
    ucs_status_t status;
    unsigned port = 1;
    FILE *pipe;
    size_t n;
    int ret;

    snprintf(dev, sizeof(dev), "%.*s",
             (int)((colon != NULL) ? (size_t)(colon - devport) :
                   strlen(devport)), devport);
    if (colon != NULL) {
        port = atoi(colon + 1);
    }

    if (opt.fault_via == FAULT_VIA_CTL) {
        exec = fo_ctl_exec_func();
        if (exec == NULL) {
            snprintf(reply, max, "gda_ft_soft_ctl_exec not found (plugin "
                     "not preloaded?)");
            return -1;
        }
        snprintf(cmd, sizeof(cmd), "port %s %u %s", dev, port, state);
        status = exec(cmd, reply, max);
        fo_log("fault: '%s' -> %s: %.*s", cmd, ucs_status_string(status),
               (int)strcspn(reply, "\n"), reply);
        return (status == UCS_OK) ? 0 : -1;
    }

    /* FAULT_VIA_SOFTCTL */
    snprintf(cmd, sizeof(cmd), "'%s' -p %d port %s %u %s 2>&1",
             opt.softctl, (int)getpid(), dev, port, state);
    pipe = popen(cmd, "r");
    if (pipe == NULL) {
        snprintf(reply, max, "popen: %s", strerror(errno));
        return -1;
    }
    n        = fread(buf, 1, sizeof(buf) - 1, pipe);
    buf[n]   = '\0';
    ret      = pclose(pipe);
    snprintf(reply, max, "%s", buf);
    fo_log("fault: %s -> exit %d: %.*s", cmd,
           WIFEXITED(ret) ? WEXITSTATUS(ret) : -1, (int)strcspn(buf, "\n"),
           buf);
    return (WIFEXITED(ret) && (WEXITSTATUS(ret) == 0)) ? 0 : -1;
}

static int fo_server_fault(fo_fault_t fault, char *reply, size_t max)
{
    const char *devices = getenv("UCX_GDA_FT_SOFT_DEVICES");
    char primary[128], backup[128];

    if (opt.primary[0] != '\0') {
        snprintf(primary, sizeof(primary), "%s", opt.primary);
    } else {
        fo_nth_device(devices ? devices : "", 0, primary, sizeof(primary));
    }
    if (opt.backup[0] != '\0') {
        snprintf(backup, sizeof(backup), "%s", opt.backup);
    } else {
        fo_nth_device(devices ? devices : "", 1, backup, sizeof(backup));
    }
    if ((primary[0] == '\0') ||
        ((fault == FAULT_BOTH_DOWN) && (backup[0] == '\0'))) {
        snprintf(reply, max, "cannot tell the primary/backup device from "
                 "UCX_GDA_FT_SOFT_DEVICES='%s'", devices ? devices : "");
        return -1;
    }

    switch (fault) {
    case FAULT_PRIMARY_DOWN:
        return fo_server_port_cmd(primary, "down", reply, max);
    case FAULT_PRIMARY_UP:
        return fo_server_port_cmd(primary, "up", reply, max);
    case FAULT_BOTH_DOWN:
        if (fo_server_port_cmd(primary, "down", reply, max) != 0) {
            return -1;
        }
        return fo_server_port_cmd(backup, "down", reply, max);
    }
    snprintf(reply, max, "unknown fault %d", (int)fault);
    return -1;
}

/* Verifies one slot; returns 0 exact, 1 in doubt but consistent, -1 bad */
static int fo_verify_slot(const uint8_t *data, size_t size, unsigned slot,
                          const fo_slot_state_t *st, uint8_t *exp1,
                          uint8_t *exp2, char *detail, size_t max)
{
    uint64_t sum, hdr_gen = 0;
    size_t i;
    int sum_ok = -1;

    if (st->last_ok_gen < 0) {
        memset(exp1, FO_INIT_BYTE, size);
    } else {
        fo_fill(exp1, size, slot, st->last_ok_gen);
    }

    if (size >= FO_HDR_SIZE + FO_SUM_SIZE + 8) {
        memcpy(&sum, data + size - FO_SUM_SIZE, 8);
        memcpy(&hdr_gen, data + 8, 8);
        sum_ok = (fo_checksum(data, size - FO_SUM_SIZE) == sum);
    }

    if (st->doubt_gen < 0) {
        if (memcmp(data, exp1, size) == 0) {
            return 0;
        }
        for (i = 0; (i < size) && (data[i] == exp1[i]); ++i) {
        }
        snprintf(detail, max, "slot %u (%zu bytes): expected generation "
                 "%" PRId64 ", first wrong byte at %zu (0x%02x, expected "
                 "0x%02x), checksum %s, header generation %" PRIu64, slot,
                 size, st->last_ok_gen, i, data[i], exp1[i],
                 (sum_ok < 0) ? "n/a" : sum_ok ? "ok" : "BAD", hdr_gen);
        return -1;
    }

    /* puts in doubt: each byte is from one generation of
     * [last_ok_gen, doubt_gen] (last_ok_gen -1: the initial content) */
    {
        int64_t g, first = st->last_ok_gen, last = st->doubt_gen;
        uint8_t *matched = exp2;

        if (last - first > 64) {
            first = last - 64;   /* older ones were overwritten in order */
        }
        memset(matched, 0, size);
        for (g = first; g <= last; ++g) {
            if (g < 0) {
                memset(exp1, FO_INIT_BYTE, size);
            } else {
                fo_fill(exp1, size, slot, g);
            }
            if (memcmp(data, exp1, size) == 0) {
                return 1;   /* one whole generation */
            }
            for (i = 0; i < size; ++i) {
                matched[i] |= (data[i] == exp1[i]);
            }
        }
        for (i = 0; i < size; ++i) {
            if (!matched[i]) {
                snprintf(detail, max, "slot %u (%zu bytes, in doubt between "
                         "generations %" PRId64 " and %" PRId64 "): byte %zu "
                         "is 0x%02x, from none of them", slot, size,
                         st->last_ok_gen, st->doubt_gen, i, data[i]);
                return -1;
            }
        }
    }
    return 1;
}

static void fo_server_verify(const uint8_t *region, const fo_layout_t *l,
                             const fo_done_t *done, fo_result_t *res)
{
    uint8_t *exp1 = malloc(opt.max_size + 8), *exp2 = malloc(opt.max_size + 8);
    char detail[256];
    size_t off, next;
    unsigned s;
    int ret;

    memset(res, 0, sizeof(*res));
    if ((exp1 == NULL) || (exp2 == NULL)) {
        fo_die("out of memory");
    }

    memcpy(&res->counter, region, 8);
    for (s = 0; s < l->nslots; ++s) {
        ret = fo_verify_slot(region + l->offset[s], l->size[s], s,
                             &done->slot[s], exp1, exp2, detail,
                             sizeof(detail));
        if (ret < 0) {
            ++res->slots_bad;
            fo_log("VERIFY FAIL %s", detail);
            if (res->detail[0] == '\0') {
                snprintf(res->detail, sizeof(res->detail), "%s", detail);
            }
        } else if (ret > 0) {
            ++res->slots_doubt;
        } else if (done->slot[s].last_ok_gen < 0) {
            ++res->slots_unwritten;
        } else {
            ++res->slots_ok;
        }
    }

    /* the area that gets read: as it was filled */
    fo_fill(exp1, l->get_size, FO_GET_SLOT, 0);
    if (memcmp(region + l->get_offset, exp1, l->get_size) != 0) {
        for (off = 0; region[l->get_offset + off] == exp1[off]; ++off) {
        }
        snprintf(detail, sizeof(detail), "the read-only area changed: byte "
                 "%zu of %zu is 0x%02x, not 0x%02x", off, l->get_size,
                 region[l->get_offset + off], exp1[off]);
        fo_log("VERIFY FAIL %s", detail);
        ++res->slots_bad;
        if (res->detail[0] == '\0') {
            snprintf(res->detail, sizeof(res->detail), "%s", detail);
        }
    }

    /* guards: everything between the counter and the slots, between the
     * slots, around the read-only area, and after it */
    off = 8;
    for (s = 0; s <= l->nslots + 1; ++s) {
        next = (s < l->nslots) ? l->offset[s] :
               (s == l->nslots) ? l->get_offset : l->region_size;
        for (; off < next; ++off) {
            if (region[off] != FO_GUARD_BYTE) {
                if (res->guard_bad == 0) {
                    fo_log("VERIFY FAIL guard byte at offset %zu (before "
                           "slot %u) is 0x%02x", off, s, region[off]);
                }
                ++res->guard_bad;
            }
        }
        off = (s < l->nslots) ? (l->offset[s] + l->size[s]) :
                                (l->get_offset + l->get_size);
    }
    /* every byte of the region: counter, slots and guards */
    res->bytes_checked = l->region_size;
    if ((res->guard_bad != 0) && (res->detail[0] == '\0')) {
        snprintf(res->detail, sizeof(res->detail), "%" PRIu64 " guard bytes "
                 "overwritten", res->guard_bad);
    }
    free(exp1);
    free(exp2);
}

/* What the server received of the client's active messages */
static struct {
    uint8_t  *seen;      /* [iteration]: received (and correct) */
    uint64_t  recv;      /* distinct, correct */
    uint64_t  rndv;      /* of them, by rendezvous */
    uint64_t  dups;
    uint64_t  bad;       /* wrong iteration, size or content */
    uint64_t  inflight;  /* rendezvous data being fetched */
} fs_am;

typedef struct {
    uint64_t  iter;
    uint8_t  *buf;
    size_t    length;
} fo_am_rndv_t;

static void fo_am_check(uint64_t iter, const void *data, size_t length,
                        int rndv)
{
    uint8_t *expect;

    if ((iter >= opt.iters) || (length != fo_am_size(iter))) {
        if (fs_am.bad++ < 5) {
            fo_log("active message %" PRIu64 " of %zu bytes is unexpected",
                   iter, length);
        }
        return;
    }

    expect = malloc(length);
    if (expect == NULL) {
        fo_die("out of memory");
    }
    fo_fill(expect, length, FO_AM_SLOT, iter);
    if (memcmp(expect, data, length) != 0) {
        if (fs_am.bad++ < 5) {
            fo_log("active message %" PRIu64 ": wrong data", iter);
        }
    } else if (fs_am.seen[iter]++ != 0) {
        if (fs_am.dups++ < 5) {
            fo_log("active message %" PRIu64 " arrived twice", iter);
        }
    } else {
        ++fs_am.recv;
        fs_am.rndv += rndv;
    }
    free(expect);
}

static void fo_am_rndv_done(fo_am_rndv_t *r, ucs_status_t status)
{
    if (status == UCS_OK) {
        fo_am_check(r->iter, r->buf, r->length, 1);
    } else {
        fo_log("rendezvous data of active message %" PRIu64 ": %s", r->iter,
               ucs_status_string(status));
    }
    free(r->buf);
    free(r);
}

static void fo_am_data_cb(void *request, ucs_status_t status, size_t length,
                          void *user_data)
{
    --fs_am.inflight;
    fo_am_rndv_done(user_data, status);
    ucp_request_free(request);
}

static ucs_status_t fo_am_cb(void *arg, const void *header,
                             size_t header_length, void *data, size_t length,
                             const ucp_am_recv_param_t *param)
{
    fo_ucp_t *u = arg;
    ucp_request_param_t rparam;
    ucs_status_ptr_t sp;
    fo_am_rndv_t *r;
    uint64_t iter;

    if (header_length != sizeof(iter)) {
        ++fs_am.bad;
        fo_log("active message with a %zu-byte header", header_length);
        return UCS_OK;
    }
    memcpy(&iter, header, sizeof(iter));
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        fo_am_check(iter, data, length, 0);
        return UCS_OK;
    }

    r = malloc(sizeof(*r));
    if ((r == NULL) || ((r->buf = malloc(length ? length : 1)) == NULL)) {
        fo_die("out of memory");
    }
    r->iter   = iter;
    r->length = length;
    memset(&rparam, 0, sizeof(rparam));
    rparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
    rparam.cb.recv_am   = fo_am_data_cb;
    rparam.user_data    = r;
    sp = ucp_am_recv_data_nbx(u->worker, data, r->buf, length, &rparam);
    if (sp == NULL) {
        fo_am_rndv_done(r, UCS_OK);
    } else if (UCS_PTR_IS_ERR(sp)) {
        fo_am_rndv_done(r, UCS_PTR_STATUS(sp));
    } else {
        ++fs_am.inflight;
    }
    return UCS_OK;
}

static void fo_am_server_init(fo_ucp_t *u)
{
    ucp_am_handler_param_t hparam;
    ucs_status_t status;

    fs_am.seen = calloc(opt.iters ? opt.iters : 1, 1);
    if (fs_am.seen == NULL) {
        fo_die("out of memory");
    }
    memset(&hparam, 0, sizeof(hparam));
    hparam.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                        UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                        UCP_AM_HANDLER_PARAM_FIELD_CB |
                        UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hparam.id         = FO_AM_ID;
    hparam.flags      = UCP_AM_FLAG_WHOLE_MSG;
    hparam.cb         = fo_am_cb;
    hparam.arg        = u;
    status = ucp_worker_set_am_recv_handler(u->worker, &hparam);
    if (status != UCS_OK) {
        fo_die("ucp_worker_set_am_recv_handler: %s",
               ucs_status_string(status));
    }
}

static int fo_server(void)
{
    fo_ucp_t *u = &fo_ucp;
    ucp_mem_map_params_t mparams;
    ucp_address_t *addr;
    size_t addr_len, rkey_len;
    void *rkey_buf, *payload;
    struct sockaddr_un sa;
    uint8_t *region;
    ucp_mem_h memh;
    fo_layout_t layout;
    fo_hello_t hello;
    fo_done_t done;
    fo_result_t res;
    ucs_status_t status;
    int lfd, fd, ret, fault_ok;
    uint32_t type, len;
    char reply[4096];
    uint64_t expected_lo, expected_hi;
    int counter_ok, am_check;
    double deadline;

    fo_self = "server";
    fo_layout_init(&layout, opt.max_size);

    /* listen before UCX starts, so that the client can connect early */
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", opt.sock_path);
    unlink(opt.sock_path);
    if ((lfd < 0) || (bind(lfd, (struct sockaddr*)&sa, sizeof(sa)) != 0) ||
        (listen(lfd, 1) != 0)) {
        fo_die("cannot listen on %s: %s", opt.sock_path, strerror(errno));
    }

    fo_ucp_init(u);
    if (opt.am) {
        fo_am_server_init(u);
    }

    /* the region: counter, guards, slots in their initial state */
    if (posix_memalign((void**)&region, 4096, layout.region_size) != 0) {
        fo_die("out of memory");
    }
    memset(region, FO_GUARD_BYTE, layout.region_size);
    memset(region, 0, 8);
    for (unsigned s = 0; s < layout.nslots; ++s) {
        memset(region + layout.offset[s], FO_INIT_BYTE, layout.size[s]);
    }
    fo_fill(region + layout.get_offset, layout.get_size, FO_GET_SLOT, 0);

    memset(&mparams, 0, sizeof(mparams));
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = region;
    mparams.length     = layout.region_size;
    status = ucp_mem_map(u->context, &mparams, &memh);
    if (status != UCS_OK) {
        fo_die("ucp_mem_map: %s", ucs_status_string(status));
    }
    status = ucp_rkey_pack(u->context, memh, &rkey_buf, &rkey_len);
    if (status != UCS_OK) {
        fo_die("ucp_rkey_pack: %s", ucs_status_string(status));
    }
    status = ucp_worker_get_address(u->worker, &addr, &addr_len);
    if (status != UCS_OK) {
        fo_die("ucp_worker_get_address: %s", ucs_status_string(status));
    }

    fo_wait_readable(lfd, NULL, opt.op_timeout, "client connection");
    fd = accept(lfd, NULL, NULL);
    if (fd < 0) {
        fo_die("accept: %s", strerror(errno));
    }
    close(lfd);
    unlink(opt.sock_path);

    memset(&hello, 0, sizeof(hello));
    hello.pid         = getpid();
    hello.addr_len    = addr_len;
    hello.rkey_len    = rkey_len;
    hello.region_addr = (uintptr_t)region;
    hello.region_size = layout.region_size;
    hello.max_size    = opt.max_size;
    hello.seed        = opt.seed;
    fo_send(fd, MSG_HELLO, &hello, sizeof(hello), addr, addr_len, rkey_buf,
            rkey_len);
    ucp_rkey_buffer_release(rkey_buf);

    payload = fo_recv(fd, &type, &len);
    if (type != MSG_CLIENT_ADDR) {
        fo_die("expected the client's address, got message %u", type);
    }
    fo_ucp_connect(u, payload);
    free(payload);
    fo_log("%u slots of 1 byte to %zu bytes, region of %zu bytes at %p; "
           "waiting for the client", layout.nslots,
           layout.size[layout.nslots - 1], layout.region_size, region);

    /* serve fault requests until the client is done */
    fault_ok = 1;
    for (;;) {
        fo_wait_readable(fd, u->worker, 1800.0, "message from the client");
        payload = fo_recv(fd, &type, &len);
        if (type == MSG_FAULT) {
            fo_fault_t fault = *(uint32_t*)payload;
            int32_t rc;

            reply[0] = '\0';
            rc = fo_server_fault(fault, reply, sizeof(reply));
            if (rc != 0) {
                fault_ok = 0;
            }
            fo_send(fd, MSG_FAULT_ACK, &rc, sizeof(rc), reply,
                    strlen(reply) + 1, NULL, 0);
            free(payload);
            continue;
        }
        if (type != MSG_DONE) {
            fo_die("unexpected message %u from the client (EOF = 0)", type);
        }
        if (len != sizeof(done)) {
            fo_die("DONE of %u bytes, expected %zu", len, sizeof(done));
        }
        memcpy(&done, payload, sizeof(done));
        free(payload);
        break;
    }

    /* give the last responses time to land: the client flushed, so all
     * its successful operations are in memory already */
    while (ucp_worker_progress(u->worker) != 0) {
    }
    /* active messages the client saw complete are on their way, or here:
     * each once, with its data, and none the client did not send */
    deadline = fo_now() + opt.op_timeout;
    while ((fs_am.inflight > 0) ||
           (fs_am.recv + fs_am.dups + fs_am.bad < done.am_ok)) {
        ucp_worker_progress(u->worker);
        if (fo_now() > deadline) {
            fo_log("%" PRIu64 " of %" PRIu64 " active messages after %.0f s "
                   "(%" PRIu64 " rendezvous in flight)", fs_am.recv,
                   done.am_ok, opt.op_timeout, fs_am.inflight);
            break;
        }
    }
    am_check = (fs_am.dups == 0) && (fs_am.bad == 0) &&
               (fs_am.inflight == 0) && (fs_am.recv >= done.am_ok) &&
               (fs_am.recv <= done.am_ok + done.am_err);
    fo_server_verify(region, &layout, &done, &res);

    expected_lo = done.amo_ok_sum;
    expected_hi = done.amo_ok_sum + done.amo_err_sum;
    counter_ok  = (res.counter >= expected_lo) && (res.counter <= expected_hi);
    if (!counter_ok) {
        fo_log("VERIFY FAIL counter is %" PRIu64 ", expected %s%" PRIu64
               " (%" PRIu64 " successful increments, %" PRIu64 " in error)",
               res.counter, (expected_lo == expected_hi) ? "" : "at least ",
               expected_lo, done.amo_ok, done.amo_err);
        if (res.detail[0] == '\0') {
            snprintf(res.detail, sizeof(res.detail), "counter %" PRIu64
                     " != %" PRIu64, res.counter, expected_lo);
        }
    }
    if (!am_check && (res.detail[0] == '\0')) {
        snprintf(res.detail, sizeof(res.detail), "active messages: %" PRIu64
                 " received of %" PRIu64 " sent (+%" PRIu64 " in error), %"
                 PRIu64 " twice, %" PRIu64 " wrong", fs_am.recv, done.am_ok,
                 done.am_err, fs_am.dups, fs_am.bad);
    }
    if (!fault_ok && (res.detail[0] == '\0')) {
        snprintf(res.detail, sizeof(res.detail), "fault injection failed");
    }
    res.pass = (res.slots_bad == 0) && (res.guard_bad == 0) && counter_ok &&
               am_check && fault_ok;

    printf("[server] SUMMARY server slots=%u slots_ok=%u slots_unwritten=%u "
           "slots_in_doubt=%u slots_bad=%u bytes_checked=%" PRIu64
           " guard_bad=%" PRIu64 " counter=%" PRIu64 " counter_expected=%"
           PRIu64 "%s counter_ok=%d am_recv=%" PRIu64 " am_rndv=%" PRIu64
           " am_dups=%" PRIu64 " am_bad=%" PRIu64 " am_check=%d ep_error=%s\n",
           layout.nslots,
           res.slots_ok, res.slots_unwritten, res.slots_doubt, res.slots_bad,
           res.bytes_checked, res.guard_bad, res.counter, expected_lo,
           (expected_hi != expected_lo) ? "+" : "", counter_ok, fs_am.recv,
           fs_am.rndv, fs_am.dups, fs_am.bad, am_check,
           u->ep_failed ? ucs_status_string(u->ep_status) : "none");
    fflush(stdout);
    fo_send(fd, MSG_RESULT, &res, sizeof(res), NULL, 0, NULL, 0);

    /* wait for the client to close its side, then close ours */
    fo_wait_readable(fd, u->worker, opt.op_timeout, "client exit");
    payload = fo_recv(fd, &type, &len);
    free(payload);
    close(fd);

    fo_print_counters();
    fo_ucp_close(u, 1);
    ucp_worker_release_address(u->worker, addr);
    ucp_mem_unmap(u->context, memh);
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->context);
    free(region);
    free(fs_am.seen);

    ret = res.pass ? 0 : 1;
    if (res.pass) {
        printf("[server] RESULT PASS\n");
    } else {
        printf("[server] RESULT FAIL: %s\n", res.detail);
    }
    fflush(stdout);
    return ret;
}


/* ---- client -------------------------------------------------------------- */

typedef struct fo_op {
    void         *req;      /* UCP request, NULL when done */
    int           busy;
    int           is_amo;
    int           is_am;    /* active message */
    int           is_get;
    int           fetch;
    unsigned      slot;
    uint64_t      gen;
    uint64_t      iter;
    uint64_t      addend;
    uint64_t      result;   /* fetched value */
    size_t        get_off;  /* get: where in the read-only area */
    size_t        get_len;
    double        posted_at;
    ucs_status_t  status;
} fo_op_t;

static struct {
    fo_layout_t      layout;
    uint8_t         *local;          /* mirror of the server's region */
    ucp_mem_h        local_memh;
    uint64_t         remote_addr;
    ucp_rkey_h       rkey;
    fo_op_t         *puts, *amos, *ams, *gets;
    uint8_t         *get_ref;        /* what the read-only area holds */
    uint8_t         *get_bufs;       /* [window][get_size]: where gets
                                        land */
    ucp_mem_h        get_memh;
    uint64_t         gets_ok, gets_err, gets_bad;
    uint8_t        **am_bufs;        /* [window]: data of the messages */
    uint64_t        *am_hdrs;        /* [window]: their headers */
    fo_done_t        done;
    int64_t          pend_gen[FO_MAX_SLOTS]; /* put, not flushed yet */
    uint64_t         pend_amo_n;     /* posted atomics not flushed yet */
    uint64_t         pend_amo_sum;
    uint64_t         flushes, flush_errors;
    uint64_t         flush_errors_amo; /* explained by posted atomics */
    ucs_status_t     flush_status;   /* first flush error, else UCS_OK */
    uint64_t        *fetched;
    uint64_t         nfetched, fetched_cap;
    double           fault_at_time;  /* 0: not yet */
    double           first_ok_after; /* first success after the fault */
    double           first_err_at;
    ucs_status_t     first_err;
    int              fd;
} fc;

static const char *fo_op_name(const fo_op_t *op)
{
    return op->is_am ? "active message" : op->is_amo ? "atomic" :
           op->is_get ? "get" : "put";
}

static size_t fo_op_size(const fo_op_t *op)
{
    return op->is_am ? fo_am_size(op->iter) : op->is_amo ? sizeof(uint64_t) :
           op->is_get ? op->get_len : fc.layout.size[op->slot];
}

/* Where get `iter` lands: its window slot's buffer */
static uint8_t *fo_get_buf(uint64_t iter)
{
    return fc.get_bufs + (iter % opt.window) * fc.layout.get_size;
}

/* A get that completed successfully brought exactly the area's bytes */
static void fo_get_check(const fo_op_t *op)
{
    const uint8_t *got = fo_get_buf(op->iter);
    const uint8_t *ref = fc.get_ref + op->get_off;
    size_t i;

    if (memcmp(got, ref, op->get_len) == 0) {
        ++fc.gets_ok;
        return;
    }
    for (i = 0; got[i] == ref[i]; ++i) {
    }
    if (fc.gets_bad++ == 0) {
        fo_log("VERIFY FAIL get %" PRIu64 " (%zu bytes at offset %zu of the "
               "read-only area): byte %zu is 0x%02x, not 0x%02x", op->iter,
               op->get_len, op->get_off, i, got[i], ref[i]);
    }
}

static void fo_op_cb(void *request, ucs_status_t status, void *user_data)
{
    fo_op_t *op = user_data;

    op->status = status;
}

static void fo_op_finish(fo_op_t *op)
{
    double now = fo_now();

    if (op->status == UCS_OK) {
        /* the first fetching atomic posted after the fault that completes
         * (a put completes locally, before it reaches the peer) */
        if ((fc.fault_at_time > 0) && (fc.first_ok_after == 0) &&
            op->is_amo && op->fetch && (op->posted_at >= fc.fault_at_time)) {
            fc.first_ok_after = now;
        }
    } else if (fc.first_err_at == 0) {
        fc.first_err_at = now;
        fc.first_err    = op->status;
        fo_log("first error: %s %" PRIu64 " (slot %u): %s", fo_op_name(op),
               op->iter, op->slot, ucs_status_string(op->status));
    }

    if (op->is_get) {
        if (op->status == UCS_OK) {
            fo_get_check(op);
        } else {
            ++fc.gets_err;
        }
    } else if (op->is_am) {
        /* sent; a flush after it tells that it arrived */
        if (op->status == UCS_OK) {
            ++fc.done.am_ok;
        } else {
            ++fc.done.am_err;
        }
    } else if (op->is_amo) {
        if ((op->status == UCS_OK) && op->fetch) {
            /* a fetching atomic completes when its reply arrives: done */
            ++fc.done.amo_ok;
            fc.done.amo_ok_sum += op->addend;
            if (fc.nfetched == fc.fetched_cap) {
                fc.fetched_cap *= 2;
                fc.fetched      = realloc(fc.fetched, fc.fetched_cap *
                                          sizeof(*fc.fetched));
                if (fc.fetched == NULL) {
                    fo_die("out of memory");
                }
            }
            fc.fetched[fc.nfetched++] = op->result;
        } else if (op->status == UCS_OK) {
            /* a posted atomic is known to be applied after a flush only */
            ++fc.pend_amo_n;
            fc.pend_amo_sum += op->addend;
        } else {
            ++fc.done.amo_err;
            fc.done.amo_err_sum += op->addend;
        }
    } else {
        fo_slot_state_t *st = &fc.done.slot[op->slot];

        if (op->status == UCS_OK) {
            /* local completion: the data is remote after a flush only */
            ++fc.done.puts_ok;
            if ((int64_t)op->gen > fc.pend_gen[op->slot]) {
                fc.pend_gen[op->slot] = op->gen;
            }
        } else {
            ++fc.done.puts_err;
            if ((int64_t)op->gen > st->doubt_gen) {
                st->doubt_gen = op->gen;
            }
        }
    }
    op->busy = 0;
}

/*
 * Waits for one operation. With a timeout the run has hung: report which
 * operation and give up (exit status 1).
 */
static void fo_op_wait(fo_ucp_t *u, fo_op_t *op)
{
    double deadline;

    if (!op->busy) {
        return;
    }
    if (op->req != NULL) {
        deadline = fo_now() + ((opt.mode == MODE_BOTH) ? opt.err_bound :
                                                        opt.op_timeout);
        while (op->status == UCS_INPROGRESS) {
            ucp_worker_progress(u->worker);
            if (fo_now() > deadline) {
                fo_die("HANG: %s %" PRIu64 " (slot %u, %zu bytes) did not "
                       "complete in %.0f s (endpoint error: %s)",
                       fo_op_name(op), op->iter, op->slot, fo_op_size(op),
                       fo_now() - op->posted_at,
                       u->ep_failed ? ucs_status_string(u->ep_status) :
                                      "none");
            }
        }
        ucp_request_free(op->req);
        op->req = NULL;
    }
    fo_op_finish(op);
}

static void fo_op_post_result(fo_op_t *op, ucs_status_ptr_t sp)
{
    if (sp == NULL) {
        op->req    = NULL;
        op->status = UCS_OK;
    } else if (UCS_PTR_IS_ERR(sp)) {
        op->req    = NULL;
        op->status = UCS_PTR_STATUS(sp);
    } else {
        op->req    = sp;
        /* status set by the callback, or still in progress */
    }
}

/*
 * After a flush: what was put and posted since the previous one is in the
 * server's memory (ok), or in doubt (the flush failed, or the endpoint)
 */
static void fo_client_confirm(int puts_ok, int amos_ok)
{
    fo_slot_state_t *st;
    unsigned s;

    for (s = 0; s < fc.layout.nslots; ++s) {
        st = &fc.done.slot[s];
        if (fc.pend_gen[s] < 0) {
            continue;
        }
        if (puts_ok) {
            if (fc.pend_gen[s] > st->last_ok_gen) {
                st->last_ok_gen = fc.pend_gen[s];
            }
            if ((st->doubt_gen >= 0) && (st->doubt_gen <= st->last_ok_gen)) {
                /* a later write, now in place, covered the whole slot */
                st->doubt_gen = -1;
            }
        } else if (fc.pend_gen[s] > st->doubt_gen) {
            st->doubt_gen = fc.pend_gen[s];
        }
        fc.pend_gen[s] = -1;
    }

    if (amos_ok) {
        fc.done.amo_ok     += fc.pend_amo_n;
        fc.done.amo_ok_sum += fc.pend_amo_sum;
    } else {
        fc.done.amo_err     += fc.pend_amo_n;
        fc.done.amo_err_sum += fc.pend_amo_sum;
    }
    fc.pend_amo_n   = 0;
    fc.pend_amo_sum = 0;
}

static void fo_op_wait(fo_ucp_t *u, fo_op_t *op);

/* Waits for everything in flight, then flushes the endpoint */
static ucs_status_t fo_client_flush(fo_ucp_t *u)
{
    ucp_request_param_t param;
    ucs_status_t status;
    unsigned s;

    for (s = 0; s < opt.window; ++s) {
        fo_op_wait(u, &fc.puts[s]);
        fo_op_wait(u, &fc.amos[s]);
        fo_op_wait(u, &fc.ams[s]);
        fo_op_wait(u, &fc.gets[s]);
    }
    if (u->ep_failed) {
        status = u->ep_status;
    } else {
        memset(&param, 0, sizeof(param));
        status = fo_wait_req(u->worker, ucp_ep_flush_nbx(u->ep, &param),
                             (opt.mode == MODE_BOTH) ? opt.err_bound :
                                                       opt.op_timeout);
        if (status == UCS_ERR_TIMED_OUT) {
            fo_die("HANG: ucp_ep_flush_nbx did not complete in %.0f s "
                   "(endpoint error: %s)", (opt.mode == MODE_BOTH) ?
                   opt.err_bound : opt.op_timeout,
                   u->ep_failed ? ucs_status_string(u->ep_status) : "none");
        }
        ++fc.flushes;
    }
    if ((status != UCS_OK) && (fc.flush_errors++ == 0)) {
        fc.flush_status = status;
        fo_log("flush failed: %s", ucs_status_string(status));
    }

    if ((status == UCS_OK) && !u->ep_failed) {
        fo_client_confirm(1, 1);
    } else if (!u->ep_failed && (opt.mode != MODE_BOTH) &&
               (fc.pend_amo_n > 0)) {
        /*
         * A failed flush is how a transport reports posted atomics (they
         * have no completion of their own) that were in flight at a
         * failover: those are in doubt. Puts are replayed and must all be
         * in place: the server checks them exactly. Such a flush error is
         * accounted for; any other is not.
         */
        ++fc.flush_errors_amo;
        fo_client_confirm(1, 0);
    } else {
        fo_client_confirm(0, 0);
    }
    return status;
}

/* Waits for what the window's op still holds, then makes it the operation
 * of iteration iter: param gets its completion callback, and memh when
 * not NULL */
static void fo_op_start(fo_ucp_t *u, fo_op_t *op, uint64_t iter,
                        ucp_mem_h memh, ucp_request_param_t *param)
{
    fo_op_wait(u, op);
    memset(op, 0, sizeof(*op));
    op->busy      = 1;
    op->iter      = iter;
    op->status    = UCS_INPROGRESS;
    op->posted_at = fo_now();

    memset(param, 0, sizeof(*param));
    param->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
    param->cb.send      = fo_op_cb;
    param->user_data    = op;
    if (memh != NULL) {
        param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        param->memh          = memh;
    }
}

static void fo_client_put(fo_ucp_t *u, uint64_t iter)
{
    unsigned slot = iter % fc.layout.nslots;
    fo_op_t *op   = &fc.puts[iter % opt.window];
    ucp_request_param_t param;
    uint8_t *src;

    fo_op_start(u, op, iter, fc.local_memh, &param);
    src = fc.local + fc.layout.offset[slot];
    fo_fill(src, fc.layout.size[slot], slot, iter / fc.layout.nslots);
    op->slot = slot;
    op->gen  = iter / fc.layout.nslots;
    fo_op_post_result(op, ucp_put_nbx(u->ep, src, fc.layout.size[slot],
                                      fc.remote_addr + fc.layout.offset[slot],
                                      fc.rkey, &param));
}

static void fo_client_amo(fo_ucp_t *u, uint64_t iter)
{
    fo_op_t *op = &fc.amos[iter % opt.window];
    ucp_request_param_t param;

    fo_op_start(u, op, iter, NULL, &param);
    op->is_amo          = 1;
    op->addend          = 1;
    op->fetch           = (opt.amo == AMO_FETCH) ||
                          ((opt.amo == AMO_MIXED) && (iter & 1));
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype      = ucp_dt_make_contig(sizeof(uint64_t));
    if (op->fetch) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer  = &op->result;
    }
    fo_op_post_result(op, ucp_atomic_op_nbx(u->ep, UCP_ATOMIC_OP_ADD,
                                            &op->addend, 1, fc.remote_addr,
                                            fc.rkey, &param));
}

/* Active message `iter`: its header is the iteration, its data a pattern */
static void fo_client_am(fo_ucp_t *u, uint64_t iter)
{
    unsigned w  = iter % opt.window;
    fo_op_t *op = &fc.ams[w];
    ucp_request_param_t param;

    fo_op_start(u, op, iter, NULL, &param);
    fo_fill(fc.am_bufs[w], fo_am_size(iter), FO_AM_SLOT, iter);
    fc.am_hdrs[w]       = iter;
    op->is_am           = 1;
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    param.flags         = fo_am_flags(iter);
    fo_op_post_result(op, ucp_am_send_nbx(u->ep, FO_AM_ID, &fc.am_hdrs[w],
                                          sizeof(fc.am_hdrs[w]),
                                          fc.am_bufs[w], fo_am_size(iter),
                                          &param));
}

/* Get `iter`: as many bytes as slot iter % nslots holds, from an offset of
 * the read-only area that the seed picks */
static void fo_client_get(fo_ucp_t *u, uint64_t iter)
{
    fo_op_t *op = &fc.gets[iter % opt.window];
    ucp_request_param_t param;

    fo_op_start(u, op, iter, fc.get_memh, &param);
    op->is_get  = 1;
    op->get_len = fc.layout.size[iter % fc.layout.nslots];
    op->get_off = fo_mix64(opt.seed ^ ~iter) %
                  (fc.layout.get_size - op->get_len + 1);
    fo_op_post_result(op, ucp_get_nbx(u->ep, fo_get_buf(iter), op->get_len,
                                      fc.remote_addr + fc.layout.get_offset +
                                      op->get_off, fc.rkey, &param));
}

static void fo_client_fault(fo_ucp_t *u, fo_fault_t fault, const char *what)
{
    uint32_t type, len;
    uint32_t f = fault;
    void *payload;
    int32_t rc;

    fo_send(fc.fd, MSG_FAULT, &f, sizeof(f), NULL, 0, NULL, 0);
    fo_wait_readable(fc.fd, u->worker, opt.op_timeout, "fault reply");
    payload = fo_recv(fc.fd, &type, &len);
    if ((type != MSG_FAULT_ACK) || (len < sizeof(rc))) {
        fo_die("expected a fault reply, got message %u", type);
    }
    memcpy(&rc, payload, sizeof(rc));
    if (rc != 0) {
        fo_die("the server could not inject '%s': %s", what,
               (char*)payload + sizeof(rc));
    }
    free(payload);
    fo_log("fault injected: %s", what);
}

static int fo_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

static int fo_client(void)
{
    fo_ucp_t *u = &fo_ucp;
    ucp_mem_map_params_t mparams;
    struct sockaddr_un sa;
    ucp_address_t *addr;
    size_t addr_len;
    fo_hello_t hello;
    fo_result_t res;
    ucs_status_t status, flush_status = UCS_OK;
    uint32_t type, len;
    void *payload;
    double start, deadline, t_end, err_after = -1, up_time = 0;
    uint64_t i, iters_posted = 0, dups = 0, above = 0;
    int pass = 1;
    char why[256] = "";
    unsigned s;

    fo_self = "client";
    memset(&fc, 0, sizeof(fc));

    /* connect to the server, retrying while it starts */
    fc.fd = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", opt.sock_path);
    deadline = fo_now() + opt.op_timeout;
    while (connect(fc.fd, (struct sockaddr*)&sa, sizeof(sa)) != 0) {
        if (fo_now() > deadline) {
            fo_die("cannot connect to %s: %s", opt.sock_path,
                   strerror(errno));
        }
        usleep(20000);
    }

    fo_ucp_init(u);

    fo_wait_readable(fc.fd, NULL, opt.op_timeout, "server hello");
    payload = fo_recv(fc.fd, &type, &len);
    if ((type != MSG_HELLO) || (len < sizeof(hello))) {
        fo_die("expected the server's hello, got message %u", type);
    }
    memcpy(&hello, payload, sizeof(hello));
    if (len != sizeof(hello) + hello.addr_len + hello.rkey_len) {
        fo_die("hello of %u bytes does not add up", len);
    }
    opt.max_size = hello.max_size;
    opt.seed     = hello.seed;
    fo_layout_init(&fc.layout, opt.max_size);
    if (fc.layout.region_size != hello.region_size) {
        fo_die("region layouts differ: %zu != %" PRIu64,
               fc.layout.region_size, hello.region_size);
    }
    if (opt.window > fc.layout.nslots) {
        opt.window = fc.layout.nslots;
    }
    fc.remote_addr = hello.region_addr;

    status = ucp_worker_get_address(u->worker, &addr, &addr_len);
    if (status != UCS_OK) {
        fo_die("ucp_worker_get_address: %s", ucs_status_string(status));
    }
    fo_send(fc.fd, MSG_CLIENT_ADDR, addr, addr_len, NULL, 0, NULL, 0);
    fo_ucp_connect(u, (char*)payload + sizeof(hello));
    status = ucp_ep_rkey_unpack(u->ep, (char*)payload + sizeof(hello) +
                                hello.addr_len, &fc.rkey);
    if (status != UCS_OK) {
        fo_die("ucp_ep_rkey_unpack: %s", ucs_status_string(status));
    }
    free(payload);
    if (opt.verbose) {
        ucp_ep_print_info(u->ep, stdout);
    }

    /* the local source buffers, registered */
    if (posix_memalign((void**)&fc.local, 4096, fc.layout.region_size) !=
        0) {
        fo_die("out of memory");
    }
    memset(fc.local, 0, fc.layout.region_size);
    memset(&mparams, 0, sizeof(mparams));
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = fc.local;
    mparams.length     = fc.layout.region_size;
    status = ucp_mem_map(u->context, &mparams, &fc.local_memh);
    if (status != UCS_OK) {
        fo_die("ucp_mem_map: %s", ucs_status_string(status));
    }

    /* where gets land, registered, and what they must bring */
    fc.get_ref  = malloc(fc.layout.get_size);
    fc.get_bufs = malloc(opt.window * fc.layout.get_size);
    if ((fc.get_ref == NULL) || (fc.get_bufs == NULL)) {
        fo_die("out of memory");
    }
    fo_fill(fc.get_ref, fc.layout.get_size, FO_GET_SLOT, 0);
    mparams.address = fc.get_bufs;
    mparams.length  = opt.window * fc.layout.get_size;
    status = ucp_mem_map(u->context, &mparams, &fc.get_memh);
    if (status != UCS_OK) {
        fo_die("ucp_mem_map: %s", ucs_status_string(status));
    }

    fc.puts    = calloc(opt.window, sizeof(*fc.puts));
    fc.gets    = calloc(opt.window, sizeof(*fc.gets));
    fc.amos    = calloc(opt.window, sizeof(*fc.amos));
    fc.ams     = calloc(opt.window, sizeof(*fc.ams));
    fc.am_hdrs = calloc(opt.window, sizeof(*fc.am_hdrs));
    fc.am_bufs = calloc(opt.window, sizeof(*fc.am_bufs));
    if ((fc.ams == NULL) || (fc.am_hdrs == NULL) || (fc.am_bufs == NULL)) {
        fo_die("out of memory");
    }
    for (i = 0; opt.am && (i < opt.window); ++i) {
        fc.am_bufs[i] = malloc(FO_AM_MAX);
        if (fc.am_bufs[i] == NULL) {
            fo_die("out of memory");
        }
    }
    fc.fetched_cap = opt.iters + 1;
    fc.fetched     = calloc(fc.fetched_cap, sizeof(*fc.fetched));
    if ((fc.puts == NULL) || (fc.amos == NULL) || (fc.gets == NULL) ||
        (fc.fetched == NULL)) {
        fo_die("out of memory");
    }
    fc.done.nslots = fc.layout.nslots;
    fc.done.mode   = opt.mode;
    for (s = 0; s < FO_MAX_SLOTS; ++s) {
        fc.done.slot[s].last_ok_gen = -1;
        fc.done.slot[s].doubt_gen   = -1;
        fc.pend_gen[s]              = -1;
    }

    fo_log("mode %s: %lu iterations over %u slots (1 byte to %zu bytes), "
           "window %u, atomics %s, fault at %ld%s%s via %s",
           fo_mode_names[opt.mode], opt.iters, fc.layout.nslots,
           fc.layout.size[fc.layout.nslots - 1], opt.window,
           fo_amo_names[opt.amo], opt.fault_at,
           (opt.mode == MODE_UPDOWN) ? ", up at " : "",
           (opt.mode == MODE_UPDOWN) ? "(see below)" : "",
           fo_fault_via_names[opt.fault_via]);

    start = fo_now();
    for (i = 0; (i < opt.iters) ||
                ((up_time > 0) && (fo_now() - up_time < opt.after_up)); ++i) {
        if ((opt.fault_via != FAULT_VIA_ENV) && (opt.mode != MODE_NONE) &&
            (i == (uint64_t)opt.fault_at)) {
            fo_client_fault(u, (opt.mode == MODE_BOTH) ? FAULT_BOTH_DOWN :
                                                          FAULT_PRIMARY_DOWN,
                            (opt.mode == MODE_BOTH) ?
                            "both server ports down" :
                            "server primary port down");
            fc.fault_at_time = fo_now();
            fo_log("fault at iteration %" PRIu64 " (%.3f s into the run)",
                   i, fc.fault_at_time - start);
            if (opt.fault_delay > 0) {
                usleep((useconds_t)(opt.fault_delay * 1e6));
            }
        }
        if ((opt.fault_via != FAULT_VIA_ENV) && (opt.mode == MODE_UPDOWN) &&
            (i == (uint64_t)opt.up_at)) {
            fo_client_fault(u, FAULT_PRIMARY_UP, "server primary port up");
            up_time = fo_now();
            fo_log("port up at iteration %" PRIu64 " (%.3f s into the run)",
                   i, up_time - start);
        }
        /* both paths gone: stop at the first error; otherwise only a
         * failed endpoint stops the run (atomics in doubt do not) */
        if (u->ep_failed ||
            ((opt.mode == MODE_BOTH) && (fc.first_err_at != 0))) {
            fo_log("stopping at iteration %" PRIu64 ": %s", i,
                   u->ep_failed ? "endpoint failed" : "operation failed");
            break;
        }
        fo_client_put(u, i);
        fo_client_amo(u, i);
        if (opt.am) {
            fo_client_am(u, i);
        }
        if (opt.get) {
            fo_client_get(u, i);
        }
        iters_posted = i + 1;
        if (opt.flush_every && ((iters_posted % opt.flush_every) == 0)) {
            fo_client_flush(u);
        }
        ucp_worker_progress(u->worker);
        if (opt.verbose && ((i % 100) == 99)) {
            fo_log("iteration %" PRIu64 " (%.3f s)", i + 1, fo_now() - start);
        }
    }

    /* everything in flight completes, successfully or with an error, and
     * a flush tells whether the data is in place */
    flush_status = fo_client_flush(u);
    t_end = fo_now();
    fc.done.iters = iters_posted;

    /* in mode both the error must show up (operation error or endpoint
     * error), within the bound from the fault */
    if (opt.mode == MODE_BOTH) {
        double first = 0;

        if (!u->ep_failed && (fc.first_err_at == 0)) {
            /* the error may still be on its way */
            deadline = ((fc.fault_at_time > 0) ? fc.fault_at_time : start) +
                       opt.err_bound;
            while (!u->ep_failed && (fo_now() < deadline)) {
                ucp_worker_progress(u->worker);
            }
        }
        if (u->ep_failed) {
            first = u->ep_failed_at;
        }
        if ((fc.first_err_at != 0) && ((first == 0) ||
                                       (fc.first_err_at < first))) {
            first = fc.first_err_at;
        }
        if (first == 0) {
            pass = 0;
            snprintf(why, sizeof(why), "both ports down but no error within "
                     "%.0f s", opt.err_bound);
        } else {
            err_after = first - ((fc.fault_at_time > 0) ? fc.fault_at_time :
                                                          start);
            if (err_after > opt.err_bound) {
                pass = 0;
                snprintf(why, sizeof(why), "error %.1f s after the fault, "
                         "bound %.0f s", err_after, opt.err_bound);
            }
        }
    } else {
        /* puts are replayed: none may fail. Atomics in flight when the
         * path failed may complete in doubt (with an error status): they
         * are reported, and the server accepts each one as applied or not
         * (never twice). */
        if (fc.done.puts_err) {
            pass = 0;
            snprintf(why, sizeof(why), "%" PRIu64 " puts completed with an "
                     "error (first error: %s)", fc.done.puts_err,
                     ucs_status_string(fc.first_err));
        } else if (fc.gets_err) {
            pass = 0;
            snprintf(why, sizeof(why), "%" PRIu64 " gets completed with an "
                     "error (first error: %s)", fc.gets_err,
                     ucs_status_string(fc.first_err));
        } else if (fc.done.am_err) {
            pass = 0;
            snprintf(why, sizeof(why), "%" PRIu64 " active messages "
                     "completed with an error (first error: %s)",
                     fc.done.am_err, ucs_status_string(fc.first_err));
        } else if ((opt.mode == MODE_NONE) && fc.done.amo_err) {
            pass = 0;
            snprintf(why, sizeof(why), "%" PRIu64 " atomics completed with "
                     "an error without any fault (first error: %s)",
                     fc.done.amo_err, ucs_status_string(fc.first_err));
        } else if (u->ep_failed) {
            pass = 0;
            snprintf(why, sizeof(why), "endpoint error: %s",
                     ucs_status_string(u->ep_status));
        } else if ((opt.mode == MODE_NONE) && (fc.flush_errors != 0)) {
            pass = 0;
            snprintf(why, sizeof(why), "%" PRIu64 " of %" PRIu64 " flushes "
                     "failed without any fault (first: %s)", fc.flush_errors,
                     fc.flushes, ucs_status_string(fc.flush_status));
        } else if (fc.flush_errors != fc.flush_errors_amo) {
            pass = 0;
            snprintf(why, sizeof(why), "%" PRIu64 " of %" PRIu64 " flushes "
                     "failed with no posted atomic to blame (first: %s)",
                     fc.flush_errors - fc.flush_errors_amo, fc.flushes,
                     ucs_status_string(fc.flush_status));
        } else if (iters_posted < opt.iters) {
            pass = 0;
            snprintf(why, sizeof(why), "only %" PRIu64 " of %lu iterations",
                     iters_posted, opt.iters);
        }
    }

    /* exactly once, seen by the fetching atomics: each old value once */
    qsort(fc.fetched, fc.nfetched, sizeof(uint64_t), fo_u64_cmp);
    for (i = 1; i < fc.nfetched; ++i) {
        dups += (fc.fetched[i] == fc.fetched[i - 1]);
    }

    printf("[client] SUMMARY client mode=%s iters=%" PRIu64 " puts_ok=%"
           PRIu64 " puts_err=%" PRIu64 " amo_ok=%" PRIu64 " amo_err=%" PRIu64
           " amo_fetched=%" PRIu64 " fetch_dups=%" PRIu64 " am_sent=%" PRIu64
           " am_err=%" PRIu64 " gets_ok=%" PRIu64 " gets_err=%" PRIu64
           " gets_bad=%" PRIu64 " flushes=%"
           PRIu64 " flush_errors=%" PRIu64 " flush_errors_amo=%" PRIu64
           " flush=%s ep_error=%s time=%.3f\n", fo_mode_names[opt.mode],
           iters_posted, fc.done.puts_ok, fc.done.puts_err, fc.done.amo_ok,
           fc.done.amo_err, fc.nfetched, dups, fc.done.am_ok, fc.done.am_err,
           fc.gets_ok, fc.gets_err, fc.gets_bad, fc.flushes, fc.flush_errors,
           fc.flush_errors_amo,
           ucs_status_string(fc.flush_errors ? fc.flush_status :
                                               flush_status),
           u->ep_failed ? ucs_status_string(u->ep_status) : "none",
           t_end - start);
    if (fc.fault_at_time > 0) {
        printf("[client] FAILOVER fault_at_iter=%ld interruption_ms=%.1f"
               " err_after_ms=%.1f\n", opt.fault_at,
               (fc.first_ok_after > 0) ?
               (fc.first_ok_after - fc.fault_at_time) * 1e3 : -1.0,
               (err_after >= 0) ? err_after * 1e3 : -1.0);
    } else if (opt.mode == MODE_BOTH) {
        printf("[client] FAILOVER err_after_ms=%.1f\n",
               (err_after >= 0) ? err_after * 1e3 : -1.0);
    }
    fflush(stdout);
    if (fc.gets_bad != 0) {
        pass = 0;
        snprintf(why, sizeof(why), "%" PRIu64 " gets brought wrong data",
                 fc.gets_bad);
    }
    if (dups != 0) {
        pass = 0;
        snprintf(why, sizeof(why), "%" PRIu64 " fetched counter values seen "
                 "twice: an increment was applied twice", dups);
    }

    /* the server checks every byte and the counter */
    fo_send(fc.fd, MSG_DONE, &fc.done, sizeof(fc.done), NULL, 0, NULL, 0);
    fo_wait_readable(fc.fd, u->worker, opt.op_timeout + 60, "server result");
    payload = fo_recv(fc.fd, &type, &len);
    if ((type != MSG_RESULT) || (len != sizeof(res))) {
        fo_die("expected the server's result, got message %u", type);
    }
    memcpy(&res, payload, sizeof(res));
    free(payload);
    if (fc.nfetched && (fc.fetched[fc.nfetched - 1] >= res.counter)) {
        above = fc.fetched[fc.nfetched - 1];
        pass  = 0;
        snprintf(why, sizeof(why), "an atomic fetched %" PRIu64 ", not below "
                 "the final counter %" PRIu64, above, res.counter);
    }
    if (!res.pass) {
        pass = 0;
        snprintf(why, sizeof(why), "server verification: %.200s",
                 res.detail);
    }

    fo_print_counters();
    ucp_rkey_destroy(fc.rkey);
    fo_ucp_close(u, u->ep_failed || (opt.mode == MODE_BOTH));
    close(fc.fd);
    ucp_worker_release_address(u->worker, addr);
    ucp_mem_unmap(u->context, fc.local_memh);
    ucp_mem_unmap(u->context, fc.get_memh);
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->context);
    free(fc.local);
    free(fc.puts);
    free(fc.gets);
    free(fc.get_ref);
    free(fc.get_bufs);
    free(fc.amos);
    for (i = 0; i < opt.window; ++i) {
        free(fc.am_bufs[i]);
    }
    free(fc.am_bufs);
    free(fc.am_hdrs);
    free(fc.ams);
    free(fc.fetched);

    if (pass) {
        printf("[client] RESULT PASS\n");
    } else {
        printf("[client] RESULT FAIL: %s\n", why);
    }
    fflush(stdout);
    return pass ? 0 : 1;
}


/* ---- launcher ------------------------------------------------------------ */

static const char *fo_argv0;
static char       **fo_argv;
static int          fo_argc;

static pid_t fo_spawn(const char *role, const char *devices,
                      const char *faults, const char *sock_path)
{
    char **argv = calloc(fo_argc + 8, sizeof(char*));
    pid_t pid;
    int i, n = 0;

    argv[n++] = (char*)fo_argv0;
    for (i = 1; i < fo_argc; ++i) {
        argv[n++] = fo_argv[i];
    }
    argv[n++] = "--role";
    argv[n++] = (char*)role;
    argv[n++] = "--sock";
    argv[n++] = (char*)sock_path;
    argv[n]   = NULL;

    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        fo_die("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setenv("UCX_GDA_FT_SOFT_DEVICES", devices, 1);
        if (faults != NULL) {
            setenv("UCX_GDA_FT_SOFT_FAULTS", faults, 1);
        } else {
            unsetenv("UCX_GDA_FT_SOFT_FAULTS");
        }
        execv("/proc/self/exe", argv);
        fprintf(stderr, "execv: %s\n", strerror(errno));
        _exit(127);
    }
    free(argv);
    return pid;
}

static int fo_launch(void)
{
    char sdev[256], cdev[256], sock_path[108];
    pid_t server, client, pid;
    int status, server_rc = -1, client_rc = -1, left = 2;
    double deadline;
    unsigned port;

    port = opt.udp_port ? opt.udp_port : 20000 + (getpid() % 40000);
    if (opt.server_devices != NULL) {
        snprintf(sdev, sizeof(sdev), "%s", opt.server_devices);
    } else {
        snprintf(sdev, sizeof(sdev), "s0=127.0.0.1:%u,s1=127.0.0.2:%u",
                 port, port);
    }
    if (opt.client_devices != NULL) {
        snprintf(cdev, sizeof(cdev), "%s", opt.client_devices);
    } else {
        snprintf(cdev, sizeof(cdev), "c0=127.0.0.3:%u,c1=127.0.0.4:%u",
                 port, port);
    }
    if (opt.sock_path != NULL) {
        snprintf(sock_path, sizeof(sock_path), "%s", opt.sock_path);
    } else {
        snprintf(sock_path, sizeof(sock_path),
                 "/tmp/gda_ft_ucp_failover.%d.sock", (int)getpid());
    }
    fo_log("server devices %s%s%s, client devices %s, socket %s", sdev,
           opt.server_faults ? ", faults " : "",
           opt.server_faults ? opt.server_faults : "", cdev, sock_path);

    server = fo_spawn("server", sdev, opt.server_faults, sock_path);
    client = fo_spawn("client", cdev, NULL, sock_path);

    /* nothing may hang: a generous bound over both */
    deadline = fo_now() + opt.op_timeout * 2 + opt.err_bound + 30;
    while (left > 0) {
        pid = waitpid(-1, &status, WNOHANG);
        if (pid == 0) {
            if (fo_now() > deadline) {
                fo_log("HANG: killing server %d and client %d", (int)server,
                       (int)client);
                if (server_rc < 0) kill(server, SIGKILL);
                if (client_rc < 0) kill(client, SIGKILL);
                deadline = fo_now() + 3600;
            }
            usleep(20000);
            continue;
        }
        if (pid < 0) {
            break;
        }
        --left;
        if (pid == server) {
            server_rc = WIFEXITED(status) ? WEXITSTATUS(status) :
                        128 + WTERMSIG(status);
        } else if (pid == client) {
            client_rc = WIFEXITED(status) ? WEXITSTATUS(status) :
                        128 + WTERMSIG(status);
        }
    }
    unlink(sock_path);

    fo_log("server exit %d, client exit %d", server_rc, client_rc);
    if ((server_rc == 0) && (client_rc == 0)) {
        printf("[launcher] RESULT PASS\n");
        return 0;
    }
    printf("[launcher] RESULT FAIL: server exit %d, client exit %d\n",
           server_rc, client_rc);
    return 1;
}


/* ---- options ------------------------------------------------------------- */

static void fo_usage(FILE *f)
{
    fprintf(f,
"Usage: gda_ft_ucp_failover [OPTIONS]\n"
"UCP puts and 64-bit atomic adds through a soft HCA port failure, verified\n"
"byte by byte on the receiver. Run it with contrib/gda_ft-run.sh.\n"
"\n"
"  -m, --mode MODE       none | down (default) | updown | both\n"
"  -n, --iters N         puts (and as many atomics) to issue (400)\n"
"  -f, --fault-at I      iteration of the fault (iters/3)\n"
"  -u, --up-at I         updown: iteration the port comes back (2*iters/3)\n"
"      --after-up SEC    updown: go on for at least SEC after that (0)\n"
"      --poll-pause SEC  pause between two progress calls of a side that\n"
"                        waits for a message (the server, all run):\n"
"                        0.001; 0: none. Its guardian answers the\n"
"                        client's fence request from progress\n"
"  -w, --window W        operations of each kind in flight (8)\n"
"  -b, --flush-every N   flush the endpoint every N iterations (50; 0: at\n"
"                        the end only); a put or posted atomic counts as\n"
"                        done once a flush after it succeeded\n"
"  -a, --amo KIND        fetch | post | mixed (default)\n"
"  -s, --max-size BYTES  largest put, slots up to 3 MiB (3145728)\n"
"      --get             a get too each iteration, of the read-only area\n"
"                        (1 byte to the largest slot, at any offset)\n"
"      --am              an active message too each iteration\n"
"                        (ucp_am_send_nbx: short, bcopy, rendezvous)\n"
"  -t, --timeout SEC     longest wait for one operation (60): a hang\n"
"  -e, --err-bound SEC   both: the error must come this soon (30)\n"
"  -F, --fault-via HOW   ctl (in-process, default) | softctl | env\n"
"      --softctl PATH    gda_ft_softctl for --fault-via softctl\n"
"      --fault-delay SEC pause after injecting the fault (0)\n"
"      --primary DEV:P   server's port to fail (1st soft device, port 1)\n"
"      --backup DEV:P    server's other port, for mode both (2nd device)\n"
"  -p, --udp-port P      UDP port of the soft fabric (from the pid)\n"
"      --server-devices S, --client-devices S  UCX_GDA_FT_SOFT_DEVICES\n"
"      --server-faults S UCX_GDA_FT_SOFT_FAULTS of the server (--fault-via env)\n"
"      --seed N          pattern seed\n"
"      --role server|client --sock PATH  run one side only\n"
"  -v, --verbose         endpoint configuration and progress\n"
"\n"
"Output: 'SUMMARY' lines of both sides, 'FAILOVER' timings, 'counters:'\n"
"lines when the transport offers them, and 'RESULT PASS|FAIL' per process.\n"
"Exit status 0 when both sides pass.\n");
}

static int fo_parse_enum(const char *arg, const char **names, int n,
                         const char *what)
{
    int i;

    for (i = 0; i < n; ++i) {
        if (!strcmp(arg, names[i])) {
            return i;
        }
    }
    fprintf(stderr, "invalid %s '%s'\n", what, arg);
    exit(2);
}

int main(int argc, char **argv)
{
    enum {
        OPT_ROLE = 256, OPT_SOCK, OPT_SOFTCTL, OPT_SDEV, OPT_CDEV, OPT_SFAULTS,
        OPT_SEED, OPT_PRIMARY, OPT_BACKUP, OPT_FDELAY, OPT_AFTER_UP, OPT_AM,
        OPT_GET,
        OPT_PAUSE
    };
    static const struct option longopts[] = {
        {"mode",           required_argument, NULL, 'm'},
        {"iters",          required_argument, NULL, 'n'},
        {"fault-at",       required_argument, NULL, 'f'},
        {"up-at",          required_argument, NULL, 'u'},
        {"window",         required_argument, NULL, 'w'},
        {"flush-every",    required_argument, NULL, 'b'},
        {"amo",            required_argument, NULL, 'a'},
        {"max-size",       required_argument, NULL, 's'},
        {"timeout",        required_argument, NULL, 't'},
        {"err-bound",      required_argument, NULL, 'e'},
        {"fault-via",      required_argument, NULL, 'F'},
        {"udp-port",       required_argument, NULL, 'p'},
        {"verbose",        no_argument,       NULL, 'v'},
        {"help",           no_argument,       NULL, 'h'},
        {"role",           required_argument, NULL, OPT_ROLE},
        {"sock",           required_argument, NULL, OPT_SOCK},
        {"softctl",        required_argument, NULL, OPT_SOFTCTL},
        {"server-devices", required_argument, NULL, OPT_SDEV},
        {"client-devices", required_argument, NULL, OPT_CDEV},
        {"server-faults",  required_argument, NULL, OPT_SFAULTS},
        {"seed",           required_argument, NULL, OPT_SEED},
        {"primary",        required_argument, NULL, OPT_PRIMARY},
        {"backup",         required_argument, NULL, OPT_BACKUP},
        {"fault-delay",    required_argument, NULL, OPT_FDELAY},
        {"after-up",       required_argument, NULL, OPT_AFTER_UP},
        {"poll-pause",     required_argument, NULL, OPT_PAUSE},
        {"am",             no_argument,       NULL, OPT_AM},
        {"get",            no_argument,       NULL, OPT_GET},
        {NULL, 0, NULL, 0}
    };
    static char softctl_default[PATH_MAX];
    char exe[PATH_MAX], *slash;
    ssize_t n;
    int c;

    /* launcher: remember argv to re-execute without --role/--sock */
    fo_argv0 = argv[0];
    fo_argv  = argv;
    fo_argc  = argc;

    while ((c = getopt_long(argc, argv, "m:n:f:u:w:b:a:s:t:e:F:p:vh", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 'm': opt.mode = fo_parse_enum(optarg, fo_mode_names, 4, "mode");
                  break;
        case 'n': opt.iters = strtoul(optarg, NULL, 0); break;
        case 'f': opt.fault_at = strtol(optarg, NULL, 0); break;
        case 'u': opt.up_at = strtol(optarg, NULL, 0); break;
        case 'w': opt.window = strtoul(optarg, NULL, 0); break;
        case 'b': opt.flush_every = strtoul(optarg, NULL, 0); break;
        case 'a': opt.amo = fo_parse_enum(optarg, fo_amo_names, 3, "amo");
                  break;
        case 's': opt.max_size = strtoul(optarg, NULL, 0); break;
        case 't': opt.op_timeout = strtod(optarg, NULL); break;
        case 'e': opt.err_bound = strtod(optarg, NULL); break;
        case 'F': opt.fault_via = fo_parse_enum(optarg, fo_fault_via_names, 3,
                                                "fault-via");
                  break;
        case 'p': opt.udp_port = strtoul(optarg, NULL, 0); break;
        case 'v': opt.verbose = 1; break;
        case 'h': fo_usage(stdout); return 0;
        case OPT_ROLE: opt.role = optarg; break;
        case OPT_SOCK: opt.sock_path = optarg; break;
        case OPT_SOFTCTL: opt.softctl = optarg; break;
        case OPT_SDEV: opt.server_devices = optarg; break;
        case OPT_CDEV: opt.client_devices = optarg; break;
        case OPT_SFAULTS: opt.server_faults = optarg; break;
        case OPT_SEED: opt.seed = strtoull(optarg, NULL, 0); break;
        case OPT_PRIMARY: opt.primary = optarg; break;
        case OPT_BACKUP: opt.backup = optarg; break;
        case OPT_FDELAY: opt.fault_delay = strtod(optarg, NULL); break;
        case OPT_AFTER_UP: opt.after_up = strtod(optarg, NULL); break;
        case OPT_PAUSE: opt.poll_pause = strtod(optarg, NULL); break;
        case OPT_AM: opt.am = 1; break;
        case OPT_GET: opt.get = 1; break;
        default: fo_usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        fo_usage(stderr);
        return 2;
    }

    if (opt.iters == 0) {
        opt.iters = 1;
    }
    if (opt.window == 0) {
        opt.window = 1;
    }
    if (opt.fault_at < 0) {
        opt.fault_at = opt.iters / 3;
    }
    if (opt.up_at < 0) {
        opt.up_at = (2 * opt.iters) / 3;
    }
    if (opt.max_size < 1) {
        opt.max_size = 1;
    }
    if (opt.softctl == NULL) {
        /* <build>/test/ucp/gda_ft_ucp_failover -> <build>/src/tools/ */
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 64);
        exe[(n > 0) ? n : 0] = '\0';
        slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
        }
        snprintf(softctl_default, sizeof(softctl_default),
                 "%.*s/../../src/tools/gda_ft_softctl",
                 (int)(sizeof(exe) - 64), exe);
        opt.softctl = softctl_default;
    }

    if (opt.role == NULL) {
        return fo_launch();
    }
    if (opt.sock_path == NULL) {
        fprintf(stderr, "--role needs --sock PATH\n");
        return 2;
    }
    if (!strcmp(opt.role, "server")) {
        return fo_server();
    }
    if (!strcmp(opt.role, "client")) {
        return fo_client();
    }
    fprintf(stderr, "invalid role '%s'\n", opt.role);
    return 2;
}
