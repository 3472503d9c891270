/*
 * The software HCA's GPU-memory path on a machine without a GPU: memory
 * registered as CUDA memory goes through the CUDA runtime's streams, here a
 * stand-in whose copies run on threads of their own, late by a set time
 * (test/fake_cudart). Every opcode's bytes are compared, and a slow copy
 * must hold up no other QP of the engine thread.
 */
#include "soft_harness.h"
#include "gda_ft_soft_int.h"
#include "gda_ft_test.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static gda_ft_hca_mr_t *cuda_test_mr(soft_ep_t *ep, void *buf, size_t len,
                                     unsigned access,
                                     gda_ft_hca_mem_type_t type)
{
    gda_ft_hca_mr_attr_t attr = {buf, len, access, type};
    gda_ft_hca_mr_t *mr;

    GDA_FT_ASSERT_OK(gda_ft_hca_mr_reg(ep->pd, &attr, &mr));
    return mr;
}

static void cuda_test_expect_ok(soft_ep_t *ep, uint16_t idx)
{
    gda_ft_dev_cqe_info_t info;

    soft_ep_wait_send(ep, &info, 20000);
    if (info.opcode != GDA_FT_MLX5_CQE_REQ) {
        GDA_FT_FAIL("WQE %u: CQE opcode 0x%x %s", info.wqe_counter,
                    info.opcode, gda_ft_hca_syndrome_str(info.syndrome));
    }
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
}

/* Two regions, one on each side: the requester's in GPU memory, the
 * responder's where the test wants it */
typedef struct {
    soft_pair_t      p;
    size_t           len;
    uint8_t         *a, *b;    /* a: the requester's, b: the responder's */
    gda_ft_hca_mr_t *amr, *bmr;
} cuda_test_t;

static void cuda_test_init_types(cuda_test_t *t, const char *env, size_t len,
                                 gda_ft_hca_mem_type_t b_type)
{
    unsigned access = GDA_FT_HCA_ACCESS_LOCAL_WRITE |
                      GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                      GDA_FT_HCA_ACCESS_REMOTE_READ |
                      GDA_FT_HCA_ACCESS_REMOTE_ATOMIC;

    soft_pair_init(&t->p, env, NULL);
    t->len = len;
    t->a   = aligned_alloc(64, len);
    t->b   = aligned_alloc(64, len);
    GDA_FT_ASSERT((t->a != NULL) && (t->b != NULL));
    t->amr = cuda_test_mr(&t->p.a, t->a, len, access, GDA_FT_HCA_MEM_CUDA);
    t->bmr = cuda_test_mr(&t->p.b, t->b, len, access, b_type);
}

static void cuda_test_init(cuda_test_t *t, const char *env, size_t len)
{
    cuda_test_init_types(t, env, len, GDA_FT_HCA_MEM_CUDA);
}

/* Posts (does not ring) an RDMA WRITE of len bytes from offset src of the
 * requester's region to offset dst of the responder's */
static void cuda_test_write_at(cuda_test_t *t, size_t src, size_t dst,
                               size_t len, unsigned flags, uint16_t *idx)
{
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
            &t->p.a.sq, (uintptr_t)t->a + src, t->amr->lkey, len,
            (uintptr_t)t->b + dst, t->bmr->rkey, flags, idx),
            GDA_FT_DEV_OK);
}

/* The requester's region registered as host memory: the responder's
 * copies alone go through the runtime */
static void cuda_test_requester_on_host(cuda_test_t *t)
{
    gda_ft_hca_mr_dereg(t->amr);
    t->amr = cuda_test_mr(&t->p.a, t->a, t->len,
                          GDA_FT_HCA_ACCESS_LOCAL_WRITE, GDA_FT_HCA_MEM_HOST);
}

static void cuda_test_fini(cuda_test_t *t)
{
    soft_pair_fini(&t->p);
    free(t->a);
    free(t->b);
}

/* n writes of size bytes each, all posted before the first completes */
static void cuda_test_writes(cuda_test_t *t, size_t size, unsigned n)
{
    uint16_t idx = 0;
    unsigned i;

    GDA_FT_ASSERT(size * n <= t->len);
    soft_fill(t->a, size * n, (unsigned)(size + n));
    memset(t->b, 0xa5, t->len);
    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &t->p.a.sq, (uintptr_t)t->a + i * size, t->amr->lkey, size,
                (uintptr_t)t->b + i * size, t->bmr->rkey,
                (i + 1 == n) ? GDA_FT_WQE_SIGNALED : 0, &idx),
                GDA_FT_DEV_OK);
    }
    soft_ep_ring(&t->p.a);
    cuda_test_expect_ok(&t->p.a, idx);
    GDA_FT_ASSERT_MEM_EQ(t->b, t->a, size * n);
    GDA_FT_ASSERT_EQ(t->b[size * n], 0xa5);
}

static void cuda_test_read(cuda_test_t *t, size_t size)
{
    uint16_t idx;

    soft_fill(t->b, size, (unsigned)size + 3);
    memset(t->a, 0x5a, size + 1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(&t->p.a.sq, (uintptr_t)t->a,
                                              t->amr->lkey, size,
                                              (uintptr_t)t->b, t->bmr->rkey,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&t->p.a);
    cuda_test_expect_ok(&t->p.a, idx);
    GDA_FT_ASSERT_MEM_EQ(t->a, t->b, size);
    GDA_FT_ASSERT_EQ(t->a[size], 0x5a);
}

/* n fetch-adds of one word, results to n words: every old value once */
static void cuda_test_fetch_adds(cuda_test_t *t, unsigned n)
{
    uint64_t *word    = (uint64_t*)t->b;
    uint64_t *results = (uint64_t*)t->a;
    uint16_t idx      = 0;
    unsigned i;

    GDA_FT_ASSERT((n + 1) * sizeof(uint64_t) <= t->len);
    *word = 1000;
    memset(results, 0, n * sizeof(*results));
    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                &t->p.a.sq, (uintptr_t)&results[i], t->amr->lkey,
                (uintptr_t)word, t->bmr->rkey, 1,
                (i + 1 == n) ? GDA_FT_WQE_SIGNALED : 0, &idx),
                GDA_FT_DEV_OK);
    }
    soft_ep_ring(&t->p.a);
    cuda_test_expect_ok(&t->p.a, idx);
    GDA_FT_ASSERT_EQ(*word, 1000 + n);
    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(be64toh(results[i]), 1000 + i);
    }
}

