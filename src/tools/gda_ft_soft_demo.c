/*
 * gda_ft_soft_demo: two "nodes", each with its own software HCA, an RC
 * connection between them, and a port that dies in the middle.
 *
 * The client streams checksummed RDMA writes and fetch-add atomics into the
 * server's memory through the device/ datapath (the code GPU kernels run),
 * printing progress. Then the server's port goes down (on the client's
 * request after N operations, or from the fault schedule after T ms): the
 * client's QP retransmits until retry_cnt is exhausted, completes the oldest
 * WQE with TRANSPORT_RETRY_EXC_ERR and flushes the rest. Finally the server
 * checks every byte the completed writes put there and that its counter
 * equals the number of completed fetch-adds.
 *
 * By default the program forks itself into both roles; with --role it runs
 * one of them and meets the other over a UNIX socket (--rendezvous).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "gda_ft_tool.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEMO_SETUP_TIMEOUT  30.0   /* seconds to meet the other side */

typedef struct demo_opts {
    const char *role;           /* "both", "server" or "client" */
    const char *rendezvous;
    const char *server_addr;
    const char *client_addr;
    unsigned    udp_port;
    size_t      size;           /* bytes per write */
    unsigned    slots;          /* server buffer: slots of `size` bytes */
    unsigned    window;
    unsigned    atomic_every;
    unsigned long down_after_ops;
    double      down_after_ms;  /* > 0: fault schedule instead */
    unsigned    timeout;
    unsigned    retry_cnt;
    double      progress;       /* seconds between progress lines */
} demo_opts_t;

static const demo_opts_t demo_defaults = {
    .role           = "both",
    .rendezvous     = NULL,
    .server_addr    = "127.0.0.1",
    .client_addr    = "127.0.0.2",
    .udp_port       = 4791,
    .size           = 65536,
    .slots          = 256,
    .window         = 64,
    .atomic_every   = 8,
    .down_after_ops = 2000,
    .down_after_ms  = 0,
    .timeout        = 14,
    .retry_cnt      = 7,
    .progress       = 0.25
};


static void demo_usage(FILE *stream, const char *prog)
{
    fprintf(stream,
        "Usage: %s [options]\n"
        "\n"
        "Two processes with a software HCA each: the client streams checksummed"
        "\nRDMA writes and fetch-add atomics to the server, the server's port "
        "goes\ndown, the client's QP fails with TRANSPORT_RETRY_EXC_ERR, and "
        "the server\nverifies what arrived. Exit status 0 when everything "
        "behaved as RC requires.\n"
        "\n"
        "  --role both|server|client  both (default) forks; the others meet "
        "over\n"
        "                             --rendezvous\n"
        "  --rendezvous PATH          UNIX socket where server and client "
        "meet\n"
        "  --server-addr IP           server port address (default %s)\n"
        "  --client-addr IP           client port address (default %s)\n"
        "  --udp-port N               UDP port of both soft HCAs (default %u)\n"
        "  --size BYTES               bytes per write (default %zu)\n"
        "  --slots N                  server buffer slots of --size bytes "
        "(default %u)\n"
        "  --window N                 operations in flight (default %u, max "
        "%d)\n"
        "  --atomic-every N           every Nth operation is a fetch-add; 0: "
        "none (default %u)\n"
        "  --down-after-ops N         the client asks the server to take its "
        "port\n"
        "                             down after N operations (default %lu;"
        "\n"
        "                             0: wait until something else takes it"
        "\n"
        "                             down, e.g. gda_ft_softctl)\n"
        "  --down-after-ms T          instead, the server's fault schedule "
        "takes it\n"
        "                             down T ms after its device opened\n"
        "  --timeout N                QP timeout: 4.096 us * 2^N (default %u)\n"
        "  --retry-cnt N              QP retry count 0..7 (default %u)\n"
        "  --progress SEC             seconds between progress lines "
        "(default %g)\n"
        "  -h, --help                 this help\n",
        prog, demo_defaults.server_addr, demo_defaults.client_addr,
        demo_defaults.udp_port, demo_defaults.size, demo_defaults.slots,
        demo_defaults.window, GDA_FT_TOOL_MAX_WINDOW,
        demo_defaults.atomic_every, demo_defaults.down_after_ops,
        demo_defaults.timeout, demo_defaults.retry_cnt,
        demo_defaults.progress);
}

