/*
 * gda_ft for UCP programs: device endpoints, memory lists and signal memory
 * built from UCP objects, for kernels (or CPU threads) that post through
 * the device API (gda_ft_device_api.h).
 *
 * A UCP program selects gda_ft (UCX_TLS=gda_ft,...) with device channels
 * (UCX_GDA_FT_DEVICE_CHANNELS=1..64), connects its endpoints as usual, and
 * then:
 *
 *   gda_ft_ucp_device_ep_create(ep, GDA_FT_UCP_PLACE_CUDA, &dep);
 *   gda_ft_ucp_mem_list_create(ep, elems, n, GDA_FT_UCP_PLACE_CUDA, &ml);
 *   kernel<<<...>>>(gda_ft_ucp_device_ep(dep), gda_ft_ucp_mem_list(ml));
 *   ... ucp_worker_progress() while the kernel runs: the endpoint's
 *       guardian settles path switches and fails back ...
 *
 * Placement: GDA_FT_UCP_PLACE_HOST puts everything in host memory for CPU
 * threads; GDA_FT_UCP_PLACE_CUDA puts the endpoint, its channels and the
 * memory list in the current CUDA device's memory, and maps the channels'
 * rings and mailboxes into it. The CUDA runtime is loaded on first use, so
 * the library runs where no GPU exists.
 *
 * Errors are ucs_status_t, with a message logged once: an endpoint without
 * a gda_ft lane or device channels, memory not registered on gda_ft, a
 * remote key without a gda_ft part, host memory where the GPU needs to
 * reach it, and an element outside its registration. Nothing is kept on
 * failure.
 */
#ifndef GDA_FT_UCP_H_
#define GDA_FT_UCP_H_

#include "gda_ft_device_api.h"
#include <ucp/api/ucp.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GDA_FT_UCP_PLACE_HOST = 0, /* CPU threads post */
    GDA_FT_UCP_PLACE_CUDA = 1  /* kernels of the current CUDA device post */
} gda_ft_ucp_place_t;

typedef struct gda_ft_ucp_device_ep *gda_ft_ucp_device_ep_h;
typedef struct gda_ft_ucp_mem_list  *gda_ft_ucp_mem_list_h;

/* One element of a memory list: local registered memory and the peer's.
 * Zero it before filling it in: a field left 0 takes its default.
 * For kernels (PLACE_CUDA) the local part is GPU memory, or host memory
 * mapped into the GPU at the address the host sees (cudaHostAlloc with
 * cudaHostAllocMapped, or cudaHostRegister with cudaHostRegisterMapped
 * where the device can use the host pointer); other host memory is
 * refused, since a kernel reads fetched values there. */
typedef struct gda_ft_ucp_mem_elem {
    ucp_mem_h   memh;        /* covering local_addr .. + length; NULL: the
                                element has no local part (signals) */
    void       *local_addr;
    size_t      length;      /* bytes valid at the local end, and at the
                                peer's unless remote_length says */
    ucp_rkey_h  rkey;        /* the peer's, unpacked on this endpoint */
    uint64_t    remote_addr;
    size_t      remote_length; /* bytes valid at the peer's end; 0: length
                                  (one remote counter word beside a large
                                  local area of results needs no remote
                                  registration as large) */
} gda_ft_ucp_mem_elem_t;

/* Signal or counter words a kernel waits on, registered with UCP */
typedef struct gda_ft_ucp_signal_mem {
    void              *address;
    size_t             length;
    ucp_mem_h          memh;
    gda_ft_ucp_place_t place;
} gda_ft_ucp_signal_mem_t;


/*
 * The device endpoint of a connected (wired-up) endpoint: its gda_ft lane's
 * device channels, held until the device endpoint is destroyed (a UCP
 * endpoint that fails may be destroyed while kernels still post; its
 * channels stay, without a guardian).
 *
 * The channels are usable once both ends connected them: after wireup the
 * endpoints exchange their QP numbers, which takes both workers' progress.
 * Until then this progresses the worker for up to a second, and then
 * returns UCS_ERR_NOT_CONNECTED without a message: progress and call it
 * again (a peer that is gone ends it with the endpoint's error).
 */
ucs_status_t gda_ft_ucp_device_ep_create(ucp_ep_h ep, gda_ft_ucp_place_t place,
                                         gda_ft_ucp_device_ep_h *dev_ep_p);

