/*
 * Helpers shared by the soft HCA programs: endpoint, rendezvous, the
 * stream of checksummed writes and atomics, and its verification.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_tool.h"

#include <ucs/algorithm/crc.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GDA_FT_TOOL_SLOT_MAGIC 0x67646674534c4f54ull /* "gdftSLOT" */

/* Header of one checksummed write; the payload follows at offset 32 */
typedef struct gda_ft_tool_slot_hdr {
    uint64_t magic;
    uint64_t seq;
    uint32_t payload_len;
    uint32_t crc;           /* CRC32 of the payload */
    uint64_t reserved;
} gda_ft_tool_slot_hdr_t;

GDA_FT_STATIC_ASSERT(sizeof(gda_ft_tool_slot_hdr_t) == GDA_FT_TOOL_SLOT_HDR,
                     slot_header_size);


double gda_ft_tool_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + (ts.tv_nsec * 1e-9);
}

const char *gda_ft_tool_bytes_str(double bytes, char *buf, size_t max)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    unsigned i = 0;

    while ((bytes >= 1024.0) && (i < 4)) {
        bytes /= 1024.0;
        ++i;
    }
    snprintf(buf, max, (i == 0) ? "%.0f %s" : "%.1f %s", bytes, units[i]);
    return buf;
}


/* ---- endpoint ------------------------------------------------------------ */

