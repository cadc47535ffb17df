"""CUDA graphs of whole forwards, attention included (`WholeGraphs`)."""
# On an H200 a 1.5B decode forward is mostly host time: the GPU finishes each of its roughly
# thousand small kernels faster than Python launches the next. A graph records the launches once
# and replays them with one call. It fixes shapes and addresses, so forwards are padded up to a
# few bucket sizes and their inputs copied into static buffers before each replay. Padding
# positions feed token 0 at position 0 and write their key and value to the pool's scratch
# block, which no request owns; their logits are dropped.
from __future__ import annotations

import numpy as np
import torch

from .attention.base import AttentionMetadata, DecodeMeta, PrefillMeta
from .batch import BLOCK_TABLE_ALIGN, Batch, HostInputs, block_table

# Decode rows. Each bucket is a graph captured at construction (about a second each for the
# 1.5B at its largest), so there are few: vLLM captures 1, 2, 4 and every multiple of 8 to 256,
# SGLang a similar list, to keep padding under a few percent. Here a padding row costs little:
# a decode step's GEMMs read the weights once whatever the row count up to a few hundred, and a
# padding row's attention reads one key. So the steps grow by about a fifth above 32 rows.
DECODE_BUCKETS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256)
# Chunk positions of a forward with prompt chunks: powers of two up to the budget (8 graphs at
# 8192), since such a step's time grows with its tokens and a padded position costs up to half.
CHUNK_BUCKETS = tuple(2 ** k for k in range(6, 14))


def _sizes(buckets, top: int) -> list[int]:
    """The bucket sizes under `top`, and `top` itself, ascending."""
    return sorted({b for b in buckets if b < top} | {top})


