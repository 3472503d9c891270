/*
 * gda_ft HCA provider interface.
 *
 * The smallest interface that a reliable-connected GPU/CPU datapath needs:
 * devices and ports, PD, MR, CQ and RC QP, with the send/receive rings, the
 * doorbell record and the CQ buffer in memory the caller provides. Two
 * providers implement it: "soft" (the software HCA, RoCEv2 over UDP) and
 * "mlx5" (DEVX, real ConnectX). The datapath in device/ writes mlx5 WQEs
 * into the rings and polls mlx5 CQEs; it never knows which provider is
 * behind them.
 */
#ifndef GDA_FT_HCA_H_
#define GDA_FT_HCA_H_

#include <ucs/type/status.h>
#include <stddef.h>
#include <stdint.h>

#define GDA_FT_HCA_NAME_MAX       32
#define GDA_FT_HCA_MAX_PORTS      2
#define GDA_FT_HCA_GID_LEN        16

typedef struct gda_ft_hca_provider gda_ft_hca_provider_t;
typedef struct gda_ft_hca_dev      gda_ft_hca_dev_t;
typedef struct gda_ft_hca_pd       gda_ft_hca_pd_t;
typedef struct gda_ft_hca_mr       gda_ft_hca_mr_t;
typedef struct gda_ft_hca_cq       gda_ft_hca_cq_t;
typedef struct gda_ft_hca_qp       gda_ft_hca_qp_t;


typedef enum {
    GDA_FT_HCA_PORT_DOWN   = 0,
    GDA_FT_HCA_PORT_ACTIVE = 1
} gda_ft_hca_port_state_t;


/* Kind of memory: MR targets and ring placement */
typedef enum {
    GDA_FT_HCA_MEM_HOST        = 0, /* pageable host memory */
    GDA_FT_HCA_MEM_HOST_MAPPED = 1, /* pinned host memory mapped into a GPU */
    GDA_FT_HCA_MEM_CUDA        = 2, /* GPU device memory */
    GDA_FT_HCA_MEM_LAST
} gda_ft_hca_mem_type_t;

#define GDA_FT_HCA_MEM_BIT(_type) (1u << (_type))


/* MR and QP access rights */
enum {
    GDA_FT_HCA_ACCESS_LOCAL_WRITE   = 1u << 0,
    GDA_FT_HCA_ACCESS_REMOTE_WRITE  = 1u << 1,
    GDA_FT_HCA_ACCESS_REMOTE_READ   = 1u << 2,
    GDA_FT_HCA_ACCESS_REMOTE_ATOMIC = 1u << 3,
    GDA_FT_HCA_ACCESS_ALL           = 0xf
};


typedef enum {
    GDA_FT_HCA_QP_RESET = 0,
    GDA_FT_HCA_QP_INIT,
    GDA_FT_HCA_QP_RTR,
    GDA_FT_HCA_QP_RTS,
    GDA_FT_HCA_QP_ERR,
    GDA_FT_HCA_QP_STATE_LAST
} gda_ft_hca_qp_state_t;


typedef enum {
    GDA_FT_HCA_EVENT_PORT_ACTIVE = 1,
    GDA_FT_HCA_EVENT_PORT_ERR    = 2,
    GDA_FT_HCA_EVENT_QP_FATAL    = 3  /* a QP entered ERR by itself */
} gda_ft_hca_event_type_t;


typedef struct gda_ft_hca_event {
    gda_ft_hca_event_type_t type;
    uint8_t                 port_num;  /* 1-based, for port events */
    uint32_t                qpn;       /* for QP events */
} gda_ft_hca_event_t;


/* One device as enumerated, before it is opened */
typedef struct gda_ft_hca_dev_info {
    char                         name[GDA_FT_HCA_NAME_MAX];
    const gda_ft_hca_provider_t *provider;
    unsigned                     num_ports;
    int                          numa_node;   /* -1 when unknown */
    char                         pci_bus_id[16]; /* "0000:17:00.0" or "" */
} gda_ft_hca_dev_info_t;


/* What kind of HCA a provider's device is, for what its user decides by it
 * (gda_ft_hca_dev_attr_t.flags) */
enum {
    /* A CPU thread plays the HCA: it notices doorbells and answers later
     * than hardware (default deadlines are longer), and it shares the
     * cores with the program (progress yields to it) */
    GDA_FT_HCA_DEV_FLAG_CPU_ENGINE = (1u << 0),
    /* Its ports reach peers whose GIDs are IPv4-mapped only */
    GDA_FT_HCA_DEV_FLAG_IPV4_ONLY  = (1u << 1),
    /* 8-byte fetching atomics (fetch-add, compare-swap, masked ones)
     * write the old value in host byte order; else big-endian, as do
     * 4-byte ones always (ConnectX's atomic_req_8B_endianness_mode) */
    GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER = (1u << 2),
    /* Completion events: a CQ created with event_armed writes its
     * event_fd once a CQE is in place while that word is set
     * (gda_ft_hca_cq_attr_t) */
    GDA_FT_HCA_DEV_FLAG_CQ_EVENTS = (1u << 3)
};