ucs_status_t gda_ft_tool_open_dev(const char *spec, gda_ft_hca_dev_t **dev_p)
{
    char name[GDA_FT_HCA_NAME_MAX];
    const char *eq = strchr(spec, '=');
    ucs_status_t status;

    if ((eq == NULL) || (eq == spec) ||
        ((size_t)(eq - spec) >= sizeof(name))) {
        fprintf(stderr, "invalid device '%s': expected NAME=IP[:UDP_PORT]\n",
                spec);
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(name, spec, eq - spec);
    name[eq - spec] = '\0';

    setenv("UCX_GDA_FT_SOFT_DEVICES", spec, 1);
    status = gda_ft_soft_reload_config();
    if (status != UCS_OK) {
        fprintf(stderr, "soft HCA configuration: %s\n",
                ucs_status_string(status));
        return status;
    }

    status = gda_ft_hca_open(name, dev_p);
    if (status != UCS_OK) {
        fprintf(stderr, "cannot open soft HCA %s (%s): %s\n", name, eq + 1,
                ucs_status_string(status));
    }
    return status;
}

static void *gda_ft_tool_zalloc(size_t size)
{
    void *ptr = NULL;

    if (posix_memalign(&ptr, 4096, size) != 0) {
        return NULL;
    }
    memset(ptr, 0, size);
    return ptr;
}

ucs_status_t gda_ft_tool_ep_create(gda_ft_tool_ep_t *ep, gda_ft_hca_dev_t *dev,
                                   uint8_t port)
{
    gda_ft_hca_cq_attr_t cq_attr      = {0};
    gda_ft_hca_qp_init_attr_t qp_attr = {0};
    ucs_status_t status;

    memset(ep, 0, sizeof(*ep));
    ep->dev  = dev;
    ep->port = port;

    status = gda_ft_hca_pd_alloc(dev, &ep->pd);
    if (status != UCS_OK) {
        return status;
    }

    ep->scq_buf = gda_ft_tool_zalloc(GDA_FT_TOOL_CQ_SIZE *
                                     GDA_FT_MLX5_CQE_SIZE);
    ep->sq_buf  = gda_ft_tool_zalloc(GDA_FT_TOOL_SQ_SIZE * GDA_FT_MLX5_WQE_BB);
    ep->dbrec   = gda_ft_tool_zalloc(64);
    if ((ep->scq_buf == NULL) || (ep->sq_buf == NULL) || (ep->dbrec == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    gda_ft_cq_init_buf(ep->scq_buf, GDA_FT_TOOL_CQ_SIZE);
    gda_ft_dev_cq_init(&ep->dscq, ep->scq_buf, GDA_FT_TOOL_CQ_SIZE, 0);
    cq_attr.buf      = ep->scq_buf;
    cq_attr.cqe_cnt  = GDA_FT_TOOL_CQ_SIZE;
    cq_attr.mem_type = GDA_FT_HCA_MEM_HOST;
    status = gda_ft_hca_cq_create(dev, &cq_attr, &ep->scq);
    if (status != UCS_OK) {
        goto err_free;
    }

    qp_attr.send_cq      = ep->scq;
    qp_attr.sq_buf       = ep->sq_buf;
    qp_attr.sq_wqebb_cnt = GDA_FT_TOOL_SQ_SIZE;
    qp_attr.dbrec        = ep->dbrec;
    qp_attr.ring_mem     = GDA_FT_HCA_MEM_HOST;
    qp_attr.port_num     = port;
    status = gda_ft_hca_qp_create(ep->pd, &qp_attr, &ep->qp);
    if (status != UCS_OK) {
        goto err_cq;
    }

    gda_ft_dev_sq_init(&ep->sq, ep->sq_buf, GDA_FT_TOOL_SQ_SIZE, ep->qp->qpn,
                       ep->dbrec, ep->qp->uar, ep->qp->wake_fd,
                       ep->qp->wake_armed, dev->attr.max_inline);
    return UCS_OK;

err_cq:
    gda_ft_hca_cq_destroy(ep->scq);
err_free:
    free(ep->scq_buf);
    free(ep->sq_buf);
    free(ep->dbrec);
    gda_ft_hca_pd_free(ep->pd);
    return status;
}

void gda_ft_tool_ep_destroy(gda_ft_tool_ep_t *ep)
{
    gda_ft_hca_qp_destroy(ep->qp);
    gda_ft_hca_cq_destroy(ep->scq);
    gda_ft_hca_pd_free(ep->pd);
    free(ep->scq_buf);
    free(ep->sq_buf);
    free(ep->dbrec);
}

ucs_status_t gda_ft_tool_mr_reg(gda_ft_tool_ep_t *ep, void *buf, size_t len,
                                unsigned access, gda_ft_hca_mr_t **mr_p)
{
    gda_ft_hca_mr_attr_t attr = {buf, len, access, GDA_FT_HCA_MEM_HOST};

    return gda_ft_hca_mr_reg(ep->pd, &attr, mr_p);
}

gda_ft_dev_status_t gda_ft_tool_ep_poll(gda_ft_tool_ep_t *ep,
                                        gda_ft_dev_cqe_info_t *info)
{
    gda_ft_dev_status_t status = gda_ft_cq_poll_ring(&ep->dscq, info);

    if (status != GDA_FT_DEV_INPROGRESS) {
        gda_ft_sq_retire(&ep->sq, info->wqe_counter);
    }
    return status;
}

void gda_ft_tool_msg_set_ep(gda_ft_tool_msg_t *msg, gda_ft_tool_ep_t *ep)
{
    gda_ft_hca_port_attr_t attr;

    msg->qpn = ep->qp->qpn;
    if (gda_ft_hca_port_query(ep->dev, ep->port, &attr) == UCS_OK) {
        memcpy(msg->gid, attr.gid, GDA_FT_HCA_GID_LEN);
    }
}

ucs_status_t gda_ft_tool_ep_connect(gda_ft_tool_ep_t *ep,
                                    const gda_ft_tool_msg_t *peer,
                                    uint8_t timeout, uint8_t retry_cnt)
{
    gda_ft_hca_qp_attr_t attr = {0};

    attr.access             = GDA_FT_HCA_ACCESS_ALL;
    attr.dest_qpn           = peer->qpn;
    memcpy(attr.dest_gid, peer->gid, GDA_FT_HCA_GID_LEN);
    attr.rq_psn             = 0;
    attr.path_mtu           = 4096;
    attr.hop_limit          = 64;
    attr.min_rnr_timer      = 1;
    attr.max_dest_rd_atomic = 16;
    attr.sq_psn             = 0;
    attr.timeout            = timeout;
    attr.retry_cnt          = retry_cnt;
    attr.rnr_retry          = 7;
    attr.max_rd_atomic      = 16;
    return gda_ft_hca_qp_connect(ep->qp, &attr);
}


/* ---- rendezvous ---------------------------------------------------------- */

static int gda_ft_tool_unix_addr(const char *path, struct sockaddr_un *addr)
{
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(addr->sun_path)) {
        fprintf(stderr, "rendezvous path '%s' is too long (max %zu)\n", path,
                sizeof(addr->sun_path) - 1);
        return -1;
    }
    strcpy(addr->sun_path, path);
    return 0;
}

int gda_ft_tool_chan_listen(const char *path)
{
    struct sockaddr_un addr;
    int fd;

    if (gda_ft_tool_unix_addr(path, &addr) < 0) {
        return -1;
    }

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "socket(AF_UNIX): %s\n", strerror(errno));
        return -1;
    }

    unlink(path);
    if ((bind(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) ||
        (listen(fd, 1) < 0)) {
        fprintf(stderr, "rendezvous %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int gda_ft_tool_chan_accept(int listen_fd, double timeout)
{
    struct pollfd pfd = {listen_fd, POLLIN, 0};
    int ret, fd;

    ret = poll(&pfd, 1, (int)(timeout * 1000));
    if (ret <= 0) {
        fprintf(stderr, "no peer connected to the rendezvous within %.0f s\n",
                timeout);
        return -1;
    }

    fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "accept: %s\n", strerror(errno));
    }
    return fd;
}

int gda_ft_tool_chan_connect(const char *path, double timeout)
{
    double deadline = gda_ft_tool_now() + timeout;
    struct sockaddr_un addr;
    int fd;

    if (gda_ft_tool_unix_addr(path, &addr) < 0) {
        return -1;
    }

    for (;;) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            fprintf(stderr, "socket(AF_UNIX): %s\n", strerror(errno));
            return -1;
        }
        if (connect(fd, (struct sockaddr*)&addr, sizeof(addr)) == 0) {
            return fd;
        }
        close(fd);
        if (((errno != ENOENT) && (errno != ECONNREFUSED)) ||
            (gda_ft_tool_now() > deadline)) {
            fprintf(stderr, "cannot connect to the rendezvous %s: %s\n", path,
                    strerror(errno));
            return -1;
        }
        usleep(10000);
    }
}

