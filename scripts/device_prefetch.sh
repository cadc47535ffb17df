#!/usr/bin/env bash
# One device command for the L2 prefetch (set Z): `scripts/device_prefetch.sh OUT`, with
# FUSEDLIB_GIT_COMMIT naming the commit sent.
#   1. the roofline bench's prefetch_sweep: every plan of PREFETCH_SWEEP as its own decode graph,
#      rotating order (rows in OUT/sweep)
#   2. census configuration CONFIG (default 6) with the sweep's fastest plan ("new") against no
#      prefetch ("base"), alternated, one process each, ROUNDS rounds (default 4), rows in
#      OUT/prefetch_ab/<arm><round> (scripts/merge_census_ab.py OUT prefetch_ab prefetch_ab)
#   3. the GPU tests of the prefetch (OUT/gpu_tests/h200_prefetch_COMMIT.log), while time is left
# With BEST set (a --prefetch argument) the sweep is skipped and BEST is the plan. Stages stop
# starting at LIMIT s (default 540); the A/B's rows land in OUT/prefetch_ab.tgz.
set -u
out=$1; limit=${LIMIT:-540}; rounds=${ROUNDS:-4}; config=${CONFIG:-6}
export PYTHONUNBUFFERED=1
commit=${FUSEDLIB_GIT_COMMIT:?set FUSEDLIB_GIT_COMMIT}
mkdir -p "$out"
left() { [ $((limit - SECONDS)) -gt "$1" ] || { echo "stage skipped: $((limit - SECONDS)) s left" | tee -a "$out/log.txt"; return 1; }; }
echo "kernel $(uname -r); $(nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader)" | tee -a "$out/log.txt"
[ -z "${BEST:-}" ] && left 60 && PYTHONPATH=$PWD timeout 200 python3 scripts/roofline_bench.py "$out/sweep" \
  --sections "${SWEEP:-prefetch_sweep}" 2>&1 | tail -6 | tee -a "$out/log.txt"
# The fastest plan by its median over rounds, as --prefetch's argument (none: no prefetch).
[ -n "${BEST:-}" ] && best=$BEST || best=$(python3 - "$out/sweep/roofline/prefetch_sweep.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
plans = {}
for r in rows:
    plans.setdefault((r["gate_up_mb"], r["down_mb"], r["bulk"], r["in_rotary"]), []).append(r["gpu_ms_median"])
(g, d, bulk, rot), _ = min(plans.items(), key=lambda kv: statistics.median(kv[1]))
print(f"{int(g * 1e6)},{int(d * 1e6)},{int(bulk)},16384,{4 if bulk else 32},{int(rot)}")
PY
) || best=0,0,1,16384,4,0
echo "fastest plan: $best" | tee -a "$out/log.txt"
for round in $(seq 1 "$rounds"); do
  left 60 || break  # a round is both arms or neither
  for arm in base new; do
    plan=$([ $arm = new ] && echo "$best" || echo 0,0,1,16384,4,0)
    PYTHONPATH=$PWD timeout 120 python3 scripts/roofline_bench.py "$out/prefetch_ab/$arm$round" \
      --sections census --configs "$config" --prefetch "$plan" 2>&1 | tail -4 | tee -a "$out/log.txt"
  done
done
mkdir -p "$out/prefetch_ab" && tar czf "$out/prefetch_ab.tgz" -C "$out" prefetch_ab
left 120 && PYTHONPATH=$PWD timeout 200 python3 scripts/gpu_tests.py "$out" "h200_prefetch_$commit" \
  tests/ops/test_ops.py tests/test_graphs.py -k "prefetch or graphs_on_gpu" 2>&1 | tail -3 | tee -a "$out/log.txt"
echo "done in $SECONDS s" | tee -a "$out/log.txt"
