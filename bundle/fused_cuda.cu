// rev88-fused, CUDA C++ kernels (kernel tool "cuda": compiled at run time by NVRTC through CuPy's
// RawModule; host side bundle/fused_cuda.py). The bytes of this file are what
// bundle.fused_cuda.kernel_source_sha256 hashes and every record of this kernel names.
//
// The launch layout this source declares, one JSON object on the next line, read by the offline verifier
// from the copy an archive carries (fused_cuda.cu.gz; verify.checks.run_energy.parse_layout):
// threads per training block = unit x (least..most), the cluster update (cluster_split: it may be split;
// push: the pushed exchange), and the shared-memory facts of its layout (bundle.fused_cuda.train_shared_bytes):
// partial_floats between the two partial buffers (PSTR), rows16: 16-row arrays for blocks of up to 16 rows.
// rev88-layout: {"threads": {"unit": 32, "least": 5, "most": 16}, "cluster": true, "cluster_split": true, "push": true, "shared": {"partial_floats": 7556, "rows16": true}}
//
// Same procedure as bundle/fused_kernels.py (spec 2 and 3): the 82-lift 4x - 0.5 plus a zero
// coordinate split into halves of 41, two additive coupling blocks (four bias-free 41x41 branches
// relu -> linear -> x alpha), the 82 -> 10 head with bias, mean cross-entropy, the reversible
// backward with activations rebuilt by subtraction, momentum SGD
//     v <- v*momentum + g;  v <- v + wd*p;  p <- p + (-lr)*v
// in float32 (fmaf, no tensor cores, no TF32), every gradient taken at the pre-step weights.
//
// Training, rev88_train: ONE launch of G blocks (CTAs) of NT = 32 * NW threads; G, ROWS =
// ceil(batch / G), NW, SPLIT and CLUSTER are compile-time constants.
//   * Shared memory, feature-major: an activation array holds feature f of row r at f * RS + r
//     (44 feature rows, 41 live and 3 zero; RS = RP + 4, RP the rows rounded up to 32, or 16 for blocks of
//     up to 16 rows, so that feature rows start in different banks). Arrays: the halves L, R as is and through relu
//     (RL, RR), their gradients dL, dR, and the logits Zt (10 x RS), later the loss gradient.
//     Every block keeps the whole parameter state twice: each branch weight as Wn[o][i] and
//     Wt[i][o] (41 rows of 44 floats, zero past 41), the head as Hn[c][88] (left half in
//     columns 0..40, right in 44..84) and Ht[f][10], the bias. Velocities live in registers:
//     with the cluster, thread t owns the quads of state entries lo + 4t.., lo + 4(t + NT).., ...
//     (ENTRY), else single entries lo + t, lo + t + NT, ...; at 10 to 12 warps it also keeps the shared
//     offsets of the entries it writes in the update, as 16-bit pcode()s (the cluster split's gather:
//     both offsets of each entry it gathers).
//   * Products: a warp computes a 16-feature x 32-row tile of an output, each lane a 4 x 4
//     register tile, k ascending, one float4 of each operand per k (with 16-row arrays a 16 x 16 tile,
//     lanes of 4 x 2, a float4 and a float2 per k: the same sums in the same order, half the
//     instructions of a padded 32-row tile); the lanes are arranged so
//     that both reads of a k are shared by lane pairs (lane_a, lane_b). Weight gradients
//     (41 x 41, a sum over rows) are 4 x 4 lane tiles of features {t, t + 11, t + 22, t + 33},
//     rows ascending, 121 tiles on the 128 lanes of four warps.
//   * Step s, on block b's rows [b*ROWS, (b+1)*ROWS) of the step's batch (none in a short last
//     batch): four forward branches; logits and the mean cross-entropy gradient (a warp per 16
//     rows, or with arrays of 16 or 32 rows, WIDE_LOSS, a warp per 3 rows and a lane per row and class:
//     the same operations, the shorter chain at G >= 4); head and bias partial gradients with dL, dR; the reversible backward, one phase per
//     branch (W3, W2, W1, W0): four warps take the weight's partial gradient while the others take
//     the leaf's gradient and the rebuilt half, or in W0 read step s+1's rows (coalesced; their
//     training indices read at the start of step s) and lift them (relu of the right half after
//     W0). The partial gradient of all 7,554 parameters (state-vector order of spec 3) goes to
//     buffer s mod 2: with CLUSTER in the block's own shared memory (buffers PSTR = 7,556 floats
//     apart, so that 16-byte reads stay aligned; one buffer with SPLIT), else to part[s mod 2][b]
//     in global memory.
//   * The blocks meet, then every block sums the G partials in the fixed order 0..G-1 (every partial
//     read before the first store) and updates its own state (same inputs, same code, so every copy
//     has the same bits), or with SPLIT a slice:
//     - CLUSTER = 1 (2 <= G <= 8, sm_90 on): the G blocks are one thread-block cluster; they meet
//       at the hardware cluster barrier and read each other's partials from distributed shared
//       memory, a quad of adjacent entries per 16-byte read; with SPLIT = 1 block b sums and
//       updates only its slice (CHUNK entries, a multiple of 4) and writes its new parameters into
//       its PUB, the blocks meet at a second cluster barrier, and every block gathers all slices
//       from the G PUBs (16-byte reads, block b from its own slice on: gentry()) into both of its
//       copies: the same operations on the same
//       values as the unsplit update, so the same bits; with PUSH (host exchange "push", blocks of up to 32
//       rows) no cluster barrier in the loop: bulk copies and transaction barriers move the slices instead
//       (see PUSH below), the same sums in the same order;
//     - G = 1: the block's __syncthreads; its partial from global memory;
//     - else a grid barrier (an arrival counter, atomics with release/acquire ordering) and loads
//       that bypass L1; with SPLIT = 1 block b sums and updates only its slice of the state and
//       publishes the new parameters of the slice in pbuf; a second barrier; every block reloads
//       them from pbuf.
//     Two partial buffers make one barrier per step safe: a block writes buffer s mod 2 in step s
//     only after the barrier of step s-1, which every block passes only after its reads of
//     step s-2's partials (with two barriers per step one buffer is enough). The counter gets one
//     arrival per block and barrier in every mode.
//   * All G blocks must be resident at once (a cluster is, by construction; else the host keeps
//     G <= the SM count and checks the shared memory of a block against the device's limit); a
//     grid-barrier wait that spins SPIN_LIMIT times gives up and raises the counter to TIMED_OUT,
//     which releases every later wait and which the host reports.
// Prediction, rev88_predict: blocks of QB query rows, the trained parameters in shared memory;
// float32 logits and the first maximal class (torch.argmax's tie rule).
//
// The summation order differs from cuBLAS's, from the CPU's and from the Triton kernels', so
// final parameters and scores are not their bits; predictions are compared with the frozen ones.

#define HF 41                            // coordinates per half
#define FR 44                            // feature rows of an activation array (41 live, 3 zero)
#define WS 44                            // row stride of a shared weight copy (41 live, 3 zero; 44 = 12 mod 32 banks:
                                         // the update's stores of a transposed copy, rows apart, meet 4-way, not 16)
#define WSZ (HF * WS)                    // floats per shared weight copy (41 rows)
#define NCLS 10                          // classes
#define DIM 82                           // lifted features
#define HN 88                            // row stride of the shared head (halves at 0 and 44)
#define NWT (HF * HF)                    // floats per branch weight in the state vector
#define HEAD_OFF (4 * NWT)               // head.weight (10 x 82) in the state vector
#define BIAS_OFF (HEAD_OFF + NCLS * DIM) // head.bias (10)
#define NSTATE (BIAS_OFF + NCLS)         // 7554
#define OWN 0                            // shared: Wn[b][o][i]
#define OWT (4 * WSZ)                    // Wt[b][i][o]
#define OHN (8 * WSZ)                    // Hn[c][88]
#define OHT (OHN + NCLS * HN)            // Ht[f][10]
#define OB (OHT + DIM * NCLS)            // bias
#define PSZ (OB + 12)                    // shared floats of the parameter state (a multiple of 4)
#define NWG 4                            // warps that take weight gradients
#define NHG 4                            // warps that take the head's gradients
#define TIMED_OUT (1u << 30)

