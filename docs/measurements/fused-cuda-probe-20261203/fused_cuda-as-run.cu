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
// Training, rev88_train: ONE launch of G blocks (CTAs) of NT threads, one block per SM; G is a
// compile-time constant, as are ROWS = ceil(batch / G) and SPLIT.
//   * Every block keeps a whole copy of the parameters P and velocities V (7,554 floats each,
//     state-vector order of spec 3) and its rows' activations in shared memory; nothing is padded.
//   * Step s: block b takes rows [b*ROWS, (b+1)*ROWS) of the step's batch (none in a short last
//     batch), runs lift, forward, head, loss gradient and the reversible backward on them and
//     stores its partial gradient of all 7,554 parameters to part[s mod 2][b] in global memory.
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
#define NCLS 10                          // classes
#define DIM 82                           // lifted features
#define NWT (HF * HF)                    // floats per branch weight (row-major W[o][i])
#define HEAD_OFF (4 * NWT)               // head.weight (10 x 82) in the state vector
#define BIAS_OFF (HEAD_OFF + NCLS * DIM) // head.bias (10)
#define NSTATE (BIAS_OFF + NCLS)         // 7554
#define TIMED_OUT (1u << 30)

#ifndef NT
#define NT 256
#endif
#ifndef G
#define G 8
#endif
#ifndef ROWS
#define ROWS 16
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef QB
#define QB 64
#endif

__device__ __forceinline__ float relu(float x) { return x > 0.0f ? x : 0.0f; }

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

// Lift rows: x (81 raw pixels in [0, 1]) -> left = 4x[0..40] - 0.5, right = 4x[41..80] - 0.5 and a zero.
__device__ __forceinline__ void lift(float* L, float* R, const float* __restrict__ raw, const int* rows, int nr) {
    for (int k = threadIdx.x; k < nr * HF; k += NT) {
        int r = k / HF, i = k - r * HF;
        const float* x = raw + (long long)rows[r] * (DIM - 1);
        L[k] = x[i] * 4.0f - 0.5f;
        R[k] = i < HF - 1 ? x[HF + i] * 4.0f - 0.5f : 0.0f;
    }
}

// dst[r][o] += (sum_i relu(src[r][i]) * W[o][i]) * alpha for r < nr (one coupling branch, spec 2.2).
__device__ __forceinline__ void branch_forward(float* dst, const float* src, const float* W, int nr, float alpha) {
    for (int k = threadIdx.x; k < nr * HF; k += NT) {
        int r = k / HF, o = k - r * HF;
        const float* s = src + r * HF;
        const float* w = W + o * HF;
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < HF; ++i) acc = fmaf(relu(s[i]), w[i], acc);
        dst[k] += acc * alpha;
    }
}

// One branch of ReversibleCore.backward at the pre-step weight W, leaf h, upstream d (nr x 41 each):
//   LEAF: dacc[r][i] += h[r][i] > 0 ? sum_o (d[r][o]*alpha) W[o][i] : 0   (the leaf's gradient)
//         other[r][o] -= (sum_i relu(h[r][i]) W[o][i]) * alpha           (the activation rebuilt)
//   grad[o][i] = sum_{r < nr} (d[r][o]*alpha) relu(h[r][i])               (partial, global memory)
// None of the three reads what another writes, so they share one phase.
template <bool LEAF>
__device__ __forceinline__ void branch_backward(const float* h, const float* d, const float* W, float* dacc,
                                                float* other, float* grad, int nr, float alpha) {
    if (LEAF) {
        for (int k = threadIdx.x; k < nr * HF; k += NT) {
            int r = k / HF, c = k - r * HF;
            const float* dr = d + r * HF;
            const float* hr = h + r * HF;
            float leaf = 0.0f, branch = 0.0f;
#pragma unroll
            for (int j = 0; j < HF; ++j) {
                leaf = fmaf(dr[j] * alpha, W[j * HF + c], leaf);   // sum over o = j, column c = i
                branch = fmaf(relu(hr[j]), W[c * HF + j], branch);  // sum over i = j, row c = o
            }
            if (hr[c] > 0.0f) dacc[k] += leaf;
            other[k] -= branch * alpha;
        }
    }
    for (int k = threadIdx.x; k < NWT; k += NT) {
        int o = k / HF, i = k - o * HF;
        float acc = 0.0f;
        for (int r = 0; r < nr; ++r) acc = fmaf(d[r * HF + o] * alpha, relu(h[r * HF + i]), acc);
        grad[k] = acc;
    }
}

