/*
 * gda_ft_ucp_failover: the server, which owns the region, injects the
 * faults and checks every byte and the counter at the end.
 */
#include "gda_ft_ucp_failover.h"

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

int fo_server(void)
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