#ifndef NW
#define NW 12
#endif
#define NT (32 * NW)
#ifndef G
#define G 8
#endif
#ifndef ROWS
#define ROWS 16
#endif
#define RP (ROWS <= 16 ? 16 : ((ROWS + 31) / 32) * 32)   // rows of an activation array: 16, or a multiple of 32
#define RS (RP + 4)                      // its feature-row stride
#define TROWS(X) ((X) < 32 ? 16 : 32)    // rows of a product's warp task over X-row arrays (lane tiles 4 x 2, or 4 x 4)
#define NRB (RP / TROWS(RP))             // row blocks of the training arrays
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef CLUSTER
#define CLUSTER 0
#endif
#if SPLIT && CLUSTER
#define CHUNK (((NSTATE + 4 * G - 1) / (4 * G)) * 4)   // state entries a block updates (a multiple of 4)
#elif SPLIT
#define CHUNK ((NSTATE + G - 1) / G)     // state entries a block updates
#else
#define CHUNK NSTATE
#endif
#define QENTRY(t, j) (4 * ((t) + ((j) / 4) * NT) + (j) % 4)   // thread t's j-th entry in quads of adjacent entries
#if CLUSTER
#define ENTRY(t, j) QENTRY(t, j)         // (16-byte reads of distributed shared memory)
#define VR (4 * ((CHUNK + 4 * NT - 1) / (4 * NT)))
#else
#define ENTRY(t, j) ((t) + (j) * NT)
#define VR ((CHUNK + NT - 1) / NT)       // of them per thread (velocities in registers)
#endif
#define GR (4 * ((NSTATE + 4 * NT - 1) / (4 * NT)))       // entries a thread gathers (cluster split)
// The pushed exchange (PUSH: the cluster split with activation arrays of up to 32 rows, G >= 4): the state in
// five regions padded to quads (the four branch weights, 1,684 floats each; the head and the bias, 832), each
// region cut into G slices of whole quads, block c owning [rlo(r, c), rlo(r, c + 1)) of region r. A block's
// partial gradient sits in PART in this padded order; each region's slices are copied (cp.async.bulk, the
// Tensor Memory Accelerator) into the owners' RECV as soon as the phase that wrote the region ends; an owner
// sums its slices in block order, updates them into its STAGE (padded order) and copies them into every
// other block's STAGE; a block moves each region from STAGE into both of its copies just before the forward
// branch that reads it (the head's before the logits). Transaction barriers (mbarrier, expect_tx) count the
// bytes in: one for the partials, one per region for the new parameters. No cluster barrier in the loop.
// The host asks for it (-DPUSH=1; bundle.fused_cuda, exchange "push"); the default is the pulled exchange above.
#ifndef PUSH
#define PUSH 0
#endif
#if PUSH && !(CLUSTER && SPLIT && RP <= 32)
#error "PUSH needs the split cluster update and blocks of up to 32 rows"
#endif
#if PUSH
#define RLEN(r) ((r) < 4 ? 1684 : 832)          // floats of padded region r
#define RBASE(r) (1684 * (r))                   // its first float (the head's region at 6736)
#define PPAD 7568                               // floats of the padded state
#define HSHIFT 12                               // head and bias lie 12 floats later than in the state vector
#define QW ((421 + G - 1) / G)                  // most quads of a branch weight's region one block owns
#define QH ((208 + G - 1) / G)                  // most of the head's
#define SL (16 * QW + 4 * QH)                   // floats of one sender's slot in RECV
#define NBAR 6                                  // transaction barriers: partials in, then new region r (1 + r)
#undef VR
#define VR (4 * ((SL / 4 + NT - 1) / NT))       // the update's entries per thread (quads u = t, t + NT, ... of a slot)
#else
#define RBASE(r) (NWT * (r))
#define HSHIFT 0
#define ASYNC_VISIBLE
#endif
#define NQ ((NSTATE + 3) / 4)           // quads of the state
#define PSTR (((NSTATE + 3) / 4) * 4)   // floats between a cluster block's two partial buffers
#define WIDE_LOSS (RP <= 32)             // logits_loss_wide() (a warp per 3 rows) instead of logits_loss()
#define KEEP_CODES ((!SPLIT || CLUSTER) && NW >= 10 && NW <= 12)  // the update keeps its pcode()s (the cluster split's gather
                                         // its entries' two offsets) in registers (a thread of 10 to
                                         // 12 warps has room for them: ptxas spills at 9 and at 16 warps),
                                         // else it divides in every step
#if CLUSTER && (G < 2 || G > 8)
#error "CLUSTER needs 2 <= G <= 8 blocks (one portable thread-block cluster)"
#endif
#ifndef QB
#define QB 64
#endif
#define QRP (((QB + 31) / 32) * 32)
#define QRS (QRP + 4)

__device__ __forceinline__ float relu(float x) { return x > 0.0f ? x : 0.0f; }
// The cluster split's gather: thread t's j-th entry (j < GR), in quads, the quads rotated by this block's
// slice, so that at any moment the G blocks read from different blocks (block b first its own slice).
__device__ __forceinline__ int gentry(int t, int j) {
    int u = t + (j / 4) * NT;
    if (u < NQ) {
        u += blockIdx.x * (CHUNK / 4);
        if (u >= NQ) u -= NQ;
    }
    return 4 * u + j % 4;
}

// Entry k's place in 16 bits (the update keeps two per register instead of dividing in every step):
// region (0..3 a branch weight, 4 the head, 5 the bias) << 12, then o << 6 | i of a weight (o, i < 41),
// c << 7 | j of the head (c < 10, j < 82), c of the bias; and the two offsets ppos() gives from it.
__device__ __forceinline__ unsigned pcode(int k) {
    if (k < HEAD_OFF) {
        const int b = k / NWT, rem = k - b * NWT, o = rem / HF, i = rem - o * HF;
        return (unsigned)(b << 12 | o << 6 | i);
    }
    if (k < BIAS_OFF) {
        const int rem = k - HEAD_OFF, c = rem / DIM, j = rem - c * DIM;
        return (unsigned)(4 << 12 | c << 7 | j);
    }
    return (unsigned)(5 << 12 | (k - BIAS_OFF));
}
__device__ __forceinline__ void pcode_pos(unsigned code, int& pn, int& pt) {
    const int region = (int)(code >> 12);
    if (region < 4) {
        const int o = (int)(code >> 6) & 63, i = (int)code & 63;
        pn = OWN + region * WSZ + o * WS + i;
        pt = OWT + region * WSZ + i * WS + o;
    } else if (region == 4) {
        const int c = (int)(code >> 7) & 31, j = (int)code & 127;
        pn = OHN + c * HN + (j < HF ? j : j + 3);
        pt = OHT + j * NCLS + c;
    } else {
        pn = OB + ((int)code & 15);
        pt = pn;
    }
}

// Shared offsets of state-vector entry k: its natural copy (pn) and its transposed copy (pt;
// the bias has one copy, pt == pn).
__device__ __forceinline__ void ppos(int k, int& pn, int& pt) {
    if (k < HEAD_OFF) {
        const int b = k / NWT, rem = k - b * NWT, o = rem / HF, i = rem - o * HF;
        pn = OWN + b * WSZ + o * WS + i;
        pt = OWT + b * WSZ + i * WS + o;
    } else if (k < BIAS_OFF) {
        const int rem = k - HEAD_OFF, c = rem / DIM, j = rem - c * DIM;
        pn = OHN + c * HN + (j < HF ? j : j + 3);
        pt = OHT + j * NCLS + c;
    } else {
        pn = OB + (k - BIAS_OFF);
        pt = pn;
    }
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// This block's arrival at a grid barrier: every thread's earlier writes, then (release) the counter.
__device__ __forceinline__ void barrier_arrive(unsigned* sync) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(sync, 1u);
    }
}

// Wait until *sync reaches target (acquire); then the whole block goes on.
__device__ __forceinline__ void barrier_wait(unsigned* sync, unsigned target, unsigned spin_limit) {
    if (threadIdx.x == 0) {
        unsigned seen = load_acquire(sync);
        unsigned spins = 0;
        while (seen < target && spins < spin_limit) {
            seen = load_acquire(sync);
            ++spins;
        }
        if (seen < target) atomicMax(sync, TIMED_OUT);
        __threadfence();
    }
    __syncthreads();
}

// Thread-block cluster (CLUSTER: the G training blocks are one cluster, block b its rank b): the
// cluster barrier in two halves (arrive; wait: until every thread of every block arrived, acquire); the
// shared::cluster address (32 bits) of block rank's copy of this block's shared address p, and a float
// read there (distributed shared memory). What the blocks exchange (partials, new parameters) lives in
// their shared memory only, so the arrive is relaxed after a release fence restricted to this block's
// shared memory at cluster scope: the blocks that read this thread's earlier writes after their wait see
// them. A plain arrive's release also orders global memory, at GPU scope (MEMBAR.ALL.GPU and ERRBAR in
// SASS; about 800 cycles per step at G = 4 and 8 on an H200: docs/results/fused-learner.md).
// The other direction, a block overwriting what another block read from it, is not ordered by these
// fences (the acquire fence over shared::cluster reads does not order them before a relaxed arrive in the
// memory model; it stays because the measured and archived code was compiled with it): every remote
// read's value is summed or stored into the reader's own shared memory before that thread's next arrive,
// so the read has returned before the barrier can complete (a data dependence; a fence.acq_rel.cluster
// would state it in the memory model, at the plain arrive's cost). PTX ISA 8.6.
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("fence.acquire.sync_restrict::shared::cluster.cluster;" : : : "memory");
    asm volatile("fence.release.sync_restrict::shared::cta.cluster;" : : : "memory");
    asm volatile("barrier.cluster.arrive.relaxed;" : : : "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait;" : : : "memory"); }