// Logits z[r][c] = l[r]·HL[c] + r[r]·HR[c] + b[c] for r < nr.
__device__ __forceinline__ void logits(float* Z, const float* L, const float* R, const float* P, int nr) {
    for (int k = threadIdx.x; k < nr * NCLS; k += NT) {
        int r = k / NCLS, c = k - r * NCLS;
        const float* hw = P + HEAD_OFF + c * DIM;
        float a = 0.0f, b = 0.0f;
#pragma unroll
        for (int i = 0; i < HF; ++i) {
            a = fmaf(L[r * HF + i], hw[i], a);
            b = fmaf(R[r * HF + i], hw[HF + i], b);
        }
        Z[k] = a + b + P[BIAS_OFF + c];
    }
}

extern "C" __global__ void __launch_bounds__(NT, 1)
rev88_train(const float* __restrict__ init, float* __restrict__ params_out, float* __restrict__ vel_out,
            float* part, float* pbuf, unsigned* sync, const float* __restrict__ raw,
            const long long* __restrict__ labels, const long long* __restrict__ orders, int n_train, int epochs,
            int batch, float alpha, float momentum, float neg_lr, float weight_decay, unsigned spin_limit) {
    extern __shared__ float sm[];
    float* P = sm;                  // parameters (NSTATE)
    float* V = P + NSTATE;          // velocities (NSTATE)
    float* L = V + NSTATE;          // left half of the rows (ROWS x 41)
    float* R = L + ROWS * HF;       // right half
    float* dL = R + ROWS * HF;      // gradients of the halves
    float* dR = dL + ROWS * HF;
    float* Z = dR + ROWS * HF;      // logits, then the loss gradient (ROWS x 10)
    int* rows = (int*)(Z + ROWS * NCLS);
    int* labs = rows + ROWS;
    const int b = blockIdx.x;
    // reset: every invocation starts from the initial parameters and zero velocities
    for (int k = threadIdx.x; k < NSTATE; k += NT) {
        P[k] = init[k];
        V[k] = 0.0f;
    }
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
        lift(L, R, raw, rows, nr);
        __syncthreads();
        branch_forward(L, R, P, nr, alpha);             // l1 = l0 + f(r0; W0)
        __syncthreads();
        branch_forward(R, L, P + NWT, nr, alpha);       // r1 = r0 + f(l1; W1)
        __syncthreads();
        branch_forward(L, R, P + 2 * NWT, nr, alpha);   // l2 = l1 + f(r1; W2)
        __syncthreads();
        branch_forward(R, L, P + 3 * NWT, nr, alpha);   // r2 = r1 + f(l2; W3)
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
            int c = k / DIM, j = k - c * DIM;
            const float* src = j < HF ? L + j : R + (j - HF);
            float acc = 0.0f;
            for (int r = 0; r < nr; ++r) acc = fmaf(Z[r * NCLS + c], src[r * HF], acc);
            gp[HEAD_OFF + k] = acc;
        }
        for (int c = threadIdx.x; c < NCLS; c += NT) {
            float acc = 0.0f;
            for (int r = 0; r < nr; ++r) acc += Z[r * NCLS + c];
            gp[BIAS_OFF + c] = acc;
        }
        for (int k = threadIdx.x; k < nr * DIM; k += NT) {
            int r = k / DIM, j = k - r * DIM;
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < NCLS; ++c) acc = fmaf(Z[r * NCLS + c], P[HEAD_OFF + c * DIM + j], acc);
            if (j < HF) dL[r * HF + j] = acc; else dR[r * HF + j - HF] = acc;
        }
        __syncthreads();
        // reversible backward: block 1 (W3, W2) then block 0 (W1, W0)
        branch_backward<true>(L, dR, P + 3 * NWT, dL, R, gp + 3 * NWT, nr, alpha);   // r1 = r2 - f(l2)
        __syncthreads();
        branch_backward<true>(R, dL, P + 2 * NWT, dR, L, gp + 2 * NWT, nr, alpha);   // l1 = l2 - f(r1)
        __syncthreads();
        branch_backward<true>(L, dR, P + NWT, dL, R, gp + NWT, nr, alpha);           // r0 = r1 - f(l1)
        __syncthreads();
        branch_backward<false>(R, dL, P, dL, L, gp, nr, alpha);                      // W0's gradient only
        const float* pb = part + (long long)(s & 1) * G * NSTATE;
