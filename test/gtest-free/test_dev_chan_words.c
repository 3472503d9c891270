/*
 * The concurrent device channel's words driven by hand, without HCAs or
 * threads (suite dev_chan, as test_dev_chan.c): a poster's memo and the
 * reservation it expects, the epoch that ends the counting of a path
 * left, the outcome table, what a switch settles for each WQE of its
 * window, and the repairs a re-armed primary takes.
 */
#include "chan_harness.h"
#include "gda_ft_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A channel without rings, for the reservation and PSN bookkeeping: the
 * primary at PSN psn and ring offset off, the backup at 500 and 3 */
static void bookkeeping_chan_init(gda_ft_chan_t *chan, uint32_t wqebb_cnt,
                                  uint32_t psn, uint64_t off)
{
    memset(chan, 0, sizeof(*chan));
    chan->wqebb_cnt = wqebb_cnt;
    chan->state     = GDA_FT_CHAN_ACTIVE;
    chan->path[GDA_FT_CHAN_PRIMARY].next_psn = psn;
    chan->path[GDA_FT_CHAN_PRIMARY].ring_off = off;
    chan->path[GDA_FT_CHAN_BACKUP].next_psn  = 500;
    chan->path[GDA_FT_CHAN_BACKUP].ring_off  = 3;
}

/* What gda_ft_chan_release() leaves for the next poster, without rings */
static void publish_by_hand(gda_ft_chan_t *chan,
                            const gda_ft_chan_resv_t *resv, uint32_t psn)
{
    chan->path[resv->path].next_psn = psn;
    gda_ft_atomic_store_rlx64(&chan->published, GDA_FT_CHAN_PUB(psn,
            resv->off, GDA_FT_CHAN_WORD_INDEX(resv->word)));
    gda_ft_atomic_store_rel64(&chan->ready, resv->word);
}

/* Reserves through memo and publishes at once (nothing written: the
 * ready and PSN bookkeeping is what is looked at); returns whether the
 * memo's way was taken */
static int memo_post(gda_ft_chan_t *chan, gda_ft_chan_memo_t *memo)
{
    gda_ft_chan_resv_t resv;
    gda_ft_chan_geom_t geom;
    uint32_t psn;
    int taken = gda_ft_chan_reserve_memo(chan, 1, memo, &resv);

    if (!taken) {
        GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(chan, 1, &resv), GDA_FT_DEV_OK);
    } else {
        /* what the memo proved */
        GDA_FT_ASSERT_EQ(gda_ft_chan_ready(chan), resv.seq);
        GDA_FT_ASSERT_EQ(resv.psn, chan->path[resv.path].next_psn);
    }
    psn = gda_ft_chan_take_turn(chan, &resv);
    publish_by_hand(chan, &resv, gda_ft_dev_psn_add(psn, 3));
    gda_ft_chan_geom_load(chan, &geom);
    gda_ft_chan_remember(memo, &resv, chan->path[resv.path].next_psn,
                         &geom);
    return taken;
}

/* A memo's way is taken exactly while nobody else reserved and nothing
 * switched since its holder published: not the first time, not after
 * another poster's post or a switch; a freeze that did nothing keeps it */
