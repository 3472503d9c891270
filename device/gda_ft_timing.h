/*
 * gda_ft timing policy: every interval that the transport's host half and
 * the device datapath derive from the failover deadline D
 * (UCX_GDA_FT_DEADLINE), and why; both read them here and nowhere else.
 *
 * D is the one promise: a path that completes nothing for D while work is
 * outstanding on it is left for the other one. It judges paths, not the
 * peer: while the links are up and the peer is heard (not quiet, below), a
 * channel never gives up its last path, however long it is silent; only
 * a peer that goes quiet, and stays silent on links that are up for
 * GDA_FT_TIMING_SIT_OUT_DEADLINES deadlines, makes operations fail
 * (NO_PATH, IN_DOUBT) while its links are up, since a silent peer may be
 * starved (an engine thread, a process descheduled) as well as gone.
 *
 *   interval                  value                  decided by
 *   ------------------------  ---------------------  -------------------
 *   path silent               D                      channel (detection)
 *   channel starved           8 D                    channel
 *   progress stamp step       D / 16                 channel
 *   peer's finding, re-arm    D / 8 (primary),       channel
 *   notice looks              D / 2 (backup)
 *   grace for late            D / 8                  host
 *   completions
 *   guardian pass             D / 10 in 10 us..1 ms  host (interface)
 *   channel guardian pass     D / 50, 10 us at least host (channels)
 *                             and the guardian's at most
 *   resolve (peer's word)     D + grace + 4 passes   host and channel
 *   peer heard on a path      2 D                    host
 *   heard peer's extra        2 D                    host and channel
 *   control QP dead           8 D                    host
 *   probe of a re-armed path  max(D, resolve, quiet) host
 *   peer's re-arm answer      max(2 x resolve,       host
 *                             quiet)
 *   peer quiet: heard on no   2 D (250 ms at least   host
 *   path for                  with a CPU-played HCA)
 *   peer quiet: its guardian  max(64 D, the above)   host
 *   silent for
 *   silence sat out on        while the peer is      host and channel
 *   links that are up         heard, then 64 D
 *   a post's longest wait     while the peer is      channel (posters)
 *                             heard: the HCA's
 *                             retries; then
 *                             2 x 64 D + 4 D + 2 R
 *
 * With D = 0 (no failover) nothing is derived: a channel waits for its
 * path as long as the HCA retries, like any RC QP.
 */
#ifndef GDA_FT_TIMING_H_
#define GDA_FT_TIMING_H_

#include "gda_ft_dev_def.h"

/* Guardian passes run at least this often and at most this fast: a pass
 * reads every channel's mailbox, so a tiny deadline must not turn the host
 * half into a busy loop, and a long one must still answer promptly */
#define GDA_FT_TIMING_GUARD_MIN_NS        10000ull      /* 10 us */
#define GDA_FT_TIMING_GUARD_MAX_NS        1000000ull    /* 1 ms */

/* A channel whose own WQEs see no completion for this many deadlines is
 * dead even while other channels progress on its path (its QP alone may be
 * stuck); for one deadline, the path's progress speaks for it */
#define GDA_FT_TIMING_STARVED_DEADLINES   8

/* The peer counts as heard on a path when its packets arrived there, or it
 * acknowledged ours, within this many deadlines */
#define GDA_FT_TIMING_HEARD_DEADLINES     2

/* While the peer is heard, what waits on it gets this many deadlines more
 * than resolve_ns: the host for its word about a path left, a channel on
 * its last path for the other path's re-arm. Each exchange is a few writes
 * that a slow but healthy path may hold back for a deadline each. */
#define GDA_FT_TIMING_HEARD_EXTRA_DEADLINES 2

/* A peer heard on no path for GDA_FT_TIMING_HEARD_DEADLINES deadlines, or
 * for this long where an HCA is played by CPU threads, while what waits on
 * it sits out a silence, is taken for unreachable (its ports, its node or
 * its process died): the wait ends, and what it was for fails. A NIC
 * acknowledges while its host starves; a software HCA's engine does not:
 * in the false-switch main job on two cores at a load of 15, a peer went
 * unheard for up to about 200 ms. */
