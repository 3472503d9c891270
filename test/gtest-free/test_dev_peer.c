/*
 * The peer's state in the device datapath (device/gda_ft_chan_peer.h): a
 * peer that the host half gave up fails posts and waits at once, the
 * word reaches a health that lives apart from the mailbox (a GPU's), and
 * a peer going does not touch the channels to another peer.
 */
#include "chan_harness.h"
#include "soft_harness.h"
#include "gda_ft_test.h"
#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* What the host half does when it gives a peer up (uct_gda_ft_peer.c):
 * the mailboxes, then the health */
static void peer_publish(chan_world_t *w, uint32_t word)
{
    unsigned i;

    for (i = 0; i < w->params.nchan; ++i) {
        gda_ft_atomic_store_rel32(&w->a[i].mbox->peer_state, word);
    }
    gda_ft_atomic_store_rel32(&w->health->peer_state, word);
}

typedef struct {
    chan_world_t        *w;
    gda_ft_dev_status_t  status;
    double               returned;
} peer_waiter_t;

/* A signal that never comes, waited for on channel 0 */
static void *peer_wait_signal(void *arg)
{
    peer_waiter_t *pw = (peer_waiter_t*)arg;

    pw->status   = gda_ft_dev_wait_signal_on(&pw->w->ep, 0,
                                             &pw->w->results[0], 1, 0);
    pw->returned = soft_now_sec();
    return NULL;
}

/*
 * Both of the peer's ports die with a signal in flight and a waiter on a
 * signal from it: once the host half says GONE, the waiter returns
 * PEER_GONE within a few milliseconds (not NO_PATH deadlines later), the
 * request and quiet say PEER_GONE, and a new post fails at once without
 * taking room in the ring.
 */
GDA_FT_TEST_TIMEOUT(dev_peer, gone_fails_posts_and_waits_at_once, 60)
{
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    peer_waiter_t pw;
    pthread_t th;
    chan_world_t w;
    uint64_t word;
    double said;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&w.ep), GDA_FT_PEER_REACHABLE);
    GDA_FT_ASSERT_EQ(gda_ft_dev_signal(&w.ep, &w.ml, CHAN_ELEM_SIGNAL, 0, 1,
                                       0, NULL), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w.ep, 0, 0), GDA_FT_DEV_OK);

    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    chan_world_port(&w, GDA_FT_CHAN_BACKUP, 0);
    GDA_FT_ASSERT_EQ(gda_ft_dev_signal(&w.ep, &w.ml, CHAN_ELEM_SIGNAL, 0, 1,
                                       0, &req), GDA_FT_DEV_OK);
    pw.w = &w;
    GDA_FT_ASSERT_EQ(pthread_create(&th, NULL, peer_wait_signal, &pw), 0);
    /* the waiter waits; the word comes well inside the HCA's retry window
     * (params.timeout, retry_cnt: 29 ms), which is not scaled with the
     * deadlines, after which both paths report errors and a wait ends
     * in NO_PATH */
    usleep(5000);

    said = soft_now_sec();
    peer_publish(&w, GDA_FT_PEER_WORD(GDA_FT_PEER_GONE, 1));
    pthread_join(th, NULL);
    printf("waiter returned '%s' %.2f ms after the word\n",
           gda_ft_dev_status_str(pw.status), (pw.returned - said) * 1e3);
    GDA_FT_ASSERT_EQ(pw.status, GDA_FT_DEV_PEER_GONE);
    GDA_FT_ASSERT(pw.returned - said < params.deadline_ns / 2e9);

    GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&w.ep), GDA_FT_PEER_GONE);
    GDA_FT_ASSERT_EQ(GDA_FT_PEER_GEN(gda_ft_dev_peer_word(
            gda_ft_dev_peer(&w.ep))), 1);
    GDA_FT_ASSERT_EQ(gda_ft_dev_progress(&req), GDA_FT_DEV_PEER_GONE);
    GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w.ep, 0, 0), GDA_FT_DEV_PEER_GONE);
    word = w.chans[0].word;
    GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w.ep, &w.ml, CHAN_ELEM_DATA, 0,
                                           0, 64, 0, NULL),
                     GDA_FT_DEV_PEER_GONE);
    GDA_FT_ASSERT_EQ(gda_ft_dev_signal(&w.ep, &w.ml, CHAN_ELEM_SIGNAL, 0, 1,
                                       0, NULL), GDA_FT_DEV_PEER_GONE);
    GDA_FT_ASSERT_EQ(w.chans[0].word, word);   /* nothing reserved */
    GDA_FT_ASSERT_EQ(w.signals[0], 1);

    chan_world_guard_stop(&w);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 1);
    chan_world_port(&w, GDA_FT_CHAN_BACKUP, 1);
    chan_world_fini(&w);
}

