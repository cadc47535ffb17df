"""Split-KV decode at 256 rows of uneven context, the engine's case, beside 256 rows of one length.

Part 12's saturated census reads decode attention at 54% of a copy inside the engine, where the
kernel alone reads 66-75% (the earlier launch shape) at 256 rows of 1k or 4k tokens each. One
untested cause is the rows' uneven lengths: at saturation a decode step holds requests of every
prompt length (the mixed draw's 16..4,096 tokens) part way through their budgets. This times the
balanced kernel on such a step (contexts = prompt + a uniform share of its budget, the same
request draw the capacity runs use) beside uniform rows of the same total bytes, each a share of
a copy of its bytes (L2 flushed before each call, CUDA events), for the default launch shape and
the earlier one, split as the engine's graphs launch it (by the model's longest context).
On a GPU: `PYTHONPATH=$PWD python3 benchmarks/decode_uneven.py` (about 20 s)."""
import numpy as np
import torch

from fusedlib.attention.triton_backend import SplitKVConfig, TritonAttention
from fusedlib.bench.timing import decode_case, flush_buffer, median_ms
from fusedlib.bench.workloads import mixed
from fusedlib.config import PARTS, PRESETS

ROWS, ITERS, REPEATS = 256, 30, 3
KV_BLOCK_SIZE = PARTS["part12"].kv_block_size  # the cache blocks part 12's engine reads
cfg, device = PRESETS["qwen2.5-1.5b"], "cuda"
SHAPES = {"default": SplitKVConfig(), "earlier (32 keys, 6/SM, 2 stages)":
          SplitKVConfig(block_n=32, programs_per_sm=6, num_warps=4, num_stages=2)}


def engine_contexts(seed: int) -> list[int]:
    """A saturated step's decode rows: each request's prompt plus a uniform share of its budget."""
    rng = np.random.default_rng(seed)
    return [len(r.prompt) + int(rng.integers(1, r.max_new_tokens + 1)) for r in mixed(ROWS, seed=seed, vocab_size=2)]


def share_of_copy(backend, contexts: list[int], flush) -> float:
    q, k, v, meta = decode_case(contexts, cfg, torch.float16, device, KV_BLOCK_SIZE, seed=len(contexts))
    meta = type(meta)(meta.num_tokens, meta.context_lens, meta.block_tables, cfg.max_position_embeddings)
    kv_bytes = sum(contexts) * cfg.num_kv_heads * cfg.head_dim * 2 * k.element_size()
    src = torch.empty(kv_bytes // 2, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src), device, ITERS, flush)[0]
    return copy_ms / median_ms(lambda: backend.decode(q, k, v, meta, cfg.head_dim ** -0.5), device, ITERS, flush)[0]


def main() -> None:
    flush = flush_buffer(device)
    print(torch.cuda.get_device_name(), f"- decode at {ROWS} rows, share of a copy of the same bytes "
          f"(median of {ITERS} calls; {REPEATS} draws)")
    for name, shape in SHAPES.items():
        backend = TritonAttention("balanced", splitkv=shape)
        uneven, uniform = [], []
        for seed in range(REPEATS):
            contexts = engine_contexts(seed)
            uneven.append(share_of_copy(backend, contexts, flush))
            uniform.append(share_of_copy(backend, [sum(contexts) // ROWS] * ROWS, flush))
        print(f"{name:36s} uneven {100 * min(uneven):5.1f}-{100 * max(uneven):5.1f}%   "
              f"uniform (same mean, {sum(contexts) // ROWS} tokens) {100 * min(uniform):5.1f}-{100 * max(uniform):5.1f}%")


if __name__ == "__main__":
    main()