/* Seconds until retry exhaustion: (retry_cnt + 1) * 4.096 us * 2^timeout */
static double demo_retry_bound(const demo_opts_t *opts)
{
    return (opts->retry_cnt + 1) * 4.096e-6 * (double)(1ull << opts->timeout);
}

static void demo_print(const char *role, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void demo_print(const char *role, const char *fmt, ...)
{
    va_list ap;

    printf("[%s] ", role);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}


/* ---- server -------------------------------------------------------------- */

static int demo_server_port_down(gda_ft_hca_dev_t *dev, int chan,
                                 const char *why)
{
    gda_ft_tool_msg_t msg = {0};
    double now            = gda_ft_tool_now();

    msg.arg[0] = (uint64_t)(now * 1e9);
    demo_print("server", "port %s:1 is DOWN (%s)", dev->attr.info.name, why);
    return (gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_DOWN_DONE, &msg) ==
            UCS_OK) ? 0 : -1;
}

static void demo_server_report(const gda_ft_tool_verify_t *v,
                               const gda_ft_tool_msg_t *report, size_t size,
                               int ok)
{
    char bytes[32];

    demo_print("server", "checked %lu slots holding their last completed "
               "write: %s byte for byte (CRC32 and pattern), %lu bad; %lu "
               "slots in doubt (targets of writes that failed), %lu never "
               "written",
               (unsigned long)v->writes_checked,
               gda_ft_tool_bytes_str((double)v->bytes_checked, bytes,
                                     sizeof(bytes)),
               (unsigned long)v->slots_bad, (unsigned long)v->slots_in_doubt,
               (unsigned long)v->slots_empty);
    if (v->slots_bad) {
        demo_print("server", "FAILED: slot %lu (offset %lu) does not hold "
                   "the write that last completed there",
                   (unsigned long)v->first_bad_slot,
                   (unsigned long)(v->first_bad_slot * size));
    }

    if (v->counter == report->arg[2]) {
        demo_print("server", "counter %lu == completed fetch-adds %lu",
                   (unsigned long)v->counter, (unsigned long)report->arg[2]);
    } else if (v->counter_ok) {
        demo_print("server", "counter %lu == completed fetch-adds %lu + %lu "
                   "in doubt (executed here, acknowledgement lost with the "
                   "port)", (unsigned long)v->counter,
                   (unsigned long)report->arg[2],
                   (unsigned long)v->atomics_in_doubt);
    } else {
        demo_print("server", "FAILED: counter %lu, but %lu fetch-adds "
                   "completed and %lu were posted",
                   (unsigned long)v->counter, (unsigned long)report->arg[2],
                   (unsigned long)report->arg[3]);
    }
    demo_print("server", "%s", ok ? "verification passed" :
                                    "verification FAILED");
}

