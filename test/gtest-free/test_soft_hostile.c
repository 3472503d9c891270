/*
 * Software HCA conformance (suite soft_errors, as test_soft_errors.c):
 * hostile datagrams and packets forged from the peer's address are
 * dropped and counted, an ACK of an earlier connection is a ghost, and
 * the control commands with the ones upper layers register.
 */
#include "soft_harness.h"
#include "gda_ft_test.h"
#include "gda_ft_soft_wire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


/* ---- hostile datagrams --------------------------------------------------- */

typedef struct attacker {
    volatile int stop;
    uint16_t     udp_port;
    uint32_t     victim_qpn;
    unsigned     sent;
} attacker_t;

static void attacker_send(int fd, uint16_t port, const void *buf, size_t len)
{
    struct sockaddr_in dst = {0};

    dst.sin_family      = AF_INET;
    dst.sin_port        = htons(port);
    dst.sin_addr.s_addr = htonl(0x7f000002);   /* tsoft1 */
    sendto(fd, buf, len, 0, (struct sockaddr*)&dst, sizeof(dst));
}

static void *attacker_thread(void *arg)
{
    attacker_t *a = arg;
    struct sockaddr_in src = {0};
    uint8_t pkt[256];
    gda_ft_roce_reth_t reth;
    unsigned i = 0;
    size_t len;
    int fd;

    fd = socket(AF_INET, SOCK_DGRAM, 0);
    src.sin_family      = AF_INET;
    src.sin_port        = htons(a->udp_port);   /* looks like RoCE */
    src.sin_addr.s_addr = htonl(0x7f000009);   /* not the peer */
    if (bind(fd, (struct sockaddr*)&src, sizeof(src)) < 0) {
        src.sin_port = 0;
        bind(fd, (struct sockaddr*)&src, sizeof(src));
    }

    while (!a->stop) {
        switch (i++ % 5) {
        case 0: /* random bytes */
            soft_fill(pkt, sizeof(pkt), i);
            attacker_send(fd, a->udp_port, pkt, 7 + i % 200);
            break;
        case 1: /* truncated BTH */
            attacker_send(fd, a->udp_port, pkt, 5);
            break;
        case 2: /* well-formed write to the victim QP from a stranger */
            reth.va      = 0;
            reth.rkey    = htonl(0x12345678);
            reth.dma_len = htonl(16);
            len = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_WRITE_ONLY,
                                        a->victim_qpn, 0x123 + i, 1, 16,
                                        &reth, sizeof(reth));
            memset(pkt + len, 0xee, 16);
            len += 16;
            len += gda_ft_roce_finish(pkt, len);
            attacker_send(fd, a->udp_port, pkt, len);
            break;
        case 3: /* well-formed packet to a QP that does not exist */
            len = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_SEND_ONLY,
                                        a->victim_qpn ^ 0x1, 0, 1, 0, NULL,
                                        0);
            len += gda_ft_roce_finish(pkt, len);
            attacker_send(fd, a->udp_port, pkt, len);
            break;
        default: /* valid headers, corrupted ICRC */
            len = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_ACKNOWLEDGE,
                                        a->victim_qpn, 0, 0, 0, "\0\0\0\0",
                                        4);
            len += gda_ft_roce_finish(pkt, len);
            pkt[len - 1] ^= 0x40;
            attacker_send(fd, a->udp_port, pkt, len);
            break;
        }
        ++a->sent;
        usleep(20);   /* a steady stream, not a flood (that is a DoS) */
    }
    close(fd);
    return NULL;
}

