#!/usr/bin/env bash
# One device command for what bounds the attention kernels: `scripts/device_probe.sh OUT`, with
# FUSEDLIB_GIT_COMMIT naming the commit sent.
#   1. the roofline bench's kernel_probe section: our two attention kernels and torch's SDPA
#      backends on the same problems, graph replays (rows in OUT/probe)
#   2. Nsight Compute over the section's eager calls (NVTX range kernel_probe): speed of light,
#      occupancy, launch statistics and warp stall reasons per kernel, L2 flushed before each
#      pass (OUT/kernel_probe_ncu.csv; ncu reads counters on Firecracker machines, not gVisor)
#   3. the GPU tests (OUT/gpu_tests/h200_COMMIT.log), while time is left
# Stages stop starting at LIMIT s (default 560).
set -u
out=$1; limit=${LIMIT:-560}
export PYTHONUNBUFFERED=1
commit=${FUSEDLIB_GIT_COMMIT:?set FUSEDLIB_GIT_COMMIT}
mkdir -p "$out"
left() { [ $((limit - SECONDS)) -gt "$1" ] || { echo "stage skipped: $((limit - SECONDS)) s left" | tee -a "$out/log.txt"; return 1; }; }
echo "kernel $(uname -r); $(nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader)" | tee -a "$out/log.txt"
left 60 && PYTHONPATH=$PWD timeout 150 python3 scripts/roofline_bench.py "$out/probe" \
  --sections kernel_probe 2>&1 | tail -8 | tee -a "$out/log.txt"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if left 200 && [ -n "$ncu" ]; then
  PYTHONPATH=$PWD timeout 240 "$ncu" --clock-control none --nvtx --nvtx-include "kernel_probe/" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --page raw --csv --log-file "$out/kernel_probe_ncu.csv" \
    python3 scripts/roofline_bench.py /tmp/probe --sections kernel_probe > "$out/ncu.out" 2> "$out/ncu.err"
  echo "ncu exit $? ($ncu), $(wc -l < "$out/kernel_probe_ncu.csv") lines" | tee -a "$out/log.txt"
  tail -3 "$out/ncu.err" | tee -a "$out/log.txt"
fi
left 240 && PYTHONPATH=$PWD timeout 300 python3 scripts/gpu_tests.py "$out" "h200_$commit" \
  tests/ops tests/attention tests/test_graphs.py tests/test_engine_gpu.py 2>&1 | tail -3 | tee -a "$out/log.txt"
echo "done in $SECONDS s" | tee -a "$out/log.txt"
