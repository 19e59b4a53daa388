// rev88-fused, CUDA C++ kernels (kernel tool "cuda": compiled at run time by NVRTC through CuPy's
// RawModule; host side bundle/fused_cuda.py). The bytes of this file are what
// bundle.fused_cuda.kernel_source_sha256 hashes and every record of this kernel names.
//
// Same procedure as bundle/fused_kernels.py (spec 2 and 3): the 82-lift 4x - 0.5 plus a zero
// coordinate split into halves of 41, two additive coupling blocks (four bias-free 41x41 branches
// relu -> linear -> x alpha), the 82 -> 10 head with bias, mean cross-entropy, the reversible
// backward with activations rebuilt by subtraction, momentum SGD
//     v <- v*momentum + g;  v <- v + wd*p;  p <- p + (-lr)*v
// in float32 (fmaf, no tensor cores, no TF32), every gradient taken at the pre-step weights.
//
// Training, rev88_train: ONE launch of G blocks (CTAs) of NT = 44 * NGRP threads, one block per
// SM; G, ROWS = ceil(batch / G), NGRP and SPLIT are compile-time constants.
//   * Every block keeps a whole copy of the parameters P and velocities V and its rows'
//     activations in shared memory. Shared layout: rows of 44 floats (41 live, 3 zero), so a row
//     is eleven float4; a branch weight is 44 x 44 (W[o][i], zero outside 41 x 41); the head is
//     10 x 88 (left half in columns 0..40, right half in 44..84); then the bias. Each half of the
//     activations is kept twice, as is and through relu, so no product applies relu per term.
//   * Products over the 44 columns: thread (o, g) holds row o (or column o) of the weight in
//     registers and computes column o of rows g, g + NGRP, ... (RB = ceil(ROWS / NGRP) rows), the
//     rows' activations read as float4 (the same address for every thread of a row group); the
//     weight gradient, a sum over the rows, gives each thread one (o, four i) tile.
//   * Step s: block b takes rows [b*ROWS, (b+1)*ROWS) of the step's batch (none in a short last
//     batch), runs lift, forward, head, loss gradient and the reversible backward on them and
//     stores its partial gradient of all 7,554 parameters (state-vector order of spec 3) to
//     part[s mod 2][b] in global memory.
//   * A grid barrier (an arrival counter, atomics with release/acquire ordering) then
//     - SPLIT = 0: every block sums the G partials in the fixed order 0..G-1 (loads that bypass
//       L1) and updates its own P, V: same inputs, same code, so every copy has the same bits;
//     - SPLIT = 1: block b sums and updates only its slice of the state and publishes the new
//       parameters of the slice in pbuf; a second barrier; every block reloads P from pbuf.
//     Two partial buffers make one barrier per step safe: a block writes buffer s mod 2 in step s
//     only after the barrier of step s-1, which every block passes only after its reads of
//     step s-2's partials.
//   * All G blocks must be resident at once (the host keeps G <= the SM count; a block's shared
//     memory allows one per SM at most, so none waits for another's SM on an idle GPU); a wait that
//     spins SPIN_LIMIT times gives up and raises the counter to TIMED_OUT, which releases every
//     later wait and which the host reports.
// Prediction, rev88_predict: blocks of QB query rows, the trained parameters in shared memory;
// float32 logits and the first maximal class (torch.argmax's tie rule).
//
// The summation order differs from cuBLAS's, from the CPU's and from the Triton kernels', so
// final parameters and scores are not their bits; predictions are compared with the frozen ones.

#define HF 41                            // coordinates per half
#define HS 44                            // shared row stride (floats): eleven float4
#define NQ 11                            // float4 per row
#define NCLS 10                          // classes
#define DIM 82                           // lifted features
#define NWT (HF * HF)                    // floats per branch weight in the state vector
#define HEAD_OFF (4 * NWT)               // head.weight (10 x 82) in the state vector
#define BIAS_OFF (HEAD_OFF + NCLS * DIM) // head.bias (10)
#define NSTATE (BIAS_OFF + NCLS)         // 7554
#define WS (HS * HS)                     // shared floats per branch weight
#define SHEAD (4 * WS)                   // shared head (10 x 88)
#define SBIAS (SHEAD + NCLS * 2 * HS)    // shared bias
#define SSTATE (SBIAS + 12)              // shared floats per state copy (a multiple of 4)
#define TIMED_OUT (1u << 30)

