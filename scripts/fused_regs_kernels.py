"""Experimental: the multi-CTA training kernel with register-resident activations (a probe for issue 16).

Same signature, work layout, partial buffers, barrier and update as
``bundle.fused_kernels.grid_train_kernel``; the difference is that no activation passes through
the staging tiles in ``work``: every product takes its operands as register tensors (triton
moves them through shared memory itself), each weight tile is loaded whole (64 × 64, the summed
axis in one ``tl.dot``, zero padding past column 41 adding exact +0 products), and transposed
operands come from ``tl.trans``. ``KP``, ``KF``, ``KR`` and ``PREC`` are accepted and unused (one
IEEE float32 ``tl.dot`` per product). ``scripts/fused_regs_probe.py`` swaps it into a ``FusedTask``.

Status (2026-12-02, measured): slower than the shipped kernel, so it stays a probe. One H200
(``GPU-b9eccfb1``, torch 2.11, triton 3.6.0; ``docs/measurements/fused-regs-probe-20261202.json``),
draw 0, each shape in a fresh process, median of 20 invocations after 3 warm-ups, in ms/task:

=================  ============  ==========================
G, warps           this kernel   bundle/fused_kernels.py
=================  ============  ==========================
2, 8               25.09         17.02
2, 4               215.65        (not run)
4, 8               12.38         12.62 (4 warps)
8, 8               8.58          7.47
8, 4               8.83          (not run)
8, 16              16.56         (not run)
16, 8 (chunk 2048) 8.74          7.63 (4 warps)
=================  ============  ==========================

Every shape gave draw 0's frozen predictions hash, and at G = 8, 8 warps all 11 draws gave the
frozen predictions (0 flips). In triton's interpreter (triton 3.9, CPU) it gives draw 0's frozen
predictions hash at G = 4. Offline sm_90a compiles (triton 3.9, its ptxas 13.4, 128-row batches)
point to the cause: a whole-K FMA product holds all 64 terms of its operands in registers, so it
spills where the shipped kernel does not:

=================  ==========================  ==========================
G, warps           this kernel                 bundle/fused_kernels.py
=================  ==========================  ==========================
8, 4               255 registers, 1,968 B      255 registers, 64 B
8, 8               255 registers, 192 B        178 registers, 0 B
8, 16              64 registers, 1,592 B       104 registers, 0 B
16, 8              255 registers, 176 B        178 registers, 0 B
4, 16              128 registers, 976 B        107 registers, 0 B
=================  ==========================  ==========================

(stack frame per thread). Fewer round trips through memory did not outweigh the spills.
"""

import triton
import triton.language as tl

from bundle.fused_kernels import _ce_grad, _copy_params, _grid_barrier, _grid_reduce_step, _lifted


@triton.jit
def _relu_branch(h, wt, alpha):
    """relu(h)·Wᵀ × alpha (spec 2.2 order), h (R, P) registers, wt the (P, P) tile Wᵀ in registers."""
    return tl.dot(tl.maximum(h, 0.0), wt, input_precision="ieee") * alpha


@triton.jit
def _regs_backward(h, d, w_ptr, g_ptr, w_n, w_t, cw, wm, alpha, LEAF: tl.constexpr):
    """One branch of ``ReversibleCore.backward`` at the pre-step weight W (leaf h, upstream d, (R, P)).

    Stores the partial gradient (d·alpha)ᵀ·relu(h) compact at g_ptr; returns (d(leaf) masked by
    h > 0, the recomputed branch relu(h)·Wᵀ × alpha), or (0, 0) without LEAF."""
    a = tl.maximum(h, 0.0)
    dd = d * alpha
    grad = tl.dot(tl.trans(dd), a, input_precision="ieee")
    tl.store(g_ptr + cw, grad, mask=wm)
    if LEAF:
        d_leaf = tl.dot(dd, tl.load(w_ptr + w_n), input_precision="ieee")
        branch = tl.dot(a, tl.load(w_ptr + w_t), input_precision="ieee") * alpha
        return tl.where(h > 0.0, d_leaf, 0.0), branch
    zero = tl.full(h.shape, 0.0, tl.float32)
    return zero, zero


