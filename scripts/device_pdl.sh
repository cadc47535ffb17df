#!/usr/bin/env bash
# One device command for PDL with the decode GEMMs' weights asked into L2 before they wait:
# `scripts/device_pdl.sh OUT`, with the code before the change in .base/ (carried) and
# FUSEDLIB_GIT_COMMIT / BASE_COMMIT naming the two commits.
#   1. the roofline bench's pdl_sweep section on this tree (OUT/new)
#   2. census configuration 6 on the code before and after, alternated over ROUNDS rounds
#      (default 3), the new arm at the sweep's fastest PDL plan for the decode step
#      (`--pdl-plan`), rows in OUT/ab
#   3. the GPU tests (ops, attention, graphs, engine), while 200 s are left
# Each stage through scripts/device_census_ab.sh; everything lands in OUT/rowsab.tgz.
set -u
out=$1
export PYTHONUNBUFFERED=1
STAGES=sections SECTIONS=pdl_sweep SECTIONS_S=200 LIMIT=230 bash scripts/device_census_ab.sh "$out"
plan=$(python3 - "$out/new/roofline/pdl_sweep.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
plans = {}
for r in rows:
    if r["step"] == "decode" and r["pdl"]:
        key = (1, r["qkv_k"], r["o_proj_k"], r["gate_up_k"], r["down_k"])
        plans.setdefault(key, []).append(r["gpu_ms_median"])
best = min(plans, key=lambda k: statistics.median(plans[k]))
print(",".join(str(int(x)) for x in best))
PY
)
echo "fastest PDL plan for the decode step: $plan" | tee -a "$out/log.txt"
STAGES=ab BASE_CONFIGS=6 NEW_CONFIGS=6 NEW_FLAGS="--pdl-plan $plan" LIMIT=200 bash scripts/device_census_ab.sh "$out"
STAGES=gpu_tests LIMIT=$((570 - SECONDS)) bash scripts/device_census_ab.sh "$out"
