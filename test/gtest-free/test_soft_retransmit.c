/*
 * Software HCA conformance (suite soft_errors, as test_soft_errors.c):
 * retransmission, link flaps within and beyond the retry window, port
 * events, and drops, delays and reorders that lose nothing and apply an
 * atomic once.
 */
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>


GDA_FT_TEST(soft_errors, retry_exceeded_after_port_down_in_time)
{
    soft_conn_params_t params = soft_default_params;
    uint8_t src[4096], dst[4096];
    gda_ft_hca_mr_t *smr, *dmr;
    double start, elapsed, expected;
    soft_pair_t p;
    uint16_t idx;

    /* timeout 12: 16.8 ms per try; 3 retries: 4 tries in all */
    params.timeout   = 12;
    params.retry_cnt = 3;
    expected         = 4 * 4.096e-6 * (1 << 12);
    soft_pair_init(&p, NULL, &params);
    smr = soft_mr(&p.a, src, sizeof(src), 0);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);

    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(p.dev1, 1, 0));
    start = soft_now_sec();
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                               smr->lkey, sizeof(src),
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    soft_expect_error(&p.a, idx, GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
    elapsed = soft_now_sec() - start;
    printf("retry exceeded after %.1f ms (expected %.1f ms)\n", elapsed * 1e3,
           expected * 1e3);
    /* never early; late only by scheduling noise (a loaded 2-core
     * machine can delay the engine thread by a good fraction of a second) */
    GDA_FT_ASSERT(elapsed >= expected * 0.95);
    GDA_FT_ASSERT(elapsed <= expected + 1.0);
    GDA_FT_ASSERT_EQ(soft_port_stats(p.dev0, 1).retransmits, 4);
    soft_expect_flush_of_later(&p, src, smr->lkey, dst, dmr->rkey, 4);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, flap_shorter_than_retry_window_loses_nothing)
{
    size_t len = 1 << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;
    unsigned i;

    /* retry window: 8 tries of 16.8 ms = 134 ms; the flap lasts 40 ms */
    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, len, 5);
    smr = soft_mr(&p.a, src, len, 0);
    dmr = soft_mr(&p.b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    for (i = 0; i < 16; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq,
                                                   (uintptr_t)src + i * 65536,
                                                   smr->lkey, 65536,
                                                   (uintptr_t)dst + i * 65536,
                                                   dmr->rkey,
                                                   GDA_FT_WQE_SIGNALED, &idx),
                         GDA_FT_DEV_OK);
        if (i == 4) {
            soft_ep_ring(&p.a);
            GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(p.dev1, 1, 0));
        }
    }
    soft_ep_ring(&p.a);
    usleep(40000);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(p.dev1, 1, 1));
    for (i = 0; i < 16; ++i) {
        soft_ep_wait_send(&p.a, &info, 5000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    }
    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    GDA_FT_ASSERT(soft_port_stats(p.dev0, 1).retransmits >= 1);
    GDA_FT_ASSERT_EQ(p.a.qp->state, GDA_FT_HCA_QP_RTS);
    free(src);
    free(dst);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, port_events_and_state)
{
    gda_ft_hca_port_attr_t attr;
    gda_ft_hca_event_t event;
    gda_ft_hca_dev_t *dev;

    soft_test_env(1, NULL);
    dev = soft_open("tsoft0");
    GDA_FT_ASSERT_EQ(gda_ft_hca_get_event(dev, &event), UCS_ERR_NO_ELEM);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(dev, 1, 0));
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(dev, 1, &attr));
    GDA_FT_ASSERT_EQ(attr.state, GDA_FT_HCA_PORT_DOWN);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(dev, &event));
    GDA_FT_ASSERT_EQ(event.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(event.port_num, 1);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(dev, 1, 1));
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(dev, 1, &attr));
    GDA_FT_ASSERT_EQ(attr.state, GDA_FT_HCA_PORT_ACTIVE);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(dev, &event));
    GDA_FT_ASSERT_EQ(event.type, GDA_FT_HCA_EVENT_PORT_ACTIVE);
    GDA_FT_ASSERT_EQ(gda_ft_hca_get_event(dev, &event), UCS_ERR_NO_ELEM);
    GDA_FT_ASSERT_EQ(gda_ft_soft_port_set_up(dev, 2, 0),
                     UCS_ERR_INVALID_PARAM);
    gda_ft_hca_close(dev);
}

