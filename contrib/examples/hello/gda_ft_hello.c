/*
 * gda_ft_hello: the smallest program on gda_ft's device API, built against
 * an installed gda_ft (docs/programming.md):
 *
 *   cc gda_ft_hello.c $(pkg-config --cflags --libs gda_ft) -o gda_ft_hello
 *   ./gda_ft_hello
 *
 * Two ranks (this process and a child), connected with UCP over
 * UCX_TLS=gda_ft. Rank 0 builds a device endpoint and a memory list from
 * its UCP endpoint and posts, from a CPU thread, a put of 256 bytes with a
 * signal behind it into rank 1's buffer, then a fetch-add on rank 1's
 * counter; rank 1 waits for the signal and checks the bytes. The same
 * calls run in a CUDA kernel with GDA_FT_UCP_PLACE_CUDA and GPU memory.
 *
 * Without ConnectX NICs each rank takes two software HCAs on loopback
 * addresses, unless UCX_GDA_FT_SOFT_DEVICES says otherwise.
 */
#include <gda_ft_ucp.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HELLO_BUF     4096
#define HELLO_LEN     256
#define HELLO_SIGNAL  1024   /* offset of rank 1's signal word */
#define HELLO_COUNTER 1032   /* offset of rank 1's counter */
#define HELLO_FETCHED 2048   /* offset of rank 0's fetched value */
#define HELLO_TIMEOUT 10000000000ull  /* ns */

typedef struct {
    int           fd;        /* to the other rank */
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    uint8_t      *buf;
    ucp_mem_h     memh;
} hello_rank_t;

static void hello_die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "gda_ft_hello: %s: %s\n", what,
            ucs_status_string(status));
    exit(1);
}

/* A message of the rendezvous: its length, then its bytes */
static void hello_send(int fd, const void *data, size_t len)
{
    uint64_t n = len;

    if ((write(fd, &n, sizeof(n)) != sizeof(n)) ||
        (write(fd, data, len) != (ssize_t)len)) {
        perror("gda_ft_hello: write");
        exit(1);
    }
}

static void *hello_recv(int fd)
{
    uint64_t n;
    uint8_t *data;
    size_t got;
    ssize_t ret;

    if (read(fd, &n, sizeof(n)) != sizeof(n)) {
        perror("gda_ft_hello: read");
        exit(1);
    }
    data = malloc(n + 1);
    for (got = 0; got < n; got += ret) {
        ret = read(fd, data + got, n - got);
        if (ret <= 0) {
            perror("gda_ft_hello: read");
            exit(1);
        }
    }
    return data;
}

/* port: the UDP port of both ranks' software HCAs (they send to it) */
static void hello_init(hello_rank_t *r, int rank, int port)
{
    ucp_params_t params               = {0};
    ucp_worker_params_t wparams       = {0};
    ucp_mem_map_params_t mparams      = {0};
    ucp_ep_params_t eparams           = {0};
    char devices[128];
    ucp_address_t *addr;
    void *peer_addr;
    size_t len;
    ucs_status_t status;

    if (getenv("UCX_GDA_FT_SOFT_DEVICES") == NULL) {
        snprintf(devices, sizeof(devices),
                 "h%da=127.0.%d.1:%d,h%db=127.0.%d.2:%d", rank, 60 + rank,
                 port, rank, 60 + rank, port);
        setenv("UCX_GDA_FT_SOFT_DEVICES", devices, 1);
    }
    setenv("UCX_TLS", "gda_ft", 0);
    /* the device endpoint takes its channels from the UCT endpoint: two */
    setenv("UCX_GDA_FT_DEVICE_CHANNELS", "2", 0);

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    status = ucp_init(&params, NULL, &r->context);
    if (status != UCS_OK) {
        hello_die("ucp_init", status);
    }
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(r->context, &wparams, &r->worker);
    if (status != UCS_OK) {
        hello_die("ucp_worker_create", status);
    }

    /* each rank's worker address to the other, and an endpoint to it */
    status = ucp_worker_get_address(r->worker, &addr, &len);
    if (status != UCS_OK) {
        hello_die("ucp_worker_get_address", status);
    }
    hello_send(r->fd, addr, len);
    ucp_worker_release_address(r->worker, addr);
    peer_addr          = hello_recv(r->fd);
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer_addr;
    status = ucp_ep_create(r->worker, &eparams, &r->ep);
    free(peer_addr);
    if (status != UCS_OK) {
        hello_die("ucp_ep_create", status);
    }

    r->buf             = calloc(1, HELLO_BUF);
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = r->buf;
    mparams.length     = HELLO_BUF;
    status = ucp_mem_map(r->context, &mparams, &r->memh);
    if (status != UCS_OK) {
        hello_die("ucp_mem_map", status);
    }
}