ucs_status_t gda_ft_tool_msg_send(int fd, gda_ft_tool_msg_type_t type,
                                  gda_ft_tool_msg_t *msg)
{
    const uint8_t *p = (const uint8_t*)msg;
    size_t done      = 0;
    ssize_t ret;

    msg->magic = GDA_FT_TOOL_MSG_MAGIC;
    msg->type  = type;
    while (done < sizeof(*msg)) {
        ret = send(fd, p + done, sizeof(*msg) - done, MSG_NOSIGNAL);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            return UCS_ERR_IO_ERROR;
        }
        done += ret;
    }
    return UCS_OK;
}

ucs_status_t gda_ft_tool_msg_recv(int fd, gda_ft_tool_msg_t *msg,
                                  double timeout)
{
    double deadline = gda_ft_tool_now() + timeout;
    uint8_t *p      = (uint8_t*)msg;
    struct pollfd pfd;
    size_t done = 0;
    double left;
    ssize_t ret;

    while (done < sizeof(*msg)) {
        left    = deadline - gda_ft_tool_now();
        pfd.fd  = fd;
        pfd.events = POLLIN;
        ret     = poll(&pfd, 1, (left > 0) ? (int)(left * 1000) + 1 : 0);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            return UCS_ERR_IO_ERROR;
        }
        if (ret == 0) {
            if (done == 0) {
                return UCS_ERR_TIMED_OUT;
            }
            /* a message is half-way: it is small, the rest follows */
            deadline = gda_ft_tool_now() + 5.0;
            continue;
        }

        ret = recv(fd, p + done, sizeof(*msg) - done, 0);
        if (ret <= 0) {
            if ((ret < 0) && (errno == EINTR)) {
                continue;
            }
            return UCS_ERR_IO_ERROR;
        }
        done += ret;
    }

    return (msg->magic == GDA_FT_TOOL_MSG_MAGIC) ? UCS_OK : UCS_ERR_IO_ERROR;
}