static void cuda_test_every_opcode(const char *env)
{
    static const size_t sizes[] = {1, 4095, 4096, 4097, 300000,
                                   4 * 1024 * 1024 + 3};
    cuda_test_t t;
    unsigned i;

    (void)soft_fake_cudart_load(20);
    cuda_test_init(&t, env, 8 * 1024 * 1024);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        cuda_test_writes(&t, sizes[i], 1);
        cuda_test_read(&t, sizes[i]);
    }
    /* a ring's worth of messages found in one pass, more than one read
     * batch, through a staging area filled more than once */
    cuda_test_writes(&t, 4096, SOFT_TEST_SQ_SIZE - 1);
    cuda_test_writes(&t, 16384, 200);
    cuda_test_fetch_adds(&t, 100);
    cuda_test_fini(&t);
}

GDA_FT_TEST(soft_cuda, every_opcode_on_gpu_memory)
{
    cuda_test_every_opcode(NULL);
}

GDA_FT_TEST(soft_cuda, every_opcode_reading_messages_in_turn)
{
    /* each message read (and waited for) when the engine finds its WQE */
    cuda_test_every_opcode("UCX_GDA_FT_SOFT_CUDA_READ_ASYNC=n");
}

GDA_FT_TEST(soft_cuda, every_opcode_copy_and_wait)
{
    setenv("UCX_GDA_FT_SOFT_CUDA_SNAPSHOT", "n", 1);
    cuda_test_every_opcode("UCX_GDA_FT_SOFT_CUDA_STAGING=n");
}

/* Every opcode, the engine's copies queued by batch calls (batched, and
 * unmerged so that a stream has more than one copy to queue) or one call
 * each; the stand-in's batch calls counted */
static void cuda_test_every_opcode_batched(int batched)
{
    soft_fake_cudart_count_t batches;
    uint64_t before;

    (void)soft_fake_cudart_load(20);
    batches = soft_fake_cudart_counter("gda_ft_fake_cudart_batches");
    before  = batches();
    setenv("UCX_GDA_FT_SOFT_CUDA_COPY_MERGE", batched ? "n" : "y", 1);
    cuda_test_every_opcode(batched ? "UCX_GDA_FT_SOFT_CUDA_COPY_BATCH=y" :
                                     "UCX_GDA_FT_SOFT_CUDA_COPY_BATCH=n");
    GDA_FT_ASSERT_EQ(batches() > before, batched);
}

GDA_FT_TEST(soft_cuda, every_opcode_one_copy_per_call)
{
    cuda_test_every_opcode_batched(0);
}

GDA_FT_TEST(soft_cuda, every_opcode_copies_batched)
{
    cuda_test_every_opcode_batched(1);
}

GDA_FT_TEST(soft_cuda, every_opcode_copies_unmerged)
{
    cuda_test_every_opcode("UCX_GDA_FT_SOFT_CUDA_COPY_MERGE=n");
}

/*
 * The copies an engine pass has for a stream go in one call
 * (cudaMemcpyBatchAsync, whose copies run in no set order: the stand-in
 * runs each batch last copy first). A ring of writes found in one pass
 * is queued in batches of many (unmerged, so that they stay many); two
 * writes of the same bytes in one pass land in the order they were
 * posted.
 */
GDA_FT_TEST(soft_cuda, copies_of_a_pass_go_in_one_call)
{
    soft_fake_cudart_count_t batches, copies;
    uint64_t before[2];
    uint16_t idx = 0;
    cuda_test_t t;
    unsigned i;

    (void)soft_fake_cudart_load(20);
    batches   = soft_fake_cudart_counter("gda_ft_fake_cudart_batches");
    copies    = soft_fake_cudart_counter("gda_ft_fake_cudart_batched_copies");
    setenv("UCX_GDA_FT_SOFT_CUDA_COPY_BATCH", "y", 1);
    cuda_test_init(&t, "UCX_GDA_FT_SOFT_CUDA_COPY_MERGE=n", 1024 * 1024);
    before[0] = batches();
    before[1] = copies();
    cuda_test_writes(&t, 4096, SOFT_TEST_SQ_SIZE - 1);
    printf("%lu copies in %lu batches\n",
           (unsigned long)(copies() - before[1]),
           (unsigned long)(batches() - before[0]));
    GDA_FT_ASSERT(batches() > before[0]);
    GDA_FT_ASSERT(copies() - before[1] >= 2 * (batches() - before[0]));

    /* the same 4 KiB written 16 times, each with other bytes */
    for (i = 0; i < 16; ++i) {
        soft_fill(t.a + i * 4096, 4096, 100 + i);
        cuda_test_write_at(&t, i * 4096, 0, 4096,
                           (i == 15) ? GDA_FT_WQE_SIGNALED : 0, &idx);
    }
    soft_ep_ring(&t.p.a);
    cuda_test_expect_ok(&t.p.a, idx);
    GDA_FT_ASSERT_MEM_EQ(t.b, t.a + 15 * 4096, 4096);
    cuda_test_fini(&t);
}

