"""CUDA graphs: decode-only forwards whole, forwards with prompt chunks piecewise.

On an H200 a 1.5B decode forward is mostly host time: the GPU finishes each of the
roughly thousand small kernels faster than Python can launch the next. A CUDA graph
records those launches once and replays them with one call. A graph needs fixed shapes
and fixed addresses, so decode steps are padded up to a few batch-size buckets and their
inputs are copied into static buffers before each replay. Padding rows decode token 0 at
position 0 against the pool's scratch block, which no request owns, so they can never
touch a real request's keys; their logits are dropped.

`DecodeGraphs` graphs decode-only forwards whole: every decode forward of the chunked
engine and the decode-only steps of the fused one. A forward with prompt chunks has a
token count and a tile layout that change every step; `PackedGraphs` (with
`graph_chunks`) pads its token count to a bucket and graphs everything but attention.

`capture=False` keeps every buffer and padding rule but runs the forward eagerly: the
CPU tests check the static path against the plain one with it.
"""
from __future__ import annotations

import torch

from .attention.base import AttentionMetadata, DecodeMeta
from .batch import BLOCK_TABLE_ALIGN, Batch

DECODE_BUCKETS = (1, 2, 4, 8, 16, 24, 32)  # decode rows
PACKED_BUCKETS = (64, 128, 256)  # tokens of a forward with prompt chunks


class _StaticInputs:
    """What every graphed forward shares: static token inputs for up to `size` tokens, the
    bucket sizes a step is padded up to, and the padding rule (token 0 at position 0, its
    key and value written to the pool's scratch block). A subclass cuts its forward into
    pieces, `_segment(n, i, carry)`, which `_capture` records and `_piece` replays."""

    def __init__(self, model, pool, backend, capture: bool, size: int, buckets):
        self.model, self.pool, self.backend, self.capture = model, pool, backend, capture
        self.buckets = sorted({b for b in buckets if b < size} | {size})
        self.pad_slot = pool.scratch_block * pool.block_size
        self.input_ids = torch.zeros(size, dtype=torch.int64, device=model.device)
        self.positions = torch.zeros(size, dtype=torch.int64, device=model.device)
        self.slot_mapping = torch.full((size,), self.pad_slot, dtype=torch.int64, device=model.device)

    def _stage(self, batch: Batch) -> tuple[int, int]:
        """Copy the batch's n tokens into the static inputs and turn rows n..bucket (which a
        larger step may have filled) back into padding; returns (n, bucket), the bucket the
        smallest that holds the batch."""
        n = batch.num_tokens
        bucket = next(b for b in self.buckets if b >= n)
        for static, live, pad in ((self.input_ids, batch.input_ids, 0), (self.positions, batch.positions, 0),
                                  (self.slot_mapping, batch.meta.slot_mapping, self.pad_slot)):
            static[:n].copy_(live)
            static[n:bucket] = pad
        return n, bucket

    def _capture(self, pieces: int) -> None:
        """Capture `self._segment(n, i, carry) -> carry` for i in range(pieces) and every bucket
        size n, each piece its own graph, in one memory pool; piece i + 1 reads piece i's
        outputs, which stay alive (and at fixed addresses) in `self.outputs`. Every piece runs
        once on a side stream first, so kernels compile and allocators warm outside capture.
        Sets `self.graphs` ({n: [graph per piece]}) and `self.outputs` ({n: [outputs per piece]})."""
        mempool = torch.cuda.graph_pool_handle()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for n in self.buckets:
                carry = None
                for i in range(pieces):
                    carry = self._segment(n, i, carry)
        torch.cuda.current_stream().wait_stream(stream)
        self.graphs, self.outputs = {}, {}
        for n in reversed(self.buckets):  # largest first, so smaller ones reuse its memory
            self.graphs[n], self.outputs[n], carry = [], [], None
            for i in range(pieces):
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, pool=mempool):
                    carry = self._segment(n, i, carry)
                self.graphs[n].append(graph)
                self.outputs[n].append(carry)
        torch.cuda.synchronize()

    def _piece(self, bucket: int, i: int, carry):
        """Piece i of a `bucket`-token forward: its graph replayed, or (capture=False) run eagerly."""
        if not self.capture:
            return self._segment(bucket, i, carry)
        self.graphs[bucket][i].replay()
        return self.outputs[bucket][i]


