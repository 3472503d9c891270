/*
 * A stand-in for the CUDA runtime, for tests on machines without a GPU: the
 * calls the software HCA makes on GPU memory, where "device memory" is host
 * memory the test registered as CUDA memory. A stream's copies run in
 * order on a thread of the stream's own, each GDA_FT_FAKE_CUDART_COPY_US
 * microseconds (default 0) after the one before it, as a copy engine runs
 * them after the call has returned; an event is done once the stream has
 * run everything queued before it was recorded.
 *
 * Built as libcudart.so (its soname), which the software HCA finds among
 * the libraries a test process has loaded (gda_ft_cudart_open).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_CUDA_SUCCESS         0
#define FAKE_CUDA_INVALID_VALUE   1
#define FAKE_CUDA_MEMORY          2
#define FAKE_CUDA_NOT_READY       600
#define FAKE_CUDA_MEMCPY_D2H      2

typedef struct fake_item {
    struct fake_item *next;
    void             *dst;       /* a copy; NULL: an event's marker */
    const void       *src;
    size_t            len;
    uint64_t          seq;       /* the marker's record */
    struct fake_event *event;
} fake_item_t;

typedef struct fake_stream {
    pthread_mutex_t lock;
    pthread_cond_t  cond;        /* an item queued, run, or stop */
    pthread_t       thread;
    fake_item_t    *head, *tail;
    int             busy;        /* running an item taken off the queue */
    int             stop;
} fake_stream_t;

typedef struct fake_event {
    fake_stream_t *stream;       /* of the last record; NULL: none */
    uint64_t       recorded;     /* the last record */
    uint64_t       done;         /* the last record its stream ran */
} fake_event_t;

static uint64_t fake_copies_started;
static uint64_t fake_streams_created;
static uint64_t fake_records;
static uint64_t fake_queries;
static uint64_t fake_batches;
static uint64_t fake_batched_copies;
static uint64_t fake_word_reads;
static uint64_t fake_device_reads;

/* Copies the streams ran or are running (for tests) */
/* Events recorded, and asked about (cudaEventQuery), so far (for tests) */
uint64_t gda_ft_fake_cudart_event_records(void)
{
    return __atomic_load_n(&fake_records, __ATOMIC_RELAXED);
}

uint64_t gda_ft_fake_cudart_event_queries(void)
{
    return __atomic_load_n(&fake_queries, __ATOMIC_RELAXED);
}

uint64_t gda_ft_fake_cudart_copies_started(void)
{
    return __atomic_load_n(&fake_copies_started, __ATOMIC_RELAXED);
}

/* Streams created so far (for tests) */
uint64_t gda_ft_fake_cudart_streams_created(void)
{
    return __atomic_load_n(&fake_streams_created, __ATOMIC_RELAXED);
}

/* cudaMemcpyAsync calls that named a copy out of device memory into host
 * memory, and those of 8 bytes or fewer: the words of atomics (for
 * tests) */
uint64_t gda_ft_fake_cudart_device_reads(void)
{
    return __atomic_load_n(&fake_device_reads, __ATOMIC_RELAXED);
}

uint64_t gda_ft_fake_cudart_word_reads(void)
{
    return __atomic_load_n(&fake_word_reads, __ATOMIC_RELAXED);
}

/* cudaMemcpyBatchAsync calls, and the copies they queued (for tests) */
uint64_t gda_ft_fake_cudart_batches(void)
{
    return __atomic_load_n(&fake_batches, __ATOMIC_RELAXED);
}

uint64_t gda_ft_fake_cudart_batched_copies(void)
{
    return __atomic_load_n(&fake_batched_copies, __ATOMIC_RELAXED);
}

static unsigned fake_copy_us(void)
{
    const char *value = getenv("GDA_FT_FAKE_CUDART_COPY_US");

    return (value != NULL) ? (unsigned)strtoul(value, NULL, 0) : 0;
}

static uint64_t fake_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

/* A copy engine's latency: spun below a millisecond (a sleep that short
 * takes tens of microseconds more), slept above */
static void fake_delay_us(unsigned us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000l};
    uint64_t end;

    if (us >= 1000) {
        while (nanosleep(&ts, &ts) != 0) {
        }
        return;
    }
    for (end = fake_now_us() + us; fake_now_us() < end;) {
    }
}

/*
 * A copy engine's DMA, outside the program's memory model: under
 * ThreadSanitizer it is not instrumented, as the DMA of a real device is
 * not. (A QP left for a stall may read, as a NIC does, a buffer that the
 * replay of its op on the other path has completed and its owner reuses;
 * what it read is never delivered.) The copy goes word by word through
 * volatile pointers, which no memcpy call replaces.
 */