__device__ __forceinline__ unsigned cluster_addr(const float* p, unsigned rank) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    unsigned r;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
__device__ __forceinline__ void cluster_load4(unsigned addr, float (&v)[4]) {
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "r"(addr) : "memory");
}

// gs[j] = the sum of the G blocks' partials of entry lo + ENTRY(first, j) < hi in block order 0..G-1
// (buffer pb of every block; a quad of adjacent entries per 16-byte read, all read before any store)
__device__ __forceinline__ void cluster_reduce(float (&gs)[VR], const float* pb, int lo, int hi, int first) {
    unsigned peer[G];
#pragma unroll
    for (int q = 0; q < G; ++q) peer[q] = cluster_addr(pb, q);
#pragma unroll
    for (int j = 0; j < VR; j += 4) {
        const int k = lo + ENTRY(first, j);
        if (k < hi) {
            float g[4];
            cluster_load4(peer[0] + 4u * k, g);
#pragma unroll
            for (int q = 1; q < G; ++q) {
                float h[4];
                cluster_load4(peer[q] + 4u * k, h);
#pragma unroll
                for (int c = 0; c < 4; ++c) g[c] += h[c];
            }
#pragma unroll
            for (int c = 0; c < 4; ++c) gs[j + c] = g[c];
        }
    }
}

#if PUSH
// The pushed exchange's PTX (sm_90, PTX ISA 8.0): transaction barriers in this block's shared memory (init with one
// arrival; the arrival that also expects a phase's bytes; a test of a phase's completion by parity, acquire), the
// async proxy fence (this block's shared-memory writes before a bulk copy reads them, and its reads before a
// bulk copy overwrites them), and a bulk copy of bytes from this block's shared memory into another block's
// that completes them on that block's barrier.
__device__ __forceinline__ void mbar_init(unsigned bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" : : "r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory"); }
__device__ __forceinline__ void mbar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ unsigned mbar_done(unsigned bar, unsigned parity) {
    unsigned done;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}
// Wait for a phase's completion. After spin_limit tests, or once another wait gave up (the counter at TIMED_OUT,
// read every 1,024 tests), give up: raise the counter to TIMED_OUT, which the host reports, and go on.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity, unsigned* sync, unsigned spin_limit) {
    unsigned spins = 0;
    while (!mbar_done(bar, parity)) {
        if (++spins >= spin_limit || ((spins & 1023u) == 0 && load_acquire(sync) >= TIMED_OUT)) {
            atomicMax(sync, TIMED_OUT);
            return;
        }
    }
}
__device__ __forceinline__ void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" : : : "memory"); }
__device__ __forceinline__ void bulk_copy(unsigned dst, unsigned src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" : : "r"(dst), "r"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// Every thread that writes what a bulk copy will read fences its writes for the async proxy before the
// __syncthreads after which the copy is issued (and the issuing thread fences again after it).
#define ASYNC_VISIBLE proxy_fence();
// First float of block c's slice of padded region r (c = G: the region's end).
__device__ __forceinline__ int rlo(int r, int c) { return 4 * (c * (RLEN(r) / 4) / G); }
// This block's update quad u of a slot (u < SL / 4): its region r and padded offset kp; false past its slices.
__device__ __forceinline__ bool own_quad(int u, int& r, int& kp) {
    r = u < 4 * QW ? u / QW : 4;
    const int q = u - QW * r, lo = rlo(r, blockIdx.x);
    kp = RBASE(r) + lo + 4 * q;
    return u < SL / 4 && lo + 4 * q < rlo(r, blockIdx.x + 1);
}
// State-vector entry of padded offset kp, or -1 for padding.
__device__ __forceinline__ int unpad(int kp) {
    if (kp < RBASE(4)) {
        const int r = kp / RBASE(1), e = kp - RBASE(r);
        return e < NWT ? r * NWT + e : -1;
    }
    return kp - HSHIFT < NSTATE ? kp - HSHIFT : -1;
}
// Bytes of new parameters of region r that reach block b (every slice but its own), and of partials (its
// slices of every region, from the G - 1 others).
__device__ __forceinline__ unsigned new_bytes(int r, int b) { return 4u * (RLEN(r) - (rlo(r, b + 1) - rlo(r, b))); }
__device__ __forceinline__ unsigned part_bytes(int b) {
    unsigned n = 0;
#pragma unroll
    for (int r = 0; r < 5; ++r) n += rlo(r, b + 1) - rlo(r, b);
    return 4u * (G - 1) * n;
}
// Lane d < G (d != this block) of warp NW - 1 copies this block's partials of region r in d's slice into d's
// RECV, in this block's slot; it completes them on d's partials barrier.
__device__ __forceinline__ void push_partials(const float* part, const float* recv, const unsigned long long* bars,
                                              int r) {
    const int d = threadIdx.x & 31;
    if ((int)(threadIdx.x >> 5) == NW - 1 && d < G && d != (int)blockIdx.x) {
        proxy_fence();
        bulk_copy(cluster_addr(recv + blockIdx.x * SL + 4 * QW * r, (unsigned)d), smem(part + RBASE(r) + rlo(r, d)),
                  4u * (rlo(r, d + 1) - rlo(r, d)), cluster_addr(reinterpret_cast<const float*>(bars), (unsigned)d));
    }
}
// Region r of the new parameters, STAGE (padded order) into both copies, by threads first.. (n of them).
__device__ __forceinline__ void scatter_region(float* P, const float* stage, int r, int first, int n) {
    if (r < 4) {
        for (int e = (int)threadIdx.x - first; e < NWT; e += n) {
            const int o = e / HF, i = e - o * HF;
            const float v = stage[RBASE(r) + e];
            P[OWN + r * WSZ + o * WS + i] = v;
            P[OWT + r * WSZ + i * WS + o] = v;
        }
    } else {
        for (int e = (int)threadIdx.x - first; e < NSTATE - HEAD_OFF; e += n) {
            int pn, pt;
            ppos(HEAD_OFF + e, pn, pt);
            const float v = stage[RBASE(4) + e];
            P[pn] = v;
            P[pt] = v;
        }
    }
}
// Wait for region r's new parameters of the previous step (phase s - 1); thread NT - 1 then arms the next phase.
__device__ __forceinline__ void wait_region(const unsigned long long* bars, int r, int s, int steps, unsigned* sync,
                                            unsigned spin_limit) {
    mbar_wait(smem(bars + 2 * (1 + r)), (unsigned)(s - 1) & 1u, sync, spin_limit);
    if (threadIdx.x == NT - 1 && s + 1 < steps) mbar_expect(smem(bars + 2 * (1 + r)), new_bytes(r, blockIdx.x));
}
#endif

__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float at4(const float4& v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }
// 4 or 2 adjacent floats of an activation row (one 16- or 8-byte access)
__device__ __forceinline__ void ldv(float (&v)[4], const float* p) {
    const float4 q = ld4(p);
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
}
__device__ __forceinline__ void ldv(float (&v)[2], const float* p) {
    const float2 q = *reinterpret_cast<const float2*>(p);
    v[0] = q.x;
    v[1] = q.y;
}
__device__ __forceinline__ void stv(float* p, const float (&v)[4]) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void stv(float* p, const float (&v)[2]) { *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]); }

// c[m][r] = sum_{k < K} A[k * AST + m0 + m] * B[k * BST + r0 + r], k ascending (m < 4, r < NR = 4 or 2).
template <int K, int AST, int BST, int NR>
__device__ __forceinline__ void tile(float (&c)[4][NR], const float* A, int m0, const float* B, int r0) {
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
        for (int r = 0; r < NR; ++r) c[m][r] = 0.0f;
#pragma unroll 8
    for (int k = 0; k < K; ++k) {
        const float4 a = ld4(A + k * AST + m0);
        float b[NR];
        ldv(b, B + k * BST + r0);
#pragma unroll
        for (int m = 0; m < 4; ++m)
#pragma unroll
            for (int r = 0; r < NR; ++r) c[m][r] = fmaf(at4(a, m), b[r], c[m][r]);
    }
}

// A warp's lanes as 4 x 8: lane bits 1, 2 pick one of 4 (lane_a), bits 0, 3, 4 one of 8 (lane_b), so
// that an operand read by lane_a alone is the same for lanes n and n^1 and one read by lane_b alone
// the same for lanes n and n^2: the pairs whose float4 reads share the bank wavefronts.
__device__ __forceinline__ int lane_a() { return (threadIdx.x >> 1) & 3; }
__device__ __forceinline__ int lane_b() { return (threadIdx.x & 1) | ((threadIdx.x >> 2) & 6); }