GDA_FT_TEST(soft_errors, lost_atomic_ack_applied_once)
{
    uint64_t *remote = aligned_alloc(64, 64), *result = aligned_alloc(64, 64);
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_mr_t *rmr, *lmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    remote[0] = 100;
    rmr = soft_mr(&p.b, remote, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);
    lmr = soft_mr(&p.a, result, 64, GDA_FT_HCA_ACCESS_LOCAL_WRITE);

    /* The request lands, the response is lost: the requester retransmits
     * and the responder answers from its cache without adding again */
    fault.ack_drop = 1.0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(&p.a.sq, (uintptr_t)result,
                                              lmr->lkey, (uintptr_t)remote,
                                              rmr->rkey, 7,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    usleep(40000);   /* two retransmissions of 16.8 ms */
    GDA_FT_ASSERT_EQ(remote[0], 107);
    fault.ack_drop = 0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));
    soft_ep_wait_send(&p.a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    GDA_FT_ASSERT_EQ(remote[0], 107);
    GDA_FT_ASSERT_EQ(be64toh(result[0]), 100);
    GDA_FT_ASSERT(soft_port_stats(p.dev1, 1).rx_duplicate >= 1);
    soft_pair_fini(&p);
    free(remote);
    free(result);
}

/*
 * UCX_GDA_FT_SOFT_ACK_DROP loses a fraction of the responses only: writes,
 * reads and atomics land once and complete, the requester retransmits what
 * it heard nothing of, and the responder answers its duplicates; the
 * requester's port (which sends requests only) drops nothing.
 */
GDA_FT_TEST(soft_errors, ack_drop_setting_loses_responses_only)
{
    size_t len = 256 << 10, chunk = len / 8;
    uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
    uint64_t *counter = aligned_alloc(64, 64), *old = aligned_alloc(64, 512);
    gda_ft_hca_mr_t *smr, *dmr, *bmr, *cmr, *omr;
    gda_ft_soft_port_stats_t req, resp;
    unsigned i, round;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, "UCX_GDA_FT_SOFT_ACK_DROP=0.2", NULL);
    unsetenv("UCX_GDA_FT_SOFT_ACK_DROP");
    soft_fill(src, len, 11);
    counter[0] = 0;
    smr = soft_mr(&p.a, src, len, 0);
    bmr = soft_mr(&p.a, back, len, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    omr = soft_mr(&p.a, old, 512, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    dmr = soft_mr(&p.b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                  GDA_FT_HCA_ACCESS_REMOTE_READ);
    cmr = soft_mr(&p.b, counter, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);

    for (round = 0; round < 8; ++round) {
        for (i = 0; i < 8; ++i) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                    &p.a.sq, (uintptr_t)src + i * chunk, smr->lkey, chunk,
                    (uintptr_t)dst + i * chunk, dmr->rkey,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &p.a.sq, (uintptr_t)&old[round * 8 + i], omr->lkey,
                    (uintptr_t)counter, cmr->rkey, 1, GDA_FT_WQE_SIGNALED,
                    &idx), GDA_FT_DEV_OK);
        }
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.a.sq, (uintptr_t)back, bmr->lkey, len, (uintptr_t)dst,
                dmr->rkey, GDA_FT_WQE_SIGNALED | GDA_FT_WQE_FENCE, &idx),
                GDA_FT_DEV_OK);
        soft_ep_ring(&p.a);
        for (i = 0; i < 17; ++i) {
            soft_expect_ok_under_faults(&p, round * 17 + i);
        }
        GDA_FT_ASSERT_MEM_EQ(back, src, len);
        memset(back, 0, len);
    }

    /* 64 increments, each applied once: the old values are 0..63 */
    GDA_FT_ASSERT_EQ(counter[0], 64);
    for (i = 0; i < 64; ++i) {
        GDA_FT_ASSERT_EQ(be64toh(old[i]), i);
    }
    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    req  = soft_port_stats(p.dev0, 1);
    resp = soft_port_stats(p.dev1, 1);
    GDA_FT_ASSERT_EQ(req.fault_dropped, 0);
    GDA_FT_ASSERT(resp.fault_dropped > 0);
    GDA_FT_ASSERT(req.retransmits > 0);
    GDA_FT_ASSERT(resp.rx_duplicate > 0);
    soft_pair_fini(&p);
    GDA_FT_ASSERT_OK(gda_ft_soft_reload_config());
    free(src);
    free(dst);
    free(back);
    free(counter);
    free(old);
}

