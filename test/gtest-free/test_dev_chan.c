/*
 * The concurrent device channel (device/gda_ft_device_api.h) compiled for
 * the CPU: many pthreads posting puts, put_signals, signals and fetch-adds
 * into shared channels over software HCAs, with the target's primary port
 * failing and coming back, both ports failing, operations failing alone,
 * and long transfers on a short deadline. Every byte, signal and fetched
 * value is checked; slots must never be handed out twice and PSNs must
 * follow ring order. The same suite goes on in test_dev_chan_words.c (the
 * channel's words driven by hand), test_dev_chan_stall.c (silences that
 * are no failure) and test_dev_chan_failback.c (re-arm and failback).
 */
#include "chan_harness.h"
#include "chan_workers.h"
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

GDA_FT_TEST_TIMEOUT(dev_chan, many_threads_one_channel_no_fault, 120)
{
    chan_world_params_t params;
    chan_worker_t wk[8];
    pthread_t th[8];
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    workers_start(&w, wk, th, 8, 600);
    workers_join(th, 8);
    workers_verify(&w, wk, 8);
    chan_verify_psns(&w, 0);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, switches), 0);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, in_doubt), 0);
    chan_world_fini(&w);
}

/* What the query functions and `gda_ft_softctl counters` report for each
 * channel is what its posters and its guardian counted */
static void chan_check_counters(chan_world_t *w)
{
    char reply[4096], line[512], *at;
    gda_ft_chan_query_t q;
    uint64_t start;
    unsigned c;

    /* the guardian answers the last records (failbacks) on its own time */
    for (c = 0; c < w->params.nchan; ++c) {
        start = gda_ft_dev_now_ns();
        while ((__atomic_load_n(&w->a[c].mbox->ans_seq, __ATOMIC_ACQUIRE) !=
                w->a[c].mbox->req_seq) &&
               (gda_ft_dev_now_ns() - start < 2000000000ull)) {
            usleep(1000);
        }
    }
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_exec("counters", reply, sizeof(reply)));
    for (c = 0; c < w->params.nchan; ++c) {
        gda_ft_chan_host_query(&w->a[c], &w->chans[c], &q);
        GDA_FT_ASSERT_EQ(q.id, c);
        GDA_FT_ASSERT_EQ(memcmp(&q.poster, &w->chans[c].counters,
                                sizeof(q.poster)), 0);
        GDA_FT_ASSERT_EQ(q.active, GDA_FT_CHAN_PRIMARY);
        /* every switch left a record the guardian answered; each one
         * with atomics in flight (resolved) fenced the QP it left */
        GDA_FT_ASSERT_EQ(q.host.records,
                         q.poster.switches + q.poster.failbacks);
        GDA_FT_ASSERT_EQ(q.host.fences, q.poster.switches);
        GDA_FT_ASSERT(q.host.resolved >= q.poster.resolved);
        GDA_FT_ASSERT(q.host.rearms >= q.poster.failbacks);
        gda_ft_chan_query_format(&q, "chan_world ", line, sizeof(line));
        at = strstr(reply, line);
        if (at == NULL) {
            GDA_FT_FAIL("channel %u: '%s' not in the counters reply:\n%s",
                        c, line, reply);
        }
    }
    printf("%s", reply);
}


/* Eight threads on nchan channels, thread t through a poster when bit t
 * of posters is set: one side's primary port down and back mid-run */
static void primary_down_mid_run_and_back(unsigned nchan, unsigned posters)
{
    chan_world_params_t params;
    chan_worker_t wk[8];
    pthread_t th[8];
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan = nchan;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    workers_start_under_way(&w, wk, th, 8, 1200, posters);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    usleep(300000);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 1);
    workers_join(th, 8);
    chans_verify_failed_back(&w, wk, 8);
    printf("switches %u replays %u resolved %u confirmed %u in doubt %u "
           "failbacks %u\n", CHAN_WORLD_SUM(&w, switches),
           CHAN_WORLD_SUM(&w, replays), CHAN_WORLD_SUM(&w, resolved),
           CHAN_WORLD_SUM(&w, confirmed), CHAN_WORLD_SUM(&w, in_doubt),
           CHAN_WORLD_SUM(&w, failbacks));
    chan_check_counters(&w);
    chan_world_fini(&w);
}

GDA_FT_TEST_TIMEOUT(dev_chan, primary_down_mid_run_and_back, 180)
{
    primary_down_mid_run_and_back(4, 0);
}