typedef struct gda_ft_hca_dev_attr {
    gda_ft_hca_dev_info_t info;
    unsigned              flags;          /* GDA_FT_HCA_DEV_FLAG_* */
    unsigned              ring_mem_caps;  /* GDA_FT_HCA_MEM_BIT() where SQ,
                                             CQ and DBR may live */
    unsigned              mr_mem_caps;    /* GDA_FT_HCA_MEM_BIT() of MRs */
    unsigned              max_sq_wqebb;   /* max SQ size in 64-byte blocks */
    unsigned              max_rq_wqe;
    unsigned              max_inline;     /* bytes of inline data per WQE */
    size_t                max_msg_size;
    unsigned              max_rd_atomic;  /* outstanding reads/atomics */
    int                   masked_atomics; /* extended/masked 4/8 byte */
} gda_ft_hca_dev_attr_t;


typedef struct gda_ft_hca_port_attr {
    gda_ft_hca_port_state_t state;
    uint8_t                 gid[GDA_FT_HCA_GID_LEN]; /* RoCEv2: IPv4-mapped */
    unsigned                active_mtu;               /* bytes */
    uint16_t                lid;                      /* 0 on RoCE */
} gda_ft_hca_port_attr_t;


typedef struct gda_ft_hca_mr_attr {
    void                 *addr;
    size_t                length;
    unsigned              access;     /* GDA_FT_HCA_ACCESS_* */
    gda_ft_hca_mem_type_t mem_type;
} gda_ft_hca_mr_attr_t;


enum {
    /* All completions overwrite one CQE; the poller reads wqe_counter */
    GDA_FT_HCA_CQ_COLLAPSED = 1u << 0
};


typedef struct gda_ft_hca_cq_attr {
    void                 *buf;       /* cqe_cnt * 64 bytes, initialized by
                                        gda_ft_cq_init_buf() */
    unsigned              cqe_cnt;   /* power of 2; 1 when collapsed */
    unsigned              flags;     /* GDA_FT_HCA_CQ_* */
    gda_ft_hca_mem_type_t mem_type;  /* where buf lives */
    /* Completion events (devices with GDA_FT_HCA_DEV_FLAG_CQ_EVENTS), one
     * shot: after a CQE is in place the HCA clears a nonzero *event_armed
     * and then writes 8 bytes to event_fd (an eventfd). The consumer sets
     * the word, then looks at the CQ once more before it sleeps (both
     * sides fence between their write and their read). NULL: none. Many
     * CQs may share one word and fd. */
    int32_t              *event_armed;
    int                   event_fd;
} gda_ft_hca_cq_attr_t;


typedef struct gda_ft_hca_qp_init_attr {
    gda_ft_hca_cq_t      *send_cq;
    gda_ft_hca_cq_t      *recv_cq;     /* NULL: no receive queue */
    void                 *sq_buf;      /* sq_wqebb_cnt * 64 bytes */
    unsigned              sq_wqebb_cnt;/* power of 2 */
    void                 *rq_buf;      /* rq_wqe_cnt * rq_wqe_size bytes */
    unsigned              rq_wqe_cnt;  /* power of 2, 0 without RQ */
    unsigned              rq_wqe_size; /* power of 2, >= 16: data segments */
    volatile uint32_t    *dbrec;       /* [0]: RQ counter, [1]: SQ counter,
                                          big-endian, as on mlx5 */
    gda_ft_hca_mem_type_t ring_mem;    /* where sq/rq/dbrec live */
    uint8_t               port_num;    /* 1-based */
    uint64_t              response_ns; /* the owner judges the path by
                                          its progress over this long (a
                                          failover deadline); 0: no bound.
                                          An HCA emulated by CPU threads
                                          keeps them awake for such QPs */
} gda_ft_hca_qp_init_attr_t;