GDA_FT_TEST(dev_chan, poster_memo_holds_until_the_channel_moves_on)
{
    gda_ft_chan_memo_t memo = {0}, other = memo;
    gda_ft_chan_resv_t resv;
    gda_ft_chan_t chan;

    bookkeeping_chan_init(&chan, 8, 100, 0);

    GDA_FT_ASSERT(!memo_post(&chan, &memo));     /* nothing remembered */
    GDA_FT_ASSERT(memo_post(&chan, &memo));
    GDA_FT_ASSERT(memo_post(&chan, &memo));
    GDA_FT_ASSERT_EQ(chan.path[GDA_FT_CHAN_PRIMARY].next_psn, 109);

    GDA_FT_ASSERT(!memo_post(&chan, &other));    /* another poster */
    GDA_FT_ASSERT(!memo_post(&chan, &memo));     /* ... made it stale */
    GDA_FT_ASSERT(memo_post(&chan, &memo));
    GDA_FT_ASSERT(!memo_post(&chan, &other));    /* stale: the CAS fails */

    /* a freeze that found nothing to do */
    GDA_FT_ASSERT(gda_ft_chan_freeze(&chan));
    gda_ft_chan_unfreeze(&chan);
    GDA_FT_ASSERT(memo_post(&chan, &other));

    /* the ring looks full: `completed` is read again, and has room */
    GDA_FT_ASSERT_EQ(GDA_FT_CHAN_WORD_INDEX(chan.word), 8);
    chan.completed = GDA_FT_CHAN_WORD(0, 7);
    GDA_FT_ASSERT(memo_post(&chan, &other));
    GDA_FT_ASSERT(memo_post(&chan, &other));
    GDA_FT_ASSERT_EQ(memo.completed, 0);
    GDA_FT_ASSERT_EQ(other.completed, 7);

    /* while frozen, a memo of the frozen word's value never reserves */
    chan.word = GDA_FT_CHAN_FROZEN | other.word;
    GDA_FT_ASSERT(!gda_ft_chan_reserve_memo(&chan, 1, &other, &resv));
    GDA_FT_ASSERT(!other.valid);

    /* a switch: the next epoch names the backup, at its own offset */
    chan.word = GDA_FT_CHAN_WORD(1, GDA_FT_CHAN_WORD_INDEX(chan.word));
    chan.completed = GDA_FT_CHAN_WORD(1, 9);
    GDA_FT_ASSERT(!memo_post(&chan, &memo));
    GDA_FT_ASSERT_EQ(memo.off, 3);
    GDA_FT_ASSERT_EQ(chan.path[GDA_FT_CHAN_BACKUP].next_psn, 503);
    GDA_FT_ASSERT(memo_post(&chan, &memo));
    GDA_FT_ASSERT_EQ(chan.path[GDA_FT_CHAN_BACKUP].next_psn, 506);
    GDA_FT_ASSERT_EQ(chan.path[GDA_FT_CHAN_PRIMARY].next_psn, 130);
}

/* A plain reservation expects the word the last publication left: with
 * nobody in between, its turn is proven and the PSN and ring offset come
 * from `published`. A reservation in between, a torn pair, a switch, or a
 * channel that published nothing send it the shared way, to wait for its
 * turn; a freeze that did nothing does not. */