/* Waits for the other rank, progressing this one (its guardian runs in
 * ucp_worker_progress) */
static void hello_barrier(hello_rank_t *r)
{
    char byte = 0;

    hello_send(r->fd, &byte, 1);
    free(hello_recv(r->fd));
}

/* Flushes the endpoint: UCP's wireup with the peer ends first */
static void hello_flush(hello_rank_t *r)
{
    ucp_request_param_t param = {0};
    ucs_status_t status;
    void *req;

    req = ucp_ep_flush_nbx(r->ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(r->worker);
        }
        status = ucp_request_check_status(req);
        ucp_request_free(req);
    } else {
        status = UCS_PTR_STATUS(req);
    }
    if (status != UCS_OK) {
        hello_die("ucp_ep_flush_nbx", status);
    }
}

/* The end of a posted request: its status, once the channel has its
 * completion (or settled it through a failover) */
static gda_ft_dev_status_t hello_wait(hello_rank_t *r,
                                      gda_ft_dev_status_t posted,
                                      gda_ft_dev_request_t *req)
{
    gda_ft_dev_status_t st = posted;

    while (st == GDA_FT_DEV_OK) {
        st = gda_ft_dev_progress(req);
        if (st != GDA_FT_DEV_INPROGRESS) {
            break;
        }
        st = GDA_FT_DEV_OK;
        ucp_worker_progress(r->worker);
    }
    return st;
}

/* Rank 0: posts, from this thread, into rank 1's buffer */
static int hello_rank0(hello_rank_t *r)
{
    gda_ft_ucp_device_ep_attr_t attr;
    const gda_ft_dev_endpoint_t *dep;
    const gda_ft_dev_mem_list_t *dml;
    gda_ft_ucp_device_ep_h dev_ep;
    gda_ft_ucp_mem_elem_t elems[2];
    gda_ft_ucp_mem_list_h ml;
    gda_ft_dev_request_t req;
    gda_ft_dev_status_t st;
    uint64_t remote, fetched;
    ucp_rkey_h rkey;
    void *rkey_buf, *msg;
    ucs_status_t status;
    unsigned i;

    /* rank 1's buffer: its address, then its packed remote key */
    msg    = hello_recv(r->fd);
    remote = *(uint64_t*)msg;
    free(msg);
    rkey_buf = hello_recv(r->fd);
    status   = ucp_ep_rkey_unpack(r->ep, rkey_buf, &rkey);
    free(rkey_buf);
    if (status != UCS_OK) {
        hello_die("ucp_ep_rkey_unpack", status);
    }

    /* a device endpoint takes the channels of a wired-up endpoint, once
     * both ranks connected them (it progresses the worker meanwhile; rank
     * 1 progresses its own) */
    hello_flush(r);
    do {
        status = gda_ft_ucp_device_ep_create(r->ep, GDA_FT_UCP_PLACE_HOST,
                                             &dev_ep);
    } while (status == UCS_ERR_NOT_CONNECTED);
    if (status != UCS_OK) {
        hello_die("gda_ft_ucp_device_ep_create", status);
    }
    status = gda_ft_ucp_device_ep_attr(dev_ep, &attr);
    if (status != UCS_OK) {
        hello_die("gda_ft_ucp_device_ep_attr", status);
    }
    printf("rank 0: %u channels; primary path %s:%u, backup %s:%u\n",
           attr.num_channels, attr.path[0].device, attr.path[0].port,
           attr.path[1].device, attr.path[1].port);

    /* element 0: our [0, 256) to theirs; element 1: our fetched-value word
     * and their signal and counter words (8 bytes here, 16 there). Zeroed
     * first: a field left 0 takes its default */
    memset(elems, 0, sizeof(elems));
    elems[0].memh        = r->memh;
    elems[0].local_addr  = r->buf;
    elems[0].length      = HELLO_LEN;
    elems[0].rkey        = rkey;
    elems[0].remote_addr = remote;
    elems[1].memh        = r->memh;
    elems[1].local_addr  = r->buf + HELLO_FETCHED;
    elems[1].length        = 8;
    elems[1].rkey          = rkey;
    elems[1].remote_addr   = remote + HELLO_SIGNAL;
    elems[1].remote_length = 16;
    status = gda_ft_ucp_mem_list_create(r->ep, elems, 2,
                                        GDA_FT_UCP_PLACE_HOST, &ml);
    if (status != UCS_OK) {
        hello_die("gda_ft_ucp_mem_list_create", status);
    }
    dep = gda_ft_ucp_device_ep(dev_ep);
    dml = gda_ft_ucp_mem_list(ml);

    for (i = 0; i < HELLO_LEN; ++i) {
        r->buf[i] = (uint8_t)(i * 7 + 1);
    }
    /* the put, then +1 on the signal word behind it, on channel 0 */
    st = hello_wait(r, gda_ft_dev_put_signal(dep, dml, 0, 0, 0, HELLO_LEN,
                                             1, 0, 1, 0, &req), &req);
    printf("rank 0: put_signal: %s\n", (st == GDA_FT_DEV_OK) ? "OK" : "failed");

    /* +10 on their counter, its old value into our word */
    if (st == GDA_FT_DEV_OK) {
        st = hello_wait(r, gda_ft_dev_atomic_fetch_add(dep, dml, 1, 0, 8,
                                                       10, 0, &req), &req);
        fetched = gda_ft_ucp_fetched(dev_ep, r->buf + HELLO_FETCHED);
        printf("rank 0: fetch-add: %s, fetched %lu\n",
               (st == GDA_FT_DEV_OK) ? "OK" : "failed",
               (unsigned long)fetched);
        if (fetched != 0) {
            st = GDA_FT_DEV_ERROR;
        }
    }

    hello_barrier(r);
    gda_ft_ucp_mem_list_destroy(ml);
    gda_ft_ucp_device_ep_destroy(dev_ep);
    ucp_rkey_destroy(rkey);
    return (st == GDA_FT_DEV_OK) ? 0 : 1;
}