/* Parameters of the INIT, RTR and RTS transitions */
typedef struct gda_ft_hca_qp_attr {
    unsigned access;          /* INIT: remote access allowed on this QP */
    uint32_t dest_qpn;        /* RTR */
    uint8_t  dest_gid[GDA_FT_HCA_GID_LEN]; /* RTR */
    uint32_t rq_psn;          /* RTR: first expected PSN */
    unsigned path_mtu;        /* RTR: bytes (256..4096) */
    uint8_t  traffic_class;   /* RTR: explicit, DEVX QPs do not inherit it */
    uint8_t  hop_limit;       /* RTR */
    uint8_t  min_rnr_timer;   /* RTR: IB encoding (0..31) */
    uint8_t  max_dest_rd_atomic; /* RTR */
    uint32_t sq_psn;          /* RTS: first PSN sent */
    uint8_t  timeout;         /* RTS: retransmit after 4.096us * 2^timeout */
    uint8_t  retry_cnt;       /* RTS: 0..7 */
    uint8_t  rnr_retry;       /* RTS: 0..7, 7 = infinite */
    uint8_t  max_rd_atomic;   /* RTS */
} gda_ft_hca_qp_attr_t;


/* What a QP reports of itself (verbs' ibv_query_qp subset) */
typedef struct gda_ft_hca_qp_query_attr {
    gda_ft_hca_qp_state_t state;
    uint32_t              sq_psn;   /* next PSN the send queue will use */
    uint32_t              rq_psn;   /* next PSN the receive side expects */
    unsigned              path_mtu; /* bytes per packet, 0 before RTR */
} gda_ft_hca_qp_query_attr_t;


/* Public part of the objects; providers embed them in larger structs */
struct gda_ft_hca_dev {
    const gda_ft_hca_provider_t *provider;
    gda_ft_hca_dev_attr_t        attr;
};

struct gda_ft_hca_pd {
    gda_ft_hca_dev_t *dev;
    uint32_t          pdn;
};

struct gda_ft_hca_mr {
    gda_ft_hca_pd_t      *pd;
    void                 *addr;
    size_t                length;
    uint32_t              lkey;
    uint32_t              rkey;
    unsigned              access;
    gda_ft_hca_mem_type_t mem_type;
};

struct gda_ft_hca_cq {
    gda_ft_hca_dev_t    *dev;
    uint32_t             cqn;
    gda_ft_hca_cq_attr_t attr;
};

struct gda_ft_hca_qp {
    gda_ft_hca_dev_t          *dev;
    gda_ft_hca_pd_t           *pd;
    uint32_t                   qpn;
    gda_ft_hca_qp_state_t      state;
    gda_ft_hca_qp_init_attr_t  init;
    /* Doorbell register: the poster writes the first 8 bytes of the last
     * WQE's ctrl segment here after updating dbrec[1] (BlueFlame-less
     * mlx5 doorbell). */
    volatile uint64_t         *uar;
    /* The same register as a GPU reaches it, for a QP whose rings are
     * mapped into the GPU or live there (ring_mem not HOST): the provider
     * maps it (mlx5: the UAR page registered with the CUDA driver as I/O
     * memory). NULL where the provider has no register: the software HCA
     * reads the doorbell record alone. */
    volatile uint64_t         *dev_uar;
    /* CPU posters may write 8 bytes to this eventfd after ringing, to wake a
     * software HCA that sleeps; -1 when the provider needs no wake-up. */
    int                        wake_fd;
    /* nonzero while the engine behind wake_fd sleeps or is about to:
     * doorbells write wake_fd only then (gda_ft_sq_wake); NULL: always */
    const int32_t             *wake_armed;
};


/* Provider operations */
struct gda_ft_hca_provider {
    const char *name;
    ucs_status_t (*query_devices)(gda_ft_hca_dev_info_t **infos_p,
                                  unsigned *count_p);
    ucs_status_t (*dev_open)(const gda_ft_hca_dev_info_t *info,
                             gda_ft_hca_dev_t **dev_p);
    void         (*dev_close)(gda_ft_hca_dev_t *dev);
    ucs_status_t (*port_query)(gda_ft_hca_dev_t *dev, uint8_t port_num,
                               gda_ft_hca_port_attr_t *attr);
    ucs_status_t (*get_event)(gda_ft_hca_dev_t *dev,
                              gda_ft_hca_event_t *event);
    int          (*event_fd)(gda_ft_hca_dev_t *dev);
    ucs_status_t (*pd_alloc)(gda_ft_hca_dev_t *dev, gda_ft_hca_pd_t **pd_p);
    void         (*pd_free)(gda_ft_hca_pd_t *pd);
    ucs_status_t (*mr_reg)(gda_ft_hca_pd_t *pd,
                           const gda_ft_hca_mr_attr_t *attr,
                           gda_ft_hca_mr_t **mr_p);
    void         (*mr_dereg)(gda_ft_hca_mr_t *mr);
    ucs_status_t (*cq_create)(gda_ft_hca_dev_t *dev,
                              const gda_ft_hca_cq_attr_t *attr,
                              gda_ft_hca_cq_t **cq_p);
    void         (*cq_destroy)(gda_ft_hca_cq_t *cq);
    ucs_status_t (*qp_create)(gda_ft_hca_pd_t *pd,
                              const gda_ft_hca_qp_init_attr_t *attr,
                              gda_ft_hca_qp_t **qp_p);
    ucs_status_t (*qp_modify)(gda_ft_hca_qp_t *qp,
                              gda_ft_hca_qp_state_t state,
                              const gda_ft_hca_qp_attr_t *attr);
    ucs_status_t (*qp_query)(gda_ft_hca_qp_t *qp,
                             gda_ft_hca_qp_query_attr_t *attr);
    void         (*qp_destroy)(gda_ft_hca_qp_t *qp);
};


