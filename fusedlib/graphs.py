"""CUDA graphs for decode-only forwards.

On an H200 a 1.5B decode forward is mostly host time: the GPU finishes each of the
roughly thousand small kernels faster than Python can launch the next. A CUDA graph
records those launches once and replays them with one call. A graph needs fixed shapes
and fixed addresses, so decode steps are padded up to a few batch-size buckets and their
inputs are copied into static buffers before each replay. Padding rows decode token 0 at
position 0 against the pool's scratch block, which no request owns, so they can never
touch a real request's keys; their logits are dropped.

Only decode-only forwards are graphed: a forward with prompt chunks has a token count and
a tile layout that change every step. That is every decode forward of the chunked engine
and the decode-only steps of the fused one.

`capture=False` keeps every buffer and padding rule but runs the forward eagerly: the
CPU tests check the static path against the plain one with it.
"""
from __future__ import annotations

import torch

from .attention.base import AttentionMetadata, DecodeMeta
from .batch import BLOCK_TABLE_ALIGN, Batch

DEFAULT_BUCKETS = (1, 2, 4, 8, 16, 24, 32)


class DecodeGraphs:
    def __init__(self, model, pool, backend, max_batch: int, capture: bool = True,
                 buckets=DEFAULT_BUCKETS):
        cfg, device = model.config, model.device
        self.model, self.pool, self.backend, self.capture = model, pool, backend, capture
        self.buckets = sorted({b for b in buckets if b < max_batch} | {max_batch})
        max_len = min(cfg.max_position_embeddings, pool.num_blocks * pool.block_size)
        width = -(-pool.blocks_for(max_len) // BLOCK_TABLE_ALIGN) * BLOCK_TABLE_ALIGN
        self.max_context_len = max_len
        scratch_slot = pool.scratch_block * pool.block_size

        def full(n, value, dtype, *shape):
            return torch.full((n, *shape), value, dtype=dtype, device=device)

        # Static inputs; rows past the live batch keep these padding values.
        self.input_ids = full(max_batch, 0, torch.int64)
        self.positions = full(max_batch, 0, torch.int64)
        self.slot_mapping = full(max_batch, scratch_slot, torch.int64)
        self.context_lens = full(max_batch, 1, torch.int32)
        self.block_tables = full(max_batch, pool.scratch_block, torch.int32, width)
        self.logit_indices = torch.arange(max_batch, device=device)
        self._pad_slot, self._pad_block = scratch_slot, pool.scratch_block
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.logits: dict[int, torch.Tensor] = {}
        if capture:
            self._capture_all()

    def _forward(self, n: int) -> torch.Tensor:
        meta = AttentionMetadata(self.slot_mapping[:n], None,
                                 DecodeMeta(n, self.context_lens[:n], self.block_tables[:n],
                                            self.max_context_len))
        return self.model(self.input_ids[:n], self.positions[:n], meta, self.pool.kv,
                          self.backend, self.logit_indices[:n])

    def _capture_all(self) -> None:
        mempool = torch.cuda.graph_pool_handle()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # compile and warm every bucket outside capture
            for n in self.buckets:
                self._forward(n)
        torch.cuda.current_stream().wait_stream(stream)
        for n in reversed(self.buckets):  # largest first, so smaller ones reuse its memory
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=mempool):
                self.logits[n] = self._forward(n)
            self.graphs[n] = graph
        torch.cuda.synchronize()

    def handles(self, batch: Batch) -> bool:
        return batch.meta.prefill is None and batch.num_tokens <= self.buckets[-1]

    def run(self, batch: Batch) -> torch.Tensor:
        """Logits of a decode-only batch, through the smallest bucket that holds it."""
        n = batch.num_tokens
        bucket = next(b for b in self.buckets if b >= n)
        decode = batch.meta.decode
        width = decode.block_tables.shape[1]
        self.input_ids[:n].copy_(batch.input_ids)
        self.positions[:n].copy_(batch.positions)
        self.slot_mapping[:n].copy_(batch.meta.slot_mapping)
        self.context_lens[:n].copy_(decode.context_lens)
        self.block_tables[:n, :width].copy_(decode.block_tables)
        # Rows a larger step left behind become padding again.
        self.input_ids[n:bucket] = 0
        self.positions[n:bucket] = 0
        self.slot_mapping[n:bucket] = self._pad_slot
        self.context_lens[n:bucket] = 1
        self.block_tables[n:bucket] = self._pad_block
        if self.capture:
            self.graphs[bucket].replay()
            return self.logits[bucket][:n]
        return self._forward(bucket)[:n]