// Warp task t of a 44-feature output over X rows (3 feature groups x X/TROWS(X) row blocks): this lane's
// feature tile mt (none past 10) and first row r0 (lane tiles of 4 features x TROWS(X)/8 rows); false
// when the lane or its row block is idle.
template <int X>
__device__ __forceinline__ bool row_task(int t, int nr, int& mt, int& r0) {
    const int rb = t / 3;
    mt = 4 * (t - 3 * rb) + lane_a();
    r0 = TROWS(X) * rb + (TROWS(X) / 8) * lane_b();
    return mt < 11 && TROWS(X) * rb < nr;
}

// act[o][r] (+ or -)= alpha * sum_i Wt[i][o] src[i][r]; ract = relu(act). src: a relu'd half.
template <int X, bool ADD>
__device__ __forceinline__ void branch_task(float* act, float* ract, const float* src, const float* Wt, float alpha,
                                            int t, int nr) {
    constexpr int NR = TROWS(X) / 8;
    int mt, r0;
    if (!row_task<X>(t, nr, mt, r0)) return;
    float c[4][NR];
    tile<HF, WS, X + 4, NR>(c, Wt, 4 * mt, src, r0);
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        float* a = act + (4 * mt + m) * (X + 4) + r0;
        float v[NR], q[NR];
        ldv(v, a);
#pragma unroll
        for (int r = 0; r < NR; ++r) {
            v[r] = ADD ? v[r] + c[m][r] * alpha : v[r] - c[m][r] * alpha;
            q[r] = relu(v[r]);
        }
        stv(a, v);
        stv(ract + (4 * mt + m) * (X + 4) + r0, q);
    }
}

// dacc[i][r] += alpha * sum_o Wn[o][i] d[o][r] where leaf[i][r] > 0 (the leaf's gradient;
// relu(h) > 0 exactly where h > 0).
__device__ __forceinline__ void leaf_task(float* dacc, const float* d, const float* leaf, const float* Wn, float alpha,
                                          int t, int nr) {
    constexpr int NR = TROWS(RP) / 8;
    int mt, r0;
    if (!row_task<RP>(t, nr, mt, r0)) return;
    float c[4][NR];
    tile<HF, WS, RS, NR>(c, Wn, 4 * mt, d, r0);
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        float h[NR], v[NR];
        ldv(h, leaf + (4 * mt + m) * RS + r0);
        float* a = dacc + (4 * mt + m) * RS + r0;
        ldv(v, a);
#pragma unroll
        for (int r = 0; r < NR; ++r)
            if (h[r] > 0.0f) v[r] += c[m][r] * alpha;
        stv(a, v);
    }
}

// grad[o][i] = alpha * sum_{r < nr4} d[o][r] leafr[i][r] (partial, 41 x 41 row-major): warps w < 4,
// lane tile n = 32w + lane < 121 takes o in {ot + 11a}, i in {it + 11b}, a, b < 4, for ot = n mod 11,
// it = n / 11 (121 of the 4 warps' 128 lanes busy).
__device__ __forceinline__ void weight_task(float* grad, const float* d, const float* leafr, int nr4, float alpha,
                                            int w) {
    const int n = 32 * w + (threadIdx.x & 31), ot = n % 11, it = n / 11;
    if (it >= 11) return;
    float c[4][4];
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) c[a][b] = 0.0f;
#pragma unroll 2
    for (int r = 0; r < nr4; r += 4) {
        float4 dv[4], hv[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            dv[j] = ld4(d + (ot + 11 * j) * RS + r);
            hv[j] = ld4(leafr + (it + 11 * j) * RS + r);
        }
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int b = 0; b < 4; ++b) c[a][b] = fmaf(at4(dv[a], q), at4(hv[b], q), c[a][b]);
    }
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const int o = ot + 11 * a, i = it + 11 * b;
            if (o < HF && i < HF) grad[o * HF + i] = c[a][b] * alpha;
        }
}

// Head: its partial gradient gh[c][j] = sum_{r < nr4} g[c][r] half[j][r] (lane tiles of classes
// {ct, ct + 5} x features {fj + 11b} of one half; 110 tiles over warps 0..3) and the bias's
// sum_r g[c][r] (lanes of warp 3 past the tiles).
__device__ __forceinline__ void head_task(float* gp, const float* Zt, const float* L, const float* R, int nr4, int w) {
    const int tile = 32 * w + (threadIdx.x & 31);
    if (tile >= 110) {
        const int c = tile - 110;
        if (c < NCLS) {
            float acc = 0.0f;
            for (int r = 0; r < nr4; r += 4) {
                const float4 z = ld4(Zt + c * RS + r);
                acc += z.x;
                acc += z.y;
                acc += z.z;
                acc += z.w;
            }
            gp[BIAS_OFF + c] = acc;
        }
        return;
    }
    const int ct = tile % 5, ft = tile / 5, h = ft / 11, fj = ft - 11 * h;
    const float* src = h ? R : L;
    float c[2][4];
#pragma unroll
    for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) c[a][b] = 0.0f;
#pragma unroll 2
    for (int r = 0; r < nr4; r += 4) {
        float4 zv[2], hv[4];
#pragma unroll
        for (int a = 0; a < 2; ++a) zv[a] = ld4(Zt + (ct + 5 * a) * RS + r);
#pragma unroll
        for (int b = 0; b < 4; ++b) hv[b] = ld4(src + (fj + 11 * b) * RS + r);
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int a = 0; a < 2; ++a)
#pragma unroll
                for (int b = 0; b < 4; ++b) c[a][b] = fmaf(at4(zv[a], q), at4(hv[b], q), c[a][b]);
    }
#pragma unroll
    for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const int j = fj + 11 * b;
            if (j < HF) gp[HEAD_OFF + (ct + 5 * a) * DIM + h * HF + j] = c[a][b];
        }
}

// The core's upstream gradients: dL[j][r] = sum_c Hn[c][j] g[c][r], dR likewise from columns 44..,
// c ascending. Task t: half t % 2, then as row_task.
__device__ __forceinline__ void upstream_task(float* dL, float* dR, const float* Zt, const float* Hn, int t, int nr) {
    constexpr int NR = TROWS(RP) / 8;
    int mt, r0;
    const int h = t & 1;
    if (!row_task<RP>(t >> 1, nr, mt, r0)) return;
    float c[4][NR];
    tile<NCLS, HN, RS, NR>(c, Hn + 44 * h, 4 * mt, Zt, r0);
    float* dst = h ? dR : dL;
#pragma unroll
    for (int m = 0; m < 4; ++m) stv(dst + (4 * mt + m) * RS + r0, c[m]);
}

// Logits of classes {2ct, 2ct + 1} x rows r0..r0+3 (activation row stride ST): Zt[c][r] =
// (sum_j Ht[j][c] L[j][r] + sum_j Ht[41 + j][c] R[j][r]) + b[c], j ascending.
template <int ST>
__device__ __forceinline__ void logits_tile(float* Zt, const float* L, const float* R, const float* P, int ct, int r0) {
    float a[2][4], b[2][4];
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int r = 0; r < 4; ++r) a[m][r] = b[m][r] = 0.0f;
#pragma unroll 4
    for (int j = 0; j < HF; ++j) {
        const float4 l = ld4(L + j * ST + r0), rr = ld4(R + j * ST + r0);
        const float* hl = P + OHT + j * NCLS + 2 * ct;
        const float* hr = P + OHT + (HF + j) * NCLS + 2 * ct;
#pragma unroll
        for (int m = 0; m < 2; ++m)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                a[m][r] = fmaf(hl[m], at4(l, r), a[m][r]);
                b[m][r] = fmaf(hr[m], at4(rr, r), b[m][r]);
            }
    }
#pragma unroll
    for (int m = 0; m < 2; ++m)
        *reinterpret_cast<float4*>(Zt + (2 * ct + m) * ST + r0) =
            make_float4(a[m][0] + b[m][0] + P[OB + 2 * ct + m], a[m][1] + b[m][1] + P[OB + 2 * ct + m],
                        a[m][2] + b[m][2] + P[OB + 2 * ct + m], a[m][3] + b[m][3] + P[OB + 2 * ct + m]);
}

// Logits of every row below nr (prediction): lane tiles of class pairs x 4 rows over every thread.
template <int X>
__device__ __forceinline__ void logits(float* Zt, const float* L, const float* R, const float* P, int nr) {
    for (int tile = threadIdx.x; tile < 5 * (X / 4); tile += NT) {
        const int ct = tile / (X / 4), r0 = 4 * (tile - ct * (X / 4));
        if (r0 < nr) logits_tile<X + 4>(Zt, L, R, P, ct, r0);
    }
}

