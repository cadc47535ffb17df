"""Split-KV decode launch shapes (`SplitKVConfig`) at the engine's cases: 256 rows at 1k and 4k
context, 32 rows at 1k, split as the engine's graphs launch it (by the model's longest context);
each a share of a copy of the same bytes (`timing.decode_rate`). Part 12's decode kernel reads at
66-75% of a copy alone at 256 rows against a target of 80%: this picks the shape to try next.
On a GPU: `PYTHONPATH=$PWD python3 benchmarks/decode_sweep.py [seconds]`; its results go to
benchmarks/NOTES.md, and a shape the engine adopts is measured again by `make run-all`."""
import itertools
import sys
import time

import torch

from fusedlib.attention.triton_backend import SplitKVConfig, TritonAttention
from fusedlib.bench.timing import decode_rate, flush_buffer
from fusedlib.config import PARTS, PRESETS

cfg, t0 = PRESETS["qwen2.5-1.5b"], time.time()
flush = flush_buffer("cuda")
cases = ((256, 1024), (256, 4096), (32, 1024))
budget = float(sys.argv[1]) if len(sys.argv) > 1 else 150.0
print("config".ljust(32), *(f"r{r}c{c}" for r, c in cases), flush=True)
default = SplitKVConfig()
shapes = [default] + [SplitKVConfig(block_n=b, programs_per_sm=p, num_warps=w, num_stages=s)
                      for b, w, s, p in itertools.product((32, 64, 128), (4, 8), (2, 3, 4), (4, 6, 12, 24))]
best = {}
for sk in shapes:
    if time.time() - t0 > budget:
        print("time budget reached", flush=True)
        break
    backend = TritonAttention("balanced", splitkv=sk)
    try:
        fr = [decode_rate(backend, [c] * r, cfg, "cuda", 30, flush, cfg.max_position_embeddings,
                          block_size=PARTS["part12"].kv_block_size)["fraction_of_copy"]
              for r, c in cases]
    except Exception as e:  # a shape the kernel cannot launch (shared memory): say so, go on
        print(f"{sk}: {type(e).__name__} {str(e)[:80]}", flush=True)
        continue
    name = f"n{sk.block_n}-pps{sk.programs_per_sm:g}-w{sk.num_warps}s{sk.num_stages}"
    print(name.ljust(32), *(f"{100 * f:5.1f}%" for f in fr), flush=True)
    best[name] = fr
top = sorted(best.items(), key=lambda kv: -min(kv[1][:2]))[:8]
print("best by the lower of the two 256-row cases:")
for name, fr in top:
    print(name.ljust(32), *(f"{100 * f:5.1f}%" for f in fr))