#define GDA_FT_TIMING_CPU_STARVED_NS      250000000ull  /* 250 ms */

/* A control QP whose question stays unanswered this long, while the other
 * control path serves, is in error: its questions take the other path
 * until it is re-armed */
#define GDA_FT_TIMING_CTL_DEAD_DEADLINES  8

/*
 * A silence on links that are up is sat out for this many deadlines before
 * anything fails for it: a silent last path (the other one's link down, or
 * awaiting its re-arm), the peer's word about a path left, the re-arm of
 * the other path. Within it, a silent peer is taken for starved, not gone:
 * a software HCA's engine that paused (200 us and 1 ms deadlines on an
 * H200) or processes descheduled on an oversubscribed host (5 ms on
 * two cores) had channels end in NO_PATH or settle signals IN_DOUBT with
 * both links up. An error completion, a link going down, or the HCA's own
 * retry budget running out still ends it at once.
 */
#define GDA_FT_TIMING_SIT_OUT_DEADLINES   64

/* The later of two readings of the clock (wrap-safe) */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_later(uint64_t a, uint64_t b)
{
    return ((int64_t)(b - a) > 0) ? b : a;
}

/*
 * The least time an RC QP retries a silent WQE before its HCA gives up
 * (TRANSPORT_RETRY_EXC): each of the first try and retry_cnt retries waits
 * at least 4.096 us * 2^timeout. 0: never (timeout 0 is infinite).
 */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_qp_retry_ns(uint8_t timeout,
                                                       uint8_t retry_cnt)
{
    return (timeout == 0) ? 0 : (retry_cnt + 1ull) * (4096ull << timeout);
}

/* Late completions of a QP that was left still count for this long */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_grace_ns(uint64_t deadline)
{
    return deadline / 8;
}

/* A shared progress stamp is rewritten only when it moved this much: the
 * word is written by every channel to the peer */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_stamp_step_ns(uint64_t deadline)
{
    return deadline / 16;
}

/* How often a channel with work in flight on the primary looks for the
 * peer's finding that the path died: well within a deadline, so it follows
 * before its own deadline would tell it */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_peer_look_ns(uint64_t deadline)
{
    return deadline / 8;
}

/* How often a channel that is never idle looks for a re-arm notice (across
 * PCIe on a GPU): on a closed loop that always has work in flight the
 * primary would otherwise never be taken back */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_rearm_look_ns(uint64_t deadline)
{
    return deadline / 2;
}

GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_clamp_guard(uint64_t ns)
{
    return (ns < GDA_FT_TIMING_GUARD_MIN_NS) ? GDA_FT_TIMING_GUARD_MIN_NS :
           (ns > GDA_FT_TIMING_GUARD_MAX_NS) ? GDA_FT_TIMING_GUARD_MAX_NS :
           ns;
}

/* The interface guardian's pass (UCX_GDA_FT_GUARD_INTERVAL=auto): a tenth
 * of a deadline, so that a switch it settles costs a small part of one */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_guard_ns(uint64_t deadline)
{
    return (deadline == 0) ? GDA_FT_TIMING_GUARD_MAX_NS :
           gda_ft_timing_clamp_guard(deadline / 10);
}

/* The channel guardian's pass: a fiftieth of a deadline, never slower than
 * the interface's; four of them fit in resolve_ns with room to spare */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_chan_guard_ns(uint64_t deadline,
                                                     uint64_t guard_ns)
{
    uint64_t ns;

    if (deadline == 0) {
        return guard_ns;
    }
    ns = deadline / 50;
    ns = (ns < GDA_FT_TIMING_GUARD_MIN_NS) ? GDA_FT_TIMING_GUARD_MIN_NS : ns;
    return (ns < guard_ns) ? ns : guard_ns;
}

/* How long the peer's word about a path left takes at most while the peer
 * is well: the grace, a pass of the channel guardian at each end and a
 * round trip (a deadline) */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_resolve_ns(uint64_t deadline,
                                                  uint64_t chan_guard_ns)
{
    return deadline + gda_ft_timing_grace_ns(deadline) + 4 * chan_guard_ns;
}

