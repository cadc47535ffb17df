"""StepPlan -> tensors: one packed, unpadded sequence plus its attention metadata.

Everything is built as Python lists on the host and moved in a handful of transfers. On
CUDA each goes through pinned memory with `non_blocking`: a copy from pageable memory
makes PyTorch synchronize the stream, so packing step n + 1 would wait for step n to finish
on the GPU, which is exactly the wait the engine's overlap removes.
Block tables are padded to a multiple of 16 columns so their row stride is always
divisible by 16: Triton specializes integer arguments on that property, and a stride that
flipped between steps would compile a new kernel variant mid-run.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from .attention.base import AttentionMetadata, DecodeMeta, PrefillMeta
from .scheduler import Chunk, Request, StepPlan

BLOCK_TABLE_ALIGN = 16


@dataclass
class Batch:
    input_ids: torch.Tensor  # int64 [T]
    positions: torch.Tensor  # int64 [T]
    meta: AttentionMetadata
    logit_indices: torch.Tensor  # int64 [S]: packed positions that produce a token
    samplers: list[Request]  # who owns each of the S sampled tokens, in order

    @property
    def num_tokens(self) -> int:
        return self.input_ids.shape[0]


def _to_device(data: list, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if device.type != "cuda":
        return torch.tensor(data, dtype=dtype, device=device)
    # The pinned staging buffer is held by PyTorch's host allocator until the copy is done.
    return torch.tensor(data, dtype=dtype, pin_memory=True).to(device, non_blocking=True)


def _block_table(requests: list[Request], device) -> torch.Tensor:
    width = -(-max(len(r.blocks) for r in requests) // BLOCK_TABLE_ALIGN) * BLOCK_TABLE_ALIGN
    rows = [r.blocks + [0] * (width - len(r.blocks)) for r in requests]
    return _to_device(rows, torch.int32, device)


def span_slots(request: Request, start: int, end: int, block_size: int) -> list[int]:
    """Cache slots of positions [start, end): one range per block touched, so a 512-token
    chunk costs a few list extends rather than a Python step per token."""
    slots, pos = [], start
    while pos < end:
        block, offset = divmod(pos, block_size)
        stop = min(end, (block + 1) * block_size)
        base = request.blocks[block] * block_size
        slots += range(base + offset, base + offset + stop - pos)
        pos = stop
    return slots


@dataclass
class InTransit:
    """A launched step's sampled tokens on their way to the host: `tokens` on the device
    (what the next step's decode rows read; `index[id(request)]` is the row of a request's
    token), owned by `requests` in order, and `host`, their copy in (pinned) host memory,
    complete once the `copied` event has fired (None on CPU: already done)."""
    plan: StepPlan
    requests: list[Request]
    tokens: torch.Tensor
    host: torch.Tensor
    copied: torch.cuda.Event | None

    def __post_init__(self):
        self.index = {id(r): i for i, r in enumerate(self.requests)}


def pack(chunks: list[Chunk], decodes: list[Request], block_size: int, device,
         in_transit: InTransit | None = None) -> Batch:
    """Chunk positions first, decode positions last, in plan order. A decode row whose newest
    token the host has not read yet (`pending`) takes it from `in_transit` on the device."""
    device = torch.device(device)
    ids, pos, slots, logit_idx, samplers = [], [], [], [], []
    token_seq, fed_rows, fed_from = [], [], []
    for i, c in enumerate(chunks):
        r = c.request
        ids += r.prompt[c.start : c.start + c.length]
        pos += range(c.start, c.start + c.length)
        token_seq += [i] * c.length
        slots += span_slots(r, c.start, c.start + c.length, block_size)
        if c.start + c.length == r.prompt_len:  # the chunk finishes its prompt: sample its last position
            logit_idx.append(len(ids) - 1)
            samplers.append(r)
    n_prefill = len(ids)
    for r in decodes:
        p = r.prompt_len + r.num_generated - 1  # the newest token is fed back at its position
        if r.pending:  # its newest token is still on the device: a placeholder, overwritten below
            fed_rows.append(len(ids))
            fed_from.append(in_transit.index[id(r)])
        ids.append(0 if r.pending else r.output[-1])
        pos.append(p)
        slots += span_slots(r, p, p + 1, block_size)
        logit_idx.append(len(ids) - 1)
        samplers.append(r)

    i32 = partial(_to_device, dtype=torch.int32, device=device)
    i64 = partial(_to_device, dtype=torch.int64, device=device)

    prefill = None
    if chunks:
        prefill = PrefillMeta(num_tokens=n_prefill, block_tables=_block_table([c.request for c in chunks], device),
                              token_seq=i32(token_seq), positions=i32(pos[:n_prefill]))
    decode = None
    if decodes:
        ctx = [p + 1 for p in pos[n_prefill:]]
        decode = DecodeMeta(num_tokens=len(decodes), context_lens=i32(ctx),
                            block_tables=_block_table(decodes, device), max_context_len=max(ctx))
    input_ids = i64(ids)
    if fed_rows:  # device to device: the host never waits for these tokens' values
        input_ids.index_copy_(0, i64(fed_rows), in_transit.tokens.index_select(0, i64(fed_from)))
    return Batch(
        input_ids=input_ids,
        positions=i64(pos),
        meta=AttentionMetadata(i64(slots), prefill, decode),
        logit_indices=i64(logit_idx),
        samplers=samplers)
