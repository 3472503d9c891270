/*
 * moe: the messages between a rank and the launcher, and the counters a
 * rank's summary adds up (see moe_int.h).
 */
#include "moe_int.h"
#include "gda_ft_prog.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void moe_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "moe%s%d: ", (opt.rank >= 0) ? " rank " : "",
            (opt.rank >= 0) ? opt.rank : 0);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void moe_write(int fd, const void *buf, size_t len)
{
    if (gda_ft_prog_write_all(fd, buf, len) != 0) {
        moe_die("lost the launcher: %s", strerror(errno));
    }
}

int moe_read(int fd, void *buf, size_t len)
{
    return gda_ft_prog_read_all(fd, buf, len);
}

void moe_send_blob(int fd, const void *buf, uint32_t len)
{
    moe_write(fd, &len, sizeof(len));
    moe_write(fd, buf, len);
}

void moe_send_msg(int fd, uint32_t type, const void *buf,
                  uint32_t len)
{
    moe_write(fd, &type, sizeof(type));
    moe_send_blob(fd, buf, len);
}

void *moe_recv_blob(int fd, uint32_t *len_p)
{
    uint32_t len;
    void *buf;

    if ((moe_read(fd, &len, sizeof(len)) != 0) || (len > (64u << 20))) {
        return NULL;
    }
    buf = malloc(len + 1);
    if (moe_read(fd, buf, len) != 0) {
        free(buf);
        return NULL;
    }
    if (len_p != NULL) {
        *len_p = len;
    }
    return buf;
}

static unsigned (*moe_idle)(void *arg);
static void *moe_idle_arg;

void moe_set_idle(unsigned (*idle)(void *arg), void *arg)
{
    moe_idle     = idle;
    moe_idle_arg = arg;
}

/* Until fd has something to read, idle meanwhile; an idle call that did
 * nothing lets the poll wait a millisecond */
static void moe_wait_readable(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    unsigned done     = 1;

    while (moe_idle != NULL) {
        if (poll(&pfd, 1, (done != 0) ? 0 : 1) != 0) {
            return;    /* readable, closed, or an error the read reports */
        }
        done = moe_idle(moe_idle_arg);
    }
}

/* Every rank's blob, in rank order (the launcher relays) */
void **moe_allgather(const void *buf, uint32_t len, uint32_t *lens)
{
    void **all = calloc(opt.ranks, sizeof(*all));
    unsigned r;

    moe_send_msg(opt.sock, MOE_MSG_GATHER, buf, len);
    moe_wait_readable(opt.sock);
    for (r = 0; r < opt.ranks; ++r) {
        all[r] = moe_recv_blob(opt.sock, (lens != NULL) ? &lens[r] : NULL);
        if (all[r] == NULL) {
            moe_die("the rendezvous broke");
        }
    }
    return all;
}

void moe_free_all(void **all)
{
    unsigned r;

    for (r = 0; r < opt.ranks; ++r) {
        free(all[r]);
    }
    free(all);
}


/* Adds the counters of b to a */
void moe_counters_add(gda_ft_chan_counters_t *a,
                      const gda_ft_chan_counters_t *b)
{
    a->switches  += b->switches;
    a->replays   += b->replays;
    a->resolved  += b->resolved;
    a->confirmed += b->confirmed;
    a->in_doubt  += b->in_doubt;
    a->failbacks += b->failbacks;
    a->no_path   += b->no_path;
    a->op_errors += b->op_errors;
}
