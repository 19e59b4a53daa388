"""Triton kernels of the fused rev88 learner (``rev88-fused``); the host side is :mod:`bundle.fused_learner`.

Three kernels:

* :func:`train_kernel` — one program (one CTA) runs a whole invocation: reset from the initial
  copy, then every update of every epoch (gather, lift, core forward, mean cross-entropy
  gradient, head gradient, reversible backward through both coupling blocks with activations
  rebuilt by subtraction as in ``bundle.learner.ReversibleCore``, momentum SGD), then writes
  the final parameters and velocities in the flat layout below.
* :func:`grid_train_kernel` — the same training over G programs (CTAs): each batch's rows split
  between them, partial gradients to global memory, a grid barrier (an atomic arrival counter),
  then every program sums the partials in one fixed order and updates its own state copy. On
  the GPU one launch; in the interpreter one launch per step (its docstring has the protocol).
* :func:`predict_kernel` — a grid over blocks of query rows: lift, core forward, head,
  float32 logits and the first maximal class index (the tie rule of ``torch.argmax``).

Layouts. ``params``/``velocity``/``initial`` are flat float32 (7554,) in the state-vector
order of spec 3 (``weights.0`` … ``weights.3`` 41×41 row-major, ``head.weight`` 10×82,
``head.bias`` 10). While it trains, the program keeps its state in a float32 ``work`` buffer
(device memory that stays in the SM's L1/L2), padded so that no product needs a mask: per
weight a 64×64 tile, the head a 16×128 tile (features 0…40 in columns 0…40, 41…81 in columns
64…104), the bias 16, the same again for the velocities, then three staging tiles for
products (two BLOCK_B×64, one BLOCK_B×16). Padded entries are zero and stay zero (their
gradients are zero); logits of padded classes are −inf. ``predict_kernel`` reads the trained
tiles from ``work`` and stages its products in ``scratch`` (one BLOCK_Q×64 tile per program).

Products. Every matrix product (:func:`_mm`) reads both operands from memory in slices along
the summed axis (``KF`` over features, ``KR`` over batch rows, compile-time constants chosen
by the host) and accumulates ``tl.dot(a, b, acc, input_precision=PREC)`` in float32. ``PREC``
is the host's product precision (``bundle.fused_learner.PRODUCT_PRECISIONS``): ``"ieee"``, the
default and the frozen procedure's arithmetic, is IEEE float32 multiply-adds, no TF32 (the
argument exists with this meaning from triton 3.1.0 on); ``"tf32x3"`` runs the products on tensor
cores from a three-term TF32 split of each float32 operand (hi·hi + hi·lo + lo·hi, accumulated in
float32): other rounding than float32 multiply-adds, so its final bits differ, and whether its
predictions are the frozen ones is measured, per draw.
Products over features sum only the first ``KP`` columns (``KP`` the smallest multiple of ``KF``
that is >= 41: 48 for slices of 16, 64 for 32): the columns past 41 of every operand are zero
padding, so the slices past ``KP`` would add exact zeros (+0 products) and skipping them leaves
every bit as it was; products over batch rows and over classes sum their whole tile.
Register-resident operands summed over all 64 or 128 terms at once made ptxas spill
(measured offline for sm_90: 48 KB of stack per thread and 208 KB of shared memory); slices
of 32 from memory do not. ``tl.debug_barrier()`` separates every store to a staging tile
from the loads of other threads.

With ``TRITON_INTERPRET=1`` in the environment before this module is imported, triton runs
these same functions on CPU tensors with numpy (its interpreter; barriers are no-ops there,
and it runs a grid's programs one after another, which is why the multi-CTA kernel compiles
its grid barrier out there). Triton features used beyond the single-CTA kernel's:
``tl.atomic_add``/``tl.atomic_max`` with ``sem``/``scope`` and ``tl.load(cache_modifier=".cg")``,
all in triton 3.1.0 (``tl.atomic_load`` would read the counter more directly but is newer).
No ``from __future__ import annotations`` here: triton 3.1.0's interpreter reads the
``tl.constexpr`` annotations as objects, not strings. The bytes of this file are what
``bundle.fused_learner.kernel_source_sha256`` hashes.
"""

import triton
import triton.language as tl


@triton.jit
def _mm(a_ptr, A_RS: tl.constexpr, A_CS: tl.constexpr, b_ptr, B_RS: tl.constexpr, B_CS: tl.constexpr,
        M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, KC: tl.constexpr, PREC: tl.constexpr):
    """(M, N) float32 = A·B, A[m, k] = a_ptr[m·A_RS + k·A_CS], B[k, n] = b_ptr[k·B_RS + n·B_CS], K in slices of KC."""
    kc = tl.arange(0, KC)
    a_ptrs = a_ptr + tl.arange(0, M)[:, None] * A_RS + kc[None, :] * A_CS
    b_ptrs = b_ptr + kc[:, None] * B_RS + tl.arange(0, N)[None, :] * B_CS
    acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, KC):
        acc = tl.dot(tl.load(a_ptrs + k * A_CS), tl.load(b_ptrs + k * B_RS), acc, input_precision=PREC)
    return acc


@triton.jit
def _store_tile(ptr, x, R: tl.constexpr, W: tl.constexpr):
    """Store the (R, W) tile x row-major at ptr, then a barrier (visible to the whole program)."""
    r = tl.arange(0, R)
    c = tl.arange(0, W)
    tl.store(ptr + r[:, None] * W + c[None, :], x)
    tl.debug_barrier()