/* What posters take: in GPU memory for PLACE_CUDA */
const gda_ft_dev_endpoint_t *
gda_ft_ucp_device_ep(gda_ft_ucp_device_ep_h dev_ep);

/* Where a device endpoint's paths run, and how many channels it has (also
 * where the endpoint itself lives in GPU memory) */
#define GDA_FT_UCP_DEVICE_NAME_MAX 32

typedef struct gda_ft_ucp_device_ep_attr {
    unsigned num_channels;   /* channels 0 .. num_channels - 1 */
    struct {
        char     device[GDA_FT_UCP_DEVICE_NAME_MAX]; /* the local HCA */
        unsigned port;                               /* 1-based */
    } path[2];               /* [0] the primary path, [1] the backup */
} gda_ft_ucp_device_ep_attr_t;

ucs_status_t gda_ft_ucp_device_ep_attr(gda_ft_ucp_device_ep_h dev_ep,
                                       gda_ft_ucp_device_ep_attr_t *attr);

/* Counters and state of one channel; safe while posters run */
ucs_status_t gda_ft_ucp_device_ep_query(gda_ft_ucp_device_ep_h dev_ep,
                                        unsigned channel,
                                        gda_ft_chan_query_t *query);

/*
 * The peer's state as the endpoint's host half last published it
 * (GDA_FT_PEER_REACHABLE, GDA_FT_PEER_GONE, GDA_FT_PEER_BACK; kernels
 * read it with gda_ft_dev_peer_state()), and when it gave the peer up, on
 * gda_ft_dev_now_ns()'s clock (0: it has not). Gone: nothing was heard
 * from the peer on either path for a deadline and a half, or its endpoint
 * failed; posts and waits to it then return GDA_FT_DEV_PEER_GONE at once.
 */
unsigned gda_ft_ucp_device_ep_peer_state(gda_ft_ucp_device_ep_h dev_ep,
                                         uint64_t *gone_ns_p);

/*
 * A restarted peer taken back: the device endpoint of its new UCP
 * endpoint (ep, connected to the new process), made as
 * gda_ft_ucp_device_ep_create() makes one, to replace `gone`, whose peer
 * was given up (GDA_FT_PEER_GONE; UCS_ERR_INVALID_PARAM otherwise). Its
 * state says GDA_FT_PEER_BACK, one generation past gone's (kernels: at the
 * first progress pass of one of its channels; CPU threads: at once). The
 * caller swaps it, and a memory list made on ep, in where posters take
 * the peer's, while posters to other peers run on; it destroys `gone` once
 * no poster uses it.
 */
ucs_status_t gda_ft_ucp_device_ep_rejoin(gda_ft_ucp_device_ep_h gone,
                                         ucp_ep_h ep,
                                         gda_ft_ucp_place_t place,
                                         gda_ft_ucp_device_ep_h *dev_ep_p);

/* The value a fetch-add or compare-swap on dev_ep fetched, from its result
 * slot or a copy of it in host memory (the kernels' own read is
 * gda_ft_dev_fetched(): the HCAs' byte order is the endpoint's) */
uint64_t gda_ft_ucp_fetched(gda_ft_ucp_device_ep_h dev_ep, const void *result);

void gda_ft_ucp_device_ep_destroy(gda_ft_ucp_device_ep_h dev_ep);


/* A memory list for posters on ep's device endpoint */
ucs_status_t gda_ft_ucp_mem_list_create(ucp_ep_h ep,
                                        const gda_ft_ucp_mem_elem_t *elems,
                                        unsigned count,
                                        gda_ft_ucp_place_t place,
                                        gda_ft_ucp_mem_list_h *ml_p);

/* What posters take: in GPU memory for PLACE_CUDA */
const gda_ft_dev_mem_list_t *gda_ft_ucp_mem_list(gda_ft_ucp_mem_list_h ml);

void gda_ft_ucp_mem_list_destroy(gda_ft_ucp_mem_list_h ml);


/* Zeroed words in host memory (PLACE_HOST) or GPU memory (PLACE_CUDA),
 * registered with context */
ucs_status_t gda_ft_ucp_signal_alloc(ucp_context_h context, size_t length,
                                     gda_ft_ucp_place_t place,
                                     gda_ft_ucp_signal_mem_t *sig);

void gda_ft_ucp_signal_free(ucp_context_h context,
                            gda_ft_ucp_signal_mem_t *sig);

#ifdef __cplusplus
}
#endif

#endif
