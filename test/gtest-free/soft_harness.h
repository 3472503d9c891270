/*
 * Test harness for the software HCA: endpoints made of a device, PD, CQs and
 * an RC QP whose rings live in host memory, driven through the device/
 * datapath compiled for the host (the code GPU kernels run).
 */
#ifndef GDA_FT_SOFT_HARNESS_H_
#define GDA_FT_SOFT_HARNESS_H_

#include "gda_ft_hca.h"
#include "gda_ft_soft.h"
#include "gda_ft_wqe.h"
#include "gda_ft_cq.h"

#define SOFT_TEST_SQ_SIZE  256
#define SOFT_TEST_RQ_SIZE  64
#define SOFT_TEST_CQ_SIZE  1024
#define SOFT_TEST_RQ_SGE   4

typedef struct soft_ep {
    gda_ft_hca_dev_t *dev;
    gda_ft_hca_pd_t  *pd;
    gda_ft_hca_cq_t  *scq, *rcq;
    gda_ft_hca_qp_t  *qp;
    void             *sq_buf, *rq_buf, *scq_buf, *rcq_buf;
    uint32_t         *dbrec;
    gda_ft_dev_sq_t   sq;
    gda_ft_dev_rq_t   rq;
    gda_ft_dev_cq_t   dscq, drcq;
    uint8_t           port;
} soft_ep_t;

typedef struct soft_conn_params {
    uint8_t  timeout;        /* 4.096us * 2^timeout */
    uint8_t  retry_cnt;
    uint8_t  rnr_retry;
    uint8_t  min_rnr_timer;
    unsigned mtu;
    uint32_t psn;            /* first PSN of both directions; 0: 0x123 */
} soft_conn_params_t;

/* Default parameters: fast retransmission for tests (timeout 12 = 16 ms) */
extern const soft_conn_params_t soft_default_params;

/*
 * Declares test devices "tsoft0".."tsoft<n-1>" on 127.0.0.<i+1>, one UDP port
 * number per test process, no control socket; extra is appended to the
 * environment (e.g. "UCX_GDA_FT_SOFT_MTU=1024") when not NULL.
 */
void soft_test_env(unsigned ndev, const char *extra);

/* Same, with one port per device at the given addresses */
void soft_test_env_addrs(const char *spec);

gda_ft_hca_dev_t *soft_open(const char *name);
void soft_ep_create(soft_ep_t *ep, gda_ft_hca_dev_t *dev, uint8_t port);
void soft_ep_destroy(soft_ep_t *ep);
void soft_ep_connect(soft_ep_t *ep, uint32_t dest_qpn, const uint8_t *gid,
                     const soft_conn_params_t *params);
void soft_ep_pair_connect(soft_ep_t *a, soft_ep_t *b,
                          const soft_conn_params_t *params);
void soft_ep_gid(soft_ep_t *ep, uint8_t *gid);

/* GID of a device's port */
void soft_test_gid(gda_ft_hca_dev_t *dev, uint8_t port, uint8_t *gid);

/* Registers buf on the endpoint's PD (closing the device releases it) */
gda_ft_hca_mr_t *soft_mr(soft_ep_t *ep, void *buf, size_t len,
                         unsigned access);

/* Rings the doorbell of what was posted */
void soft_ep_ring(soft_ep_t *ep);

/* Waits for one CQE on the send (recv) CQ; fails the test after timeout_ms */
void soft_ep_wait_send(soft_ep_t *ep, gda_ft_dev_cqe_info_t *info,
                       unsigned timeout_ms);
void soft_ep_wait_recv(soft_ep_t *ep, gda_ft_dev_cqe_info_t *info,
                       unsigned timeout_ms);

/* Nonblocking: GDA_FT_DEV_OK with info, or GDA_FT_DEV_INPROGRESS */
gda_ft_dev_status_t soft_ep_poll_send(soft_ep_t *ep,
                                      gda_ft_dev_cqe_info_t *info);

/* Posts a receive WQE of one buffer */
void soft_ep_post_recv(soft_ep_t *ep, void *buf, uint32_t len, uint32_t lkey);

/* Two endpoints on tsoft0 and tsoft1, connected (params NULL: defaults) */
typedef struct soft_pair {
    gda_ft_hca_dev_t *dev0, *dev1;
    soft_ep_t         a, b;
} soft_pair_t;

void soft_pair_init(soft_pair_t *p, const char *extra_env,
                    const soft_conn_params_t *params);
void soft_pair_fini(soft_pair_t *p);

double soft_now_sec(void);

/* Fills buf with a pattern derived from seed */
void soft_fill(void *buf, size_t len, unsigned seed);

/* The soft device behind a device: itself, or the one that backs an mlx5
 * device of the DEVX emulator (UCX_GDA_FT_MLX5_SYS=emu) */
gda_ft_hca_dev_t *soft_dev_of(gda_ft_hca_dev_t *dev);

/* Port state and faults of the soft device behind a device */
ucs_status_t soft_port_set_up(gda_ft_hca_dev_t *dev, uint8_t port, int up);
ucs_status_t soft_port_set_fault(gda_ft_hca_dev_t *dev, uint8_t port,
                                 const gda_ft_soft_fault_t *fault);

/* Reads a counter of a port */
gda_ft_soft_port_stats_t soft_port_stats(gda_ft_hca_dev_t *dev, uint8_t port);

/* Waits for the next send CQE of ep: an error with that syndrome, for WQE
 * idx */
void soft_expect_error(soft_ep_t *ep, uint16_t idx, uint8_t syndrome);

/* Posts n more writes on p's requester and expects each to be flushed;
 * the QP ends in ERR */
void soft_expect_flush_of_later(soft_pair_t *p, void *src, uint32_t lkey,
                                void *dst, uint32_t rkey, unsigned n);

/* The n-th completion of a transfer under injected faults is a success;
 * else both ports' counters tell what the faults did */
void soft_expect_ok_under_faults(soft_pair_t *p, unsigned n);

/*
 * Loads the stand-in for the CUDA runtime built with the tests
 * (test/fake_cudart), whose copies each take copy_us: memory registered as
 * CUDA memory then goes through the soft HCA's GPU-memory path. Returns
 * its count of copies started.
 */
typedef uint64_t (*soft_fake_cudart_count_t)(void);
soft_fake_cudart_count_t soft_fake_cudart_load(unsigned copy_us);
/* The loaded stand-in's count of streams created */
soft_fake_cudart_count_t soft_fake_cudart_streams(void);
/* One of the stand-in runtime's counters, by its function's name (it must
 * be loaded) */
soft_fake_cudart_count_t soft_fake_cudart_counter(const char *name);

#endif