@triton.jit
def _branch(h, w_ptr, s_ptr, alpha, R: tl.constexpr, P: tl.constexpr, KP: tl.constexpr, KC: tl.constexpr, PREC: tl.constexpr):
    """relu(h)·Wᵀ × alpha (spec 2.2 order: relu → linear → scale); h (R, P), W a (P, P) tile; s_ptr staging.

    The sum runs over the first KP features only (KP >= 41: the rest of the tile is zero padding)."""
    _store_tile(s_ptr, tl.maximum(h, 0.0), R, P)
    out = _mm(s_ptr, P, 1, w_ptr, 1, P, R, P, KP, KC, PREC) * alpha
    tl.debug_barrier()
    return out


@triton.jit
def _head(h_ptr, l_ptr, r_ptr, R: tl.constexpr, P: tl.constexpr, KP: tl.constexpr, C: tl.constexpr,
          KC: tl.constexpr, NCLS: tl.constexpr, PREC: tl.constexpr):
    """Logits (R, C) = L·HLᵀ + R·HRᵀ + bias from staged halves (sums over the first KP features); padded
    classes −inf. h_ptr: head tile, bias after."""
    cls = tl.arange(0, C)
    z = _mm(l_ptr, P, 1, h_ptr, 1, 2 * P, R, C, KP, KC, PREC)
    z = z + _mm(r_ptr, P, 1, h_ptr + P, 1, 2 * P, R, C, KP, KC, PREC)
    z = z + tl.load(h_ptr + C * 2 * P + cls)[None, :]
    return tl.where(cls[None, :] < NCLS, z, float("-inf"))


@triton.jit
def _lifted(raw_ptr, rows, rmask, HALF: tl.constexpr, P: tl.constexpr):
    """Rows of raw pixels (N, 81) → the two halves of the 82-lift 4x − 0.5 (+ a zero), (R, P) each, zero-padded."""
    cols = tl.arange(0, P)
    base = raw_ptr + rows[:, None] * (2 * HALF - 1)
    left_mask = rmask[:, None] & (cols[None, :] < HALF)
    right_mask = rmask[:, None] & (cols[None, :] < HALF - 1)   # coordinate 81 is the appended zero
    left = tl.load(base + cols[None, :], mask=left_mask, other=0.0)
    right = tl.load(base + HALF + cols[None, :], mask=right_mask, other=0.0)
    return tl.where(left_mask, left * 4.0 - 0.5, 0.0), tl.where(right_mask, right * 4.0 - 0.5, 0.0)


@triton.jit
def _ce_grad(z, labels, rmask, count, cls, NCLS: tl.constexpr):
    """Mean cross-entropy gradient (exp(log_softmax(z)) − onehot(labels)) / count, (R, C); dead rows and padded classes 0.

    count is the whole batch's row count (int32 scalar), as the frozen mean reduction divides by it.
    """
    shifted = z - tl.max(z, axis=1)[:, None]
    log_sum = tl.log(tl.sum(tl.exp(shifted), axis=1))
    prob = tl.exp(shifted - log_sum[:, None])
    onehot = tl.where(cls[None, :] == labels[:, None], 1.0, 0.0)
    live = rmask[:, None] & (cls[None, :] < NCLS)
    return tl.where(live, (prob - onehot) / count.to(tl.float32), 0.0)


@triton.jit
def _sgd(p_ptr, v_ptr, offs, grad, momentum, neg_lr, weight_decay):
    """v ← v·momentum + grad (+ wd·p); p ← p + (−lr)·v (spec 2.6 order), in place."""
    p = tl.load(p_ptr + offs)
    v = tl.load(v_ptr + offs) * momentum + grad
    v = v + weight_decay * p
    tl.store(v_ptr + offs, v)
    tl.store(p_ptr + offs, p + neg_lr * v)


@triton.jit
def _weight_step(w_ptr, v_ptr, sa_ptr, sb_ptr, momentum, neg_lr, weight_decay,
                 R: tl.constexpr, P: tl.constexpr, KC: tl.constexpr, PREC: tl.constexpr):
    """Gradient (sb)ᵀ·(sa) of a branch weight (P, P) from the staged tiles, then its SGD step (after a barrier)."""
    grad = _mm(sb_ptr, 1, P, sa_ptr, P, 1, P, P, R, KC, PREC)
    tl.debug_barrier()
    i = tl.arange(0, P)
    _sgd(w_ptr, v_ptr, i[:, None] * P + i[None, :], grad, momentum, neg_lr, weight_decay)


@triton.jit
def _branch_backward(h, d, w_ptr, v_ptr, sa_ptr, sb_ptr, alpha, momentum, neg_lr, weight_decay,
                     R: tl.constexpr, P: tl.constexpr, KP: tl.constexpr, KF: tl.constexpr, KR: tl.constexpr, PREC: tl.constexpr):
    """One branch of ``ReversibleCore.backward``: leaf h, upstream d (both (R, P)).

    Returns (d(leaf) masked by h > 0, the recomputed branch relu(h)·Wᵀ × alpha); W takes its
    SGD step once nothing of this update reads it any more.
    """
    _store_tile(sa_ptr, tl.maximum(h, 0.0), R, P)
    _store_tile(sb_ptr, d * alpha, R, P)
    d_leaf = _mm(sb_ptr, P, 1, w_ptr, P, 1, R, P, KP, KF, PREC)
    branch = _mm(sa_ptr, P, 1, w_ptr, 1, P, R, P, KP, KF, PREC) * alpha
    _weight_step(w_ptr, v_ptr, sa_ptr, sb_ptr, momentum, neg_lr, weight_decay, R, P, KR, PREC)
    return tl.where(h > 0.0, d_leaf, 0.0), branch


