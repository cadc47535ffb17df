#!/usr/bin/env bash
# One device command for a change to the decode step's kernels: `scripts/device_census_ab.sh OUT`
# with the code before the change unpacked in .base/ (`git archive BASE fusedlib scripts | tar -x
# -C .base`, carried) and FUSEDLIB_GIT_COMMIT / BASE_COMMIT naming the two commits.
#   1. the roofline bench's SECTIONS on this tree (default ops_check,step_check; census runs
#      configurations 4 and 5, the whole-graphed ones), rows in OUT/new
#   2. the GPU tests (ops, attention, graphs, engine), log in OUT/new/gpu_tests
#   3. the gates phase of the campaign (every configuration the book reports), rows in OUT/camp
#   4. the census of the same two configurations, base and new interleaved (ABAB...), ROUNDS
#      rounds (default 3), each run in its own process, rows in OUT/AB_DIR/<arm><round> (default
#      ab); the trees are BASE_TREE (default .base) and NEW_TREE (default this one), the census
#      configurations BASE_CONFIGS and NEW_CONFIGS (default 4,5 both: with BASE_TREE=. an A/B of
#      two configurations on one tree)
#   5. with FLAG_AB set (a census flag, e.g. --no-pdl): the census on this tree with the flag
#      ("base") and without it ("new"), interleaved, ROUNDS rounds, rows in OUT/flag_ab/<arm><round>
# STAGES picks which run (default sections,gpu_tests,gates,ab); SECTIONS_S bounds stage 1 (default
# 200 s). Stages stop starting at LIMIT s
# (default 540); everything lands in OUT/rowsAB_DIR.tgz.
set -u
out=$1; limit=${LIMIT:-540}; rounds=${ROUNDS:-3}; sections=${SECTIONS:-ops_check,step_check}; sections_s=${SECTIONS_S:-200}
stages=,${STAGES:-sections,gpu_tests,gates,ab},; flag_ab=${FLAG_AB:-}
ab_dir=${AB_DIR:-ab}; base_tree=${BASE_TREE:-.base}; new_tree=${NEW_TREE:-.}
base_configs=${BASE_CONFIGS:-4,5}; new_configs=${NEW_CONFIGS:-4,5}
export PYTHONUNBUFFERED=1
new_commit=${FUSEDLIB_GIT_COMMIT:?set FUSEDLIB_GIT_COMMIT}; base_commit=${BASE_COMMIT:?set BASE_COMMIT}
mkdir -p "$out"
left() { [ $((limit - SECONDS)) -gt "$1" ] || { echo "stage skipped: $((limit - SECONDS)) s left" | tee -a "$out/log.txt"; return 1; }; }
on() { [[ $stages == *,$1,* ]]; }
census() {  # census FOLDER ARM TREE COMMIT ROUND CONFIGS [FLAG]
  (cd "$3" && FUSEDLIB_GIT_COMMIT=$4 PYTHONPATH=$PWD timeout 120 python3 scripts/roofline_bench.py \
     "$out/$1/$2$5" --sections census --configs "$6" ${7:-}) 2>&1 | tail -8 | tee -a "$out/log.txt"
}
on sections && left 60 && PYTHONPATH=$PWD timeout "$sections_s" python3 scripts/roofline_bench.py "$out/new" \
  --sections "$sections" --configs 4,5 2>&1 | tail -25 | tee -a "$out/log.txt"
on gpu_tests && left 200 && PYTHONPATH=$PWD timeout 300 python3 scripts/gpu_tests.py "$out/new" "h200_$new_commit" \
  tests/ops tests/attention tests/test_graphs.py tests/test_engine_gpu.py 2>&1 | tail -4 | tee -a "$out/log.txt"
on gates && left 60 && PYTHONPATH=$PWD timeout 240 python3 -m fusedlib.bench.campaign /tmp/camp \
  --phase gates --limit 230 --pairs 1 2>&1 | tail -12 | tee -a "$out/log.txt"
for round in $(seq 1 "$rounds"); do
  on ab && left 50 || break  # a round is both arms or neither
  census "$ab_dir" base "$base_tree" "$base_commit" "$round" "$base_configs"
  census "$ab_dir" new "$new_tree" "$new_commit" "$round" "$new_configs"
done
for round in $(seq 1 "$rounds"); do
  [ -n "$flag_ab" ] && left 50 || break
  census flag_ab base . "$new_commit" "$round" "$new_configs" "$flag_ab"
  census flag_ab new . "$new_commit" "$round" "$new_configs"
done
mkdir -p /tmp/camp/paired "$out/new" "$out/$ab_dir" "$out/flag_ab"
tar czf "$out/rows$ab_dir.tgz" -C "$out" new "$ab_dir" flag_ab -C /tmp/camp paired 2>/dev/null
echo "done in $SECONDS s" | tee -a "$out/log.txt"
