#!/usr/bin/env bash
# One device command for decode attention's launch shape: `scripts/device_attention.sh OUT`, with
# FUSEDLIB_GIT_COMMIT naming the commit sent.
#   1. the roofline bench's attention_flush section: the same-size copy and the balanced decode
#      sweep after each L2 flush (rows in OUT/sweep)
#   2. the GPU tests of the attention kernels (log in OUT/sweep/gpu_tests)
#   3. ncu over the flush_probe section: DRAM bytes each kernel reads and writes after each
#      flush (OUT/ncu_flush.csv)
#   4. the census of the engine's configuration (5) with the default launch shape ("base") and
#      the sweep's best after the reading flush over its three contexts ("new", `--splitkv`),
#      interleaved, ROUNDS rounds (default 3), each run its own process (OUT/ab/<arm><round>)
# Stages stop starting at LIMIT s (default 540); rows land in OUT/rows.tgz.
set -u
out=$1; limit=${LIMIT:-540}; rounds=${ROUNDS:-3}
export PYTHONUNBUFFERED=1
commit=${FUSEDLIB_GIT_COMMIT:?set FUSEDLIB_GIT_COMMIT}
mkdir -p "$out"
left() { [ $((limit - SECONDS)) -gt "$1" ] || { echo "stage skipped: $((limit - SECONDS)) s left" | tee -a "$out/log.txt"; return 1; }; }
left 60 && PYTHONPATH=$PWD timeout 240 python3 scripts/roofline_bench.py "$out/sweep" \
  --sections attention_flush 2>&1 | tail -10 | tee -a "$out/log.txt"
left 60 && PYTHONPATH=$PWD timeout 90 python3 scripts/gpu_tests.py "$out/sweep" "h200_$commit" \
  tests/attention 2>&1 | tail -3 | tee -a "$out/log.txt"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
left 120 && [ -n "$ncu" ] && PYTHONPATH=$PWD timeout 110 "$ncu" --clock-control none --cache-control none \
  --nvtx --nvtx-include "flush_probe/" --csv \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
  python3 scripts/roofline_bench.py /tmp/probe --sections flush_probe > "$out/ncu_flush.csv" 2> "$out/ncu.err"
echo "ncu exit $? ($ncu)" | tee -a "$out/log.txt"
best=$(python3 - "$out/sweep/roofline/attention_flush.jsonl" <<'PY'
import json, sys
from collections import defaultdict
rows = [json.loads(line) for line in open(sys.argv[1])]
rows = [r for r in rows if r.get("what") == "balanced" and r.get("l2_flush") == "read" and "median_ms" in r]
fastest = defaultdict(lambda: float("inf"))
for r in rows:
    fastest[r["context"]] = min(fastest[r["context"]], r["median_ms"])
keys = ("block_n", "programs_per_sm", "num_warps", "num_stages")
score = defaultdict(float)
for r in rows:  # each shape's time over the fastest's, summed over the contexts
    score[tuple(r[k] for k in keys)] += r["median_ms"] / fastest[r["context"]]
print(",".join(str(x) for x in min(score, key=score.get)))
PY
)
echo "best shape: $best" | tee -a "$out/log.txt"
census() {  # census ARM ROUND [--splitkv SHAPE]
  arm=$1; round=$2; shift 2
  PYTHONPATH=$PWD timeout 100 python3 scripts/roofline_bench.py "$out/ab/$arm$round" --sections census \
    --configs 5 "$@" 2>&1 | tail -4 | tee -a "$out/log.txt"
}
for round in $(seq 1 "$rounds"); do
  [ -n "$best" ] || break
  left 50 || break  # a round is both arms or neither
  census base "$round"
  census new "$round" --splitkv "$best"
done
tar czf "$out/rows.tgz" -C "$out" sweep $( [ -d "$out/ab" ] && echo ab ) 2>/dev/null
echo "done in $SECONDS s" | tee -a "$out/log.txt"
