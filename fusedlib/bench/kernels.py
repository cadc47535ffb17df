"""The engine's kernels alone beside the card's anchors, one kind a run (`spec.kernel`):
  prompt  causal prompt attention (the prompt kernel at the device's tiles and the earlier
          32-row ones) per case, a packed chunk of pieces (cached prefix, chunk), K/V from a
          paged cache in shuffled blocks; a one-piece case beside `scaled_dot_product_attention`
          under each of its flash, cuDNN and efficient backends (one that errors is skipped and
          named) on the same causal shape (SDPA has no packed form of several requests);
          every output checked against an fp32 SDPA first; timed by `timing.median_ms` (CUDA
          events around each call, after an L2 flush).
          TFLOP/s count causal FLOPs: 4 * heads * head_dim * pairs (`causal_pairs`).
  decode  part 11's decode attention per (rows, context) beside a copy of its bytes.
  gemm    each linear layer at a mixed step's rows through part 12's engine's call (gate_up's with
          its SiLU * up) beside `torch.matmul`, outputs checked first, after an L2 flush.
Full: Qwen2.5-1.5B's shapes in fp16; smoke: the tiny model's on the CPU (plumbing only)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .spec import RunSpec
from .telemetry import machine
from .timing import decode_rate, flush_buffer, median_ms
from .workloads import in_flight_contexts
from .. import ops
from ..ops.gemm import SMALL_M_MAX, gate_up_path
from ..attention import make_backend
from ..attention.base import PrefillMeta
from ..attention.triton_backend import EARLIER_PROMPT_TILES, TritonAttention, _prompt_tiles
from ..config import PARTS, PRESETS

# A 2,048-token chunk as the engine packs one at saturation under the mixed workload: its prompt
# tokens come 75% from 4,096-token prompts, 19% from 1,024, the rest from 256, 64 and 16, so
# pieces of two long prompts (one after a 2,048-token prefix), the end of a 1,024-token one and
# five short prompts whole.
MIXED_CHUNK = ((2048, 1024), (0, 512), (640, 384), (0, 64), (0, 16), (0, 16), (0, 16), (0, 16))
MIXED = "mixed"  # a decode case's context: the rows of an engine the mixed workload saturates (`in_flight_contexts`)
KERNELS = {  # prompt cases (pieces of (prefix, chunk)); decode cases (rows, context); the mixed step (chunk, rows)
    "full": dict(prompt=(((0, 2048),), ((0, 4096),), ((0, 8192),), ((2048, 2048),), MIXED_CHUNK),
                 decode=((32, 1024), (256, 1024), (256, 4096), (256, MIXED)), step=(2048, 256), iters=100),
    "smoke": dict(prompt=(((0, 32),), ((0, 64),), ((32, 32),), ((32, 16), (0, 8), (0, 8))),
                  decode=((4, 64), (16, 64), (16, MIXED)), step=(32, 4), iters=1),
}
TOLERANCE = {torch.float16: 1e-2, torch.float32: 1e-4}  # max abs error against the fp32 reference / matmul
SDPA_BACKENDS = ("flash", "cudnn", "efficient")
ENGINE_ATTENTION = PARTS["part12"].attention  # whose decode kernel and prompt kernel the engine runs
KV_BLOCK_SIZE = PARTS["part12"].kv_block_size  # and the cache blocks they read there


# ------------------------------------------------------------------------------ prompt
def causal_pairs(prefix: int, chunk: int) -> int:
    """(query, key) pairs of a causal `chunk` after `prefix` cached tokens."""
    return chunk * prefix + chunk * (chunk + 1) // 2


def paged_case(pieces, cfg, device: str, gen: torch.Generator):
    """Per piece (prefix, chunk), (q, k, v) dense over its whole context [context, heads, d],
    fp16; and the chunks packed as the engine packs a step's (q_chunk, k_cache, v_cache,
    meta): position i of piece r in block tables[r][i // KV_BLOCK_SIZE], slot i % KV_BLOCK_SIZE,
    blocks shuffled."""
    need = [math.ceil((p + c) / KV_BLOCK_SIZE) for p, c in pieces]
    order = torch.randperm(sum(need) + 3, generator=gen, device=device).to(torch.int32)
    k_cache, v_cache = (torch.zeros(sum(need) + 3, KV_BLOCK_SIZE, cfg.num_kv_heads, cfg.head_dim, device=device,
                                    dtype=torch.float16) for _ in range(2))
    tables = torch.zeros(len(pieces), max(need), dtype=torch.int32, device=device)
    dense, seq, positions = [], [], []
    for r, (prefix, chunk) in enumerate(pieces):
        context = prefix + chunk
        q, k, v = (torch.randn(context, heads, cfg.head_dim, generator=gen, device=device).half()
                   for heads in (cfg.num_heads, cfg.num_kv_heads, cfg.num_kv_heads))
        tables[r, :need[r]] = order[sum(need[:r]):sum(need[:r + 1])]
        pos = torch.arange(context, device=device)
        k_cache[tables[r, pos // KV_BLOCK_SIZE].long(), pos % KV_BLOCK_SIZE] = k
        v_cache[tables[r, pos // KV_BLOCK_SIZE].long(), pos % KV_BLOCK_SIZE] = v
        dense.append((q, k, v))
        seq.append(torch.full((chunk,), r, dtype=torch.int32, device=device))
        positions.append(torch.arange(prefix, context, dtype=torch.int32, device=device))
    q_chunk = torch.cat([q[p:] for (q, _, _), (p, _) in zip(dense, pieces)])
    meta = PrefillMeta(q_chunk.shape[0], tables, torch.cat(seq), torch.cat(positions))
    return dense, (q_chunk, k_cache, v_cache, meta)


def sdpa_call(q, k, v, prefix: int, group: int, backend=None):
    """The chunk's causal attention by `scaled_dot_product_attention` ([chunk, heads, d] out);
    after a prefix the causal mask is aligned bottom-right; under `backend` where given."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    heads = lambda x: x.transpose(0, 1)[None]  # noqa: E731
    qh, kh, vh = heads(q[prefix:]), heads(k.repeat_interleave(group, dim=1)), heads(v.repeat_interleave(group, dim=1))
    chunk = qh.shape[2]
    mask = dict(is_causal=True) if prefix == 0 else dict(attn_mask=causal_lower_right(chunk, prefix + chunk))
    chosen = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
              "efficient": SDPBackend.EFFICIENT_ATTENTION, None: SDPBackend.MATH}[backend]

    def call():
        with sdpa_kernel(chosen):
            return F.scaled_dot_product_attention(qh, kh, vh, **mask)[0].transpose(0, 1)
    return call