GDA_FT_TEST(soft_errors, hostile_datagrams_dropped_and_counted)
{
    size_t len = 4 << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    gda_ft_soft_port_stats_t stats;
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    gda_ft_hca_port_attr_t pattr;
    attacker_t attacker = {0};
    pthread_t thread;
    soft_pair_t p;
    uint16_t idx;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(p.dev1, 1, &pattr));
    soft_fill(src, len, 8);
    smr = soft_mr(&p.a, src, len, 0);
    dmr = soft_mr(&p.b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE);

    attacker.udp_port   = 20000 + (getpid() % 20000);
    attacker.victim_qpn = p.b.qp->qpn;
    pthread_create(&thread, NULL, attacker_thread, &attacker);
    while (attacker.sent < 500) {
        usleep(1000);
    }

    for (i = 0; i < 16; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &p.a.sq, (uintptr_t)src + i * (len / 16), smr->lkey,
                len / 16, (uintptr_t)dst + i * (len / 16), dmr->rkey,
                GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    }
    soft_ep_ring(&p.a);
    for (i = 0; i < 16; ++i) {
        soft_ep_wait_send(&p.a, &info, 20000);
        if (info.opcode != GDA_FT_MLX5_CQE_REQ) {
            stats = soft_port_stats(p.dev0, 1);
            GDA_FT_FAIL("CQE %u: %s (requester retransmits %lu, bad_src "
                        "%lu)", i, gda_ft_hca_syndrome_str(info.syndrome),
                        stats.retransmits, stats.rx_bad_src);
        }
    }
    attacker.stop = 1;
    pthread_join(thread, NULL);

    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    GDA_FT_ASSERT_EQ(p.b.qp->state, GDA_FT_HCA_QP_RTS);
    stats = soft_port_stats(p.dev1, 1);
    printf("attacker sent %u: malformed %lu bad_icrc %lu bad_qpn %lu "
           "bad_src %lu\n", attacker.sent, stats.rx_malformed,
           stats.rx_bad_icrc, stats.rx_bad_qpn, stats.rx_bad_src);
    GDA_FT_ASSERT(stats.rx_malformed > 0);
    GDA_FT_ASSERT(stats.rx_bad_icrc > 0);
    GDA_FT_ASSERT(stats.rx_bad_qpn > 0);
    GDA_FT_ASSERT(stats.rx_bad_src > 0);
    free(src);
    free(dst);
    soft_pair_fini(&p);
}

static void ctl_echo(void *arg, int argc, char **argv, char *reply,
                     size_t max)
{
    snprintf(reply, max, "%s: %d args, last %s\n", (const char*)arg, argc,
             argv[argc - 1]);
}

/*
 * Forged datagrams that claim the peer's own address (IPv4 source and UDP
 * port spoofed through a raw socket, which needs root): a write to a QPN
 * of nobody, one at a PSN far ahead of the window, and a replay of a PSN
 * already executed with other bytes are all dropped and counted, and the
 * target's memory keeps what the real peer wrote. A forged write at the
 * very PSN the target expects is executed: from the right address it is
 * the peer, which shows that the forged ones did reach the responder.
 */
static void spoof_write(int fd, uint16_t udp_port, uint32_t dqpn,
                        uint32_t psn, uint64_t va, uint32_t rkey,
                        uint8_t fill)
{
    uint8_t frame[20 + 8 + GDA_FT_ROCE_MAX_HDR + 16 + 8];
    uint8_t *ip = frame, *udp = frame + 20, *pkt = frame + 28;
    struct sockaddr_in dst = {0};
    gda_ft_roce_reth_t reth;
    uint16_t word;
    size_t len;

    reth.va      = htobe64(va);
    reth.rkey    = htonl(rkey);
    reth.dma_len = htonl(16);
    len  = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_WRITE_ONLY, dqpn, psn, 1,
                                 16, &reth, sizeof(reth));
    memset(pkt + len, fill, 16);
    len += 16;
    len += gda_ft_roce_finish(pkt, len);

    memset(frame, 0, 28);
    ip[0]  = 0x45;                        /* IPv4, 20-byte header */
    word   = htons(28 + len);
    memcpy(ip + 2, &word, 2);             /* the kernel fills the checksum */
    ip[8]  = 64;
    ip[9]  = IPPROTO_UDP;
    ip[12] = 127; ip[15] = 1;             /* from tsoft0, the peer */
    ip[16] = 127; ip[19] = 2;             /* to tsoft1 */
    word   = htons(udp_port);
    memcpy(udp, &word, 2);
    memcpy(udp + 2, &word, 2);
    word   = htons(8 + len);              /* no UDP checksum: allowed */
    memcpy(udp + 4, &word, 2);

    dst.sin_family      = AF_INET;
    dst.sin_addr.s_addr = htonl(0x7f000002);
    GDA_FT_ASSERT_EQ(sendto(fd, frame, 28 + len, 0, (struct sockaddr*)&dst,
                            sizeof(dst)), (ssize_t)(28 + len));
}

