"""What a kernel boundary costs the decode step's GEMMs: one probe, no engine code.

A 32-row decode step spends most of its time in four weight-streaming GEMMs a layer (q/k/v,
output, gate_up, down), each its own kernel; each kernel ramps up, drains, and is launched
after the one before has finished. A persistent kernel ("megakernel") keeps one grid alive for
the whole step and replaces each boundary by a grid-wide barrier, and can ask for the next
GEMM's first weight tiles before it waits. This probe measures that trade on the GEMMs alone:
the same chain of `layers` x 4 GEMMs at the model's shapes, each output the next one's input,
run three ways from one tile function (`_tile`), so the arms differ only in what separates
two GEMMs:

  kernels     one launch per GEMM, one program per column tile (as an engine launches them)
  persistent  one launch per step, `grid` programs walking every GEMM's tiles, a grid barrier
              (an atomic counter in global memory) between GEMMs
  prefetch    the same, each program loading its next tile's first weight block before it
              waits at the barrier

Every arm computes the same tiles in the same order of K, so their outputs are bit-identical.
The chain has no norm, attention or activation: what it says is about the GEMMs' share of
a step. On the CPU (Triton interpreter) the persistent arms run with one program, which never
waits.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class ChainShape:
    """Tiles of every GEMM in the chain: block_n output columns, K in block_k blocks."""
    block_n: int = 16
    block_k: int = 512
    num_warps: int = 4
    num_stages: int = 3


@triton.jit
def _tile(x_ptr, w_ptr, out_ptr, tile, num_rows, N, K, stride_x, stride_w, stride_out, w_first,
          HAS_FIRST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[:, tile's columns] = x @ w[tile's columns].T, fp32 accumulation over K in order,
    the weight tile as the tall operand (swap-AB). With HAS_FIRST the first weight block is
    `w_first`, loaded by the caller ahead of time."""
    offs_n = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    n_valid, m_valid = offs_n < N, offs_m < num_rows
    x_rows = x_ptr + offs_m[:, None].to(tl.int64) * stride_x
    w_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_w
    acc = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)
    k_begin = 0
    if HAS_FIRST:
        x = tl.load(x_rows + offs_k[None, :], mask=m_valid[:, None] & (offs_k < K)[None, :], other=0.0)
        acc = tl.dot(w_first, tl.trans(x), acc)
        k_begin = BLOCK_K
    for k0 in range(k_begin, K, BLOCK_K):
        ks = k0 + offs_k
        k_valid = ks < K
        x = tl.load(x_rows + ks[None, :], mask=m_valid[:, None] & k_valid[None, :], other=0.0)
        w = tl.load(w_rows + ks[None, :], mask=n_valid[:, None] & k_valid[None, :], other=0.0)
        acc = tl.dot(w, tl.trans(x), acc)
    tl.store(out_ptr + offs_m[None, :] * stride_out + offs_n[:, None], acc.to(out_ptr.dtype.element_ty),
             mask=n_valid[:, None] & m_valid[None, :])