// Logits and the mean cross-entropy gradient of rows [16t, 16t + 16), one warp task t: lanes of
// row quad q = lane / 8 and class pair ct = lane % 8 < 5 take the logits tile of rows 16t + 4q..;
// then lane r < 16 replaces row 16t + r's logits by (softmax - onehot) / count, or by zeros past nr
// (a warp's own rows only, so a __syncwarp orders the two).
__device__ __forceinline__ void logits_loss(float* Zt, const float* L, const float* R, const float* P,
                                            const int* labs, int nr, float count, int t) {
    const int lane = threadIdx.x & 31, ct = lane & 7, r0 = 16 * t + 4 * (lane >> 3);
    if (ct < 5 && r0 < nr) logits_tile<RS>(Zt, L, R, P, ct, r0);
    __syncwarp();
    const int r = 16 * t + lane;
    if (lane >= 16) return;
    if (r < nr) {
        float m = Zt[r];
        for (int c = 1; c < NCLS; ++c) m = fmaxf(m, Zt[c * RS + r]);
        float sum = 0.0f;
        for (int c = 0; c < NCLS; ++c) sum += expf(Zt[c * RS + r] - m);
        const float log_sum = logf(sum);
        const int y = labs[r];
        for (int c = 0; c < NCLS; ++c)
            Zt[c * RS + r] = (expf((Zt[c * RS + r] - m) - log_sum) - (c == y ? 1.0f : 0.0f)) / count;
    } else {
        for (int c = 0; c < NCLS; ++c) Zt[c * RS + r] = 0.0f;
    }
}

// Logits and the mean cross-entropy gradient of rows [3t, 3t + 3), one warp task t: lane 10q + c (q < 3)
// takes class c of row 3t + q: its logit as logits_tile() computes it (two chains, j ascending, then the
// bias), then, after a __syncwarp, the row's max and sum of exps (c ascending) and log-sum from the row's
// logits in Zt, and its (softmax - onehot) / count, or zero past nr; a second __syncwarp orders every
// read of the row's logits before the stores.
__device__ __forceinline__ void logits_loss_wide(float* Zt, const float* L, const float* R, const float* P,
                                                 const int* labs, int nr, float count, int t) {
    const int lane = threadIdx.x & 31, q = lane / 10, c = lane - 10 * q, r = 3 * t + q;
    const bool live = q < 3 && r < RP;
    float z = 0.0f;
    if (live && r < nr) {
        float a = 0.0f, b = 0.0f;
#pragma unroll 8
        for (int j = 0; j < HF; ++j) {
            a = fmaf(P[OHT + j * NCLS + c], L[j * RS + r], a);
            b = fmaf(P[OHT + (HF + j) * NCLS + c], R[j * RS + r], b);
        }
        z = a + b + P[OB + c];
        Zt[c * RS + r] = z;
    }
    __syncwarp();
    float out = 0.0f;
    if (live && r < nr) {
        float m = Zt[r];
        for (int k = 1; k < NCLS; ++k) m = fmaxf(m, Zt[k * RS + r]);
        float sum = 0.0f;
        for (int k = 0; k < NCLS; ++k) sum += expf(Zt[k * RS + r] - m);
        const float log_sum = logf(sum);
        out = (expf((z - m) - log_sum) - (c == labs[r] ? 1.0f : 0.0f)) / count;
    }
    __syncwarp();
    if (live) Zt[c * RS + r] = out;
}

// One entry's momentum SGD step (spec 2.6, float32, in this order): v <- v*momentum + g; v <- v + wd*p;
// returns p + (-lr)*v, the new parameter (v updated in place). The one place the update's arithmetic is
// written (the three update paths call it).
__device__ __forceinline__ float sgd_step(float& v, float g, float p, float momentum, float neg_lr,
                                          float weight_decay) {
    float u = v * momentum + g;
    u = u + weight_decay * p;
    v = u;
    return p + neg_lr * u;
}

// Lift rows: raw pixels x (81 per row) -> L[j][r] = 4x[j] - 0.5, R[j][r] = 4x[41 + j] - 0.5 and a
// zero, as is and through relu; zero for features past 41 and rows r >= nr (all X rows written).
template <int X>
__device__ __forceinline__ void lift(float* L, float* R, float* RL, float* RR, const float* __restrict__ raw,
                                     const int* rows, int nr) {
    for (int e = threadIdx.x; e < FR * X; e += NT) {
        const int j = e / X, r = e - j * X;
        float l = 0.0f, rr = 0.0f;
        if (r < nr && j < HF) {
            const float* x = raw + (long long)rows[r] * (DIM - 1);
            l = x[j] * 4.0f - 0.5f;
            rr = j < HF - 1 ? x[HF + j] * 4.0f - 0.5f : 0.0f;
        }
        const int at = j * (X + 4) + r;
        L[at] = l;
        R[at] = rr;
        RL[at] = relu(l);
        RR[at] = relu(rr);
    }
}

// Rows of this block in a step of count rows.
__device__ __forceinline__ int block_rows(int count) {
    const int nr = count - blockIdx.x * ROWS;
    return nr < 0 ? 0 : (nr > ROWS ? ROWS : nr);
}

// Rows (training indices) and labels of block b's part of step s.
__device__ __forceinline__ int step_rows(int* rows, int* labs, const long long* __restrict__ orders,
                                         const long long* __restrict__ labels, int s, int nb, int n_train, int batch) {
    const int e = s / nb, first = (s - e * nb) * batch;
    const int count = n_train - first < batch ? n_train - first : batch;
    const int nr = block_rows(count);
    for (int r = threadIdx.x; r < nr; r += NT) {
        const long long ix = orders[(long long)e * n_train + first + blockIdx.x * ROWS + r];
        rows[r] = (int)ix;
        labs[r] = (int)labels[ix];
    }
    return count;
}

// Rows of step s: the count (at most batch; fewer in an epoch's last batch).
__device__ __forceinline__ int step_count(int s, int nb, int n_train, int batch) {
    const int first = (s - (s / nb) * nb) * batch;
    return n_train - first < batch ? n_train - first : batch;
}

// Step s's rows for this block, by the LW = NW - NWG warps NWG.. while warps 0..NWG-1 take W0's gradient.
// rows[] already holds the rows' training indices (next_rows(), at the start of step s - 1). Lift warp w
// takes rows w, w + LW, ...: per row its lanes read the 81 pixels as three runs of 32 (coalesced; the
// reads of up to LB rows are issued before the first store) and write the lifted halves L, R and relu(L)
// as lift() does: pixel p < 41 to L[p], p >= 41 to R[p - 41], zeros for features past 41 (R: past 40)
// and for rows r >= nr; lane 0 the row's label. relu(R) waits for W0, which reads RR (relu_right()).
#define LW (NW - NWG)                   // lift warps
#define RPW ((RP + LW - 1) / LW)        // rows a lift warp takes
#define LB (RPW < 8 ? RPW : 8)          // of them in flight at once
__device__ __forceinline__ void lift_rows(float* L, float* R, float* RL, const int* rows, int* labs,
                                          const float* __restrict__ raw, const long long* __restrict__ labels,
                                          int nr) {
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) - NWG;
    for (int q0 = 0; q0 < RPW; q0 += LB) {
        float v[LB][3];
        int lab[LB];
#pragma unroll
        for (int q = 0; q < LB; ++q) {
            const int r = w + LW * (q0 + q);
            const int ix = r < nr ? rows[r] : 0;
            const float* x = raw + (long long)ix * (DIM - 1);
            v[q][0] = x[lane];
            v[q][1] = x[32 + lane];
            v[q][2] = x[64 + (lane < 17 ? lane : 16)];
            lab[q] = lane == 0 && r < nr ? (int)labels[ix] : 0;
        }
#pragma unroll
        for (int q = 0; q < LB; ++q) {
            const int r = w + LW * (q0 + q);
            if (q0 + q >= RPW || r >= RP) continue;
            if (r < nr) {
                if (lane == 0) labs[r] = lab[q];
                const float a = v[q][0] * 4.0f - 0.5f, b = v[q][1] * 4.0f - 0.5f, c = v[q][2] * 4.0f - 0.5f;
                L[lane * RS + r] = a;
                RL[lane * RS + r] = relu(a);
                if (lane < 9) {
                    L[(32 + lane) * RS + r] = b;
                    RL[(32 + lane) * RS + r] = relu(b);
                } else {
                    R[(lane - 9) * RS + r] = b;
                }
                if (lane < 17) {
                    R[(23 + lane) * RS + r] = c;
                } else if (lane < 20) {
                    L[(24 + lane) * RS + r] = 0.0f;
                    RL[(24 + lane) * RS + r] = 0.0f;
                } else if (lane < 24) {
                    R[(20 + lane) * RS + r] = 0.0f;
                }
            } else {
                L[lane * RS + r] = R[lane * RS + r] = RL[lane * RS + r] = 0.0f;
                if (lane < FR - 32) L[(32 + lane) * RS + r] = R[(32 + lane) * RS + r] = RL[(32 + lane) * RS + r] = 0.0f;
            }
        }
    }
}