@triton.jit
def _copy_params(flat_ptr, tiles_ptr, TO_TILES: tl.constexpr, HALF: tl.constexpr, NCLS: tl.constexpr,
                 P: tl.constexpr, C: tl.constexpr):
    """Flat (7554,) ↔ padded tiles (4 × P×P, C×2P head, C bias); padding written as zeros when TO_TILES."""
    i = tl.arange(0, P)
    wmask = (i[:, None] < HALF) & (i[None, :] < HALF)
    for b in tl.static_range(4):
        flat = flat_ptr + b * HALF * HALF + i[:, None] * HALF + i[None, :]
        tile = tiles_ptr + b * P * P + i[:, None] * P + i[None, :]
        if TO_TILES:
            tl.store(tile, tl.load(flat, mask=wmask, other=0.0))
        else:
            tl.store(flat, tl.load(tile), mask=wmask)
    cls = tl.arange(0, C)
    hmask = (cls[:, None] < NCLS) & (i[None, :] < HALF)
    for half in tl.static_range(2):
        flat = flat_ptr + 4 * HALF * HALF + cls[:, None] * (2 * HALF) + half * HALF + i[None, :]
        tile = tiles_ptr + 4 * P * P + cls[:, None] * (2 * P) + half * P + i[None, :]
        if TO_TILES:
            tl.store(tile, tl.load(flat, mask=hmask, other=0.0))
        else:
            tl.store(flat, tl.load(tile), mask=hmask)
    flat = flat_ptr + 4 * HALF * HALF + NCLS * 2 * HALF + cls
    tile = tiles_ptr + 4 * P * P + C * 2 * P + cls
    if TO_TILES:
        tl.store(tile, tl.load(flat, mask=cls < NCLS, other=0.0))
    else:
        tl.store(flat, tl.load(tile), mask=cls < NCLS)


