/*
 * Send and receive WQEs built by device/gda_ft_wqe.h, compiled for the host:
 * every WQE type is posted into a ring and its bytes are compared with the
 * mlx5 layout, byte by byte, independently of the structs in
 * gda_ft_mlx5_prm.h. Also: ring wraparound, a full ring, the doorbell.
 */
#include "gda_ft_test.h"

#include "gda_ft_wqe.h"
#include "gda_ft_chan_failover.h"

#include <sys/eventfd.h>
#include <unistd.h>

#define TEST_QPN     0x00abcdefu
#define TEST_LADDR   0x1122334455667788ull
#define TEST_LKEY    0x0a0b0c0du
#define TEST_RADDR   0x8877665544332211ull
#define TEST_RKEY    0xd0c0b0a0u
#define TEST_FILL    0xcc

typedef struct {
    gda_ft_dev_sq_t    sq;
    uint8_t           *buf;
    volatile uint32_t  dbrec[2];
    volatile uint64_t  uar;
} test_sq_t;


static void test_sq_init(test_sq_t *t, uint32_t wqebb_cnt, int wake_fd)
{
    t->buf = (uint8_t*)aligned_alloc(GDA_FT_MLX5_WQE_BB,
                                     wqebb_cnt * GDA_FT_MLX5_WQE_BB);
    GDA_FT_ASSERT(t->buf != NULL);
    memset(t->buf, TEST_FILL, wqebb_cnt * GDA_FT_MLX5_WQE_BB);
    t->dbrec[0] = 0x5a5a5a5a;
    t->dbrec[1] = 0;
    t->uar      = 0;
    gda_ft_dev_sq_init(&t->sq, t->buf, wqebb_cnt, TEST_QPN, t->dbrec, &t->uar,
                       wake_fd, NULL, 256);
}

static void test_sq_cleanup(test_sq_t *t)
{
    free(t->buf);
}

/* Big-endian field readers over raw bytes */
static uint32_t be16_at(const uint8_t *p)
{
    return ((uint32_t)p[0] << 8) | p[1];
}