class Sections:
    """Named arrays in order in one flat int64 buffer, each 16-byte aligned (as Triton's pointer
    specialization prefers); `view` and `views` read the buffer as `by_dtype` gives it."""
    # A host buffer laid out the same reaches the device in one copy.

    def __init__(self, sizes: dict[str, tuple[str, int]], start: int = 0):
        # name: (dtype, its first and past-last index in the buffer seen as dtype); `end` in bytes.
        self.spans, self.end = {}, start
        for name, (dtype, count) in sizes.items():
            itemsize = np.dtype(dtype).itemsize
            self.spans[name] = (dtype, self.end // itemsize, self.end // itemsize + count)
            self.end = -(-(self.end + count * itemsize) // 16) * 16

    def view(self, buffer: dict, name: str):
        dtype, first, end = self.spans[name]
        return buffer[dtype][first:end]

    def views(self, buffer: dict) -> dict:
        return {name: self.view(buffer, name) for name in self.spans}


def by_dtype(buffer: np.ndarray | torch.Tensor) -> dict:
    """A flat int64 buffer (host: numpy, device: torch) seen as each dtype a section has."""
    return {"int64": buffer, "int32": buffer.view(np.int32 if isinstance(buffer, np.ndarray) else torch.int32)}


class WholeGraphs:
    """One graph per (chunk positions, decode rows) bucket: prompt-chunk positions first, padded to a chunk
    bucket (none in a decode-only forward), then decode rows, padded to a decode bucket (beside chunks: all
    `max_batch` rows if `mixed`, the fused engine's case, else none). With `chunk_tokens` 0 only decode-only
    forwards are graphed. `capture=False` keeps every buffer and padding rule but runs eagerly."""
    # The CPU tests check the static path with capture=False.
    # Both attention launches have a fixed grid per bucket, and what they read that changes from
    # step to step sits in static buffers. Padding chunk positions form one extra chunk (index
    # max_batch) on the scratch block; padding decode rows read the one key they wrote there.
    # A step travels in one host-to-device copy into `image`: its bucket's inputs, padding
    # included (`inputs`, at fixed addresses the graph reads), then the step's changes (`_changes`):
    # the rows fed from the device (overlap) and the block table rows that changed. Block tables
    # are as wide as the longest context (a graph fixes their row stride) and keep their rows
    # across steps (the scheduler keeps decode rows in place): only a row whose request changed
    # travels.

    def __init__(self, model, pool, backend, max_batch: int, chunk_tokens: int = 0, capture: bool = True,
                 mixed: bool = True, decode_buckets=DECODE_BUCKETS, chunk_buckets=CHUNK_BUCKETS,
                 fused_ops: bool = False):
        self.model, self.pool, self.backend, self.capture, self.max_batch = model, pool, backend, capture, max_batch
        self.fused_ops = fused_ops
        self.pad_slot, device = pool.scratch_block * pool.block_size, model.device
        self.buckets = [(0, d) for d in _sizes(decode_buckets, max_batch)] + (  # then chunks, beside decode rows
            [(c, max_batch if mixed else 0) for c in _sizes(chunk_buckets, chunk_tokens)] if chunk_tokens else [])
        self.max_context_len = min(model.config.max_position_embeddings, pool.num_blocks * pool.block_size)
        self.width = -(-pool.blocks_for(self.max_context_len) // BLOCK_TABLE_ALIGN) * BLOCK_TABLE_ALIGN
        # The decode rows' block table, then the chunks' (one more row: the padding chunk's), in
        # one tensor, so the rows that changed are rewritten in one copy.
        self.table = torch.full((2 * max_batch + 1, self.width), pool.scratch_block, dtype=torch.int32, device=device)
        # Whose blocks each table row holds (a request's block list; None: scratch). A request's
        # blocks never change while it runs, so a row is rewritten only when its owner changes.
        self._owners = [None] * len(self.table)
        self.layouts = {(c, d): Sections({
            "input_ids": ("int64", c + d), "positions": ("int64", c + d), "slots": ("int64", c + d),
            "logit_rows": ("int64", max_batch if c else 0),  # a decode-only forward's are `rows`
            "context_lens": ("int32", d), "token_seq": ("int32", c), "chunk_positions": ("int32", c)})
            for c, d in self.buckets}
        largest = self._changes(max(s.end for s in self.layouts.values()), max_batch, len(self.table))
        self.image = by_dtype(torch.zeros(largest.end // 8, dtype=torch.int64, device=device))
        self.inputs = {b: layout.views(self.image) for b, layout in self.layouts.items()}
        self.rows = torch.arange(max_batch, device=device)
        if capture:
            self._capture()

    def _changes(self, start: int, fed: int, stale: int) -> Sections:
        """After a bucket's inputs (at `start`): `fed` decode rows' tokens from the device, `stale` table rows."""
        return Sections({"fed_rows": ("int64", fed), "fed_from": ("int64", fed),
                         "table_rows": ("int64", stale), "table_blocks": ("int32", stale * self.width)}, start)

    def _capture(self) -> None:
        # One memory pool, largest bucket first so the smaller ones reuse its memory. Each runs once
        # on a side stream first, so kernels compile and allocators warm outside capture. Each
        # graph's logits stay alive, at a fixed address, in `self.outputs`.
        mempool, stream = torch.cuda.graph_pool_handle(), torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for bucket in self.buckets:
                self._forward(bucket)
        torch.cuda.current_stream().wait_stream(stream)
        self.graphs, self.outputs = {}, {}
        for bucket in sorted(self.buckets, key=lambda b: -(b[0] + b[1])):
            self.graphs[bucket] = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graphs[bucket], pool=mempool):
                self.outputs[bucket] = self._forward(bucket)
        torch.cuda.synchronize()

    def _forward(self, bucket: tuple[int, int]) -> torch.Tensor:
        """The whole forward at (chunk positions, decode rows) = `bucket`, on the static buffers."""
        (c, d), static = bucket, self.inputs[bucket]
        prefill = PrefillMeta(c, self.table[self.max_batch:], static["token_seq"], static["chunk_positions"]) if c else None
        decode = DecodeMeta(d, static["context_lens"], self.table[:d], self.max_context_len) if d else None
        # A decode-only forward has a logit per row, in order (nothing staged); one with chunks
        # up to one per request, at rows staged per step.
        return self.model(static["input_ids"], static["positions"], AttentionMetadata(static["slots"], prefill, decode),
                          self.pool.kv, self.backend, static["logit_rows"] if c else self.rows[:d], self.fused_ops)

    def _bucket(self, batch: Batch) -> tuple[int, int] | None:
        c, d = len(batch.host.token_seq), batch.num_decode
        fits = (b for b in self.buckets if (b[0] > 0) == (c > 0) and b[0] >= c and b[1] >= d)
        return next(fits, None)

    def handles(self, batch: Batch) -> bool:
        return self._bucket(batch) is not None

    def _stale_rows(self, h: HostInputs, decode_rows: int) -> list[tuple[int, list[int] | None]]:
        """(table row, new owner's blocks) where it changes: `decode_rows` rows (scratch past the live), the chunks'."""
        stale = []
        for first, owners in ((0, [r.blocks for r in h.decode_requests] + [None] * (decode_rows - len(h.decode_requests))),
                              (self.max_batch, [r.blocks for r in h.chunk_requests])):
            if self._owners[first:first + len(owners)] != owners:  # one comparison in C when the rows kept their requests
                stale += [(first + i, o) for i, o in enumerate(owners) if self._owners[first + i] != o]
        return stale

    def run(self, batch: Batch) -> torch.Tensor:
        """Logits of the batch, through the smallest bucket that holds it."""
        h, (c_pad, d_pad) = batch.host, self._bucket(batch)
        c, d, s, fed = len(h.token_seq), batch.num_decode, batch.num_logits, len(h.fed_rows)
        stale, inputs = self._stale_rows(h, d_pad), self.layouts[c_pad, d_pad]
        changes = self._changes(inputs.end, fed, len(stale))
        pinned = torch.empty(changes.end // 8, dtype=torch.int64, pin_memory=self.model.device.type == "cuda")
        staged = by_dtype(pinned.numpy())
        host = inputs.views(staged) | changes.views(staged)
        for name, live, pad in (("input_ids", h.input_ids, 0), ("positions", h.positions, 0), ("slots", h.slots, self.pad_slot)):
            host[name][:] = pad
            host[name][:c], host[name][c_pad:c_pad + d] = live[:c], live[c:]
        host["context_lens"][:] = 1
        host["context_lens"][:d] = h.positions[c:] + 1
        if c_pad:  # logit rows: the chunks' stay where they are, the decode rows' move to c_pad
            host["logit_rows"][:] = 0
            host["logit_rows"][:s - d], host["logit_rows"][s - d:s] = h.logit_indices[:s - d], np.arange(c_pad, c_pad + d)
            host["token_seq"][:], host["chunk_positions"][:] = self.max_batch, 0  # padding: the padding chunk, at 0
            host["token_seq"][:c], host["chunk_positions"][:c] = h.token_seq, h.positions[:c]
        host["fed_rows"][:], host["fed_from"][:] = h.fed_rows - c + c_pad, h.fed_from  # decode rows start at c_pad
        if stale:
            host["table_rows"][:] = [row for row, _ in stale]
            host["table_blocks"][:] = block_table([o for _, o in stale], self.width, self.pool.scratch_block).ravel()
        self.image["int64"][:changes.end // 8].copy_(pinned, non_blocking=True)
        if stale:
            blocks = changes.view(self.image, "table_blocks").view(-1, self.width)
            self.table.index_copy_(0, changes.view(self.image, "table_rows"), blocks)
            for row, owner in stale:
                self._owners[row] = owner
        if fed:
            tokens = batch.in_transit.tokens.index_select(0, changes.view(self.image, "fed_from"))
            self.inputs[c_pad, d_pad]["input_ids"].index_copy_(0, changes.view(self.image, "fed_rows"), tokens)
        if not self.capture:
            return self._forward((c_pad, d_pad))[:s]
        self.graphs[c_pad, d_pad].replay()
        return self.outputs[c_pad, d_pad][:s]