/*
 * Registry and enumeration. Providers register themselves from a
 * constructor; enumeration concatenates what each one finds.
 */
void gda_ft_hca_provider_register(const gda_ft_hca_provider_t *provider);

/* Leaves a provider's devices out of enumeration and of
 * gda_ft_hca_open(): they serve another provider's devices (the mlx5
 * emulator's are backed by soft devices) and are opened by it directly */
void gda_ft_hca_provider_hide(const gda_ft_hca_provider_t *provider);

ucs_status_t gda_ft_hca_query_devices(gda_ft_hca_dev_info_t **infos_p,
                                      unsigned *count_p);

void gda_ft_hca_free_device_list(gda_ft_hca_dev_info_t *infos);

/* Opens a device by name among all providers */
ucs_status_t gda_ft_hca_open(const char *name, gda_ft_hca_dev_t **dev_p);


/* Thin dispatchers; each checks its arguments before calling the provider */
void gda_ft_hca_close(gda_ft_hca_dev_t *dev);
ucs_status_t gda_ft_hca_port_query(gda_ft_hca_dev_t *dev, uint8_t port_num,
                                   gda_ft_hca_port_attr_t *attr);
ucs_status_t gda_ft_hca_get_event(gda_ft_hca_dev_t *dev,
                                  gda_ft_hca_event_t *event);
int gda_ft_hca_event_fd(gda_ft_hca_dev_t *dev);
ucs_status_t gda_ft_hca_pd_alloc(gda_ft_hca_dev_t *dev, gda_ft_hca_pd_t **pd_p);
void gda_ft_hca_pd_free(gda_ft_hca_pd_t *pd);
ucs_status_t gda_ft_hca_mr_reg(gda_ft_hca_pd_t *pd,
                               const gda_ft_hca_mr_attr_t *attr,
                               gda_ft_hca_mr_t **mr_p);
void gda_ft_hca_mr_dereg(gda_ft_hca_mr_t *mr);
ucs_status_t gda_ft_hca_cq_create(gda_ft_hca_dev_t *dev,
                                  const gda_ft_hca_cq_attr_t *attr,
                                  gda_ft_hca_cq_t **cq_p);
void gda_ft_hca_cq_destroy(gda_ft_hca_cq_t *cq);
ucs_status_t gda_ft_hca_qp_create(gda_ft_hca_pd_t *pd,
                                  const gda_ft_hca_qp_init_attr_t *attr,
                                  gda_ft_hca_qp_t **qp_p);
ucs_status_t gda_ft_hca_qp_modify(gda_ft_hca_qp_t *qp,
                                  gda_ft_hca_qp_state_t state,
                                  const gda_ft_hca_qp_attr_t *attr);
ucs_status_t gda_ft_hca_qp_query(gda_ft_hca_qp_t *qp,
                                 gda_ft_hca_qp_query_attr_t *attr);

/* How many QP queries this process made, for tests and tools: on mlx5
 * each is a firmware command, which a datapath must not make at a rate */
uint64_t gda_ft_hca_qp_query_count(void);

void gda_ft_hca_qp_destroy(gda_ft_hca_qp_t *qp);

/* RESET/INIT -> INIT -> RTR -> RTS with one set of parameters */
ucs_status_t gda_ft_hca_qp_connect(gda_ft_hca_qp_t *qp,
                                   const gda_ft_hca_qp_attr_t *attr);

const char *gda_ft_hca_qp_state_str(gda_ft_hca_qp_state_t state);
const char *gda_ft_hca_syndrome_str(uint8_t syndrome);

/* IPv4 <-> IPv4-mapped GID (::ffff:a.b.c.d), network byte order address */
void gda_ft_hca_gid_from_ipv4(uint32_t addr_be, uint8_t *gid);
int gda_ft_hca_gid_to_ipv4(const uint8_t *gid, uint32_t *addr_be);

#endif