/* Copies the stand-in ran for 64 writes of 4 KiB from consecutive slots of
 * GPU memory into host memory, the engine's copies merged or not (env):
 * the requester reads all 64 messages ahead in one batch (CUDA_READ_BATCH
 * 64, all parsed before the first is sent), whatever the engine's pace */
static uint64_t cuda_test_batch_copies(const char *env)
{
    soft_fake_cudart_count_t copies = soft_fake_cudart_load(20);
    uint64_t before;
    cuda_test_t t;

    setenv("UCX_GDA_FT_SOFT_CUDA_READ_BATCH", "64", 1);
    cuda_test_init_types(&t, env, 1024 * 1024, GDA_FT_HCA_MEM_HOST);
    before = copies();
    cuda_test_writes(&t, 4096, 64);
    before = copies() - before;
    cuda_test_fini(&t);
    return before;
}

/* The copies the stand-in ran for a run of the engine with its copies
 * merged and without (CUDA_COPY_MERGE), printed */
static void cuda_test_copies_merged(uint64_t (*copies)(const char *env),
                                    const char *what, uint64_t *merged,
                                    uint64_t *unmerged)
{
    *unmerged = copies("UCX_GDA_FT_SOFT_CUDA_COPY_MERGE=n");
    *merged   = copies("UCX_GDA_FT_SOFT_CUDA_COPY_MERGE=y");
    printf("%s: %lu copies merged, %lu unmerged\n", what,
           (unsigned long)*merged, (unsigned long)*unmerged);
}

/*
 * A copy that continues the one queued before it in source and destination
 * runs with it as one: a batch of reads of consecutive messages is one
 * copy, every byte in place. Messages read into consecutive staging from
 * sources that do not continue each other stay apart (merged, the second
 * message would carry the first's neighbour), and a write that continues
 * a pending one but overlaps another (a later write of the same bytes)
 * waits for the next batch, so the bytes posted last are the bytes that
 * stay.
 */
GDA_FT_TEST(soft_cuda, copies_that_continue_each_other_merge)
{
    uint16_t idx = 0;
    uint64_t merged, unmerged;
    cuda_test_t t;
    unsigned round;

    cuda_test_copies_merged(cuda_test_batch_copies,
                            "64 writes of 4 KiB read ahead", &merged,
                            &unmerged);
    GDA_FT_ASSERT_EQ(unmerged, 64);
    GDA_FT_ASSERT(merged <= 2);

    cuda_test_init(&t, NULL, 1024 * 1024);
    for (round = 0; round < 8; ++round) {
        /* slot 1 (A), slot 0 (B), then slot 1 again (C), from the
         * requester's A, B, C laid out so that C continues B */
        soft_fill(t.a, 3 * 4096, 40 + round);
        memset(t.b, 0xa5, 2 * 4096);
        cuda_test_write_at(&t, 2 * 4096, 4096, 4096, 0, &idx);
        cuda_test_write_at(&t, 0, 0, 4096, 0, &idx);
        cuda_test_write_at(&t, 4096, 4096, 4096, GDA_FT_WQE_SIGNALED, &idx);
        soft_ep_ring(&t.p.a);
        cuda_test_expect_ok(&t.p.a, idx);
        GDA_FT_ASSERT_MEM_EQ(t.b, t.a, 2 * 4096);
    }
    cuda_test_fini(&t);
}

/*
 * Writes of 4 KiB into two buffers of GPU memory in turns (two posters'
 * slots, each written in order), from host memory, both sides on one
 * engine thread: the writes a receive batch brings into each buffer run
 * as one copy from a gathered copy of their bytes, every byte in place.
 * Copies the stand-in ran, merged (MERGE=y) or not.
 */
static uint64_t cuda_test_writes_in_turns(const char *env)
{
    const unsigned n = 64, half = n / 2 * 4096;
    soft_fake_cudart_count_t copies;
    uint16_t idx = 0;
    uint64_t before;
    cuda_test_t t;
    unsigned i;

    setenv("UCX_GDA_FT_SOFT_THREADS", "1", 1);
    copies = soft_fake_cudart_load(20);
    cuda_test_init(&t, env, 2 * half);
    cuda_test_requester_on_host(&t);
    soft_fill(t.a, t.len, 77);
    memset(t.b, 0xa5, t.len);
    before = copies();
    for (i = 0; i < n; ++i) {
        /* the i-th write: slot i / 2 of buffer i % 2, from the source's
         * slot i, so that no two sources continue each other's */
        cuda_test_write_at(&t, (size_t)((i * 37) % n) * 4096,
                           (i % 2) * half + (i / 2) * 4096, 4096,
                           (i + 1 == n) ? GDA_FT_WQE_SIGNALED : 0, &idx);
    }
    soft_ep_ring(&t.p.a);
    cuda_test_expect_ok(&t.p.a, idx);
    before = copies() - before;
    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_MEM_EQ(t.b + (i % 2) * half + (i / 2) * 4096,
                             t.a + (size_t)((i * 37) % n) * 4096, 4096);
    }
    cuda_test_fini(&t);
    return before;
}

GDA_FT_TEST(soft_cuda, writes_in_turns_into_two_buffers_merge)
{
    uint64_t merged, unmerged;

    /* a receive batch brings 16 writes (TX_BUDGET): two copies */
    cuda_test_copies_merged(cuda_test_writes_in_turns,
                            "64 writes in turns into two buffers", &merged,
                            &unmerged);
    GDA_FT_ASSERT_EQ(unmerged, 64);
    GDA_FT_ASSERT(merged <= 64 / 4);
}

/*
 * Every engine thread sets up its streams before the first registration
 * of GPU memory returns, not in the pass that first meets GPU memory: two
 * streams and two pinned staging areas, milliseconds of CUDA calls that
 * would hold up every QP of the thread while kernels already post
 */
