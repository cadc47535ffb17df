"""StepPlan -> tensors: one packed, unpadded sequence plus its attention metadata, laid out on
the host (`pack`), sent to the device when a forward first reads it (`Batch`) or copied into a
whole-step CUDA graph's static buffers instead (fusedlib.graphs)."""
# Packing is vectorised per chunk, one list pass per decode row: a 256-row step is a few
# hundred microseconds of host time. On CUDA each transfer goes through pinned memory with
# non_blocking: a copy from pageable memory makes PyTorch synchronize the stream, so packing
# step n + 1 would wait for step n to finish on the GPU, the wait the engine's overlap removes.
# Block tables are padded to a multiple of 16 columns, so their row stride stays divisible by
# 16: Triton specializes integer arguments on that, and a stride that flipped between steps
# would compile a new kernel variant.
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from .attention.base import AttentionMetadata, DecodeMeta, PrefillMeta
from .scheduler import Chunk, Request, StepPlan

BLOCK_TABLE_ALIGN = 16


@dataclass
class HostInputs:
    """A step's inputs in pack order (chunk positions first, then decode rows), int64 arrays."""
    input_ids: np.ndarray  # a pending decode row's is a placeholder: see fed_rows
    positions: np.ndarray
    slots: np.ndarray
    token_seq: np.ndarray  # per chunk position, the index of its chunk
    chunk_requests: list[Request]  # per chunk, its request (its block table row)
    decode_requests: list[Request]
    logit_indices: np.ndarray  # packed positions that produce a token
    fed_rows: np.ndarray  # rows whose token is still on the device, in InTransit.tokens ...
    fed_from: np.ndarray  # ... at these rows


@dataclass
class Batch:
    """A packed step; its tensors go to the device when a forward first reads them."""
    host: HostInputs
    samplers: list[Request]  # who owns each of the S sampled tokens, in order
    device: torch.device
    in_transit: InTransit | None = None  # where pending rows' tokens are (fed_rows)

    num_decode = property(lambda self: len(self.host.decode_requests))
    num_logits = property(lambda self: len(self.host.logit_indices))
    input_ids = property(lambda self: self._tensors[0])  # int64 [T]
    positions = property(lambda self: self._tensors[1])  # int64 [T]
    meta = property(lambda self: self._tensors[2])  # AttentionMetadata
    logit_indices = property(lambda self: self._tensors[3])  # int64 [S]

    @cached_property
    def _tensors(self) -> tuple[torch.Tensor, torch.Tensor, AttentionMetadata, torch.Tensor]:
        h, device, n = self.host, self.device, len(self.host.token_seq)
        prefill = decode = None
        if h.chunk_requests:
            prefill = PrefillMeta(n, _to_device(block_table([r.blocks for r in h.chunk_requests]), device),
                                  _to_device(h.token_seq.astype(np.int32), device),
                                  _to_device(h.positions[:n].astype(np.int32), device))
        if h.decode_requests:
            ctx = h.positions[n:].astype(np.int32) + 1
            decode = DecodeMeta(len(ctx), _to_device(ctx, device), _to_device(block_table([r.blocks for r in h.decode_requests]), device),
                                int(ctx.max()))
        input_ids = _to_device(h.input_ids, device)
        if len(h.fed_rows):  # device to device: the host never waits for these tokens' values
            input_ids.index_copy_(0, _to_device(h.fed_rows, device),
                                  self.in_transit.tokens.index_select(0, _to_device(h.fed_from, device)))
        return (input_ids, _to_device(h.positions, device), AttentionMetadata(_to_device(h.slots, device), prefill, decode),
                _to_device(h.logit_indices, device))


def _to_device(data: np.ndarray, device: torch.device) -> torch.Tensor:
    if device.type != "cuda":
        return torch.from_numpy(data).to(device)
    # The pinned staging buffer is held by PyTorch's host allocator until the copy is done.
    return torch.from_numpy(data).pin_memory().to(device, non_blocking=True)


def block_table(block_lists: list, width: int | None = None, fill: int = 0) -> np.ndarray:
    """int32 [len(block_lists), width] table rows; past a list's end, and a None row, `fill`."""
    width = width or -(-max(len(b) for b in block_lists) // BLOCK_TABLE_ALIGN) * BLOCK_TABLE_ALIGN
    table = np.full((len(block_lists), width), fill, dtype=np.int32)
    for row, blocks in zip(table, block_lists):
        row[:len(blocks or ())] = blocks or ()
    return table


@dataclass
class InTransit:
    """A launched step's sampled tokens on their way to the host."""
    plan: StepPlan
    requests: list[Request]  # whose token each is
    tokens: torch.Tensor  # on the device: the next step's decode rows read theirs at `token_row`
    host: torch.Tensor  # their copy in (pinned) host memory, complete once `copied` has fired
    copied: torch.cuda.Event | None  # None on CPU: done already


def pack(chunks: list[Chunk], decodes: list[Request], block_size: int, device,
         in_transit: InTransit | None = None) -> Batch:
    """Chunk positions first, decode positions last, in plan order."""
    ids, pos, samplers, logit_idx, n = [], [], [], [], 0
    for c in chunks:
        r, end = c.request, c.start + c.length
        ids.append(np.asarray(r.prompt[c.start:end], dtype=np.int64))
        pos.append(np.arange(c.start, end))
        n += c.length
        if end == len(r.prompt):  # the chunk finishes its prompt: sample its last position
            logit_idx.append(n - 1)
            samplers.append(r)
    # Each decode row feeds its newest token back at its position; a pending one is a
    # placeholder, overwritten on the device.
    dpos = [len(r.prompt) + r.num_generated - 1 for r in decodes]
    ids.append(np.array([r.output[-1] if len(r.output) == r.num_generated else 0 for r in decodes], dtype=np.int64))
    pos.append(np.array(dpos, dtype=np.int64))
    dslots = np.array([r.blocks[p // block_size] for r, p in zip(decodes, dpos)], dtype=np.int64) * block_size
    slots = [np.asarray(c.request.blocks, dtype=np.int64)[p // block_size] * block_size for c, p in zip(chunks, pos)]
    positions = np.concatenate(pos)
    slots = np.concatenate([*slots, dslots]) + positions % block_size
    fed = [i for i, r in enumerate(decodes) if len(r.output) < r.num_generated]
    fed_from = np.array([decodes[i].token_row for i in fed], dtype=np.int64)
    host = HostInputs(np.concatenate(ids), positions, slots,
                      np.repeat(np.arange(len(chunks)), [c.length for c in chunks]), [c.request for c in chunks],
                      list(decodes), np.array(logit_idx + list(range(n, n + len(decodes))), dtype=np.int64),
                      np.array(fed, dtype=np.int64) + n, fed_from)
    return Batch(host, samplers + list(decodes), torch.device(device), in_transit if fed else None)
