/*
 * Test world of concurrent device channels over software HCAs: side A
 * posts (primary tsoft0, backup tsoft1), side B is the target (primary
 * tsoft2, backup tsoft3), `nchan` channels, and a guardian thread running
 * the host half of every channel. Memory comes from the caller's
 * allocator: plain host memory for the CPU tests, host memory mapped into
 * the GPU for the kernel tests.
 */
#ifndef GDA_FT_CHAN_HARNESS_H_
#define GDA_FT_CHAN_HARNESS_H_

#include "gda_ft_chan_host.h"
#include "gda_ft_device_api.h"

#include <pthread.h>

#define CHAN_WORLD_MAX_CHANNELS 64
#define CHAN_WORLD_MTU          1024   /* bytes of payload per packet */

/* Elements of the world's memory list */
enum {
    CHAN_ELEM_DATA    = 0, /* A's src -> B's dst */
    CHAN_ELEM_SIGNAL  = 1, /* B's signal words (local side unused) */
    CHAN_ELEM_COUNTER = 2, /* A's fetch results <- B's counters */
    CHAN_ELEM_COUNT
};

/*
 * Where the world's memory lives. CPU tests: host memory for all three.
 * Kernel tests: rings in host memory mapped into the GPU (the software HCA
 * reads them), the posters' shared words in GPU memory, the data where
 * the test wants it (the software HCA copies GPU memory through the CUDA
 * runtime, a few microseconds a packet).
 */
typedef struct chan_world_mem {
    gda_ft_chan_host_mem_t rings;   /* rings, CQEs, slots, mailboxes */
    gda_ft_chan_host_mem_t poster;  /* channels, health, memory list */
    gda_ft_chan_host_mem_t data;    /* src and dst */
    gda_ft_chan_host_mem_t words;   /* signals, counters, fetch results */
    /* copies between host memory and any of the above */
    void                 (*copy)(void *dst, const void *src, size_t len);
    /* copies poster memory into host memory beside running posters and
     * with the soft HCA's engine lock held (a control command), or NULL
     * when the host reads poster memory directly */
    void                 (*read)(void *dst, const void *src, size_t len);
} chan_world_mem_t;

typedef struct chan_world_params {
    unsigned               nchan;
    size_t                 data_len;     /* bytes of src and dst */
    size_t                 signal_len;   /* bytes of signal words */
    size_t                 counter_len;  /* bytes of results / counters */
    unsigned               wqebb_cnt;
    uint64_t               deadline_ns;
    uint64_t               resolve_ns;
    uint64_t               recovery_ns;
    uint64_t               grace_ns;
    uint32_t               max_chunk;
    uint32_t               first_psn;    /* of every QP (near 2^24: wrap) */
    uint8_t                timeout;      /* QP retransmission timer */
    uint8_t                retry_cnt;
    uint32_t               db_defer;     /* the channels' (0: each
                                            publication rings) */
    chan_world_mem_t       mem;
    /* NULL: the world opens its four devices. Else the world posts the
     * other way on that world's devices (its A side on their B side's
     * HCAs and the other way round): traffic both ways on every port */
    const struct chan_world *reverse_of;
} chan_world_params_t;

typedef struct chan_world {
    chan_world_params_t    params;
    gda_ft_hca_dev_t      *dev[4];
    gda_ft_hca_pd_t       *pd[4];
    gda_ft_chan_health_t  *health;
    gda_ft_chan_host_t     a[CHAN_WORLD_MAX_CHANNELS];
    gda_ft_chan_host_t     b[CHAN_WORLD_MAX_CHANNELS];
    gda_ft_chan_t         *chans;        /* posters' view of a[i].chan, in
                                            poster memory */
    uint8_t               *src, *dst;
    uint64_t              *signals;      /* on B */
    uint64_t              *results;      /* on A */
    uint64_t              *counters;     /* on B */
    gda_ft_dev_mem_elem_t *elems;
    gda_ft_dev_mem_list_t  ml;
    gda_ft_dev_endpoint_t  ep;
    pthread_t              guard_thread;
    int                    guard_stop;
    int                    guard_running;
    /* the peer's end the guardian thread asks; NULL: chan_peer_ops */
    const gda_ft_chan_peer_ops_t *guard_peer;
    /* where the posters' reservations start on each channel: what a
     * test posted before them (0: nothing) */
    uint64_t               resv_base[CHAN_WORLD_MAX_CHANNELS];
} chan_world_t;

/* Defaults: 2 channels, 1 MiB data, 4096-WQEBB rings, 100 ms deadline */
void chan_world_default_params(chan_world_params_t *params);

/* GDA_FT_TEST_TIMEOUT_SCALE: sanitizer builds run everything slower */
uint64_t chan_world_time_scale(void);

/* An HCA ack timeout (4.096 us x 2^timeout) as many times longer as the
 * test's times are scaled (the next power of two) */
uint8_t chan_world_scaled_timeout(uint8_t timeout);

/* Multiplies every time limit (the defaults are scaled already) */
void chan_world_scale(chan_world_params_t *params, uint64_t scale);

/* The peer's end for the guardian: B's QPs, answered at once */
extern const gda_ft_chan_peer_ops_t chan_peer_ops;

/* Host memory allocator (aligned, zeroed) */
extern const gda_ft_chan_host_mem_t chan_host_mem;

/* Host memory for everything */
extern const chan_world_mem_t chan_world_host_mem;

/* Opens the devices (or takes those of params->reverse_of, which is
 * finished after this world), builds and connects the channels; fails the
 * test on error. The posters' channel array is w->chans (poster memory). */
void chan_world_init(chan_world_t *w, const chan_world_params_t *params);
void chan_world_fini(chan_world_t *w);

/* The guardian thread: gda_ft_chan_host_guard() on every channel */
void chan_world_guard_start(chan_world_t *w);
void chan_world_guard_stop(chan_world_t *w);

/* Takes B's (target's) port of `path` down or up */
/* The ring slots the posters' channels have completed, all together: a
 * test fails a port once the posters are under way, rather than after a
 * fixed time that a fast machine's posters outrun */
uint64_t chan_world_completed(chan_world_t *w);

void chan_world_port(chan_world_t *w, unsigned path, int up);

#ifdef __CUDACC__
#  define CHAN_HOST_DEVICE __host__ __device__
#else
#  define CHAN_HOST_DEVICE
#endif

/* Byte j of what writer `who` puts in its iteration `iter`: new in every
 * iteration, so that a put that never landed, or an older one that landed
 * late, shows at the target (the CPU and the kernel pressure tests) */
static inline CHAN_HOST_DEVICE uint8_t chan_pattern_byte(unsigned who,
                                                         unsigned iter,
                                                         unsigned j)
{
    uint32_t x = (who * 0x9e3779b1u) ^ (iter * 0xc2b2ae35u) ^
                 (j * 0x27d4eb2fu);

    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return (uint8_t)(x ^ (x >> 8));
}

/* qsort order of uint64_t values */
int chan_cmp_u64(const void *a, const void *b);

/* Sum of a counter over the posters' channels */
#define CHAN_WORLD_SUM(_w, _field) \
    ({ \
        uint32_t _sum = 0; \
        unsigned _i; \
        for (_i = 0; _i < (_w)->params.nchan; ++_i) { \
            _sum += __atomic_load_n(&(_w)->chans[_i].counters._field, \
                                    __ATOMIC_ACQUIRE); \
        } \
        _sum; \
    })

#endif