GDA_FT_TEST(soft_cuda, engine_sets_up_before_registration_returns)
{
    soft_fake_cudart_count_t streams;
    gda_ft_soft_engine_stats_t st;
    uint64_t before;
    cuda_test_t t;

    (void)soft_fake_cudart_load(0);
    streams = soft_fake_cudart_streams();
    before  = streams();
    cuda_test_init(&t, NULL, 4096);
    gda_ft_soft_engine_stats(&st);
    /* a stream for writes and one for reads, each */
    GDA_FT_ASSERT_EQ(streams() - before, 2 * st.workers);
    cuda_test_fini(&t);
}

/*
 * A message in GPU memory whose read takes half a second holds up no
 * other QP of the engine thread: a write between host buffers on a second
 * QP completes while the first is still being read. (It lands in host
 * memory: a write into GPU memory is waited for before its ACK, longer
 * than the QP's retransmission timeout here.)
 */
GDA_FT_TEST(soft_cuda, slow_gpu_read_holds_no_other_qp)
{
    soft_fake_cudart_count_t copies = soft_fake_cudart_load(500000);
    static uint8_t src[4096], dst[4096];
    gda_ft_dev_cqe_info_t info;
    gda_ft_hca_mr_t *smr, *dmr;
    soft_ep_t c, d;
    uint16_t slow_idx, idx;
    cuda_test_t t;
    double start;

    cuda_test_init_types(&t, NULL, 1024 * 1024, GDA_FT_HCA_MEM_HOST);
    soft_ep_create(&c, t.p.dev0, 1);
    soft_ep_create(&d, t.p.dev1, 1);
    soft_ep_pair_connect(&c, &d, &soft_default_params);
    smr = soft_mr(&c, src, sizeof(src), 0);
    dmr = soft_mr(&d, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    soft_fill(src, sizeof(src), 11);
    soft_fill(t.a, 4096, 12);

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.p.a.sq, (uintptr_t)t.a,
                                               t.amr->lkey, 4096,
                                               (uintptr_t)t.b, t.bmr->rkey,
                                               GDA_FT_WQE_SIGNALED,
                                               &slow_idx), GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    for (start = soft_now_sec(); copies() == 0;) {
        GDA_FT_ASSERT(soft_now_sec() - start < 10);
    }

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&c.sq, (uintptr_t)src,
                                               smr->lkey, sizeof(src),
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&c);
    cuda_test_expect_ok(&c, idx);
    GDA_FT_ASSERT_MEM_EQ(dst, src, sizeof(src));
    /* the slow one is not done yet */
    GDA_FT_ASSERT_EQ(soft_ep_poll_send(&t.p.a, &info), GDA_FT_DEV_INPROGRESS);

    cuda_test_expect_ok(&t.p.a, slow_idx);
    GDA_FT_ASSERT_MEM_EQ(t.b, t.a, 4096);
    printf("the GPU read took %.0f ms\n", (soft_now_sec() - start) * 1e3);

    gda_ft_hca_mr_dereg(smr);
    gda_ft_hca_mr_dereg(dmr);
    soft_ep_destroy(&c);
    soft_ep_destroy(&d);
    cuda_test_fini(&t);
}

/* A QP destroyed while its message is being read: the read lands into
 * nothing freed (AddressSanitizer checks), and the engine goes on */
GDA_FT_TEST(soft_cuda, qp_destroyed_while_its_message_is_read)
{
    soft_fake_cudart_count_t copies = soft_fake_cudart_load(300000);
    cuda_test_t t;
    uint16_t idx;
    double start;

    cuda_test_init(&t, NULL, 1024 * 1024);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.p.a.sq, (uintptr_t)t.a,
                                               t.amr->lkey, 65536,
                                               (uintptr_t)t.b, t.bmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    for (start = soft_now_sec(); copies() == 0;) {
        GDA_FT_ASSERT(soft_now_sec() - start < 10);
    }
    soft_ep_destroy(&t.p.a);
    soft_ep_create(&t.p.a, t.p.dev0, 1);
    usleep(400000);   /* the read lands */
    cuda_test_fini(&t);
}

/*
 * Four QPs, each with a ring of messages in GPU memory: more reads than
 * the engine thread's read staging area holds, queued by QPs that wait
 * for room while the reads that hold it belong to the others' later WQEs.
 */