static int demo_server(const demo_opts_t *opts, int chan)
{
    gda_ft_hca_mr_t *buf_mr = NULL, *counter_mr = NULL;
    gda_ft_tool_msg_t msg = {0}, peer;
    gda_ft_tool_verify_t verify;
    gda_ft_hca_dev_t *dev;
    gda_ft_hca_event_t event;
    gda_ft_tool_ep_t ep;
    struct pollfd pfds[2];
    uint64_t *counter = NULL;
    char spec[128], sched[128], bytes[32];
    double deadline;
    int down = 0, ok = 0, ret;
    size_t buf_len;
    void *buf = NULL;

    snprintf(spec, sizeof(spec), "demo0=%s:%u", opts->server_addr,
             opts->udp_port);
    if (opts->down_after_ms > 0) {
        snprintf(sched, sizeof(sched), "%gms:demo0:1:down",
                 opts->down_after_ms);
        setenv("UCX_GDA_FT_SOFT_FAULTS", sched, 1);
    }
    if (gda_ft_tool_open_dev(spec, &dev) != UCS_OK) {
        return 1;
    }
    if (gda_ft_tool_ep_create(&ep, dev, 1) != UCS_OK) {
        fprintf(stderr, "server: cannot create the QP\n");
        goto out_close;
    }

    buf_len = opts->size * opts->slots;
    if ((posix_memalign(&buf, 4096, buf_len) != 0) ||
        (posix_memalign((void**)&counter, 64, 64) != 0)) {
        fprintf(stderr, "server: cannot allocate %zu bytes\n", buf_len);
        goto out_mr;
    }
    memset(buf, 0, buf_len);
    memset(counter, 0, 64);
    if ((gda_ft_tool_mr_reg(&ep, buf, buf_len,
                            GDA_FT_HCA_ACCESS_REMOTE_WRITE, &buf_mr) !=
         UCS_OK) ||
        (gda_ft_tool_mr_reg(&ep, counter, 64,
                            GDA_FT_HCA_ACCESS_REMOTE_ATOMIC, &counter_mr) !=
         UCS_OK)) {
        fprintf(stderr, "server: memory registration failed\n");
        goto out_mr;
    }

    gda_ft_tool_msg_set_ep(&msg, &ep);
    msg.addr         = (uintptr_t)buf;
    msg.rkey         = buf_mr->rkey;
    msg.nslots       = opts->slots;
    msg.slot_size    = (uint32_t)opts->size;
    msg.counter_addr = (uintptr_t)counter;
    msg.counter_rkey = counter_mr->rkey;
    if ((gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_CONN, &msg) != UCS_OK) ||
        (gda_ft_tool_msg_expect(chan, GDA_FT_TOOL_MSG_CONN, &peer,
                                DEMO_SETUP_TIMEOUT) != UCS_OK)) {
        fprintf(stderr, "server: connection exchange failed\n");
        goto out_mr;
    }
    if (gda_ft_tool_ep_connect(&ep, &peer, opts->timeout, opts->retry_cnt) !=
        UCS_OK) {
        fprintf(stderr, "server: cannot connect the QP\n");
        goto out_mr;
    }

    demo_print("server", "soft HCA demo0 port 1 at %s:%u, QP 0x%06x, "
               "buffer %u x %zu bytes (%s), counter at %p",
               opts->server_addr, opts->udp_port, ep.qp->qpn, opts->slots,
               opts->size, gda_ft_tool_bytes_str((double)buf_len, bytes,
                                                 sizeof(bytes)),
               (void*)counter);

    /* Serve until the client's report: port down requests, port events */
    deadline = gda_ft_tool_now() + 600;
    for (;;) {
        pfds[0].fd     = chan;
        pfds[0].events = POLLIN;
        pfds[1].fd     = gda_ft_hca_event_fd(dev);
        pfds[1].events = POLLIN;
        ret = poll(pfds, 2, 100);
        if ((ret < 0) && (errno != EINTR)) {
            perror("poll");
            goto out_mr;
        }
        if (gda_ft_tool_now() > deadline) {
            fprintf(stderr, "server: the client did not finish in time\n");
            goto out_mr;
        }

        while (gda_ft_hca_get_event(dev, &event) == UCS_OK) {
            if ((event.type == GDA_FT_HCA_EVENT_PORT_ERR) && !down) {
                down = 1;
                if (opts->down_after_ms > 0) {
                    snprintf(sched, sizeof(sched), "fault schedule, %g ms "
                             "after open", opts->down_after_ms);
                } else {
                    snprintf(sched, sizeof(sched), "port event: taken down "
                             "from outside");
                }
                if (demo_server_port_down(dev, chan, sched) < 0) {
                    goto out_mr;
                }
            }
        }

        if (!(pfds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            continue;
        }
        if (gda_ft_tool_msg_recv(chan, &msg, 5.0) != UCS_OK) {
            fprintf(stderr, "server: the client went away\n");
            goto out_mr;
        }

        if (msg.type == GDA_FT_TOOL_MSG_DOWN_REQ) {
            /* the control API: same as "gda_ft_softctl port demo0 1 down" */
            gda_ft_soft_port_set_up(dev, 1, 0);
            while (gda_ft_hca_get_event(dev, &event) == UCS_OK) {
            }
            down = 1;
            snprintf(sched, sizeof(sched), "requested by the client after "
                     "%lu operations", (unsigned long)msg.arg[0]);
            if (demo_server_port_down(dev, chan, sched) < 0) {
                goto out_mr;
            }
        } else if (msg.type == GDA_FT_TOOL_MSG_VERIFY) {
            break;
        } else {
            fprintf(stderr, "server: unexpected message %u\n", msg.type);
            goto out_mr;
        }
    }

    ok = gda_ft_tool_verify(buf, opts->size, opts->slots,
                            __atomic_load_n(counter, __ATOMIC_ACQUIRE), &msg,
                            &verify);
    demo_server_report(&verify, &msg, opts->size, ok);
    msg.arg[0] = ok;
    gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_RESULT, &msg);

