/*
 * gda_ft UCT transport: the counters of an endpoint, which
 * uct_gda_ft_ep_query_counters() and uct_gda_ft_iface_query_counters()
 * return. Plain C, for tests and tools that read them without UCX's
 * internal headers.
 */
#ifndef UCT_GDA_FT_COUNTERS_H_
#define UCT_GDA_FT_COUNTERS_H_

#include <stdint.h>

/* Those of the endpoint's host channel, and the operations it failed for
 * lack of a path */
typedef struct uct_gda_ft_ep_counters {
    uint32_t switches;    /* moves to the other path */
    uint32_t replays;     /* operations posted again */
    uint32_t in_doubt;    /* atomics completed in doubt */
    uint32_t failbacks;   /* returns to the primary */
    uint32_t no_path;     /* operations failed for lack of a path */
    uint32_t fences;      /* abandoned QPs moved to ERR (by the host) */
    uint32_t op_errors;   /* operations failed by their own fault */
    uint32_t confirmed;   /* lost completions the peer confirmed executed */
    uint32_t probes;      /* liveness probes written (PEER_TIMEOUT): only
                             while a kernel or an operation may wait on
                             the peer */
} uct_gda_ft_ep_counters_t;

#endif