#ifndef NGRP
#define NGRP 8
#endif
#define NT (HS * NGRP)
#ifndef G
#define G 8
#endif
#ifndef ROWS
#define ROWS 16
#endif
#define RB ((ROWS + NGRP - 1) / NGRP)    // rows per thread
#define RA (RB * NGRP)                   // rows allocated per activation array
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef QB
#define QB 64
#endif
#define QRB ((QB + NGRP - 1) / NGRP)
#define QRA (QRB * NGRP)

__device__ __forceinline__ float relu(float x) { return x > 0.0f ? x : 0.0f; }

// Shared offset of state-vector entry k (weights, head, bias).
__device__ __forceinline__ int spos(int k) {
    if (k < HEAD_OFF) {
        int b = k / NWT, rem = k - b * NWT, o = rem / HF;
        return b * WS + o * HS + (rem - o * HF);
    }
    if (k < BIAS_OFF) {
        int rem = k - HEAD_OFF, c = rem / DIM, j = rem - c * DIM;
        return SHEAD + c * 2 * HS + (j < HF ? j : HS + j - HF);
    }
    return SBIAS + (k - BIAS_OFF);
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Wait until *sync reaches target, having added this block's arrival (release), then acquire.
__device__ void grid_barrier(unsigned* sync, unsigned target, unsigned spin_limit) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(sync, 1u);
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

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
}

// acc[j] = sum over the 44 columns of src row (g + NGRP * j) times w (eleven float4 in registers), j < NR.
template <int NR>
__device__ __forceinline__ void rows_dot(float* acc, const float* src, const float4* w, int g) {
#pragma unroll
    for (int j = 0; j < NR; ++j) acc[j] = 0.0f;
#pragma unroll
    for (int q = 0; q < NQ; ++q) {
#pragma unroll
        for (int j = 0; j < NR; ++j) acc[j] = dot4(reinterpret_cast<const float4*>(src + (g + NGRP * j) * HS)[q], w[q], acc[j]);
    }
}

// Lift rows: x (81 raw pixels) -> left = 4x[0..40] - 0.5, right = 4x[41..80] - 0.5 and a zero,
// as is (L, R) and through relu (RL, RR).
template <int NROWS>
__device__ __forceinline__ void lift(float* L, float* R, float* RL, float* RR, const float* __restrict__ raw,
                                     const int* rows, int nr) {
    for (int k = threadIdx.x; k < nr * HF; k += NT) {
        int r = k / HF, i = k - r * HF;
        const float* x = raw + (long long)rows[r] * (DIM - 1);
        float l = x[i] * 4.0f - 0.5f;
        float rr = i < HF - 1 ? x[HF + i] * 4.0f - 0.5f : 0.0f;
        L[r * HS + i] = l;
        R[r * HS + i] = rr;
        RL[r * HS + i] = relu(l);
        RR[r * HS + i] = relu(rr);
    }
}

// Rows g, g + NGRP, ... (NR per thread) of act[r][o] += SIGN * alpha * sum_i rsrc[r][i] W[o][i];
// ract[r][o] = relu(act[r][o]). Thread (o, g) keeps W's row o in registers. Rows >= nr are read
// (finite leftovers) but not written.
template <int NR, bool ADD>
__device__ __forceinline__ void branch_rows(float* act, float* ract, const float* rsrc, const float* W, int nr,
                                            float alpha) {
    const int o = threadIdx.x % HS, g = threadIdx.x / HS;
    float4 w[NQ];
    const float4* wr = reinterpret_cast<const float4*>(W + o * HS);
#pragma unroll
    for (int q = 0; q < NQ; ++q) w[q] = wr[q];
    float acc[NR];
    rows_dot<NR>(acc, rsrc, w, g);
    if (o < HF) {
#pragma unroll
        for (int j = 0; j < NR; ++j) {
            int r = g + NGRP * j;
            if (r < nr) {
                float v = ADD ? act[r * HS + o] + acc[j] * alpha : act[r * HS + o] - acc[j] * alpha;
                act[r * HS + o] = v;
                ract[r * HS + o] = relu(v);
            }
        }
    }
}