GDA_FT_TEST(soft_cuda, four_full_rings_share_the_reads)
{
    enum { NQP = 4, NMSG = SOFT_TEST_SQ_SIZE - 1, SIZE = 4096 };
    unsigned access = GDA_FT_HCA_ACCESS_LOCAL_WRITE |
                      GDA_FT_HCA_ACCESS_REMOTE_WRITE;
    soft_ep_t req[NQP], resp[NQP];
    gda_ft_hca_mr_t *smr[NQP], *dmr[NQP];
    uint8_t *src[NQP], *dst[NQP];
    uint16_t idx[NQP];
    gda_ft_dev_cqe_info_t info;
    unsigned q, i, round;
    soft_pair_t p;

    (void)soft_fake_cudart_load(5);
    soft_pair_init(&p, NULL, NULL);
    for (q = 0; q < NQP; ++q) {
        soft_ep_create(&req[q], p.dev0, 1);
        soft_ep_create(&resp[q], p.dev1, 1);
        soft_ep_pair_connect(&req[q], &resp[q], &soft_default_params);
        src[q] = aligned_alloc(64, NMSG * SIZE);
        dst[q] = aligned_alloc(64, NMSG * SIZE);
        smr[q] = cuda_test_mr(&req[q], src[q], NMSG * SIZE, access,
                              GDA_FT_HCA_MEM_CUDA);
        dmr[q] = cuda_test_mr(&resp[q], dst[q], NMSG * SIZE, access,
                              GDA_FT_HCA_MEM_CUDA);
    }
    for (round = 0; round < 3; ++round) {
        for (q = 0; q < NQP; ++q) {
            soft_fill(src[q], NMSG * SIZE, round * NQP + q);
            memset(dst[q], 0, NMSG * SIZE);
            for (i = 0; i < NMSG; ++i) {
                GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                        &req[q].sq, (uintptr_t)src[q] + i * SIZE,
                        smr[q]->lkey, SIZE, (uintptr_t)dst[q] + i * SIZE,
                        dmr[q]->rkey, (i + 1 == NMSG) ? GDA_FT_WQE_SIGNALED :
                                                        0, &idx[q]),
                        GDA_FT_DEV_OK);
            }
        }
        for (q = 0; q < NQP; ++q) {
            soft_ep_ring(&req[q]);
        }
        for (q = 0; q < NQP; ++q) {
            soft_ep_wait_send(&req[q], &info, 20000);
            GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
            GDA_FT_ASSERT_EQ(info.wqe_counter, idx[q]);
            GDA_FT_ASSERT_MEM_EQ(dst[q], src[q], NMSG * SIZE);
        }
    }
    for (q = 0; q < NQP; ++q) {
        soft_ep_destroy(&req[q]);
        soft_ep_destroy(&resp[q]);
        free(src[q]);
        free(dst[q]);
    }
    soft_pair_fini(&p);
}

/*
 * Four QPs, each with a message in GPU memory, rung while the engine's
 * lock is held so that one pass finds them all: their reads go out in one
 * batch behind one event, and while the copies take 20 ms each the engine
 * asks whether that event is done at most once every 4 us.
 */
GDA_FT_TEST(soft_cuda, reads_of_a_pass_go_in_one_batch)
{
    enum { NQP = 4, SIZE = 4096 };
    soft_fake_cudart_count_t records, queries;
    uint64_t records_before, queries_before;
    soft_ep_t req[NQP], resp[NQP];
    gda_ft_hca_mr_t *smr[NQP], *dmr[NQP];
    uint8_t *src[NQP], *dst[NQP];
    gda_ft_dev_cqe_info_t info;
    uint16_t idx[NQP];
    double start, took_us;
    soft_pair_t p;
    unsigned q;

    (void)soft_fake_cudart_load(20000);
    records = soft_fake_cudart_counter("gda_ft_fake_cudart_event_records");
    queries = soft_fake_cudart_counter("gda_ft_fake_cudart_event_queries");
    soft_pair_init(&p, NULL, NULL);
    for (q = 0; q < NQP; ++q) {
        soft_ep_create(&req[q], p.dev0, 1);
        soft_ep_create(&resp[q], p.dev1, 1);
        soft_ep_pair_connect(&req[q], &resp[q], &soft_default_params);
        src[q] = aligned_alloc(64, SIZE);
        dst[q] = calloc(1, SIZE);
        soft_fill(src[q], SIZE, 40 + q);
        smr[q] = cuda_test_mr(&req[q], src[q], SIZE, 0, GDA_FT_HCA_MEM_CUDA);
        dmr[q] = soft_mr(&resp[q], dst[q], SIZE,
                         GDA_FT_HCA_ACCESS_REMOTE_WRITE);
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &req[q].sq, (uintptr_t)src[q], smr[q]->lkey, SIZE,
                (uintptr_t)dst[q], dmr[q]->rkey, GDA_FT_WQE_SIGNALED,
                &idx[q]), GDA_FT_DEV_OK);
    }

    records_before = records();
    queries_before = queries();
    start          = soft_now_sec();
    gda_ft_soft_engine_lock();
    for (q = 0; q < NQP; ++q) {
        soft_ep_ring(&req[q]);
    }
    gda_ft_soft_engine_unlock();
    for (q = 0; q < NQP; ++q) {
        soft_ep_wait_send(&req[q], &info, 20000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        GDA_FT_ASSERT_EQ(info.wqe_counter, idx[q]);
        GDA_FT_ASSERT_MEM_EQ(dst[q], src[q], SIZE);
    }
    took_us = (soft_now_sec() - start) * 1e6;
    printf("4 reads: %" PRIu64 " events, %" PRIu64 " queries in %.0f us\n",
           records() - records_before, queries() - queries_before, took_us);
    GDA_FT_ASSERT_EQ(records() - records_before, 1);
    GDA_FT_ASSERT(took_us >= 4 * 20000);
    GDA_FT_ASSERT((queries() - queries_before) <= (took_us / 4) + 16);

    for (q = 0; q < NQP; ++q) {
        gda_ft_hca_mr_dereg(smr[q]);
        gda_ft_hca_mr_dereg(dmr[q]);
        soft_ep_destroy(&req[q]);
        soft_ep_destroy(&resp[q]);
        free(src[q]);
        free(dst[q]);
    }
    soft_pair_fini(&p);
}

/*
 * Copies the CUDA runtime refuses (device memory freed while registered;
 * the stand-in refuses copies that touch a range the test names): the
 * operation they served fails, as a ConnectX fails an access to memory
 * whose key was invalidated, and no CQE reports an operation whose bytes
 * did not move. Every refusal below is checked to have happened.
 */
typedef void (*cuda_test_refuse_func_t)(const void *addr, size_t len);

static uint64_t cuda_test_refuse(const void *addr, size_t len)
{
    cuda_test_refuse_func_t refuse = (cuda_test_refuse_func_t)dlsym(
            RTLD_DEFAULT, "gda_ft_fake_cudart_refuse");

    GDA_FT_ASSERT(refuse != NULL);
    refuse(addr, len);
    return soft_fake_cudart_counter("gda_ft_fake_cudart_refusals")();
}