#if defined(__SANITIZE_THREAD__)
__attribute__((no_sanitize_thread))
#endif
static void fake_copy(void *dst, const void *src, size_t len)
{
    volatile uint8_t *d       = dst;
    const volatile uint8_t *s = src;

    if (!(((uintptr_t)dst | (uintptr_t)src) & 7)) {
        for (; len >= 8; d += 8, s += 8, len -= 8) {
            *(volatile uint64_t*)d = *(const volatile uint64_t*)s;
        }
    }
    for (; len > 0; ++d, ++s, --len) {
        *d = *s;
    }
}

static void *fake_stream_thread(void *arg)
{
    fake_stream_t *s = arg;
    unsigned delay   = fake_copy_us();
    fake_item_t *item;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while ((s->head == NULL) && !s->stop) {
            pthread_cond_wait(&s->cond, &s->lock);
        }
        if (s->head == NULL) {
            break;
        }
        item    = s->head;
        s->head = item->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        s->busy = 1;
        pthread_mutex_unlock(&s->lock);

        if (item->dst != NULL) {
            __atomic_fetch_add(&fake_copies_started, 1, __ATOMIC_RELAXED);
            if (delay > 0) {
                fake_delay_us(delay);
            }
            fake_copy(item->dst, item->src, item->len);
        }

        pthread_mutex_lock(&s->lock);
        if ((item->dst == NULL) && (item->event->stream == s) &&
            (item->seq > item->event->done)) {
            item->event->done = item->seq;
        }
        s->busy = 0;
        free(item);
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static int fake_enqueue(fake_stream_t *s, fake_item_t *item)
{
    pthread_mutex_lock(&s->lock);
    item->next = NULL;
    if (s->tail != NULL) {
        s->tail->next = item;
    } else {
        s->head = item;
    }
    s->tail = item;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return FAKE_CUDA_SUCCESS;
}

int cudaGetDevice(int *device)
{
    *device = 0;
    return FAKE_CUDA_SUCCESS;
}

int cudaSetDevice(int device)
{
    return (device == 0) ? FAKE_CUDA_SUCCESS : FAKE_CUDA_INVALID_VALUE;
}

int cudaStreamCreateWithFlags(void **stream, unsigned flags)
{
    fake_stream_t *s = calloc(1, sizeof(*s));

    (void)flags;
    if (s == NULL) {
        return FAKE_CUDA_MEMORY;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, fake_stream_thread, s) != 0) {
        free(s);
        return FAKE_CUDA_MEMORY;
    }
    __atomic_fetch_add(&fake_streams_created, 1, __ATOMIC_RELAXED);
    *stream = s;
    return FAKE_CUDA_SUCCESS;
}