static uint32_t be32_at(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t be64_at(const uint8_t *p)
{
    return ((uint64_t)be32_at(p) << 32) | be32_at(p + 4);
}

static const uint8_t *wqe_at(const test_sq_t *t, uint16_t wqe_idx)
{
    return t->buf + (wqe_idx & t->sq.wqebb_mask) * GDA_FT_MLX5_WQE_BB;
}

/* ctrl segment: opmod | wqe_idx | opcode, qpn | ds, signature, fm_ce_se */
static void check_ctrl(const uint8_t *ctrl, uint8_t opcode, uint8_t opmod,
                       uint16_t wqe_idx, unsigned ds, uint8_t fm_ce_se,
                       uint32_t imm)
{
    GDA_FT_ASSERT_EQ(ctrl[0], opmod);
    GDA_FT_ASSERT_EQ(be16_at(ctrl + 1), wqe_idx);
    GDA_FT_ASSERT_EQ(ctrl[3], opcode);
    GDA_FT_ASSERT_EQ(be32_at(ctrl + 4), (TEST_QPN << 8) | ds);
    GDA_FT_ASSERT_EQ(ctrl[8], 0);   /* signature */
    GDA_FT_ASSERT_EQ(ctrl[9], 0);
    GDA_FT_ASSERT_EQ(ctrl[10], 0);
    GDA_FT_ASSERT_EQ(ctrl[11], fm_ce_se);
    GDA_FT_ASSERT_EQ(be32_at(ctrl + 12), imm);
}

static void check_raddr(const uint8_t *seg, uint64_t raddr, uint32_t rkey)
{
    GDA_FT_ASSERT_EQ(be64_at(seg), raddr);
    GDA_FT_ASSERT_EQ(be32_at(seg + 8), rkey);
    GDA_FT_ASSERT_EQ(be32_at(seg + 12), 0);
}

static void check_data(const uint8_t *seg, uint32_t length, uint32_t lkey,
                       uint64_t addr)
{
    GDA_FT_ASSERT_EQ(be32_at(seg), length);
    GDA_FT_ASSERT_EQ(be32_at(seg + 4), lkey);
    GDA_FT_ASSERT_EQ(be64_at(seg + 8), addr);
}

/* Bytes after a WQE's last segment, up to the end of its last WQEBB, are
 * left alone */
static void check_untouched(const uint8_t *p, size_t length)
{
    size_t i;

    for (i = 0; i < length; ++i) {
        GDA_FT_ASSERT_EQ(p[i], TEST_FILL);
    }
}


GDA_FT_TEST(dev_wqe, nop_ctrl_bytes)
{
    test_sq_t t;
    uint16_t  idx = 0xffff;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_nop(&t.sq, GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 0);
    check_ctrl(wqe_at(&t, 0), 0x00, 0, 0, 1, 0x08, 0);
    check_untouched(wqe_at(&t, 0) + 16, 48);
    GDA_FT_ASSERT_EQ(t.sq.pi, 1);
    GDA_FT_ASSERT_EQ(t.sq.last_wqe_idx, 0);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, wqe_index_is_producer_index)
{
    test_sq_t t;
    uint16_t  idx;
    int       i;

    test_sq_init(&t, 8, -1);
    for (i = 0; i < 5; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_nop(&t.sq, 0, &idx), GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(idx, i);
        check_ctrl(wqe_at(&t, i), 0x00, 0, i, 1, 0, 0);
    }
    GDA_FT_ASSERT_EQ(t.sq.pi, 5);
    GDA_FT_ASSERT_EQ(t.sq.last_wqe_idx, 4);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, flags_set_fm_ce_se)
{
    test_sq_t t;

    test_sq_init(&t, 8, -1);
    gda_ft_sq_post_nop(&t.sq, 0, NULL);
    gda_ft_sq_post_nop(&t.sq, GDA_FT_WQE_SIGNALED, NULL);
    gda_ft_sq_post_nop(&t.sq, GDA_FT_WQE_FENCE, NULL);
    gda_ft_sq_post_nop(&t.sq, GDA_FT_WQE_SOLICITED, NULL);
    gda_ft_sq_post_nop(&t.sq, GDA_FT_WQE_SIGNALED | GDA_FT_WQE_FENCE, NULL);
    GDA_FT_ASSERT_EQ(wqe_at(&t, 0)[11], 0x00);
    GDA_FT_ASSERT_EQ(wqe_at(&t, 1)[11], 0x08);
    GDA_FT_ASSERT_EQ(wqe_at(&t, 2)[11], 0x80);
    GDA_FT_ASSERT_EQ(wqe_at(&t, 3)[11], 0x02);
    GDA_FT_ASSERT_EQ(wqe_at(&t, 4)[11], 0x88);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, rdma_write_bytes)
{
    test_sq_t      t;
    const uint8_t *wqe;
    uint16_t       idx;

    test_sq_init(&t, 8, -1);
    gda_ft_sq_post_nop(&t.sq, 0, NULL);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.sq, TEST_LADDR, TEST_LKEY,
                                               4096, TEST_RADDR, TEST_RKEY,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 1);
    wqe = wqe_at(&t, 1);
    check_ctrl(wqe, 0x08, 0, 1, 3, 0x08, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    check_data(wqe + 32, 4096, TEST_LKEY, TEST_LADDR);
    check_untouched(wqe + 48, 16);
    GDA_FT_ASSERT_EQ(t.sq.pi, 2);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, rdma_write_zero_length_has_no_data_seg)
{
    test_sq_t t;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.sq, TEST_LADDR, TEST_LKEY, 0,
                                               TEST_RADDR, TEST_RKEY, 0, NULL),
                     GDA_FT_DEV_OK);
    check_ctrl(wqe_at(&t, 0), 0x08, 0, 0, 2, 0, 0);
    check_raddr(wqe_at(&t, 0) + 16, TEST_RADDR, TEST_RKEY);
    check_untouched(wqe_at(&t, 0) + 32, 32);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, length_with_inline_bit_is_error)
{
    test_sq_t t;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.sq, TEST_LADDR, TEST_LKEY,
                                               0x80000000u, TEST_RADDR,
                                               TEST_RKEY, 0, NULL),
                     GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send(&t.sq, TEST_LADDR, TEST_LKEY,
                                         0xffffffffu, 0, NULL),
                     GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(t.sq.pi, 0);
    check_untouched(t.buf, 8 * 64);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, write_inline_bytes)
{
    test_sq_t      t;
    const uint8_t  payload[5] = {0xde, 0xad, 0xbe, 0xef, 0x42};
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_inline(&t.sq, payload,
                                                      sizeof(payload),
                                                      TEST_RADDR, TEST_RKEY,
                                                      GDA_FT_WQE_SIGNALED,
                                                      NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    /* ctrl + raddr + one segment holding 4 header + 5 data bytes */
    check_ctrl(wqe, 0x08, 0, 0, 3, 0x08, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    GDA_FT_ASSERT_EQ(be32_at(wqe + 32), 0x80000000u | sizeof(payload));
    GDA_FT_ASSERT_MEM_EQ(wqe + 36, payload, sizeof(payload));
    GDA_FT_ASSERT_EQ(t.sq.pi, 1);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, write_inline_sizes_round_to_segments_and_wqebbs)
{
    /* length -> ds (ctrl, raddr, inline segments) -> WQEBBs */
    static const struct {
        uint32_t length;
        unsigned ds;
        unsigned wqebbs;
    } cases[] = {
        {0, 3, 1}, {12, 3, 1}, {13, 4, 1}, {28, 4, 1}, {29, 5, 2},
        {92, 8, 2}, {93, 9, 3}, {220, 16, 4}, {221, 17, 5}
    };
    uint8_t   payload[256];
    test_sq_t t;
    size_t    i;
    uint16_t  idx;

    for (i = 0; i < sizeof(payload); ++i) {
        payload[i] = (uint8_t)(i * 7 + 1);
    }

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        test_sq_init(&t, 16, -1);
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_inline(&t.sq, payload,
                                                          cases[i].length,
                                                          TEST_RADDR,
                                                          TEST_RKEY, 0, &idx),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CTRL_DS(
                                 (const gda_ft_mlx5_ctrl_seg_t*)t.buf),
                         cases[i].ds);
        GDA_FT_ASSERT_EQ(t.sq.pi, cases[i].wqebbs);
        GDA_FT_ASSERT_EQ(be32_at(t.buf + 32), 0x80000000u | cases[i].length);
        GDA_FT_ASSERT_MEM_EQ(t.buf + 36, payload, cases[i].length);
        test_sq_cleanup(&t);
    }
}