/*
 * Where the health lives apart from the host (a GPU's copy), the word the
 * host writes into the mailbox reaches it at a channel's next progress
 * pass; a pass that read an older word never puts it back over a newer
 * one.
 */
GDA_FT_TEST(dev_peer, mailbox_word_reaches_a_health_elsewhere)
{
    chan_world_params_t params;
    gda_ft_chan_health_t copy;
    gda_ft_chan_t *chan;
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan    = &w.chans[0];
    memset(&copy, 0, sizeof(copy));
    chan->health = &copy;   /* the posters' own health, as on a GPU */

    gda_ft_atomic_store_rel32(&w.a[0].mbox->peer_state,
                              GDA_FT_PEER_WORD(GDA_FT_PEER_GONE, 1));
    GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&w.ep), GDA_FT_PEER_REACHABLE);
    GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w.ep, 0, 0), GDA_FT_DEV_OK);
    (void)gda_ft_chan_progress(chan);
    GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&w.ep), GDA_FT_PEER_GONE);
    GDA_FT_ASSERT_EQ(gda_ft_dev_signal(&w.ep, &w.ml, CHAN_ELEM_SIGNAL, 0, 1,
                                       0, NULL), GDA_FT_DEV_PEER_GONE);

    /* a newer word in the health, an older one in the mailbox */
    copy.peer_state = GDA_FT_PEER_WORD(GDA_FT_PEER_BACK, 2);
    (void)gda_ft_chan_progress(chan);
    GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&w.ep), GDA_FT_PEER_BACK);
    GDA_FT_ASSERT_EQ(gda_ft_dev_signal(&w.ep, &w.ml, CHAN_ELEM_SIGNAL, 0, 1,
                                       0, NULL), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w.ep, 0, 0), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(w.signals[0], 1);

    chan->health = w.health;
    chan_world_fini(&w);
}

/*
 * Two peers, one gone: posts and waits to the other go on, exact (its
 * channels read another word).
 */
GDA_FT_TEST_TIMEOUT(dev_peer, other_peers_posts_undisturbed, 60)
{
    chan_world_params_t params;
    chan_world_t w[2];
    unsigned i;

    chan_world_default_params(&params);
    params.nchan = 2;
    chan_world_init(&w[0], &params);
    params.reverse_of = &w[0];   /* the other way: another peer's channels */
    chan_world_init(&w[1], &params);
    chan_world_guard_start(&w[0]);
    chan_world_guard_start(&w[1]);

    peer_publish(&w[0], GDA_FT_PEER_WORD(GDA_FT_PEER_GONE, 1));
    for (i = 0; i < 100; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_dev_signal(&w[0].ep, &w[0].ml,
                                           CHAN_ELEM_SIGNAL, 0, 1, i % 2,
                                           NULL), GDA_FT_DEV_PEER_GONE);
        GDA_FT_ASSERT_EQ(gda_ft_dev_put_signal(&w[1].ep, &w[1].ml,
                                               CHAN_ELEM_DATA, 0, 0, 256,
                                               CHAN_ELEM_SIGNAL, 8 * (i % 2),
                                               1, i % 2, NULL),
                         GDA_FT_DEV_OK);
    }
    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w[1].ep, i, 0), GDA_FT_DEV_OK);
        /* nothing of it outstanding: nothing to wait for */
        GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w[0].ep, i, 0), GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_EQ(w[1].signals[0], 50);
    GDA_FT_ASSERT_EQ(w[1].signals[1], 50);
    GDA_FT_ASSERT_EQ(w[0].signals[0] + w[0].signals[1], 0);
    GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&w[1].ep), GDA_FT_PEER_REACHABLE);

    chan_world_guard_stop(&w[1]);
    chan_world_guard_stop(&w[0]);
    chan_world_fini(&w[1]);
    chan_world_fini(&w[0]);
}