GDA_FT_TEST(soft_errors, forged_packets_from_the_peer_address)
{
    uint16_t udp_port = 20000 + (getpid() % 20000);
    uint64_t *src = aligned_alloc(64, 4096), *dst = aligned_alloc(64, 4096);
    gda_ft_soft_port_stats_t before, after;
    gda_ft_hca_qp_query_attr_t qa;
    gda_ft_hca_mr_t *smr, *dmr;
    uint8_t ref[16], forged[16];
    soft_pair_t p;
    uint16_t idx;
    uint32_t epsn;
    int fd, one = 1;

    fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
    if (fd < 0) {
        GDA_FT_SKIP_UNAVAILABLE("a raw socket to spoof the peer's address "
                                "needs root: %m");
    }
    GDA_FT_ASSERT_EQ(setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one,
                                sizeof(one)), 0);

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, 4096, 4);
    memset(dst, 0, 4096);
    smr = soft_mr(&p.a, src, 4096, 0);
    dmr = soft_mr(&p.b, dst, 4096, GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    /* the real peer writes 16 bytes: its PSN is used now */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                               smr->lkey, 16, (uintptr_t)dst,
                                               dmr->rkey, GDA_FT_WQE_SIGNALED,
                                               &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    soft_expect_ok_under_faults(&p, 0);
    memcpy(ref, dst, sizeof(ref));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(p.b.qp, &qa));
    epsn   = qa.rq_psn;
    before = soft_port_stats(p.dev1, 1);

    spoof_write(fd, udp_port, p.b.qp->qpn ^ 0x5, epsn, (uintptr_t)dst,
                dmr->rkey, 0xa1);                      /* nobody's QPN */
    spoof_write(fd, udp_port, p.b.qp->qpn, (epsn + 4096) & 0xffffff,
                (uintptr_t)dst, dmr->rkey, 0xa2);      /* far ahead */
    spoof_write(fd, udp_port, p.b.qp->qpn, (epsn - 1) & 0xffffff,
                (uintptr_t)dst, dmr->rkey, 0xa3);      /* a replay */
    after = soft_port_stats(p.dev1, 1);
    while ((after.rx_bad_qpn == before.rx_bad_qpn) ||
           (after.rx_out_of_seq == before.rx_out_of_seq) ||
           (after.rx_duplicate == before.rx_duplicate)) {
        usleep(1000);   /* the test's timeout bounds it */
        after = soft_port_stats(p.dev1, 1);
    }
    GDA_FT_ASSERT_EQ(after.rx_bad_qpn - before.rx_bad_qpn, 1);
    GDA_FT_ASSERT_EQ(after.rx_out_of_seq - before.rx_out_of_seq, 1);
    GDA_FT_ASSERT_EQ(after.rx_duplicate - before.rx_duplicate, 1);
    GDA_FT_ASSERT_MEM_EQ(dst, ref, sizeof(ref));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(p.b.qp, &qa));
    GDA_FT_ASSERT_EQ(qa.rq_psn, epsn);

    /* the PSN the target expects, from the peer's address: executed */
    spoof_write(fd, udp_port, p.b.qp->qpn, epsn, (uintptr_t)dst, dmr->rkey,
                0xa4);
    memset(forged, 0xa4, sizeof(forged));
    while (memcmp(dst, forged, sizeof(forged)) != 0) {
        usleep(1000);
    }
    close(fd);
    soft_pair_fini(&p);
    free(src);
    free(dst);
}

/* Resets both QPs and connects them again from `psn` on, as a re-arm does;
 * the requester's rings start over at index 0 */
static void soft_pair_reconnect(soft_pair_t *p, const soft_conn_params_t *cp)
{
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(p->a.qp, GDA_FT_HCA_QP_RESET,
                                          NULL));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(p->b.qp, GDA_FT_HCA_QP_RESET,
                                          NULL));
    memset(p->a.dbrec, 0, 64);
    gda_ft_dev_sq_init(&p->a.sq, p->a.sq_buf, SOFT_TEST_SQ_SIZE,
                       p->a.qp->qpn, p->a.dbrec, p->a.qp->uar,
                       p->a.qp->wake_fd, p->a.qp->wake_armed,
                       p->dev0->attr.max_inline);
    soft_ep_pair_connect(&p->a, &p->b, cp);
}

/*
 * An acknowledgement held in the network while its QPs were reset and
 * connected again reaches the new connection. Its PSN is just ahead of
 * the new one's, which has a write outstanding that the target never
 * received: an HCA drops such a ghost (it names a PSN the QP has not
 * sent since it was connected); taking it would complete the write OK
 * with nothing written.
 */