GDA_FT_TEST(dev_wqe, inline_longer_than_max_is_error)
{
    uint8_t   payload[257] = {0};
    test_sq_t t;

    test_sq_init(&t, 16, -1); /* max_inline 256 */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_inline(&t.sq, payload, 257,
                                                      TEST_RADDR, TEST_RKEY, 0,
                                                      NULL),
                     GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send_inline(&t.sq, payload, 257, 0, NULL),
                     GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(t.sq.pi, 0);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_inline(&t.sq, payload, 256,
                                                      TEST_RADDR, TEST_RKEY, 0,
                                                      NULL),
                     GDA_FT_DEV_OK);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, write_imm_bytes)
{
    test_sq_t      t;
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_imm(&t.sq, TEST_LADDR,
                                                   TEST_LKEY, 100, TEST_RADDR,
                                                   TEST_RKEY, 0x01020304,
                                                   GDA_FT_WQE_SIGNALED, NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    check_ctrl(wqe, 0x09, 0, 0, 3, 0x08, 0x01020304);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    check_data(wqe + 32, 100, TEST_LKEY, TEST_LADDR);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, rdma_read_bytes)
{
    test_sq_t      t;
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(&t.sq, TEST_LADDR, TEST_LKEY,
                                              65536, TEST_RADDR, TEST_RKEY,
                                              GDA_FT_WQE_SIGNALED, NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    check_ctrl(wqe, 0x10, 0, 0, 3, 0x08, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    check_data(wqe + 32, 65536, TEST_LKEY, TEST_LADDR);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, send_and_send_imm_bytes)
{
    test_sq_t t;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send(&t.sq, TEST_LADDR, TEST_LKEY, 77, 0,
                                         NULL),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send_imm(&t.sq, TEST_LADDR, TEST_LKEY, 78,
                                             0xcafef00d, GDA_FT_WQE_SIGNALED,
                                             NULL),
                     GDA_FT_DEV_OK);
    check_ctrl(wqe_at(&t, 0), 0x0a, 0, 0, 2, 0, 0);
    check_data(wqe_at(&t, 0) + 16, 77, TEST_LKEY, TEST_LADDR);
    check_untouched(wqe_at(&t, 0) + 32, 32);
    check_ctrl(wqe_at(&t, 1), 0x0b, 0, 1, 2, 0x08, 0xcafef00d);
    check_data(wqe_at(&t, 1) + 16, 78, TEST_LKEY, TEST_LADDR);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, send_inline_bytes)
{
    const char     msg[] = "active message header";
    test_sq_t      t;
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send_inline(&t.sq, msg, sizeof(msg), 0,
                                                NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    /* ctrl + 4 + 22 bytes = two inline segments */
    check_ctrl(wqe, 0x0a, 0, 0, 3, 0, 0);
    GDA_FT_ASSERT_EQ(be32_at(wqe + 16), 0x80000000u | sizeof(msg));
    GDA_FT_ASSERT_MEM_EQ(wqe + 20, msg, sizeof(msg));
    test_sq_cleanup(&t);
}

/* A channel of 2 paths over rings t[0..2) of n WQEBBs, with their slots
 * (zeroed), max_chunk bytes per WQE and a 1024-byte MTU */
static void test_chan_init(gda_ft_chan_t *chan, test_sq_t *t,
                           gda_ft_chan_slot_t *slots, unsigned n,
                           uint32_t max_chunk)
{
    unsigned i;

    memset(chan, 0, sizeof(*chan));
    memset(slots, 0, 2 * n * sizeof(*slots));
    chan->wqebb_cnt = n;
    chan->max_chunk = max_chunk;
    chan->mtu       = 1024;
    for (i = 0; i < 2; ++i) {
        test_sq_init(&t[i], n, -1);
        chan->path[i].sq    = t[i].sq;
        chan->path[i].slots = slots + i * n;
    }
}

/* Writes op alone at logical index seq of path 0 of chan, WQE and slot;
 * returns its WQEBBs, its packets in *npkts_p */
static unsigned chan_write_alone(gda_ft_chan_t *chan,
                                 const gda_ft_chan_op_t *op, uint64_t seq,
                                 int signaled, uint32_t *npkts_p)
{
    uint64_t last, db;
    gda_ft_chan_shape_t shape;
    gda_ft_chan_dest_t dest;
    gda_ft_chan_geom_t geom;

    gda_ft_chan_geom_load(chan, &geom);
    gda_ft_chan_shape(&geom, op, &shape);
    gda_ft_chan_dest_init(&dest, chan, GDA_FT_CHAN_PRIMARY, 0, &geom);
    gda_ft_chan_write_op(&dest, op, &shape, seq, signaled, &last, &db);
    gda_ft_chan_write_slots(&dest, op, &shape, seq, 0, 0, 0);
    *npkts_p = shape.npkts;
    return shape.wqebbs;
}

/* A channel's SEND (the host channel's active messages): ctrl with the
 * immediate, then the data, no remote address; a replay onto the other
 * path keeps the immediate and takes that path's key */
GDA_FT_TEST(dev_wqe, chan_send_bytes_and_replay)
{
    static const uint32_t lkeys[2] = {TEST_LKEY, 0x00001234u};
    static const uint32_t no_keys[2] = {0, 0};
    const char msg[12] = "hdr+payload";
    gda_ft_chan_slot_t slots[2][8];
    gda_ft_chan_op_t op;
    gda_ft_chan_t chan;
    uint32_t npkts = 0;
    test_sq_t t[2];
    unsigned i;

    test_chan_init(&chan, t, slots[0], 8, 4096);

    gda_ft_chan_op_init(&op, TEST_LADDR, lkeys, 3000, 0xcafef00d, no_keys);
    op.kind   = GDA_FT_CHAN_OP_SEND;
    op.opcode = GDA_FT_MLX5_OPCODE_SEND_IMM;
    GDA_FT_ASSERT(gda_ft_chan_op_valid(&chan, &op));
    GDA_FT_ASSERT_EQ(chan_write_alone(&chan, &op, 0, 1, &npkts), 1);
    GDA_FT_ASSERT_EQ(npkts, 3);
    check_ctrl(wqe_at(&t[0], 0), 0x0b, 0, 0, 2, 0x08, 0xcafef00d);
    check_data(wqe_at(&t[0], 0) + 16, 3000, TEST_LKEY, TEST_LADDR);
    check_untouched(wqe_at(&t[0], 0) + 32, 32);
    GDA_FT_ASSERT_EQ(slots[0][0].kind, GDA_FT_CHAN_OP_SEND);
    GDA_FT_ASSERT_EQ(slots[0][0].flags, GDA_FT_CHAN_SLOT_DATA);

    gda_ft_chan_copy_wqe(&chan, 0, 1, 0, &slots[0][0]);
    check_ctrl(wqe_at(&t[1], 0), 0x0b, 0, 0, 2, 0x08, 0xcafef00d);
    check_data(wqe_at(&t[1], 0) + 16, 3000, lkeys[1], TEST_LADDR);

    /* inline: ctrl, then a 4-byte header and 12 bytes in one segment */
    op.inl    = 1;
    op.length = sizeof(msg);
    op.raddr  = 0x1234567;
    memcpy(op.operand, msg, sizeof(msg));
    GDA_FT_ASSERT(gda_ft_chan_op_valid(&chan, &op));
    GDA_FT_ASSERT_EQ(chan_write_alone(&chan, &op, 1, 0, &npkts), 1);
    GDA_FT_ASSERT_EQ(npkts, 1);
    check_ctrl(wqe_at(&t[0], 1), 0x0b, 0, 1, 2, 0, 0x1234567);
    GDA_FT_ASSERT_EQ(be32_at(wqe_at(&t[0], 1) + 16),
                     0x80000000u | sizeof(msg));
    GDA_FT_ASSERT_MEM_EQ(wqe_at(&t[0], 1) + 20, msg, sizeof(msg));

    /* one WQE per message: never cut into chunks, at most 16 inline */
    op.length = 17;
    GDA_FT_ASSERT(!gda_ft_chan_op_valid(&chan, &op));
    op.inl    = 0;
    op.length = chan.max_chunk + 1;
    GDA_FT_ASSERT(!gda_ft_chan_op_valid(&chan, &op));
    for (i = 0; i < 2; ++i) {
        test_sq_cleanup(&t[i]);
    }
}

/* An operation's shape, worked out once per post: a put longer than
 * max_chunk is cut into chunks whose packets add up chunk by chunk (not
 * from the whole length when max_chunk is not a multiple of the MTU), and
 * its slots carry consecutive PSNs, written whole in the post's turn */
GDA_FT_TEST(dev_wqe, chan_shape_chunks_packets_and_psns)
{
    static const uint32_t keys[2] = {TEST_LKEY, TEST_RKEY};
    gda_ft_chan_slot_t slots[2 * 16];
    gda_ft_chan_shape_t shape;
    gda_ft_chan_dest_t dest;
    gda_ft_chan_geom_t geom;
    gda_ft_chan_op_t op;
    gda_ft_chan_t chan;
    uint64_t last, db;
    test_sq_t t[2];
    unsigned i;

    test_chan_init(&chan, t, slots, 16, 2500);
    gda_ft_chan_geom_load(&chan, &geom);
    GDA_FT_ASSERT_EQ(geom.mtu_shift, 10);

    /* 2500 + 2500 + 100 bytes: 3 + 3 + 1 packets, where the whole length
     * would make 5 */
    gda_ft_chan_op_init(&op, TEST_LADDR, keys, 5100, TEST_RADDR, keys);
    op.kind   = GDA_FT_CHAN_OP_PUT;
    op.opcode = GDA_FT_MLX5_OPCODE_RDMA_WRITE;
    gda_ft_chan_shape(&geom, &op, &shape);
    GDA_FT_ASSERT(shape.valid);
    GDA_FT_ASSERT_EQ(shape.nwqe, 3);
    GDA_FT_ASSERT_EQ(shape.ds, 3);
    GDA_FT_ASSERT_EQ(shape.wqebbs, 3);
    GDA_FT_ASSERT_EQ(shape.npkts, 7);

    gda_ft_chan_dest_init(&dest, &chan, 0, 0, &geom);
    GDA_FT_ASSERT_EQ(gda_ft_chan_write_op(&dest, &op, &shape, 5, 0, &last,
                                          &db), 8);
    GDA_FT_ASSERT_EQ(last, 7);
    GDA_FT_ASSERT_EQ(gda_ft_chan_write_slots(&dest, &op, &shape, 5, 42,
                                             0xfffffe,
                                             GDA_FT_CHAN_SLOT_OWNED), 5);
    for (i = 0; i < 3; ++i) {
        check_data(wqe_at(&t[0], 5 + i) + 32, (i < 2) ? 2500 : 100, TEST_LKEY,
                   TEST_LADDR + i * 2500);
        GDA_FT_ASSERT_EQ(slots[5 + i].seq, 5 + i);
        GDA_FT_ASSERT_EQ(slots[5 + i].post_ns, 42);
        GDA_FT_ASSERT_EQ(slots[5 + i].npkts, (i < 2) ? 3 : 1);
        GDA_FT_ASSERT_EQ(slots[5 + i].wqebbs, 1);
        GDA_FT_ASSERT_EQ(slots[5 + i].kind, GDA_FT_CHAN_OP_PUT);
        /* the request reads the outcome of the last chunk; the chunks
         * before it say that their operation goes on */
        GDA_FT_ASSERT_EQ(!!(slots[5 + i].flags & GDA_FT_CHAN_SLOT_OWNED),
                         i == 2);
        GDA_FT_ASSERT_EQ(!!(slots[5 + i].flags & GDA_FT_CHAN_SLOT_MORE),
                         i < 2);
    }
    /* across the 24-bit wrap */
    GDA_FT_ASSERT_EQ(slots[5].psn, 0xfffffe);
    GDA_FT_ASSERT_EQ(slots[6].psn, 1);
    GDA_FT_ASSERT_EQ(slots[7].psn, 4);

    /* inline data past 16 bytes, an inline get, a bad kind: refused */
    op.inl    = 1;
    op.length = 17;
    gda_ft_chan_shape(&geom, &op, &shape);
    GDA_FT_ASSERT(!shape.valid);
    op.length = 8;
    op.kind   = GDA_FT_CHAN_OP_GET;
    gda_ft_chan_shape(&geom, &op, &shape);
    GDA_FT_ASSERT(!shape.valid);
    op.kind   = GDA_FT_CHAN_OP_NOP;
    gda_ft_chan_shape(&geom, &op, &shape);
    GDA_FT_ASSERT(!shape.valid);
    for (i = 0; i < 2; ++i) {
        test_sq_cleanup(&t[i]);
    }
}

GDA_FT_TEST(dev_wqe, atomic_fa_bytes)
{
    test_sq_t      t;
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(&t.sq, TEST_LADDR, TEST_LKEY,
                                              TEST_RADDR, TEST_RKEY,
                                              0x0102030405060708ull,
                                              GDA_FT_WQE_SIGNALED, NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    check_ctrl(wqe, 0x12, 0, 0, 4, 0x08, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    GDA_FT_ASSERT_EQ(wqe[32], 0x01);  /* big-endian addend */
    GDA_FT_ASSERT_EQ(wqe[39], 0x08);
    GDA_FT_ASSERT_EQ(be64_at(wqe + 32), 0x0102030405060708ull);
    GDA_FT_ASSERT_EQ(be64_at(wqe + 40), 0);
    check_data(wqe + 48, 8, TEST_LKEY, TEST_LADDR);
    GDA_FT_ASSERT_EQ(t.sq.pi, 1);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, atomic_cs_bytes)
{
    test_sq_t      t;
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(&t.sq, TEST_LADDR, TEST_LKEY,
                                              TEST_RADDR, TEST_RKEY,
                                              0x1111222233334444ull,
                                              0x5555666677778888ull,
                                              GDA_FT_WQE_SIGNALED, NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    check_ctrl(wqe, 0x11, 0, 0, 4, 0x08, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    GDA_FT_ASSERT_EQ(be64_at(wqe + 32), 0x5555666677778888ull); /* swap */
    GDA_FT_ASSERT_EQ(be64_at(wqe + 40), 0x1111222233334444ull); /* compare */
    check_data(wqe + 48, 8, TEST_LKEY, TEST_LADDR);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, masked_cs32_bytes)
{
    test_sq_t      t;
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs32(&t.sq, TEST_LADDR, TEST_LKEY,
                                                TEST_RADDR, TEST_RKEY,
                                                0x11111111, 0x22222222,
                                                0x0000ffff, 0xffff0000,
                                                GDA_FT_WQE_SIGNALED, NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    check_ctrl(wqe, 0x14, 0x08, 0, 4, 0x08, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    GDA_FT_ASSERT_EQ(be32_at(wqe + 32), 0x22222222); /* swap */
    GDA_FT_ASSERT_EQ(be32_at(wqe + 36), 0x11111111); /* compare */
    GDA_FT_ASSERT_EQ(be32_at(wqe + 40), 0xffff0000); /* swap mask */
    GDA_FT_ASSERT_EQ(be32_at(wqe + 44), 0x0000ffff); /* compare mask */
    check_data(wqe + 48, 4, TEST_LKEY, TEST_LADDR);
    GDA_FT_ASSERT_EQ(t.sq.pi, 1);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, masked_cs64_bytes_take_two_wqebbs)
{
    test_sq_t      t;
    const uint8_t *wqe;
    uint16_t       idx;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(&t.sq, TEST_LADDR, TEST_LKEY,
                                                TEST_RADDR, TEST_RKEY,
                                                0x1111111111111111ull,
                                                0x2222222222222222ull,
                                                0x3333333333333333ull,
                                                0x4444444444444444ull,
                                                GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 0);
    wqe = wqe_at(&t, 0);
    check_ctrl(wqe, 0x14, 0x09, 0, 5, 0x08, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    GDA_FT_ASSERT_EQ(be64_at(wqe + 32), 0x2222222222222222ull); /* swap */
    GDA_FT_ASSERT_EQ(be64_at(wqe + 40), 0x1111111111111111ull); /* compare */
    GDA_FT_ASSERT_EQ(be64_at(wqe + 48), 0x4444444444444444ull); /* swap m. */
    GDA_FT_ASSERT_EQ(be64_at(wqe + 56), 0x3333333333333333ull); /* cmp m. */
    check_data(wqe + 64, 8, TEST_LKEY, TEST_LADDR);
    GDA_FT_ASSERT_EQ(t.sq.pi, 2);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_nop(&t.sq, 0, &idx), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 2);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, masked_fa32_bytes)
{
    test_sq_t      t;
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_fa32(&t.sq, TEST_LADDR, TEST_LKEY,
                                                TEST_RADDR, TEST_RKEY,
                                                0x00010001, 0x80008000, 0,
                                                NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    check_ctrl(wqe, 0x15, 0x08, 0, 4, 0, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    GDA_FT_ASSERT_EQ(be32_at(wqe + 32), 0x00010001);  /* add */
    GDA_FT_ASSERT_EQ(be32_at(wqe + 36), 0x80008000);  /* field boundary */
    GDA_FT_ASSERT_EQ(be64_at(wqe + 40), 0);
    check_data(wqe + 48, 4, TEST_LKEY, TEST_LADDR);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, masked_fa64_bytes)
{
    test_sq_t      t;
    const uint8_t *wqe;

    test_sq_init(&t, 8, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_fa64(&t.sq, TEST_LADDR, TEST_LKEY,
                                                TEST_RADDR, TEST_RKEY,
                                                0x0000000100000001ull,
                                                0x8000000080000000ull,
                                                GDA_FT_WQE_SIGNALED, NULL),
                     GDA_FT_DEV_OK);
    wqe = wqe_at(&t, 0);
    check_ctrl(wqe, 0x15, 0x09, 0, 4, 0x08, 0);
    check_raddr(wqe + 16, TEST_RADDR, TEST_RKEY);
    GDA_FT_ASSERT_EQ(be64_at(wqe + 32), 0x0000000100000001ull);
    GDA_FT_ASSERT_EQ(be64_at(wqe + 40), 0x8000000080000000ull);
    check_data(wqe + 48, 8, TEST_LKEY, TEST_LADDR);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, multi_wqebb_wqe_wraps_to_ring_start)
{
    test_sq_t      t;
    const uint8_t *last = NULL;
    uint16_t       idx;
    int            i;

    test_sq_init(&t, 4, -1);
    for (i = 0; i < 3; ++i) {
        gda_ft_sq_post_nop(&t.sq, 0, NULL);
    }
    t.sq.ci = 3; /* the three NOPs completed */
    memset(t.buf, TEST_FILL, 3 * GDA_FT_MLX5_WQE_BB);

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(&t.sq, TEST_LADDR, TEST_LKEY,
                                                TEST_RADDR, TEST_RKEY,
                                                0x1111111111111111ull,
                                                0x2222222222222222ull,
                                                0x3333333333333333ull,
                                                0x4444444444444444ull,
                                                GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 3);
    GDA_FT_ASSERT_EQ(t.sq.pi, 5);
    /* first WQEBB at the last slot of the ring ... */
    last = t.buf + 3 * GDA_FT_MLX5_WQE_BB;
    check_ctrl(last, 0x14, 0x09, 3, 5, 0x08, 0);
    check_raddr(last + 16, TEST_RADDR, TEST_RKEY);
    GDA_FT_ASSERT_EQ(be64_at(last + 32), 0x2222222222222222ull);
    GDA_FT_ASSERT_EQ(be64_at(last + 48), 0x4444444444444444ull);
    /* ... second one at the start: data segment in slot 0, nothing past it */
    check_data(t.buf, 8, TEST_LKEY, TEST_LADDR);
    check_untouched(t.buf + 16, 3 * GDA_FT_MLX5_WQE_BB - 16);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, inline_data_wraps_to_ring_start)
{
    uint8_t        payload[100];
    test_sq_t      t;
    const uint8_t *last;
    size_t         i;

    for (i = 0; i < sizeof(payload); ++i) {
        payload[i] = (uint8_t)(0x80 + i);
    }

    test_sq_init(&t, 4, -1);
    for (i = 0; i < 3; ++i) {
        gda_ft_sq_post_nop(&t.sq, 0, NULL);
    }
    t.sq.ci = 3;
    memset(t.buf, TEST_FILL, 3 * GDA_FT_MLX5_WQE_BB);

    /* ctrl + raddr + 104 bytes of inline: 2 + 7 segments, 3 WQEBBs */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_inline(&t.sq, payload,
                                                      sizeof(payload),
                                                      TEST_RADDR, TEST_RKEY, 0,
                                                      NULL),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(t.sq.pi, 6);
    last = t.buf + 3 * GDA_FT_MLX5_WQE_BB;
    check_ctrl(last, 0x08, 0, 3, 9, 0, 0);
    GDA_FT_ASSERT_EQ(be32_at(last + 32), 0x80000000u | sizeof(payload));
    /* 28 bytes fit before the end of the ring, 72 continue at its start */
    GDA_FT_ASSERT_MEM_EQ(last + 36, payload, 28);
    GDA_FT_ASSERT_MEM_EQ(t.buf, payload + 28, 72);
    check_untouched(t.buf + 72, 2 * GDA_FT_MLX5_WQE_BB - 72);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, full_ring_returns_no_resource)
{
    test_sq_t t;
    uint16_t  idx = 0x1234;
    int       i;

    test_sq_init(&t, 4, -1);
    for (i = 0; i < 3; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.sq, TEST_LADDR,
                                                   TEST_LKEY, 8, TEST_RADDR,
                                                   TEST_RKEY, 0, NULL),
                         GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT(gda_ft_sq_has_space(&t.sq, 4));
    GDA_FT_ASSERT(!gda_ft_sq_has_space(&t.sq, 5));

    /* one WQEBB left: a two-WQEBB WQE does not fit, a one-WQEBB one does */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(&t.sq, TEST_LADDR, TEST_LKEY,
                                                TEST_RADDR, TEST_RKEY, 0, 0, 0,
                                                0, 0, &idx),
                     GDA_FT_DEV_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(idx, 0x1234);
    GDA_FT_ASSERT_EQ(t.sq.pi, 3);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_nop(&t.sq, 0, NULL), GDA_FT_DEV_OK);

    GDA_FT_ASSERT_EQ(gda_ft_sq_free_wqebbs(&t.sq), 0);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_nop(&t.sq, 0, NULL),
                     GDA_FT_DEV_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(&t.sq, TEST_LADDR, TEST_LKEY,
                                              TEST_RADDR, TEST_RKEY, 1, 0,
                                              NULL),
                     GDA_FT_DEV_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(t.sq.pi, 4);
    /* the full ring still holds the four WQEs untouched */
    check_ctrl(wqe_at(&t, 3), 0x00, 0, 3, 1, 0, 0);

    t.sq.ci = 2;
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(&t.sq, TEST_LADDR, TEST_LKEY,
                                                TEST_RADDR, TEST_RKEY, 0, 0, 0,
                                                0, 0, &idx),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 4);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, wqe_larger_than_ring_is_error)
{
    uint8_t   payload[200] = {0};
    test_sq_t t;

    test_sq_init(&t, 2, -1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_inline(&t.sq, payload,
                                                      sizeof(payload),
                                                      TEST_RADDR, TEST_RKEY, 0,
                                                      NULL),
                     GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(t.sq.pi, 0);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, index_wraps_at_16_bits)
{
    test_sq_t t;
    uint16_t  idx;

    test_sq_init(&t, 4, -1);
    t.sq.pi = t.sq.ci = t.sq.db_pi = 65534;
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_nop(&t.sq, 0, &idx), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 65534);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(&t.sq, TEST_LADDR, TEST_LKEY,
                                                TEST_RADDR, TEST_RKEY, 0, 0, 0,
                                                0, 0, &idx),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 65535);
    GDA_FT_ASSERT_EQ(t.sq.pi, 1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_free_wqebbs(&t.sq), 1);
    check_ctrl(t.buf + 2 * 64, 0x00, 0, 65534, 1, 0, 0);
    check_ctrl(t.buf + 3 * 64, 0x14, 0x09, 65535, 5, 0, 0);

    gda_ft_sq_ring_db(&t.sq);
    GDA_FT_ASSERT_EQ(be32_at((const uint8_t*)&t.dbrec[1]), 1);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, doorbell_writes_dbrec_then_ctrl_to_uar)
{
    test_sq_t t;

    test_sq_init(&t, 8, -1);
    gda_ft_sq_post_rdma_write(&t.sq, TEST_LADDR, TEST_LKEY, 8, TEST_RADDR,
                              TEST_RKEY, 0, NULL);
    gda_ft_sq_post_masked_cs64(&t.sq, TEST_LADDR, TEST_LKEY, TEST_RADDR,
                               TEST_RKEY, 0, 0, 0, 0, 0, NULL);
    gda_ft_sq_post_atomic_fa(&t.sq, TEST_LADDR, TEST_LKEY, TEST_RADDR,
                             TEST_RKEY, 1, GDA_FT_WQE_SIGNALED, NULL);
    GDA_FT_ASSERT_EQ(t.dbrec[1], 0);   /* nothing before the doorbell */
    GDA_FT_ASSERT_EQ(t.uar, 0);

    gda_ft_sq_ring_db(&t.sq);
    /* SQ counter, big-endian, in dbrec[1]; dbrec[0] (RQ) untouched */
    GDA_FT_ASSERT_EQ(be32_at((const uint8_t*)&t.dbrec[1]), 4);
    GDA_FT_ASSERT_EQ(t.dbrec[0], 0x5a5a5a5a);
    /* the last WQE's ctrl segment, first 8 bytes as they are in memory */
    GDA_FT_ASSERT_MEM_EQ((const uint8_t*)&t.uar, wqe_at(&t, 3), 8);
    GDA_FT_ASSERT_EQ(be32_at((const uint8_t*)&t.uar), (3 << 8) | 0x12);
    GDA_FT_ASSERT_EQ(t.sq.db_pi, 4);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, doorbell_without_new_wqes_writes_nothing)
{
    test_sq_t t;

    test_sq_init(&t, 8, -1);
    t.uar = 0x7777;
    gda_ft_sq_ring_db(&t.sq);
    GDA_FT_ASSERT_EQ(t.uar, 0x7777);
    GDA_FT_ASSERT_EQ(t.dbrec[1], 0);

    gda_ft_sq_post_nop(&t.sq, 0, NULL);
    gda_ft_sq_ring_db(&t.sq);
    GDA_FT_ASSERT_EQ(be32_at((const uint8_t*)&t.dbrec[1]), 1);
    t.uar = 0x7777;
    gda_ft_sq_ring_db(&t.sq);
    GDA_FT_ASSERT_EQ(t.uar, 0x7777);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, doorbell_wakes_eventfd)
{
    test_sq_t t;
    uint64_t  count = 0;
    int       efd;

    efd = eventfd(0, EFD_NONBLOCK);
    GDA_FT_ASSERT(efd >= 0);
    test_sq_init(&t, 8, efd);

    GDA_FT_ASSERT_EQ(read(efd, &count, sizeof(count)), -1); /* not yet */
    gda_ft_sq_post_nop(&t.sq, 0, NULL);
    gda_ft_sq_ring_db(&t.sq);
    GDA_FT_ASSERT_EQ(read(efd, &count, sizeof(count)), sizeof(count));
    GDA_FT_ASSERT_EQ(count, 1);

    gda_ft_sq_post_nop(&t.sq, 0, NULL);
    gda_ft_sq_ring_db(&t.sq);
    gda_ft_sq_post_nop(&t.sq, 0, NULL);
    gda_ft_sq_ring_db(&t.sq);
    gda_ft_sq_ring_db(&t.sq); /* nothing new: no wake-up */
    GDA_FT_ASSERT_EQ(read(efd, &count, sizeof(count)), sizeof(count));
    GDA_FT_ASSERT_EQ(count, 2);

    close(efd);
    test_sq_cleanup(&t);
}

GDA_FT_TEST(dev_wqe, recv_wqe_bytes_and_dbrec)
{
    volatile uint32_t dbrec[2] = {0, 0x77777777};
    uint8_t           buf[4 * 32];
    gda_ft_dev_rq_t   rq;
    gda_ft_dev_sge_t  sge[3];
    uint16_t          idx;
    int               i;

    memset(buf, TEST_FILL, sizeof(buf));
    gda_ft_dev_rq_init(&rq, buf, 4, 32, dbrec);
    sge[0].addr   = TEST_LADDR;
    sge[0].length = 4096;
    sge[0].lkey   = TEST_LKEY;
    sge[1]        = sge[0];
    sge[2]        = sge[0];

    /* one element in a two-segment WQE: terminated by an invalid lkey */
    GDA_FT_ASSERT_EQ(gda_ft_rq_post(&rq, sge, 1, &idx), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 0);
    check_data(buf, 4096, TEST_LKEY, TEST_LADDR);
    check_data(buf + 16, 0, 0x100, 0);

    sge[1].addr   = TEST_LADDR + 4096;
    sge[1].length = 64;
    GDA_FT_ASSERT_EQ(gda_ft_rq_post(&rq, sge, 2, &idx), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(idx, 1);
    check_data(buf + 32, 4096, TEST_LKEY, TEST_LADDR);
    check_data(buf + 48, 64, TEST_LKEY, TEST_LADDR + 4096);

    GDA_FT_ASSERT_EQ(gda_ft_rq_post(&rq, sge, 3, &idx), GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(dbrec[0], 0);
    gda_ft_rq_ring_db(&rq);
    GDA_FT_ASSERT_EQ(be32_at((const uint8_t*)&dbrec[0]), 2);
    GDA_FT_ASSERT_EQ(dbrec[1], 0x77777777); /* SQ counter untouched */

    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_rq_post(&rq, sge, 1, NULL), GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_EQ(gda_ft_rq_post(&rq, sge, 1, NULL),
                     GDA_FT_DEV_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(rq.pi, 4);
}

GDA_FT_TEST(dev_wqe, descriptors_carry_version)
{
    test_sq_t       t;
    gda_ft_dev_rq_t rq;

    test_sq_init(&t, 8, -1);
    gda_ft_dev_rq_init(&rq, NULL, 1, 16, t.dbrec);
    GDA_FT_ASSERT_EQ(t.sq.version, GDA_FT_DEV_VERSION);
    GDA_FT_ASSERT_EQ(rq.version, GDA_FT_DEV_VERSION);
    GDA_FT_ASSERT_EQ(t.sq.wqebb_mask, 7);
    GDA_FT_ASSERT_EQ(t.sq.max_inline, 256);
    gda_ft_dev_sq_init(&t.sq, t.buf, 8, TEST_QPN, t.dbrec, &t.uar, -1, NULL,
                       100000);
    GDA_FT_ASSERT_EQ(t.sq.max_inline, GDA_FT_WQE_MAX_INLINE);
    test_sq_cleanup(&t);
}
