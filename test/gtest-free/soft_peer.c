/*
 * gda_ft_soft_peer: one side of a soft HCA connection, for tests that put
 * the two sides in different processes or network namespaces
 * (test_soft_netns.c runs it under "ip netns exec").
 *
 * The server exposes a buffer; the client writes checksummed slots into it
 * (src/tools/gda_ft_tool.c, shared with gda_ft_soft_demo): first a phase of
 * N writes that the server verifies, then an endless stream until the QP
 * fails. Both meet over a UNIX socket (a path: it crosses namespaces) and
 * print one machine-readable line per event on stdout:
 *
 *   READY role=client qpn=0x123456
 *   PHASE1 writes=100 bytes=6553600 verified=1
 *   STREAMING
 *   ERROR wqe=345 syndrome=0x15 name=TRANSPORT_RETRY_EXC_ERR at=12.345678
 *         last_ok=11.808000 completed=300 posted=332 flushed=31 other=0
 *   FINAL verified=1 checked=200 bad=0 in_doubt=32
 *   VERIFY ok=1 writes=100 bytes=6553600 bad=0 in_doubt=0   (server)
 *
 * Times are CLOCK_MONOTONIC seconds, comparable across namespaces.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "gda_ft_tool.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct peer_opts {
    const char *role;
    const char *dev;
    const char *rendezvous;
    unsigned    timeout;
    unsigned    retry_cnt;
    size_t      size;
    unsigned    slots;
    unsigned    window;
    unsigned long phase1;
    double      max_time;
} peer_opts_t;


/* Counters of the device's port, for the record */
static void peer_print_stats(gda_ft_hca_dev_t *dev, const char *when)
{
    gda_ft_hca_port_attr_t attr;
    gda_ft_soft_port_stats_t st;

    if ((gda_ft_soft_port_stats(dev, 1, &st) != UCS_OK) ||
        (gda_ft_hca_port_query(dev, 1, &attr) != UCS_OK)) {
        return;
    }
    printf("STATS %s state=%s tx=%lu rx=%lu retrans=%lu dropped=%lu "
           "out_of_seq=%lu dup=%lu naks=%lu bad_src=%lu\n", when,
           (attr.state == GDA_FT_HCA_PORT_ACTIVE) ? "ACTIVE" : "DOWN",
           (unsigned long)st.tx_pkts, (unsigned long)st.rx_pkts,
           (unsigned long)st.retransmits, (unsigned long)st.fault_dropped,
           (unsigned long)st.rx_out_of_seq, (unsigned long)st.rx_duplicate,
           (unsigned long)st.tx_naks, (unsigned long)st.rx_bad_src);
    fflush(stdout);
}