/* The next CQE on ep's send CQ: WQE idx, failed with syndrome */
static void cuda_test_expect_error(soft_ep_t *ep, uint16_t idx,
                                   uint8_t syndrome)
{
    gda_ft_dev_cqe_info_t info;

    soft_ep_wait_send(ep, &info, 20000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ_ERR);
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
    if (info.syndrome != syndrome) {
        GDA_FT_FAIL("WQE %u: %s, not %s", idx,
                    gda_ft_hca_syndrome_str(info.syndrome),
                    gda_ft_hca_syndrome_str(syndrome));
    }
}

/* One signalled op of the requester (post), refused where the test said,
 * fails with syndrome */
static void cuda_test_refused_op(cuda_test_t *t, uint64_t refusals_before,
                                 uint16_t idx, uint8_t syndrome)
{
    soft_ep_ring(&t->p.a);
    cuda_test_expect_error(&t->p.a, idx, syndrome);
    GDA_FT_ASSERT(soft_fake_cudart_counter("gda_ft_fake_cudart_refusals")() >
                  refusals_before);
    (void)cuda_test_refuse(NULL, 0);
}

/*
 * Ten 4 KiB writes, each signalled, into consecutive slots of the
 * responder's GPU memory, the sixth refused: each CQE that reports a write
 * done has its bytes in place, the sixth's CQE is a remote access error,
 * and the rest are flushed. Unmerged, the five before it complete; merged,
 * a run of copies is refused whole, and the error may name the run's
 * first write.
 */
static void cuda_test_refused_writes(const char *env, int unmerged)
{
    gda_ft_dev_cqe_info_t info;
    unsigned i, errors = 0;
    uint64_t before;
    uint16_t idx = 0;
    cuda_test_t t;

    (void)soft_fake_cudart_load(20);
    cuda_test_init(&t, env, 64 * 1024);
    soft_fill(t.a, 10 * 4096, 77);
    memset(t.b, 0xa5, t.len);
    before = cuda_test_refuse(t.b + 5 * 4096, 4096);
    for (i = 0; i < 10; ++i) {
        cuda_test_write_at(&t, i * 4096, i * 4096, 4096,
                           GDA_FT_WQE_SIGNALED, &idx);
    }
    soft_ep_ring(&t.p.a);
    for (i = 0; i < 10; ++i) {
        soft_ep_wait_send(&t.p.a, &info, 20000);
        GDA_FT_ASSERT_EQ(info.wqe_counter, (uint16_t)(idx - 9 + i));
        if (info.opcode == GDA_FT_MLX5_CQE_REQ) {
            GDA_FT_ASSERT_EQ(errors, 0);
            GDA_FT_ASSERT(i != 5);
            GDA_FT_ASSERT_MEM_EQ(t.b + i * 4096, t.a + i * 4096, 4096);
            continue;
        }
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ_ERR);
        GDA_FT_ASSERT_EQ(info.syndrome, (errors == 0) ?
                         GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR :
                         GDA_FT_MLX5_SYND_WR_FLUSH_ERR);
        GDA_FT_ASSERT(!unmerged || (errors > 0) || (i == 5));
        ++errors;
    }
    GDA_FT_ASSERT(soft_fake_cudart_counter("gda_ft_fake_cudart_refusals")() >
                  before);
    (void)cuda_test_refuse(NULL, 0);
    cuda_test_fini(&t);
}

GDA_FT_TEST(soft_cuda, refused_write_fails_it_and_none_before)
{
    cuda_test_refused_writes("UCX_GDA_FT_SOFT_CUDA_COPY_MERGE=n", 1);
}

GDA_FT_TEST(soft_cuda, refused_run_of_merged_writes_fails)
{
    cuda_test_refused_writes("UCX_GDA_FT_SOFT_CUDA_COPY_MERGE=y", 0);
}

GDA_FT_TEST(soft_cuda, refused_write_in_a_batch_fails_it_and_none_before)
{
    /* the run the runtime does not report as device memory is left out of
     * the batch (which would fault on it) and queued alone, refused copy
     * by copy */
    setenv("UCX_GDA_FT_SOFT_CUDA_COPY_BATCH", "y", 1);
    cuda_test_refused_writes("UCX_GDA_FT_SOFT_CUDA_COPY_MERGE=n", 1);
}

/* A message whose bytes in the requester's GPU memory cannot be read fails
 * with a local protection error and sends nothing: read ahead (env NULL)
 * or per packet */