GDA_FT_TEST(dev_chan, reserve_expects_the_last_publication)
{
    gda_ft_chan_resv_t resv, held;
    gda_ft_chan_t chan;

    bookkeeping_chan_init(&chan, 64, 0xfffffe, 0x12345);

    /* nothing published: `published` 0 is no publication of index 0 */
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 2, &resv), GDA_FT_DEV_OK);
    GDA_FT_ASSERT(!resv.turn);
    GDA_FT_ASSERT_EQ(resv.off, 0x12345);
    GDA_FT_ASSERT_EQ(gda_ft_chan_take_turn(&chan, &resv), 0xfffffe);
    publish_by_hand(&chan, &resv, 1);   /* across the PSN wrap */

    /* nobody in between: the turn is proven, nothing else read */
    chan.path[GDA_FT_CHAN_PRIMARY].next_psn = 777;   /* not looked at */
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 3, &resv), GDA_FT_DEV_OK);
    GDA_FT_ASSERT(resv.turn);
    GDA_FT_ASSERT_EQ(resv.seq, 2);
    GDA_FT_ASSERT_EQ(resv.psn, 1);
    GDA_FT_ASSERT_EQ(resv.path, GDA_FT_CHAN_PRIMARY);
    GDA_FT_ASSERT_EQ(resv.off & 0xffff, 0x2345);   /* what a post uses */
    GDA_FT_ASSERT_EQ(GDA_FT_CHAN_WORD_INDEX(chan.word), 5);

    /* that reservation is not published yet: the next waits its turn */
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 1, &held), GDA_FT_DEV_OK);
    GDA_FT_ASSERT(!held.turn);
    GDA_FT_ASSERT_EQ(held.seq, 5);
    publish_by_hand(&chan, &resv, 10);
    GDA_FT_ASSERT_EQ(gda_ft_chan_take_turn(&chan, &held), 10);
    publish_by_hand(&chan, &held, 11);

    /* a torn pair: `published` of the publication before */
    chan.published = GDA_FT_CHAN_PUB(10, resv.off, 5);
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 1, &resv), GDA_FT_DEV_OK);
    GDA_FT_ASSERT(!resv.turn);
    GDA_FT_ASSERT_EQ(gda_ft_chan_take_turn(&chan, &resv), 11);
    publish_by_hand(&chan, &resv, 12);

    /* a freeze that found nothing to do keeps the word */
    GDA_FT_ASSERT(gda_ft_chan_freeze(&chan));
    gda_ft_chan_unfreeze(&chan);
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 1, &resv), GDA_FT_DEV_OK);
    GDA_FT_ASSERT(resv.turn);
    GDA_FT_ASSERT_EQ(resv.psn, 12);
    publish_by_hand(&chan, &resv, 13);

    /* frozen: nothing is reserved, whatever `ready` says */
    chan.word |= GDA_FT_CHAN_FROZEN;
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 1, &resv),
                     GDA_FT_DEV_INPROGRESS);

    /* a switch: the next epoch names the backup at its own offset, and
     * the publication on the primary no longer says where it is */
    chan.word = GDA_FT_CHAN_WORD(1, GDA_FT_CHAN_WORD_INDEX(chan.word));
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 1, &resv), GDA_FT_DEV_OK);
    GDA_FT_ASSERT(!resv.turn);
    GDA_FT_ASSERT_EQ(resv.path, GDA_FT_CHAN_BACKUP);
    GDA_FT_ASSERT_EQ(resv.off, 3);
    GDA_FT_ASSERT_EQ(gda_ft_chan_take_turn(&chan, &resv), 500);
    publish_by_hand(&chan, &resv, 501);
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 1, &resv), GDA_FT_DEV_OK);
    GDA_FT_ASSERT(resv.turn);
    GDA_FT_ASSERT_EQ(resv.path, GDA_FT_CHAN_BACKUP);
    GDA_FT_ASSERT_EQ(resv.psn, 501);
    GDA_FT_ASSERT_EQ(resv.off, 3);

    /* the ring is full from where the publication left it */
    chan.wqebb_cnt = 8;
    chan.completed = GDA_FT_CHAN_WORD(1, 0);
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&chan, 1, &resv),
                     GDA_FT_DEV_NO_RESOURCE);
}


/* A successful completion of path p's WQE at ring index `ring`, in the
 * collapsed CQE as the HCA writes it (op_own last) */
static void collapsed_cqe_write(gda_ft_chan_path_t *p, uint16_t ring)
{
    uint8_t *cqe = p->cqe;

    memset(cqe, 0, GDA_FT_MLX5_CQE_SIZE);
    cqe[60] = (uint8_t)(ring >> 8);
    cqe[61] = (uint8_t)ring;
    __atomic_store_n(&cqe[63], (uint8_t)(GDA_FT_MLX5_CQE_REQ << 4),
                     __ATOMIC_RELEASE);
}

/*
 * A switch closes the counting of the path it leaves: a poller that chose
 * that path before the switch, and reads its completion of a WQE that the
 * new path has yet to run, moves nothing (counted, that completion would
 * free ring positions the new path's HCA has not consumed). The path the
 * epoch names counts as before.
 */
