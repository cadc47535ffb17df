"""A/B of the prompt kernel's tile tables on one GPU, in one process (issue 53, part 12).
  A  the table before: consecutive 128-position ranges of the packed chunk, the last first, so a
     tile may span requests (and then masks every key step, walking each request's keys in turn);
  B  the backend's `request_tiles`: each request's positions cut into tiles of their own, the
     tiles walking the most keys first, on a grid fixed by the shapes.
The same kernel runs both. Cases: fusedlib/bench/kernels.py's MIXED_CHUNK; an engine-shaped step
at batch 256 (ENGINE_STEP, padded to its 2,048-position graph bucket as the whole-step graphs pad
one, table rows for 257 chunks, so B gets the grid the engine's graphs get); a fresh 4,096-token
prompt (B must not be slower). Every output is checked against an fp32 SDPA per request first, and
B's once more from a CUDA graph that captures its table build. Then A and B alternate, ROUNDS
rounds of `timing.median_ms` (ITERS calls, CUDA events around each, an L2 flush before each);
TFLOP/s count causal FLOPs; B/A is paired per round (median, then the rounds' range).
On an H100: `PYTHONPATH=$PWD python3 benchmarks/prompt_tiles_ab.py` (sized for under a minute, most of
it the kernel's compile and the fp32 references)."""
import dataclasses
import statistics

import torch

from fusedlib.attention.base import PrefillMeta
from fusedlib.attention.triton_backend import TritonAttention, _prompt_tiles, request_tiles
from fusedlib.bench.kernels import MIXED_CHUNK, _checked, causal_pairs, paged_case, sdpa_call
from fusedlib.bench.timing import flush_buffer, median_ms
from fusedlib.config import PRESETS

MAX_BATCH, BUCKET = 256, 2048  # part 12's batch and its largest chunk bucket (budget 2,048)
# One step as the scheduler cuts it at saturation (~256 decode rows leave ~1,800 prompt tokens):
# the tail of a 4,096-token prompt, five short prompts whole, the head of another 4,096-token one.
# Boundaries fall inside 128-position tiles, as the budget's leftovers put them.
ENGINE_STEP = ((3277, 819), (0, 16), (0, 256), (0, 64), (0, 16), (0, 64), (0, 565))
CASES = {"mixed_chunk": (MIXED_CHUNK, False), "engine_step": (ENGINE_STEP, True), "fresh_4096": (((0, 4096),), False)}
ROUNDS, ITERS = 10, 30
cfg, device = PRESETS["qwen2.5-1.5b"], "cuda"
height = _prompt_tiles(torch.device(device)).block_m  # the backend's tiles on this card
group, scale = cfg.num_heads // cfg.num_kv_heads, cfg.head_dim ** -0.5


def consecutive_tiles(meta: PrefillMeta, height: int):
    """Table A, in `TritonAttention.tile_table`'s form: (ranges, count, programs per head)."""
    starts = torch.arange(0, meta.num_tokens, height, dtype=torch.int32, device=meta.token_seq.device).flip(0)
    count = torch.full((1,), len(starts), dtype=torch.int32, device=starts.device)
    return torch.stack([starts, (starts + height).clamp(max=meta.num_tokens)], dim=1), count, len(starts)


def graph_padded(q, meta: PrefillMeta):
    """q and meta as WholeGraphs pads a step: positions up to BUCKET form chunk MAX_BATCH at
    position 0 (its table row reads block 0), the table has a row for MAX_BATCH + 1 chunks."""
    pad, tables = BUCKET - meta.num_tokens, meta.block_tables
    padded = torch.zeros(MAX_BATCH + 1, tables.shape[1], dtype=tables.dtype, device=device)
    padded[:len(tables)] = tables
    fill = lambda value: torch.full((pad,), value, dtype=torch.int32, device=device)  # noqa: E731
    return torch.cat([q, q.new_zeros(pad, *q.shape[1:])]), PrefillMeta(
        BUCKET, padded, torch.cat([meta.token_seq, fill(MAX_BATCH)]), torch.cat([meta.positions, fill(0)]))


def graphed_output(q, k_cache, v_cache, meta: PrefillMeta) -> torch.Tensor:
    """B's output from a CUDA graph of its table build and kernel (a fresh meta, so the capture builds)."""
    backend, graph = TritonAttention("balanced"), torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = backend.prefill(q, k_cache, v_cache, dataclasses.replace(meta), scale)
    graph.replay()
    return out.clone()  # while the graph, and so its memory, is alive


def main() -> None:
    print(torch.cuda.get_device_name(), f"torch {torch.__version__}; TFLOP/s (causal FLOPs), median of {ROUNDS} rounds")
    gen, flush = torch.Generator(device=device).manual_seed(0), flush_buffer(device)
    print("case".ljust(13), "tiles A/B (B programs)".rjust(23), "A".rjust(7), "B".rjust(7), "  B/A [rounds' range]",
          "  B's table build")
    for name, (pieces, pad) in CASES.items():
        dense, (q, k_cache, v_cache, meta) = paged_case(pieces, cfg, device, gen)
        reference = torch.cat([sdpa_call(q_.float(), k.float(), v.float(), p, group)()
                               for (q_, k, v), (p, _) in zip(dense, pieces)])
        real = meta.num_tokens
        if pad:
            q, meta = graph_padded(q, meta)
        variants = {"A": TritonAttention("balanced"), "B": TritonAttention("balanced")}
        variants["A"].tile_table = consecutive_tiles
        calls = {v: (lambda b=b: b.prefill(q, k_cache, v_cache, meta, scale)) for v, b in variants.items()}
        for call in calls.values():
            _checked(lambda call=call: call()[:real], reference)
        b_out = calls["B"]()
        if not torch.equal(graphed_output(q, k_cache, v_cache, meta)[:real], b_out[:real]):
            raise ValueError(f"{name}: B from a CUDA graph differs from B run eagerly")
        flops = 4 * cfg.num_heads * cfg.head_dim * sum(causal_pairs(p, c) for p, c in pieces)
        ms = {v: [] for v in calls}
        for _ in range(ROUNDS):
            for v, call in calls.items():
                ms[v].append(median_ms(call, device, ITERS, flush)[0])
        ratios = [a / b for a, b in zip(ms["A"], ms["B"])]  # B's rate over A's
        rate = {v: flops / (statistics.median(t) / 1e3) / 1e12 for v, t in ms.items()}
        (a_tiles, _, _), (_, b_count, b_programs) = consecutive_tiles(meta, height), request_tiles(meta, height)
        build_us = median_ms(lambda: request_tiles(meta, height), device, ITERS, flush)[0] * 1e3
        print(name.ljust(13), f"{len(a_tiles)}/{b_count.item()} ({b_programs})".rjust(23), f"{rate['A']:7.1f}",
              f"{rate['B']:7.1f}", f"  {statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]",
              f"  {build_us:.1f} us per step")
        del dense, q, k_cache, v_cache, reference


if __name__ == "__main__":
    main()
