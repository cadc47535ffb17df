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
from .batch import BLOCK_TABLE_ALIGN, Batch, block_table

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


class WholeGraphs:
    """One graph per (chunk positions, decode rows) bucket: prompt-chunk positions first, padded
    to a chunk bucket (none in a decode-only forward), then decode rows, padded to a decode bucket
    (beside chunks: all `max_batch` rows if `mixed`, the fused engine's case, else none). With
    `chunk_tokens` 0 only decode-only forwards are graphed. `capture=False` keeps every buffer
    and padding rule but runs eagerly (the CPU tests check the static path with it)."""
    # Both attention launches have a fixed grid per bucket, and what they read that changes from
    # step to step sits in static buffers. Padding chunk positions form one extra chunk (index
    # max_batch) on the scratch block; padding decode rows read the one key they wrote there.
    # A step is staged in one host-to-device copy of `image`, laid out per bucket: its inputs,
    # padding included, then the rows fed from the device (overlap) and the block table rows that
    # changed. Block tables are as wide as the longest context (a graph fixes their row stride)
    # and keep their rows across steps (the scheduler keeps decode rows in place): only a row
    # whose request changed travels.

    def __init__(self, model, pool, backend, max_batch: int, chunk_tokens: int = 0, capture: bool = True,
                 mixed: bool = True, decode_buckets=DECODE_BUCKETS, chunk_buckets=CHUNK_BUCKETS,
                 fused_ops: bool = False):
        self.model, self.pool, self.backend, self.capture, self.max_batch = model, pool, backend, capture, max_batch
        self.fused_ops = fused_ops
        self.pad_slot, device = pool.scratch_block * pool.block_size, model.device
        self.beside = max_batch if mixed else 0  # decode rows beside chunks
        self.buckets = [(0, d) for d in _sizes(decode_buckets, max_batch)] + (
            [(c, self.beside) for c in _sizes(chunk_buckets, chunk_tokens)] if chunk_tokens else [])
        self.max_context_len = min(model.config.max_position_embeddings, pool.num_blocks * pool.block_size)
        self.width = -(-pool.blocks_for(self.max_context_len) // BLOCK_TABLE_ALIGN) * BLOCK_TABLE_ALIGN
        self.tables = [torch.full((rows, self.width), pool.scratch_block, dtype=torch.int32, device=device)
                       for rows in (max_batch, max_batch + 1)]  # decode rows', chunks' (+ the padding chunk)
        # Whose blocks each table row holds (a request's block list; None: scratch). A request's
        # blocks never change while it runs, so a row is rewritten only when its owner changes.
        self._owners = ([None] * max_batch, [None] * (max_batch + 1))
        top = max(self._layout(*b)[-1] for b in self.buckets)  # the largest bucket's inputs, then
        tail = 4 * max_batch + 1 + (2 * max_batch + 1) * self.width // 2  # fed rows, table rows
        self.image = torch.zeros(top + tail, dtype=torch.int64, device=device)
        self.rows = torch.arange(max_batch, device=device)
        self.views = {b: self._views(*b) for b in self.buckets}
        if capture:
            self._capture()

    def _layout(self, c: int, d: int) -> tuple[int, int, int]:
        """(n64, at32, tail) of bucket (c, d)'s image: see `_views`; the step's variable tail at `tail`."""
        # Sections start 16-byte aligned, as Triton's pointer specialization prefers.
        n64 = 3 * (c + d) + (self.max_batch if c else 0)
        at32 = -(-2 * n64 // 4) * 4
        return n64, at32, -(-(at32 + d + 2 * c) // 4) * 2

    def _views(self, c: int, d: int):
        n64, at32, _ = self._layout(c, d)
        image32 = self.image.view(torch.int32)
        return (*torch.split(self.image[:n64], [c + d] * 3 + [n64 - 3 * (c + d)]),
                *torch.split(image32[at32:at32 + d + 2 * c], [d, c, c]))

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
        (c, d), (ids, positions, slots, logit_rows, context_lens, token_seq, chunk_positions) = bucket, self.views[bucket]
        prefill = PrefillMeta(c, self.tables[1], token_seq, chunk_positions) if c else None
        decode = DecodeMeta(d, context_lens, self.tables[0][:d], self.max_context_len) if d else None
        # A decode-only forward has a logit per row, in order (nothing staged); one with chunks
        # up to one per request, at rows staged per step.
        return self.model(ids, positions, AttentionMetadata(slots, prefill, decode), self.pool.kv, self.backend,
                          logit_rows if c else self.rows[:d], self.fused_ops)

    def _bucket(self, batch: Batch) -> tuple[int, int] | None:
        c, d = len(batch.host.token_seq), batch.num_decode
        fits = (b for b in self.buckets if (b[0] > 0) == (c > 0) and b[0] >= c and b[1] >= d)
        return next(fits, None)

    def handles(self, batch: Batch) -> bool:
        return self._bucket(batch) is not None

    def run(self, batch: Batch) -> torch.Tensor:
        """Logits of the batch, through the smallest bucket that holds it."""
        h, (c_pad, d_pad) = batch.host, self._bucket(batch)
        c, d, s, fed = len(h.token_seq), batch.num_decode, batch.num_logits, len(h.fed_rows)
        n64, at32, tail = self._layout(c_pad, d_pad)
        rewrites = []  # per table: (table, held, owners now, rows to rewrite)
        for table, held, reqs, rows in ((self.tables[0], self._owners[0], h.decode_requests, d_pad),
                                        (self.tables[1], self._owners[1], h.chunk_requests, len(h.chunk_requests))):
            owners = [r.blocks for r in reqs] + [None] * (rows - len(reqs))
            if held[:rows] != owners:  # one comparison in C when the rows kept their requests
                rewrites.append((table, held, owners, [i for i, o in enumerate(owners) if held[i] != o]))
        k = sum(len(stale) for *_, stale in rewrites)
        end = tail + 2 * fed + k + (k * self.width + 1) // 2
        i64 = torch.empty(end, dtype=torch.int64, pin_memory=self.image.is_cuda).numpy()
        i32 = i64.view(np.int32)
        for at, live, pad in ((0, h.input_ids, 0), (c_pad + d_pad, h.positions, 0), (2 * (c_pad + d_pad), h.slots,
                                                                                      self.pad_slot)):
            i64[at:at + c_pad + d_pad] = pad
            i64[at:at + c], i64[at + c_pad:at + c_pad + d] = live[:c], live[c:]
        i32[at32:at32 + d_pad] = 1  # context lengths
        i32[at32:at32 + d] = h.positions[c:] + 1
        if c_pad:  # logit rows: the chunks' stay where they are, the decode rows' move to c_pad
            logits = i64[3 * (c_pad + d_pad):n64]
            logits[:] = 0
            logits[:s - d], logits[s - d:s] = h.logit_indices[:s - d], np.arange(c_pad, c_pad + d)
            i32[at32 + d_pad:at32 + d_pad + c_pad] = self.max_batch  # padding: the padding chunk,
            i32[at32 + d_pad + c_pad:at32 + d_pad + 2 * c_pad] = 0  # at position 0
            i32[at32 + d_pad:at32 + d_pad + c] = h.token_seq
            i32[at32 + d_pad + c_pad:at32 + d_pad + c_pad + c] = h.positions[:c]
        i64[tail:tail + fed], i64[tail + fed:tail + 2 * fed] = h.fed_rows - c + c_pad, h.fed_from
        rows_at, at = tail + 2 * fed, 2 * (tail + 2 * fed + k)
        for table, held, owners, stale in rewrites:
            i64[rows_at:rows_at + len(stale)] = stale
            i32[at:at + len(stale) * self.width] = block_table([owners[i] for i in stale], self.width,
                                                               self.pool.scratch_block).ravel()
            rows_at, at = rows_at + len(stale), at + len(stale) * self.width
        self.image[:end].copy_(torch.from_numpy(i64), non_blocking=True)
        rows_at, at = tail + 2 * fed, 2 * (tail + 2 * fed + k)
        for table, held, owners, stale in rewrites:
            table.index_copy_(0, self.image[rows_at:rows_at + len(stale)],
                              self.image.view(torch.int32)[at:at + len(stale) * self.width].view(-1, self.width))
            for i in stale:
                held[i] = owners[i]
            rows_at, at = rows_at + len(stale), at + len(stale) * self.width
        if fed:
            self.views[c_pad, d_pad][0].index_copy_(0, self.image[tail:tail + fed], batch.in_transit.tokens.index_select(
                0, self.image[tail + fed:tail + 2 * fed]))
        if not self.capture:
            return self._forward((c_pad, d_pad))[:s]
        self.graphs[c_pad, d_pad].replay()
        return self.outputs[c_pad, d_pad][:s]
