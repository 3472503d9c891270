/*
 * Memory access of the software HCA: plain copies for host memory, the CUDA
 * runtime for device memory. The runtime is loaded on first use, so the
 * provider runs (and is tested) on machines without a GPU driver.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"
#include "gda_ft_cudart.h"
#include "gda_ft_dev_atomic.h"

#include <ucs/arch/bitops.h>
#include <ucs/debug/log.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

/*
 * CUDA runtime entry points, by hand. Each engine thread copies on its own
 * non-blocking stream: a plain cudaMemcpy waits for every kernel on a
 * blocking stream, and a kernel that spins on its completions would then
 * never finish; one stream for the process made every thread wait for the
 * others' copies.
 */
typedef int (*gda_ft_cuda_stream_create_func_t)(void **stream,
                                                unsigned flags);
typedef int (*gda_ft_cuda_stream_func_t)(void *stream);
typedef int (*gda_ft_cuda_memcpy_async_func_t)(void*, const void*, size_t,
                                               int, void *stream);
typedef int (*gda_ft_cuda_host_alloc_func_t)(void **ptr, size_t size,
                                             unsigned flags);
typedef int (*gda_ft_cuda_free_host_func_t)(void *ptr);
typedef int (*gda_ft_cuda_device_func_t)(int *device);
typedef int (*gda_ft_cuda_set_device_func_t)(int device);
typedef int (*gda_ft_cuda_event_create_func_t)(void **event, unsigned flags);
typedef int (*gda_ft_cuda_event_record_func_t)(void *event, void *stream);
typedef int (*gda_ft_cuda_event_func_t)(void *event);
typedef int (*gda_ft_cuda_version_func_t)(int *version);

/* cudaPointerAttributes: its type first (room for what later runtimes
 * add) */
typedef struct {
    int   type;
    int   device;
    void *device_pointer;
    void *host_pointer;
    long  reserved[16];
} gda_ft_cuda_pointer_attrs_t;
typedef int (*gda_ft_cuda_pointer_attrs_func_t)(
        gda_ft_cuda_pointer_attrs_t *attrs, const void *ptr);
#define GDA_FT_CUDA_MEMORY_DEVICE      2
#define GDA_FT_CUDA_MEMORY_MANAGED     3

/* cudaMemcpyAttributes: the order a copy's source is read in, location
 * hints for managed memory (ignored here), flags */
typedef struct {
    int      src_access_order;
    int      src_loc[2];
    int      dst_loc[2];
    unsigned flags;
} gda_ft_cuda_memcpy_attrs_t;

/* cudaMemcpyBatchAsync, as CUDA 13 declares it, and as 12.8 and 12.9 did,
 * with the index of a failed copy before the stream */
typedef int (*gda_ft_cuda_memcpy_batch_func_t)(
        void *const *dsts, const void *const *srcs, const size_t *sizes,
        size_t count, gda_ft_cuda_memcpy_attrs_t *attrs, size_t *attrs_idxs,
        size_t num_attrs, void *stream);
typedef int (*gda_ft_cuda_memcpy_batch_12_func_t)(
        void *const *dsts, const void *const *srcs, const size_t *sizes,
        size_t count, gda_ft_cuda_memcpy_attrs_t *attrs, size_t *attrs_idxs,
        size_t num_attrs, size_t *fail_idx, void *stream);
#define GDA_FT_CUDA_MEMCPY_SRC_ORDER_STREAM 1
#define GDA_FT_CUDA_BATCH_MIN_VERSION  12080   /* 12.8 */
#define GDA_FT_CUDA_BATCH_13_VERSION   13000
/* cudaMemcpyKind: a copy named by its direction is refused (an error)
 * where device memory is not (freed while registered); one the runtime
 * infers from the pointers takes such memory for host memory and faults,
 * as does cudaMemcpyBatchAsync, which infers: a batch holds only copies
 * whose device memory the runtime reports as such */
#define GDA_FT_CUDA_MEMCPY_H2D         1
#define GDA_FT_CUDA_MEMCPY_D2H         2
#define GDA_FT_CUDA_MEMCPY_D2D         3
#define GDA_FT_CUDA_STREAM_NONBLOCKING 1
#define GDA_FT_CUDA_HOST_ALLOC_DEFAULT 0
#define GDA_FT_CUDA_EVENT_NO_TIMING    2
#define GDA_FT_CUDA_NOT_READY          600

/* Pinned bytes per engine thread through which writes into device memory
 * are queued without waiting: a pass's packets for GPU memory (256 of
 * 4 KiB) before the thread must wait for the first of them */
#define GDA_FT_SOFT_CUDA_STAGING       (1ul << 20)
#define GDA_FT_SOFT_CUDA_STAGING_ALIGN 64

static struct {
    gda_ft_cuda_stream_create_func_t stream_create;
    gda_ft_cuda_stream_func_t        stream_sync;
    gda_ft_cuda_stream_func_t        stream_destroy;
    gda_ft_cuda_memcpy_async_func_t  memcpy_async;
    gda_ft_cuda_host_alloc_func_t    host_alloc;
    gda_ft_cuda_free_host_func_t     free_host;
    gda_ft_cuda_set_device_func_t    set_device;
    gda_ft_cuda_event_create_func_t  event_create;
    gda_ft_cuda_event_record_func_t  event_record;
    gda_ft_cuda_event_func_t         event_query;
    gda_ft_cuda_event_func_t         event_sync;
    gda_ft_cuda_event_func_t         event_destroy;
    void                            *memcpy_batch; /* NULL: the runtime
                                                      has none */
    gda_ft_cuda_pointer_attrs_func_t pointer_attrs;
    int                              runtime_version;
    int                              device;  /* current at registration */
    pthread_key_t                    thread_key;
} gda_ft_soft_cuda;

/*
 * Copies for one stream, kept until they are queued together
 * (gda_ft_soft_cuda_copies_queue): a call each, or one
 * cudaMemcpyBatchAsync call (CUDA_COPY_BATCH), at about 3 us of the engine
 * thread's time per copy of 4 KiB on an H200. Copies whose destinations
 * continue each other (the packets of a message, the slots of a buffer
 * written in order, however other QPs' packets came between them) run as
 * one (CUDA_COPY_MERGE): from their sources where those continue each
 * other too, else from a copy of them gathered in the staging area (a
 * memcpy of a few KiB against a call of microseconds). A copy costs the
 * engine thread and the copy engine microseconds whatever its size up to
 * tens of KiB. Each copy keeps where a refusal of it is reported.
 */
#define GDA_FT_SOFT_CUDA_PENDING 256

typedef struct {
    void                  *dst[GDA_FT_SOFT_CUDA_PENDING];
    const void            *src[GDA_FT_SOFT_CUDA_PENDING];
    size_t                 len[GDA_FT_SOFT_CUDA_PENDING];
    gda_ft_soft_refusal_t *refusal[GDA_FT_SOFT_CUDA_PENDING];
    uint32_t               tag[GDA_FT_SOFT_CUDA_PENDING];
    unsigned               count;
    int                    kind;    /* GDA_FT_CUDA_MEMCPY_*: all of them */
    /* the copies as queued: runs of copies that continue each other,
     * run r made of order[run_first[r]] to order[run_first[r + 1] - 1] */
    void                  *run_dst[GDA_FT_SOFT_CUDA_PENDING];
    const void            *run_src[GDA_FT_SOFT_CUDA_PENDING];
    size_t                 run_len[GDA_FT_SOFT_CUDA_PENDING];
    unsigned               run_first[GDA_FT_SOFT_CUDA_PENDING + 1];
    uint16_t               order[GDA_FT_SOFT_CUDA_PENDING]; /* by dst */
} gda_ft_soft_cuda_copies_t;