static int peer_server(const peer_opts_t *opts, int chan)
{
    gda_ft_tool_msg_t msg = {0}, peer;
    gda_ft_hca_mr_t *mr = NULL, *cmr = NULL;
    gda_ft_tool_verify_t v;
    gda_ft_hca_dev_t *dev;
    gda_ft_tool_ep_t ep;
    uint64_t *counter = NULL;
    void *buf = NULL;
    size_t len = opts->size * opts->slots;
    int ret = 1, ok;

    if (gda_ft_tool_open_dev(opts->dev, &dev) != UCS_OK) {
        return 1;
    }
    if (gda_ft_tool_ep_create(&ep, dev, 1) != UCS_OK) {
        fprintf(stderr, "server: cannot create a QP\n");
        goto out_close;
    }

    if ((posix_memalign(&buf, 4096, len) != 0) ||
        (posix_memalign((void**)&counter, 64, 64) != 0)) {
        fprintf(stderr, "server: cannot allocate %zu bytes\n", len);
        goto out;
    }
    memset(buf, 0, len);
    memset(counter, 0, 64);
    if ((gda_ft_tool_mr_reg(&ep, buf, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE,
                            &mr) != UCS_OK) ||
        (gda_ft_tool_mr_reg(&ep, counter, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC,
                            &cmr) != UCS_OK)) {
        fprintf(stderr, "server: memory registration failed\n");
        goto out;
    }

    gda_ft_tool_msg_set_ep(&msg, &ep);
    msg.addr         = (uintptr_t)buf;
    msg.rkey         = mr->rkey;
    msg.nslots       = opts->slots;
    msg.slot_size    = (uint32_t)opts->size;
    msg.counter_addr = (uintptr_t)counter;
    msg.counter_rkey = cmr->rkey;
    if ((gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_CONN, &msg) != UCS_OK) ||
        (gda_ft_tool_msg_expect(chan, GDA_FT_TOOL_MSG_CONN, &peer, 30) !=
         UCS_OK) ||
        (gda_ft_tool_ep_connect(&ep, &peer, opts->timeout, opts->retry_cnt) !=
         UCS_OK)) {
        fprintf(stderr, "server: connection setup failed\n");
        goto out;
    }
    printf("READY role=server qpn=0x%06x\n", ep.qp->qpn);
    fflush(stdout);

    for (;;) {
        if (gda_ft_tool_msg_recv(chan, &msg, opts->max_time + 30) != UCS_OK) {
            fprintf(stderr, "server: the client went away\n");
            goto out;
        }
        if (msg.type == GDA_FT_TOOL_MSG_DONE) {
            break;
        }
        if (msg.type != GDA_FT_TOOL_MSG_VERIFY) {
            fprintf(stderr, "server: unexpected message %u\n", msg.type);
            goto out;
        }

        ok = gda_ft_tool_verify(buf, opts->size, opts->slots,
                                __atomic_load_n(counter, __ATOMIC_ACQUIRE),
                                &msg, &v);
        printf("VERIFY ok=%d writes=%lu bytes=%lu bad=%lu in_doubt=%lu "
               "first_bad=%ld\n", ok, (unsigned long)v.writes_checked,
               (unsigned long)v.bytes_checked, (unsigned long)v.slots_bad,
               (unsigned long)v.slots_in_doubt,
               (v.first_bad_slot == UINT64_MAX) ? -1l :
               (long)v.first_bad_slot);
        fflush(stdout);
        msg.arg[0] = ok;
        msg.arg[1] = v.writes_checked;
        msg.arg[2] = v.slots_bad;
        msg.arg[3] = v.slots_in_doubt;
        if (gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_RESULT, &msg) !=
            UCS_OK) {
            goto out;
        }
    }
    ret = 0;

out:
    peer_print_stats(dev, "server");
    if (mr != NULL) {
        gda_ft_hca_mr_dereg(mr);
    }
    if (cmr != NULL) {
        gda_ft_hca_mr_dereg(cmr);
    }
    free(buf);
    free(counter);
    gda_ft_tool_ep_destroy(&ep);
out_close:
    gda_ft_hca_close(dev);
    return ret;
}

/* Asks the server to verify what the stream's counts describe */
static int peer_verify(gda_ft_tool_stream_t *s, int chan,
                       gda_ft_tool_msg_t *result)
{
    gda_ft_tool_msg_t msg = {0};

    msg.arg[0] = s->completed_writes;
    msg.arg[1] = s->posted_writes;
    msg.arg[2] = s->completed_atomics;
    msg.arg[3] = s->posted_atomics;
    if ((gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_VERIFY, &msg) !=
         UCS_OK) ||
        (gda_ft_tool_msg_expect(chan, GDA_FT_TOOL_MSG_RESULT, result, 60) !=
         UCS_OK)) {
        return -1;
    }
    return 0;
}

