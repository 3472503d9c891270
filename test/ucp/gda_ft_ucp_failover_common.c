/*
 * gda_ft_ucp_failover: options, helpers, the region's layout, the control
 * socket and UCP setup, for both roles (gda_ft_ucp_failover.h).
 */
#include "gda_ft_ucp_failover.h"

const char *fo_mode_names[] = {"none", "down", "updown", "both"};

const char *fo_fault_via_names[] = {"ctl", "softctl", "env"};

const char *fo_amo_names[] = {"fetch", "post", "mixed", "none"};

fo_opt_t opt = {
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

const char *fo_self = "launcher";

/* ---- small helpers ------------------------------------------------------- */

double fo_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void fo_log(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    printf("[%s] %s\n", fo_self, buf);
    fflush(stdout);
}

void fo_die(const char *fmt, ...)
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

uint64_t fo_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

const size_t fo_all_sizes[] = {
    1, 2, 7, 8, 31, 32, 33, 64, 127, 128, 129, 255, 1000, 2048, 4095, 4096,
    4097, 8191, 8192, 8193, 16384, 65535, 65536, 100000, 262144,
    1048575, 1048576, 1048577, (2u << 20) + 3, 3u << 20
};

void fo_layout_init(fo_layout_t *l, size_t max_size)
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

uint64_t fo_checksum(const uint8_t *p, size_t len)
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

void fo_fill(uint8_t *p, size_t size, unsigned slot, uint64_t gen)
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

void fo_write_all(int fd, const void *buf, size_t len)
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

void fo_send(int fd, uint32_t type, const void *p1, size_t l1,
             const void *p2, size_t l2, const void *p3, size_t l3)
{
    fo_msg_hdr_t hdr = {type, (uint32_t)(l1 + l2 + l3)};

    fo_write_all(fd, &hdr, sizeof(hdr));
    if (l1) fo_write_all(fd, p1, l1);
    if (l2) fo_write_all(fd, p2, l2);
    if (l3) fo_write_all(fd, p3, l3);
}

int fo_read_all(int fd, void *buf, size_t len)
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

void *fo_recv(int fd, uint32_t *type, uint32_t *len)
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

void fo_wait_readable(int fd, ucp_worker_h worker, double timeout,
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

/* Message of an iteration: short (one am_short), bcopy (eager, one
 * fragment), rendezvous */
const size_t fo_am_sizes[] = {16, 4000, 256 * 1024};

size_t fo_am_size(uint64_t iter)
{
    return fo_am_sizes[iter % 3];
}

uint32_t fo_am_flags(uint64_t iter)
{
    return ((iter % 3) == 2) ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER;
}

fo_ucp_t fo_ucp;

void fo_ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    fo_ucp_t *u = arg;

    if (!u->ep_failed) {
        u->ep_failed    = 1;
        u->ep_status    = status;
        u->ep_failed_at = fo_now();
    }
    fo_log("endpoint error handler: %s", ucs_status_string(status));
}

void fo_ucp_init(fo_ucp_t *u)
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

void fo_ucp_connect(fo_ucp_t *u, const void *peer_addr)
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

ucs_status_t fo_wait_req(ucp_worker_h worker, void *req, double timeout)
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

void fo_ucp_close(fo_ucp_t *u, int force)
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

/* The soft HCA's control commands (port up/down) */
fo_ctl_exec_t fo_ctl_exec_func(void)
{
    return (fo_ctl_exec_t)dlsym(RTLD_DEFAULT, "gda_ft_soft_ctl_exec");
}

/* The transport's counters, as its control socket gives them */
void fo_print_counters(void)
{
    fo_ctl_exec_t exec = (fo_ctl_exec_t)dlsym(RTLD_DEFAULT,
                                              "uct_gda_ft_ctl_exec");
    char reply[8192], *line, *save = NULL;
    ucs_status_t status;

    if (exec == NULL) {
        fo_log("counters: unavailable (uct_gda_ft_ctl_exec not found: "
               "is the plugin preloaded?)");
        return;
    }
    reply[0] = '\0';
    status   = exec("counters", reply, sizeof(reply));
    if (status != UCS_OK) {
        fo_log("counters: unavailable (the transport's 'counters' control "
               "command: %s)", ucs_status_string(status));
        return;
    }
    for (line = strtok_r(reply, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        fo_log("counters: %s", line);
    }
}