GDA_FT_TEST(dev_chan, completion_of_a_path_left_counts_nothing)
{
    static gda_ft_chan_slot_t slots[2][64];
    static uint8_t cqe[2][GDA_FT_MLX5_CQE_SIZE] __attribute__((aligned(64)));
    gda_ft_chan_t chan;
    uint64_t err_seq;
    uint8_t synd, p;

    bookkeeping_chan_init(&chan, 64, 100, 0);
    for (p = 0; p < 2; ++p) {
        chan.path[p].slots = slots[p];
        chan.path[p].cqe   = cqe[p];
        memset(slots[p], 0, sizeof(slots[p]));
        /* the WQE at logical index 4 on both rings (backup offset 3) */
        gda_ft_chan_slot(&chan, &chan.path[p], 4)->seq    = 4;
        gda_ft_chan_slot(&chan, &chan.path[p], 4)->wqebbs = 1;
    }
    /* epoch 2 counts on the primary, from 4; WQEs up to 10 published */
    chan.completed = GDA_FT_CHAN_WORD(2, 4);
    chan.ready     = GDA_FT_CHAN_WORD(2, 10);
    GDA_FT_ASSERT_EQ(gda_ft_chan_close_epoch(&chan, 2), 4);
    GDA_FT_ASSERT_EQ(chan.completed, GDA_FT_CHAN_WORD(3, 4));
    /* a poller of the epoch left counts nothing more */
    GDA_FT_ASSERT(!gda_ft_chan_complete_to(&chan, 2, 5));

    /* the primary's late completion of index 4 */
    collapsed_cqe_write(&chan.path[GDA_FT_CHAN_PRIMARY], 4);
    GDA_FT_ASSERT_EQ(gda_ft_chan_poll_path(&chan, GDA_FT_CHAN_PRIMARY,
                                           &err_seq, &synd),
                     GDA_FT_DEV_INPROGRESS);
    GDA_FT_ASSERT_EQ(gda_ft_chan_completed(&chan), 4);

    /* the backup's own completion of it (ring index 4 - 3) counts */
    collapsed_cqe_write(&chan.path[GDA_FT_CHAN_BACKUP], 1);
    GDA_FT_ASSERT_EQ(gda_ft_chan_poll_path(&chan, GDA_FT_CHAN_BACKUP,
                                           &err_seq, &synd), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(chan.completed, GDA_FT_CHAN_WORD(3, 5));
}

/*
 * A completion of NOPs alone, the ones a switch wrote in place of WQEs it
 * settled, moves `completed` but is no sign of the peer: it stamps neither
 * the path's shared progress (what the host takes for the peer heard) nor
 * the channel's, and ends no interruption. One that retires a WQE that
 * went to the peer does, also when its CQE names a NOP after that WQE.
 */
GDA_FT_TEST(dev_chan, completion_of_nops_alone_is_no_progress)
{
    static gda_ft_chan_slot_t slots[2][64];
    static uint8_t cqe[2][GDA_FT_MLX5_CQE_SIZE] __attribute__((aligned(64)));
    static const uint8_t kinds[] = {
        GDA_FT_CHAN_OP_NOP, GDA_FT_CHAN_OP_NOP, GDA_FT_CHAN_OP_PUT,
        GDA_FT_CHAN_OP_NOP
    };
    gda_ft_chan_path_t *backup;
    gda_ft_chan_health_t health;
    gda_ft_chan_slot_t *slot;
    gda_ft_chan_t chan;
    uint64_t err_seq;
    uint8_t synd, p;
    unsigned i;

    bookkeeping_chan_init(&chan, 64, 100, 0);
    memset(&health, 0, sizeof(health));
    backup         = &chan.path[GDA_FT_CHAN_BACKUP];
    chan.health    = &health;
    chan.active    = GDA_FT_CHAN_BACKUP;
    chan.switch_ns = 1;
    for (p = 0; p < 2; ++p) {
        chan.path[p].slots = slots[p];
        chan.path[p].cqe   = cqe[p];
        memset(slots[p], 0, sizeof(slots[p]));
    }
    /* the window a switch moved to the backup (epoch 3) at logical 4: two
     * NOPs (atomics in doubt, say), a put it replayed, a NOP */
    for (i = 0; i < 4; ++i) {
        slot         = gda_ft_chan_slot(&chan, backup, 4 + i);
        slot->seq    = 4 + i;
        slot->wqebbs = 1;
        slot->kind   = kinds[i];
    }
    chan.completed = GDA_FT_CHAN_WORD(3, 4);
    chan.ready     = GDA_FT_CHAN_WORD(3, 8);

    /* the NOPs complete, one CQE each (backup ring = logical - 3) */
    for (i = 0; i < 2; ++i) {
        collapsed_cqe_write(backup, 1 + i);
        GDA_FT_ASSERT_EQ(gda_ft_chan_poll_path(&chan, GDA_FT_CHAN_BACKUP,
                                               &err_seq, &synd),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(chan.completed, GDA_FT_CHAN_WORD(3, 5 + i));
        GDA_FT_ASSERT_EQ(health.progress_ns[GDA_FT_CHAN_BACKUP], 0);
        GDA_FT_ASSERT_EQ(chan.last_progress_ns, 0);
        GDA_FT_ASSERT_EQ(chan.recovered_ns, 0);
    }

    /* one CQE for the put and the NOP after it */
    collapsed_cqe_write(backup, 4);
    GDA_FT_ASSERT_EQ(gda_ft_chan_poll_path(&chan, GDA_FT_CHAN_BACKUP,
                                           &err_seq, &synd), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(chan.completed, GDA_FT_CHAN_WORD(3, 8));
    GDA_FT_ASSERT(health.progress_ns[GDA_FT_CHAN_BACKUP] != 0);
    GDA_FT_ASSERT(chan.last_progress_ns != 0);
    GDA_FT_ASSERT(chan.recovered_ns != 0);
    GDA_FT_ASSERT_EQ(health.progress_ns[GDA_FT_CHAN_PRIMARY], 0);
}

/*
 * A failure a switch settled is read from the outcome table by logical
 * index, whatever paths the channel took since: the request that owns it
 * marks it read; one overwritten a table later unread is counted lost, one
 * read is not; any other index reads OK.
 */
GDA_FT_TEST(dev_chan, settled_failure_stays_until_a_table_later)
{
    static uint64_t outcomes[GDA_FT_CHAN_OUTCOME_CNT(64)];
    gda_ft_chan_slot_t slot;
    gda_ft_chan_t chan;
    uint64_t table = GDA_FT_CHAN_OUTCOME_CNT(64);

    bookkeeping_chan_init(&chan, 64, 100, 0);
    memset(outcomes, 0, sizeof(outcomes));
    chan.outcomes = outcomes;
    memset(&slot, 0, sizeof(slot));
    slot.flags  = GDA_FT_CHAN_SLOT_FAILED | GDA_FT_CHAN_SLOT_OWNED;
    slot.status = GDA_FT_DEV_IN_DOUBT;

    gda_ft_chan_keep_outcome(&chan, 70, &slot, 0);
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 69, 1), GDA_FT_DEV_OK);
    /* a ring later the slot of the ring is another WQE's: not the table */
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 70 + 64, 1), GDA_FT_DEV_OK);
    /* read by someone else than its owner: still unread */
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 70, 0), GDA_FT_DEV_IN_DOUBT);
    gda_ft_chan_keep_outcome(&chan, 70 + table, &slot, 0);
    GDA_FT_ASSERT_EQ(chan.outcomes_lost, 1);
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 70, 1), GDA_FT_DEV_OK);

    /* read by its owner, then overwritten: nothing lost; kept once, a
     * failure that a later switch moves again stays read */
    slot.status = GDA_FT_DEV_ERROR;
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 70 + table, 1),
                     GDA_FT_DEV_IN_DOUBT);
    gda_ft_chan_keep_outcome(&chan, 70 + table, &slot, 0);
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 70 + table, 1),
                     GDA_FT_DEV_IN_DOUBT);
    gda_ft_chan_keep_outcome(&chan, 70 + 2 * table, &slot, 0);
    GDA_FT_ASSERT_EQ(chan.outcomes_lost, 1);
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 70 + 2 * table, 1),
                     GDA_FT_DEV_ERROR);

    /* kept for a request that was told (a regain's NO_PATH): overwritten
     * unread, nothing lost */
    slot.status = GDA_FT_DEV_NO_PATH;
    gda_ft_chan_keep_outcome(&chan, 71, &slot, 1);
    gda_ft_chan_keep_outcome(&chan, 71 + table, &slot, 0);
    GDA_FT_ASSERT_EQ(chan.outcomes_lost, 1);

    /* the channel's first WQE has an entry like any other: the zeroed
     * table names no index */
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 0, 1), GDA_FT_DEV_OK);
    gda_ft_chan_keep_outcome(&chan, 0, &slot, 0);
    GDA_FT_ASSERT_EQ(gda_ft_chan_outcome(&chan, 0, 1), GDA_FT_DEV_NO_PATH);
}