class DecodeGraphs(_StaticInputs):
    def __init__(self, model, pool, backend, max_batch: int, capture: bool = True,
                 buckets=DECODE_BUCKETS):
        super().__init__(model, pool, backend, capture, max_batch, buckets)
        device = model.device
        self.max_context_len = min(model.config.max_position_embeddings, pool.num_blocks * pool.block_size)
        width = -(-pool.blocks_for(self.max_context_len) // BLOCK_TABLE_ALIGN) * BLOCK_TABLE_ALIGN
        # Decode metadata; rows past the live batch keep these padding values.
        self.context_lens = torch.ones(max_batch, dtype=torch.int32, device=device)
        self.block_tables = torch.full((max_batch, width), pool.scratch_block, dtype=torch.int32,
                                       device=device)
        self.logit_indices = torch.arange(max_batch, device=device)
        if capture:
            self._capture(1)

    def _segment(self, n: int, i: int = 0, carry=None) -> torch.Tensor:
        """The whole decode forward at n rows: the one piece (`i` and `carry` are unused)."""
        meta = AttentionMetadata(self.slot_mapping[:n], None,
                                 DecodeMeta(n, self.context_lens[:n], self.block_tables[:n],
                                            self.max_context_len))
        return self.model(self.input_ids[:n], self.positions[:n], meta, self.pool.kv,
                          self.backend, self.logit_indices[:n])

    def handles(self, batch: Batch) -> bool:
        return batch.meta.prefill is None and batch.num_tokens <= self.buckets[-1]

    def run(self, batch: Batch) -> torch.Tensor:
        """Logits of a decode-only batch, through the smallest bucket that holds it."""
        n, bucket = self._stage(batch)
        decode = batch.meta.decode
        self.context_lens[:n].copy_(decode.context_lens)
        self.block_tables[:n, :decode.block_tables.shape[1]].copy_(decode.block_tables)
        # Rows a larger step left behind become padding again.
        self.context_lens[n:bucket] = 1
        self.block_tables[n:bucket] = self.pool.scratch_block
        return self._piece(bucket, 0, None)[:n]


class PackedGraphs(_StaticInputs):
    """CUDA graphs for forwards that carry prompt chunks (piecewise).

    A packed forward's token count and attention layout change every step, so it cannot be
    one graph. Everything *outside* attention only needs a fixed token count, though: pad
    the packed sequence to one of a few bucket sizes and that part is static. The forward is
    cut at each attention call into L + 1 graphed segments (embedding and layer 0's
    projections; each layer's output projection, MLP and the next layer's projections; the
    last layer's tail and the head), and attention runs eagerly between them on the live
    tokens with the step's own metadata. A forward then costs L + 1 graph launches plus the
    attention kernels instead of every kernel one by one.

    Padding tokens are token 0 at position 0, their keys written to the scratch block, and
    their attention output is whatever the static buffer holds; they feed no logit. Logits
    come from a static list of up to `max_batch` rows (one per request, at most), padded
    with row 0 and cut back to the live count.
    """

    def __init__(self, model, pool, backend, max_batch: int, chunk_tokens: int, capture: bool = True,
                 buckets=PACKED_BUCKETS):
        top = chunk_tokens + max_batch  # a step's most tokens: a full chunk budget plus every decode
        super().__init__(model, pool, backend, capture, top, buckets)
        cfg, device = model.config, model.device
        self.logit_indices = torch.zeros(max_batch, dtype=torch.int64, device=device)
        # One attention output buffer per layer: segment i reads layer i-1's.
        self.attn = torch.zeros(cfg.num_layers, top, cfg.num_heads * cfg.head_dim,
                                dtype=model.dtype, device=device)
        if capture:  # per bucket, per segment, the outputs are (residual, q, cos, sin), or logits
            self._capture(len(model.layers) + 1)

    # ---- the forward, cut at attention ------------------------------------------------
    def _segment(self, n: int, i: int, carry=None):
        """Segment i of an n-token forward: i = 0 embeds and projects layer 0; 0 < i < L
        finishes layer i-1 (from its attention buffer) and projects layer i; i = L finishes
        the last layer and applies the head. Returns (residual, q, cos, sin), or logits
        for i = L."""
        model, kv, layers = self.model, self.pool.kv, self.model.layers
        with torch.inference_mode():
            if i == 0:
                hidden, residual = model.embed_tokens(self.input_ids[:n]), None
                cos, sin = model.rotary(self.positions[:n], hidden.dtype)
            else:
                residual, _, cos, sin = carry
                hidden, residual = layers[i - 1].post_attention(self.attn[i - 1, :n], residual, model.fused_ops)
            if i == len(layers):
                return model.head(hidden, residual, self.logit_indices)
            q, residual = layers[i].pre_attention(hidden, residual, cos, sin, kv[i, 0], kv[i, 1],
                                                  self.slot_mapping[:n], model.fused_ops)
            return residual, q, cos, sin

    def handles(self, batch: Batch) -> bool:
        return (batch.meta.prefill is not None and batch.num_tokens <= self.buckets[-1]
                and batch.logit_indices.shape[0] <= self.logit_indices.shape[0])

    def run(self, batch: Batch) -> torch.Tensor:
        """Logits of a batch with prompt chunks, through the smallest bucket that holds it."""
        n, bucket = self._stage(batch)
        s = batch.logit_indices.shape[0]
        self.logit_indices[:s].copy_(batch.logit_indices)
        self.logit_indices[s:] = 0
        layers, kv = self.model.layers, self.pool.kv
        carry = None
        for i in range(len(layers) + 1):
            carry = self._piece(bucket, i, carry)
            if i < len(layers):
                # Attention of layer i (q is carry[1]), eagerly, on the live tokens only, straight
                # into the static buffer the next segment reads.
                with torch.inference_mode():
                    layers[i].self_attn.attend(carry[1][:n], kv[i, 0], kv[i, 1], batch.meta, self.backend,
                                               out=self.attn[i, :n])
        return carry[:s]