/* How long the host waits for the probe of a re-armed path to complete:
 * no less than the peer may go unheard (quiet_ns). A re-arm is no race
 * against a deadline, and a try given up doubles the wait for the next
 * one: over software HCAs whose passes outlast a 1 ms deadline, probe
 * after probe failed while the posters waited for the path */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_probe_wait_ns(uint64_t deadline,
                                                          uint64_t resolve_ns,
                                                          uint64_t quiet_ns)
{
    uint64_t wait = (deadline > resolve_ns) ? deadline : resolve_ns;

    return (wait > quiet_ns) ? wait : quiet_ns;
}

/* How long the host waits for the peer to answer a re-arm (of a channel
 * path or a control QP) before the try fails and is made again later: no
 * less than the peer may go unheard, as a probe */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_rearm_answer_ns(
        uint64_t resolve_ns, uint64_t quiet_ns)
{
    return (2 * resolve_ns > quiet_ns) ? 2 * resolve_ns : quiet_ns;
}

GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_quiet_ns(uint64_t deadline,
                                                     int cpu_engine)
{
    uint64_t heard = GDA_FT_TIMING_HEARD_DEADLINES * deadline;

    return (cpu_engine && (heard < GDA_FT_TIMING_CPU_STARVED_NS)) ?
           GDA_FT_TIMING_CPU_STARVED_NS : heard;
}

/* The silence sat out on links that are up */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_sit_out_ns(uint64_t deadline)
{
    return GDA_FT_TIMING_SIT_OUT_DEADLINES * deadline;
}

/* A peer's guardian that takes part in no question for this long counts
 * as quiet: the silence sat out, and no less than the peer may go
 * unheard (a starved guardian on a host whose HCA is played by CPU
 * threads) */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_guardian_quiet_ns(
        uint64_t deadline, uint64_t quiet_ns)
{
    uint64_t sit_out = gda_ft_timing_sit_out_ns(deadline);

    return (sit_out > quiet_ns) ? sit_out : quiet_ns;
}

/* How long the host waits for the peer's word about a path left, from the
 * record: the grace and resolve_ns; GDA_FT_TIMING_HEARD_EXTRA_DEADLINES
 * more while the peer is heard on a path; and the silence sat out while
 * the peer is not quiet (its guardian takes part: the word can still
 * come) */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_word_window_ns(uint64_t deadline,
                                                      uint64_t resolve_ns,
                                                      int heard, int quiet)
{
    return gda_ft_timing_grace_ns(deadline) + resolve_ns +
           (heard ? GDA_FT_TIMING_HEARD_EXTRA_DEADLINES * deadline : 0) +
           (quiet ? 0 : gda_ft_timing_sit_out_ns(deadline));
}

/* How long a channel waits for the host's answer to a record: the host's
 * longest window, its pass and a deadline more; past it, the host is
 * gone */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_answer_wait_ns(uint64_t deadline,
                                                      uint64_t resolve_ns)
{
    return gda_ft_timing_word_window_ns(deadline, resolve_ns, 1, 0) +
           resolve_ns + GDA_FT_TIMING_HEARD_EXTRA_DEADLINES * deadline;
}

/* How long a channel waits for the other path's re-arm before it judges
 * whether to stay: resolve_ns, the heard peer's extra when the host knows
 * both ends of that path up */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_rearm_wait_ns(uint64_t deadline,
                                                     uint64_t resolve_ns,
                                                     int heard)
{
    return resolve_ns +
           (heard ? GDA_FT_TIMING_HEARD_EXTRA_DEADLINES * deadline : 0);
}

/*
 * How long a post may wait for a switch or for ring space that stopped
 * draining: longer than the channel itself may take with a path left (a
 * word and a re-arm, each sat out for up to GDA_FT_TIMING_SIT_OUT_DEADLINES
 * deadlines, and a switch's own steps); a post that gave up sooner would
 * report TIMEOUT for a ring that then drained.
 */
GDA_FT_HOST_DEV_FUNC uint64_t gda_ft_timing_post_wait_ns(uint64_t deadline,
                                                    uint64_t resolve_ns)
{
    if (deadline == 0) {
        deadline = 1000000000ull;
    }
    return 2 * gda_ft_timing_sit_out_ns(deadline) + 4 * deadline +
           2 * resolve_ns;
}

#endif
