#!/usr/bin/env bash
# One device command that measures the engine again for the book's scorecard (book/intro.md):
# `scripts/device_scorecard.sh OUT` with FUSEDLIB_GIT_COMMIT naming this tree's commit.
#   1. the roofline bench's census of configuration 6 (the engine's default on a GPU), each round
#      its own process, the first also timing decode attention at the engine's launch shape beside
#      a copy (attention_engine): OUT/census/<round>/roofline/{census,census_kernels,attention_engine}.jsonl
#   2. the loop section (the serving loop, host one step ahead) as scripts/device_loop.sh runs it,
#      configurations 5,6 and 6,5 alternating, each round its own process: OUT/loop/<round>/roofline/loop.jsonl
# The rows come back packed in OUT/rows.tgz (the device returns no file that deep in OUT); merge with
# `mkdir -p out && tar xzf OUT/rows.tgz -C out && python scripts/merge_scorecard_rows.py out`.
# ROUNDS (default 4) is the loop's rounds, CENSUS_ROUNDS (default 3) the census's. Rounds stop
# starting at LIMIT s (default 540).
set -u
out=$1; limit=${LIMIT:-540}; rounds=${ROUNDS:-4}; census_rounds=${CENSUS_ROUNDS:-3}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
: "${FUSEDLIB_GIT_COMMIT:?set FUSEDLIB_GIT_COMMIT}"
mkdir -p "$out"
left() { [ $((limit - SECONDS)) -gt "$1" ] || { echo "round skipped: $((limit - SECONDS)) s left" | tee -a "$out/log.txt"; return 1; }; }
for round in $(seq 1 "$census_rounds"); do
  [ -d "$out/census/$round" ] && continue
  left 120 || break
  sections=census
  [ "$round" = 1 ] && sections=census,attention_engine
  timeout 240 python3 scripts/roofline_bench.py "$out/census/$round.part" --sections "$sections" --configs 6 2>&1 \
    | tail -12 | tee -a "$out/log.txt"
  mv "$out/census/$round.part" "$out/census/$round"
done
# the loop's rounds as scripts/device_loop.sh runs them, in the time left
LIMIT=$((limit - SECONDS)) STAGES=loop ROUNDS=$rounds scripts/device_loop.sh "$out"
mkdir -p "$out/census" "$out/loop"
tar czf "$out/rows.tgz" -C "$out" census loop && rm -rf "$out/census" "$out/loop"
echo "done in $SECONDS s" | tee -a "$out/log.txt"
