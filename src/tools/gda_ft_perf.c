/*
 * gda_ft_perf: a device perftest in the spirit of ucx_perftest's device
 * tests. Two processes, launched as ucx_perftest is: the server first,
 * then the client with the server's host name.
 *
 *   gda_ft_perf [options]                  server
 *   gda_ft_perf [options] SERVER_HOST      client
 *
 * Both connect with UCP (UCX_TLS=gda_ft,tcp unless set), build their
 * device endpoint and memory list through src/ucp_ext (gda_ft_ucp.h), and
 * post through the device API from CUDA threads or warps (--gpu, or
 * automatically where a GPU and the GPU runner exist) or from CPU threads.
 * The client runs the test; the server answers the ping-pong and checks
 * what arrived: every byte of the puts, every signal, the counter. The
 * client checks that no fetch-add value came back twice.
 *
 * --fault takes the client's primary port down once a third of the
 * iterations are done, for MS milliseconds (software HCA only), and the
 * result reports the interruption and the channels' switches and
 * failbacks.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "gda_ft_perf.h"
#include "gda_ft_prog.h"
#include "gda_ft_ucp.h"

#include <ucs/sys/math.h>
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PERF_MAX_WORKERS   1024
#define PERF_MAX_CHANNELS  64      /* UCX_GDA_FT_DEVICE_CHANNELS' most */
#define PERF_SIGNAL_BYTES  (PERF_MAX_WORKERS * sizeof(uint64_t))
#define PERF_COUNTER_BYTES 64

/* Each side's region: [src | dst | signal words | counter | results] */
typedef struct {
    size_t data;      /* bytes of src, and of dst */
    size_t dst;       /* offsets */
    size_t signals;
    size_t counter;
    size_t results;
    size_t total;
} perf_layout_t;

/* The GPU runner (gda_ft_perf_gpu.cu, in libgda_ft_perf_gpu.so) */
typedef struct {
    void *(*launch)(const gda_ft_perf_params_t *params, unsigned workers,
                    gda_ft_perf_worker_t **results_p);
    int   (*done)(void *run);
    int   (*finish)(void *run);
    int   (*copy)(void *dst, const void *src, size_t len);
} perf_gpu_ops_t;

static struct {
    gda_ft_perf_test_t  test;
    gda_ft_perf_level_t level;
    uint32_t            size;
    uint32_t            iters;
    unsigned            nchan;
    unsigned            workers;
    uint32_t            window;
    int                 port;
    const char         *server;       /* client: the server's host */
    int                 use_gpu;      /* -1: auto */
    int                 gpu_index;    /* -1: the server 0, the client 1 */
    unsigned            fault_ms;     /* 0: no fault */
    const char         *fault_dev;
    double              timeout;
} opt = {GDA_FT_PERF_PUT_LAT, GDA_FT_PERF_LEVEL_THREAD, 8, 1000, 1, 1, 64,
         13338, NULL, -1, -1, 0, NULL, 30.0};

static const char *perf_test_names[] = {"put_lat", "put_bw", "signal_bw",
                                        "fadd_lat"};

typedef struct {
    ucp_context_h            context;
    ucp_worker_h             worker;
    ucp_ep_h                 ep;
    int                      sock;
    perf_layout_t            layout;
    gda_ft_ucp_place_t       place;
    gda_ft_ucp_signal_mem_t  region;
    uint8_t                 *host_region;  /* GPU runs: a host copy */
    ucp_rkey_h               peer_rkey;
    uint64_t                 peer_addr;
    gda_ft_ucp_device_ep_h   dev_ep;
    gda_ft_ucp_mem_list_h    ml;
    perf_gpu_ops_t           gpu;
} perf_t;


/* ---- helpers ------------------------------------------------------------- */

static void perf_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                          noreturn));
static void perf_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "gda_ft_perf: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void perf_check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        perf_die("%s: %s", what, ucs_status_string(status));
    }
}

static void perf_write_all(int fd, const void *buf, size_t len)
{
    if (gda_ft_prog_write_all(fd, buf, len) != 0) {
        perf_die("peer connection: write: %s", strerror(errno));
    }
}

static void perf_read_all(int fd, void *buf, size_t len)
{
    if (gda_ft_prog_read_all(fd, buf, len) != 0) {
        perf_die("peer connection closed");
    }
}

/* Sends a blob and receives the peer's, length first */
static void *perf_exchange(perf_t *p, const void *buf, uint32_t len,
                           uint32_t *peer_len_p)
{
    uint32_t peer_len;
    void *peer;

    perf_write_all(p->sock, &len, sizeof(len));
    perf_write_all(p->sock, buf, len);
    perf_read_all(p->sock, &peer_len, sizeof(peer_len));
    if (peer_len > (64u << 20)) {
        perf_die("peer sent a blob of %u bytes", peer_len);
    }
    peer = malloc(peer_len + 1);
    perf_read_all(p->sock, peer, peer_len);
    if (peer_len_p != NULL) {
        *peer_len_p = peer_len;
    }
    return peer;
}

