"""Triton attention backend: packed prefill, per-row decode, split-KV decode.

`prefill` runs the packed kernel over consecutive BLOCK_M-position query tiles (a tile may
span request boundaries). `decode` runs, by `decode_kernel`, either the same kernel with
one query tile per request ("rows": 1 valid row of BLOCK_M) or with the decode tokens
packed like a prefill ("packed": for the layout measurement in `fusedlib.bench.kernels`,
not for serving), or the split-KV flash-decoding kernels with one split length for the
step, set on the host by its longest context ("splitkv"), or with each request split by
its own length on the device ("balanced": the fast path).

The only host-built metadata are tile tables, which depend on nothing but the token count;
they are cached per (layout, count, device), so the 28 layers of a step (and every later
step of the same shape) reuse one small int32 tensor and no host loop runs per layer.
Everything data dependent (positions, context lengths, block tables) is read by the
kernels straight from the step's metadata tensors.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import triton

from .base import DecodeMeta, PrefillMeta
from .triton_kernels import (PARTIAL_EXTRA, packed_attention_kernel, splitkv_decode_kernel,
                             splitkv_reduce_kernel)

BLOCK_M = 32  # query tile height of the packed kernel (the reference's tile)
MIN_DOT_ROWS = 16  # tl.dot needs tiles at least 16 tall on the GPU
MAX_SPLITS = 64
REDUCE_BLOCK_S = 16  # split partials the reduce merges per iteration
INTERPRETER_SMS = 4  # pretend SM count on CPU, so tests exercise several splits
LOG2E = 1.4426950408889634
KERNELS = (packed_attention_kernel, splitkv_decode_kernel, splitkv_reduce_kernel)
DECODE_KERNELS = ("rows", "packed", "splitkv", "balanced")


def _dot_precision(dtype: torch.dtype) -> str:
    # fp32 inputs would otherwise go through TF32 on the GPU (~1e-3 relative error).
    return "ieee" if dtype == torch.float32 else "tf32"


def _strides(q, out, k_cache, v_cache, block_tables) -> tuple[int, ...]:
    """The stride arguments both attention kernels take, in their order: token and head of q
    and out, block, slot and head of each cache, and the block table's row stride."""
    return (q.stride(0), q.stride(1), out.stride(0), out.stride(1), *k_cache.stride()[:3],
            *v_cache.stride()[:3], block_tables.stride(0))


@functools.lru_cache(maxsize=None)
def _tile_table(layout: str, num_tokens: int, device: torch.device) -> torch.Tensor:
    """int32 [num_tiles, 2] query tile ranges: 'packed' = consecutive BLOCK_M-position
    tiles, 'rows' = one single-position tile per token."""
    height = BLOCK_M if layout == "packed" else 1
    starts = torch.arange(0, num_tokens, height, dtype=torch.int32)
    return torch.stack([starts, torch.clamp(starts + height, max=num_tokens)], dim=1).to(device)


@dataclass(frozen=True)
class SplitKVConfig:
    """Launch shape of split-KV decode (the layout bench sweeps these)."""
    # The best shape over 1k, 2k and 4k contexts at 32 rows in the H200 sweep timed after an
    # L2 flush that leaves clean lines, as in a decode step (data/roofline/attention_flush):
    # 27.2 us at 2k against 28.9 at the earlier default (64 keys, 8 per SM).
    block_n: int = 32  # keys per inner iteration of a split-KV program
    # Split-KV aims for this many programs per SM. Below num_pairs / num_sms this gives one
    # split per (request, KV head): split-KV decode then normalises in place and launches no
    # reduce.
    programs_per_sm: float = 6
    num_warps: int = 4
    num_stages: int = 2


# Part 9's split-KV kernel keeps the launch shape it was measured with.
PART9_SPLITKV = SplitKVConfig(block_n=64, programs_per_sm=8)


@dataclass(frozen=True)
class PackedConfig:
    """Launch shape of the packed kernel (prompt chunks, and the "rows" decode layout) over
    BLOCK_M-position query tiles."""
    # 128 keys per iteration halve the iterations of a tile's serial walk over its causal span,
    # which sets a 512-position chunk's time (most programs finish early; the last tiles' run
    # on). In the H200 sweep (data/roofline/prefill.csv, d5b8aa9), L2 flushed: 20.9 us against
    # 23.3 at 64 keys for a mixed step's fresh 512-token chunk, 47.3 against 55.3 for a chunk
    # after 1,024 cached keys. 80 KB of shared memory at two stages, which an A10 has.
    block_n: int = 128
    num_warps: int = 4
    num_stages: int = 2


# Parts 7 to 9 keep the packed kernel's shape they were measured with.
PART7_PACKED = PackedConfig(block_n=64)


