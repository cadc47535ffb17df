#!/usr/bin/env bash
# One device command for a change to the engine against the code before it, on the peer's closed
# pass (128 mixed prompts x 128 new tokens, the engine part 10 ends on): `scripts/device_closed_ab.sh
# OUT` with the code before the change unpacked in .base/ (`git archive BASE fusedlib scripts | tar
# -x -C .base`, carried) and FUSEDLIB_GIT_COMMIT / BASE_COMMIT naming the two commits. ROUNDS rounds
# (default 3) of base then new, each its own process (one warm-up pass and 3 measured passes), rows
# in OUT/closed_ab/<arm><round>/roofline/closed; rounds stop starting at LIMIT s (default 540), and
# everything lands in OUT/rowsclosed_ab.tgz; COMPARISON names the change in every row. Merge with
# `python scripts/merge_census_ab.py out closed_ab closed_ab` (set AS's rows: COMPARISON="128 x 128:
# packed kernel in runs, new vs base", the new tree at 34e4dba).
set -u
out=$1; limit=${LIMIT:-540}; rounds=${ROUNDS:-3}; comparison=${COMPARISON:-128 x 128: new vs base}
export PYTHONUNBUFFERED=1
new_commit=${FUSEDLIB_GIT_COMMIT:?set FUSEDLIB_GIT_COMMIT}; base_commit=${BASE_COMMIT:?set BASE_COMMIT}
mkdir -p "$out/closed_ab"
closed() {  # closed ARM TREE COMMIT ROUND
  (cd "$2" && FUSEDLIB_GIT_COMMIT=$3 PYTHONPATH=$PWD timeout 150 python3 -m fusedlib.bench closed --profile full \
     --engine fused --workload mixed_fixed --batch-size 128 --attention triton-parallel --cuda-graphs \
     --whole-graphs --fused-ops --gate-up-silu --overlap --warmups 1 --repeats 3 \
     --comparison "$comparison" --out "$out/closed_ab/$1$4/roofline/closed") \
    2>&1 | tail -3 | tee -a "$out/log.txt"
}
for round in $(seq 1 "$rounds"); do
  [ $((limit - SECONDS)) -gt 130 ] || { echo "round $round not started: $((limit - SECONDS)) s left" | tee -a "$out/log.txt"; break; }
  closed base .base "$base_commit" "$round"
  closed new . "$new_commit" "$round"
done
tar czf "$out/rowsclosed_ab.tgz" -C "$out" closed_ab
echo "done in $SECONDS s" | tee -a "$out/log.txt"