/*
 * A lost response shows by the next one: the requester goes back at once
 * (an implied NAK) instead of waiting a retransmission timeout per lost
 * response, which made a 3 MiB read under 0.7% loss miss a 1 s failover
 * deadline. Each round has a 512 KiB read, four 4 KiB reads and a fetch-add
 * in flight at once. Going back, the requester asks for all of them again
 * (the read from its first missing response), and the responder drops the
 * answers it queued for the first one asked again and those after it,
 * never those before: it used to drop them all at each duplicate, so that
 * only the last read asked again was answered, the rest after a timeout.
 * The atomic's answer leaves behind the reads before it, in PSN order.
 */
GDA_FT_TEST(soft_errors, lost_responses_recovered_without_the_timer)
{
    size_t big = 512 << 10, small = 4096, rounds = 16, i, j;
    size_t slot = big + 4 * small;
    uint8_t *src = malloc(big), *dst = malloc(slot * rounds);
    uint64_t *counter = aligned_alloc(64, 64), *old = aligned_alloc(64, 128);
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_mr_t *smr, *dmr, *cmr, *omr;
    gda_ft_soft_port_stats_t req;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, big, 12);
    memset(dst, 0, slot * rounds);
    counter[0] = 0;
    dmr = soft_mr(&p.a, dst, slot * rounds, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    omr = soft_mr(&p.a, old, 128, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    smr = soft_mr(&p.b, src, big, GDA_FT_HCA_ACCESS_REMOTE_READ);
    cmr = soft_mr(&p.b, counter, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);
    fault.ack_drop = 0.01;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));

    for (i = 0; i < rounds; ++i) {
        /* the big read, then four small ones of its last pages */
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.a.sq, (uintptr_t)dst + i * slot, dmr->lkey, big,
                (uintptr_t)src, smr->rkey, GDA_FT_WQE_SIGNALED, &idx),
                GDA_FT_DEV_OK);
        for (j = 1; j <= 4; ++j) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                    &p.a.sq, (uintptr_t)dst + i * slot + big +
                    (j - 1) * small, dmr->lkey, small,
                    (uintptr_t)src + big - j * small, smr->rkey,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        }
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                &p.a.sq, (uintptr_t)&old[i], omr->lkey, (uintptr_t)counter,
                cmr->rkey, 1, GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        soft_ep_ring(&p.a);
        for (j = 0; j < 6; ++j) {
            soft_expect_ok_under_faults(&p, i * 6 + j);
        }
        GDA_FT_ASSERT_MEM_EQ(dst + i * slot, src, big);
        for (j = 1; j <= 4; ++j) {
            GDA_FT_ASSERT_MEM_EQ(dst + i * slot + big + (j - 1) * small,
                                 src + big - j * small, small);
        }
        GDA_FT_ASSERT_EQ(be64toh(old[i]), i);
    }
    GDA_FT_ASSERT_EQ(counter[0], rounds);

    req = soft_port_stats(p.dev0, 1);
    printf("%lu responses lost, %lu implied NAKs, %lu timeouts\n",
           (unsigned long)soft_port_stats(p.dev1, 1).fault_dropped,
           (unsigned long)req.implied_naks, (unsigned long)req.retransmits);
    GDA_FT_ASSERT(req.implied_naks >= 8);
    /* only a lost last response of a round waits for the timer (1 with
     * this seed; an atomic answer overtaking the reads' cost one timeout
     * in every round) */
    GDA_FT_ASSERT(req.retransmits <= rounds / 2);
    soft_pair_fini(&p);
    free(src);
    free(dst);
    free(counter);
    free(old);
}