static void cuda_test_refused_message(const char *env)
{
    uint64_t before;
    uint16_t idx;
    cuda_test_t t;

    (void)soft_fake_cudart_load(20);
    cuda_test_init(&t, env, 64 * 1024);
    memset(t.b, 0xa5, t.len);
    before = cuda_test_refuse(t.a + 4096, 4096);
    cuda_test_write_at(&t, 0, 0, 3 * 4096, GDA_FT_WQE_SIGNALED, &idx);
    cuda_test_refused_op(&t, before, idx, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
    GDA_FT_ASSERT_EQ(t.b[4096], 0xa5);
    cuda_test_fini(&t);
}

GDA_FT_TEST(soft_cuda, refused_message_read_ahead_fails)
{
    cuda_test_refused_message(NULL);
}

/* Two messages read in one batch (their sources apart: two copies), the
 * second's refused: it is left out of the batch, which would fault on it,
 * and its operation fails */
GDA_FT_TEST(soft_cuda, refused_message_read_in_a_batch_fails)
{
    uint64_t before;
    uint16_t idx;
    cuda_test_t t;

    (void)soft_fake_cudart_load(20);
    cuda_test_init(&t, "UCX_GDA_FT_SOFT_CUDA_COPY_BATCH=y", 64 * 1024);
    memset(t.b, 0xa5, t.len);
    before = cuda_test_refuse(t.a + 8192, 4096);
    cuda_test_write_at(&t, 0, 0, 4096, 0, &idx);
    cuda_test_write_at(&t, 8192, 8192, 4096, GDA_FT_WQE_SIGNALED, &idx);
    cuda_test_refused_op(&t, before, idx, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
    GDA_FT_ASSERT_MEM_EQ(t.b, t.a, 4096);
    GDA_FT_ASSERT_EQ(t.b[8192], 0xa5);
    cuda_test_fini(&t);
}

GDA_FT_TEST(soft_cuda, refused_message_per_packet_fails)
{
    cuda_test_refused_message("UCX_GDA_FT_SOFT_CUDA_SNAPSHOT=n");
}

/* RDMA READs: from the responder's refused GPU memory (a remote access
 * error), into the requester's (a local protection error) */
GDA_FT_TEST(soft_cuda, refused_read_fails)
{
    uint8_t *sides[2], synds[2] = {GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR,
                                   GDA_FT_MLX5_SYND_LOCAL_PROT_ERR};
    unsigned side;
    uint64_t before;
    uint16_t idx;
    cuda_test_t t;

    (void)soft_fake_cudart_load(20);
    for (side = 0; side < 2; ++side) {
        cuda_test_init(&t, NULL, 64 * 1024);
        sides[0] = t.b;
        sides[1] = t.a;
        before   = cuda_test_refuse(sides[side] + 8192, 4096);
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &t.p.a.sq, (uintptr_t)t.a, t.amr->lkey, 3 * 4096,
                (uintptr_t)t.b, t.bmr->rkey, GDA_FT_WQE_SIGNALED, &idx),
                GDA_FT_DEV_OK);
        cuda_test_refused_op(&t, before, idx, synds[side]);
        cuda_test_fini(&t);
    }
}

/*
 * A read of GPU memory is copied as the responder executes it, in one copy
 * up to 64 KiB (its responses leave from the copy); a longer one reads
 * its bytes as its responses are built. Either shows what was there when
 * it executed: a write of the same bytes right behind it does not reach
 * it.
 */
static void cuda_test_read_then_write(cuda_test_t *t, size_t len, int write)
{
    uint8_t *seen = t->a + 2 * (len + 64), *later = t->a + len + 64;
    uint16_t idx;

    soft_fill(t->b, len, (unsigned)len);
    memcpy(seen, t->b, len);
    soft_fill(later, len, (unsigned)len + 1);
    memset(t->a, 0x5a, len + 1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
            &t->p.a.sq, (uintptr_t)t->a, t->amr->lkey, len,
            (uintptr_t)t->b, t->bmr->rkey, write ? 0 : GDA_FT_WQE_SIGNALED,
            &idx), GDA_FT_DEV_OK);
    if (write) {
        cuda_test_write_at(t, len + 64, 0, len, GDA_FT_WQE_SIGNALED, &idx);
    }
    soft_ep_ring(&t->p.a);
    cuda_test_expect_ok(&t->p.a, idx);
    GDA_FT_ASSERT_MEM_EQ(t->a, seen, len);
    GDA_FT_ASSERT_EQ(t->a[len], 0x5a);
    GDA_FT_ASSERT_MEM_EQ(t->b, write ? later : seen, len);
}

GDA_FT_TEST(soft_cuda, read_of_gpu_memory_is_copied_once)
{
    static const struct {
        size_t   len;
        unsigned copies;
    } reads[] = {{4096, 1}, {65536, 1}, {65536 + 4096, 17}};
    soft_fake_cudart_count_t device_reads;
    uint64_t before;
    cuda_test_t t;
    unsigned i;

    (void)soft_fake_cudart_load(20);
    device_reads = soft_fake_cudart_counter(
            "gda_ft_fake_cudart_device_reads");
    cuda_test_init(&t, NULL, 512 * 1024);
    cuda_test_requester_on_host(&t);
    for (i = 0; i < sizeof(reads) / sizeof(reads[0]); ++i) {
        before = device_reads();
        cuda_test_read_then_write(&t, reads[i].len, 0);
        GDA_FT_ASSERT_EQ(device_reads() - before, reads[i].copies);
        cuda_test_read_then_write(&t, reads[i].len, 1);
    }
    cuda_test_fini(&t);
}

/*
 * Atomics on GPU words posted with writes on one QP, both sides on one
 * engine thread (a pass receives what the one before sent): the atomics
 * a pass receives run together, their words read once each; one on a
 * word that another changed in the same pass computes from its result; a
 * write over a word lands after the atomics before it and under those
 * after it; an atomic on part of a word runs in turn. Every old value,
 * word and byte is checked; the stand-in counts the words read.
 */
#define CUDA_TEST_ROUNDS  16
#define CUDA_TEST_FADDS   6
#define CUDA_TEST_ATOMICS ((CUDA_TEST_FADDS + 1) * CUDA_TEST_ROUNDS + 1)