class TritonAttention:
    """`concurrent`: a mixed step's decode attention runs on a second stream beside its
    prefill (`side_stream`). On the H200 the prefill kernel's programs over a 512-position
    chunk leave most SMs idle while the tiles with the longest causal spans finish, and
    split-KV decode waits on memory, not arithmetic: two launches that can share the SMs.
    It is POD-Attention's observation (prefill and decode attention overlapped), here as
    two kernels on two streams rather than one fused kernel. A CUDA graph captured from
    both streams keeps the two branches, so the replay overlaps them too."""

    def __init__(self, decode_kernel: str = "rows", num_sms: int | None = None,
                 splitkv: SplitKVConfig | None = None, concurrent: bool = False,
                 packed: PackedConfig | None = None):
        if decode_kernel not in DECODE_KERNELS:
            raise ValueError(f"decode_kernel must be one of {DECODE_KERNELS}, got {decode_kernel!r}")
        self.decode_kernel = decode_kernel
        self._num_sms = num_sms
        self.splitkv = splitkv or (PART9_SPLITKV if decode_kernel == "splitkv" else SplitKVConfig())
        self.packed = packed or (PackedConfig() if decode_kernel == "balanced" else PART7_PACKED)
        self.concurrent = concurrent
        self._side_streams: dict[torch.device, torch.cuda.Stream] = {}

    # -- public interface -------------------------------------------------------------

    def prefill(self, q, k_cache, v_cache, meta: PrefillMeta, scale: float,
                out: torch.Tensor | None = None) -> torch.Tensor:
        return self._packed(q, k_cache, v_cache, "packed", scale, meta, out)

    def decode(self, q, k_cache, v_cache, meta: DecodeMeta, scale: float,
               out: torch.Tensor | None = None) -> torch.Tensor:
        if self.decode_kernel in ("splitkv", "balanced"):
            return self._split_decode(q, k_cache, v_cache, meta, scale, out)
        return self._packed(q, k_cache, v_cache, self.decode_kernel, scale, meta, out)

    def side_stream(self, device: torch.device) -> torch.cuda.Stream | None:
        """With `concurrent` on a CUDA device, the one stream (per device) a mixed step's
        decode attention runs on; else None."""
        if not self.concurrent or device.type != "cuda":
            return None
        if device not in self._side_streams:
            self._side_streams[device] = torch.cuda.Stream(device)
        return self._side_streams[device]

    @staticmethod
    def num_compiled() -> int:
        """Compiled variants across this backend's kernels (0 on the interpreter)."""
        if not isinstance(packed_attention_kernel, triton.runtime.JITFunction):  # the interpreter
            return 0
        # device_caches: device -> tuple whose first item is the {key: kernel} cache
        # (a 4-tuple in triton 3.6, a 5-tuple in 3.7).
        return sum(len(caches[0]) for kernel in KERNELS
                   for caches in kernel.device_caches.values())

    # -- internals --------------------------------------------------------------------

    @staticmethod
    def _output(q, k_cache, v_cache, out: torch.Tensor | None) -> torch.Tensor:
        """`out` (checked) or a new tensor like q, after checking q against the caches."""
        assert q.dtype == k_cache.dtype == v_cache.dtype, (q.dtype, k_cache.dtype)
        assert q.stride(-1) == 1 and k_cache.stride(-1) == 1 and v_cache.stride(-1) == 1
        head_dim = q.shape[-1]
        assert head_dim == k_cache.shape[-1] and head_dim & (head_dim - 1) == 0, head_dim
        assert q.shape[1] % k_cache.shape[2] == 0, (q.shape, k_cache.shape)
        if out is None:
            return torch.empty_like(q)
        if out.shape != q.shape or out.dtype != q.dtype or out.stride(-1) != 1:
            raise ValueError(f"out {tuple(out.shape)} {out.dtype} must match q {tuple(q.shape)} "
                             f"{q.dtype} with unit head_dim stride")
        return out

    def _packed(self, q, k_cache, v_cache, layout: str, scale, meta, out) -> torch.Tensor:
        """The packed kernel over the query tiles of `layout` (see `_tile_table`): prompt
        chunks (`meta` a PrefillMeta: token_seq and positions) or decode rows (a DecodeMeta:
        context lengths)."""
        out = self._output(q, k_cache, v_cache, out)
        if q.shape[0] == 0:
            return out
        tiles = _tile_table(layout, q.shape[0], q.device)
        decode_rows = isinstance(meta, DecodeMeta)
        block_tables = meta.block_tables
        # Unused pointer arguments still need a tensor; pass one that is there anyway.
        token_seq, positions, context_lens = ((block_tables, block_tables, meta.context_lens) if decode_rows
                                              else (meta.token_seq, meta.positions, block_tables))
        num_heads, head_dim = q.shape[1], q.shape[2]
        packed_attention_kernel[(tiles.shape[0], num_heads)](
            q, k_cache, v_cache, out, tiles, token_seq, positions, context_lens, block_tables,
            scale * LOG2E, *_strides(q, out, k_cache, v_cache, block_tables),
            GROUP=num_heads // k_cache.shape[2], HEAD_DIM=head_dim, BLOCK_M=BLOCK_M,
            BLOCK_N=self.packed.block_n, KV_BLOCK_SIZE=k_cache.shape[1], DECODE_ROWS=decode_rows,
            DOT_PRECISION=_dot_precision(q.dtype), num_warps=self.packed.num_warps,
            num_stages=self.packed.num_stages,
        )
        return out

    def max_splits(self, max_context_len: int, num_pairs: int, device: torch.device) -> int:
        """Programs per (request, KV head) of split-KV decode: enough for `programs_per_sm`
        per SM, no more than the longest context has BLOCK_N tiles. The graphs pass the
        pool's longest context, so with "balanced" the count depends on the request count
        alone."""
        wanted = math.ceil(self.splitkv.programs_per_sm * self._sms(device) / num_pairs)
        return max(1, min(MAX_SPLITS, wanted, math.ceil(max_context_len / self.splitkv.block_n)))

    def split_plan(self, max_context_len: int, num_pairs: int,
                   device: torch.device) -> tuple[int, int]:
        """(num_splits, split_len) of "splitkv" for this step shape: `max_splits` cut the
        longest context into whole BLOCK_N tiles; one split length serves every request,
        and a short request's splits past its end do nothing."""
        block_n = self.splitkv.block_n
        splits = self.max_splits(max_context_len, num_pairs, device)
        split_len = math.ceil(max_context_len / splits / block_n) * block_n
        return math.ceil(max_context_len / split_len), split_len

    def _sms(self, device: torch.device) -> int:
        if self._num_sms is None:
            self._num_sms = (torch.cuda.get_device_properties(device).multi_processor_count
                             if device.type == "cuda" else INTERPRETER_SMS)
        return self._num_sms

    def _split_decode(self, q, k_cache, v_cache, meta: DecodeMeta, scale: float, out) -> torch.Tensor:
        """Split-KV decode, the splits placed by `decode_kernel`: "splitkv" passes its host
        plan (`split_plan`), "balanced" lets each request split its own context on the device."""
        out = self._output(q, k_cache, v_cache, out)
        num_reqs, num_heads, head_dim = q.shape
        if num_reqs == 0:
            return out
        num_kv_heads = k_cache.shape[2]
        group = num_heads // num_kv_heads
        cfg = self.splitkv
        if cfg.block_n % k_cache.shape[1]:
            raise ValueError(f"block_n {cfg.block_n} must be a multiple of the cache block size "
                             f"{k_cache.shape[1]}")
        if self.decode_kernel == "splitkv":
            num_splits, split_len = self.split_plan(meta.max_context_len, num_reqs * num_kv_heads,
                                                    q.device)
            split_tiles = split_len // cfg.block_n
        else:
            num_splits = self.max_splits(meta.max_context_len, num_reqs * num_kv_heads, q.device)
            split_tiles = 0
        one_split = num_splits == 1
        partials = out if one_split else torch.empty(
            num_reqs, num_heads, num_splits, head_dim + PARTIAL_EXTRA.value,
            dtype=torch.float32, device=q.device)
        splitkv_decode_kernel[(num_reqs, num_kv_heads, num_splits)](
            q, k_cache, v_cache, partials, out,
            meta.context_lens, meta.block_tables, scale * LOG2E, num_splits, split_tiles,
            *_strides(q, out, k_cache, v_cache, meta.block_tables),
            GROUP=group, HEAD_DIM=head_dim, BLOCK_H=max(MIN_DOT_ROWS, triton.next_power_of_2(group)),
            BLOCK_N=cfg.block_n, KV_BLOCK_SIZE=k_cache.shape[1],
            DOT_PRECISION=_dot_precision(q.dtype), ONE_SPLIT=one_split, num_warps=cfg.num_warps,
            num_stages=cfg.num_stages,
        )
        if one_split:  # the decode kernel wrote the output itself
            return out
        splitkv_reduce_kernel[(num_reqs, num_heads)](
            partials, out, num_splits, out.stride(0), out.stride(1),
            HEAD_DIM=head_dim, BLOCK_S=REDUCE_BLOCK_S, num_warps=4,
        )
        return out