/* Waits until fd is readable, progressing the worker (the guardian of the
 * device channels runs in it) */
static void perf_wait_peer(perf_t *p, double timeout_sec)
{
    struct pollfd pfd = {p->sock, POLLIN, 0};
    double deadline   = gda_ft_dev_now_ns() * 1e-9 + timeout_sec;

    while (poll(&pfd, 1, 0) == 0) {
        if (gda_ft_dev_now_ns() * 1e-9 > deadline) {
            perf_die("no word from the peer in %.0f s", timeout_sec);
        }
        if (ucp_worker_progress(p->worker) == 0) {
            usleep(10);
        }
    }
}

static void perf_barrier(perf_t *p)
{
    uint32_t token = 0x5a5a, peer;

    perf_write_all(p->sock, &token, sizeof(token));
    perf_wait_peer(p, opt.timeout * 4);
    perf_read_all(p->sock, &peer, sizeof(peer));
}

static uint8_t perf_pattern(size_t offset)
{
    return (uint8_t)((offset * 131) ^ (offset >> 11) ^ 0x5c);
}


/* ---- setup --------------------------------------------------------------- */

static void perf_connect_socket(perf_t *p)
{
    struct addrinfo hints = {0}, *res;
    struct sockaddr_in addr = {0};
    socklen_t addr_len      = sizeof(addr);
    double deadline = gda_ft_dev_now_ns() * 1e-9 + opt.timeout;
    int one = 1, lsock, ret;
    char port[16];

    if (opt.server != NULL) {
        hints.ai_family   = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        snprintf(port, sizeof(port), "%d", opt.port);
        ret = getaddrinfo(opt.server, port, &hints, &res);
        if (ret != 0) {
            perf_die("%s: %s", opt.server, gai_strerror(ret));
        }
        p->sock = socket(AF_INET, SOCK_STREAM, 0);
        while (connect(p->sock, res->ai_addr, res->ai_addrlen) != 0) {
            if ((errno != ECONNREFUSED) ||
                (gda_ft_dev_now_ns() * 1e-9 > deadline)) {
                perf_die("connect to %s:%d: %s", opt.server, opt.port,
                         strerror(errno));
            }
            usleep(100000);     /* the server is starting */
        }
        freeaddrinfo(res);
    } else {
        lsock = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        addr.sin_family      = AF_INET;
        addr.sin_port        = htons(opt.port);
        addr.sin_addr.s_addr = INADDR_ANY;
        if ((bind(lsock, (struct sockaddr*)&addr, sizeof(addr)) != 0) ||
            (listen(lsock, 1) != 0)) {
            perf_die("listen on port %d: %s", opt.port, strerror(errno));
        }
        /* port 0: the kernel's choice, which the client must be told */
        if (getsockname(lsock, (struct sockaddr*)&addr, &addr_len) != 0) {
            perf_die("listen on port %d: %s", opt.port, strerror(errno));
        }
        printf("Waiting for connection on port %d...\n",
               ntohs(addr.sin_port));
        fflush(stdout);
        p->sock = accept(lsock, NULL, NULL);
        close(lsock);
        if (p->sock < 0) {
            perf_die("accept: %s", strerror(errno));
        }
    }
    setsockopt(p->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The server runs the client's test: the client's options win */
static void perf_agree(perf_t *p)
{
    uint32_t o[7] = {opt.test, opt.level, opt.size, opt.iters, opt.nchan,
                     opt.workers, opt.window};

    if (opt.server != NULL) {
        perf_write_all(p->sock, o, sizeof(o));
        return;
    }
    perf_read_all(p->sock, o, sizeof(o));
    if ((o[0] >= GDA_FT_PERF_NUM_TESTS) || (o[1] > 1) || (o[2] == 0) ||
        (o[3] == 0) || (o[4] == 0) || (o[4] > PERF_MAX_CHANNELS) ||
        (o[5] == 0) || (o[5] > PERF_MAX_WORKERS) || (o[6] == 0)) {
        perf_die("the client sent options out of range");
    }
    opt.test    = o[0];
    opt.level   = o[1];
    opt.size    = o[2];
    opt.iters   = o[3];
    opt.nchan   = o[4];
    opt.workers = o[5];
    opt.window  = o[6];
}

static void perf_ucp_init(perf_t *p)
{
    ucp_worker_params_t wparams = {0};
    ucp_ep_params_t eparams     = {0};
    ucp_params_t params         = {0};
    ucp_address_t *addr;
    ucp_config_t *config;
    size_t addr_len;
    void *peer_addr;
    char chans[16];

    /* the device channels are the transport's: ask for them before UCX
     * reads its configuration */
    snprintf(chans, sizeof(chans), "%u", opt.nchan);
    setenv("UCX_GDA_FT_DEVICE_CHANNELS", chans, 0);
    if (p->place == GDA_FT_UCP_PLACE_HOST) {
        /* CPU threads ring the doorbell: the HCA need not watch */
        setenv("UCX_GDA_FT_DEVICE_CHANNEL_RINGS", "host", 0);
    }
    perf_check(ucp_config_read(NULL, NULL, &config), "ucp_config_read");
    if (getenv("UCX_TLS") == NULL) {
        ucp_config_modify(config, "TLS", "gda_ft,tcp");
    }
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    perf_check(ucp_init(&params, config, &p->context), "ucp_init");
    ucp_config_release(config);

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    perf_check(ucp_worker_create(p->context, &wparams, &p->worker),
               "ucp_worker_create");
    perf_check(ucp_worker_get_address(p->worker, &addr, &addr_len),
               "ucp_worker_get_address");
    peer_addr = perf_exchange(p, addr, addr_len, NULL);
    ucp_worker_release_address(p->worker, addr);

    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer_addr;
    perf_check(ucp_ep_create(p->worker, &eparams, &p->ep), "ucp_ep_create");
    free(peer_addr);
}

/* Both sides' lanes are connected once a flush of each completes */
static void perf_wireup(perf_t *p)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;
    ucs_status_t status;

    req = ucp_ep_flush_nbx(p->ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        do {
            ucp_worker_progress(p->worker);
            status = ucp_request_check_status(req);
        } while (status == UCS_INPROGRESS);
        ucp_request_free(req);
    } else {
        status = UCS_PTR_STATUS(req);
    }
    perf_check(status, "wireup flush");
    perf_barrier(p);
}

static void perf_layout(perf_layout_t *l)
{
    l->data    = (size_t)opt.workers * 4096 *
                 ((opt.size + 4095) / 4096) *
                 ((opt.level == GDA_FT_PERF_LEVEL_WARP) ?
                  GDA_FT_PERF_WARP_SIZE : 1) * 4;
    l->dst     = l->data;
    l->signals = 2 * l->data;
    l->counter = l->signals + PERF_SIGNAL_BYTES;
    l->results = l->counter + PERF_COUNTER_BYTES;
    l->total   = l->results + (size_t)opt.workers * opt.iters *
                 sizeof(uint64_t);
}

/* The region in host or GPU memory, the source filled with the pattern */
static void perf_region(perf_t *p)
{
    perf_layout_t *l = &p->layout;
    uint8_t *host;
    size_t i;

    perf_layout(l);
    perf_check(gda_ft_ucp_signal_alloc(p->context, l->total, p->place,
                                       &p->region), "region");
    host = calloc(1, l->total);
    for (i = 0; i < l->data; ++i) {
        host[i] = perf_pattern(i);
    }
    /* a fetch result slot that no reply reached keeps this */
    memset(host + l->results, 0xff, l->total - l->results);
    if (p->place == GDA_FT_UCP_PLACE_HOST) {
        memcpy(p->region.address, host, l->total);
        free(host);
    } else {
        if (p->gpu.copy(p->region.address, host, l->total) != 0) {
            perf_die("cannot fill the source in GPU memory");
        }
        p->host_region = host;
    }
}

static void perf_keys_and_lists(perf_t *p)
{
    gda_ft_ucp_mem_elem_t elems[GDA_FT_PERF_NUM_ELEMS];
    perf_layout_t *l = &p->layout;
    uint8_t *base    = p->region.address;
    uint64_t my_addr = (uintptr_t)base, *peer_addr;
    void *rkey_buf, *peer_rkey;
    size_t rkey_len;
    ucs_status_t status;

    perf_check(ucp_rkey_pack(p->context, p->region.memh, &rkey_buf,
                             &rkey_len), "ucp_rkey_pack");
    peer_rkey = perf_exchange(p, rkey_buf, rkey_len, NULL);
    ucp_rkey_buffer_release(rkey_buf);
    perf_check(ucp_ep_rkey_unpack(p->ep, peer_rkey, &p->peer_rkey),
               "ucp_ep_rkey_unpack");
    free(peer_rkey);
    peer_addr    = perf_exchange(p, &my_addr, sizeof(my_addr), NULL);
    p->peer_addr = *peer_addr;
    free(peer_addr);

    /* the channels come with the endpoint's wireup: progress until then */
    do {
        status = gda_ft_ucp_device_ep_create(p->ep, p->place, &p->dev_ep);
        ucp_worker_progress(p->worker);
    } while (status == UCS_ERR_NOT_CONNECTED);
    perf_check(status, "device endpoint");

    memset(elems, 0, sizeof(elems));
    elems[GDA_FT_PERF_ELEM_DATA].memh           = p->region.memh;
    elems[GDA_FT_PERF_ELEM_DATA].local_addr     = base;
    elems[GDA_FT_PERF_ELEM_DATA].length         = l->data;
    elems[GDA_FT_PERF_ELEM_DATA].rkey           = p->peer_rkey;
    elems[GDA_FT_PERF_ELEM_DATA].remote_addr    = p->peer_addr + l->dst;
    elems[GDA_FT_PERF_ELEM_SIGNAL].memh         = NULL;
    elems[GDA_FT_PERF_ELEM_SIGNAL].local_addr   = NULL;
    elems[GDA_FT_PERF_ELEM_SIGNAL].length       = PERF_SIGNAL_BYTES;
    elems[GDA_FT_PERF_ELEM_SIGNAL].rkey         = p->peer_rkey;
    elems[GDA_FT_PERF_ELEM_SIGNAL].remote_addr  = p->peer_addr + l->signals;
    elems[GDA_FT_PERF_ELEM_COUNTER].memh        = p->region.memh;
    elems[GDA_FT_PERF_ELEM_COUNTER].local_addr  = base + l->results;
    elems[GDA_FT_PERF_ELEM_COUNTER].length      = l->total - l->results;
    elems[GDA_FT_PERF_ELEM_COUNTER].rkey        = p->peer_rkey;
    elems[GDA_FT_PERF_ELEM_COUNTER].remote_addr = p->peer_addr + l->counter;
    perf_check(gda_ft_ucp_mem_list_create(p->ep, elems, GDA_FT_PERF_NUM_ELEMS,
                                          p->place, &p->ml), "memory list");
}


/* ---- the GPU runner ------------------------------------------------------ */

/* GDA_FT_PERF_GPU_LIB, else beside the program, else the installed one */
static void *perf_gpu_open(char *path, size_t max)
{
    void *handle;

    if (getenv("GDA_FT_PERF_GPU_LIB") != NULL) {
        snprintf(path, max, "%s", getenv("GDA_FT_PERF_GPU_LIB"));
        return dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    snprintf(path, max, "libgda_ft_perf_gpu.so");
    handle = gda_ft_prog_open_beside(path);
    if (handle == NULL) {
        snprintf(path, max, "%s/libgda_ft_perf_gpu.so", GDA_FT_PERF_LIBDIR);
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    return handle;
}

static int perf_gpu_load(perf_t *p)
{
    char path[PATH_MAX + 64];
    int (*available)(void), (*select)(unsigned);
    void *handle;
    int gpu;

    handle = perf_gpu_open(path, sizeof(path));
    if (handle == NULL) {
        if (opt.use_gpu == 1) {
            perf_die("--gpu: cannot load the GPU runner "
                     "libgda_ft_perf_gpu.so: %s", dlerror());
        }
        return 0;
    }
    *(void**)&available = dlsym(handle, "gda_ft_perf_gpu_available");
    if ((available == NULL) || !available()) {
        if (opt.use_gpu == 1) {
            perf_die("--gpu: no GPU found");
        }
        return 0;
    }
    /* one process per GPU, as the ranks of a job run: before anything of
     * CUDA, the device endpoint and the buffers go to this GPU */
    *(void**)&select = dlsym(handle, "gda_ft_perf_gpu_select");
    gpu = (select == NULL) ? -1 :
          select((opt.gpu_index >= 0) ? (unsigned)opt.gpu_index :
                 (opt.server != NULL));
    if (gpu < 0) {
        perf_die("cannot select the GPU");
    }
    fprintf(stderr, "gda_ft_perf: %s on GPU %d\n",
            (opt.server != NULL) ? "client" : "server", gpu);
    *(void**)&p->gpu.launch = dlsym(handle, "gda_ft_perf_gpu_launch");
    *(void**)&p->gpu.done   = dlsym(handle, "gda_ft_perf_gpu_done");
    *(void**)&p->gpu.finish = dlsym(handle, "gda_ft_perf_gpu_finish");
    *(void**)&p->gpu.copy   = dlsym(handle, "gda_ft_perf_gpu_copy");
    if ((p->gpu.launch == NULL) || (p->gpu.done == NULL) ||
        (p->gpu.finish == NULL) || (p->gpu.copy == NULL)) {
        perf_die("%s lacks the runner's entry points", path);
    }
    return 1;
}


/* ---- run ----------------------------------------------------------------- */

typedef struct {
    const gda_ft_perf_params_t *params;
    gda_ft_perf_worker_t       *result;
    unsigned                    worker;
} perf_cpu_worker_t;

static void *perf_cpu_worker(void *arg)
{
    perf_cpu_worker_t *w = arg;

    gda_ft_perf_worker_run(w->params, w->worker, w->result);
    return NULL;
}

/* Takes soft port 1 of dev up or down, in this process */
static void perf_port(const char *dev, int up)
{
    ucs_status_t status = gda_ft_prog_soft_port(dev, up);

    if (status == UCS_ERR_NO_DEVICE) {
        perf_die("--fault: %s is not a software HCA of this process", dev);
    }
    perf_check(status, "--fault: port state");
}

static const char *perf_fault_dev(char *buf, size_t max)
{
    const char *devs = getenv("UCX_GDA_FT_SOFT_DEVICES");
    size_t n;

    if (opt.fault_dev != NULL) {
        return opt.fault_dev;
    }
    if (devs == NULL) {
        perf_die("--fault needs software HCAs (UCX_GDA_FT_SOFT_DEVICES) "
                 "or --fault-dev");
    }
    n = strcspn(devs, "=,");
    snprintf(buf, max, "%.*s", (int)ucs_min(n, max - 1), devs);
    return buf;
}

typedef struct {
    uint64_t down_ns, up_ns;
} perf_fault_t;

/* Runs the workers while progressing UCP; the fault, when asked for */
static void perf_run(perf_t *p, const gda_ft_perf_params_t *params,
                     unsigned workers, gda_ft_perf_worker_t *results,
                     perf_fault_t *fault)
{
    perf_cpu_worker_t cw[PERF_MAX_WORKERS];
    pthread_t th[PERF_MAX_WORKERS];
    gda_ft_perf_worker_t *gpu_results = NULL;
    unsigned i, done;
    char devbuf[64];
    const char *dev = NULL;
    void *run       = NULL;

    if (opt.fault_ms && !params->server) {
        dev = perf_fault_dev(devbuf, sizeof(devbuf));
    }
    if (p->place == GDA_FT_UCP_PLACE_CUDA) {
        run = p->gpu.launch(params, workers, &gpu_results);
        if (run == NULL) {
            perf_die("the GPU runner could not launch the kernel");
        }
    } else {
        for (i = 0; i < workers; ++i) {
            cw[i].params = params;
            cw[i].result = &results[i];
            cw[i].worker = i;
            pthread_create(&th[i], NULL, perf_cpu_worker, &cw[i]);
        }
    }

    for (;;) {
        done = (run != NULL) ? p->gpu.done(run) : 1;
        for (i = 0; (run == NULL) && (i < workers); ++i) {
            done &= (__atomic_load_n(&results[i].end_ns, __ATOMIC_ACQUIRE)
                     != 0);
        }
        if (done) {
            break;
        }
        if ((dev != NULL) && (fault->down_ns == 0) &&
            (__atomic_load_n(&(run ? gpu_results : results)[0].iters_done,
                             __ATOMIC_RELAXED) >= opt.iters / 3)) {
            perf_port(dev, 0);
            fault->down_ns = gda_ft_dev_now_ns();
        }
        if ((fault->down_ns != 0) && (fault->up_ns == 0) &&
            (gda_ft_dev_now_ns() - fault->down_ns >
             opt.fault_ms * 1000000ull)) {
            perf_port(dev, 1);
            fault->up_ns = gda_ft_dev_now_ns();
        }
        if (ucp_worker_progress(p->worker) == 0) {
            sched_yield();  /* the posters and the HCA may need the CPU */
        }
    }

    if (run != NULL) {
        memcpy(results, gpu_results, workers * sizeof(*results));
        if (p->gpu.finish(run) != 0) {
            perf_die("the kernel failed");
        }
    } else {
        for (i = 0; i < workers; ++i) {
            pthread_join(th[i], NULL);
        }
    }
    if ((dev != NULL) && (fault->up_ns == 0)) {
        perf_port(dev, 1);      /* the run ended before the port came up */
        fault->up_ns = gda_ft_dev_now_ns();
    }
}


/* ---- checks and results -------------------------------------------------- */

static int perf_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

/* The region as it is now, in host memory */
static const uint8_t *perf_region_now(perf_t *p)
{
    if (p->place == GDA_FT_UCP_PLACE_HOST) {
        return p->region.address;
    }
    if (p->gpu.copy(p->host_region, p->region.address, p->layout.total) !=
        0) {
        perf_die("cannot read the region back from GPU memory");
    }
    return p->host_region;
}

/* The software HCA's engine of this process, where it runs one: where
 * its time went (GPU copies and waits, the longest pass) */
static void perf_print_engine(void)
{
    char stats[1024];

    if (gda_ft_prog_soft_engine_stats(stats, sizeof(stats)) == UCS_OK) {
        printf("%s\n", stats);
    }
}

/* Server: what the client's test left here */
static int perf_server_check(perf_t *p, uint64_t expected_total)
{
    const uint8_t *r = perf_region_now(p);
    const perf_layout_t *l = &p->layout;
    const uint64_t *signals = (const uint64_t*)(r + l->signals);
    uint64_t counter = *(const uint64_t*)(r + l->counter);
    gda_ft_perf_params_t pp = {0};
    unsigned w, lanes, bad = 0;
    uint64_t off, k, n, slots;

    pp.level        = opt.level;
    pp.size         = opt.size;
    pp.worker_bytes = l->data / opt.workers;
    lanes           = gda_ft_perf_lanes(&pp);
    switch (opt.test) {
    case GDA_FT_PERF_PUT_BW:
        /* every slot a put reached holds the source's bytes */
        slots = ucs_min((uint64_t)opt.iters * lanes,
                        pp.worker_bytes / opt.size);
        for (w = 0; w < opt.workers; ++w) {
            for (n = 0; n < slots; ++n) {
                off = w * pp.worker_bytes + n * opt.size;
                for (k = 0; k < opt.size; ++k) {
                    bad += (r[l->dst + off + k] != perf_pattern(off + k));
                }
            }
        }
        break;
    case GDA_FT_PERF_PUT_LAT:
        for (k = 0; k < opt.size; ++k) {
            bad += (r[l->dst + k] != perf_pattern(k));
        }
        bad += (signals[0] != opt.iters);
        break;
    case GDA_FT_PERF_SIGNAL_BW:
        for (w = 0; w < opt.workers; ++w) {
            bad += (signals[w] != (uint64_t)opt.iters * lanes);
        }
        break;
    default:
        bad += (counter != expected_total);
        break;
    }
    printf("check: %s (%u mismatches)\n", bad ? "FAILED" : "data exact",
           bad);
    return bad == 0;
}

/* Client: every fetch-add value once; the slots of those in doubt keep
 * their filler, and the server's counter counts them all */
static int perf_client_check(perf_t *p, unsigned in_doubt)
{
    const uint8_t *r = perf_region_now(p);
    uint64_t n = (uint64_t)opt.workers * opt.iters, i, bad = 0, unknown = 0;
    uint64_t *vals;

    if (opt.test != GDA_FT_PERF_FADD_LAT) {
        return 1;
    }
    vals = malloc(n * sizeof(*vals));
    for (i = 0; i < n; ++i) {
        vals[i] = gda_ft_ucp_fetched(p->dev_ep, r + p->layout.results +
                                     i * sizeof(uint64_t));
    }
    qsort(vals, n, sizeof(*vals), perf_u64_cmp);
    for (i = 0; i < n; ++i) {
        if (vals[i] == UINT64_MAX) {
            ++unknown;
        } else if ((vals[i] >= n) || ((i > 0) && (vals[i] == vals[i - 1]))) {
            ++bad;
        }
    }
    free(vals);
    bad += (unknown != in_doubt);
    printf("check: fetch-add values %s (%lu in doubt)\n",
           bad ? "REPEATED, OUT OF RANGE OR LOST" : "all distinct",
           (unsigned long)unknown);
    return bad == 0;
}

static void perf_report(perf_t *p, const gda_ft_perf_worker_t *res,
                        const perf_fault_t *fault)
{
    uint64_t start = UINT64_MAX, end = 0, lat_sum = 0;
    unsigned i, lanes = (opt.level == GDA_FT_PERF_LEVEL_WARP) ?
                        GDA_FT_PERF_WARP_SIZE : 1;
    double sec, ops, bytes;
    gda_ft_chan_query_t q;
    uint64_t recovered = 0, switch_ns = 0;
    unsigned switches = 0, failbacks = 0, replays = 0;

    for (i = 0; i < opt.workers; ++i) {
        start    = ucs_min(start, res[i].start_ns);
        end      = ucs_max(end, res[i].end_ns);
        lat_sum += res[i].lat_sum_ns;
    }
    sec   = (end - start) * 1e-9;
    ops   = (double)opt.workers * opt.iters *
            (((opt.test == GDA_FT_PERF_PUT_BW) ||
              (opt.test == GDA_FT_PERF_SIGNAL_BW)) ? lanes : 1);
    bytes = (opt.test == GDA_FT_PERF_PUT_BW) ? ops * opt.size : 0;

    printf("+--------------+--------------+----------+---------------------+"
           "-----------------------+\n");
    printf("|    Test      | # iterations | lat (us) |   bandwidth (MB/s)  |"
           "  message rate (msg/s) |\n");
    printf("+--------------+--------------+----------+---------------------+"
           "-----------------------+\n");
    printf("Final: %-12s %12u %10.3f %21.2f %23.0f\n",
           perf_test_names[opt.test], opt.iters,
           ((opt.test == GDA_FT_PERF_PUT_LAT) ||
            (opt.test == GDA_FT_PERF_FADD_LAT)) ?
           lat_sum / 1e3 / ((double)opt.iters *
                            ((opt.test == GDA_FT_PERF_FADD_LAT) ?
                             opt.workers : 1)) : 0.0,
           bytes / sec / 1e6, ops / sec);
    printf("       %s level, %u workers on %u channels, %u-byte puts, %s\n",
           (opt.level == GDA_FT_PERF_LEVEL_WARP) ? "warp" : "thread",
           opt.workers, opt.nchan, opt.size,
           (p->place == GDA_FT_UCP_PLACE_CUDA) ? "GPU kernel" :
                                                 "CPU threads");

    for (i = 0; i < opt.nchan; ++i) {
        if (gda_ft_ucp_device_ep_query(p->dev_ep, i, &q) != UCS_OK) {
            continue;
        }
        switches  += q.poster.switches;
        failbacks += q.poster.failbacks;
        replays   += q.poster.replays;
        if ((q.recovered_ns > q.switch_ns) &&
            ((recovered == 0) || (q.recovered_ns < recovered))) {
            recovered = q.recovered_ns;
            switch_ns = q.switch_ns;
        }
    }
    printf("paths: switches %u, replays %u, failbacks %u\n", switches,
           replays, failbacks);
    if (fault->down_ns != 0) {
        printf("fault: port down for %.1f ms", (fault->up_ns -
                                                 fault->down_ns) / 1e6);
        if (recovered != 0) {
            printf("; first completion on the backup %.2f ms after the "
                   "switch", (recovered - switch_ns) / 1e6);
            if (p->place == GDA_FT_UCP_PLACE_HOST) {
                printf(", %.2f ms after the port went down",
                       (recovered - fault->down_ns) / 1e6);
            }
        }
        printf("\n");
    }
}


/* ---- main ---------------------------------------------------------------- */

static void perf_usage(FILE *f)
{
    fprintf(f,
            "usage: gda_ft_perf [options] [SERVER_HOST]\n"
            "  -t TEST     put_lat | put_bw | signal_bw | fadd_lat "
            "(default put_lat)\n"
            "  -L LEVEL    thread | warp (default thread)\n"
            "  -s SIZE     bytes per put (default 8)\n"
            "  -n ITERS    iterations per worker (default 1000)\n"
            "  -c CHANNELS device channels, 1..64 (default 1)\n"
            "  -T WORKERS  threads, or warps at level warp (default 1)\n"
            "  -w WINDOW   quiet every WINDOW posts (default 64)\n"
            "  -p PORT     TCP port of the server (default 13338); the "
            "server takes\n"
            "              any free one with 0 and prints it\n"
            "  --gpu | --cpu   post from a kernel | from CPU threads "
            "(default: the GPU where one is found)\n"
            "  --gpu-index N   this process's GPU, mod the GPUs it sees "
            "(default: the server 0, the client 1)\n"
            "  --fault[=MS]    the client's primary port down for MS ms "
            "(default 2000) a third into the run\n"
            "  --fault-dev DEV software HCA to fail (default: the first of "
            "UCX_GDA_FT_SOFT_DEVICES)\n"
            "  --timeout SEC   bound of every wait (default 30)\n");
}

static unsigned perf_parse_enum(const char *arg, const char **names,
                                unsigned n, const char *what)
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        if (!strcmp(arg, names[i])) {
            return i;
        }
    }
    perf_usage(stderr);
    perf_die("unknown %s '%s'", what, arg);
}

static unsigned perf_parse_uint(const char *arg, unsigned min, unsigned max,
                                const char *what)
{
    unsigned value;

    if (gda_ft_prog_parse_uint(arg, min, max, &value) != 0) {
        perf_die("%s must be a number in [%u, %u], not '%s'", what, min, max,
                 arg);
    }
    return value;
}

static void perf_parse(int argc, char **argv)
{
    static const char *levels[] = {"thread", "warp"};
    static const struct option longopts[] = {
        {"gpu", no_argument, NULL, 'G'},
        {"cpu", no_argument, NULL, 'C'},
        {"fault", optional_argument, NULL, 'F'},
        {"fault-dev", required_argument, NULL, 'D'},
        {"timeout", required_argument, NULL, 'O'},
        {"gpu-index", required_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    int c;

    while ((c = getopt_long(argc, argv, "t:L:s:n:c:T:w:p:h", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 't': opt.test  = perf_parse_enum(optarg, perf_test_names,
                                              GDA_FT_PERF_NUM_TESTS, "test");
                  break;
        case 'L': opt.level = perf_parse_enum(optarg, levels, 2, "level");
                  break;
        case 's': opt.size    = perf_parse_uint(optarg, 1, 1u << 24, "-s");
                  break;
        case 'n': opt.iters   = perf_parse_uint(optarg, 1, 1u << 26, "-n");
                  break;
        case 'c': opt.nchan   = perf_parse_uint(optarg, 1, PERF_MAX_CHANNELS,
                                                "-c");
                  break;
        case 'T': opt.workers = perf_parse_uint(optarg, 1, PERF_MAX_WORKERS,
                                                "-T");
                  break;
        case 'w': opt.window  = perf_parse_uint(optarg, 1, 1u << 20, "-w");
                  break;
        case 'p': opt.port    = perf_parse_uint(optarg, 0, 65535, "-p");
                  break;
        case 'G': opt.use_gpu = 1; break;
        case 'C': opt.use_gpu = 0; break;
        case 'F': opt.fault_ms = optarg ?
                                 perf_parse_uint(optarg, 1, 600000,
                                                 "--fault") : 2000;
                  break;
        case 'D': opt.fault_dev = optarg; break;
        case 'O': opt.timeout   = perf_parse_uint(optarg, 1, 3600,
                                                  "--timeout");
                  break;
        case 'I': opt.gpu_index = (int)perf_parse_uint(optarg, 0, 1023,
                                                       "--gpu-index");
                  break;
        case 'h': perf_usage(stdout); exit(0);
        default:  perf_usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        opt.server = argv[optind++];
    }
    if (optind < argc) {
        perf_usage(stderr);
        perf_die("unexpected argument '%s'", argv[optind]);
    }
    if ((opt.server != NULL) && (opt.port == 0)) {
        perf_die("-p 0 is for the server: the client needs its port");
    }
}

int main(int argc, char **argv)
{
    gda_ft_perf_worker_t *results;
    gda_ft_perf_params_t params = {0};
    perf_fault_t fault          = {0, 0};
    unsigned i, in_doubt = 0;
    perf_t p;
    uint32_t peer_ok, ok;
    int server;

    perf_parse(argc, argv);
    server = (opt.server == NULL);
    memset(&p, 0, sizeof(p));
    p.place = GDA_FT_UCP_PLACE_HOST;
    if ((opt.use_gpu != 0) && perf_gpu_load(&p)) {
        p.place = GDA_FT_UCP_PLACE_CUDA;
    }

    perf_connect_socket(&p);
    perf_agree(&p);
    perf_ucp_init(&p);
    perf_wireup(&p);
    perf_region(&p);
    perf_keys_and_lists(&p);

    params.ep           = gda_ft_ucp_device_ep(p.dev_ep);
    params.ml           = gda_ft_ucp_mem_list(p.ml);
    params.signals      = (const uint64_t*)((uint8_t*)p.region.address +
                                            p.layout.signals);
    params.worker_bytes = p.layout.data / opt.workers;
    params.timeout_ns   = (uint64_t)(opt.timeout * 1e9);
    params.test         = opt.test;
    params.level        = opt.level;
    params.size         = opt.size;
    params.iters        = opt.iters;
    params.nchan        = opt.nchan;
    params.window       = opt.window;
    params.server       = server;
    results             = calloc(opt.workers, sizeof(*results));
    perf_barrier(&p);

    if (!server) {
        perf_run(&p, &params, opt.workers, results, &fault);
    } else if (opt.test == GDA_FT_PERF_PUT_LAT) {
        perf_run(&p, &params, 1, results, &fault);  /* the answers */
    }

    /* the client tells how it went; the server checks what arrived */
    ok = 1;
    if (!server) {
        for (i = 0; i < opt.workers; ++i) {
            if (results[i].status != GDA_FT_DEV_OK) {
                printf("worker %u failed: status %u\n", i,
                       results[i].status);
                ok = 0;
            }
            in_doubt += results[i].in_doubt;
        }
        ok = perf_client_check(&p, in_doubt) && ok;
        perf_report(&p, results, &fault);
    }
    perf_write_all(p.sock, &ok, sizeof(ok));
    perf_wait_peer(&p, opt.timeout * 4);
    perf_read_all(p.sock, &peer_ok, sizeof(peer_ok));
    if (server) {
        ok = peer_ok && perf_server_check(&p, (uint64_t)opt.workers *
                                              opt.iters);
        perf_write_all(p.sock, &ok, sizeof(ok));
    } else {
        perf_read_all(p.sock, &peer_ok, sizeof(peer_ok));
        ok = ok && peer_ok;
    }
    perf_print_engine();
    printf("RESULT %s\n", ok ? "PASS" : "FAIL");

    perf_barrier(&p);
    gda_ft_ucp_mem_list_destroy(p.ml);
    gda_ft_ucp_device_ep_destroy(p.dev_ep);
    ucp_rkey_destroy(p.peer_rkey);
    gda_ft_ucp_signal_free(p.context, &p.region);
    free(p.host_region);
    free(results);
    ucp_ep_destroy(p.ep);
    ucp_worker_destroy(p.worker);
    ucp_cleanup(p.context);
    close(p.sock);
    return ok ? 0 : 1;
}
