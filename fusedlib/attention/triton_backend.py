"""Triton attention: the prompt kernel over packed chunks cut into tiles of one request each,
and decode by one of three kernels (`decode_kernel`): "rows", "splitkv" or "balanced"."""
# "rows": the prompt kernel with one decode row per tile (part 7). "splitkv": flash-decoding cut
# at one split length the host sets from the step's longest context (parts 8, 9). "balanced":
# flash-decoding with each request cut by its own length on the device, so the grid depends on
# the row count alone (part 10).
# Launch grids depend on token and row counts only; everything data dependent (positions,
# context lengths, block tables, the prompt tiles built from them) the kernels read from tensors.
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import triton

from .base import DecodeMeta, PrefillMeta
from .triton_kernels import PARTIAL_EXTRA, prompt_attention_kernel, splitkv_decode_kernel, splitkv_reduce_kernel

MIN_DOT_ROWS = 16  # tl.dot needs tiles at least 16 tall on the GPU
MAX_SPLITS = 64
REDUCE_BLOCK_S = 16  # split partials the reduce merges per iteration
INTERPRETER_SMS = 4  # pretend SM count on CPU, so tests exercise several splits
LOG2E = 1.4426950408889634
DECODE_KERNELS = ("rows", "splitkv", "balanced")


def _dot_precision(dtype: torch.dtype) -> str:
    # fp32 inputs would otherwise go through TF32 on the GPU (~1e-3 relative error).
    return "ieee" if dtype == torch.float32 else "tf32"


def _strides(q, out, k_cache, v_cache, block_tables) -> tuple[int, ...]:
    """The stride arguments every attention kernel takes, in their order."""
    return (q.stride(0), q.stride(1), out.stride(0), out.stride(1), *k_cache.stride()[:3],
            *v_cache.stride()[:3], block_tables.stride(0))


@dataclass(frozen=True)
class SplitKVConfig:
    """Launch shape of split-KV decode."""
    # The default is the best at 256 rows over 1k and 4k contexts on an H100 (benchmarks/
    # decode_sweep.py, 73 shapes, three repeats; benchmarks/NOTES.md): 80% / 97% of a copy of
    # the same bytes where 32 keys, 6 programs per SM and 2 stages read 67% / 77%, with 32 rows
    # at 1k unchanged (53-54%). The deeper pipeline is most of it (2 -> 3 stages: 68% -> 78%).
    block_n: int = 64  # keys per inner iteration of a program
    # Programs aimed at per SM. Below num_pairs / num_sms it gives one split per (request, KV
    # head): the decode kernel then normalises in place and no reduce launches.
    programs_per_sm: float = 4
    num_warps: int = 4
    num_stages: int = 4


PART9_SPLITKV = SplitKVConfig(block_n=64, programs_per_sm=8)
PART10_SPLITKV = SplitKVConfig(block_n=32, programs_per_sm=6, num_stages=2)  # parts 10-11's balanced kernel


@dataclass(frozen=True)
class PromptTiles:
    """Launch shape of the prompt kernel (`prompt_attention_kernel`)."""
    block_m: int  # query positions per tile
    block_n: int  # keys per inner iteration (each key's block looked up: any cache block size)
    num_warps: int
    num_stages: int


# Small tiles on the interpreter, so the CPU tests' short prompts still take several tiles and
# several key steps each. Hopper's (sm_90): the best of the launch shapes tried on
# an H100 (benchmarks/NOTES.md): 305 TFLOP/s on a fresh 4,096-token prompt where the 32-row tiles
# before it reached 131. A program per KV head's group of query heads (rows = positions x heads,
# so each K/V tile is loaded once for the group) ran as fast on single prompts, K/V coming from
# L2 either way, and slower on chunks of several requests: its tiles of 21 positions span two
# requests at most chunk boundaries, and such a tile walks both requests' keys in turn.
# Elsewhere (unmeasured), and for part 7's decode rows (as measured there), the earlier tiles.
INTERPRETER_PROMPT_TILES = PromptTiles(block_m=16, block_n=16, num_warps=4, num_stages=1)
HOPPER_PROMPT_TILES = PromptTiles(block_m=128, block_n=128, num_warps=8, num_stages=2)
EARLIER_PROMPT_TILES = PromptTiles(block_m=32, block_n=64, num_warps=4, num_stages=2)