@triton.jit
def train_kernel(init_ptr, param_ptr, vel_ptr, work_ptr, raw_ptr, label_ptr, order_ptr,
                 alpha, momentum, neg_lr, weight_decay,
                 N_TRAIN: tl.constexpr, EPOCHS: tl.constexpr, BATCH: tl.constexpr, BLOCK_B: tl.constexpr,
                 P: tl.constexpr, KP: tl.constexpr, C: tl.constexpr, KF: tl.constexpr, KR: tl.constexpr,
                 HALF: tl.constexpr, NCLS: tl.constexpr, PREC: tl.constexpr):
    """One invocation's reset and training in one program (launch with grid (1,)).

    Args (pointers to contiguous tensors on one device):
        init_ptr: float32 (7554,) initial parameters (read only).
        param_ptr, vel_ptr: float32 (7554,) final parameters and velocities (written at the end).
        work_ptr: float32 work buffer, :data:`bundle.fused_learner.work_floats` elements.
        raw_ptr: float32 (N_TRAIN, 81) raw training pixels in [0, 1].
        label_ptr: int64 (N_TRAIN,) labels 0…9.
        order_ptr: int64 (EPOCHS, N_TRAIN) epoch permutations.
        alpha, momentum, neg_lr, weight_decay: float32 scalars (neg_lr = −learning_rate).
        N_TRAIN, EPOCHS, BATCH: training rows, epochs, batch size. Compile-time constants
            because triton 3.1.0's interpreter cannot iterate over a runtime scalar under numpy 2.
        BLOCK_B: rows per batch tile (power of two >= 16 and >= BATCH).
        P, C: tile widths for a half (64 >= HALF) and the classes (16 >= NCLS).
        KP: features summed in products over features: a multiple of KF, HALF <= KP <= P (the
            columns past HALF are zero padding, so the slices past KP would add exact zeros).
        KF, KR: slices of the summed axis in products over features (divides KP) and over batch
            rows (divides BLOCK_B); >= 16.
        HALF, NCLS: 41 and 10.
    """
    tiles = P * P * 4 + C * 2 * P + C
    vel_tiles = work_ptr + tiles
    sa = work_ptr + 2 * tiles
    sb = sa + BLOCK_B * P
    sg = sb + BLOCK_B * P
    head = work_ptr + 4 * P * P
    vel_head = vel_tiles + 4 * P * P
    _copy_params(init_ptr, work_ptr, True, HALF, NCLS, P, C)
    zero = tl.zeros((BLOCK_B, P), dtype=tl.float32)
    for start in range(0, tiles, BLOCK_B * P):   # velocities start at exact zeros
        offs = start + tl.arange(0, BLOCK_B)[:, None] * P + tl.arange(0, P)[None, :]
        tl.store(vel_tiles + offs, zero, mask=offs < tiles)
    tl.debug_barrier()

    rows = tl.arange(0, BLOCK_B)
    cls = tl.arange(0, C)
    cols = tl.arange(0, P)
    for e in range(0, EPOCHS):
        for first in range(0, N_TRAIN, BATCH):
            count = tl.minimum(N_TRAIN - first, BATCH)
            rmask = rows < count
            index = tl.load(order_ptr + e * N_TRAIN + first + rows, mask=rmask, other=0)
            labels = tl.load(label_ptr + index, mask=rmask, other=0)
            l0, r0 = _lifted(raw_ptr, index, rmask, HALF, P)
            # core forward (spec 2.2); only its output (l2, r2) is kept for the backward
            l1 = l0 + _branch(r0, work_ptr, sa, alpha, BLOCK_B, P, KP, KF, PREC)
            r1 = r0 + _branch(l1, work_ptr + P * P, sa, alpha, BLOCK_B, P, KP, KF, PREC)
            l2 = l1 + _branch(r1, work_ptr + 2 * P * P, sa, alpha, BLOCK_B, P, KP, KF, PREC)
            r2 = r1 + _branch(l2, work_ptr + 3 * P * P, sa, alpha, BLOCK_B, P, KP, KF, PREC)
            _store_tile(sa, l2, BLOCK_B, P)
            _store_tile(sb, r2, BLOCK_B, P)
            z = _head(head, sa, sb, BLOCK_B, P, KP, C, KF, NCLS, PREC)
            # mean cross-entropy gradient: (exp(log_softmax) − onehot) / count, padded rows 0
            g = _ce_grad(z, labels, rmask, count, cls, NCLS)
            _store_tile(sg, g, BLOCK_B, C)
            # head gradient, the core's upstream gradient, then the head's SGD step
            g_head_left = _mm(sg, 1, C, sa, P, 1, C, P, BLOCK_B, KR, PREC)
            g_head_right = _mm(sg, 1, C, sb, P, 1, C, P, BLOCK_B, KR, PREC)
            dl = _mm(sg, C, 1, head, 2 * P, 1, BLOCK_B, P, C, C, PREC)
            dr = _mm(sg, C, 1, head + P, 2 * P, 1, BLOCK_B, P, C, C, PREC)
            tl.debug_barrier()
            hoffs = cls[:, None] * (2 * P) + cols[None, :]
            _sgd(head, vel_head, hoffs, g_head_left, momentum, neg_lr, weight_decay)
            _sgd(head, vel_head, hoffs + P, g_head_right, momentum, neg_lr, weight_decay)
            _sgd(head, vel_head, C * 2 * P + cls, tl.sum(g, axis=0), momentum, neg_lr, weight_decay)
            # reversible backward (bundle.learner.ReversibleCore.backward): block 1 then block 0;
            # each branch is recomputed from the rebuilt leaf and subtracted
            d_leaf, branch = _branch_backward(l2, dr, work_ptr + 3 * P * P, vel_tiles + 3 * P * P, sa, sb, alpha,
                                              momentum, neg_lr, weight_decay, BLOCK_B, P, KP, KF, KR, PREC)
            dl = dl + d_leaf
            r1 = r2 - branch
            d_leaf, branch = _branch_backward(r1, dl, work_ptr + 2 * P * P, vel_tiles + 2 * P * P, sa, sb, alpha,
                                              momentum, neg_lr, weight_decay, BLOCK_B, P, KP, KF, KR, PREC)
            dr = dr + d_leaf
            l1 = l2 - branch
            d_leaf, branch = _branch_backward(l1, dr, work_ptr + P * P, vel_tiles + P * P, sa, sb, alpha,
                                              momentum, neg_lr, weight_decay, BLOCK_B, P, KP, KF, KR, PREC)
            dl = dl + d_leaf
            r0 = r1 - branch
            _store_tile(sa, tl.maximum(r0, 0.0), BLOCK_B, P)    # last branch: only its weight gradient
            _store_tile(sb, dl * alpha, BLOCK_B, P)
            _weight_step(work_ptr, vel_tiles, sa, sb, momentum, neg_lr, weight_decay, BLOCK_B, P, KR, PREC)
            tl.debug_barrier()
    _copy_params(param_ptr, work_ptr, False, HALF, NCLS, P, C)
    _copy_params(vel_ptr, vel_tiles, False, HALF, NCLS, P, C)


# --------------------------------------------------------------------------------------------
# Multi-CTA training (``FusedTask(ctas=G)``, G >= 2): the rows of every batch split over G programs.
# --------------------------------------------------------------------------------------------


# The grid helpers write their products' slice loops out instead of calling a product helper
# (as _mm): each call of a jit function costs triton's interpreter a re-patch of triton.language
# (~1 ms), and the interpreter runs every helper G times per step. Offsets are precomputed tiles
# (grid_train_kernel) for the same reason (int32 arithmetic is overflow-checked there), and zero
# tiles come from tl.full (tl.zeros is itself a jit function in recent triton).


@triton.jit
def _grid_forward(h, w_ptr, sa, rp, a_rk, w_t, alpha, R: tl.constexpr, P: tl.constexpr, KP: tl.constexpr,
                  KF: tl.constexpr, PREC: tl.constexpr):
    """relu(h)·Wᵀ × alpha (spec 2.2 order) for h (R, P), summed over the first KP features; sa a staging
    tile; offset tiles as in grid_train_kernel."""
    tl.store(sa + rp, tl.maximum(h, 0.0))
    tl.debug_barrier()
    acc = tl.full((R, P), 0.0, tl.float32)
    for k in tl.static_range(0, KP, KF):
        acc = tl.dot(tl.load(sa + a_rk + k), tl.load(w_ptr + w_t + k), acc, input_precision=PREC)
    tl.debug_barrier()
    return acc * alpha