GDA_FT_TEST(soft_errors, ack_of_an_earlier_connection_is_a_ghost)
{
    soft_conn_params_t cp = soft_default_params;
    uint8_t *src = aligned_alloc(64, 4096), *dst = aligned_alloc(64, 4096);
    gda_ft_soft_port_stats_t before, after;
    gda_ft_soft_fault_t fault = {0};
    gda_ft_dev_cqe_info_t info;
    gda_ft_hca_mr_t *smr, *dmr;
    soft_pair_t p;
    uint16_t idx;
    double until;

    cp.psn     = 0x10000;
    cp.timeout = 17;           /* the first retransmission after 0.5 s */
    soft_pair_init(&p, NULL, &cp);
    soft_fill(src, 4096, 9);
    memset(dst, 0, 4096);
    smr = soft_mr(&p.a, src, 4096, 0);
    dmr = soft_mr(&p.b, dst, 4096, GDA_FT_HCA_ACCESS_REMOTE_WRITE);

    /* the target's answers are held back for 200 ms */
    fault.delay      = 1.0;
    fault.delay_time = 0.2;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                               smr->lkey, 64, (uintptr_t)dst,
                                               dmr->rkey, GDA_FT_WQE_SIGNALED,
                                               &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    while (memcmp(dst, src, 64) != 0) {
        usleep(100);   /* landed; its ACK (PSN 0x10000) is on hold */
    }

    /* connected again 100 PSNs before it; the requester's packets are
     * lost from now on, so the new write cannot land */
    cp.psn = 0x10000 - 100;
    soft_pair_reconnect(&p, &cp);
    fault.delay = 0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));
    fault.drop = 1.0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev0, 1, &fault));
    before = soft_port_stats(p.dev0, 1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src + 64,
                                               smr->lkey, 64,
                                               (uintptr_t)dst + 64,
                                               dmr->rkey, GDA_FT_WQE_SIGNALED,
                                               &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);

    until = soft_now_sec() + 0.4;
    while (soft_now_sec() < until) {
        GDA_FT_ASSERT_EQ(soft_ep_poll_send(&p.a, &info),
                         GDA_FT_DEV_INPROGRESS);
        usleep(100);
    }
    after = soft_port_stats(p.dev0, 1);
    GDA_FT_ASSERT_EQ(after.rx_unexpected - before.rx_unexpected, 1);
    GDA_FT_ASSERT_EQ(dst[64], 0);

    /* the path heals: the write is sent again, lands and completes */
    fault.drop = 0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev0, 1, &fault));
    soft_expect_ok_under_faults(&p, 1);
    GDA_FT_ASSERT_MEM_EQ(dst + 64, src + 64, 64);
    soft_pair_fini(&p);
    free(src);
    free(dst);
}

GDA_FT_TEST(soft_errors, control_commands_and_extensions)
{
    gda_ft_hca_dev_t *dev;
    char reply[4096];

    soft_test_env(1, NULL);
    dev = soft_open("tsoft0");

    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_exec("port tsoft0 1 down", reply,
                                          sizeof(reply)));
    GDA_FT_ASSERT(strstr(reply, "ok") == reply);
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_exec("stats", reply, sizeof(reply)));
    GDA_FT_ASSERT(strstr(reply, "tsoft0:1 DOWN") != NULL);
    GDA_FT_ASSERT_EQ(gda_ft_soft_ctl_exec("port tsoft9 1 down", reply,
                                          sizeof(reply)), UCS_ERR_NO_DEVICE);
    GDA_FT_ASSERT_EQ(gda_ft_soft_ctl_exec("drop tsoft0 1 1.5", reply,
                                          sizeof(reply)),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(gda_ft_soft_ctl_exec("counters", reply, sizeof(reply)),
                     UCS_ERR_INVALID_PARAM);

    /* an upper layer adds a command; two registrations both answer */
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_register("counters", ctl_echo, "A"));
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_register("counters", ctl_echo, "B"));
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_exec("counters x y", reply,
                                          sizeof(reply)));
    GDA_FT_ASSERT(!strcmp(reply, "A: 3 args, last y\nB: 3 args, last y\n"));
    gda_ft_soft_ctl_unregister(ctl_echo, "A");
    gda_ft_soft_ctl_unregister(ctl_echo, "B");
    GDA_FT_ASSERT_EQ(gda_ft_soft_ctl_exec("counters", reply, sizeof(reply)),
                     UCS_ERR_INVALID_PARAM);
    gda_ft_hca_close(dev);
}