/*
 * Posters (gda_ft_dev_poster_t) beside plain posts through a port failure
 * and its return: six channels, eight threads. Channels 2-5 have one
 * poster each (its memo holds between its posts, except across the
 * switches); channel 1 has two, and channel 0 a poster and a plain
 * poster, whose posts make each other's memos stale. Everything exact, no
 * slot twice, PSNs in ring order.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, posters_beside_plain_posts_through_failover,
                    180)
{
    primary_down_mid_run_and_back(6, 0xfe);
}


/* The same with an engine thread per soft HCA: the initiator's and the
 * target's devices are served at once, by threads that hand each other
 * datagrams and reach the same memory */
GDA_FT_TEST_TIMEOUT(dev_chan, primary_down_mid_run_and_back_thread_per_hca,
                    180)
{
    setenv("UCX_GDA_FT_SOFT_THREADS", "4", 1);
    primary_down_mid_run_and_back(4, 0);
}

GDA_FT_TEST_TIMEOUT(dev_chan, both_ports_down_no_path_before_the_hca_gives_up,
                    60)
{
    chan_world_params_t params;
    chan_worker_t wk[4];
    pthread_t th[4];
    chan_world_t w;
    uint64_t down_ns;
    unsigned t;

    chan_world_default_params(&params);
    /* the HCA retries for 8 x 268 ms = 2.1 s, 21 deadlines: NO_PATH must
     * come from the deadlines, not from the HCA giving up */
    params.timeout = 16;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    workers_start(&w, wk, th, 4, 1000000);
    usleep(20000);
    down_ns = gda_ft_dev_now_ns();
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    chan_world_port(&w, GDA_FT_CHAN_BACKUP, 0);
    workers_join(th, 4);
    for (t = 0; t < 4; ++t) {
        GDA_FT_ASSERT_EQ(wk[t].failure, GDA_FT_DEV_NO_PATH);
        printf("worker %u: NO_PATH after %.1f ms (deadline %.0f ms)\n", t,
               (wk[t].end_ns - down_ns) / 1e6, params.deadline_ns / 1e6);
        /* two deadlines by design; the bound is the HCA's retry window,
         * which a loaded machine can't reach by accident, not a multiple
         * of the deadline, which it can */
        GDA_FT_ASSERT(wk[t].end_ns - down_ns < 2100000000ull);
    }
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, no_path), params.nchan);
    chan_world_fini(&w);
}

/*
 * Both ports fail, and each channel ends NO_PATH with a put in flight.
 * When the backup's port comes back (the path the channels left last),
 * the host re-arms it and each channel takes it back; the put's request
 * still reports NO_PATH (its slot is written again from then on), and
 * posters run exactly on the backup, then through the primary's return
 * and the failback. Without the regain, a channel that lost both paths
 * stayed without one for good, links up or not.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, no_path_regains_a_path_that_comes_back, 120)
{
    chan_world_params_t params;
    gda_ft_dev_request_t req[2];
    chan_world_t w;
    unsigned c;

    chan_world_default_params(&params);
    params.timeout = 16;   /* NO_PATH from the deadlines, not the HCA */
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    chan_world_port(&w, GDA_FT_CHAN_BACKUP, 0);
    chans_put_each(&w, req, GDA_FT_DEV_NO_PATH);
    for (c = 0; c < params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(w.chans[c].state, GDA_FT_CHAN_NO_PATH);
    }

    chan_world_port(&w, GDA_FT_CHAN_BACKUP, 1);
    chans_wait_active_on(&w, GDA_FT_CHAN_BACKUP, 1);
    chans_verify_regained(&w, req);
    chan_world_fini(&w);
}

/* req failed with ERROR, and so does channel 0's next quiet, once */
static void chan_expect_failed_alone(chan_world_t *w,
                                     gda_ft_dev_request_t *req)
{
    GDA_FT_ASSERT_EQ(worker_wait(req), GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w->ep, 0, 1000000000ull),
                     GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w->ep, 0, 1000000000ull),
                     GDA_FT_DEV_OK);
}