/* What a switch decides for each outstanding WQE, given the PSN the peer's
 * fenced end expected next: a window that straddles it, a multi-packet
 * put cut by it, across the 24-bit PSN wrap */
GDA_FT_TEST(dev_chan, resolution_straddle_and_wrap)
{
    static const struct {
        uint8_t  kind;
        uint32_t psn;      /* first PSN */
        uint16_t npkts;
        int      replay;   /* expected: must run again */
        uint8_t  failed;   /* expected status when settled as failed */
    } window[] = {
        /* before epsn 0x000002: executed */
        {GDA_FT_CHAN_OP_SEND,   0xfffffa, 1, 0, 0},
        {GDA_FT_CHAN_OP_PUT,    0xfffffb, 2, 0, 0},
        {GDA_FT_CHAN_OP_SIGNAL, 0xfffffd, 1, 0, 0},
        /* a fetching atomic that ran but whose reply was lost */
        {GDA_FT_CHAN_OP_ATOMIC, 0xfffffe, 1, 0, GDA_FT_DEV_IN_DOUBT},
        /* a get that ran: its data never came back, read it again */
        {GDA_FT_CHAN_OP_GET,    0xffffff, 1, 1, 0},
        /* 4 packets, 0x000000..0x000003: the peer has 2, runs it again */
        {GDA_FT_CHAN_OP_PUT,    0x000000, 4, 1, 0},
        /* after epsn: not executed, exactly once means run it now */
        {GDA_FT_CHAN_OP_SIGNAL, 0x000004, 1, 1, 0},
        {GDA_FT_CHAN_OP_ATOMIC, 0x000005, 1, 1, 0},
        /* a message the peer did not receive is sent again */
        {GDA_FT_CHAN_OP_SEND,   0x000006, 1, 1, 0}
    };
    const uint32_t epsn = 0x000002;
    gda_ft_chan_slot_t slot;
    gda_ft_chan_t chan;
    unsigned i;

    memset(&chan, 0, sizeof(chan));
    for (i = 0; i < sizeof(window) / sizeof(window[0]); ++i) {
        memset(&slot, 0, sizeof(slot));
        slot.kind  = window[i].kind;
        slot.psn   = window[i].psn;
        slot.npkts = window[i].npkts;
        GDA_FT_ASSERT_EQ(gda_ft_chan_settle(&chan, &slot, 1, 1, epsn),
                         window[i].replay);
        GDA_FT_ASSERT_EQ(!!(slot.flags & GDA_FT_CHAN_SLOT_FAILED),
                         window[i].failed != 0);
        if (window[i].failed != 0) {
            GDA_FT_ASSERT_EQ(slot.status, window[i].failed);
        }
    }
    GDA_FT_ASSERT_EQ(chan.counters.confirmed, 3);
    GDA_FT_ASSERT_EQ(chan.counters.in_doubt, 1);

    /* without the peer's word, what must run once is in doubt, never run
     * twice; puts and gets run again, and sends (the receiver drops a copy
     * it has seen by its sequence number) */
    memset(&chan, 0, sizeof(chan));
    for (i = 0; i < sizeof(window) / sizeof(window[0]); ++i) {
        memset(&slot, 0, sizeof(slot));
        slot.kind  = window[i].kind;
        slot.psn   = window[i].psn;
        slot.npkts = window[i].npkts;
        GDA_FT_ASSERT_EQ(gda_ft_chan_settle(&chan, &slot, 1, 0, 0),
                         (window[i].kind == GDA_FT_CHAN_OP_PUT) ||
                         (window[i].kind == GDA_FT_CHAN_OP_GET) ||
                         (window[i].kind == GDA_FT_CHAN_OP_SEND));
    }
    GDA_FT_ASSERT_EQ(chan.counters.in_doubt, 4);
}


