/*
 * The software HCA ("soft" provider): public control API.
 *
 * Devices are declared by configuration (UCX_GDA_FT_SOFT_DEVICES), each port
 * is a UDP endpoint speaking RoCEv2-formatted RC, and one engine thread per
 * process serves every soft device opened in it.
 */
#ifndef GDA_FT_SOFT_H_
#define GDA_FT_SOFT_H_

#include "gda_ft_hca.h"

#include <ucs/config/parser.h>
#include <ucs/type/status.h>


/* Configuration of the software HCA (UCX_GDA_FT_SOFT_*) */
typedef struct gda_ft_soft_config {
    char          *devices;        /* "soft0=127.0.0.1,soft1=127.0.0.2" */
    unsigned       mtu;            /* port MTU, bytes */
    double         spin_time;      /* busy-poll this long after activity */
    double         long_pass;      /* a pass this long is reported */
    double         idle_poll;      /* sleep this long when idle */
    char          *faults;         /* fault schedule */
    unsigned long  seed;           /* seed of the fault injector */
    double         drop;           /* probabilities, all ports */
    double         delay;
    double         delay_time;
    double         reorder;
    double         ack_drop;
    char          *ctl_dir;        /* control socket directory, "" = none */
    double         link_check;     /* interval of the netdev state check */
    int            loopback;       /* datagrams between ports of this
                                      process skip the kernel */
    unsigned long  threads;        /* engine workers; UCS_ULUNITS_AUTO:
                                      by the devices and CPUs */
    unsigned       tx_budget;      /* datagrams a QP sends per pass */
    unsigned       rx_budget;      /* datagrams received from a port per
                                      pass */
    int            pass_cpu_time;  /* sort the long gaps between passes
                                      by where they went (getrusage) */
    int            atomic_host_order; /* 8-byte atomic results in host
                                         byte order, as ConnectX where
                                         mlx5_core selects it */
    int            cuda_staging;   /* GPU memory: staged, queued writes */
    int            cuda_snapshot;  /* GPU memory: a message sent is read
                                      in one copy */
    int            cuda_read_async; /* GPU memory: the engine goes on
                                       while messages are read */
    unsigned       cuda_read_batch; /* GPU memory: messages read per QP
                                       and pass when their WQEs are found
                                       (0: none) */
    int            cuda_copy_batch; /* GPU memory: a stream's pending
                                       copies queued by one call */
    int            cuda_copy_merge; /* GPU memory: a copy continuing a
                                       pending one merged into it */
    int            cuda_atomic_batch; /* GPU memory: atomics run together
                                         at the thread's next flush */
} gda_ft_soft_config_t;

extern ucs_config_field_t gda_ft_soft_config_table[];

extern const gda_ft_hca_provider_t gda_ft_soft_provider;


/* Per-port counters */
typedef struct gda_ft_soft_port_stats {
    uint64_t tx_pkts;
    uint64_t rx_pkts;
    uint64_t tx_bytes;
    uint64_t rx_bytes;
    uint64_t rx_malformed;     /* truncated, bad opcode/pad/version */
    uint64_t rx_bad_icrc;
    uint64_t rx_bad_qpn;       /* no such QP, or QP of another port */
    uint64_t rx_bad_src;       /* source address is not the QP's peer */
    uint64_t rx_bad_state;     /* QP not able to receive */
    uint64_t rx_out_of_seq;    /* PSN beyond the expected one */
    uint64_t rx_duplicate;
    uint64_t rx_unexpected;    /* response nobody asked for */
    uint64_t tx_acks;
    uint64_t tx_naks;
    uint64_t tx_rnr_naks;
    uint64_t retransmits;      /* retransmission timer expirations */
    uint64_t implied_naks;     /* responses found lost by a later one: the
                                  requester went back at once, without
                                  waiting for the timer */
    uint64_t fault_dropped;    /* dropped by fault injection or link down */
    uint64_t fault_delayed;
    uint64_t rx_loopback;      /* of rx_pkts: from a port of this process,
                                  not through the kernel (LOOPBACK) */
} gda_ft_soft_port_stats_t;


/*
 * How steadily the engine thread ran: the time between the starts of two
 * passes while it was busy or spinning (a sleep it chose is not counted).
 * A gap is the silence every QP of the process sees at once, so a gap
 * near a deadline is a false switch waiting to happen. The longest pass
 * (its work alone) tells a gap the engine spent working from one it spent
 * waiting for the lock or the CPU.
 */
#define GDA_FT_SOFT_ENGINE_GAP_BUCKETS 6   /* <16us <64us <256us <1ms <4ms
                                              and longer */