// Rows of dacc[r][i] += alpha * sum_o d[r][o] W[o][i] where rleaf[r][i] > 0 (the leaf's gradient;
// relu(h) > 0 exactly where h > 0). Thread (i, g) keeps W's column i in registers.
template <int NR>
__device__ __forceinline__ void leaf_rows(float* dacc, const float* d, const float* rleaf, const float* W, int nr,
                                          float alpha) {
    const int i = threadIdx.x % HS, g = threadIdx.x / HS;
    float4 w[NQ];
#pragma unroll
    for (int q = 0; q < NQ; ++q)
        w[q] = make_float4(W[(4 * q) * HS + i], W[(4 * q + 1) * HS + i], W[(4 * q + 2) * HS + i],
                           W[(4 * q + 3) * HS + i]);
    float acc[NR];
    rows_dot<NR>(acc, d, w, g);
    if (i < HF) {
#pragma unroll
        for (int j = 0; j < NR; ++j) {
            int r = g + NGRP * j;
            if (r < nr && rleaf[r * HS + i] > 0.0f) dacc[r * HS + i] += acc[j] * alpha;
        }
    }
}

// grad[o][i] = alpha * sum_{r < nr} d[r][o] rleaf[r][i] (partial, global memory, 41 x 41 row-major):
// item (q, o) gives i = 4q .. 4q+3.
__device__ __forceinline__ void weight_grad(float* grad, const float* d, const float* rleaf, int nr, float alpha) {
    for (int item = threadIdx.x; item < NQ * HF; item += NT) {
        const int q = item / HF, o = item - q * HF;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int r = 0; r < nr; ++r) {
            const float dv = d[r * HS + o];
            const float4 h = reinterpret_cast<const float4*>(rleaf + r * HS)[q];
            acc.x = fmaf(dv, h.x, acc.x);
            acc.y = fmaf(dv, h.y, acc.y);
            acc.z = fmaf(dv, h.z, acc.z);
            acc.w = fmaf(dv, h.w, acc.w);
        }
        float* out = grad + o * HF + 4 * q;
        out[0] = acc.x * alpha;
        if (4 * q + 1 < HF) {   // the last quad holds column 40 only
            out[1] = acc.y * alpha;
            out[2] = acc.z * alpha;
            out[3] = acc.w * alpha;
        }
    }
}

// Logits z[r][c] = l[r]·HL[c] + r[r]·HR[c] + b[c] for r < nr.
__device__ __forceinline__ void logits(float* Z, const float* L, const float* R, const float* P, int nr) {
    for (int k = threadIdx.x; k < nr * NCLS; k += NT) {
        const int r = k / NCLS, c = k - r * NCLS;
        const float4* hl = reinterpret_cast<const float4*>(P + SHEAD + c * 2 * HS);
        const float4* l4 = reinterpret_cast<const float4*>(L + r * HS);
        const float4* r4 = reinterpret_cast<const float4*>(R + r * HS);
        float a = 0.0f, b = 0.0f;
#pragma unroll
        for (int q = 0; q < NQ; ++q) {
            a = dot4(l4[q], hl[q], a);
            b = dot4(r4[q], hl[NQ + q], b);
        }
        Z[k] = a + b + P[SBIAS + c];
    }
}

