#!/usr/bin/env bash
# One device command for the gate_up + activation kernel at a prompt chunk's batch sizes:
# `scripts/device_gate_up_prefill.sh OUT`, with the code before the change in .base/ (carried)
# and FUSEDLIB_GIT_COMMIT / BASE_COMMIT naming the two commits.
#   1. the roofline bench's ops_check and gate_up_prefill sections on this tree (OUT/new)
#   2. census configuration 6 on the code before and after, alternated over ROUNDS rounds
#      (default 3), the new arm with the sweep's fastest launch shape at the largest batch
#      (`--gate-up-prefill`), rows in OUT/ab
# Both stages through scripts/device_census_ab.sh; everything lands in OUT/rowsab.tgz.
set -u
out=$1
export PYTHONUNBUFFERED=1
STAGES=sections SECTIONS=ops_check,gate_up_prefill SECTIONS_S=300 LIMIT=330 \
  bash scripts/device_census_ab.sh "$out"
best=$(python3 - "$out/new/roofline/gate_up_prefill.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
rows = [r for r in rows if r.get("kernel") == "one kernel" and "us_per_call" in r]
top = max(r["m"] for r in rows)
b = min((r for r in rows if r["m"] == top), key=lambda r: r["us_per_call"])
print(f"{b['block_m']},{b['block_n']},{b['block_k']},{b['num_warps']},{b['num_stages']}")
PY
)
echo "fastest shape at the largest batch: $best" | tee -a "$out/log.txt"
STAGES=ab BASE_CONFIGS=6 NEW_CONFIGS=6 NEW_FLAGS="--gate-up-prefill $best" LIMIT=${LIMIT:-260} \
  bash scripts/device_census_ab.sh "$out"