@triton.jit
def _grid_backward(h, d, w_ptr, g_ptr, sa, sb, rp, a_rk, w_t, w_n, cw, wm, s_t, s_k, alpha, LEAF: tl.constexpr,
                   R: tl.constexpr, P: tl.constexpr, KP: tl.constexpr, KF: tl.constexpr, KR: tl.constexpr, PREC: tl.constexpr):
    """One branch of ``ReversibleCore.backward`` at the pre-step weight W: leaf h, upstream d ((R, P) each).

    Stores the partial gradient (d·alpha)ᵀ·relu(h) of W over this program's rows, its live 41×41 block
    row-major at g_ptr (offsets cw where wm, the compact layout of grid_train_kernel).
    Returns (d(leaf) masked by h > 0, the recomputed branch relu(h)·Wᵀ × alpha); with LEAF false
    (the first branch, whose input gradient nothing needs) only the weight gradient, and zeros.
    """
    tl.store(sa + rp, tl.maximum(h, 0.0))
    tl.store(sb + rp, d * alpha)
    tl.debug_barrier()
    d_leaf = tl.full((R, P), 0.0, tl.float32)
    branch = tl.full((R, P), 0.0, tl.float32)
    if LEAF:
        for k in tl.static_range(0, KP, KF):
            d_leaf = tl.dot(tl.load(sb + a_rk + k), tl.load(w_ptr + w_n + k * P), d_leaf, input_precision=PREC)
            branch = tl.dot(tl.load(sa + a_rk + k), tl.load(w_ptr + w_t + k), branch, input_precision=PREC)
    grad = tl.full((P, P), 0.0, tl.float32)
    for k in tl.static_range(0, R, KR):
        grad = tl.dot(tl.load(sb + s_t + k * P), tl.load(sa + s_k + k * P), grad, input_precision=PREC)
    tl.debug_barrier()   # the staging tiles are rewritten next
    tl.store(g_ptr + cw, grad, mask=wm)
    return tl.where(h > 0.0, d_leaf, 0.0), branch * alpha


@triton.jit
def _grid_head_backward(g, sg, sa, sb, head, grads, rc, g_t, s_k, h_n, ch, hm, cls, R: tl.constexpr,
                        P: tl.constexpr, C: tl.constexpr, KR: tl.constexpr, HALF: tl.constexpr, NCLS: tl.constexpr, PREC: tl.constexpr):
    """Head backward from the logit gradient g (R, C) with l2, r2 staged in sa, sb: stores the partial
    head gradients (gᵀ·l2 | gᵀ·r2 as the 10×82 weight, then Σ rows g, the bias) compact at grads
    (offsets ch where hm); returns the core's upstream gradients (g·HL, g·HR), (R, P) each, at the
    pre-step head."""
    tl.store(sg + rc, g)
    tl.debug_barrier()
    g_left = tl.full((C, P), 0.0, tl.float32)
    g_right = tl.full((C, P), 0.0, tl.float32)
    for k in tl.static_range(0, R, KR):
        g_rows = tl.load(sg + g_t + k * C)
        g_left = tl.dot(g_rows, tl.load(sa + s_k + k * P), g_left, input_precision=PREC)
        g_right = tl.dot(g_rows, tl.load(sb + s_k + k * P), g_right, input_precision=PREC)
    tl.store(grads + ch, g_left, mask=hm)
    tl.store(grads + HALF + ch, g_right, mask=hm)
    tl.store(grads + NCLS * 2 * HALF + cls, tl.sum(g, axis=0), mask=cls < NCLS)
    g_tile = tl.load(sg + rc)
    zero = tl.full((R, P), 0.0, tl.float32)
    dl = tl.dot(g_tile, tl.load(head + h_n), zero, input_precision=PREC)
    dr = tl.dot(g_tile, tl.load(head + P + h_n), zero, input_precision=PREC)
    tl.debug_barrier()
    return dl, dr


@triton.jit
def _grid_reduce_step(own, part, map_ptr, momentum, neg_lr, weight_decay, G: tl.constexpr, STATE: tl.constexpr,
                      CSTATE: tl.constexpr, RED: tl.constexpr):
    """grad = Σ_g partial[g] for g = 0, 1, …, G−1 in that order, then momentum SGD of this program's copy.

    own: this program's params tiles (STATE floats), its velocities right after; part: partial 0
    of the step's parity buffer (partial g at part + g·CSTATE, compact: the 7554 live floats in
    state-vector order, then zeros that nothing writes: the work buffer is allocated zeroed, so the
    loads need no mask and vectorise); map_ptr: int32 (CSTATE,) tile offset of each compact entry
    (entries past 7554 name distinct padding slots, whose gradient is 0). Loads of partials bypass
    L1 (``.cg``); the G loads of a chunk are unrolled so that they are in flight together.
    """
    offs0 = tl.arange(0, RED)
    for start in range(0, CSTATE, RED):
        offs = start + offs0
        grad = tl.load(part + offs, cache_modifier=".cg")
        for g in tl.static_range(1, G):
            grad = grad + tl.load(part + g * CSTATE + offs, cache_modifier=".cg")
        _sgd(own, own + STATE, tl.load(map_ptr + offs), grad, momentum, neg_lr, weight_decay)
    tl.debug_barrier()