extern "C" __global__ void __launch_bounds__(NT, 1)
rev88_train(const float* __restrict__ init, float* __restrict__ params_out, float* __restrict__ vel_out,
            float* part, float* pbuf, unsigned* sync, const float* __restrict__ raw,
            const long long* __restrict__ labels, const long long* __restrict__ orders, int n_train, int epochs,
            int batch, float alpha, float momentum, float neg_lr, float weight_decay, unsigned spin_limit) {
    extern __shared__ float4 sm4[];
    float* sm = reinterpret_cast<float*>(sm4);
    float* P = sm;                  // parameters (SSTATE, shared layout)
    float* V = P + SSTATE;          // velocities
    float* L = V + SSTATE;          // left half of the rows (RA x 44), as is
    float* R = L + RA * HS;         // right half
    float* RL = R + RA * HS;        // relu(left), relu(right)
    float* RR = RL + RA * HS;
    float* dL = RR + RA * HS;       // gradients of the halves
    float* dR = dL + RA * HS;
    float* Z = dR + RA * HS;        // logits, then the loss gradient (ROWS x 10)
    int* rows = reinterpret_cast<int*>(Z + ROWS * NCLS);
    int* labs = rows + ROWS;
    const int b = blockIdx.x;
    // reset: zero everything (padding stays zero), then the initial parameters
    for (int k = threadIdx.x; k < 2 * SSTATE + 6 * RA * HS; k += NT) sm[k] = 0.0f;
    __syncthreads();
    for (int k = threadIdx.x; k < NSTATE; k += NT) P[spos(k)] = init[k];
    __syncthreads();
    const int nb = (n_train + batch - 1) / batch;
    const int steps = epochs * nb;
#if SPLIT
    const int chunk = (NSTATE + G - 1) / G;
    const int lo = b * chunk < NSTATE ? b * chunk : NSTATE;
    const int hi = lo + chunk < NSTATE ? lo + chunk : NSTATE;
#endif
    for (int s = 0; s < steps; ++s) {
        const int e = s / nb;
        const int first = (s - e * nb) * batch;
        const int count = n_train - first < batch ? n_train - first : batch;
        const int r0 = b * ROWS;
        int nr = count - r0;
        nr = nr < 0 ? 0 : (nr > ROWS ? ROWS : nr);
        for (int r = threadIdx.x; r < nr; r += NT) {
            long long ix = orders[(long long)e * n_train + first + r0 + r];
            rows[r] = (int)ix;
            labs[r] = (int)labels[ix];
        }
        __syncthreads();
        lift<ROWS>(L, R, RL, RR, raw, rows, nr);
        __syncthreads();
        branch_rows<RB, true>(L, RL, RR, P, nr, alpha);            // l1 = l0 + f(r0; W0)
        __syncthreads();
        branch_rows<RB, true>(R, RR, RL, P + WS, nr, alpha);       // r1 = r0 + f(l1; W1)
        __syncthreads();
        branch_rows<RB, true>(L, RL, RR, P + 2 * WS, nr, alpha);   // l2 = l1 + f(r1; W2)
        __syncthreads();
        branch_rows<RB, true>(R, RR, RL, P + 3 * WS, nr, alpha);   // r2 = r1 + f(l2; W3)
        __syncthreads();
        logits(Z, L, R, P, nr);
        __syncthreads();
        const float inv = (float)count;
        for (int r = threadIdx.x; r < nr; r += NT) {   // mean cross-entropy gradient (softmax - onehot) / count
            float* z = Z + r * NCLS;
            float m = z[0];
            for (int c = 1; c < NCLS; ++c) m = fmaxf(m, z[c]);
            float sum = 0.0f;
            for (int c = 0; c < NCLS; ++c) sum += expf(z[c] - m);
            const float log_sum = logf(sum);
            for (int c = 0; c < NCLS; ++c) z[c] = (expf((z[c] - m) - log_sum) - (c == labs[r] ? 1.0f : 0.0f)) / inv;
        }
        __syncthreads();
        float* gp = part + ((long long)(s & 1) * G + b) * NSTATE;
        // head: its gradient (partial) and the core's upstream gradients dL = g·HL, dR = g·HR
        for (int k = threadIdx.x; k < NCLS * DIM; k += NT) {
            const int c = k / DIM, j = k - c * DIM;
            const float* src = j < HF ? L + j : R + (j - HF);
            float acc = 0.0f;
            for (int r = 0; r < nr; ++r) acc = fmaf(Z[r * NCLS + c], src[r * HS], acc);
            gp[HEAD_OFF + k] = acc;
        }
        for (int c = threadIdx.x; c < NCLS; c += NT) {
            float acc = 0.0f;
            for (int r = 0; r < nr; ++r) acc += Z[r * NCLS + c];
            gp[BIAS_OFF + c] = acc;
        }
        for (int k = threadIdx.x; k < nr * 2 * HS; k += NT) {
            const int r = k / (2 * HS), j = k - r * 2 * HS;
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < NCLS; ++c) acc = fmaf(Z[r * NCLS + c], P[SHEAD + c * 2 * HS + j], acc);
            if (j < HS) dL[r * HS + j] = acc; else dR[r * HS + j - HS] = acc;   // padding: 0 x 0
        }
        __syncthreads();
        // reversible backward: block 1 (W3, W2) then block 0 (W1, W0); per branch the leaf's
        // gradient, the rebuilt activation and the weight's partial gradient share one phase
        weight_grad(gp + 3 * NWT, dR, RL, nr, alpha);              // W3: leaf l2, upstream dR
        leaf_rows<RB>(dL, dR, RL, P + 3 * WS, nr, alpha);
        branch_rows<RB, false>(R, RR, RL, P + 3 * WS, nr, alpha);  // r1 = r2 - f(l2)
        __syncthreads();
        weight_grad(gp + 2 * NWT, dL, RR, nr, alpha);              // W2: leaf r1, upstream dL
        leaf_rows<RB>(dR, dL, RR, P + 2 * WS, nr, alpha);
        branch_rows<RB, false>(L, RL, RR, P + 2 * WS, nr, alpha);  // l1 = l2 - f(r1)
        __syncthreads();
        weight_grad(gp + NWT, dR, RL, nr, alpha);                  // W1: leaf l1, upstream dR
        leaf_rows<RB>(dL, dR, RL, P + WS, nr, alpha);
        branch_rows<RB, false>(R, RR, RL, P + WS, nr, alpha);      // r0 = r1 - f(l1)
        __syncthreads();
        weight_grad(gp, dL, RR, nr, alpha);                        // W0: leaf r0, upstream dL
        const float* pb = part + (long long)(s & 1) * G * NSTATE;
#if SPLIT
        grid_barrier(sync, (unsigned)(2 * s + 1) * G, spin_limit);
        for (int k = lo + threadIdx.x; k < hi; k += NT) {
            float g = __ldcg(pb + k);
#pragma unroll
            for (int q = 1; q < G; ++q) g += __ldcg(pb + (long long)q * NSTATE + k);
            const int at = spos(k);
            float v = V[at] * momentum + g;
            v = v + weight_decay * P[at];
            V[at] = v;
            pbuf[k] = P[at] + neg_lr * v;
        }
        grid_barrier(sync, (unsigned)(2 * s + 2) * G, spin_limit);
        for (int k = threadIdx.x; k < NSTATE; k += NT) P[spos(k)] = __ldcg(pbuf + k);
        __syncthreads();
#else
        grid_barrier(sync, (unsigned)(s + 1) * G, spin_limit);
        for (int k = threadIdx.x; k < NSTATE; k += NT) {
            float g = __ldcg(pb + k);
#pragma unroll
            for (int q = 1; q < G; ++q) g += __ldcg(pb + (long long)q * NSTATE + k);
            const int at = spos(k);
            float v = V[at] * momentum + g;
            v = v + weight_decay * P[at];
            V[at] = v;
            P[at] = P[at] + neg_lr * v;
        }
        __syncthreads();
#endif
    }