GDA_FT_TEST(soft_errors, drop_delay_reorder_lose_nothing)
{
    size_t len = 2 << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_mr_t *smr, *dmr, *bmr;
    soft_pair_t p;
    uint16_t idx;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, len, 6);
    smr = soft_mr(&p.a, src, len, 0);
    bmr = soft_mr(&p.a, back, len, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    dmr = soft_mr(&p.b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                  GDA_FT_HCA_ACCESS_REMOTE_READ);
    fault.drop       = 0.02;
    fault.delay      = 0.02;
    fault.delay_time = 0.001;
    fault.reorder    = 0.05;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev0, 1, &fault));
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));

    for (i = 0; i < 8; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &p.a.sq, (uintptr_t)src + i * (len / 8), smr->lkey, len / 8,
                (uintptr_t)dst + i * (len / 8), dmr->rkey,
                GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(&p.a.sq, (uintptr_t)back,
                                              bmr->lkey, len, (uintptr_t)dst,
                                              dmr->rkey,
                                              GDA_FT_WQE_SIGNALED |
                                              GDA_FT_WQE_FENCE, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    for (i = 0; i < 9; ++i) {
        soft_expect_ok_under_faults(&p, i);
    }
    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    GDA_FT_ASSERT_MEM_EQ(back, src, len);
    GDA_FT_ASSERT(soft_port_stats(p.dev0, 1).fault_dropped > 0);
    GDA_FT_ASSERT(soft_port_stats(p.dev0, 1).fault_delayed > 0);
    free(src);
    free(dst);
    free(back);
    soft_pair_fini(&p);
}

/*
 * Writes and reads longer than the requester's window (256 packets), one
 * packet in 500 lost, and (when delay) one in 1000 delayed by 200 us and
 * one in 1000 held behind later ones: every loss is recovered by a NAK or
 * the timer, and nothing waits for more than the retry budget.
 */
static void faults_in_messages_longer_than_the_window(int delay)
{
    size_t len = 3 << 20, count = 8, i;
    uint8_t *src = malloc(len * count), *dst = calloc(count, len);
    uint8_t *back = calloc(1, len);
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_mr_t *smr, *dmr, *bmr;
    soft_pair_t p;
    uint16_t idx;
    unsigned round;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, len * count, 9);
    smr = soft_mr(&p.a, src, len * count, 0);
    bmr = soft_mr(&p.a, back, len, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    dmr = soft_mr(&p.b, dst, len * count, GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                  GDA_FT_HCA_ACCESS_REMOTE_READ);
    fault.drop = 0.002;
    if (delay) {
        fault.delay      = 0.001;
        fault.delay_time = 0.0002;
        fault.reorder    = 0.001;
    }
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev0, 1, &fault));
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));

    for (round = 0; round < 4; ++round) {
        for (i = 0; i < count; ++i) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                    &p.a.sq, (uintptr_t)src + i * len, smr->lkey, len,
                    (uintptr_t)dst + i * len, dmr->rkey,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        }
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.a.sq, (uintptr_t)back, bmr->lkey, len,
                (uintptr_t)dst + round * len, dmr->rkey,
                GDA_FT_WQE_SIGNALED | GDA_FT_WQE_FENCE, &idx),
                GDA_FT_DEV_OK);
        soft_ep_ring(&p.a);
        for (i = 0; i <= count; ++i) {
            soft_expect_ok_under_faults(&p, round * (count + 1) + i);
        }
        GDA_FT_ASSERT_MEM_EQ(back, src + round * len, len);
    }
    GDA_FT_ASSERT_MEM_EQ(dst, src, len * count);
    GDA_FT_ASSERT(soft_port_stats(p.dev0, 1).fault_dropped > 0);
    free(src);
    free(dst);
    free(back);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, drops_in_messages_longer_than_the_window)
{
    faults_in_messages_longer_than_the_window(0);
}

GDA_FT_TEST(soft_errors, drops_and_delays_in_messages_longer_than_the_window)
{
    faults_in_messages_longer_than_the_window(1);
}