@triton.jit
def _first_block(w_ptr, tile, N, K, stride_w, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_n = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    return tl.load(w_ptr + offs_n[:, None].to(tl.int64) * stride_w + offs_k[None, :],
                   mask=(offs_n < N)[:, None] & (offs_k < K)[None, :], other=0.0)


@triton.jit
def gemm_kernel(x_ptr, w_ptr, out_ptr, num_rows, N, K, stride_x, stride_w, stride_out,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One GEMM of the chain, one program per column tile."""
    _tile(x_ptr, w_ptr, out_ptr, tl.program_id(0), num_rows, N, K, stride_x, stride_w, stride_out, 0,
          False, BLOCK_M, BLOCK_N, BLOCK_K)


@triton.jit
def _grid_barrier(counter_ptr, target):
    """Arrive, then wait until `target` arrivals in all: with target = n * grid, until every
    program has arrived at the grid's n-th barrier (target 0: the chain's first GEMM, which
    waits for nothing). Each program's stores are issued (the CTA barrier) and released with
    its arrival, and the acquiring reads make every other program's stores visible here."""
    if target > 0:
        tl.debug_barrier()
        tl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")
        arrived = tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu")
        while arrived < target:
            arrived = tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu")
        tl.debug_barrier()


@triton.jit
def _stage(x_ptr, w_ptr, out_ptr, num_rows, N, K, stride_x, stride_w, stride_out, counter_ptr, target,
           PREFETCH: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One GEMM inside the persistent kernel: wait for the previous one (`target`: see
    `_grid_barrier`), then this program's tiles pid, pid + grid, ..."""
    pid, grid = tl.program_id(0), tl.num_programs(0)
    num_tiles = tl.cdiv(N, BLOCK_N)
    if PREFETCH:  # the weight does not depend on the previous GEMM: ask before waiting
        w_first = _first_block(w_ptr, pid, N, K, stride_w, BLOCK_N, BLOCK_K)
        _grid_barrier(counter_ptr, target)
        if pid < num_tiles:
            _tile(x_ptr, w_ptr, out_ptr, pid, num_rows, N, K, stride_x, stride_w, stride_out, w_first,
                  True, BLOCK_M, BLOCK_N, BLOCK_K)
        for tile in range(pid + grid, num_tiles, grid):
            _tile(x_ptr, w_ptr, out_ptr, tile, num_rows, N, K, stride_x, stride_w, stride_out, 0,
                  False, BLOCK_M, BLOCK_N, BLOCK_K)
    else:
        _grid_barrier(counter_ptr, target)
        for tile in range(pid, num_tiles, grid):
            _tile(x_ptr, w_ptr, out_ptr, tile, num_rows, N, K, stride_x, stride_w, stride_out, 0,
                  False, BLOCK_M, BLOCK_N, BLOCK_K)


@triton.jit
def persistent_chain_kernel(
    h_ptr, qkv_ptr, o_ptr, gu_ptr,  # activations: [M, hidden], [M, qkv], [M, hidden], [M, 2I]
    w_qkv_ptr, w_o_ptr, w_gu_ptr, w_down_ptr,  # [L, N, K] each
    counter_ptr, num_layers, num_rows, hidden, qkv_n, gu_n, inter,
    PREFETCH: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """The whole chain in one launch: per layer h -> qkv -> o (reads qkv's first `hidden`
    columns) -> gate_up -> down (reads gate_up's first `inter` columns) -> h."""
    grid = tl.num_programs(0)
    for layer in range(num_layers):
        # GEMM number n = 4 * layer + i waits at barrier n. Weight offsets fit in int32: 28
        # layers of Qwen2.5-1.5B's largest weight are 7.7e8 elements.
        base = layer * 4 * grid
        _stage(h_ptr, w_qkv_ptr + layer * qkv_n * hidden, qkv_ptr, num_rows, qkv_n, hidden, hidden, hidden, qkv_n,
               counter_ptr, base, PREFETCH, BLOCK_M, BLOCK_N, BLOCK_K)
        _stage(qkv_ptr, w_o_ptr + layer * hidden * hidden, o_ptr, num_rows, hidden, hidden, qkv_n, hidden, hidden,
               counter_ptr, base + grid, PREFETCH, BLOCK_M, BLOCK_N, BLOCK_K)
        _stage(o_ptr, w_gu_ptr + layer * gu_n * hidden, gu_ptr, num_rows, gu_n, hidden, hidden, hidden, gu_n,
               counter_ptr, base + 2 * grid, PREFETCH, BLOCK_M, BLOCK_N, BLOCK_K)
        _stage(gu_ptr, w_down_ptr + layer * hidden * inter, h_ptr, num_rows, hidden, inter, gu_n, inter, hidden,
               counter_ptr, base + 3 * grid, PREFETCH, BLOCK_M, BLOCK_N, BLOCK_K)


class Chain:
    """The chain's weights and activations at a model config's shapes, and its three arms.
    `h` holds the input before a run and the output after it."""

    ARMS = ("kernels", "persistent", "prefetch")

    def __init__(self, cfg, rows: int, layers: int, device, dtype, seed: int = 0,
                 shape: ChainShape = ChainShape()):
        g = torch.Generator(device=device).manual_seed(seed)
        hidden, inter = cfg.hidden_size, cfg.intermediate_size
        qkv_n = (cfg.num_heads + 2 * cfg.num_kv_heads) * cfg.head_dim
        if qkv_n < hidden:
            raise ValueError(f"the output projection reads q/k/v's first {hidden} columns; q/k/v has {qkv_n}")

        def weight(n, k):  # scaled so the chain's values stay of order one over many layers
            return (torch.randn(layers, n, k, generator=g, device=device) / k ** 0.5).to(dtype)

        self.w_qkv, self.w_o = weight(qkv_n, hidden), weight(hidden, hidden)
        self.w_gu, self.w_down = weight(2 * inter, hidden), weight(hidden, inter)
        self.h0 = torch.randn(rows, hidden, generator=g, device=device).to(dtype)
        self.h = self.h0.clone()
        self.qkv = torch.empty(rows, qkv_n, device=device, dtype=dtype)
        self.o = torch.empty(rows, hidden, device=device, dtype=dtype)
        self.gu = torch.empty(rows, 2 * inter, device=device, dtype=dtype)
        self.counter = torch.zeros(1, device=device, dtype=torch.int32)
        self.rows, self.layers, self.hidden, self.inter, self.qkv_n = rows, layers, hidden, inter, qkv_n
        self.shape = shape
        self.weight_bytes = sum(w.numel() * w.element_size() for w in (self.w_qkv, self.w_o, self.w_gu, self.w_down))

    def gemms(self, layer: int):
        """(x, weight, out, K) of the layer's four GEMMs, K the columns of x read."""
        return ((self.h, self.w_qkv[layer], self.qkv, self.hidden), (self.qkv, self.w_o[layer], self.o, self.hidden),
                (self.o, self.w_gu[layer], self.gu, self.hidden), (self.gu, self.w_down[layer], self.h, self.inter))

    def _launch(self, **kw) -> dict:
        s = self.shape
        return dict(BLOCK_M=max(16, triton.next_power_of_2(self.rows)), BLOCK_N=s.block_n, BLOCK_K=s.block_k,
                    num_warps=s.num_warps, num_stages=s.num_stages, **kw)

    def run(self, arm: str, grid: int):
        """One pass of the chain over `h`, in place. `grid`: the persistent arms' programs,
        at most as many as the GPU holds at once (the barrier needs every one resident).
        Returns the persistent kernel as compiled (its registers and shared memory say how
        many programs the GPU holds), None for the separate kernels."""
        if arm not in self.ARMS:
            raise ValueError(f"unknown arm {arm!r}; choose one of {', '.join(self.ARMS)}")
        self.h.copy_(self.h0)
        self.counter.zero_()
        if arm == "kernels":
            for layer in range(self.layers):
                for x, w, out, k in self.gemms(layer):
                    gemm_kernel[(triton.cdiv(w.shape[0], self.shape.block_n),)](
                        x, w, out, self.rows, w.shape[0], k, x.stride(0), w.stride(0), out.stride(0),
                        **self._launch())
            return None
        return persistent_chain_kernel[(grid,)](
            self.h, self.qkv, self.o, self.gu, self.w_qkv, self.w_o, self.w_gu, self.w_down, self.counter,
            self.layers, self.rows, self.hidden, self.qkv_n, 2 * self.inter, self.inter,
            **self._launch(PREFETCH=arm == "prefetch"))

    def reference(self) -> torch.Tensor:
        """The chain in PyTorch (fp32 products, rounded to the dtype after every GEMM)."""
        h = self.h0
        for layer in range(self.layers):
            qkv = (h.float() @ self.w_qkv[layer].float().T).to(h.dtype)
            o = (qkv[:, :self.hidden].float() @ self.w_o[layer].float().T).to(h.dtype)
            gu = (o.float() @ self.w_gu[layer].float().T).to(h.dtype)
            h = (gu[:, :self.inter].float() @ self.w_down[layer].float().T).to(h.dtype)
        return h