@triton.jit
def grid_train_kernel(init_ptr, param_ptr, vel_ptr, work_ptr, sync_ptr, map_ptr, raw_ptr, label_ptr, order_ptr,
                      alpha, momentum, neg_lr, weight_decay,
                      N_TRAIN: tl.constexpr, EPOCHS: tl.constexpr, BATCH: tl.constexpr, G: tl.constexpr,
                      ROWS: tl.constexpr, BLOCK_R: tl.constexpr, STATE: tl.constexpr, CSTATE: tl.constexpr,
                      RED: tl.constexpr,
                      P: tl.constexpr, KP: tl.constexpr, C: tl.constexpr, KF: tl.constexpr, KR: tl.constexpr,
                      HALF: tl.constexpr, NCLS: tl.constexpr, STEP_BEGIN: tl.constexpr, STEP_END: tl.constexpr,
                      FINAL: tl.constexpr, BARRIER: tl.constexpr, SPIN_LIMIT: tl.constexpr,
                      TIMED_OUT: tl.constexpr, PREC: tl.constexpr):
    """As ``bundle.fused_kernels.grid_train_kernel`` (same arguments, modes and protocol)."""
    NB = (N_TRAIN + BATCH - 1) // BATCH
    pid = tl.program_id(0)
    own = work_ptr + pid * (2 * STATE + 2 * BLOCK_R * P + BLOCK_R * C)
    part = work_ptr + G * (2 * STATE + 2 * BLOCK_R * P + BLOCK_R * C)
    head = own + 4 * P * P
    rows = tl.arange(0, BLOCK_R)
    cols = tl.arange(0, P)
    cls = tl.arange(0, C)
    w_t = cols[:, None] + (cols * P)[None, :]       # (P, P) Wᵀ: [k, n] = W[n, k]
    w_n = (cols * P)[:, None] + cols[None, :]       # (P, P) W
    h_t = cols[:, None] + (cls * (2 * P))[None, :]  # (P, C) a head half, transposed
    h_n = (cls * (2 * P))[:, None] + cols[None, :]  # (C, P) a head half
    cw = (cols * HALF)[:, None] + cols[None, :]
    wm = (cols < HALF)[:, None] & (cols < HALF)[None, :]
    ch = (cls * (2 * HALF))[:, None] + cols[None, :]
    hm = (cls < NCLS)[:, None] & (cols < HALF)[None, :]
    if STEP_BEGIN == 0:
        zero = tl.full((RED,), 0.0, tl.float32)
        for start in range(0, 2 * STATE, RED):
            tl.store(own + start + tl.arange(0, RED), zero)
        tl.debug_barrier()
        _copy_params(init_ptr, own, True, HALF, NCLS, P, C)
        tl.debug_barrier()
    else:
        if not BARRIER:
            _grid_reduce_step(own, part + ((STEP_BEGIN - 1) % 2) * G * CSTATE, map_ptr, momentum, neg_lr,
                              weight_decay, G, STATE, CSTATE, RED)
    for s in range(STEP_BEGIN, STEP_END):
        e = s // NB
        first = (s - e * NB) * BATCH
        count = tl.minimum(N_TRAIN - first, BATCH)
        local = pid * ROWS + rows
        rmask = (rows < ROWS) & (local < count)
        index = tl.load(order_ptr + e * N_TRAIN + first + local, mask=rmask, other=0)
        labels = tl.load(label_ptr + index, mask=rmask, other=0)
        l0, r0 = _lifted(raw_ptr, index, rmask, HALF, P)
        l1 = l0 + _relu_branch(r0, tl.load(own + w_t), alpha)
        r1 = r0 + _relu_branch(l1, tl.load(own + P * P + w_t), alpha)
        l2 = l1 + _relu_branch(r1, tl.load(own + 2 * P * P + w_t), alpha)
        r2 = r1 + _relu_branch(l2, tl.load(own + 3 * P * P + w_t), alpha)
        z = tl.dot(l2, tl.load(head + h_t), input_precision="ieee")
        z = tl.dot(r2, tl.load(head + P + h_t), z, input_precision="ieee")
        z = z + tl.load(head + C * 2 * P + cls)[None, :]
        z = tl.where(cls[None, :] < NCLS, z, float("-inf"))
        g = _ce_grad(z, labels, rmask, count, cls, NCLS)
        grads = part + ((s % 2) * G + pid) * CSTATE
        gt = tl.trans(g)
        tl.store(grads + 4 * HALF * HALF + ch, tl.dot(gt, l2, input_precision="ieee"), mask=hm)
        tl.store(grads + 4 * HALF * HALF + HALF + ch, tl.dot(gt, r2, input_precision="ieee"), mask=hm)
        tl.store(grads + 4 * HALF * HALF + NCLS * 2 * HALF + cls, tl.sum(g, axis=0), mask=cls < NCLS)
        dl = tl.dot(g, tl.load(head + h_n), input_precision="ieee")
        dr = tl.dot(g, tl.load(head + P + h_n), input_precision="ieee")
        d_leaf, branch = _regs_backward(l2, dr, own + 3 * P * P, grads + 3 * HALF * HALF, w_n, w_t, cw, wm, alpha,
                                        True)
        dl = dl + d_leaf
        r1 = r2 - branch
        d_leaf, branch = _regs_backward(r1, dl, own + 2 * P * P, grads + 2 * HALF * HALF, w_n, w_t, cw, wm, alpha,
                                        True)
        dr = dr + d_leaf
        l1 = l2 - branch
        d_leaf, branch = _regs_backward(l1, dr, own + P * P, grads + HALF * HALF, w_n, w_t, cw, wm, alpha, True)
        dl = dl + d_leaf
        r0 = r1 - branch
        _regs_backward(r0, dl, own, grads, w_n, w_t, cw, wm, alpha, False)
        if BARRIER:
            _grid_barrier(sync_ptr, (s + 1) * G, SPIN_LIMIT, TIMED_OUT)
            _grid_reduce_step(own, part + (s % 2) * G * CSTATE, map_ptr, momentum, neg_lr, weight_decay, G, STATE,
                              CSTATE, RED)
    if FINAL:
        if pid == 0:
            _copy_params(param_ptr, own, False, HALF, NCLS, P, C)
            _copy_params(vel_ptr, own + STATE, False, HALF, NCLS, P, C)