GDA_FT_TEST_TIMEOUT(dev_chan, operation_error_fails_alone, 60)
{
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    gda_ft_chan_op_t op;
    chan_world_t w;
    unsigned round;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);

    /* two bad puts in a row: the second comes while the first's QP is
     * being re-armed, and must still fail alone */
    for (round = 0; round < 2; ++round) {
        GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w.ep, &w.ml, CHAN_ELEM_DATA,
                                               0, 0, 4096, 0, NULL),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT(gda_ft_dev_op_rdma(&op, GDA_FT_CHAN_OP_PUT, &w.ml,
                                         CHAN_ELEM_DATA, 4096, 4096, 64));
        op.rkey[0] ^= 0x5a5a;   /* bad on both paths */
        op.rkey[1] ^= 0x5a5a;
        GDA_FT_ASSERT_EQ(gda_ft_dev_post(&w.chans[0], &op, 1, &req),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w.ep, &w.ml, CHAN_ELEM_DATA,
                                               8192, 8192, 4096, 0, NULL),
                         GDA_FT_DEV_OK);
        chan_expect_failed_alone(&w, &req);
    }
    GDA_FT_ASSERT_MEM_EQ(w.dst, w.src, 4096);
    GDA_FT_ASSERT_MEM_EQ(w.dst + 8192, w.src + 8192, 4096);
    GDA_FT_ASSERT_EQ(w.dst[4096], 0);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.op_errors, 2);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.no_path, 0);
    chan_world_fini(&w);
}

/*
 * A long put or get is cut into chunks, and a put with signal is a put and
 * an atomic: one request, which reads the outcome of the last WQE. When an
 * earlier one fails alone (here the first chunk, whose remote range begins
 * before the target's region), the request reports the failure, and what
 * follows it does not run: the chunks after it and the signal. Reading
 * the last WQE's own outcome reported such a get OK without its first
 * chunk's bytes.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, failed_chunk_fails_its_whole_post, 60)
{
    static const uint8_t kinds[] = {GDA_FT_CHAN_OP_PUT, GDA_FT_CHAN_OP_GET,
                                    GDA_FT_CHAN_OP_PUT};
    const uint32_t chunk = 64 * 1024, len = 3 * chunk;
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    gda_ft_chan_op_t op[2];
    unsigned round, nops;
    uint8_t *zeros, *src;
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    GDA_FT_ASSERT_EQ(params.max_chunk, chunk);
    zeros = calloc(1, len);
    src   = malloc(len);
    GDA_FT_ASSERT((zeros != NULL) && (src != NULL));
    memcpy(src, w.src, len);
    memset(w.dst, 0, len);

    for (round = 0; round < 3; ++round) {
        /* the last round is a put with signal */
        nops = (round == 2) ? 2 : 1;
        GDA_FT_ASSERT(gda_ft_dev_op_rdma(&op[0], kinds[round], &w.ml,
                                         CHAN_ELEM_DATA, 0, 0, len));
        op[0].raddr -= 64;
        if (nops == 2) {
            GDA_FT_ASSERT(gda_ft_dev_op_signal(&op[1], &w.chans[0], &w.ml,
                                               CHAN_ELEM_SIGNAL, 0, 1));
        }
        GDA_FT_ASSERT_EQ(gda_ft_dev_post(&w.chans[0], op, nops, &req),
                         GDA_FT_DEV_OK);
        chan_expect_failed_alone(&w, &req);
        /* no chunk after the failed one ran, nor the signal */
        GDA_FT_ASSERT_MEM_EQ(w.dst, zeros, len);
        GDA_FT_ASSERT_MEM_EQ(w.src, src, len);
        GDA_FT_ASSERT_EQ(w.signals[0], 0);
    }
    GDA_FT_ASSERT_EQ(w.chans[0].counters.op_errors, 3);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.no_path, 0);
    free(src);
    free(zeros);
    chan_world_fini(&w);
}

/*
 * A transfer that outlasts the deadline on a healthy path: its signalled
 * chunks show progress, nothing switches. The port is paced so that each
 * 16 MiB put takes at least two deadlines on any machine (a fast one moved
 * it in 25 ms, under the 30 ms deadline, and the test proved nothing),
 * while a 64 KiB chunk takes an eighth of a deadline.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, long_transfers_on_short_deadline_no_switch, 120)
{
    gda_ft_soft_fault_t fault = {0};
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    uint64_t start, took, longest = 0;
    chan_world_t w;
    unsigned i;

    chan_world_default_params(&params);
    params.nchan       = 1;
    params.data_len    = 16 * 1024 * 1024 * chan_world_time_scale();
    params.deadline_ns = params.deadline_ns * 3 / 10;   /* 30 ms */
    params.timeout     = 18;   /* 1.07 s: packets queue for 2 deadlines */
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    fault.pace_time = 2.0 * params.deadline_ns /
                      (params.data_len / CHAN_WORLD_MTU) / 1e9;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[0], 1, &fault));

    for (i = 0; i < 4; ++i) {
        start = gda_ft_dev_now_ns();
        GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w.ep, &w.ml, CHAN_ELEM_DATA,
                                               0, 0, params.data_len, 0,
                                               &req),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
        took    = gda_ft_dev_now_ns() - start;
        longest = (took > longest) ? took : longest;
        printf("%zu MiB put: %.1f ms (deadline %.1f ms)\n",
               params.data_len >> 20, took / 1e6, params.deadline_ns / 1e6);
    }
    /* the pace's promise, checked */
    GDA_FT_ASSERT(longest > params.deadline_ns);
    GDA_FT_ASSERT_MEM_EQ(w.dst, w.src, params.data_len);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.switches, 0);
    chan_world_fini(&w);
}