ucs_status_t gda_ft_tool_msg_expect(int fd, gda_ft_tool_msg_type_t type,
                                    gda_ft_tool_msg_t *msg, double timeout)
{
    ucs_status_t status = gda_ft_tool_msg_recv(fd, msg, timeout);

    if (status == UCS_ERR_TIMED_OUT) {
        fprintf(stderr, "peer sent nothing within %.1f s\n", timeout);
    } else if (status != UCS_OK) {
        fprintf(stderr, "peer closed the rendezvous connection\n");
    } else if (msg->type != (uint32_t)type) {
        fprintf(stderr, "peer sent message %u, expected %u\n", msg->type,
                type);
        status = UCS_ERR_IO_ERROR;
    }
    return status;
}


/* ---- checksummed writes -------------------------------------------------- */

static uint64_t gda_ft_tool_mix(uint64_t x)
{
    /* splitmix64 finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void gda_ft_tool_pattern(uint8_t *dst, size_t len, uint64_t seq)
{
    uint64_t x = gda_ft_tool_mix(seq + 1), word;
    size_t i;

    for (i = 0; i + 8 <= len; i += 8) {
        word = x + i * 0x9e3779b97f4a7c15ull;
        memcpy(dst + i, &word, 8);
    }
    for (; i < len; ++i) {
        dst[i] = (uint8_t)(x >> (i & 7));
    }
}

void gda_ft_tool_slot_fill(void *slot, size_t slot_size, uint64_t seq)
{
    gda_ft_tool_slot_hdr_t *hdr = slot;
    uint8_t *payload            = (uint8_t*)slot + GDA_FT_TOOL_SLOT_HDR;
    size_t len                  = slot_size - GDA_FT_TOOL_SLOT_HDR;

    gda_ft_tool_pattern(payload, len, seq);
    hdr->magic       = GDA_FT_TOOL_SLOT_MAGIC;
    hdr->seq         = seq;
    hdr->payload_len = (uint32_t)len;
    hdr->crc         = ucs_crc32(0, payload, len);
    hdr->reserved    = 0;
}

int gda_ft_tool_slot_check(const void *slot, size_t slot_size, uint64_t seq)
{
    const gda_ft_tool_slot_hdr_t *hdr = slot;
    const uint8_t *payload = (const uint8_t*)slot + GDA_FT_TOOL_SLOT_HDR;
    size_t len             = slot_size - GDA_FT_TOOL_SLOT_HDR;
    uint64_t x             = gda_ft_tool_mix(seq + 1), word;
    size_t i;

    if ((hdr->magic != GDA_FT_TOOL_SLOT_MAGIC) || (hdr->seq != seq) ||
        (hdr->payload_len != len) || (ucs_crc32(0, payload, len) != hdr->crc)) {
        return 0;
    }

    /* the checksum could match a damaged copy of a damaged source: compare
     * with the pattern too */
    for (i = 0; i + 8 <= len; i += 8) {
        word = x + i * 0x9e3779b97f4a7c15ull;
        if (memcmp(payload + i, &word, 8)) {
            return 0;
        }
    }
    for (; i < len; ++i) {
        if (payload[i] != (uint8_t)(x >> (i & 7))) {
            return 0;
        }
    }
    return 1;
}


/* ---- the writer ---------------------------------------------------------- */