static unsigned cuda_test_atomics_with_writes(const char *env)
{
    const unsigned data = 8192, over = 4096, rounds = CUDA_TEST_ROUNDS;
    const unsigned per  = CUDA_TEST_FADDS + 1;
    soft_fake_cudart_count_t word_reads;
    uint64_t *x, *z, *res, before, expect;
    uint16_t idx;
    unsigned i, k;
    cuda_test_t t;

    setenv("UCX_GDA_FT_SOFT_THREADS", "1", 1);
    (void)soft_fake_cudart_load(20);
    word_reads = soft_fake_cudart_counter("gda_ft_fake_cudart_word_reads");
    cuda_test_init(&t, env, 64 * 1024);
    x   = (uint64_t*)t.b;
    z   = (uint64_t*)(t.b + 64);
    res = (uint64_t*)t.a;     /* CUDA_TEST_FADDS + 1 a round, and 1 */
    *x  = 1000;
    *z  = 0;
    memset(res, 0, CUDA_TEST_ATOMICS * sizeof(*res));
    memset(t.a + over, 0, rounds * 16);
    for (i = 0; i < rounds; ++i) {
        *(uint64_t*)(t.a + over + i * 16) = 10000 * (i + 1);  /* over x */
    }
    soft_fill(t.a + data, rounds * 64, 7);
    memset(t.b + data, 0, rounds * 64);

    /* a round: data, fetch-adds of x, every fourth a write over x,
     * a compare-swap of z */
    before = word_reads();
    for (i = 0; i < rounds; ++i) {
        cuda_test_write_at(&t, data + i * 64, data + i * 64, 64, 0, &idx);
        for (k = 0; k < CUDA_TEST_FADDS; ++k) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &t.p.a.sq, (uintptr_t)&res[per * i + k], t.amr->lkey,
                    (uintptr_t)x, t.bmr->rkey, 1, 0, &idx), GDA_FT_DEV_OK);
        }
        if ((i % 4) == 3) {
            cuda_test_write_at(&t, over + i * 16, 0, 16, 0, &idx);
        }
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(
                &t.p.a.sq, (uintptr_t)&res[per * i + k], t.amr->lkey,
                (uintptr_t)z, t.bmr->rkey, i, i + 1, 0, &idx),
                GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs32(
            &t.p.a.sq, (uintptr_t)&res[per * rounds], t.amr->lkey,
            (uintptr_t)z, t.bmr->rkey, rounds, 777, UINT32_MAX, UINT32_MAX,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    cuda_test_expect_ok(&t.p.a, idx);

    for (i = 0, expect = 1000; i < rounds; ++i) {
        for (k = 0; k < CUDA_TEST_FADDS; ++k) {
            GDA_FT_ASSERT_EQ(be64toh(res[per * i + k]), expect++);
        }
        if ((i % 4) == 3) {
            expect = 10000 * (i + 1);
        }
        GDA_FT_ASSERT_EQ(be64toh(res[per * i + k]), i);
    }
    GDA_FT_ASSERT_EQ(*x, expect);
    GDA_FT_ASSERT_EQ(ntohl(*(uint32_t*)&res[per * rounds]), rounds);
    GDA_FT_ASSERT_EQ(*z, 777);
    GDA_FT_ASSERT_MEM_EQ(t.b + data, t.a + data, rounds * 64);
    cuda_test_fini(&t);
    return word_reads() - before;
}

GDA_FT_TEST(soft_cuda, atomics_of_a_pass_run_together)
{
    unsigned reads = cuda_test_atomics_with_writes(NULL);

    /* x and z read once a pass, and x again after each write over it: a
     * pass receives what the requester's window (16 reads and atomics)
     * and quantum let it send, about a third of a read per atomic */
    printf("%u word reads for %u atomics\n", reads, CUDA_TEST_ATOMICS);
    GDA_FT_ASSERT(reads <= CUDA_TEST_ATOMICS / 2);
}

GDA_FT_TEST(soft_cuda, atomics_one_at_a_time)
{
    /* each atomic reads its word and waits */
    GDA_FT_ASSERT_EQ(cuda_test_atomics_with_writes(
            "UCX_GDA_FT_SOFT_CUDA_ATOMIC_BATCH=n"), CUDA_TEST_ATOMICS);
}


/* Fetch-adds: on a word in the responder's refused GPU memory (a remote
 * access error, the word unchanged), and with the result going to the
 * requester's (a local protection error) */
GDA_FT_TEST(soft_cuda, refused_fetch_add_fails)
{
    uint64_t *word, before;
    uint16_t idx;
    cuda_test_t t;

    (void)soft_fake_cudart_load(20);
    cuda_test_init(&t, NULL, 4096);
    word  = (uint64_t*)t.b;
    *word = 1000;
    before = cuda_test_refuse(word, sizeof(*word));
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
            &t.p.a.sq, (uintptr_t)t.a, t.amr->lkey, (uintptr_t)word,
            t.bmr->rkey, 1, GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    cuda_test_refused_op(&t, before, idx, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR);
    GDA_FT_ASSERT_EQ(*word, 1000);
    cuda_test_fini(&t);

    cuda_test_init(&t, NULL, 4096);
    before = cuda_test_refuse(t.a, sizeof(uint64_t));
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
            &t.p.a.sq, (uintptr_t)t.a, t.amr->lkey, (uintptr_t)t.b,
            t.bmr->rkey, 1, GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    cuda_test_refused_op(&t, before, idx, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
    cuda_test_fini(&t);
}

/* A SEND into a receive buffer in refused GPU memory: the receive
 * completes with a local protection error, the send with a remote access
 * error */
GDA_FT_TEST(soft_cuda, refused_receive_fails)
{
    gda_ft_dev_cqe_info_t info;
    uint64_t before;
    uint16_t idx;
    cuda_test_t t;

    (void)soft_fake_cudart_load(20);
    cuda_test_init(&t, NULL, 64 * 1024);
    soft_ep_post_recv(&t.p.b, t.b, 8192, t.bmr->lkey);
    before = cuda_test_refuse(t.b + 4096, 4096);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send(&t.p.a.sq, (uintptr_t)t.a,
                                         t.amr->lkey, 8192,
                                         GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    cuda_test_refused_op(&t, before, idx, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR);
    soft_ep_wait_recv(&t.p.b, &info, 20000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_RESP_ERR);
    GDA_FT_ASSERT_EQ(info.syndrome, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
    cuda_test_fini(&t);
}