#if SPLIT
    for (int k = lo + threadIdx.x; k < hi; k += NT) {
        params_out[k] = P[spos(k)];
        vel_out[k] = V[spos(k)];
    }
#else
    if (b == 0) {
        for (int k = threadIdx.x; k < NSTATE; k += NT) {
            params_out[k] = P[spos(k)];
            vel_out[k] = V[spos(k)];
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
    float* L = P + SSTATE;
    float* R = L + QRA * HS;
    float* RL = R + QRA * HS;
    float* RR = RL + QRA * HS;
    float* Z = RR + QRA * HS;
    int* rows = reinterpret_cast<int*>(Z + QB * NCLS);
    const int q0 = blockIdx.x * QB;
    int nr = n_query - q0;
    nr = nr > QB ? QB : nr;
    for (int k = threadIdx.x; k < SSTATE + 4 * QRA * HS; k += NT) sm[k] = 0.0f;
    __syncthreads();
    for (int k = threadIdx.x; k < NSTATE; k += NT) P[spos(k)] = params[k];
    for (int r = threadIdx.x; r < nr; r += NT) rows[r] = q0 + r;
    __syncthreads();
    lift<QB>(L, R, RL, RR, raw_query, rows, nr);
    __syncthreads();
    branch_rows<QRB, true>(L, RL, RR, P, nr, alpha);
    __syncthreads();
    branch_rows<QRB, true>(R, RR, RL, P + WS, nr, alpha);
    __syncthreads();
    branch_rows<QRB, true>(L, RL, RR, P + 2 * WS, nr, alpha);
    __syncthreads();
    branch_rows<QRB, true>(R, RR, RL, P + 3 * WS, nr, alpha);
    __syncthreads();
    logits(Z, L, R, P, nr);
    __syncthreads();
    for (int r = threadIdx.x; r < nr; r += NT) {
        const float* z = Z + r * NCLS;
        int best = 0;
        for (int c = 0; c < NCLS; ++c) {
            scores[(long long)(q0 + r) * NCLS + c] = z[c];
            if (z[c] > z[best]) best = c;
        }
        predictions[q0 + r] = best;
    }
}