// The training indices of step s's rows for this block into rows[] (by the threads of warps NWG..; read
// by lift_rows() in the next step's W0, after the labels of this step are used).
__device__ __forceinline__ void next_rows(int* rows, const long long* __restrict__ orders, int s, int nb, int n_train,
                                          int batch) {
    const int e0 = s / nb, first = (s - e0 * nb) * batch + blockIdx.x * ROWS;
    const int nr = block_rows(step_count(s, nb, n_train, batch));
    for (int r = threadIdx.x - 32 * NWG; r < nr; r += NT - 32 * NWG)
        rows[r] = (int)orders[(long long)e0 * n_train + first + r];
}

// RR = relu(R) over the block's RP rows (the rest of lift_rows, once W0 is done).
__device__ __forceinline__ void relu_right(float* RR, const float* R) {
    for (int e = threadIdx.x; e < FR * RP; e += NT) {
        const int j = e / RP, at = j * RS + (e - j * RP);
        RR[at] = relu(R[at]);
    }
}

// Measurement build only (-DREV88_PHASE_CLOCK, the cycle counts of docs/results/fused-learner.md; never in a record): thread 0
// (warp 0, a weight-gradient warp) and thread 32 * NWG (the first of the others) each add the SM
// cycles (clock64) between the marks of every step to rev88_phase_cycles[block][thread][mark].
#ifdef REV88_PHASE_CLOCK
#define NMARK 14
__device__ unsigned long long rev88_phase_cycles[64 * 2 * NMARK];
#define PHASE_DECLARE long long pc_[NMARK], t_ = 0; _Pragma("unroll") for (int m_ = 0; m_ < NMARK; ++m_) pc_[m_] = 0;
#define PHASE_START t_ = clock64();
#define PHASE_MARK(m) { const long long n_ = clock64(); pc_[m] += n_ - t_; t_ = n_; }
#define PHASE_WRITE                                                                                         \
    if (threadIdx.x == 0 || threadIdx.x == 32 * NWG)                                                        \
        _Pragma("unroll") for (int m_ = 0; m_ < NMARK; ++m_)                                                \
            atomicAdd(rev88_phase_cycles + (b * 2 + (threadIdx.x != 0)) * NMARK + m_, (unsigned long long)pc_[m_]);
#else
#define PHASE_DECLARE
#define PHASE_START
#define PHASE_MARK(m)
#define PHASE_WRITE
#endif