#if SPLIT
        grid_barrier(sync, (unsigned)(2 * s + 1) * G, spin_limit);
        for (int k = lo + threadIdx.x; k < hi; k += NT) {
            float g = __ldcg(pb + k);
#pragma unroll
            for (int q = 1; q < G; ++q) g += __ldcg(pb + (long long)q * NSTATE + k);
            float v = V[k] * momentum + g;
            v = v + weight_decay * P[k];
            V[k] = v;
            pbuf[k] = P[k] + neg_lr * v;
        }
        grid_barrier(sync, (unsigned)(2 * s + 2) * G, spin_limit);
        for (int k = threadIdx.x; k < NSTATE; k += NT) P[k] = __ldcg(pbuf + k);
        __syncthreads();
#else
        grid_barrier(sync, (unsigned)(s + 1) * G, spin_limit);
        for (int k = threadIdx.x; k < NSTATE; k += NT) {
            float g = __ldcg(pb + k);
#pragma unroll
            for (int q = 1; q < G; ++q) g += __ldcg(pb + (long long)q * NSTATE + k);
            float v = V[k] * momentum + g;
            v = v + weight_decay * P[k];
            V[k] = v;
            P[k] = P[k] + neg_lr * v;
        }
        __syncthreads();
#endif
    }
#if SPLIT
    for (int k = lo + threadIdx.x; k < hi; k += NT) {
        params_out[k] = P[k];
        vel_out[k] = V[k];
    }
#else
    if (b == 0) {
        for (int k = threadIdx.x; k < NSTATE; k += NT) {
            params_out[k] = P[k];
            vel_out[k] = V[k];
        }
    }
#endif
}

extern "C" __global__ void __launch_bounds__(NT)
rev88_predict(const float* __restrict__ params, const float* __restrict__ raw_query, float* __restrict__ scores,
              long long* __restrict__ predictions, int n_query, float alpha) {
    extern __shared__ float sm[];
    float* P = sm;
    float* L = P + NSTATE;
    float* R = L + QB * HF;
    float* Z = R + QB * HF;
    int* rows = (int*)(Z + QB * NCLS);
    const int q0 = blockIdx.x * QB;
    int nr = n_query - q0;
    nr = nr > QB ? QB : nr;
    for (int k = threadIdx.x; k < NSTATE; k += NT) P[k] = params[k];
    for (int r = threadIdx.x; r < nr; r += NT) rows[r] = q0 + r;
    __syncthreads();
    lift(L, R, raw_query, rows, nr);
    __syncthreads();
    branch_forward(L, R, P, nr, alpha);
    __syncthreads();
    branch_forward(R, L, P + NWT, nr, alpha);
    __syncthreads();
    branch_forward(L, R, P + 2 * NWT, nr, alpha);
    __syncthreads();
    branch_forward(R, L, P + 3 * NWT, nr, alpha);
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
