// CPU stand-ins for the CUDA built-ins that bundle/fused_cuda.cu uses, so that its kernels compile
// with g++ and run with one OS thread per CUDA thread (tests/test_fused_cuda_cpu.py). A block's
// __syncthreads is a pthread barrier of its NT threads, a warp's __syncwarp one of its 32; its shared
// memory is a per-block array; atomics and fences are the compiler's sequentially consistent ones
// (stronger than the GPU's). A cluster (the blocks launched together) has a split barrier like the
// GPU's: arrive adds one to a counter (release) and goes on, wait spins until every thread of the
// cluster has arrived as often as this thread has waited (acquire); the first four warps of block 0
// sleep after they arrive, so that work misplaced between an arrive and its wait races visibly.
// Another block's shared memory is its array at the same offset.
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <unistd.h>

struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }
struct alignas(8) float2 { float x, y; };
static inline float2 make_float2(float a, float b) { return float2{a, b}; }
struct emu_dim { int x; };
thread_local emu_dim threadIdx, blockIdx;
thread_local pthread_barrier_t* emu_block_barrier;
thread_local float4* emu_shared;
thread_local pthread_barrier_t* emu_warp_barrier;
static unsigned emu_cluster_arrivals;            // the cluster's arrivals so far (reset by the harness per launch)
static unsigned emu_cluster_threads;             // threads of the cluster
thread_local unsigned emu_cluster_phase;         // waits this thread has passed
static float4** emu_shared_blocks;               // the shared arrays of the blocks launched together

static inline void __syncthreads() { pthread_barrier_wait(emu_block_barrier); }
static inline void __syncwarp() { pthread_barrier_wait(emu_warp_barrier); }
static inline void emu_cluster_arrive() {
    __atomic_fetch_add(&emu_cluster_arrivals, 1u, __ATOMIC_RELEASE);
    if (blockIdx.x == 0 && threadIdx.x < 128) usleep(20000);
}
static inline void emu_cluster_wait() {
    const unsigned target = ++emu_cluster_phase * emu_cluster_threads;
    while (__atomic_load_n(&emu_cluster_arrivals, __ATOMIC_ACQUIRE) < target) sched_yield();
}
// Shared-window addresses: a block's shared address is its byte offset in the block's array; a
// shared::cluster address is that offset with the block's rank in the top 8 bits.
static inline size_t __cvta_generic_to_shared(const void* p) {
    return static_cast<size_t>(static_cast<const char*>(p) - reinterpret_cast<const char*>(emu_shared));
}
static inline unsigned emu_cluster_addr(unsigned a, unsigned rank) { return (rank << 24) | a; }
static inline float emu_cluster_load(unsigned addr) {
    return *reinterpret_cast<const float*>(reinterpret_cast<const char*>(emu_shared_blocks[addr >> 24]) +
                                           (addr & 0xffffffu));
}
static inline void emu_cluster_load4(unsigned addr, float (&v)[4]) {
    for (int i = 0; i < 4; ++i) v[i] = emu_cluster_load(addr + 4u * i);
}
// Transaction barriers (the pushed exchange): 16 bytes of the block's shared memory hold the completed phases,
// the pending arrivals, the transaction bytes still expected (negative while bytes run ahead of their
// expect_tx, as on the GPU) and the arrivals per phase; one lock orders every barrier operation (release and
// acquire). A bulk copy is a memcpy into the other block's shared memory, then its bytes completed on that
// block's barrier; it refuses sizes and addresses that are not multiples of 16, as the GPU does.
struct emu_mbar { int phase, pending, tx, count; };
static pthread_mutex_t emu_mbar_lock = PTHREAD_MUTEX_INITIALIZER;
static inline emu_mbar* emu_mbar_at(float4* base, unsigned offset) {
    return reinterpret_cast<emu_mbar*>(reinterpret_cast<char*>(base) + offset);
}
static inline void emu_mbar_settle(emu_mbar* m) {
    if (m->pending == 0 && m->tx == 0) {
        ++m->phase;
        m->pending = m->count;
    }
}
static inline void emu_mbar_init(unsigned bar) {
    pthread_mutex_lock(&emu_mbar_lock);
    *emu_mbar_at(emu_shared, bar) = emu_mbar{0, 1, 0, 1};
    pthread_mutex_unlock(&emu_mbar_lock);
}
static inline void emu_mbar_expect(unsigned bar, unsigned bytes) {
    pthread_mutex_lock(&emu_mbar_lock);
    emu_mbar* m = emu_mbar_at(emu_shared, bar);
    m->tx += static_cast<int>(bytes);
    m->pending -= 1;
    emu_mbar_settle(m);
    pthread_mutex_unlock(&emu_mbar_lock);
}
// A wait that sees no completion for 120 s stops the harness with one line (a hang on the GPU).
static inline unsigned emu_mbar_done(unsigned bar, unsigned parity) {
    thread_local unsigned misses = 0;
    thread_local std::chrono::steady_clock::time_point first_miss;
    pthread_mutex_lock(&emu_mbar_lock);
    const unsigned done = (static_cast<unsigned>(emu_mbar_at(emu_shared, bar)->phase) & 1u) != parity;
    pthread_mutex_unlock(&emu_mbar_lock);
    if (done) {
        misses = 0;
        return done;
    }
    if (misses++ == 0) first_miss = std::chrono::steady_clock::now();
    if (misses % 4096 == 0 && std::chrono::steady_clock::now() - first_miss > std::chrono::seconds(120)) {
        std::fprintf(stderr, "transaction barrier at %u (parity %u) of block %d never completed\n", bar, parity,
                     blockIdx.x);
        std::abort();
    }
    sched_yield();
    return done;
}
// A bulk copy is done by a thread of its own after a random delay of up to 5 ms, which reads the source only
// then, so that the issuing thread goes on at once (as on the GPU) and a missing wait, or a source reused too
// early, shows; emu_copies_in_flight counts the copies not yet done (the harness waits for none left).
static std::atomic<int> emu_copies_in_flight{0};
static inline void emu_bulk_copy(unsigned dst, unsigned src, unsigned bytes, unsigned bar) {
    if (bytes % 16 || (dst & 0xffffffu) % 16 || src % 16 || (bar & 0xffffffu) % 8) std::abort();
    thread_local unsigned seed = 2654435761u * (1u + threadIdx.x + 4096u * blockIdx.x);
    const unsigned delay = rand_r(&seed) % 5000;
    const char* from = reinterpret_cast<const char*>(emu_shared) + src;
    emu_copies_in_flight.fetch_add(1);
    std::thread([=] {
        usleep(delay);
        std::memcpy(reinterpret_cast<char*>(emu_shared_blocks[dst >> 24]) + (dst & 0xffffffu), from, bytes);
        pthread_mutex_lock(&emu_mbar_lock);
        emu_mbar* m = emu_mbar_at(emu_shared_blocks[bar >> 24], bar & 0xffffffu);
        m->tx -= static_cast<int>(bytes);
        emu_mbar_settle(m);
        pthread_mutex_unlock(&emu_mbar_lock);
        emu_copies_in_flight.fetch_sub(1);
    }).detach();
}
static inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned atomicMax(unsigned* p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static inline float __ldcg(const float* p) {
    float r;
    __atomic_load(p, &r, __ATOMIC_ACQUIRE);
    return r;
}
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __cluster_dims__(...)