@triton.jit
def _grid_barrier(sync_ptr, target, SPIN_LIMIT: tl.constexpr, TIMED_OUT: tl.constexpr):
    """Wait until the arrival counter at sync_ptr reaches target (int32), having added this program's arrival.

    The CTA barrier first orders every thread's earlier stores before the release add (one thread
    performs a scalar atomic); the acquire reads then make the other programs' released stores
    visible to this program. After SPIN_LIMIT reads the wait gives up and raises the counter to
    TIMED_OUT (an atomic max), which releases every later wait at once and which the host reports.
    """
    tl.debug_barrier()
    tl.atomic_add(sync_ptr, 1, sem="release", scope="gpu")
    seen = tl.atomic_add(sync_ptr, 0, sem="acquire", scope="gpu")
    spins = seen * 0
    while (seen < target) & (spins < SPIN_LIMIT):
        seen = tl.atomic_add(sync_ptr, 0, sem="acquire", scope="gpu")
        spins += 1
    if seen < target:
        tl.atomic_max(sync_ptr, TIMED_OUT, sem="relaxed", scope="gpu")
    tl.debug_barrier()


@triton.jit
def grid_train_kernel(init_ptr, param_ptr, vel_ptr, work_ptr, sync_ptr, map_ptr, raw_ptr, label_ptr, order_ptr,
                      alpha, momentum, neg_lr, weight_decay,
                      N_TRAIN: tl.constexpr, EPOCHS: tl.constexpr, BATCH: tl.constexpr, G: tl.constexpr,
                      ROWS: tl.constexpr, BLOCK_R: tl.constexpr, STATE: tl.constexpr, CSTATE: tl.constexpr,
                      RED: tl.constexpr,
                      P: tl.constexpr, KP: tl.constexpr, C: tl.constexpr, KF: tl.constexpr, KR: tl.constexpr,
                      HALF: tl.constexpr, NCLS: tl.constexpr, STEP_BEGIN: tl.constexpr, STEP_END: tl.constexpr, FINAL: tl.constexpr,
                      BARRIER: tl.constexpr, SPIN_LIMIT: tl.constexpr, TIMED_OUT: tl.constexpr, PREC: tl.constexpr):
    """Steps [STEP_BEGIN, STEP_END) of one invocation's training over G programs (launch with grid (G,)).

    Program g owns batch rows [g·ROWS, (g+1)·ROWS) of every batch (a program whose rows lie past the
    batch, e.g. in the last batch of 16, has none and contributes zero gradients). For step s:

    1. partial (every program, its rows only, weights as they were before step s): gather, lift,
       core forward, mean cross-entropy gradient (divided by the whole batch's row count, as
       :func:`train_kernel`), head gradient, reversible backward with activations rebuilt by
       subtraction; the partial gradients of all parameters are stored to partial buffer
       (s mod 2, g), compact (the 7554 live floats in state-vector order, as ``params``: the
       reduction reads 7554 floats per partial instead of the ~18.4 K of the padded tiles). No weight changes inside the backward (autograd also takes
       every gradient at the pre-step weights).
    2. barrier (``BARRIER``: :func:`_grid_barrier`, target (s+1)·G).
    3. update (every program): the G partials summed in the fixed order 0…G−1, momentum SGD of the
       program's OWN params/velocity copy (padded tiles; map_ptr gives each compact entry's tile offset). Same inputs, same code, same order: every copy has the
       same bits, so no broadcast and no second barrier is needed.

    Why two partial buffers suffice with one barrier per step: a program writes buffer s mod 2 in
    step s only after passing barrier s−1, and passes barrier s+1 (before writing that buffer again
    in step s+2) only after every program has arrived there, i.e. has finished its update of step s,
    the last read of those partials. With one buffer, a fast program's step-s+1 partial could
    overwrite a step-s partial that a slow program has not summed yet.

    Two modes, the same per-step arithmetic:

    * ``BARRIER`` (GPU): one launch, STEP_BEGIN = 0, STEP_END = steps, FINAL: reset, then partial →
      barrier → update for every step. All G programs must be resident at once (the host checks
      G <= the SM count; one CTA always fits on an SM) or the first barrier waits for ever (until
      SPIN_LIMIT). The host zeroes the counter before each launch (a separate memset in the timed run).
    * not ``BARRIER`` (triton's interpreter, which runs programs one after the other, so a spin
      barrier would never return): the host launches once per step, k = 0 … steps, with
      STEP_BEGIN = k, STEP_END = min(k+1, steps): launch 0 resets and writes the partials of step
      0; launch k >= 1 first runs the update of step k−1 (the launch boundary is its barrier), then
      the partial of step k; the last launch (k = steps) only updates and, FINAL, writes the result.
      Everything that survives a launch (each program's params/velocity copy, the partials) lives
      in ``work``; the step index is the compile-time STEP_BEGIN.

    Args (pointers to contiguous tensors on one device):
        init_ptr: float32 (7554,) initial parameters (read only).
        param_ptr, vel_ptr: float32 (7554,) final parameters and velocities (written by program 0, FINAL).
        work_ptr: float32, :func:`bundle.fused_learner.grid_work_floats` elements: per program g at
            g·REGION (REGION = 2·STATE + 2·BLOCK_R·P + BLOCK_R·C) its params tiles (the layout of
            :func:`train_kernel`, zero-padded to STATE), velocities (STATE) and staging tiles sa, sb
            (BLOCK_R×P), sg (BLOCK_R×C); then the partials, (2, G, CSTATE). Program 0's params come
            first, where :func:`predict_kernel` reads them.
        sync_ptr: int32 (1,) arrival counter, zero at launch (BARRIER only; untouched otherwise).
        map_ptr: int32 (CSTATE,) :func:`bundle.fused_learner.grid_state_map`, the tile offset of every
            compact entry (state-vector index → padded tile offset; the pad entries past 7554 name
            distinct always-zero padding slots).
        raw_ptr, label_ptr, order_ptr, alpha, momentum, neg_lr, weight_decay: as :func:`train_kernel`.
        N_TRAIN, EPOCHS, BATCH, P, KP, C, HALF, NCLS: as :func:`train_kernel`.
        G, ROWS, BLOCK_R: programs, batch rows per program (cdiv(BATCH, G)), their tile (power of
            two >= 16 and >= ROWS).
        STATE, CSTATE, RED: floats per state copy (the padded tiles rounded up to a multiple of RED),
            per partial (7554 rounded up to a multiple of RED), and the chunk of the reset and update
            loops (a power of two).
        KF, KR: summed-axis slices over features (divides KP) and rows (divides BLOCK_R); >= 16.
        SPIN_LIMIT, TIMED_OUT: reads of the counter before a wait gives up; the value it then sets.
    """
    NB = (N_TRAIN + BATCH - 1) // BATCH   # batches per epoch
    pid = tl.program_id(0)
    own = work_ptr + pid * (2 * STATE + 2 * BLOCK_R * P + BLOCK_R * C)
    sa = own + 2 * STATE
    sb = sa + BLOCK_R * P
    sg = sb + BLOCK_R * P
    part = work_ptr + G * (2 * STATE + 2 * BLOCK_R * P + BLOCK_R * C)   # partial (q, g) at + (q·G + g)·CSTATE
    head = own + 4 * P * P
    rows = tl.arange(0, BLOCK_R)
    cols = tl.arange(0, P)
    cls = tl.arange(0, C)
    kf = tl.arange(0, KF)
    kr = tl.arange(0, KR)
    rows_p = rows * P
    cols_p = cols * P
    kr_p = kr * P
    rp = rows_p[:, None] + cols[None, :]            # (R, P) a staging tile, row-major
    a_rk = rows_p[:, None] + kf[None, :]            # (R, KF) first slice of a staging tile as A
    w_t = kf[:, None] + cols_p[None, :]             # (KF, P) first slice of Wᵀ as B
    w_n = (kf * P)[:, None] + cols[None, :]         # (KF, P) first slice of W as B
    h_t = kf[:, None] + (cls * (2 * P))[None, :]    # (KF, C) first slice of a head half, transposed
    g_t = cls[:, None] + (kr * C)[None, :]          # (C, KR) first slice of sgᵀ as A
    s_k = kr_p[:, None] + cols[None, :]             # (KR, P) first slice of a staging tile as B
    s_t = cols[:, None] + kr_p[None, :]             # (P, KR) first slice of a staging tileᵀ as A
    rc = (rows * C)[:, None] + cls[None, :]         # (R, C) sg, row-major
    h_n = (cls * (2 * P))[:, None] + cols[None, :]  # (C, P) a head half (its tile layout)
    cw = (cols * HALF)[:, None] + cols[None, :]     # (P, P) a weight tile's live block, compact
    wm = (cols < HALF)[:, None] & (cols < HALF)[None, :]
    ch = (cls * (2 * HALF))[:, None] + cols[None, :]   # (C, P) a head half's live block, compact (+ HALF: right)
    hm = (cls < NCLS)[:, None] & (cols < HALF)[None, :]
    if STEP_BEGIN == 0:   # reset: zero the whole copy (padding included), then the initial parameters
        zero = tl.full((RED,), 0.0, tl.float32)
        for start in range(0, 2 * STATE, RED):
            tl.store(own + start + tl.arange(0, RED), zero)
        tl.debug_barrier()
        _copy_params(init_ptr, own, True, HALF, NCLS, P, C)
        tl.debug_barrier()
    else:
        if not BARRIER:   # the launch boundary was step STEP_BEGIN − 1's barrier
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
        l1 = l0 + _grid_forward(r0, own, sa, rp, a_rk, w_t, alpha, BLOCK_R, P, KP, KF, PREC)
        r1 = r0 + _grid_forward(l1, own + P * P, sa, rp, a_rk, w_t, alpha, BLOCK_R, P, KP, KF, PREC)
        l2 = l1 + _grid_forward(r1, own + 2 * P * P, sa, rp, a_rk, w_t, alpha, BLOCK_R, P, KP, KF, PREC)
        r2 = r1 + _grid_forward(l2, own + 3 * P * P, sa, rp, a_rk, w_t, alpha, BLOCK_R, P, KP, KF, PREC)
        tl.store(sa + rp, l2)
        tl.store(sb + rp, r2)
        tl.debug_barrier()
        z = tl.full((BLOCK_R, C), 0.0, tl.float32)   # logits: l2·HLᵀ + r2·HRᵀ + bias
        for k in tl.static_range(0, KP, KF):
            z = tl.dot(tl.load(sa + a_rk + k), tl.load(head + h_t + k), z, input_precision=PREC)
            z = tl.dot(tl.load(sb + a_rk + k), tl.load(head + P + h_t + k), z, input_precision=PREC)
        z = z + tl.load(head + C * 2 * P + cls)[None, :]
        z = tl.where(cls[None, :] < NCLS, z, float("-inf"))
        # mean cross-entropy gradient, divided by the WHOLE batch's row count
        g = _ce_grad(z, labels, rmask, count, cls, NCLS)
        grads = part + ((s % 2) * G + pid) * CSTATE
        dl, dr = _grid_head_backward(g, sg, sa, sb, head, grads + 4 * HALF * HALF, rc, g_t, s_k, h_n, ch, hm, cls,
                                     BLOCK_R, P, C, KR, HALF, NCLS, PREC)
        # reversible backward, block 1 then block 0, each branch recomputed and subtracted
        d_leaf, branch = _grid_backward(l2, dr, own + 3 * P * P, grads + 3 * HALF * HALF, sa, sb, rp, a_rk,
                                        w_t, w_n, cw, wm, s_t, s_k, alpha, True, BLOCK_R, P, KP, KF, KR, PREC)
        dl = dl + d_leaf
        r1 = r2 - branch
        d_leaf, branch = _grid_backward(r1, dl, own + 2 * P * P, grads + 2 * HALF * HALF, sa, sb, rp, a_rk,
                                        w_t, w_n, cw, wm, s_t, s_k, alpha, True, BLOCK_R, P, KP, KF, KR, PREC)
        dr = dr + d_leaf
        l1 = l2 - branch
        d_leaf, branch = _grid_backward(l1, dr, own + P * P, grads + HALF * HALF, sa, sb, rp, a_rk, w_t, w_n,
                                        cw, wm, s_t, s_k, alpha, True, BLOCK_R, P, KP, KF, KR, PREC)
        dl = dl + d_leaf
        r0 = r1 - branch
        _grid_backward(r0, dl, own, grads, sa, sb, rp, a_rk, w_t, w_n, cw, wm, s_t, s_k, alpha, False,
                       BLOCK_R, P, KP, KF, KR, PREC)   # last branch: only its weight gradient
        if BARRIER:
            _grid_barrier(sync_ptr, (s + 1) * G, SPIN_LIMIT, TIMED_OUT)
            _grid_reduce_step(own, part + (s % 2) * G * CSTATE, map_ptr, momentum, neg_lr, weight_decay, G, STATE,
                              CSTATE, RED)
    if FINAL:
        if pid == 0:
            _copy_params(param_ptr, own, False, HALF, NCLS, P, C)
            _copy_params(vel_ptr, own + STATE, False, HALF, NCLS, P, C)