#if CLUSTER
#define TRAIN_ATTRIBUTES __launch_bounds__(NT, 1) __cluster_dims__(G, 1, 1)
#else
#define TRAIN_ATTRIBUTES __launch_bounds__(NT, 1)
#endif
extern "C" __global__ void TRAIN_ATTRIBUTES
rev88_train(const float* __restrict__ init, float* __restrict__ params_out, float* __restrict__ vel_out,
            float* part, float* pbuf, unsigned* sync, const float* __restrict__ raw,
            const long long* __restrict__ labels, const long long* __restrict__ orders, int n_train, int epochs,
            int batch, float alpha, float momentum, float neg_lr, float weight_decay, unsigned spin_limit) {
    extern __shared__ float4 sm4[];
    float* sm = reinterpret_cast<float*>(sm4);
    float* P = sm;                  // parameters, both copies (PSZ)
    float* L = P + PSZ;             // left half (FR x RS), as is
    float* R = L + FR * RS;         // right half
    float* RL = R + FR * RS;        // relu(left), relu(right)
    float* RR = RL + FR * RS;
    float* dL = RR + FR * RS;       // gradients of the halves
    float* dR = dL + FR * RS;
    float* Zt = dR + FR * RS;       // logits, then the loss gradient (10 x RS)
#if PUSH
    float* PART = Zt + NCLS * RS;   // this block's partial gradient (PPAD, padded order)
    float* RECV = PART + PPAD;      // the others' partials of this block's slices (G slots of SL)
    float* STAGE = RECV + G * SL;   // new parameters (PPAD, padded order)
    unsigned long long* bars = reinterpret_cast<unsigned long long*>(STAGE + PPAD);   // NBAR barriers, 16 bytes apart
    int* rows = reinterpret_cast<int*>(STAGE + PPAD + 4 * NBAR);
#elif CLUSTER && SPLIT
    float* PART = Zt + NCLS * RS;   // this block's partial gradient (PSTR), then its slice's new parameters (PSTR)
    float* PUB = PART + PSTR;
    int* rows = reinterpret_cast<int*>(PUB + PSTR);
#elif CLUSTER
    float* PART = Zt + NCLS * RS;   // this block's partial gradients of steps s mod 2 = 0, 1 (2 x PSTR)
    int* rows = reinterpret_cast<int*>(PART + 2 * PSTR);
#else
    int* rows = reinterpret_cast<int*>(Zt + NCLS * RS);
#endif
    int* labs = rows + ROWS;
    const int b = blockIdx.x, warp = threadIdx.x >> 5;
    // reset: zero everything (padding stays zero), velocities zero, then the initial parameters
#if PUSH
    for (int k = threadIdx.x; k < PSZ + 6 * FR * RS + NCLS * RS + 2 * PPAD + G * SL; k += NT) sm[k] = 0.0f;
#else
    for (int k = threadIdx.x; k < PSZ + 6 * FR * RS + NCLS * RS; k += NT) sm[k] = 0.0f;
#endif
    float vr[VR];
#pragma unroll
    for (int j = 0; j < VR; ++j) vr[j] = 0.0f;
    __syncthreads();
    for (int k = threadIdx.x; k < NSTATE; k += NT) {
        int pn, pt;
        ppos(k, pn, pt);
        P[pn] = init[k];
        P[pt] = init[k];
    }
    const int nb = (n_train + batch - 1) / batch;
    const int steps = epochs * nb;
#if PUSH   // the slices are own_quad()'s
#elif SPLIT
    const int lo = b * CHUNK < NSTATE ? b * CHUNK : NSTATE;
#else
    const int lo = 0;
#endif
#if !PUSH
    const int hi = lo + CHUNK < NSTATE ? lo + CHUNK : NSTATE;
#endif
    PHASE_DECLARE
#if PUSH
    // the barriers, armed for their first phases, and visible to the cluster (with the zeros above) before any copy
    if (threadIdx.x == 0) {
#pragma unroll
        for (int j = 0; j < NBAR; ++j) mbar_init(smem(bars + 2 * j));
        mbar_init_fence();
        mbar_expect(smem(bars), part_bytes(b));
#pragma unroll
        for (int r = 0; r < 5; ++r) mbar_expect(smem(bars + 2 * (1 + r)), new_bytes(r, b));
    }
    proxy_fence();
    __syncthreads();
    cluster_arrive();
    cluster_wait();
#elif KEEP_CODES && SPLIT && CLUSTER
    unsigned gpos[GR];   // both shared offsets of every entry this thread gathers, pn | pt << 16 (< 65,536)
#pragma unroll
    for (int j = 0; j < GR; ++j) {
        gpos[j] = 0;
        if (gentry(threadIdx.x, j) < NSTATE) {
            int pn, pt;
            ppos(gentry(threadIdx.x, j), pn, pt);
            gpos[j] = (unsigned)pn | (unsigned)pt << 16;
        }
    }
#elif KEEP_CODES
    unsigned codes[(VR + 1) / 2];   // pcode() of this thread's entries of the update, two per register
#pragma unroll
    for (int j = 0; j < (VR + 1) / 2; ++j) codes[j] = 0;
#pragma unroll
    for (int j = 0; j < VR; ++j)
        if (ENTRY(threadIdx.x, j) < NSTATE) codes[j / 2] |= pcode(ENTRY(threadIdx.x, j)) << (16 * (j % 2));
#endif
    int count = step_rows(rows, labs, orders, labels, 0, nb, n_train, batch);
    __syncthreads();
    lift<RP>(L, R, RL, RR, raw, rows, block_rows(count));
    __syncthreads();
    for (int s = 0; s < steps; ++s) {   // the step's rows are lifted (before the loop, or at the last barrier)
        const int nr = block_rows(count), nr4 = (nr + 3) & ~3;
        // the training indices of step s + 1's rows, read now, used in W0
        if (warp >= NWG && s + 1 < steps) next_rows(rows, orders, s + 1, nb, n_train, batch);
        PHASE_START
#if PUSH
        // the previous step's new parameters: W0 by every thread before its branch, then each region by the warps
        // that take no forward product (3 * NRB = 3 product tasks) while the branch before it runs
#define NEXT_REGION(r) if (s > 0 && warp >= 3 * NRB) { wait_region(bars, r, s, steps, sync, spin_limit); scatter_region(P, STAGE, r, 96 * NRB, NT - 96 * NRB); }
        if (s > 0) {
            wait_region(bars, 0, s, steps, sync, spin_limit);
            scatter_region(P, STAGE, 0, 0, NT);
            __syncthreads();
        }
#else
#define NEXT_REGION(r)
#endif
        for (int t = warp; t < 3 * NRB; t += NW) branch_task<RP, true>(L, RL, RR, P + OWT, alpha, t, nr);
        NEXT_REGION(1)
        __syncthreads();   // l1 = l0 + f(r0; W0)
        PHASE_MARK(0)
        for (int t = warp; t < 3 * NRB; t += NW) branch_task<RP, true>(R, RR, RL, P + OWT + WSZ, alpha, t, nr);
        NEXT_REGION(2)
        __syncthreads();   // r1 = r0 + f(l1; W1)
        PHASE_MARK(1)
        for (int t = warp; t < 3 * NRB; t += NW) branch_task<RP, true>(L, RL, RR, P + OWT + 2 * WSZ, alpha, t, nr);
        NEXT_REGION(3)
        __syncthreads();   // l2 = l1 + f(r1; W2)
        PHASE_MARK(2)
        for (int t = warp; t < 3 * NRB; t += NW) branch_task<RP, true>(R, RR, RL, P + OWT + 3 * WSZ, alpha, t, nr);
        NEXT_REGION(4)
        __syncthreads();   // r2 = r1 + f(l2; W3)
        PHASE_MARK(3)
#if WIDE_LOSS
        for (int t = warp; t < (RP + 2) / 3; t += NW) logits_loss_wide(Zt, L, R, P, labs, nr, (float)count, t);
#else
        for (int t = warp; t < RP / 16; t += NW) logits_loss(Zt, L, R, P, labs, nr, (float)count, t);
#endif
        __syncthreads();
        PHASE_MARK(4)
#if PUSH
        float* gp = PART;   // padded order: weight r at RBASE(r), head and bias HSHIFT later
#elif CLUSTER && SPLIT
        float* gp = PART;
#elif CLUSTER
        float* gp = PART + (s & 1) * PSTR;
#else
        float* gp = part + ((long long)(s & 1) * G + b) * NSTATE;
#endif
        // head and bias partial gradients (warps 0..NHG-1); dL = g·HL, dR = g·HR (the others)
        if (warp < NHG) {
            head_task(gp + HSHIFT, Zt, L, R, nr4, warp);
            ASYNC_VISIBLE
        }
        else for (int t = warp - NHG; t < 6 * NRB; t += NW - NHG) upstream_task(dL, dR, Zt, P + OHN, t, nr);
        __syncthreads();
        PHASE_MARK(5)
        // reversible backward: block 1 (W3, W2) then block 0 (W1, W0); per branch the weight's
        // partial gradient (warps 0..NWG-1), the leaf's gradient and the rebuilt half (the others); with PUSH,
        // each phase begins with the copies of the partials the phase before completed (warp NW - 1, idle there)
#if PUSH
#define PUSH_PARTIALS(r) push_partials(PART, RECV, bars, r);
#else
#define PUSH_PARTIALS(r)
#endif
        PUSH_PARTIALS(4)
        if (warp < NWG) {
            weight_task(gp + RBASE(3), dR, RL, nr4, alpha, warp);                          // W3: leaf l2, upstream dR
            ASYNC_VISIBLE
        }
        else for (int t = warp - NWG; t < 6 * NRB; t += NW - NWG) {
            if (t & 1) branch_task<RP, false>(R, RR, RL, P + OWT + 3 * WSZ, alpha, t >> 1, nr);   // r1 = r2 - f(l2)
            else leaf_task(dL, dR, L, P + OWN + 3 * WSZ, alpha, t >> 1, nr);
        }
        PHASE_MARK(6)
        __syncthreads();
        PHASE_MARK(7)
        PUSH_PARTIALS(3)
        if (warp < NWG) {
            weight_task(gp + RBASE(2), dL, RR, nr4, alpha, warp);                          // W2: leaf r1, upstream dL
            ASYNC_VISIBLE
        }
        else for (int t = warp - NWG; t < 6 * NRB; t += NW - NWG) {
            if (t & 1) branch_task<RP, false>(L, RL, RR, P + OWT + 2 * WSZ, alpha, t >> 1, nr);   // l1 = l2 - f(r1)
            else leaf_task(dR, dL, R, P + OWN + 2 * WSZ, alpha, t >> 1, nr);
        }
        __syncthreads();
        PHASE_MARK(8)
        PUSH_PARTIALS(2)
        if (warp < NWG) {
            weight_task(gp + RBASE(1), dR, RL, nr4, alpha, warp);                          // W1: leaf l1, upstream dR
            ASYNC_VISIBLE
        }
        else for (int t = warp - NWG; t < 6 * NRB; t += NW - NWG) {
            if (t & 1) branch_task<RP, false>(R, RR, RL, P + OWT + WSZ, alpha, t >> 1, nr);       // r0 = r1 - f(l1)
            else leaf_task(dL, dR, L, P + OWN + WSZ, alpha, t >> 1, nr);
        }
        __syncthreads();
        PHASE_MARK(9)
        PUSH_PARTIALS(1)
        // W0: leaf r0, upstream dL; meanwhile the other warps lift most of step s + 1's rows
        if (warp < NWG) {
            weight_task(gp, dL, RR, nr4, alpha, warp);
            ASYNC_VISIBLE
        }
        else if (s + 1 < steps) lift_rows(L, R, RL, rows, labs, raw, labels, block_rows(step_count(s + 1, nb, n_train, batch)));
        PHASE_MARK(10)
        if (s + 1 < steps) count = step_count(s + 1, nb, n_train, batch);
        int first;   // threadIdx.x, opaque, so that positions the update computes are not kept across steps
        asm volatile("mov.u32 %0, %%tid.x;" : "=r"(first));
#if PUSH
        // W0's partials out; while the others' come in, the next step's rows are lifted (the activations are free now)
        __syncthreads();
        PHASE_MARK(11)
        PUSH_PARTIALS(0)
        if (s + 1 < steps) relu_right(RR, R);
        mbar_wait(smem(bars), (unsigned)s & 1u, sync, spin_limit);
        if (threadIdx.x == NT - 1 && s + 1 < steps) mbar_expect(smem(bars), part_bytes(b));
        PHASE_MARK(12)
        if (threadIdx.x == 0) atomicAdd(sync, 1u);
#elif CLUSTER
        // the cluster barrier; while it waits, the next step's rows are lifted (the activations are free now)
        __syncthreads();
        PHASE_MARK(11)
        cluster_arrive();
        if (s + 1 < steps) relu_right(RR, R);
        cluster_wait();
        PHASE_MARK(12)
        if (threadIdx.x == 0) atomicAdd(sync, 1u);
#if SPLIT
        const float* pb = PART;
#else
        const float* pb = PART + (s & 1) * PSTR;
#endif
#elif G == 1 && !SPLIT
        __syncthreads();   // the partial (global memory) is visible to the whole block
        PHASE_MARK(11)
        if (threadIdx.x == 0) atomicAdd(sync, 1u);
        if (s + 1 < steps) relu_right(RR, R);
        const float* pb = part + (long long)(s & 1) * G * NSTATE;
#else
        const float* pb = part + (long long)(s & 1) * G * NSTATE;
        // the grid barrier; while it waits, the next step's rows are lifted (the activations are free now)
        barrier_arrive(sync);
        PHASE_MARK(11)
        if (s + 1 < steps) relu_right(RR, R);
#endif
#if PUSH
        {
            // block b sums the G partials of its slices in block order (its own from PART, the others' from RECV),
            // as cluster_reduce() does, and updates them into its STAGE; then copies each slice into every other
            // block's STAGE (thread r * G + d: region r to block d; none after the last step)
#pragma unroll
            for (int j = 0; j < VR; j += 4) {
                int r, kp;
                const int u = first + (j / 4) * NT;
                if (own_quad(u, r, kp)) {
                    float g[4];
                    const float4 h0 = ld4(b == 0 ? PART + kp : RECV + 4 * u);
#pragma unroll
                    for (int c = 0; c < 4; ++c) g[c] = at4(h0, c);
#pragma unroll
                    for (int q = 1; q < G; ++q) {
                        const float4 h = ld4(q == b ? PART + kp : RECV + q * SL + 4 * u);
#pragma unroll
                        for (int c = 0; c < 4; ++c) g[c] += at4(h, c);
                    }
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        const int k = unpad(kp + c);
                        if (k >= 0) {
                            int pn, pt;
                            ppos(k, pn, pt);
                            STAGE[kp + c] = sgd_step(vr[j + c], g[c], P[pn], momentum, neg_lr, weight_decay);
                        }
                    }
                }
            }
            ASYNC_VISIBLE
            __syncthreads();
            if (s + 1 < steps && threadIdx.x < 5 * G) {
                const int r = threadIdx.x / G, d = threadIdx.x - r * G;
                if (d != b) {
                    const float* src = STAGE + RBASE(r) + rlo(r, b);
                    proxy_fence();
                    bulk_copy(cluster_addr(src, (unsigned)d), smem(src), 4u * (rlo(r, b + 1) - rlo(r, b)),
                              cluster_addr(reinterpret_cast<const float*>(bars + 2 * (1 + r)), (unsigned)d));
                }
            }
            if (threadIdx.x == 0) atomicAdd(sync, 1u);
        }
#elif SPLIT && CLUSTER
        {
            // block b sums the G partials of its slice [lo, hi) in block order and updates it into its PUB;
            // at a second cluster barrier every slice is done; every block gathers the G slices from the
            // blocks' PUBs into both of its copies (one partial buffer and one PUB suffice: a block writes
            // its partial in step s + 1 and its PUB in step s + 1's update only after barriers that every
            // block passes after its reads of step s)
            float gs[VR];
            cluster_reduce(gs, pb, lo, hi, first);
#pragma unroll
            for (int j = 0; j < VR; ++j) {
                const int k = lo + ENTRY(first, j);
                if (k < hi) {
                    int pn, pt;
                    ppos(k, pn, pt);
                    PUB[k] = sgd_step(vr[j], gs[j], P[pn], momentum, neg_lr, weight_decay);
                }
            }
            cluster_arrive();
            cluster_wait();
            if (threadIdx.x == 0) atomicAdd(sync, 1u);
            // a quad per read, stored before the next read (all reads first took about 1,300 cycles more per
            // step at G = 4 and 8; the quads rotated by block and the offsets kept in registers about 1,200
            // fewer at G = 8: docs/results/fused-learner.md)
#pragma unroll
            for (int j = 0; j < GR; j += 4) {
                const int k = gentry(first, j);
                if (k < NSTATE) {
                    float got[4];
                    cluster_load4(cluster_addr(PUB + k, (unsigned)(k / CHUNK)), got);
#pragma unroll
                    for (int c = 0; c < 4; ++c)
                        if (k + c < NSTATE) {
#if KEEP_CODES
                            const int pn = (int)(gpos[j + c] & 0xffffu), pt = (int)(gpos[j + c] >> 16);
#else
                            int pn, pt;
                            ppos(k + c, pn, pt);
#endif
                            P[pn] = got[c];
                            P[pt] = got[c];
                        }
                }
            }
        }
#elif SPLIT
        barrier_wait(sync, (unsigned)(2 * s + 1) * G, spin_limit);
        float gs[VR];
#pragma unroll
        for (int j = 0; j < VR; ++j) {
            const int k = lo + first + j * NT;
            if (k < hi) {
                float g = __ldcg(pb + k);
#pragma unroll
                for (int q = 1; q < G; ++q) g += __ldcg(pb + (long long)q * NSTATE + k);
                gs[j] = g;
            }
        }
#pragma unroll
        for (int j = 0; j < VR; ++j) {
            const int k = lo + first + j * NT;
            if (k < hi) {
                int pn, pt;
                ppos(k, pn, pt);
                pbuf[k] = sgd_step(vr[j], gs[j], P[pn], momentum, neg_lr, weight_decay);
            }
        }
        barrier_arrive(sync);
        barrier_wait(sync, (unsigned)(2 * s + 2) * G, spin_limit);
        for (int k = threadIdx.x; k < NSTATE; k += NT) {
            int pn, pt;
            ppos(k, pn, pt);
            const float p = __ldcg(pbuf + k);
            P[pn] = p;
            P[pt] = p;
        }
#else
#if !CLUSTER && G > 1
        barrier_wait(sync, (unsigned)(s + 1) * G, spin_limit);
#endif
#if !CLUSTER
        PHASE_MARK(12)
#endif
        // every partial is read before the first store to the state (the reads cannot wait on the stores)
        float gs[VR];
#if CLUSTER
        cluster_reduce(gs, pb, 0, NSTATE, first);
#else
#pragma unroll
        for (int j = 0; j < VR; ++j) {
            const int k = ENTRY(first, j);
            if (k < NSTATE) {
                float g = __ldcg(pb + k);
#pragma unroll
                for (int q = 1; q < G; ++q) g += __ldcg(pb + (long long)q * NSTATE + k);
                gs[j] = g;
            }
        }
#endif
#pragma unroll
        for (int j = 0; j < VR; ++j) {
            const int k = ENTRY(first, j);
            if (k < NSTATE) {
                int pn, pt;
#if KEEP_CODES
                pcode_pos((codes[j / 2] >> (16 * (j % 2))) & 0xffffu, pn, pt);
#else
                ppos(k, pn, pt);
#endif
                const float p = sgd_step(vr[j], gs[j], P[pn], momentum, neg_lr, weight_decay);
                P[pn] = p;
                P[pt] = p;
            }
        }
#endif
        __syncthreads();
        PHASE_MARK(13)
    }
    PHASE_WRITE