int cudaStreamSynchronize(void *stream)
{
    fake_stream_t *s = stream;

    pthread_mutex_lock(&s->lock);
    while ((s->head != NULL) || s->busy) {
        pthread_cond_wait(&s->cond, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return FAKE_CUDA_SUCCESS;
}

int cudaStreamDestroy(void *stream)
{
    fake_stream_t *s = stream;

    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);   /* after what was queued */
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return FAKE_CUDA_SUCCESS;
}

/* Memory a copy may not touch, as the runtime refuses memory freed while
 * registered (for tests): [from, to) */
static uintptr_t fake_refused_from, fake_refused_to;
static uint64_t fake_refusals;

void gda_ft_fake_cudart_refuse(const void *addr, size_t len)
{
    __atomic_store_n(&fake_refused_to, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&fake_refused_from, (uintptr_t)addr, __ATOMIC_RELEASE);
    __atomic_store_n(&fake_refused_to, (uintptr_t)addr + len,
                     __ATOMIC_RELEASE);
}

/* Copies refused so far (for tests) */
uint64_t gda_ft_fake_cudart_refusals(void)
{
    return __atomic_load_n(&fake_refusals, __ATOMIC_RELAXED);
}

static int fake_refused(const void *ptr, size_t len)
{
    uintptr_t from = __atomic_load_n(&fake_refused_from, __ATOMIC_ACQUIRE);
    uintptr_t to   = __atomic_load_n(&fake_refused_to, __ATOMIC_ACQUIRE);

    return ((uintptr_t)ptr < to) && (from < (uintptr_t)ptr + len);
}

int cudaMemcpyAsync(void *dst, const void *src, size_t len, int kind,
                    void *stream)
{
    fake_item_t *item;

    if ((dst == NULL) || (stream == NULL)) {
        return FAKE_CUDA_INVALID_VALUE;
    }
    if (fake_refused(dst, len) || fake_refused(src, len)) {
        __atomic_fetch_add(&fake_refusals, 1, __ATOMIC_RELAXED);
        return FAKE_CUDA_INVALID_VALUE;
    }
    item = calloc(1, sizeof(*item));
    if (item == NULL) {
        return FAKE_CUDA_MEMORY;
    }
    if (kind == FAKE_CUDA_MEMCPY_D2H) {
        __atomic_fetch_add(&fake_device_reads, 1, __ATOMIC_RELAXED);
        if (len <= sizeof(uint64_t)) {
            __atomic_fetch_add(&fake_word_reads, 1, __ATOMIC_RELAXED);
        }
    }
    item->dst = dst;
    item->src = src;
    item->len = len;
    return fake_enqueue(stream, item);
}

int cudaRuntimeGetVersion(int *version)
{
    *version = 13000;
    return FAKE_CUDA_SUCCESS;
}

/* Device memory everywhere but where refused (freed): cudaMemoryType */
int cudaPointerGetAttributes(int *attrs, const void *ptr)
{
    attrs[0] = fake_refused(ptr, 1) ? 0 : 2;
    return FAKE_CUDA_SUCCESS;
}

/* As CUDA 13 declares it. The copies of a batch run in no set order: here
 * the last first, so that a caller relying on their order fails. It
 * infers each copy's direction from its pointers and takes freed device
 * memory for host memory, which the process faults on: so does this. */
int cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs,
                         const size_t *sizes, size_t count, void *attrs,
                         size_t *attrs_idxs, size_t num_attrs, void *stream)
{
    size_t i;
    int ret;

    if ((count == 0) || (attrs == NULL) || (attrs_idxs == NULL) ||
        (num_attrs == 0) || (num_attrs > count) || (attrs_idxs[0] != 0)) {
        return FAKE_CUDA_INVALID_VALUE;
    }
    for (i = 0; i < count; ++i) {
        if (fake_refused(dsts[i], sizes[i]) ||
            fake_refused(srcs[i], sizes[i])) {
            fprintf(stderr, "stand-in CUDA runtime: cudaMemcpyBatchAsync "
                    "of freed device memory (%p <- %p, %zu): a fault\n",
                    dsts[i], srcs[i], sizes[i]);
            abort();
        }
    }
    for (i = count; i-- > 0;) {
        ret = cudaMemcpyAsync(dsts[i], srcs[i], sizes[i], 4, stream);
        if (ret != FAKE_CUDA_SUCCESS) {
            return ret;
        }
    }
    __atomic_fetch_add(&fake_batches, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&fake_batched_copies, count, __ATOMIC_RELAXED);
    return FAKE_CUDA_SUCCESS;
}

int cudaHostAlloc(void **ptr, size_t size, unsigned flags)
{
    (void)flags;
    return (posix_memalign(ptr, 4096, size) == 0) ? FAKE_CUDA_SUCCESS :
                                                    FAKE_CUDA_MEMORY;
}

int cudaFreeHost(void *ptr)
{
    free(ptr);
    return FAKE_CUDA_SUCCESS;
}

int cudaEventCreateWithFlags(void **event, unsigned flags)
{
    (void)flags;
    *event = calloc(1, sizeof(fake_event_t));
    return (*event != NULL) ? FAKE_CUDA_SUCCESS : FAKE_CUDA_MEMORY;
}

int cudaEventDestroy(void *event)
{
    free(event);
    return FAKE_CUDA_SUCCESS;
}

int cudaEventRecord(void *event, void *stream)
{
    fake_event_t *e   = event;
    fake_stream_t *s  = stream;
    fake_item_t *item = calloc(1, sizeof(*item));

    if (item == NULL) {
        return FAKE_CUDA_MEMORY;
    }
    pthread_mutex_lock(&s->lock);
    e->stream   = s;
    e->recorded = __atomic_add_fetch(&fake_records, 1, __ATOMIC_RELAXED);
    e->done     = 0;
    item->seq   = e->recorded;
    item->event = e;
    pthread_mutex_unlock(&s->lock);
    return fake_enqueue(s, item);
}

int cudaEventQuery(void *event)
{
    fake_event_t *e = event;
    int done;

    __atomic_add_fetch(&fake_queries, 1, __ATOMIC_RELAXED);
    if (e->stream == NULL) {
        return FAKE_CUDA_SUCCESS;
    }
    pthread_mutex_lock(&e->stream->lock);
    done = e->done >= e->recorded;
    pthread_mutex_unlock(&e->stream->lock);
    return done ? FAKE_CUDA_SUCCESS : FAKE_CUDA_NOT_READY;
}

int cudaEventSynchronize(void *event)
{
    fake_event_t *e = event;

    if (e->stream == NULL) {
        return FAKE_CUDA_SUCCESS;
    }
    pthread_mutex_lock(&e->stream->lock);
    while (e->done < e->recorded) {
        pthread_cond_wait(&e->stream->cond, &e->stream->lock);
    }
    pthread_mutex_unlock(&e->stream->lock);
    return FAKE_CUDA_SUCCESS;
}