static int peer_client(const peer_opts_t *opts, int chan)
{
    gda_ft_tool_msg_t msg = {0}, peer;
    gda_ft_tool_stream_t s;
    gda_ft_hca_dev_t *dev;
    gda_ft_tool_ep_t ep;
    double deadline;
    int ret = 1;

    if (gda_ft_tool_open_dev(opts->dev, &dev) != UCS_OK) {
        return 1;
    }
    if (gda_ft_tool_ep_create(&ep, dev, 1) != UCS_OK) {
        fprintf(stderr, "client: cannot create a QP\n");
        goto out_close;
    }

    gda_ft_tool_msg_set_ep(&msg, &ep);
    if ((gda_ft_tool_msg_expect(chan, GDA_FT_TOOL_MSG_CONN, &peer, 30) !=
         UCS_OK) ||
        (gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_CONN, &msg) != UCS_OK) ||
        (gda_ft_tool_ep_connect(&ep, &peer, opts->timeout, opts->retry_cnt) !=
         UCS_OK) ||
        (gda_ft_tool_stream_init(&s, &ep, &peer, opts->window, 0) !=
         UCS_OK)) {
        fprintf(stderr, "client: connection setup failed\n");
        goto out_ep;
    }
    printf("READY role=client qpn=0x%06x\n", ep.qp->qpn);
    fflush(stdout);

    /* Phase 1: N writes, all completed, then the server checks them */
    deadline = gda_ft_tool_now() + opts->max_time;
    while ((s.posted_writes < opts->phase1) && !s.failed &&
           (gda_ft_tool_now() < deadline)) {
        if (gda_ft_tool_stream_progress(&s, 1) == 0) {
            usleep(20);
        }
    }
    if ((gda_ft_tool_stream_drain(&s, opts->max_time) != UCS_OK) ||
        s.failed || (s.completed_writes < opts->phase1)) {
        fprintf(stderr, "client: phase 1 did not complete: %lu of %lu "
                "writes, %s\n", (unsigned long)s.completed_writes,
                opts->phase1, s.failed ?
                gda_ft_hca_syndrome_str(s.first_error.syndrome) : "no error");
        peer_print_stats(dev, "phase1");
        goto out_stream;
    }
    if (peer_verify(&s, chan, &msg) < 0) {
        goto out_stream;
    }
    printf("PHASE1 writes=%lu bytes=%lu verified=%lu\n",
           (unsigned long)s.completed_writes,
           (unsigned long)(s.completed_writes * opts->size),
           (unsigned long)msg.arg[0]);
    fflush(stdout);
    if (msg.arg[0] != 1) {
        goto out_stream;
    }

    /* Phase 2: stream until the QP fails */
    printf("STREAMING\n");
    fflush(stdout);
    deadline = gda_ft_tool_now() + opts->max_time;
    while (!(s.failed && (gda_ft_tool_stream_inflight(&s) == 0))) {
        if (gda_ft_tool_now() > deadline) {
            printf("TIMEOUT no error completion within %.0f s, %lu writes "
                   "completed\n", opts->max_time,
                   (unsigned long)s.completed_writes);
            fflush(stdout);
            goto out_stream;
        }
        if (gda_ft_tool_stream_progress(&s, 1) == 0) {
            usleep(20);
        }
    }

    printf("ERROR wqe=%u syndrome=0x%02x name=%s at=%.6f last_ok=%.6f "
           "completed=%lu posted=%lu flushed=%lu other=%lu\n",
           s.first_error.wqe_counter, s.first_error.syndrome,
           gda_ft_hca_syndrome_str(s.first_error.syndrome),
           s.first_error_time, s.last_ok_time,
           (unsigned long)s.completed_writes, (unsigned long)s.posted_writes,
           (unsigned long)s.flushed, (unsigned long)s.other_errors);
    fflush(stdout);
    peer_print_stats(dev, "error");

    if (peer_verify(&s, chan, &msg) < 0) {
        goto out_stream;
    }
    printf("FINAL verified=%lu checked=%lu bad=%lu in_doubt=%lu\n",
           (unsigned long)msg.arg[0], (unsigned long)msg.arg[1],
           (unsigned long)msg.arg[2], (unsigned long)msg.arg[3]);
    fflush(stdout);
    gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_DONE, &msg);
    ret = (msg.arg[0] == 1) ? 0 : 1;