/* Responses of the target's primary arrive late, not never: the fetch-add
 * outlives the deadline, the channel switches, and the late reply, which
 * comes within the host's grace period, completes it: not in doubt */
GDA_FT_TEST_TIMEOUT(dev_chan, late_atomic_reply_is_not_in_doubt, 60)
{
    gda_ft_soft_fault_t fault = {0};
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan    = 1;
    params.grace_ns = params.deadline_ns * 3;
    /* the HCA's own retry budget (268 ms x 7) outlasts the deadline, as
     * on hardware (about 30 s): the QP is still alive when the reply
     * comes, also with a sanitizer's time scale */
    params.timeout  = 16;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);

    /* every packet the target's primary sends waits 1.5 deadlines */
    fault.delay      = 1.0;
    fault.delay_time = params.deadline_ns * 1.5 / 1e9;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[2], 1, &fault));
    GDA_FT_ASSERT_EQ(gda_ft_dev_atomic_fetch_add(&w.ep, &w.ml,
                                                 CHAN_ELEM_COUNTER, 0, 0, 5,
                                                 0, &req),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_dev_fetched(&w.ep, w.results), 0);
    GDA_FT_ASSERT_EQ(w.counters[0], 5);

    /* it was late enough to switch, and nothing was lost or doubled */
    worker_settle(&w.chans[0]);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.switches, 1);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.in_doubt, 0);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.replays, 0);

    /* and the channel goes on, on the backup */
    fault.delay = 0;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[2], 1, &fault));
    GDA_FT_ASSERT_EQ(gda_ft_dev_atomic_fetch_add(&w.ep, &w.ml,
                                                 CHAN_ELEM_COUNTER, 8, 0, 1,
                                                 0, &req),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_dev_fetched(&w.ep, (uint8_t*)w.results + 8), 5);
    GDA_FT_ASSERT_EQ(w.counters[0], 6);
    chan_world_fini(&w);
}

/*
 * An HCA that writes 8-byte fetched values in host byte order (a ConnectX
 * in the mode mlx5_core selects where it can; the soft HCA with
 * ATOMIC_HOST_ORDER) and one that writes them big-endian: the device
 * endpoint says which, and gda_ft_dev_fetched() reads both right, on
 * either path. Values above 255 tell the orders apart.
 */
