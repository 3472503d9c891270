/*
 * What a warp's memory operations cost around WQE stores to host-mapped
 * memory (not a test; the numbers behind the doorbell sequence and the
 * reservation's layout in device/, docs/device-datapath.md "Post rate").
 *
 * One warp, ITERATIONS times each pattern, ns per iteration, printed from
 * the last of four repetitions. "WQEs" is each lane storing a 64-byte WQE
 * into a host-mapped ring; the doorbell record, the doorbell and `ready`
 * are lane 0's.
 *
 *   gda_ft_gpu_fences
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#define ITERATIONS 4000
#define RING_WQES  4096

enum {
    P_WQES, P_WQES_FENCE, P_WQES_LOAD, P_WQES_ACQUIRE, P_LOAD, P_CAS,
    P_RELEASE, P_DOORBELL, P_DB_FENCE_TWICE, P_DB_FENCE_TWICE_READY,
    P_DB_RELEASES_READY, P_DB_RELEASES_READY_RELAXED,
    P_CHASE, P_CHASE_STORE_LINE, P_CHASE_STORE_OTHER, P_CHASE_CAS_LINE,
    P_CHASE_RELEASE_SYS, P_COUNT
};

static const char *pattern_name[P_COUNT] = {
    "WQEs",
    "WQEs, fence.sc.sys",
    "WQEs, a volatile load of GPU memory",
    "WQEs, an acquire load of GPU memory",
    "a volatile load of GPU memory",
    "an acquiring CAS on GPU memory",
    "a release store to GPU memory",
    "a doorbell store alone",
    "WQEs, fence, record (release), fence, doorbell",
    "the same, then ready (release)",
    "WQEs, record (release), fence, doorbell, ready (release)",
    "WQEs, record (release), doorbell (release), ready (relaxed)",
    "two dependent plain loads of GPU memory",
    "the same, a plain store to their 128-byte line before",
    "the same, a plain store to another line before",
    "the same, a relaxed CAS on their line before",
    "the same, a release store (sys) to host memory before"
};

__device__ static uint64_t fences_now(void)
{
    uint64_t t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ static uint64_t fences_load_acq(const uint64_t *p)
{
    uint64_t v;

    asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p)
                 : "memory");
    return v;
}

__device__ static void fences_store_rel(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.gpu.u64 [%0], %1;" :: "l"(p), "l"(v)
                 : "memory");
}

__device__ static void fences_store_rel_sys32(uint32_t *p, uint32_t v)
{
    asm volatile("st.release.sys.u32 [%0], %1;" :: "l"(p), "r"(v)
                 : "memory");
}

__device__ static void fences_store_rel_sys64(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.u64 [%0], %1;" :: "l"(p), "l"(v)
                 : "memory");
}

__device__ static uint64_t fences_cas_acq(uint64_t *p, uint64_t expect,
                                          uint64_t desired)
{
    uint64_t found;

    asm volatile("atom.acquire.gpu.cas.b64 %0, [%1], %2, %3;"
                 : "=l"(found) : "l"(p), "l"(expect), "l"(desired)
                 : "memory");
    return found;
}

__global__ void fences_kernel(int pattern, uint4 *ring, uint64_t *db,
                              uint32_t *dbrec, uint64_t *words,
                              uint64_t *ns)
{
    unsigned lane = threadIdx.x;
    uint64_t sum  = 0, start;
    uint64_t *chase = words + 64, *link = chase;
    uint4 *wqe;
    int i;

    if (lane == 0) {
        chase[0] = (uint64_t)chase;   /* warms L1 */
        sum     += chase[1];
    }
    __syncwarp();
    start = fences_now();
    for (i = 0; i < ITERATIONS; ++i) {
        if (pattern >= P_CHASE) {
            /* lane 0 follows a pointer to itself and loads beside it: is
             * a channel's unchanging field still in L1 after what a post
             * does to its line? */
            if (lane == 0) {
                if (pattern == P_CHASE_STORE_LINE) {
                    *(volatile uint64_t*)&chase[5] = i;
                } else if (pattern == P_CHASE_STORE_OTHER) {
                    *(volatile uint64_t*)&chase[40] = i;
                } else if (pattern == P_CHASE_CAS_LINE) {
                    atomicCAS((unsigned long long*)&chase[6], i, i + 1);
                } else if (pattern == P_CHASE_RELEASE_SYS) {
                    fences_store_rel_sys32(dbrec, i);
                }
                link  = (uint64_t*)link[0];
                sum  += link[1];
            }
            __syncwarp();
            continue;
        }
        if ((pattern != P_LOAD) && (pattern != P_CAS) &&
            (pattern != P_RELEASE) && (pattern != P_DOORBELL)) {
            wqe    = ring + ((i * 32 + lane) % RING_WQES) * 4;
            wqe[0] = make_uint4(i, lane, i, lane);
            wqe[1] = wqe[0];
            wqe[2] = wqe[0];
            wqe[3] = wqe[0];
        }
        switch (pattern) {
        case P_WQES_FENCE:
            __threadfence_system();
            break;
        case P_WQES_LOAD:
        case P_LOAD:
            sum += *(volatile uint64_t*)&words[lane & 1];
            break;
        case P_WQES_ACQUIRE:
            sum += fences_load_acq(&words[0]);
            break;
        case P_CAS:
            if (lane == 0) {
                sum += fences_cas_acq(&words[1], i, i + 1);
            }
            break;
        case P_RELEASE:
            if (lane == 0) {
                fences_store_rel(&words[2], i);
            }
            break;
        case P_DOORBELL:
            if (lane == 0) {
                *(volatile uint64_t*)db = i;
            }
            break;
        case P_DB_FENCE_TWICE:
        case P_DB_FENCE_TWICE_READY:
            __threadfence_system();
            if (lane == 0) {
                fences_store_rel_sys32(dbrec, i);
                __threadfence_system();
                *(volatile uint64_t*)db = i;
                if (pattern == P_DB_FENCE_TWICE_READY) {
                    fences_store_rel(&words[2], i);
                }
            }
            break;
        case P_DB_RELEASES_READY:
            if (lane == 0) {
                fences_store_rel_sys32(dbrec, i);
                __threadfence_system();
                *(volatile uint64_t*)db = i;
                fences_store_rel(&words[2], i);
            }
            break;
        case P_DB_RELEASES_READY_RELAXED:
            if (lane == 0) {
                fences_store_rel_sys32(dbrec, i);
                fences_store_rel_sys64(db, i);
                *(volatile uint64_t*)&words[2] = i;
            }
            break;
        }
        __syncwarp();
    }
    if (lane == 0) {
        ns[pattern] = (fences_now() - start) / ITERATIONS;
    }
    if ((sum == 1) || (link == NULL)) {
        words[3] = sum;   /* keeps the loads */
    }
}

