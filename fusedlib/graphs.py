"""CUDA graphs of whole forwards, attention included.

On an H200 a 1.5B decode forward is mostly host time: the GPU finishes each of its roughly
thousand small kernels faster than Python launches the next. A CUDA graph records the launches
once and replays them with one call. It fixes shapes and addresses, so forwards are padded up to
a few bucket sizes and their inputs copied into static buffers before each replay. Padding
positions feed token 0 at position 0 and write their key and value to the pool's scratch block,
which no request owns; their logits are dropped. `capture=False` keeps every buffer and padding
rule but runs the forward eagerly: the CPU tests check the static path with it.
"""
from __future__ import annotations

import numpy as np
import torch

from .attention.base import AttentionMetadata, DecodeMeta, PrefillMeta
from .batch import BLOCK_TABLE_ALIGN, Batch

DECODE_BUCKETS = (1, 2, 4, 8, 16, 24, 32)  # decode rows
CHUNK_BUCKETS = (64, 128, 256)  # chunk positions of a forward with prompt chunks


def _sizes(buckets, top: int) -> list[int]:
    """The bucket sizes under `top`, and `top` itself, ascending."""
    return sorted({b for b in buckets if b < top} | {top})


class WholeGraphs:
    """CUDA graphs of whole forwards, attention included.

    A forward is laid out in two padded parts: its prompt-chunk positions first, padded up to
    a chunk bucket (none in a decode-only forward), then its decode rows, padded up to a
    decode bucket (beside chunks: none, or all `max_batch` rows). Each (chunk bucket, decode bucket)
    pair is one graph, so both attention launches have a fixed grid, and everything they
    read that changes from step to step (which chunk a position is in, its position, block
    tables, context lengths) sits in static buffers. Padding chunk positions form one extra
    chunk (index `max_batch`) on the scratch block; chunk slots no live chunk uses are empty;
    padding decode rows read the one key they wrote there.

    A step is staged in one host-to-device copy: its inputs, padding included, are laid out
    on the host in `image`'s layout (pinned memory), and the graph reads the copy where it
    lands. Block tables are as wide as the longest context (the graph fixes their row stride)
    and keep their rows across steps: only a row whose request changed travels, compact in the
    copy, and moves on the device into its table. Decode rows whose tokens are still on the
    device (overlap) take them there.

    With `chunk_tokens` 0 only decode-only forwards are graphed (part 9's decode graphs).
    """

    def __init__(self, model, pool, backend, max_batch: int, chunk_tokens: int = 0, capture: bool = True,
                 decode_buckets=DECODE_BUCKETS, chunk_buckets=CHUNK_BUCKETS):
        self.model, self.pool, self.backend, self.capture = model, pool, backend, capture
        self.pad_slot = pool.scratch_block * pool.block_size
        # Beside chunks, no decode rows (the chunked engine's chunk forwards) or all of them.
        self.buckets = [(0, d) for d in _sizes(decode_buckets, max_batch)] + (
            [(c, d) for c in _sizes(chunk_buckets, chunk_tokens) for d in (0, max_batch)] if chunk_tokens else [])
        device, scratch = model.device, pool.scratch_block
        self.max_batch, self.chunk_tokens, self.size = max_batch, chunk_tokens, chunk_tokens + max_batch
        self.max_context_len = min(model.config.max_position_embeddings, pool.num_blocks * pool.block_size)
        width = -(-pool.blocks_for(self.max_context_len) // BLOCK_TABLE_ALIGN) * BLOCK_TABLE_ALIGN
        self.block_tables = torch.full((max_batch, width), scratch, dtype=torch.int32, device=device)
        self.chunk_tables = torch.full((max_batch + 1, width), scratch, dtype=torch.int32, device=device)

        # The image: int64 token ids, positions and slots (size each), logit rows and the rows
        # fed from the device and where from (max_batch each), the table rows rewritten (up to
        # both tables' rows); int32 context lengths, then each chunk position's chunk and
        # position; then the rewritten table rows' blocks, compact.
        n64, n32 = 3 * self.size + 5 * max_batch + 1, max_batch + 2 * chunk_tokens
        self._tables_at = 2 * n64 + n32  # in int32 units
        self.image = torch.zeros(-(-(self._tables_at + 2 * max_batch * width) // 2), dtype=torch.int64, device=device)
        self._image32 = self.image.view(torch.int32)
        (self.input_ids, self.positions, self.slot_mapping, self.logit_indices, self._fed_rows,
         self._fed_from, self._table_rows) = torch.split(self.image[:n64], [self.size] * 3 + [max_batch] * 3
                                                         + [2 * max_batch + 1])
        # Whose blocks each static table row holds (a request's block list; None: scratch). A
        # request's blocks never change while it runs, so a row is rewritten only when its owner
        # changes, and a step that decodes the same requests as the last rewrites none (vLLM
        # keeps its block table across steps the same way).
        self._owners = ([None] * max_batch, [None] * (max_batch + 1))  # block_tables', chunk_tables'
        self._rows_at, self._lens_at = 3 * self.size + 3 * max_batch, 2 * n64  # int64, int32 units
        self.context_lens, self.token_seq, self.chunk_positions = torch.split(
            self._image32[2 * n64:self._tables_at], [max_batch, chunk_tokens, chunk_tokens])
        # What every step's image starts from: each section's padding value (token 0 at
        # position 0 on the scratch slot, context length 1, chunk positions in the padding chunk).
        template = np.zeros(-(-self._tables_at // 2), dtype=np.int64)
        template[2 * self.size:3 * self.size] = self.pad_slot
        t32 = template.view(np.int32)
        t32[2 * n64:2 * n64 + max_batch] = 1  # context lengths
        t32[2 * n64 + max_batch:2 * n64 + max_batch + chunk_tokens] = max_batch
        self._template = template
        self.image[:template.shape[0]].copy_(torch.from_numpy(template))
        self.rows = torch.arange(self.size, device=device)
        if capture:
            self._capture()

    def _capture(self) -> None:
        """One graph per bucket, all in one memory pool, largest first so the smaller ones reuse
        its memory. Each runs once on a side stream first, so kernels compile and allocators warm
        outside capture. Each graph's logits stay alive, at a fixed address, in `self.outputs`."""
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
        c, d = bucket
        prefill = PrefillMeta(c, self.chunk_tables, self.token_seq[:c], self.chunk_positions[:c]) if c else None
        decode = DecodeMeta(d, self.context_lens[:d], self.block_tables[:d], self.max_context_len) if d else None
        # A decode-only forward has a logit per row, in order (so nothing is staged for them);
        # one with chunks up to one per request, at rows staged per step.
        return self.model(self.input_ids[:c + d], self.positions[:c + d], AttentionMetadata(
            self.slot_mapping[:c + d], prefill, decode), self.pool.kv, self.backend,
            self.logit_indices if c else self.rows[:d])

    def _bucket(self, batch: Batch) -> tuple[int, int] | None:
        c, d = len(batch.host.token_seq), batch.num_decode
        fits = (b for b in self.buckets if (b[0] > 0) == (c > 0) and (b[1] > 0) == (d > 0) and b[0] >= c and b[1] >= d)
        return next(fits, None) if batch.num_logits <= self.max_batch else None

    def handles(self, batch: Batch) -> bool:
        return self._bucket(batch) is not None

    def run(self, batch: Batch) -> torch.Tensor:
        """Logits of the batch, through the smallest bucket that holds it."""
        h, (c_pad, d_pad) = batch.host, self._bucket(batch)
        c, d, s, size, mb = len(h.token_seq), batch.num_decode, batch.num_logits, self.size, self.max_batch
        rewrites = []  # per table: (table, owners now, rows to rewrite, their width)
        for table, held, reqs, rows in ((self.block_tables, self._owners[0], h.decode_requests, d_pad),
                                        (self.chunk_tables, self._owners[1], h.chunk_requests, len(h.chunk_requests))):
            owners = [r.blocks for r in reqs] + [None] * (rows - len(reqs))
            stale = [i for i, o in enumerate(owners) if held[i] is not o]
            if stale:
                rewrites.append((table, held, owners, stale, max(len(owners[i] or (0,)) for i in stale)))
        end = self._tables_at + sum(len(stale) * width for *_, stale, width in rewrites)
        image = torch.empty(-(-end // 2), dtype=torch.int64, pin_memory=self.image.is_cuda)
        i64 = image.numpy()
        i32 = i64.view(np.int32)
        i64[:self._template.shape[0]] = self._template
        for at, live in ((0, h.input_ids), (size, h.positions), (2 * size, h.slots)):
            i64[at:at + c], i64[at + c_pad:at + c_pad + d] = live[:c], live[c:]
        if c:  # logit rows: the chunks' (before c) stay where they are, the decode rows' move to c_pad
            i64[3 * size:3 * size + s] = h.logit_indices[:s - d] + list(range(c_pad, c_pad + d))
            at = self._lens_at + mb
            i32[at:at + c], i32[at + self.chunk_tokens:at + self.chunk_tokens + c] = h.token_seq, h.positions[:c]
        fed = len(h.fed_rows)
        if fed:  # packed rows (all decode rows, after c) to padded ones
            i64[3 * size + mb:3 * size + mb + fed] = [r - c + c_pad for r in h.fed_rows]
            i64[3 * size + 2 * mb:3 * size + 2 * mb + fed] = h.fed_from
        i32[self._lens_at:self._lens_at + d] = [p + 1 for p in h.positions[c:]]
        at, first_row = self._tables_at, self._rows_at
        for *_, owners, stale, width in rewrites:
            compact = i32[at:at + len(stale) * width].reshape(len(stale), width)
            compact[:] = self.pool.scratch_block  # a padding row reads the scratch block
            for row, i in zip(compact, stale):
                if owners[i] is not None:
                    row[:len(owners[i])] = owners[i]
            i64[first_row:first_row + len(stale)] = stale
            at, first_row = at + len(stale) * width, first_row + len(stale)
        self.image[:image.shape[0]].copy_(image, non_blocking=True)
        at, first_row = self._tables_at, 0
        for table, held, owners, stale, width in rewrites:
            table[:, :width].index_copy_(0, self._table_rows[first_row:first_row + len(stale)],
                                         self._image32[at:at + len(stale) * width].view(len(stale), width))
            for i in stale:
                held[i] = owners[i]
            at, first_row = at + len(stale) * width, first_row + len(stale)
        if fed:
            self.input_ids.index_copy_(0, self._fed_rows[:fed],
                                       batch.in_transit.tokens.index_select(0, self._fed_from[:fed]))
        if not self.capture:
            return self._forward((c_pad, d_pad))[:s]
        self.graphs[c_pad, d_pad].replay()
        return self.outputs[c_pad, d_pad][:s]