/*
 * A re-armed primary repaired what was found on it so far, however the
 * channel comes back to it. Here it comes back by a switch off the backup
 * (whose re-arm is still to come) after another channel to the peer, and
 * the peer itself, found the primary failing: the channel must not follow
 * those findings off the primary it has just taken, where the only way
 * left would be NO_PATH with both links up.
 */
GDA_FT_TEST(dev_chan, switch_onto_a_rearmed_primary_takes_its_repairs)
{
    static gda_ft_chan_mbox_t mbox;
    static gda_ft_chan_health_t health;
    gda_ft_chan_t chan;

    bookkeeping_chan_init(&chan, 64, 100, 0);
    memset(&mbox, 0, sizeof(mbox));
    memset(&health, 0, sizeof(health));
    chan.mbox   = &mbox;
    chan.health = &health;
    /* the channel left the primary first (its finding: generation 1),
     * then another channel (2) and the peer did */
    chan.seen_fail_gen = 1;
    health.fail_gen    = 2;
    mbox.peer_left     = 1;
    /* on the backup, which falls silent: the move back finds the primary
     * re-armed by the host */
    chan.active    = GDA_FT_CHAN_BACKUP;
    chan.sw.from   = GDA_FT_CHAN_BACKUP;
    chan.sw.why    = GDA_FT_CHAN_WHY_DEADLINE;
    mbox.rearm[GDA_FT_CHAN_PRIMARY]     = 1;
    mbox.rearm_psn[GDA_FT_CHAN_PRIMARY] = 700;
    gda_ft_chan_phase(&chan, GDA_FT_CHAN_PHASE_REARM);
    GDA_FT_ASSERT_EQ(gda_ft_chan_step_rearm(&chan), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(chan.sw.phase, GDA_FT_CHAN_PHASE_TELL);
    GDA_FT_ASSERT_EQ(chan.path[GDA_FT_CHAN_PRIMARY].next_psn, 700);
    GDA_FT_ASSERT_EQ(chan.path[GDA_FT_CHAN_PRIMARY].seen_rearm, 1);
    /* what the re-arm repaired is no news on the primary */
    GDA_FT_ASSERT_EQ(chan.seen_fail_gen, 2);
    GDA_FT_ASSERT_EQ(chan.path[GDA_FT_CHAN_PRIMARY].seen_peer_left, 1);

    /* on the primary with work in flight: the peer's finding is old */
    chan.active = GDA_FT_CHAN_PRIMARY;
    GDA_FT_ASSERT_EQ(gda_ft_chan_check_peer_left(&chan), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(chan.counters.switches, 0);
}

/* A channel whose primary rings into buffers of the test's: its doorbell
 * record and register read back */
typedef struct doorbell_chan {
    gda_ft_chan_t chan;
    uint64_t      ring[64 * 8];
    uint32_t      dbrec[2];
    uint64_t      uar;
} doorbell_chan_t;

static void doorbell_chan_init(doorbell_chan_t *d, uint32_t db_defer)
{
    memset(d, 0, sizeof(*d));
    bookkeeping_chan_init(&d->chan, 64, 100, 0);
    gda_ft_dev_sq_init(&d->chan.path[GDA_FT_CHAN_PRIMARY].sq, d->ring, 64,
                       0x100, d->dbrec, &d->uar, -1, NULL,
                       GDA_FT_WQE_MAX_INLINE);
    d->chan.db_defer = db_defer;
}

/* Publishes a reservation in its turn, as a post does, with db as its
 * last WQE's doorbell word */
static void doorbell_publish(doorbell_chan_t *d,
                             const gda_ft_chan_resv_t *resv, uint64_t db)
{
    gda_ft_chan_dest_t dest;
    gda_ft_chan_geom_t geom;
    uint32_t psn = gda_ft_chan_take_turn(&d->chan, resv);

    gda_ft_chan_geom_load(&d->chan, &geom);
    gda_ft_chan_dest_init(&dest, &d->chan, resv->path, resv->off, &geom);
    gda_ft_chan_release(&d->chan, &dest, resv->word,
                        gda_ft_dev_psn_add(psn, 1), db, !resv->turn);
}

/* The doorbell record says the HCA may run up to end */
#define ASSERT_RUNG(_d, _end, _db) \
    do { \
        GDA_FT_ASSERT_EQ(gda_ft_be32toh((_d)->dbrec[GDA_FT_MLX5_SND_DBR]), \
                         (_end)); \
        GDA_FT_ASSERT_EQ((_d)->uar, (_db)); \
    } while (0)

/* A publication whose next reservation is made leaves its doorbell to
 * that one, up to db_defer WQEBBs unrung; the last one rings, a frozen
 * word stops the deferral, and a poster whose turn came without a wait
 * (alone on the channel) rings at once */
GDA_FT_TEST(dev_chan, doorbell_left_to_the_reservation_behind)
{
    gda_ft_chan_resv_t a, b, c;
    gda_ft_chan_memo_t memo = {0};
    doorbell_chan_t *d = calloc(1, sizeof(*d));

    GDA_FT_ASSERT(d != NULL);
    doorbell_chan_init(d, 0);       /* every publication rings */
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&d->chan, 4, &a), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&d->chan, 4, &b), GDA_FT_DEV_OK);
    doorbell_publish(d, &a, 0xa);
    ASSERT_RUNG(d, 4, 0xa);
    doorbell_publish(d, &b, 0xb);
    ASSERT_RUNG(d, 8, 0xb);

    doorbell_chan_init(d, 6);
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&d->chan, 4, &a), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&d->chan, 4, &b), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&d->chan, 4, &c), GDA_FT_DEV_OK);
    doorbell_publish(d, &a, 0xa);   /* b is behind: b rings for it */
    ASSERT_RUNG(d, 0, 0);
    GDA_FT_ASSERT_EQ(gda_ft_chan_ready(&d->chan), 4);
    doorbell_publish(d, &b, 0xb);   /* 8 unrung would pass 6 */
    ASSERT_RUNG(d, 8, 0xb);
    doorbell_publish(d, &c, 0xc);   /* nobody behind */
    ASSERT_RUNG(d, 12, 0xc);

    /* a switch froze the word at c's end: c's publication is the last
     * one before it, and rings */
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&d->chan, 2, &a), GDA_FT_DEV_OK);
    d->chan.word |= GDA_FT_CHAN_FROZEN;
    doorbell_publish(d, &a, 0xd);
    ASSERT_RUNG(d, 14, 0xd);
    d->chan.word &= ~GDA_FT_CHAN_FROZEN;

    /* through a memo its turn is proven: it rings though b is behind */
    memo_post(&d->chan, &memo);     /* published by hand, not rung */
    ASSERT_RUNG(d, 14, 0xd);
    GDA_FT_ASSERT(gda_ft_chan_reserve_memo(&d->chan, 1, &memo, &a));
    GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&d->chan, 1, &b), GDA_FT_DEV_OK);
    doorbell_publish(d, &a, 0xe);
    ASSERT_RUNG(d, 16, 0xe);
    doorbell_publish(d, &b, 0xf);
    ASSERT_RUNG(d, 17, 0xf);
    free(d);
}