ucs_status_t gda_ft_tool_stream_init(gda_ft_tool_stream_t *s,
                                     gda_ft_tool_ep_t *ep,
                                     const gda_ft_tool_msg_t *peer,
                                     unsigned window, unsigned atomic_every)
{
    ucs_status_t status;

    memset(s, 0, sizeof(*s));
    if ((window == 0) || (window > GDA_FT_TOOL_MAX_WINDOW) ||
        (peer->nslots <= window) ||
        (peer->slot_size <= GDA_FT_TOOL_SLOT_HDR)) {
        fprintf(stderr, "stream: window %u must be within 1..%d and below "
                "the server's %lu slots of more than %d bytes\n", window,
                GDA_FT_TOOL_MAX_WINDOW, (unsigned long)peer->nslots,
                GDA_FT_TOOL_SLOT_HDR);
        return UCS_ERR_INVALID_PARAM;
    }

    s->ep           = ep;
    s->raddr        = peer->addr;
    s->rkey         = peer->rkey;
    s->nslots       = peer->nslots;
    s->slot_size    = peer->slot_size;
    s->counter_addr = peer->counter_addr;
    s->counter_rkey = peer->counter_rkey;
    s->window       = window;
    s->atomic_every = atomic_every;

    s->src   = gda_ft_tool_zalloc(window * s->slot_size);
    s->fetch = gda_ft_tool_zalloc(window * sizeof(uint64_t));
    if ((s->src == NULL) || (s->fetch == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    status = gda_ft_tool_mr_reg(ep, s->src, window * s->slot_size, 0,
                                &s->src_mr);
    if (status != UCS_OK) {
        goto err;
    }
    status = gda_ft_tool_mr_reg(ep, s->fetch, window * sizeof(uint64_t),
                                GDA_FT_HCA_ACCESS_LOCAL_WRITE, &s->fetch_mr);
    if (status != UCS_OK) {
        gda_ft_hca_mr_dereg(s->src_mr);
        goto err;
    }
    return UCS_OK;

err:
    free(s->src);
    free(s->fetch);
    return status;
}

void gda_ft_tool_stream_cleanup(gda_ft_tool_stream_t *s)
{
    gda_ft_hca_mr_dereg(s->src_mr);
    gda_ft_hca_mr_dereg(s->fetch_mr);
    free(s->src);
    free(s->fetch);
}

/* Posts the next operation into window entry `entry` */
static gda_ft_dev_status_t gda_ft_tool_stream_post(gda_ft_tool_stream_t *s,
                                                   gda_ft_tool_op_t *op,
                                                   unsigned entry)
{
    uint64_t nops  = s->posted_writes + s->posted_atomics;
    uint8_t *src   = s->src + (size_t)entry * s->slot_size;
    uint64_t *dst  = &s->fetch[entry];
    gda_ft_dev_status_t status;

    op->is_atomic = (s->atomic_every != 0) &&
                    ((nops % s->atomic_every) == s->atomic_every - 1);
    if (op->is_atomic) {
        op->seq = s->posted_atomics;
        *dst    = ~0ull;
        status  = gda_ft_sq_post_atomic_fa(&s->ep->sq, (uintptr_t)dst,
                                           s->fetch_mr->lkey, s->counter_addr,
                                           s->counter_rkey, 1,
                                           GDA_FT_WQE_SIGNALED, &op->wqe_idx);
        if (status == GDA_FT_DEV_OK) {
            ++s->posted_atomics;
        }
        return status;
    }

    op->seq = s->posted_writes;
    gda_ft_tool_slot_fill(src, s->slot_size, op->seq);
    status = gda_ft_sq_post_rdma_write(&s->ep->sq, (uintptr_t)src,
                                       s->src_mr->lkey, (uint32_t)s->slot_size,
                                       s->raddr + (op->seq % s->nslots) *
                                                  s->slot_size,
                                       s->rkey, GDA_FT_WQE_SIGNALED,
                                       &op->wqe_idx);
    if (status == GDA_FT_DEV_OK) {
        ++s->posted_writes;
    }
    return status;
}

static void gda_ft_tool_stream_complete(gda_ft_tool_stream_t *s,
                                        gda_ft_dev_status_t status,
                                        const gda_ft_dev_cqe_info_t *info)
{
    unsigned entry = (unsigned)(s->op_head % s->window);
    gda_ft_tool_op_t *op = &s->ops[entry];

    if ((s->op_head == s->op_tail) || (op->wqe_idx != info->wqe_counter)) {
        /* every operation is signalled: CQEs come one per WQE, in order */
        ++s->other_errors;
        return;
    }
    ++s->op_head;

    if (status == GDA_FT_DEV_OK) {
        s->last_ok_time = gda_ft_tool_now();
        if (s->failed) {
            ++s->other_errors;   /* success after an error: impossible */
        } else if (op->is_atomic) {
            if (gda_ft_be64toh(s->fetch[entry]) != op->seq) {
                ++s->fetch_mismatch;
            }
            ++s->completed_atomics;
        } else {
            ++s->completed_writes;
        }
        return;
    }

    if (!s->failed) {
        s->failed           = 1;
        s->first_error      = *info;
        s->first_error_time = gda_ft_tool_now();
    } else if (info->syndrome == GDA_FT_MLX5_SYND_WR_FLUSH_ERR) {
        ++s->flushed;
    } else {
        ++s->other_errors;
    }
}

unsigned gda_ft_tool_stream_progress(gda_ft_tool_stream_t *s, int post)
{
    gda_ft_dev_cqe_info_t info;
    gda_ft_dev_status_t status;
    unsigned count = 0, entry;

    while (post && !s->failed &&
           (gda_ft_tool_stream_inflight(s) < s->window)) {
        entry  = (unsigned)(s->op_tail % s->window);
        status = gda_ft_tool_stream_post(s, &s->ops[entry], entry);
        if (status != GDA_FT_DEV_OK) {
            break;    /* SQ full: retire first */
        }
        ++s->op_tail;
    }
    gda_ft_sq_ring_db(&s->ep->sq);

    while ((status = gda_ft_tool_ep_poll(s->ep, &info)) !=
           GDA_FT_DEV_INPROGRESS) {
        gda_ft_tool_stream_complete(s, status, &info);
        ++count;
    }
    return count;
}

ucs_status_t gda_ft_tool_stream_drain(gda_ft_tool_stream_t *s,
                                      double timeout)
{
    double deadline = gda_ft_tool_now() + timeout;

    while (gda_ft_tool_stream_inflight(s) > 0) {
        if (gda_ft_tool_stream_progress(s, 0) == 0) {
            if (gda_ft_tool_now() > deadline) {
                return UCS_ERR_TIMED_OUT;
            }
            usleep(50);
        }
    }
    return UCS_OK;
}


/* ---- server-side verification -------------------------------------------- */

static int gda_ft_tool_slot_is_zero(const uint8_t *slot, size_t size)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        if (slot[i] != 0) {
            return 0;
        }
    }
    return 1;
}