#define FENCES_CHECK(_call) \
    do { \
        cudaError_t _err = (_call); \
        if (_err != cudaSuccess) { \
            fprintf(stderr, "%s: %s\n", #_call, cudaGetErrorString(_err)); \
            return (_err == cudaErrorNoDevice) ? 77 : 1; \
        } \
    } while (0)

int main(void)
{
    uint64_t *db, *words, *ns, host_ns[P_COUNT];
    uint32_t *dbrec;
    uint4 *ring;
    int rep, p;

    FENCES_CHECK(cudaHostAlloc((void**)&ring, RING_WQES * 64,
                               cudaHostAllocMapped));
    FENCES_CHECK(cudaHostAlloc((void**)&db, 4096, cudaHostAllocMapped));
    dbrec = (uint32_t*)(db + 64);
    FENCES_CHECK(cudaMalloc((void**)&words, 4096));
    FENCES_CHECK(cudaMalloc((void**)&ns, sizeof(host_ns)));
    for (rep = 0; rep < 4; ++rep) {
        for (p = 0; p < P_COUNT; ++p) {
            FENCES_CHECK(cudaMemset(words, 0, 4096));
            fences_kernel<<<1, 32>>>(p, ring, db, dbrec, words, ns);
            FENCES_CHECK(cudaDeviceSynchronize());
        }
    }
    FENCES_CHECK(cudaMemcpy(host_ns, ns, sizeof(host_ns),
                            cudaMemcpyDeviceToHost));
    for (p = 0; p < P_COUNT; ++p) {
        printf("%-60s %6llu ns\n", pattern_name[p],
               (unsigned long long)host_ns[p]);
    }
    return 0;
}