/*
 * Messages to send read from device memory on a stream of their own, while
 * the engine goes on: a read waits in the thread's read staging area until
 * the event recorded behind its batch is done, then lands in its snapshot
 * (gda_ft_soft_mem_reads_land). Reads land in the order they were queued.
 * The runtime is asked whether a batch is done at most once every
 * GDA_FT_SOFT_CUDA_QUERY_GAP_NS, which is less than a copy takes to land:
 * a query costs the engine thread about 1.5 us on an H200, and a thread
 * with several QPs waiting for their reads asked for each in every pass.
 */
#define GDA_FT_SOFT_CUDA_READS        256
#define GDA_FT_SOFT_CUDA_QUERY_GAP_NS 4000

typedef struct {
    gda_ft_soft_snapshot_t *snapshot;
    uint32_t                offset;   /* in the snapshot's data */
    uint32_t                length;
    size_t                  staged;   /* offset in the read staging area */
    uint64_t                batch;
    int                     last;     /* the snapshot's last piece */
} gda_ft_soft_cuda_read_t;

/* The engine threads change a word of device memory one at a time: a
 * thread holds its word's lock (by the address of its 8 bytes) from its
 * read to the landing of its new value. One that would wait for a lock
 * runs its queued ops first, so that no thread waits holding one. */
#define GDA_FT_SOFT_CUDA_WORD_LOCKS 64

