/*
 * gda_ft_ucp_failover: the client, which posts puts, gets, atomics and
 * active messages through the fault and keeps what it must expect.
 */
#include "gda_ft_ucp_failover.h"

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

int fo_client(void)
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
    double start, deadline, t_end, err_after = -1, ep_err_after = -1;
    double up_time = 0;
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
        if (opt.amo != AMO_NONE) {
            fo_client_amo(u, i);
        }
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
        double since = (fc.fault_at_time > 0) ? fc.fault_at_time : start;
        double first = 0;

        if (!u->ep_failed && (fc.first_err_at == 0)) {
            /* the error may still be on its way */
            deadline = since + opt.err_bound;
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
            err_after = first - since;
            if (u->ep_failed) {
                ep_err_after = u->ep_failed_at - since;
            }
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
               " err_after_ms=%.1f ep_err_after_ms=%.1f\n", opt.fault_at,
               (fc.first_ok_after > 0) ?
               (fc.first_ok_after - fc.fault_at_time) * 1e3 : -1.0,
               (err_after >= 0) ? err_after * 1e3 : -1.0,
               (ep_err_after >= 0) ? ep_err_after * 1e3 : -1.0);
    } else if (opt.mode == MODE_BOTH) {
        printf("[client] FAILOVER err_after_ms=%.1f ep_err_after_ms=%.1f\n",
               (err_after >= 0) ? err_after * 1e3 : -1.0,
               (ep_err_after >= 0) ? ep_err_after * 1e3 : -1.0);
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