out_mr:
    if (buf_mr != NULL) {
        gda_ft_hca_mr_dereg(buf_mr);
    }
    if (counter_mr != NULL) {
        gda_ft_hca_mr_dereg(counter_mr);
    }
    free(buf);
    free(counter);
    gda_ft_tool_ep_destroy(&ep);
out_close:
    gda_ft_hca_close(dev);
    return ok ? 0 : 1;
}


/* ---- client -------------------------------------------------------------- */

static void demo_client_progress(gda_ft_tool_stream_t *s, size_t size,
                                 double t0, double now)
{
    double bytes = (double)s->completed_writes * size;
    char total[32], rate[32];

    demo_print("client", "%6.2f s: %8lu writes (%s, %s/s), %6lu fetch-adds, "
               "%3u in flight", now - t0, (unsigned long)s->completed_writes,
               gda_ft_tool_bytes_str(bytes, total, sizeof(total)),
               gda_ft_tool_bytes_str(bytes / (now - t0), rate, sizeof(rate)),
               (unsigned long)s->completed_atomics,
               gda_ft_tool_stream_inflight(s));
}

static int demo_client(const demo_opts_t *opts, int chan)
{
    double bound = demo_retry_bound(opts), t0, now, next_progress;
    double down_time = 0, deadline, after, since_ack;
    gda_ft_tool_msg_t msg = {0}, peer;
    gda_ft_tool_stream_t stream;
    gda_ft_hca_dev_t *dev;
    gda_ft_tool_ep_t ep;
    uint64_t ops, in_doubt;
    int down_requested = 0, ok = 0, expected = 1;
    char spec[128], bytes[32];
    unsigned n;

    snprintf(spec, sizeof(spec), "demo1=%s:%u", opts->client_addr,
             opts->udp_port);
    if (gda_ft_tool_open_dev(spec, &dev) != UCS_OK) {
        return 1;
    }
    if (gda_ft_tool_ep_create(&ep, dev, 1) != UCS_OK) {
        fprintf(stderr, "client: cannot create the QP\n");
        goto out_close;
    }

    gda_ft_tool_msg_set_ep(&msg, &ep);
    if ((gda_ft_tool_msg_expect(chan, GDA_FT_TOOL_MSG_CONN, &peer,
                                DEMO_SETUP_TIMEOUT) != UCS_OK) ||
        (gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_CONN, &msg) != UCS_OK)) {
        fprintf(stderr, "client: connection exchange failed\n");
        goto out_ep;
    }
    if ((gda_ft_tool_ep_connect(&ep, &peer, opts->timeout, opts->retry_cnt) !=
         UCS_OK) ||
        (gda_ft_tool_stream_init(&stream, &ep, &peer, opts->window,
                                 opts->atomic_every) != UCS_OK)) {
        fprintf(stderr, "client: cannot set up the QP\n");
        goto out_ep;
    }

    demo_print("client", "soft HCA demo1 port 1 at %s:%u, QP 0x%06x -> "
               "server QP 0x%06x; timeout %u, retry_cnt %u: retries end "
               "%.2f s after the last acknowledgement",
               opts->client_addr, opts->udp_port, ep.qp->qpn, peer.qpn,
               opts->timeout, opts->retry_cnt, bound);
    if (opts->down_after_ms > 0) {
        demo_print("client", "streaming %zu-byte writes%s; the server's "
                   "fault schedule takes its port down %g ms after it "
                   "opened", opts->size, opts->atomic_every ?
                   " and fetch-adds" : "", opts->down_after_ms);
    } else if (opts->down_after_ops > 0) {
        demo_print("client", "streaming %zu-byte writes%s; the server's "
                   "port goes down after %lu operations", opts->size,
                   opts->atomic_every ? " and fetch-adds" : "",
                   opts->down_after_ops);
    } else {
        demo_print("client", "streaming %zu-byte writes%s until the "
                   "server's port is taken down from outside, e.g. "
                   "gda_ft_softctl -a port demo0 1 down", opts->size,
                   opts->atomic_every ? " and fetch-adds" : "");
    }

    t0            = gda_ft_tool_now();
    next_progress = t0 + opts->progress;
    deadline      = t0 + 600;
    for (;;) {
        n   = gda_ft_tool_stream_progress(&stream, 1);
        now = gda_ft_tool_now();
        ops = stream.completed_writes + stream.completed_atomics;

        if ((opts->down_after_ms <= 0) && (opts->down_after_ops > 0) &&
            !down_requested && (ops >= opts->down_after_ops)) {
            msg.arg[0] = ops;
            if (gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_DOWN_REQ, &msg) !=
                UCS_OK) {
                fprintf(stderr, "client: the server went away\n");
                goto out_stream;
            }
            down_requested = 1;
        }

        if ((down_time == 0) &&
            (gda_ft_tool_msg_recv(chan, &msg, 0) == UCS_OK)) {
            if (msg.type != GDA_FT_TOOL_MSG_DOWN_DONE) {
                fprintf(stderr, "client: unexpected message %u\n", msg.type);
                goto out_stream;
            }
            down_time = msg.arg[0] * 1e-9;
            demo_client_progress(&stream, opts->size, t0, now);
            demo_print("client", "server port is down; %u operations in "
                       "flight wait for acknowledgements that will not come",
                       gda_ft_tool_stream_inflight(&stream));
            deadline  = down_time + bound + 10;
        }

        if (stream.failed && (gda_ft_tool_stream_inflight(&stream) == 0)) {
            break;
        }

        if (!stream.failed && (now >= next_progress)) {
            demo_client_progress(&stream, opts->size, t0, now);
            next_progress += opts->progress;
        }

        if (now > deadline) {
            fprintf(stderr, "client: no error completion %.0f s after the "
                    "port went down\n", now - down_time);
            goto out_stream;
        }
        if (n == 0) {
            usleep(50);
        }
    }

    /* the server's notice may trail the error when its schedule fired */
    if ((down_time == 0) &&
        (gda_ft_tool_msg_expect(chan, GDA_FT_TOOL_MSG_DOWN_DONE, &msg,
                                5.0) == UCS_OK)) {
        down_time = msg.arg[0] * 1e-9;
    }

    after = stream.first_error_time - down_time;
    since_ack = stream.first_error_time - stream.last_ok_time;
    demo_print("client", "error CQE: wqe %u syndrome 0x%02x %s after %.2f s",
               stream.first_error.wqe_counter, stream.first_error.syndrome,
               gda_ft_hca_syndrome_str(stream.first_error.syndrome), after);
    demo_print("client", "(%.2f s after the last acknowledgement; retry "
               "budget (%u + 1) x 4.096 us x 2^%u = %.2f s)", since_ack,
               opts->retry_cnt, opts->timeout, bound);
    in_doubt = stream.posted_writes + stream.posted_atomics -
               stream.completed_writes - stream.completed_atomics;
    demo_print("client", "%lu later WQEs flushed: WR_FLUSH_ERR (syndrome "
               "0x%02x)%s", (unsigned long)stream.flushed,
               GDA_FT_MLX5_SYND_WR_FLUSH_ERR,
               stream.other_errors ? ", and unexpected completions too" : "");
    demo_print("client", "completed: %lu writes (%s), %lu fetch-adds "
               "(each returned its own number: %s); %lu operations failed",
               (unsigned long)stream.completed_writes,
               gda_ft_tool_bytes_str((double)stream.completed_writes *
                                     opts->size, bytes, sizeof(bytes)),
               (unsigned long)stream.completed_atomics,
               stream.fetch_mismatch ? "NO" : "yes",
               (unsigned long)in_doubt);

    if (stream.first_error.syndrome !=
        GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR) {
        demo_print("client", "UNEXPECTED: the first error should be "
                   "TRANSPORT_RETRY_EXC_ERR");
        expected = 0;
    }
    if ((stream.flushed + 1 != in_doubt) || stream.other_errors ||
        stream.fetch_mismatch) {
        demo_print("client", "UNEXPECTED: %lu flushed of %lu failed, %lu "
                   "other errors, %lu wrong fetched values",
                   (unsigned long)stream.flushed, (unsigned long)in_doubt,
                   (unsigned long)stream.other_errors,
                   (unsigned long)stream.fetch_mismatch);
        expected = 0;
    }
    /* The retry budget runs from the last acknowledgement, which came a
     * little before the port went down; each of the retry_cnt + 1 timer
     * expiries may come late by a scheduling delay on a loaded host */
    if ((down_time == 0) || (since_ack < bound / 2) ||
        (after > bound + 1.0)) {
        demo_print("client", "UNEXPECTED: the error came %.2f s after the "
                   "port went down, expected about %.2f s", after, bound);
        expected = 0;
    }

    msg.arg[0] = stream.completed_writes;
    msg.arg[1] = stream.posted_writes;
    msg.arg[2] = stream.completed_atomics;
    msg.arg[3] = stream.posted_atomics;
    if ((gda_ft_tool_msg_send(chan, GDA_FT_TOOL_MSG_VERIFY, &msg) !=
         UCS_OK) ||
        (gda_ft_tool_msg_expect(chan, GDA_FT_TOOL_MSG_RESULT, &msg, 60.0) !=
         UCS_OK)) {
        fprintf(stderr, "client: no verification result from the server\n");
        goto out_stream;
    }
    ok = expected && (msg.arg[0] == 1);