def _prompt_tiles(device: torch.device, hopper_shapes: bool = True) -> PromptTiles:
    if device.type != "cuda":
        return INTERPRETER_PROMPT_TILES
    hopper = hopper_shapes and torch.cuda.get_device_capability(device)[0] == 9
    return HOPPER_PROMPT_TILES if hopper else EARLIER_PROMPT_TILES


@functools.lru_cache(maxsize=None)
def _decode_row_tiles(num_rows: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, int]:
    rows = torch.arange(num_rows + 1, dtype=torch.int32)
    return torch.stack([rows[:-1], rows[1:]], dim=1).to(device), rows[-1:].to(device), num_rows


def request_tiles(meta: PrefillMeta, height: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(int32 [P, 2] tile ranges, int32 [1] tile count, programs per head): each chunk cut into
    `height`-position tiles of its own, those walking the most keys first; ranges past the count unused."""
    # The kernel takes tiles of one request each: a tile spanning two would mask every key step
    # and walk both requests' keys in turn (FlashAttention's varlen kernels cut per request too).
    # Built on the device in fixed shapes from token_seq (ascending: chunks in pack order): no
    # host sync, and a CUDA graph captures it. The grid depends on shapes alone: the per-request
    # cut has at most ceil(P / height) + chunks - 1 tiles, and a graph's table has a row for every
    # request a step could hold, so programs per head are capped at twice ceil(P / height); past
    # that the lightest tiles share a program (each program walks tiles slot, slot + programs, ...).
    seq, idx = meta.token_seq, torch.arange(meta.num_tokens, dtype=torch.int32, device=meta.token_seq.device)
    starts = (idx - torch.searchsorted(seq, seq, out_int32=True)) % height == 0
    ends = torch.minimum(idx + height, torch.searchsorted(seq, seq, right=True, out_int32=True))
    order = torch.where(starts, meta.positions[ends.long() - 1], -1).argsort(descending=True)
    consecutive = -(-meta.num_tokens // height)
    return (torch.stack([idx, ends], dim=1)[order], starts.sum(dtype=torch.int32).reshape(1),
            consecutive + min(meta.block_tables.shape[0] - 1, consecutive))


class TritonAttention:
    """`concurrent`: a mixed step's decode attention runs on a second stream beside its prefill."""
    # On the H200 the prefill programs over a 512-position chunk leave most SMs idle while the
    # tiles with the longest causal spans finish, and split-KV decode waits on memory: two
    # launches that can share the SMs (POD-Attention's observation, here as two kernels on two
    # streams). A CUDA graph captured from both streams keeps both branches.

    def __init__(self, decode_kernel: str = "rows", num_sms: int | None = None,
                 splitkv: SplitKVConfig | None = None, concurrent: bool = False,
                 prompt_tiles: PromptTiles | None = None, hopper_shapes: bool = True):
        if decode_kernel not in DECODE_KERNELS:
            raise ValueError(f"decode_kernel must be one of {DECODE_KERNELS}, got {decode_kernel!r}")
        self.decode_kernel, self._num_sms, self.concurrent = decode_kernel, num_sms, concurrent
        earlier = PART9_SPLITKV if decode_kernel == "splitkv" else PART10_SPLITKV  # the shape its part ran
        self.splitkv = splitkv or (SplitKVConfig() if hopper_shapes else earlier)
        self.prompt_tiles, self.hopper_shapes = prompt_tiles, hopper_shapes  # None: the device's (`_prompt_tiles`)
        self._side_streams, self._step_tiles = {}, (None, None)  # per device; (a PrefillMeta, its tiles)

    def prefill(self, q, k_cache, v_cache, meta: PrefillMeta, scale: float,
                out: torch.Tensor | None = None) -> torch.Tensor:
        return self._packed(q, k_cache, v_cache, meta, scale, out)

    def decode(self, q, k_cache, v_cache, meta: DecodeMeta, scale: float,
               out: torch.Tensor | None = None) -> torch.Tensor:
        if self.decode_kernel == "rows":
            return self._packed(q, k_cache, v_cache, meta, scale, out)
        return self._split_decode(q, k_cache, v_cache, meta, scale, out)

    def side_stream(self, device: torch.device) -> torch.cuda.Stream | None:
        """With `concurrent` on a CUDA device, its one side stream; else None."""
        if not self.concurrent or device.type != "cuda":
            return None
        if device not in self._side_streams:
            self._side_streams[device] = torch.cuda.Stream(device)
        return self._side_streams[device]

    @staticmethod
    def _output(q, k_cache, v_cache, out: torch.Tensor | None) -> torch.Tensor:
        """`out` or a new tensor like q, after checking that q, the caches and `out` agree."""
        head_dim = q.shape[-1]
        assert q.dtype == k_cache.dtype == v_cache.dtype and head_dim == k_cache.shape[-1] and not head_dim & (
            head_dim - 1) and q.shape[1] % k_cache.shape[2] == 0, (q.shape, q.dtype, k_cache.shape, k_cache.dtype)
        assert q.stride(-1) == k_cache.stride(-1) == v_cache.stride(-1) == 1 and (out is None or (
            out.shape == q.shape and out.dtype == q.dtype and out.stride(-1) == 1)), "unit head_dim strides, out like q"
        return torch.empty_like(q) if out is None else out

    def _packed(self, q, k_cache, v_cache, meta, scale, out) -> torch.Tensor:
        # The prompt kernel over prompt chunks (a PrefillMeta), or one tile per decode row (a DecodeMeta).
        out = self._output(q, k_cache, v_cache, out)
        if q.shape[0] == 0:
            return out
        decode_rows = isinstance(meta, DecodeMeta)
        cfg = EARLIER_PROMPT_TILES if decode_rows else self.prompt_tiles or _prompt_tiles(q.device, self.hopper_shapes)
        if not decode_rows and self._step_tiles[0] is not meta:  # a step's first layer builds its tiles
            self._step_tiles = (meta, request_tiles(meta, cfg.block_m))  # and the other layers reuse them
        tiles, count, programs = _decode_row_tiles(q.shape[0], q.device) if decode_rows else self._step_tiles[1]
        block_tables = meta.block_tables
        # Unused pointer arguments still need a tensor; pass one that is there anyway.
        token_seq, positions, context_lens = ((block_tables, block_tables, meta.context_lens) if decode_rows
                                              else (meta.token_seq, meta.positions, block_tables))
        num_heads, head_dim = q.shape[1], q.shape[2]
        prompt_attention_kernel[(num_heads, programs)](
            q, k_cache, v_cache, out, tiles, count, token_seq, positions, context_lens, block_tables,
            scale * LOG2E, *_strides(q, out, k_cache, v_cache, block_tables),
            GROUP=num_heads // k_cache.shape[2], HEAD_DIM=head_dim, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
            KV_BLOCK_SIZE=k_cache.shape[1], DECODE_ROWS=decode_rows, DOT_PRECISION=_dot_precision(q.dtype),
            num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        return out

    def max_splits(self, max_context_len: int, num_pairs: int, device: torch.device) -> int:
        """Programs per (request, KV head): `programs_per_sm` per SM, at most the longest context's tiles."""
        # The graphs pass the pool's longest context, so "balanced" gets a grid fixed per row count.
        if self._num_sms is None:  # the device's SM count, read on first use
            self._num_sms = (torch.cuda.get_device_properties(device).multi_processor_count
                             if device.type == "cuda" else INTERPRETER_SMS)
        wanted = math.ceil(self.splitkv.programs_per_sm * self._num_sms / num_pairs)
        return max(1, min(MAX_SPLITS, wanted, math.ceil(max_context_len / self.splitkv.block_n)))

    def split_plan(self, max_context_len: int, num_pairs: int, device: torch.device) -> tuple[int, int]:
        """(num_splits, split_len) of "splitkv": the longest context cut into whole BLOCK_N tiles."""
        block_n = self.splitkv.block_n
        splits = self.max_splits(max_context_len, num_pairs, device)
        split_len = math.ceil(max_context_len / splits / block_n) * block_n
        return math.ceil(max_context_len / split_len), split_len

    def _split_decode(self, q, k_cache, v_cache, meta: DecodeMeta, scale: float, out) -> torch.Tensor:
        """Split-KV decode, split by the host's `split_plan` ("splitkv") or on the device ("balanced")."""
        out = self._output(q, k_cache, v_cache, out)
        num_reqs, num_heads, head_dim = q.shape
        if num_reqs == 0:
            return out
        num_kv_heads = k_cache.shape[2]
        group = num_heads // num_kv_heads
        cfg = self.splitkv
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
