/*
 * What the out-of-band channel's listener counts of the connections it
 * accepted; read by the tests through the plugin's exported symbol.
 */
#ifndef UCT_GDA_FT_OOB_STATS_H_
#define UCT_GDA_FT_OOB_STATS_H_

#include <uct/api/uct.h>
#include <stdint.h>


typedef struct uct_gda_ft_oob_stats {
    uint64_t accepted;   /* connections accepted */
    uint64_t refused;    /* closed on a malformed message (a stranger's
                            bytes, or a peer of another wire version) */
    uint64_t truncated;  /* ended in the middle of a message: the part
                            received was dropped */
    uint64_t open;       /* held now; an ended one is freed by progress */
} uct_gda_ft_oob_stats_t;

/* The listener's counters of an interface of the channel */
void uct_gda_ft_oob_iface_stats(uct_iface_h tl_iface,
                                uct_gda_ft_oob_stats_t *stats);

#endif