out_stream:
    gda_ft_tool_stream_cleanup(&s);
out_ep:
    gda_ft_tool_ep_destroy(&ep);
out_close:
    gda_ft_hca_close(dev);
    return ret;
}

static void peer_usage(FILE *stream, const char *prog)
{
    fprintf(stream,
            "Usage: %s --role server|client --dev NAME=IP[:UDP_PORT] "
            "--rendezvous PATH\n"
            "          [--timeout N] [--retry-cnt N] [--size BYTES] "
            "[--slots N]\n"
            "          [--window N] [--phase1 N] [--max-time SEC]\n", prog);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"role",       required_argument, NULL, 'r'},
        {"dev",        required_argument, NULL, 'd'},
        {"rendezvous", required_argument, NULL, 'R'},
        {"timeout",    required_argument, NULL, 't'},
        {"retry-cnt",  required_argument, NULL, 'c'},
        {"size",       required_argument, NULL, 's'},
        {"slots",      required_argument, NULL, 'n'},
        {"window",     required_argument, NULL, 'w'},
        {"phase1",     required_argument, NULL, 'p'},
        {"max-time",   required_argument, NULL, 'm'},
        {"help",       no_argument,       NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    peer_opts_t opts = {
        .role = NULL, .dev = NULL, .rendezvous = NULL, .timeout = 14,
        .retry_cnt = 7, .size = 65536, .slots = 256, .window = 32,
        .phase1 = 100, .max_time = 60
    };
    int opt, chan, lfd, ret;

    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'r': opts.role       = optarg; break;
        case 'd': opts.dev        = optarg; break;
        case 'R': opts.rendezvous = optarg; break;
        case 't': opts.timeout    = strtoul(optarg, NULL, 0); break;
        case 'c': opts.retry_cnt  = strtoul(optarg, NULL, 0); break;
        case 's': opts.size       = strtoul(optarg, NULL, 0); break;
        case 'n': opts.slots      = strtoul(optarg, NULL, 0); break;
        case 'w': opts.window     = strtoul(optarg, NULL, 0); break;
        case 'p': opts.phase1     = strtoul(optarg, NULL, 0); break;
        case 'm': opts.max_time   = strtod(optarg, NULL); break;
        case 'h':
            peer_usage(stdout, argv[0]);
            return 0;
        default:
            peer_usage(stderr, argv[0]);
            return 2;
        }
    }

    if ((opts.role == NULL) || (opts.dev == NULL) ||
        (opts.rendezvous == NULL) ||
        (strcmp(opts.role, "server") && strcmp(opts.role, "client")) ||
        (opts.timeout < 1) || (opts.timeout > 31) || (opts.retry_cnt > 7) ||
        (opts.size <= GDA_FT_TOOL_SLOT_HDR) || (opts.slots <= opts.window) ||
        (opts.window < 1) || (opts.window > GDA_FT_TOOL_MAX_WINDOW) ||
        !(opts.max_time > 0)) {
        peer_usage(stderr, argv[0]);
        return 2;
    }

    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(opts.role, "server")) {
        lfd = gda_ft_tool_chan_listen(opts.rendezvous);
        if (lfd < 0) {
            return 1;
        }
        chan = gda_ft_tool_chan_accept(lfd, 60);
        close(lfd);
        unlink(opts.rendezvous);
        if (chan < 0) {
            return 1;
        }
        ret = peer_server(&opts, chan);
    } else {
        chan = gda_ft_tool_chan_connect(opts.rendezvous, 60);
        if (chan < 0) {
            return 1;
        }
        ret = peer_client(&opts, chan);
    }
    close(chan);
    return ret;
}