@triton.jit
def predict_kernel(work_ptr, scratch_ptr, raw_ptr, score_ptr, pred_ptr, n_query, alpha,
                   BLOCK_Q: tl.constexpr, P: tl.constexpr, KP: tl.constexpr, C: tl.constexpr, KF: tl.constexpr,
                   HALF: tl.constexpr, NCLS: tl.constexpr, PREC: tl.constexpr):
    """Scores and predictions for query rows [pid·BLOCK_Q, (pid+1)·BLOCK_Q) (grid cdiv(n_query, BLOCK_Q)).

    Args:
        work_ptr: the work buffer after :func:`train_kernel` (its padded parameter tiles).
        scratch_ptr: float32 staging, BLOCK_Q × P per program.
        raw_ptr: float32 (n_query, 81) raw query pixels.
        score_ptr: float32 (n_query, 10) logits (written).
        pred_ptr: int64 (n_query,) first maximal class index per row (written).
    """
    pid = tl.program_id(0)
    rows = pid * BLOCK_Q + tl.arange(0, BLOCK_Q)
    rmask = rows < n_query
    cls = tl.arange(0, C)
    s = scratch_ptr + pid * BLOCK_Q * P
    left, right = _lifted(raw_ptr, rows, rmask, HALF, P)
    left = left + _branch(right, work_ptr, s, alpha, BLOCK_Q, P, KP, KF, PREC)
    right = right + _branch(left, work_ptr + P * P, s, alpha, BLOCK_Q, P, KP, KF, PREC)
    left = left + _branch(right, work_ptr + 2 * P * P, s, alpha, BLOCK_Q, P, KP, KF, PREC)
    right = right + _branch(left, work_ptr + 3 * P * P, s, alpha, BLOCK_Q, P, KP, KF, PREC)
    _store_tile(s, left, BLOCK_Q, P)
    z_left = _mm(s, P, 1, work_ptr + 4 * P * P, 1, 2 * P, BLOCK_Q, C, KP, KF, PREC)
    tl.debug_barrier()
    _store_tile(s, right, BLOCK_Q, P)
    z = z_left + _mm(s, P, 1, work_ptr + 4 * P * P + P, 1, 2 * P, BLOCK_Q, C, KP, KF, PREC)
    z = z + tl.load(work_ptr + 4 * P * P + C * 2 * P + cls)[None, :]
    z = tl.where(cls[None, :] < NCLS, z, float("-inf"))
    tl.store(score_ptr + rows[:, None] * NCLS + cls[None, :], z, mask=rmask[:, None] & (cls[None, :] < NCLS))
    best = tl.max(z, axis=1)
    first = tl.min(tl.where(z == best[:, None], cls[None, :], C), axis=1)
    tl.store(pred_ptr + rows, first.to(tl.int64), mask=rmask)
