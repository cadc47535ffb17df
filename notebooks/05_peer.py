# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The peer: transformers' continuous batching
#
# transformers' `generate_batch` machinery (its continuous-batching manager) and our engines
# on the same closed workload (mixed prompts, a fixed budget each), at part 10's and part
# 11's max_batch and chunk_tokens; each round runs transformers, then fused and chunked
# (alternating which goes first), so the peer's runs are interleaved with ours.
# Rows: `<out_dir>/peer.jsonl`; the runs: `plans.peer` in `fusedlib/bench/plans.py`.

# %% tags=["parameters"]
backend = "local"  # "modal": a Modal GPU of type `gpu`; "local": this machine's GPU, else its CPU
gpu = "H100"  # Modal's GPU type: the card of the rows in data/ ("A10": the reference's)
profile = "smoke"  # "full": Qwen2.5-1.5B fp16 on a GPU; "smoke": the tiny model on the CPU
out_dir = "data-smoke"  # rows go to <out_dir>/peer.jsonl (relative to the repository root)
rounds = None  # rounds, each transformers then ours (None: the profile's, full: 3)
time_limit_s = 0  # start no run after this many seconds (0: no limit); the next call resumes
configs = None  # None: part10 and part11
n_requests = None  # None: the profile's (full: 48)

# %%
from fusedlib.bench import plans, runner

print(runner.where(backend, gpu), profile)
specs = plans.peer(profile, rounds=rounds, configs=configs, n_requests=n_requests)
new_rows = runner.execute(specs, out_dir, backend=backend, gpu=gpu, time_limit_s=time_limit_s)

# %%
runner.table(out_dir, "peer", profile, ["config", "engine", "batch", "round", "wall_s", "output_tok_s",
                                        "transformers_version"])