#if CLUSTER
    cluster_arrive();   // no block leaves while another may still read its partials
    cluster_wait();
#endif
#if PUSH
#pragma unroll
    for (int j = 0; j < VR; j += 4) {
        int r, kp;
        if (own_quad((int)threadIdx.x + (j / 4) * NT, r, kp))
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int k = unpad(kp + c);
                if (k >= 0) {
                    params_out[k] = STAGE[kp + c];
                    vel_out[k] = vr[j + c];
                }
            }
    }
#else
    if (SPLIT || b == 0) {
#pragma unroll
        for (int j = 0; j < VR; ++j) {
            const int k = lo + ENTRY(threadIdx.x, j);
            if (k < hi) {
                int pn, pt;
                ppos(k, pn, pt);
                params_out[k] = P[pn];
                vel_out[k] = vr[j];
            }
        }
    }
#endif
}

extern "C" __global__ void __launch_bounds__(NT)
rev88_predict(const float* __restrict__ params, const float* __restrict__ raw_query, float* __restrict__ scores,
              long long* __restrict__ predictions, int n_query, float alpha) {
    extern __shared__ float4 sm4[];
    float* sm = reinterpret_cast<float*>(sm4);
    float* P = sm;
    float* L = P + PSZ;
    float* R = L + FR * QRS;
    float* RL = R + FR * QRS;
    float* RR = RL + FR * QRS;
    float* Zt = RR + FR * QRS;
    int* rows = reinterpret_cast<int*>(Zt + NCLS * QRS);
    const int q0 = blockIdx.x * QB, warp = threadIdx.x >> 5;
    int nr = n_query - q0;
    nr = nr > QB ? QB : nr;
    for (int k = threadIdx.x; k < PSZ + 4 * FR * QRS + NCLS * QRS; k += NT) sm[k] = 0.0f;
    __syncthreads();
    for (int k = threadIdx.x; k < NSTATE; k += NT) {
        int pn, pt;
        ppos(k, pn, pt);
        P[pt] = params[k];
        P[pn] = params[k];
    }
    for (int r = threadIdx.x; r < nr; r += NT) rows[r] = q0 + r;
    __syncthreads();
    lift<QRP>(L, R, RL, RR, raw_query, rows, nr);
    __syncthreads();
    for (int t = warp; t < 3 * (QRP / 32); t += NW) branch_task<QRP, true>(L, RL, RR, P + OWT, alpha, t, nr);
    __syncthreads();
    for (int t = warp; t < 3 * (QRP / 32); t += NW) branch_task<QRP, true>(R, RR, RL, P + OWT + WSZ, alpha, t, nr);
    __syncthreads();
    for (int t = warp; t < 3 * (QRP / 32); t += NW) branch_task<QRP, true>(L, RL, RR, P + OWT + 2 * WSZ, alpha, t, nr);
    __syncthreads();
    for (int t = warp; t < 3 * (QRP / 32); t += NW) branch_task<QRP, true>(R, RR, RL, P + OWT + 3 * WSZ, alpha, t, nr);
    __syncthreads();
    logits<QRP>(Zt, L, R, P, nr);
    __syncthreads();
    for (int r = threadIdx.x; r < nr; r += NT) {
        int best = 0;
        for (int c = 0; c < NCLS; ++c) {
            const float z = Zt[c * QRS + r];
            scores[(long long)(q0 + r) * NCLS + c] = z;
            if (z > Zt[best * QRS + r]) best = c;
        }
        predictions[q0 + r] = best;
    }
}