typedef struct doorbell_poster {
    doorbell_chan_t    *d;
    gda_ft_chan_resv_t  resv;
    uint64_t            db;
    pthread_t           thread;
} doorbell_poster_t;

static void *doorbell_poster_run(void *arg)
{
    doorbell_poster_t *p = (doorbell_poster_t*)arg;

    doorbell_publish(p->d, &p->resv, p->db);
    return NULL;
}

/* Three reservations, the last two published by threads that wait for
 * their turns while the first is published: the first two leave their
 * doorbells to the one behind, handing the channel over through `ready`,
 * and the last one rings for all three */
GDA_FT_TEST(dev_chan, deferred_doorbells_rung_by_the_thread_behind)
{
    doorbell_chan_t *d = calloc(1, sizeof(*d));
    doorbell_poster_t p[3];
    unsigned round, i;

    GDA_FT_ASSERT(d != NULL);
    for (round = 0; round < 200; ++round) {
        doorbell_chan_init(d, 64);
        for (i = 0; i < 3; ++i) {
            p[i].d  = d;
            p[i].db = 0xa + i;
            GDA_FT_ASSERT_EQ(gda_ft_chan_reserve(&d->chan, 4, &p[i].resv),
                             GDA_FT_DEV_OK);
        }
        for (i = 2; i > 0; --i) {
            GDA_FT_ASSERT_EQ(pthread_create(&p[i].thread, NULL,
                                            doorbell_poster_run, &p[i]), 0);
        }
        doorbell_publish(d, &p[0].resv, p[0].db);
        for (i = 1; i < 3; ++i) {
            pthread_join(p[i].thread, NULL);
        }
        ASSERT_RUNG(d, 12, 0xc);
        GDA_FT_ASSERT_EQ(gda_ft_chan_ready(&d->chan), 12);
        GDA_FT_ASSERT_EQ(d->chan.rung, 12);
    }
    free(d);
}