#define GDA_FT_SOFT_LONG_GAP_NS 250000ull
typedef struct gda_ft_soft_engine_stats {
    uint64_t passes;
    uint64_t gaps[GDA_FT_SOFT_ENGINE_GAP_BUCKETS];
    uint64_t max_gap_ns;
    uint64_t max_pass_ns;
    uint64_t max_part_ns[3];   /* the longest receive (datagrams in), queue
                                  (QPs' work) and housekeeping (faults,
                                  control, link check) part */
    uint64_t max_port_rx;      /* the most datagrams a port gave in a pass
                                  (at most RX_BUDGET, rounded up to a
                                  batch) */
    unsigned workers;          /* engine threads; the counts above are
                                  their sums, and the longest of all */
    /* With PASS_CPU_TIME, where the gaps of GDA_FT_SOFT_LONG_GAP_NS or
     * more went: the thread's CPU time in the longest, and how many the
     * thread spent mostly not running, by why: blocked (its voluntary
     * context switches grew), else switched out for another thread (a
     * yield or a preemption: its involuntary ones grew), else neither
     * (its virtual CPU itself waited: the hypervisor's steal) */
    uint64_t max_gap_cpu_ns;
    uint64_t long_gaps;
    uint64_t long_gaps_switched;
    uint64_t long_gaps_blocked;
    uint64_t long_gaps_stolen;
    uint64_t cuda_waits;       /* waits for copies of GPU memory: */
    uint64_t cuda_wait_ns;     /* in all, */
    uint64_t max_cuda_wait_ns; /* and the longest */
    uint64_t cuda_copies;      /* copies queued on the engine's streams: */
    uint64_t cuda_copy_ns;     /* the time in those calls, */
    uint64_t max_cuda_copy_ns; /* and the longest */
    uint64_t cuda_queries;     /* asking whether reads of GPU memory have
                                  landed (cudaEventQuery): */
    uint64_t cuda_query_ns;    /* the time in those calls */
    uint64_t link_checks;      /* of the interfaces carrying the ports:
                                  one at the start, then one per notice
                                  of the kernel (or every LINK_CHECK
                                  where there are none) */
} gda_ft_soft_engine_stats_t;

void gda_ft_soft_engine_stats(gda_ft_soft_engine_stats_t *stats);

/* The counts above in one line, without the workers or a newline (the
 * control socket's "stats", the GPU programs' "engine:" line) */
void gda_ft_soft_engine_stats_format(const gda_ft_soft_engine_stats_t *stats,
                                     char *buf, size_t max);


/* Fault injection settings of one port */
typedef struct gda_ft_soft_fault {
    double drop;        /* probability to drop a packet */
    double delay;       /* probability to delay a packet */
    double delay_time;  /* seconds */
    double reorder;     /* probability to hold a packet behind later ones */
    double ack_drop;    /* probability to drop a response (ACK, NAK, read
                           response, atomic ACK): 1 loses every one */
    double pace_time;   /* seconds each packet holds the port's transmit:
                           a slow link or HCA that every QP of the port
                           queues behind, in order (0: none) */
} gda_ft_soft_fault_t;


/* Finds an opened soft device by name; NULL when none */
gda_ft_hca_dev_t *gda_ft_soft_dev_find(const char *name);

int gda_ft_soft_is_soft_dev(gda_ft_hca_dev_t *dev);

/* Administrative port state: down drops every packet in and out */
ucs_status_t gda_ft_soft_port_set_up(gda_ft_hca_dev_t *dev, uint8_t port_num,
                                     int up);

ucs_status_t gda_ft_soft_port_set_fault(gda_ft_hca_dev_t *dev,
                                        uint8_t port_num,
                                        const gda_ft_soft_fault_t *fault);

ucs_status_t gda_ft_soft_port_stats(gda_ft_hca_dev_t *dev, uint8_t port_num,
                                    gda_ft_soft_port_stats_t *stats);

/* Path of the control socket of this process, "" when disabled */
const char *gda_ft_soft_ctl_path(void);

/*
 * Runs one control command ("port soft0 1 down", "stats", ...) as the
 * control socket would, writing the reply into reply[0..max).
 */
ucs_status_t gda_ft_soft_ctl_exec(const char *cmd, char *reply, size_t max);

/*
 * A command of the control socket added by an upper layer. It runs in the
 * engine thread with the engine lock held: it must only read state that is
 * safe to read from another thread, and never call back into the HCA.
 */
typedef void (*gda_ft_soft_ctl_func_t)(void *arg, int argc, char **argv,
                                       char *reply, size_t max);

ucs_status_t gda_ft_soft_ctl_register(const char *name,
                                      gda_ft_soft_ctl_func_t func, void *arg);

void gda_ft_soft_ctl_unregister(gda_ft_soft_ctl_func_t func, void *arg);

/*
 * Re-reads the configuration (tests change UCX_GDA_FT_SOFT_* between
 * cases); allowed only while no soft device is open.
 */
ucs_status_t gda_ft_soft_reload_config(void);

#endif