out_stream:
    gda_ft_tool_stream_cleanup(&stream);
out_ep:
    gda_ft_tool_ep_destroy(&ep);
out_close:
    gda_ft_hca_close(dev);
    return ok ? 0 : 1;
}


/* ---- main ---------------------------------------------------------------- */

static int demo_parse_uint(const char *arg, const char *name,
                           unsigned long min, unsigned long max,
                           unsigned long *value)
{
    char *end;

    errno  = 0;
    *value = strtoul(arg, &end, 0);
    if ((errno != 0) || (*end != '\0') || (*arg == '-') || (*value < min) ||
        (*value > max)) {
        fprintf(stderr, "invalid %s '%s': expected %lu..%lu\n", name, arg,
                min, max);
        return -1;
    }
    return 0;
}

static int demo_parse(int argc, char **argv, demo_opts_t *opts)
{
    static const struct option longopts[] = {
        {"role",           required_argument, NULL, 'r'},
        {"rendezvous",     required_argument, NULL, 'R'},
        {"server-addr",    required_argument, NULL, 'S'},
        {"client-addr",    required_argument, NULL, 'C'},
        {"udp-port",       required_argument, NULL, 'u'},
        {"size",           required_argument, NULL, 's'},
        {"slots",          required_argument, NULL, 'n'},
        {"window",         required_argument, NULL, 'w'},
        {"atomic-every",   required_argument, NULL, 'a'},
        {"down-after-ops", required_argument, NULL, 'o'},
        {"down-after-ms",  required_argument, NULL, 'm'},
        {"timeout",        required_argument, NULL, 't'},
        {"retry-cnt",      required_argument, NULL, 'c'},
        {"progress",       required_argument, NULL, 'p'},
        {"help",           no_argument,       NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    unsigned long value;
    char *end;
    int opt;

    *opts = demo_defaults;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'r':
            if (strcmp(optarg, "both") && strcmp(optarg, "server") &&
                strcmp(optarg, "client")) {
                fprintf(stderr, "invalid role '%s': both, server or client\n",
                        optarg);
                return -1;
            }
            opts->role = optarg;
            break;
        case 'R':
            opts->rendezvous = optarg;
            break;
        case 'S':
            opts->server_addr = optarg;
            break;
        case 'C':
            opts->client_addr = optarg;
            break;
        case 'u':
            if (demo_parse_uint(optarg, "UDP port", 1, 65535, &value) < 0) {
                return -1;
            }
            opts->udp_port = value;
            break;
        case 's':
            if (demo_parse_uint(optarg, "size", GDA_FT_TOOL_SLOT_HDR + 1,
                                1ul << 30, &value) < 0) {
                return -1;
            }
            opts->size = value;
            break;
        case 'n':
            if (demo_parse_uint(optarg, "slots", 2, 1ul << 20, &value) < 0) {
                return -1;
            }
            opts->slots = value;
            break;
        case 'w':
            if (demo_parse_uint(optarg, "window", 1, GDA_FT_TOOL_MAX_WINDOW,
                                &value) < 0) {
                return -1;
            }
            opts->window = value;
            break;
        case 'a':
            if (demo_parse_uint(optarg, "atomic-every", 0, 1u << 20,
                                &value) < 0) {
                return -1;
            }
            opts->atomic_every = value;
            break;
        case 'o':
            if (demo_parse_uint(optarg, "down-after-ops", 0, ~0ul,
                                &value) < 0) {
                return -1;
            }
            opts->down_after_ops = value;
            break;
        case 'm':
            opts->down_after_ms = strtod(optarg, &end);
            if ((*end != '\0') || !(opts->down_after_ms > 0)) {
                fprintf(stderr, "invalid down-after-ms '%s'\n", optarg);
                return -1;
            }
            break;
        case 't':
            if (demo_parse_uint(optarg, "timeout", 1, 31, &value) < 0) {
                return -1;
            }
            opts->timeout = value;
            break;
        case 'c':
            if (demo_parse_uint(optarg, "retry-cnt", 0, 7, &value) < 0) {
                return -1;
            }
            opts->retry_cnt = value;
            break;
        case 'p':
            opts->progress = strtod(optarg, &end);
            if ((*end != '\0') || !(opts->progress > 0)) {
                fprintf(stderr, "invalid progress interval '%s'\n", optarg);
                return -1;
            }
            break;
        case 'h':
            demo_usage(stdout, argv[0]);
            exit(0);
        default:
            demo_usage(stderr, argv[0]);
            return -1;
        }
    }

    if (optind < argc) {
        fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (strcmp(opts->role, "both") && (opts->rendezvous == NULL)) {
        fprintf(stderr, "--role %s needs --rendezvous PATH\n", opts->role);
        return -1;
    }
    if (opts->slots <= opts->window) {
        fprintf(stderr, "--slots (%u) must exceed --window (%u)\n",
                opts->slots, opts->window);
        return -1;
    }
    if (opts->size > UINT32_MAX / 2) {
        fprintf(stderr, "--size must fit one WQE (< 2 GiB)\n");
        return -1;
    }
    return 0;
}

static int demo_both(const demo_opts_t *opts)
{
    int sv[2], status, client_ret, server_ret;
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        perror("socketpair");
        return 1;
    }

    /* Fork before any soft HCA exists: each process gets its own engine */
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(sv[0]);
        _exit(demo_client(opts, sv[1]));
    }

    close(sv[1]);
    server_ret = demo_server(opts, sv[0]);
    close(sv[0]);
    if (server_ret != 0) {
        kill(pid, SIGTERM);
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("waitpid");
            return 1;
        }
    }
    client_ret = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "client killed by signal %d\n", WTERMSIG(status));
    }

    printf("demo %s\n", ((server_ret == 0) && (client_ret == 0)) ?
                        "PASSED: the failure was detected, reported and "
                        "nothing that completed was lost" : "FAILED");
    return ((server_ret == 0) && (client_ret == 0)) ? 0 : 1;
}

int main(int argc, char **argv)
{
    demo_opts_t opts;
    int lfd, chan, ret;

    if (demo_parse(argc, argv, &opts) < 0) {
        return 2;
    }

    signal(SIGPIPE, SIG_IGN);
    if (!strcmp(opts.role, "both")) {
        return demo_both(&opts);
    }

    if (!strcmp(opts.role, "server")) {
        lfd = gda_ft_tool_chan_listen(opts.rendezvous);
        if (lfd < 0) {
            return 1;
        }
        demo_print("server", "waiting for the client at %s",
                   opts.rendezvous);
        chan = gda_ft_tool_chan_accept(lfd, 120);
        close(lfd);
        unlink(opts.rendezvous);
        if (chan < 0) {
            return 1;
        }
        ret = demo_server(&opts, chan);
    } else {
        chan = gda_ft_tool_chan_connect(opts.rendezvous, DEMO_SETUP_TIMEOUT);
        if (chan < 0) {
            return 1;
        }
        ret = demo_client(&opts, chan);
    }
    close(chan);
    return ret;
}
