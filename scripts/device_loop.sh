#!/usr/bin/env bash
# One device command for the serving loop's steps and the second stream's campaign:
# `scripts/device_loop.sh OUT` with FUSEDLIB_GIT_COMMIT naming this tree's commit.
#   1. the GPU test that no kernel compiles after construction in part 10's engine
#      (triton-parallel, whole graphs, overlap), log in OUT/gpu_tests/
#   2. the roofline bench's loop section, configurations 5,6 and 6,5 alternating, each round its
#      own process, rows in OUT/loop/<round> (rounds already there are skipped)
#   3. the campaign's `parallel` phase (gate, then pairs at 80/s), rows in OUT/camp (a phase cut
#      off by the limit resumes when OUT/camp comes back along)
# Merge with `python scripts/merge_loop_rows.py OUT` and `python scripts/merge_paired_rows.py OUT/camp`.
# STAGES picks which run (default gpu_tests,loop,parallel), ROUNDS the loop's rounds (default 2).
# Stages stop starting at LIMIT s (default 540).
set -u
out=$1; limit=${LIMIT:-540}; rounds=${ROUNDS:-2}; stages=,${STAGES:-gpu_tests,loop,parallel},
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
: "${FUSEDLIB_GIT_COMMIT:?set FUSEDLIB_GIT_COMMIT}"
mkdir -p "$out"
left() { [ $((limit - SECONDS)) -gt "$1" ] || { echo "stage skipped: $((limit - SECONDS)) s left" | tee -a "$out/log.txt"; return 1; }; }
on() { [[ $stages == *,$1,* ]]; }
on gpu_tests && left 120 && timeout 150 python3 scripts/gpu_tests.py "$out" "h200_$FUSEDLIB_GIT_COMMIT" \
  tests/test_engine_gpu.py -k "no_kernel_compiles and triton-parallel" 2>&1 | tail -4 | tee -a "$out/log.txt"
for round in $(seq 1 "$rounds"); do
  on loop || break
  [ -d "$out/loop/$round" ] && continue
  left 150 || break
  if [ $((round % 2)) = 1 ]; then configs=5,6; else configs=6,5; fi
  timeout 240 python3 scripts/roofline_bench.py "$out/loop/$round.part" --sections loop --configs "$configs" 2>&1 \
    | tail -6 | tee -a "$out/log.txt"
  mv "$out/loop/$round.part" "$out/loop/$round"
done
on parallel && left 60 && timeout $((limit - SECONDS)) python3 -m fusedlib.bench.campaign "$out/camp" \
  --phase parallel --limit $((limit - SECONDS - 20)) 2>&1 | tail -12 | tee -a "$out/log.txt"
echo "done in $SECONDS s" | tee -a "$out/log.txt"