static void chan_fetched_in_order(int host_order)
{
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    chan_world_t w;
    unsigned path;

    setenv("UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER", host_order ? "y" : "n", 1);
    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    unsetenv("UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER");
    GDA_FT_ASSERT_EQ(!!(w.ep.flags & GDA_FT_DEV_EP_F_FETCH_HOST_ORDER),
                     host_order);
    chan_world_guard_start(&w);
    w.counters[0] = 0x0102030405060708ull;

    for (path = 0; path < 2; ++path) {
        if (path == 1) {
            chan_world_port(&w, 0, 0);   /* the rest on the backup */
        }
        GDA_FT_ASSERT_EQ(gda_ft_dev_atomic_fetch_add(&w.ep, &w.ml,
                                                     CHAN_ELEM_COUNTER,
                                                     8 * path, 0, 0x1000,
                                                     0, &req),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(gda_ft_dev_fetched(&w.ep,
                                            (uint8_t*)w.results + 8 * path),
                         0x0102030405060708ull + 0x1000 * path);
    }
    GDA_FT_ASSERT_EQ(w.counters[0], 0x0102030405060708ull + 0x2000);
    GDA_FT_ASSERT(CHAN_WORLD_SUM(&w, switches) >= 1);
    chan_world_fini(&w);
}

GDA_FT_TEST_TIMEOUT(dev_chan, fetched_values_in_either_byte_order, 60)
{
    chan_fetched_in_order(0);
    chan_fetched_in_order(1);
}

/*
 * A non-fetching atomic OR sets the bits of its value and leaves the rest,
 * on the primary and, once its port is down, through the switch on the
 * backup; the local result area is not written (the old value goes to
 * the channel's scratch word), and a misaligned word is refused.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, atomic_or_sets_bits_without_fetching, 60)
{
    static const uint64_t bits[] = {0x00f0, 0x0f00, 0x00ff, 0};
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    uint64_t expect = 0x8000000000000001ull;
    chan_world_t w;
    unsigned i;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    w.counters[1] = expect;
    w.results[0]  = 0x5a5a;

    for (i = 0; i < sizeof(bits) / sizeof(bits[0]); ++i) {
        if (i == 2) {
            chan_world_port(&w, 0, 0);   /* the rest on the backup */
        }
        GDA_FT_ASSERT_EQ(gda_ft_dev_atomic_or(&w.ep, &w.ml, CHAN_ELEM_COUNTER,
                                              8, bits[i], 0, &req),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
        expect |= bits[i];
        GDA_FT_ASSERT_EQ(w.counters[1], expect);
    }
    GDA_FT_ASSERT_EQ(w.counters[1], 0x8000000000000fffull);
    GDA_FT_ASSERT_EQ(w.counters[0], 0);
    GDA_FT_ASSERT_EQ(w.results[0], 0x5a5a);
    GDA_FT_ASSERT(CHAN_WORLD_SUM(&w, switches) >= 1);
    GDA_FT_ASSERT_EQ(gda_ft_dev_atomic_or(&w.ep, &w.ml, CHAN_ELEM_COUNTER, 4,
                                          1, 0, &req), GDA_FT_DEV_ERROR);
    chan_world_fini(&w);
}

/*
 * A backup that serves the replay late is not dead. The primary's far port
 * goes down; every packet the backup sends waits 1.5 deadlines, so the
 * replay's first completion comes 1.5 deadlines after its doorbell. Judged
 * at one deadline, the backup would be declared dead too, and with the
 * primary's port down the channel would have no path. A replay onto a
 * path whose ports are up gets a second deadline: the put completes.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, slow_backup_serves_the_replay, 60)
{
    gda_ft_soft_fault_t fault = {0};
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan   = 1;
    params.timeout = 16;   /* 268 ms x 7: the HCA outwaits the delay */
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);

    fault.delay      = 1.0;
    fault.delay_time = params.deadline_ns * 1.5 / 1e9;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[1], 1, &fault));
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w.ep, &w.ml, CHAN_ELEM_DATA, 0, 0,
                                           4096, 0, &req),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_MEM_EQ(w.dst, w.src, 4096);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.switches, 1);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.no_path, 0);
    chan_world_fini(&w);
}


/* The pace is checked like every fault setting */
GDA_FT_TEST(dev_chan, pace_out_of_range_is_rejected)
{
    gda_ft_soft_fault_t fault = {0};
    chan_world_params_t params;
    chan_world_t w;

    chan_world_default_params(&params);
    chan_world_init(&w, &params);
    fault.pace_time = -0.001;
    GDA_FT_ASSERT_EQ(soft_port_set_fault(w.dev[2], 1, &fault),
                     UCS_ERR_INVALID_PARAM);
    fault.pace_time = 0.5;
    GDA_FT_ASSERT_EQ(soft_port_set_fault(w.dev[2], 1, &fault),
                     UCS_ERR_INVALID_PARAM);
    chan_world_fini(&w);
}

/* A channel counts packets with a shift: a path MTU that is not a power of
 * two in [256, 4096] is refused before the QP is touched */
GDA_FT_TEST(dev_chan, path_mtu_not_a_power_of_two_is_rejected)
{
    static const uint32_t bad[] = {0, 128, 1000, 3072, 8192};
    gda_ft_hca_qp_attr_t attr   = {0};
    chan_world_params_t params;
    chan_world_t w;
    unsigned i;

    chan_world_default_params(&params);
    chan_world_init(&w, &params);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        attr.path_mtu = bad[i];
        GDA_FT_ASSERT_EQ(gda_ft_chan_host_connect(&w.a[0], 0, &attr),
                         UCS_ERR_INVALID_PARAM);
    }
    GDA_FT_ASSERT_EQ(w.chans[0].mtu, CHAN_WORLD_MTU);
    chan_world_fini(&w);
}