/* Waits, progressing, until the word a peer adds to reaches value; 0 after
 * HELLO_TIMEOUT (the peer failed) */
static int hello_wait_word(hello_rank_t *r, volatile uint64_t *word,
                           uint64_t value)
{
    struct timespec start, now;

    clock_gettime(CLOCK_MONOTONIC, &start);
    while (*word < value) {
        ucp_worker_progress(r->worker);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((uint64_t)(now.tv_sec - start.tv_sec) * 1000000000ull +
            (uint64_t)now.tv_nsec - (uint64_t)start.tv_nsec >
            HELLO_TIMEOUT) {
            fprintf(stderr, "gda_ft_hello: rank 1: nothing arrived\n");
            return 0;
        }
    }
    return 1;
}

/* Rank 1: hands out its buffer, waits for the signal, checks the bytes */
static int hello_rank1(hello_rank_t *r)
{
    volatile uint64_t *signal  = (uint64_t*)(r->buf + HELLO_SIGNAL);
    volatile uint64_t *counter = (uint64_t*)(r->buf + HELLO_COUNTER);
    uint64_t addr              = (uintptr_t)r->buf;
    void *rkey_buf;
    size_t rkey_len;
    ucs_status_t status;
    unsigned i, bad = 0;

    status = ucp_rkey_pack(r->context, r->memh, &rkey_buf, &rkey_len);
    if (status != UCS_OK) {
        hello_die("ucp_rkey_pack", status);
    }
    hello_send(r->fd, &addr, sizeof(addr));
    hello_send(r->fd, rkey_buf, rkey_len);
    ucp_rkey_buffer_release(rkey_buf);

    if (!hello_wait_word(r, signal, 1)) {
        return 1;
    }
    for (i = 0; i < HELLO_LEN; ++i) {
        bad += (r->buf[i] != (uint8_t)(i * 7 + 1));
    }
    if (!hello_wait_word(r, counter, 10)) {
        return 1;
    }
    printf("rank 1: signal %lu, %u of %u bytes differ, counter %lu\n",
           (unsigned long)*signal, bad, HELLO_LEN, (unsigned long)*counter);
    hello_barrier(r);
    return (bad == 0) && (*counter == 10) ? 0 : 1;
}

static void hello_fini(hello_rank_t *r)
{
    ucp_request_param_t param = {0};
    void *req;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(r->ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(r->worker);
        }
        ucp_request_free(req);
    }
    ucp_mem_unmap(r->context, r->memh);
    free(r->buf);
    ucp_worker_destroy(r->worker);
    ucp_cleanup(r->context);
}

int main(void)
{
    hello_rank_t r = {0};
    int port       = 47000 + (int)(getpid() % 10000);
    int sv[2], rank, rc, status;
    pid_t child;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("gda_ft_hello: socketpair");
        return 1;
    }
    child = fork();
    if (child < 0) {
        perror("gda_ft_hello: fork");
        return 1;
    }
    rank = (child == 0) ? 1 : 0;
    r.fd = sv[rank];
    close(sv[1 - rank]);

    hello_init(&r, rank, port);
    rc = (rank == 0) ? hello_rank0(&r) : hello_rank1(&r);
    hello_fini(&r);
    if (rank == 1) {
        return rc;
    }
    if ((waitpid(child, &status, 0) != child) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        rc = 1;
    }
    printf("RESULT %s\n", (rc == 0) ? "PASS" : "FAIL");
    return rc;
}