def _checked(fn, reference: torch.Tensor) -> float:
    err = (fn().float() - reference).abs().max().item()
    if not err <= TOLERANCE[torch.float16]:
        raise ValueError(f"max abs error {err:.3g} above {TOLERANCE[torch.float16]}")
    return err


def prompt_rows(spec: RunSpec) -> list[dict]:
    p, sizes = spec.profile_spec, KERNELS[spec.profile]
    cfg, device = PRESETS[p.model], p.device
    group, scale = cfg.num_heads // cfg.num_kv_heads, cfg.head_dim ** -0.5
    gen = torch.Generator(device=device).manual_seed(0)
    tiles = [_prompt_tiles(torch.device(device))]
    tiles += [EARLIER_PROMPT_TILES] if device == "cuda" and EARLIER_PROMPT_TILES != tiles[0] else []
    out, flush = [], flush_buffer(device)
    for pieces in sizes["prompt"]:
        dense, (q_chunk, k_cache, v_cache, meta) = paged_case(pieces, cfg, device, gen)
        reference = torch.cat([sdpa_call(q.float(), k.float(), v.float(), p, group)()
                               for (q, k, v), (p, _) in zip(dense, pieces)])
        flops = 4 * cfg.num_heads * cfg.head_dim * sum(causal_pairs(p, c) for p, c in pieces)
        rate = lambda ms: flops / (ms / 1e3) / 1e12  # noqa: E731
        sdpa, skipped = {}, []
        for name in SDPA_BACKENDS if len(pieces) == 1 else ():
            call = sdpa_call(*dense[0], pieces[0][0], group, name)
            try:
                _checked(call, reference)
                sdpa[name] = rate(median_ms(call, device, sizes["iters"], flush)[0])
            except Exception as exc:  # a backend this card, build or shape lacks
                skipped.append(f"{name}: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]}")
        fastest = max(sdpa, key=sdpa.get, default=None)
        one = pieces[0] if len(pieces) == 1 else (None, None)
        for t in tiles:
            backend = TritonAttention("balanced", prompt_tiles=t)
            call = lambda backend=backend: backend.prefill(q_chunk, k_cache, v_cache, meta, scale)  # noqa: E731
            err = _checked(call, reference)
            ms = median_ms(call, device, sizes["iters"], flush)[0]
            out.append({**machine(), "tiles": f"{t.block_m}x{t.block_n}-w{t.num_warps}s{t.num_stages}",
                        "default_tiles": t == tiles[0], "pieces": [list(x) for x in pieces],
                        "context": None if one[0] is None else sum(one), "prefix": one[0], "chunk": meta.num_tokens,
                        "heads": cfg.num_heads, "kv_heads": cfg.num_kv_heads, "head_dim": cfg.head_dim,
                        "kv_block_size": KV_BLOCK_SIZE,
                        "flops": flops, "gpu_us": ms * 1e3, "tflops": rate(ms), "max_abs_err": err,
                        "sdpa_backend": fastest, "sdpa_tflops": sdpa.get(fastest),
                        **{f"sdpa_{name}_tflops": sdpa.get(name) for name in SDPA_BACKENDS},
                        "sdpa_skipped": "; ".join(skipped) or None})
        del dense, q_chunk, k_cache, v_cache, reference
    return out