static pthread_mutex_t
gda_ft_soft_cuda_word_locks[GDA_FT_SOFT_CUDA_WORD_LOCKS] = {
    [0 ... GDA_FT_SOFT_CUDA_WORD_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER
};

/*
 * A word of device memory that queued word ops change: read once, into
 * the staging area, behind the writes queued before its first op; its
 * new value written once, after the last. Up to GDA_FT_SOFT_CUDA_WORD_OPS
 * ops wait for a flush.
 */
#define GDA_FT_SOFT_CUDA_WORD_OPS 64

typedef struct {
    void                        *addr;
    unsigned                     size;
    size_t                       staged;   /* where its read lands */
    int                          readable; /* its read was queued */
    uint64_t                     value;
    const gda_ft_soft_word_op_t *last;     /* the last op that changed it;
                                              NULL: none */
} gda_ft_soft_cuda_word_t;

/*
 * A read of device memory queued on the write stream, behind the writes
 * queued before it, into the staging area: copied to its destination by
 * the flush whose wait lands it (gda_ft_soft_mem_read_at_flush).
 */
#define GDA_FT_SOFT_CUDA_LATE_READS 64
#define GDA_FT_SOFT_CUDA_LATE_READ_MAX (64 * 1024)

typedef struct {
    void   *dst;
    size_t  staged;
    size_t  len;
} gda_ft_soft_cuda_late_read_t;

/*
 * An engine thread's access to device memory: the device current, its
 * stream, and a pinned staging area. A write into device memory is copied
 * there and queued (cudaMemcpyAsync from pinned memory returns at once);
 * what is queued completes before anything that could make it visible:
 * a packet sent (the ACK of the write, or a later one), a CQE written, a
 * read of device memory, a write to host memory (a signal behind the
 * data), an atomic's end (gda_ft_soft_mem_flush). Messages to send are
 * read on the read stream, through a staging area of their own.
 */
typedef struct {
    int                     ready;   /* set up (or tried: stream NULL on
                                        failure) */
    void                   *stream;
    char                   *staging; /* NULL: every copy waits */
    size_t                  queued;  /* staging bytes whose copies may be
                                        pending or in flight */
    gda_ft_soft_cuda_copies_t writes;   /* pending on the stream */
    gda_ft_soft_cuda_copies_t read_copies; /* pending on read_stream */
    void                   *read_stream;  /* NULL: messages read in turn */
    char                   *read_staging;
    size_t                  read_head;    /* staging offset of the oldest
                                             read in flight */
    size_t                  read_tail;    /* where the next one goes */
    unsigned                read_first;   /* oldest in reads[] */
    unsigned                num_reads;    /* in flight or queued */
    unsigned                open_reads;   /* queued since the last batch */
    uint64_t                batch;        /* the batch being queued */
    uint64_t                landed_batch; /* the last one done */
    uint64_t                query_ns;     /* when the runtime was last
                                             asked about the next one, or
                                             it was queued */
    void                   *events[GDA_FT_SOFT_CUDA_READS];
    gda_ft_soft_cuda_read_t reads[GDA_FT_SOFT_CUDA_READS];
    /* word ops queued for the next flush, and their words */
    gda_ft_soft_word_op_t   word_ops[GDA_FT_SOFT_CUDA_WORD_OPS];
    uint8_t                 word_of_op[GDA_FT_SOFT_CUDA_WORD_OPS];
    unsigned                num_word_ops;
    gda_ft_soft_cuda_word_t words[GDA_FT_SOFT_CUDA_WORD_OPS];
    unsigned                num_words;
    uint64_t                word_locks;   /* held, until the next flush */
    /* reads of device memory that land at the next flush */
    gda_ft_soft_cuda_late_read_t late_reads[GDA_FT_SOFT_CUDA_LATE_READS];
    unsigned                num_late_reads;
} gda_ft_soft_cuda_thread_t;

static __thread gda_ft_soft_cuda_thread_t gda_ft_soft_cuda_thread;

/* Time the engine threads spent in CUDA calls (engine statistics) */
typedef struct {
    uint64_t count;
    uint64_t total_ns;
    uint64_t max_ns;
} gda_ft_soft_cuda_time_t;

static gda_ft_soft_cuda_time_t gda_ft_soft_cuda_waits;  /* for a stream or
                                                           an event */
static gda_ft_soft_cuda_time_t gda_ft_soft_cuda_queues; /* queueing a copy */
static gda_ft_soft_cuda_time_t gda_ft_soft_cuda_queries; /* whether reads
                                                            have landed */
static pthread_once_t gda_ft_soft_cuda_once = PTHREAD_ONCE_INIT;
static int gda_ft_soft_cuda_loaded;

static void gda_ft_soft_cuda_reads_drain(gda_ft_soft_cuda_thread_t *t);
static void gda_ft_soft_cuda_staged(gda_ft_soft_cuda_thread_t *t,
                                    size_t len);
static void gda_ft_soft_cuda_copies_queue(gda_ft_soft_cuda_copies_t *c,
                                          void *stream);

static void gda_ft_soft_cuda_thread_release(void *arg)
{
    gda_ft_soft_cuda_thread_t *t = arg;
    unsigned i;

    if (t->read_stream != NULL) {
        gda_ft_soft_cuda_reads_drain(t);
        (void)gda_ft_soft_cuda.stream_destroy(t->read_stream);
    }
    for (i = 0; i < GDA_FT_SOFT_CUDA_READS; ++i) {
        if (t->events[i] != NULL) {
            (void)gda_ft_soft_cuda.event_destroy(t->events[i]);
        }
    }
    if (t->read_staging != NULL) {
        (void)gda_ft_soft_cuda.free_host(t->read_staging);
    }
    if (t->stream != NULL) {
        gda_ft_soft_cuda_copies_queue(&t->writes, t->stream);
        (void)gda_ft_soft_cuda.stream_sync(t->stream);
        (void)gda_ft_soft_cuda.stream_destroy(t->stream);
    }
    if (t->staging != NULL) {
        (void)gda_ft_soft_cuda.free_host(t->staging);
    }
    memset(t, 0, sizeof(*t));
}

/* cudaMemcpyBatchAsync where the runtime has it, and its version says
 * which of its two declarations it has */
static void gda_ft_soft_cuda_load_batch(void *handle)
{
    gda_ft_cuda_version_func_t version;

    *(void**)&version = dlsym(handle, "cudaRuntimeGetVersion");
    if ((version == NULL) ||
        (version(&gda_ft_soft_cuda.runtime_version) != 0) ||
        (gda_ft_soft_cuda.runtime_version < GDA_FT_CUDA_BATCH_MIN_VERSION)) {
        return;
    }
    *(void**)&gda_ft_soft_cuda.pointer_attrs =
            dlsym(handle, "cudaPointerGetAttributes");
    if (gda_ft_soft_cuda.pointer_attrs != NULL) {
        gda_ft_soft_cuda.memcpy_batch = dlsym(handle,
                                              "cudaMemcpyBatchAsync");
    }
}

static void gda_ft_soft_cuda_load(void)
{
    gda_ft_cuda_device_func_t get_device;
    struct {
        const char *name;
        void       **func;
    } symbols[] = {
        {"cudaGetDevice",            (void**)&get_device},
        {"cudaSetDevice",            (void**)&gda_ft_soft_cuda.set_device},
        {"cudaStreamCreateWithFlags",
                                     (void**)&gda_ft_soft_cuda.stream_create},
        {"cudaStreamSynchronize",    (void**)&gda_ft_soft_cuda.stream_sync},
        {"cudaStreamDestroy",        (void**)&gda_ft_soft_cuda.stream_destroy},
        {"cudaMemcpyAsync",          (void**)&gda_ft_soft_cuda.memcpy_async},
        {"cudaHostAlloc",            (void**)&gda_ft_soft_cuda.host_alloc},
        {"cudaFreeHost",             (void**)&gda_ft_soft_cuda.free_host},
        {"cudaEventCreateWithFlags", (void**)&gda_ft_soft_cuda.event_create},
        {"cudaEventRecord",          (void**)&gda_ft_soft_cuda.event_record},
        {"cudaEventQuery",           (void**)&gda_ft_soft_cuda.event_query},
        {"cudaEventSynchronize",     (void**)&gda_ft_soft_cuda.event_sync},
        {"cudaEventDestroy",         (void**)&gda_ft_soft_cuda.event_destroy}
    };
    void *handle = gda_ft_cudart_open();
    unsigned i;

    if (handle == NULL) {
        ucs_error("soft HCA: CUDA memory registered but no CUDA runtime "
                  "(libcudart) could be loaded");
        return;
    }
    for (i = 0; i < ucs_static_array_size(symbols); ++i) {
        *symbols[i].func = dlsym(handle, symbols[i].name);
        if (*symbols[i].func == NULL) {
            ucs_error("soft HCA: the CUDA runtime lacks %s",
                      symbols[i].name);
            return;
        }
    }
    if (get_device(&gda_ft_soft_cuda.device) != 0) {
        ucs_error("soft HCA: cudaGetDevice failed");
        return;
    }
    gda_ft_soft_cuda_load_batch(handle);
    if (pthread_key_create(&gda_ft_soft_cuda.thread_key,
                           gda_ft_soft_cuda_thread_release) != 0) {
        ucs_error("soft HCA: pthread_key_create failed");
        return;
    }
    gda_ft_soft_cuda_loaded = 1;
}

/*
 * This thread's stream, on the device whose memory the program registered
 * (current when the first CUDA region was: one process per GPU; without
 * it the copies ran from device 0's context, across the GPUs, for a rank
 * on another one). Without a staging area the thread's copies wait.
 */
static gda_ft_soft_cuda_thread_t *gda_ft_soft_cuda_thread_get(void)
{
    gda_ft_soft_cuda_thread_t *t = &gda_ft_soft_cuda_thread;
    uint64_t start;
    int ret;

    if (t->ready) {
        return (t->stream != NULL) ? t : NULL;
    }
    t->ready = 1;
    start    = gda_ft_soft_now_ns();
    ret      = gda_ft_soft_cuda.set_device(gda_ft_soft_cuda.device);
    if (ret != 0) {
        ucs_error("soft HCA: cudaSetDevice(%d) failed: %d",
                  gda_ft_soft_cuda.device, ret);
        return NULL;
    }
    ret = gda_ft_soft_cuda.stream_create(&t->stream,
                                         GDA_FT_CUDA_STREAM_NONBLOCKING);
    if (ret != 0) {
        ucs_error("soft HCA: cudaStreamCreateWithFlags failed: %d", ret);
        t->stream = NULL;
        return NULL;
    }
    ret = gda_ft_soft_cuda.host_alloc((void**)&t->staging,
                                      GDA_FT_SOFT_CUDA_STAGING,
                                      GDA_FT_CUDA_HOST_ALLOC_DEFAULT);
    if (ret != 0) {
        ucs_diag("soft HCA: cudaHostAlloc(%lu) failed (%d): writes into "
                 "device memory wait for their copy",
                 GDA_FT_SOFT_CUDA_STAGING, ret);
        t->staging = NULL;
    }
    ret = gda_ft_soft_cuda.stream_create(&t->read_stream,
                                         GDA_FT_CUDA_STREAM_NONBLOCKING);
    if ((ret == 0) &&
        (gda_ft_soft_cuda.host_alloc((void**)&t->read_staging,
                                     GDA_FT_SOFT_CUDA_STAGING,
                                     GDA_FT_CUDA_HOST_ALLOC_DEFAULT) != 0)) {
        (void)gda_ft_soft_cuda.stream_destroy(t->read_stream);
        ret = -1;
    }
    if (ret != 0) {
        ucs_diag("soft HCA: no read stream or staging area (%d): messages "
                 "in device memory are read as their packets are built", ret);
        t->read_stream  = NULL;
        t->read_staging = NULL;
    }
    t->batch            = 1;
    t->writes.kind      = GDA_FT_CUDA_MEMCPY_H2D;   /* from staging */
    t->read_copies.kind = GDA_FT_CUDA_MEMCPY_D2H;   /* into staging */
    (void)pthread_setspecific(gda_ft_soft_cuda.thread_key, t);
    ucs_diag("soft HCA: an engine thread's CUDA stream and staging area "
             "took %.3f ms to set up", (gda_ft_soft_now_ns() - start) / 1e6);
    return t;
}

/* n more calls (copies, for gda_ft_soft_cuda_queues) took since start */
static void gda_ft_soft_cuda_count_n(gda_ft_soft_cuda_time_t *time,
                                     uint64_t start, unsigned n)
{
    uint64_t took = gda_ft_soft_now_ns() - start;

    __atomic_fetch_add(&time->count, n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&time->total_ns, took, __ATOMIC_RELAXED);
    gda_ft_atomic_max64(&time->max_ns, took);
}

static void gda_ft_soft_cuda_count(gda_ft_soft_cuda_time_t *time,
                                   uint64_t start)
{
    gda_ft_soft_cuda_count_n(time, start, 1);
}

static void gda_ft_soft_cuda_time_read(const gda_ft_soft_cuda_time_t *time,
                                       uint64_t *count, uint64_t *total_ns,
                                       uint64_t *max_ns)
{
    *count    = __atomic_load_n(&time->count, __ATOMIC_RELAXED);
    *total_ns = __atomic_load_n(&time->total_ns, __ATOMIC_RELAXED);
    *max_ns   = __atomic_load_n(&time->max_ns, __ATOMIC_RELAXED);
}

/* Waits for a stream or an event (sync says which), and counts the wait */
static int gda_ft_soft_cuda_wait(gda_ft_cuda_stream_func_t sync, void *what)
{
    uint64_t start = gda_ft_soft_now_ns();
    int ret        = sync(what);

    gda_ft_soft_cuda_count(&gda_ft_soft_cuda_waits, start);
    return ret;
}

/* Queues a copy on a stream, and counts the time the call took: a copy
 * the driver cannot queue at once (its queue full) makes the call wait */
static int gda_ft_soft_cuda_copy_async(void *dst, const void *src,
                                       size_t len, int kind, void *stream)
{
    uint64_t start = gda_ft_soft_now_ns();
    int ret        = gda_ft_soft_cuda.memcpy_async(dst, src, len, kind,
                                                   stream);

    gda_ft_soft_cuda_count(&gda_ft_soft_cuda_queues, start);
    return ret;
}

void gda_ft_soft_refusal_note(gda_ft_soft_refusal_t *refusal, uint32_t tag)
{
    if ((refusal != NULL) && !refusal->refused) {
        refusal->refused = 1;
        refusal->tag     = tag;
    }
}

/* Whether the runtime reports the byte at ptr as device memory (not
 * freed) */
static int gda_ft_soft_cuda_is_device(const void *ptr)
{
    gda_ft_cuda_pointer_attrs_t attrs;

    memset(&attrs, 0, sizeof(attrs));
    return (gda_ft_soft_cuda.pointer_attrs(&attrs, ptr) == 0) &&
           ((attrs.type == GDA_FT_CUDA_MEMORY_DEVICE) ||
            (attrs.type == GDA_FT_CUDA_MEMORY_MANAGED));
}

/* Whether both ends of a run's device memory are device memory */
static int gda_ft_soft_cuda_run_is_device(const gda_ft_soft_cuda_copies_t *c,
                                          unsigned r)
{
    const char *dev = (c->kind == GDA_FT_CUDA_MEMCPY_D2H) ? c->run_src[r] :
                                                             c->run_dst[r];

    return gda_ft_soft_cuda_is_device(dev) &&
           gda_ft_soft_cuda_is_device(dev + c->run_len[r] - 1);
}

/* Queues the runs [0, runs) whose device memory is live through one
 * cudaMemcpyBatchAsync call, marking them in batched; its return value */
static int gda_ft_soft_cuda_copies_batch(gda_ft_soft_cuda_copies_t *c,
                                         unsigned runs, void *stream,
                                         uint8_t *batched)
{
    gda_ft_cuda_memcpy_attrs_t attrs = {GDA_FT_CUDA_MEMCPY_SRC_ORDER_STREAM};
    size_t attrs_idx                 = 0, fail_idx;
    uint64_t start                   = gda_ft_soft_now_ns();
    size_t len[GDA_FT_SOFT_CUDA_PENDING];
    const void *src[GDA_FT_SOFT_CUDA_PENDING];
    void *dst[GDA_FT_SOFT_CUDA_PENDING];
    unsigned r, n;
    int ret;

    for (r = 0, n = 0; r < runs; ++r) {
        batched[r] = gda_ft_soft_cuda_run_is_device(c, r);
        if (batched[r]) {
            dst[n]   = c->run_dst[r];
            src[n]   = c->run_src[r];
            len[n++] = c->run_len[r];
        }
    }
    if (n == 0) {
        return 0;
    }
    if (gda_ft_soft_cuda.runtime_version >= GDA_FT_CUDA_BATCH_13_VERSION) {
        ret = ((gda_ft_cuda_memcpy_batch_func_t)gda_ft_soft_cuda.memcpy_batch)(
                dst, src, len, n, &attrs, &attrs_idx, 1, stream);
    } else {
        ret = ((gda_ft_cuda_memcpy_batch_12_func_t)
               gda_ft_soft_cuda.memcpy_batch)(dst, src, len, n, &attrs,
                                              &attrs_idx, 1, &fail_idx,
                                              stream);
    }
    gda_ft_soft_cuda_count_n(&gda_ft_soft_cuda_queues, start, n);
    if (ret != 0) {
        memset(batched, 0, runs);
    }
    return ret;
}

/* Orders copy indices by destination (the copies of a batch do not
 * overlap) */
static int gda_ft_soft_cuda_by_dst(const void *a, const void *b, void *arg)
{
    const gda_ft_soft_cuda_copies_t *c = arg;
    uintptr_t da = (uintptr_t)c->dst[*(const uint16_t*)a];
    uintptr_t db = (uintptr_t)c->dst[*(const uint16_t*)b];

    return (da > db) - (da < db);
}

/* Gathers the sources of run r (the thread's writes, from host memory)
 * into its staging area, behind what is staged there; 0: no room */
static int gda_ft_soft_cuda_run_gather(gda_ft_soft_cuda_copies_t *c,
                                       unsigned r, unsigned end)
{
    gda_ft_soft_cuda_thread_t *t = &gda_ft_soft_cuda_thread;
    size_t offset;
    char *gather;
    unsigned i;

    if ((c != &t->writes) || (t->staging == NULL) ||
        ((t->queued + c->run_len[r]) > GDA_FT_SOFT_CUDA_STAGING)) {
        return 0;
    }
    gather = t->staging + t->queued;
    for (i = c->run_first[r], offset = 0; i < end; ++i) {
        memcpy(gather + offset, c->src[c->order[i]], c->len[c->order[i]]);
        offset += c->len[c->order[i]];
    }
    gda_ft_soft_cuda_staged(t, c->run_len[r]);
    c->run_src[r] = gather;
    return 1;
}

/* Closes run r, made of order[run_first[r]] to order[end - 1]: copies
 * whose destinations continue each other but whose sources do not either
 * run from a gathered copy of their sources, or each alone */
static unsigned gda_ft_soft_cuda_run_close(gda_ft_soft_cuda_copies_t *c,
                                           unsigned r, unsigned end,
                                           int sources_continue)
{
    unsigned i, k;

    if (sources_continue || ((end - c->run_first[r]) == 1) ||
        gda_ft_soft_cuda_run_gather(c, r, end)) {
        return r + 1;
    }
    for (i = c->run_first[r]; i < end; ++i, ++r) {
        k               = c->order[i];
        c->run_dst[r]   = c->dst[k];
        c->run_src[r]   = c->src[k];
        c->run_len[r]   = c->len[k];
        c->run_first[r] = i;
    }
    return r;
}

/* The pending copies as runs of copies whose destinations continue each
 * other; their number */
static unsigned gda_ft_soft_cuda_copies_runs(gda_ft_soft_cuda_copies_t *c)
{
    int merge            = gda_ft_soft_engine.config.cuda_copy_merge;
    int sources_continue = 1;
    unsigned runs = 0, i, k;

    for (i = 0; i < c->count; ++i) {
        c->order[i] = i;
    }
    if (merge && (c->count > 1)) {
        qsort_r(c->order, c->count, sizeof(c->order[0]),
                gda_ft_soft_cuda_by_dst, c);
    }
    for (i = 0; i < c->count; ++i) {
        k = c->order[i];
        if (merge && (runs > 0) &&
            ((char*)c->run_dst[runs - 1] + c->run_len[runs - 1] ==
             (char*)c->dst[k]) &&
            ((c->kind == GDA_FT_CUDA_MEMCPY_H2D) ||
             ((const char*)c->run_src[runs - 1] + c->run_len[runs - 1] ==
              (const char*)c->src[k]))) {
            sources_continue &= ((const char*)c->run_src[runs - 1] +
                                 c->run_len[runs - 1] ==
                                 (const char*)c->src[k]);
            c->run_len[runs - 1] += c->len[k];
            continue;
        }
        if (runs > 0) {
            runs = gda_ft_soft_cuda_run_close(c, runs - 1, i,
                                              sources_continue);
        }
        c->run_dst[runs]   = c->dst[k];
        c->run_src[runs]   = c->src[k];
        c->run_len[runs]   = c->len[k];
        c->run_first[runs] = i;
        sources_continue   = 1;
        ++runs;
    }
    if (runs > 0) {
        runs = gda_ft_soft_cuda_run_close(c, runs - 1, c->count,
                                          sources_continue);
    }
    c->run_first[runs] = c->count;
    return runs;
}

/* Queues the copies of a run that could not be queued one by one, so that
 * the refused ones are known: their bytes do not move, and each refusal
 * is reported where its copy said */
static void gda_ft_soft_cuda_run_retry(gda_ft_soft_cuda_copies_t *c,
                                       unsigned run, void *stream)
{
    unsigned i, k;
    int ret;

    for (i = c->run_first[run]; i < c->run_first[run + 1]; ++i) {
        k   = c->order[i];
        ret = gda_ft_soft_cuda_copy_async(c->dst[k], c->src[k], c->len[k],
                                          c->kind, stream);
        if (ret != 0) {
            ucs_error("soft HCA: cudaMemcpyAsync(%p, %p, %zu) refused: %d",
                      c->dst[k], c->src[k], c->len[k], ret);
            gda_ft_soft_refusal_note(c->refusal[k], c->tag[k]);
        }
    }
}

/*
 * Queues a stream's pending copies on it: by one call where the runtime
 * batches them (CUDA_COPY_BATCH) and reports their device memory as such,
 * else, or should that call fail, a run at a time, naming its direction;
 * a run refused is queued again copy by copy.
 */
static void gda_ft_soft_cuda_copies_queue(gda_ft_soft_cuda_copies_t *c,
                                          void *stream)
{
    uint8_t batched[GDA_FT_SOFT_CUDA_PENDING] = {0};
    unsigned runs, r;
    int ret;

    if (c->count == 0) {
        return;
    }
    runs = gda_ft_soft_cuda_copies_runs(c);
    if ((runs > 1) && (gda_ft_soft_cuda.memcpy_batch != NULL) &&
        gda_ft_soft_engine.config.cuda_copy_batch) {
        ret = gda_ft_soft_cuda_copies_batch(c, runs, stream, batched);
        if (ret != 0) {
            ucs_diag("soft HCA: cudaMemcpyBatchAsync of %u copies failed "
                     "(%d): queued one by one", runs, ret);
        }
    }
    for (r = 0; r < runs; ++r) {
        if (batched[r]) {
            continue;
        }
        ret = gda_ft_soft_cuda_copy_async(c->run_dst[r], c->run_src[r],
                                          c->run_len[r], c->kind, stream);
        if (ret != 0) {
            gda_ft_soft_cuda_run_retry(c, r, stream);
        }
    }
    c->count = 0;
}

/*
 * Keeps a copy for the stream's next queueing. The copies of one batch
 * run in no set order: one whose destination overlaps a pending one's (a
 * later write of the same bytes) waits for the next batch, behind them.
 */
static void gda_ft_soft_cuda_copies_add(gda_ft_soft_cuda_copies_t *c,
                                        void *stream, void *dst,
                                        const void *src, size_t len,
                                        gda_ft_soft_refusal_t *refusal,
                                        uint32_t tag)
{
    uintptr_t from = (uintptr_t)dst, end = from + len, d;
    unsigned i;

    for (i = 0; i < c->count; ++i) {
        d = (uintptr_t)c->dst[i];
        if ((d < end) && (from < d + c->len[i])) {
            break;
        }
    }
    if ((i < c->count) || (c->count == GDA_FT_SOFT_CUDA_PENDING)) {
        gda_ft_soft_cuda_copies_queue(c, stream);
    }
    c->dst[c->count]     = dst;
    c->src[c->count]     = src;
    c->len[c->count]     = len;
    c->refusal[c->count] = refusal;
    c->tag[c->count]     = tag;
    ++c->count;
}

void gda_ft_soft_mem_cuda_stats(gda_ft_soft_engine_stats_t *stats)
{
    uint64_t max_ns;

    gda_ft_soft_cuda_time_read(&gda_ft_soft_cuda_waits, &stats->cuda_waits,
                               &stats->cuda_wait_ns,
                               &stats->max_cuda_wait_ns);
    gda_ft_soft_cuda_time_read(&gda_ft_soft_cuda_queues,
                               &stats->cuda_copies, &stats->cuda_copy_ns,
                               &stats->max_cuda_copy_ns);
    gda_ft_soft_cuda_time_read(&gda_ft_soft_cuda_queries,
                               &stats->cuda_queries, &stats->cuda_query_ns,
                               &max_ns);
}

static void gda_ft_soft_cuda_word_ops_run(gda_ft_soft_cuda_thread_t *t);
static int gda_ft_soft_cuda_load_once(void);

/* This thread's access to device memory, the runtime loaded on first use;
 * NULL when either failed (logged there) */
static gda_ft_soft_cuda_thread_t *gda_ft_soft_cuda_thread_ready(void)
{
    return gda_ft_soft_cuda_load_once() ? gda_ft_soft_cuda_thread_get() :
                                          NULL;
}

/* The late reads have landed in the staging area: to their destinations */
static void gda_ft_soft_cuda_late_reads_land(gda_ft_soft_cuda_thread_t *t)
{
    const gda_ft_soft_cuda_late_read_t *read;
    unsigned i;

    for (i = 0; i < t->num_late_reads; ++i) {
        read = &t->late_reads[i];
        memcpy(read->dst, t->staging + read->staged, read->len);
    }
    t->num_late_reads = 0;
}

/* Queues the thread's kept writes and waits for its stream: what it
 * queued has landed, the late reads are in their destinations, and the
 * staging area is free again. The wait's return value. */
static int gda_ft_soft_cuda_writes_land(gda_ft_soft_cuda_thread_t *t)
{
    int ret;

    gda_ft_soft_cuda_copies_queue(&t->writes, t->stream);
    ret = gda_ft_soft_cuda_wait(gda_ft_soft_cuda.stream_sync, t->stream);
    if (ret != 0) {
        ucs_error("soft HCA: cudaStreamSynchronize failed: %d", ret);
    }
    gda_ft_soft_cuda_late_reads_land(t);
    t->queued = 0;
    return ret;
}

void gda_ft_soft_mem_flush(void)
{
    gda_ft_soft_cuda_thread_t *t = &gda_ft_soft_cuda_thread;

    if (t->num_word_ops > 0) {
        gda_ft_soft_cuda_word_ops_run(t);   /* queues their new values */
    }
    if (t->queued > 0) {
        (void)gda_ft_soft_cuda_writes_land(t);
    }
    for (; t->word_locks != 0; t->word_locks &= t->word_locks - 1) {
        pthread_mutex_unlock(
                &gda_ft_soft_cuda_word_locks[ucs_ffs64(t->word_locks)]);
    }
}

/* Whether len bytes may go through the thread's staging area */
static int gda_ft_soft_cuda_stageable(const gda_ft_soft_cuda_thread_t *t,
                                      size_t len)
{
    return (t->staging != NULL) && (len <= GDA_FT_SOFT_CUDA_STAGING) &&
           gda_ft_soft_engine.config.cuda_staging;
}

/* Where len bytes go in the staging area: after what is queued, or at its
 * start once that has landed (the area was full) */
static size_t gda_ft_soft_cuda_stage(gda_ft_soft_cuda_thread_t *t,
                                     size_t len)
{
    if ((t->queued + len) > GDA_FT_SOFT_CUDA_STAGING) {
        gda_ft_soft_mem_flush();
    }
    return t->queued;
}

/* len bytes were queued at the stage's offset */
static void gda_ft_soft_cuda_staged(gda_ft_soft_cuda_thread_t *t,
                                    size_t len)
{
    t->queued = ucs_min(t->queued +
                        ucs_align_up(len, GDA_FT_SOFT_CUDA_STAGING_ALIGN),
                        GDA_FT_SOFT_CUDA_STAGING);
}

gda_ft_soft_snapshot_t *gda_ft_soft_snapshot_alloc(size_t len)
{
    gda_ft_soft_snapshot_t *snapshot = malloc(sizeof(*snapshot) +
                                              ucs_max(len, 1));

    if (snapshot != NULL) {
        snapshot->state           = GDA_FT_SOFT_SNAPSHOT_LANDED;
        snapshot->refusal.refused = 0;
    }
    return snapshot;
}

void gda_ft_soft_snapshot_free(gda_ft_soft_snapshot_t *snapshot)
{
    int state = GDA_FT_SOFT_SNAPSHOT_READING;

    /* a read in flight lands in it first: the landing frees it */
    if ((snapshot != NULL) &&
        !__atomic_compare_exchange_n(&snapshot->state, &state,
                                     GDA_FT_SOFT_SNAPSHOT_ORPHANED, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        free(snapshot);
    }
}

int gda_ft_soft_snapshot_landed(const gda_ft_soft_snapshot_t *snapshot)
{
    return __atomic_load_n(&snapshot->state, __ATOMIC_ACQUIRE) ==
           GDA_FT_SOFT_SNAPSHOT_LANDED;
}

/* The oldest read of the thread has landed: its bytes go to its snapshot,
 * and its staging bytes are free again */
static void gda_ft_soft_cuda_read_land(gda_ft_soft_cuda_thread_t *t)
{
    gda_ft_soft_cuda_read_t *read = &t->reads[t->read_first];
    int state                     = GDA_FT_SOFT_SNAPSHOT_READING;

    memcpy(read->snapshot->data + read->offset,
           t->read_staging + read->staged, read->length);
    if (read->last &&
        !__atomic_compare_exchange_n(&read->snapshot->state, &state,
                                     GDA_FT_SOFT_SNAPSHOT_LANDED, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        free(read->snapshot);   /* orphaned by its op */
    }
    t->read_head  = read->staged + read->length;
    t->read_first = (t->read_first + 1) % GDA_FT_SOFT_CUDA_READS;
    if (--t->num_reads == 0) {
        t->read_head = t->read_tail = 0;
    }
}

/* Whether the batch of reads has landed; asks the runtime only where
 * force, or where it was not asked within the last
 * GDA_FT_SOFT_CUDA_QUERY_GAP_NS */
static int gda_ft_soft_cuda_batch_landed(gda_ft_soft_cuda_thread_t *t,
                                         uint64_t batch, int force)
{
    uint64_t now = gda_ft_soft_now_ns();
    int ret;

    if (!force && ((now - t->query_ns) < GDA_FT_SOFT_CUDA_QUERY_GAP_NS)) {
        return 0;
    }
    ret = gda_ft_soft_cuda.event_query(
            t->events[batch % GDA_FT_SOFT_CUDA_READS]);
    gda_ft_soft_cuda_count(&gda_ft_soft_cuda_queries, now);
    t->query_ns = now;
    if (ret == GDA_FT_CUDA_NOT_READY) {
        return 0;
    } else if (ret != 0) {
        ucs_error("soft HCA: cudaEventQuery failed: %d", ret);
    }
    return 1;
}

/* Lands the reads whose batches are done (force: asking the runtime now) */
static int gda_ft_soft_cuda_reads_land(gda_ft_soft_cuda_thread_t *t,
                                       int force)
{
    gda_ft_soft_cuda_read_t *read;

    while (t->num_reads > t->open_reads) {
        read = &t->reads[t->read_first];
        if (read->batch > t->landed_batch) {
            if (!gda_ft_soft_cuda_batch_landed(t, read->batch, force)) {
                break;
            }
            t->landed_batch = read->batch;
        }
        gda_ft_soft_cuda_read_land(t);
    }
    return t->num_reads;
}

int gda_ft_soft_mem_reads_land(void)
{
    return gda_ft_soft_cuda_reads_land(&gda_ft_soft_cuda_thread, 0);
}

/* Waits for every read queued on the thread's read stream, and lands them */
static void gda_ft_soft_cuda_reads_drain(gda_ft_soft_cuda_thread_t *t)
{
    int ret;

    if (t->num_reads == 0) {
        return;
    }
    gda_ft_soft_cuda_copies_queue(&t->read_copies, t->read_stream);
    ret = gda_ft_soft_cuda_wait(gda_ft_soft_cuda.stream_sync,
                                t->read_stream);
    if (ret != 0) {
        ucs_error("soft HCA: cudaStreamSynchronize failed: %d", ret);
    }
    t->landed_batch = t->batch;
    t->open_reads   = 0;
    while (t->num_reads > 0) {
        gda_ft_soft_cuda_read_land(t);
    }
}

/* Staging offset of len bytes for reads, after those in flight; -1 when
 * they do not fit now */
static ssize_t gda_ft_soft_cuda_read_stage(gda_ft_soft_cuda_thread_t *t,
                                           size_t len)
{
    size_t offset;

    len = ucs_align_up(ucs_max(len, 1), GDA_FT_SOFT_CUDA_STAGING_ALIGN);
    if ((t->num_reads == 0) || (t->read_tail > t->read_head)) {
        /* [head, tail) in flight: after it, or from the start */
        if ((t->read_tail + len) <= GDA_FT_SOFT_CUDA_STAGING) {
            offset = t->read_tail;
        } else if (len <= t->read_head) {
            offset = 0;
        } else {
            return -1;
        }
    } else if ((t->read_tail + len) <= t->read_head) {
        offset = t->read_tail;   /* wrapped: the gap before head */
    } else {
        return -1;
    }
    t->read_tail = offset + len;
    return offset;
}

int gda_ft_soft_mem_read_snapshot(gda_ft_soft_snapshot_t *snapshot,
                                  const gda_ft_soft_read_piece_t *pieces,
                                  unsigned count)
{
    gda_ft_soft_cuda_thread_t *t = gda_ft_soft_cuda_thread_get();
    gda_ft_soft_cuda_read_t *read;
    size_t total = 0;
    ssize_t staged;
    unsigned i;

    if ((t == NULL) || (t->read_stream == NULL) || (count == 0)) {
        return -1;
    }
    for (i = 0; i < count; ++i) {
        total += pieces[i].length;
    }
    if (total > GDA_FT_SOFT_CUDA_STAGING) {
        return -1;
    }
    if ((t->num_reads + count) > GDA_FT_SOFT_CUDA_READS) {
        return 0;
    }
    staged = gda_ft_soft_cuda_read_stage(t, total);
    if (staged < 0) {
        return 0;
    }

    for (i = 0, total = 0; i < count; total += pieces[i++].length) {
        gda_ft_soft_cuda_copies_add(&t->read_copies, t->read_stream,
                                    t->read_staging + staged + total,
                                    pieces[i].src, pieces[i].length,
                                    &snapshot->refusal, 0);
    }

    snapshot->state = GDA_FT_SOFT_SNAPSHOT_READING;
    for (i = 0; i < count; ++i) {
        read           = &t->reads[(t->read_first + t->num_reads) %
                                   GDA_FT_SOFT_CUDA_READS];
        read->snapshot = snapshot;
        read->offset   = pieces[i].offset;
        read->length   = pieces[i].length;
        read->staged   = staged;
        read->batch    = t->batch;
        read->last     = (i + 1 == count);
        staged        += pieces[i].length;
        ++t->num_reads;
        ++t->open_reads;
    }
    return 1;
}

void gda_ft_soft_mem_reads_submit(void)
{
    gda_ft_soft_cuda_thread_t *t = &gda_ft_soft_cuda_thread;
    void **event, *created;
    int ret;

    if (t->open_reads == 0) {
        return;
    }
    gda_ft_soft_cuda_copies_queue(&t->read_copies, t->read_stream);
    event = &t->events[t->batch % GDA_FT_SOFT_CUDA_READS];
    ret   = 0;
    if (*event == NULL) {
        ret = gda_ft_soft_cuda.event_create(&created,
                                            GDA_FT_CUDA_EVENT_NO_TIMING);
        *event = (ret == 0) ? created : NULL;
    }
    if (ret == 0) {
        ret = gda_ft_soft_cuda.event_record(*event, t->read_stream);
    }
    if (ret != 0) {
        ucs_error("soft HCA: a CUDA event behind reads failed: %d", ret);
        gda_ft_soft_cuda_reads_drain(t);
        return;
    }
    t->open_reads = 0;
    ++t->batch;
    if (!gda_ft_soft_engine.config.cuda_read_async) {
        ret = gda_ft_soft_cuda_wait(gda_ft_soft_cuda.event_sync, *event);
        if (ret != 0) {
            ucs_error("soft HCA: cudaEventSynchronize failed: %d", ret);
        }
        (void)gda_ft_soft_cuda_reads_land(t, 1);
    } else if ((t->landed_batch + 2) == t->batch) {
        /* the oldest batch in flight: not done before a copy could be */
        t->query_ns = gda_ft_soft_now_ns();
    }
}

/* Queues a write of host bytes into device memory through the staging
 * area; 0 when it cannot be staged */
static int gda_ft_soft_cuda_queue_write(gda_ft_soft_cuda_thread_t *t,
                                        void *dst, const void *src,
                                        size_t len,
                                        gda_ft_soft_refusal_t *refusal,
                                        uint32_t tag)
{
    char *stage;

    if (!gda_ft_soft_cuda_stageable(t, len)) {
        return 0;
    }
    /* its bytes reserved before the copy is added: queueing the copies
     * kept may gather theirs behind what is staged */
    stage = t->staging + gda_ft_soft_cuda_stage(t, len);
    memcpy(stage, src, len);
    gda_ft_soft_cuda_staged(t, len);
    gda_ft_soft_cuda_copies_add(&t->writes, t->stream, dst, stage, len,
                                refusal, tag);
    return 1;
}

/* The queued word that [addr, addr + len) overlaps; -1: none */
static int gda_ft_soft_cuda_word_find(const gda_ft_soft_cuda_thread_t *t,
                                      const void *addr, size_t len)
{
    uintptr_t from = (uintptr_t)addr, w;
    unsigned i;

    for (i = 0; i < t->num_words; ++i) {
        w = (uintptr_t)t->words[i].addr;
        if ((w < from + len) && (from < w + t->words[i].size)) {
            return i;
        }
    }
    return -1;
}

/*
 * Runs the queued word ops: one wait lands their words' reads (and the
 * writes queued before them), each op runs on its word's value as the
 * ops before it left it, and each changed word's new value is queued, to
 * land before the flush that called this returns.
 */
static void gda_ft_soft_cuda_word_ops_run(gda_ft_soft_cuda_thread_t *t)
{
    unsigned num_ops = t->num_word_ops, num_words = t->num_words, i;
    const gda_ft_soft_word_op_t *op;
    gda_ft_soft_cuda_word_t *word;
    uint64_t new_value;
    int ret;

    /* the words' values are read before new values are staged over
     * them; ops queued from here on wait for the next flush */
    ret = gda_ft_soft_cuda_writes_land(t);
    for (i = 0; i < num_words; ++i) {
        word        = &t->words[i];
        word->value = 0;
        memcpy(&word->value, t->staging + word->staged, word->size);
        word->readable = word->readable && (ret == 0);
    }
    for (i = 0; (ret != 0) && (i < num_ops); ++i) {
        /* their words may not have been read: they fail */
        gda_ft_soft_refusal_note(t->word_ops[i].refusal, t->word_ops[i].tag);
    }
    t->num_word_ops = 0;
    t->num_words    = 0;

    for (i = 0; i < num_ops; ++i) {
        op   = &t->word_ops[i];
        word = &t->words[t->word_of_op[i]];
        if (op->run(op, word->readable, word->value, &new_value) &&
            word->readable) {
            word->value = new_value;
            word->last  = op;
        }
    }
    for (i = 0; i < num_words; ++i) {
        word = &t->words[i];
        if (word->last != NULL) {
            (void)gda_ft_soft_cuda_queue_write(t, word->addr, &word->value,
                                               word->size,
                                               word->last->refusal,
                                               word->last->tag);
        }
    }
}

/* Queues a read of len bytes of device memory into the staging area,
 * behind the writes queued before it; its offset there. 0: queued */
static int gda_ft_soft_cuda_read_staged(gda_ft_soft_cuda_thread_t *t,
                                        const void *src, size_t len,
                                        gda_ft_soft_refusal_t *refusal,
                                        uint32_t tag, size_t *staged_p)
{
    size_t staged = gda_ft_soft_cuda_stage(t, len);
    int ret;

    gda_ft_soft_cuda_staged(t, len);
    gda_ft_soft_cuda_copies_queue(&t->writes, t->stream);
    ret = gda_ft_soft_cuda_copy_async(t->staging + staged, src, len,
                                      GDA_FT_CUDA_MEMCPY_D2H, t->stream);
    if (ret != 0) {
        ucs_error("soft HCA: cudaMemcpyAsync(%p, %p, %zu) refused: %d",
                  t->staging + staged, src, len, ret);
        gda_ft_soft_refusal_note(refusal, tag);
    }
    *staged_p = staged;
    return ret;
}

int gda_ft_soft_mem_read_at_flush(void *dst, const void *src, size_t len,
                                  gda_ft_soft_refusal_t *refusal,
                                  uint32_t tag)
{
    gda_ft_soft_cuda_thread_t *t;
    gda_ft_soft_cuda_late_read_t *read;
    size_t staged;

    t = gda_ft_soft_cuda_thread_ready();
    if ((t == NULL) || (len > GDA_FT_SOFT_CUDA_LATE_READ_MAX) ||
        !gda_ft_soft_cuda_stageable(t, len)) {
        return 0;
    }
    if (t->num_late_reads == GDA_FT_SOFT_CUDA_LATE_READS) {
        gda_ft_soft_mem_flush();
    }
    if (gda_ft_soft_cuda_read_staged(t, src, len, refusal, tag,
                                     &staged) != 0) {
        return 1;   /* refused: the owner fails */
    }
    read         = &t->late_reads[t->num_late_reads++];
    read->dst    = dst;
    read->staged = staged;
    read->len    = len;
    return 1;
}

/* The lock of a word's 8 bytes, held until the thread's next flush */
static void gda_ft_soft_cuda_word_lock(gda_ft_soft_cuda_thread_t *t,
                                       const void *addr)
{
    unsigned idx = ((uintptr_t)addr >> 3) % GDA_FT_SOFT_CUDA_WORD_LOCKS;

    if (t->word_locks & UCS_BIT(idx)) {
        return;
    }
    if (pthread_mutex_trylock(&gda_ft_soft_cuda_word_locks[idx]) != 0) {
        gda_ft_soft_mem_flush();   /* ours released: then wait */
        pthread_mutex_lock(&gda_ft_soft_cuda_word_locks[idx]);
    }
    t->word_locks |= UCS_BIT(idx);
}

/* Runs op now: its word read and waited for, its new value queued (the
 * word's lock held until it has landed) */
static void gda_ft_soft_cuda_word_op_now(gda_ft_soft_cuda_thread_t *t,
                                         const gda_ft_soft_word_op_t *op)
{
    uint64_t old = 0, new_value;
    int readable;

    if (t != NULL) {
        gda_ft_soft_cuda_word_lock(t, op->addr);
    }
    readable = gda_ft_soft_mem_copy(&old, GDA_FT_HCA_MEM_HOST, op->addr,
                                    GDA_FT_HCA_MEM_CUDA, op->size,
                                    op->refusal, op->tag) == UCS_OK;
    if (op->run(op, readable, old, &new_value) && readable) {
        gda_ft_soft_mem_copy(op->addr, GDA_FT_HCA_MEM_CUDA, &new_value,
                             GDA_FT_HCA_MEM_HOST, op->size, op->refusal,
                             op->tag);
    }
}

void gda_ft_soft_mem_word_op(const gda_ft_soft_word_op_t *op)
{
    gda_ft_soft_cuda_thread_t *t;
    gda_ft_soft_cuda_word_t *word;
    size_t staged;
    int w, ret;

    t = gda_ft_soft_cuda_thread_ready();
    if ((t == NULL) || !gda_ft_soft_engine.config.cuda_atomic_batch ||
        !gda_ft_soft_cuda_stageable(t, sizeof(uint64_t))) {
        gda_ft_soft_cuda_word_op_now(t, op);
        return;
    }

    /* room for its op and its word's read; a word queued with another
     * width goes first */
    w = gda_ft_soft_cuda_word_find(t, op->addr, op->size);
    if ((t->num_word_ops == GDA_FT_SOFT_CUDA_WORD_OPS) ||
        ((t->queued + sizeof(uint64_t)) > GDA_FT_SOFT_CUDA_STAGING) ||
        ((w >= 0) && ((t->words[w].addr != op->addr) ||
                      (t->words[w].size != op->size)))) {
        gda_ft_soft_mem_flush();
    }
    gda_ft_soft_cuda_word_lock(t, op->addr);   /* may flush */

    w = gda_ft_soft_cuda_word_find(t, op->addr, op->size);
    if (w < 0) {
        ret = gda_ft_soft_cuda_read_staged(t, op->addr, op->size,
                                           op->refusal, op->tag, &staged);
        w              = t->num_words++;
        word           = &t->words[w];
        word->addr     = op->addr;
        word->size     = op->size;
        word->staged   = staged;
        word->readable = (ret == 0);
        word->last     = NULL;
    }
    t->word_ops[t->num_word_ops]   = *op;
    t->word_of_op[t->num_word_ops] = w;
    ++t->num_word_ops;
}

/* Whether the CUDA runtime is loaded (on first use) */
static int gda_ft_soft_cuda_load_once(void)
{
    pthread_once(&gda_ft_soft_cuda_once, gda_ft_soft_cuda_load);
    return gda_ft_soft_cuda_loaded;
}

ucs_status_t gda_ft_soft_mem_prepare(gda_ft_hca_mem_type_t type)
{
    if ((type == GDA_FT_HCA_MEM_CUDA) && !gda_ft_soft_cuda_load_once()) {
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

void gda_ft_soft_mem_thread_prepare(void)
{
    if (gda_ft_soft_cuda_loaded) {
        (void)gda_ft_soft_cuda_thread_get();   /* failures logged there */
    }
}

#if defined(__SANITIZE_THREAD__)
/* Copies up to this size are placed as ordered word stores under TSan */
#define GDA_FT_SOFT_ORDERED_COPY_MAX 64

/*
 * A copy as ThreadSanitizer should see the HCA's DMA: stores in address
 * order, each a release store of the largest aligned word. A CPU that reads
 * a word an RDMA write stores last (a mailbox's epoch) with an acquire load
 * then reads what came before it after it, as the transport's protocol
 * has it; plain memcpy stores would make every such read a reported race.
 * Only small writes (the words of a mailbox) go this way: bulk data is
 * read after its completion, whose CQE orders it, and word by word it
 * slowed the engine enough to change the soft HCA tests' timing.
 */
static void gda_ft_soft_mem_copy_ordered(void *dst, const void *src,
                                         size_t len)
{
    uint8_t *d       = dst;
    const uint8_t *s = src;
    uint64_t w64;
    uint32_t w32;
    uint16_t w16;
    size_t size;

    for (; len > 0; d += size, s += size, len -= size) {
        if ((len >= 8) && !((uintptr_t)d & 7)) {
            memcpy(&w64, s, sizeof(w64));
            __atomic_store_n((uint64_t*)d, w64, __ATOMIC_RELEASE);
            size = sizeof(w64);
        } else if ((len >= 4) && !((uintptr_t)d & 3)) {
            memcpy(&w32, s, sizeof(w32));
            __atomic_store_n((uint32_t*)d, w32, __ATOMIC_RELEASE);
            size = sizeof(w32);
        } else if ((len >= 2) && !((uintptr_t)d & 1)) {
            memcpy(&w16, s, sizeof(w16));
            __atomic_store_n((uint16_t*)d, w16, __ATOMIC_RELEASE);
            size = sizeof(w16);
        } else {
            __atomic_store_n(d, *s, __ATOMIC_RELEASE);
            size = 1;
        }
    }
}
#endif

ucs_status_t gda_ft_soft_mem_copy(void *dst, gda_ft_hca_mem_type_t dst_type,
                                  const void *src,
                                  gda_ft_hca_mem_type_t src_type, size_t len,
                                  gda_ft_soft_refusal_t *refusal, uint32_t tag)
{
    gda_ft_soft_cuda_thread_t *t;
    int ret;

    if (len == 0) {
        return UCS_OK;
    }

    if ((dst_type != GDA_FT_HCA_MEM_CUDA) &&
        (src_type != GDA_FT_HCA_MEM_CUDA)) {
        gda_ft_soft_mem_flush();   /* a signal lands behind its data */
#if defined(__SANITIZE_THREAD__)
        if (len <= GDA_FT_SOFT_ORDERED_COPY_MAX) {
            gda_ft_soft_mem_copy_ordered(dst, src, len);
            return UCS_OK;
        }
#endif
        memcpy(dst, src, len);
        return UCS_OK;
    }

    t = gda_ft_soft_cuda_thread_ready();
    if (t == NULL) {
        gda_ft_soft_refusal_note(refusal, tag);   /* failures logged there */
        return UCS_ERR_IO_ERROR;
    }

    /* a write of bytes a queued word op changes, or a copy waited for
     * (which frees the staging area that the ops' words were read into),
     * goes behind the ops */
    if (((t->num_word_ops > 0) || (t->num_late_reads > 0)) &&
        ((src_type == GDA_FT_HCA_MEM_CUDA) ||
         (gda_ft_soft_cuda_word_find(t, dst, len) >= 0) ||
         !gda_ft_soft_cuda_stageable(t, len))) {
        gda_ft_soft_mem_flush();
    }

    if ((src_type != GDA_FT_HCA_MEM_CUDA) &&
        gda_ft_soft_cuda_queue_write(t, dst, src, len, refusal, tag)) {
        return UCS_OK;
    }

    /* a read of device memory (or a write too large to stage), waited
     * for: in stream order behind what is queued, which lands with it (the
     * staging area is free again) */
    gda_ft_soft_cuda_copies_queue(&t->writes, t->stream);
    ret = gda_ft_soft_cuda_copy_async(
            dst, src, len,
            (src_type != GDA_FT_HCA_MEM_CUDA) ? GDA_FT_CUDA_MEMCPY_H2D :
            (dst_type != GDA_FT_HCA_MEM_CUDA) ? GDA_FT_CUDA_MEMCPY_D2H :
                                                GDA_FT_CUDA_MEMCPY_D2D,
            t->stream);
    if (ret == 0) {
        ret = gda_ft_soft_cuda_wait(gda_ft_soft_cuda.stream_sync, t->stream);
        t->queued = 0;
    }
    if (ret != 0) {
        ucs_error("soft HCA: cudaMemcpyAsync(%p, %p, %zu) failed: %d", dst,
                  src, len, ret);
        gda_ft_soft_refusal_note(refusal, tag);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}