int gda_ft_tool_verify(const void *buf, size_t slot_size, uint64_t nslots,
                       uint64_t counter, const gda_ft_tool_msg_t *report,
                       gda_ft_tool_verify_t *result)
{
    uint64_t completed = report->arg[0], posted = report->arg[1];
    uint64_t atomics   = report->arg[2], atomics_posted = report->arg[3];
    const uint8_t *slot;
    uint64_t s, last_ok, failed_seq;
    int has_last_ok, touched;

    memset(result, 0, sizeof(*result));
    result->first_bad_slot = UINT64_MAX;

    if ((completed > posted) || (posted - completed >= nslots) ||
        (atomics > atomics_posted)) {
        result->slots_bad = nslots;   /* a report that cannot be true */
        return 0;
    }

    for (s = 0; s < nslots; ++s) {
        slot        = (const uint8_t*)buf + s * slot_size;
        has_last_ok = (completed > s);
        last_ok     = has_last_ok ?
                      s + ((completed - 1 - s) / nslots) * nslots : 0;
        /* first failed write that targets slot s */
        failed_seq  = completed + ((s + nslots - (completed % nslots)) %
                                   nslots);
        touched     = (failed_seq < posted);

        if (touched) {
            /* old content, new content, or part of the new content over
             * the old: RC promises nothing for a write that failed */
            ++result->slots_in_doubt;
        } else if (has_last_ok) {
            if (gda_ft_tool_slot_check(slot, slot_size, last_ok)) {
                ++result->writes_checked;
                result->bytes_checked += slot_size;
            } else {
                ++result->slots_bad;
            }
        } else if (gda_ft_tool_slot_is_zero(slot, slot_size)) {
            ++result->slots_empty;
        } else {
            ++result->slots_bad;  /* data where nothing was written */
        }

        if (result->slots_bad && (result->first_bad_slot == UINT64_MAX)) {
            result->first_bad_slot = s;
        }
    }

    /* Each completed fetch-add landed once; one that failed may have landed
     * (its acknowledgement lost with the port) or not */
    result->counter    = counter;
    result->counter_ok = (counter >= atomics) && (counter <= atomics_posted);
    result->atomics_in_doubt = result->counter_ok ? counter - atomics : 0;
    return (result->slots_bad == 0) && result->counter_ok;
}