# ------------------------------------------------------------------------------ decode
def decode_rows(spec: RunSpec) -> list[dict]:
    p, sizes = spec.profile_spec, KERNELS[spec.profile]
    cfg, device, backend, flush = PRESETS[p.model], p.device, make_backend(ENGINE_ATTENTION), flush_buffer(p.device)
    return [{**machine(), "backend": ENGINE_ATTENTION, "contexts": MIXED if c == MIXED else "fixed",
             **decode_rate(backend, in_flight_contexts(n, 0, p.lengths, p.budget) if c == MIXED else [c] * n, cfg,
                           device, sizes["iters"], flush, cfg.max_position_embeddings, block_size=KV_BLOCK_SIZE)}
            for n, c in sizes["decode"]]


# ------------------------------------------------------------------------------ gemm
def layer_shapes(cfg, chunk: int, rows: int) -> list[tuple[str, int, int, int]]:
    """(layer, M, N, K) of each linear layer in a mixed step of one `chunk`-token prompt chunk
    beside rows - 1 decode rows; lm_head over one logit row per request."""
    m, q, kv = chunk + rows - 1, cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
    return [("qkv", m, q + 2 * kv, cfg.hidden_size), ("o_proj", m, cfg.hidden_size, q),
            ("gate_up", m, 2 * cfg.intermediate_size, cfg.hidden_size), ("down", m, cfg.hidden_size,
            cfg.intermediate_size), ("lm_head", rows, cfg.vocab_size, cfg.hidden_size)]


def engine_call(layer: str, x: torch.Tensor, w: torch.Tensor):
    """(part 12's engine's call for `layer`, its output the GEMM's [M, N] or activation; whether it calls cuBLAS)."""
    # gate_up's weight is read as the engine stores it: gate and up interleaved (ops/gemm.py).
    if layer == "gate_up":
        epilogue = make_backend(ENGINE_ATTENTION).hopper_shapes  # its large-batch kernel, where it runs
        return (lambda: ops.gate_up_silu(x, w, epilogue)), gate_up_path(x, epilogue) == "cublas"
    if layer == "lm_head":
        return (lambda: F.linear(x, w)), True
    split = {"qkv": ops.QKV_SPLIT_K, "o_proj": ops.O_PROJ_SPLIT_K, "down": ops.DOWN_SPLIT_K}[layer]
    return (lambda: ops.linear(x, w, split)), x.shape[0] > SMALL_M_MAX


def gemm_rows(spec: RunSpec) -> list[dict]:
    p, sizes = spec.profile_spec, KERNELS[spec.profile]
    cfg, device, dtype = PRESETS[p.model], p.device, getattr(torch, p.dtype)
    flush, gen = flush_buffer(device), torch.Generator(device=device).manual_seed(0)
    out = []
    for layer, m, n, k in layer_shapes(cfg, *sizes["step"]):
        x = torch.randn(m, k, generator=gen, device=device).to(dtype)
        w = (torch.randn(n, k, generator=gen, device=device) * k ** -0.5).to(dtype)
        matmul = lambda x=x, w=w: torch.matmul(x, w.T)  # noqa: E731
        ours, calls_cublas = engine_call(layer, x, w)
        want = matmul().float()
        if layer == "gate_up":
            gate, up = ops.split_gate_up(want)
            want = (F.silu(gate) * up).flatten(-2)
        got = ours().float()
        got = got.sum(0) if got.dim() == 3 else got  # split-K partials, summed as their reader does
        err = (got - want).abs().max().item()
        if not err <= TOLERANCE[dtype] * max(1.0, want.abs().max().item()):
            raise ValueError(f"{layer}: the engine's output is {err:.3g} from matmul's")
        ours_ms, matmul_ms = (median_ms(f, device, sizes["iters"], flush)[0] for f in (ours, matmul))
        flops = 2 * m * n * k
        out.append({**machine(), "layer": layer, "m": m, "n": n, "k": k, "flops": flops,
                    "calls_cublas": calls_cublas,
                    "gpu_us": ours_ms * 1e3, "tflops": flops / ours_ms / 1e9,
                    "matmul_us": matmul_ms * 1e3, "matmul_tflops": flops / matmul_ms / 1e9,
                    "fraction_of_matmul": matmul_ms / ours_ms, "max_abs_err": err})
    return out


def run(spec: RunSpec) -> list[dict]:
    return {"prompt": prompt_rows, "decode": decode_rows, "gemm": gemm_rows}[spec.kernel](spec)
