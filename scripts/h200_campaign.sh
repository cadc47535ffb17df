#!/usr/bin/env bash
# The H200 campaigns, as they were run: `scripts/h200_campaign.sh PHASE OUT_ROOT [RATES]`.
# Session 1 ran calibrate and sweep (N=200); session 2 ran s2; session 3 ran s3 but for its last
# runs (4/s, the chunked engine at 5/s, the graphs+split-KV capacity runs), which s4 took with the
# capacity with every forward graphed; session 4 ran s4 (four commands: see its comment) and
# started s5, which its time limit cut off before the first row.
# It drives only the CLI (`python -m fusedlib.bench ...`). calibrate and sweep ran on a machine with
# two GPUs, one job per GPU; s2 and s3 on one GPU. A comparison between the engines never crosses GPUs:
# both engines of a pair (same rate, same batch) run one after the other on the same GPU.
# Rows land under OUT_ROOT/gpu<N>/<experiment>/runs.{csv,jsonl} as each run finishes, so
# a phase killed by its time limit keeps what it finished; rerunning resumes.
set -u
phase=$1; root=$2; rates=${3:-}
export PYTHONUNBUFFERED=1
# The device's copy of the tree has no .git: pass the commit in (FUSEDLIB_GIT_COMMIT=$(git
# rev-parse --short HEAD) on the calling machine), or every row says "unknown".
export FUSEDLIB_GIT_COMMIT=${FUSEDLIB_GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
fl() { python3 -m fusedlib.bench "$@" --profile "${PROFILE:-full}"; }
export -f fl
on() { local gpu=$1; shift; ( export CUDA_VISIBLE_DEVICES=$gpu; "$@" ) > "$root/gpu$gpu.$phase.log" 2>&1; }
# Session 2's phases each fit one 10-minute device command: a chain stops at LIMIT seconds
# (its unfinished run is lost, finished ones are kept) and rerunning the phase resumes.
chain() { local gpu=$1; shift; on "$gpu" timeout "${LIMIT:-540}" bash -c "$*"; }
# The peer needs transformers 5.24 (the GPU image has 5.17): carry .whl/ and put it first.
peer_env() {
  if ls .whl/transformers-*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
}
export -f peer_env
mkdir -p "$root"

case "$phase" in
  calibrate)
    # GPU 0: gates on every attention backend, the step traces of both engines on the same
    # GPU, the small-pool capacity probe, then the kernel gate and layout bench.
    on 0 bash -c "
      for a in triton torch triton-splitkv; do fl gate --attention \$a --out $root/gpu0/gates/runs; done
      fl step-trace --engine chunked,fused --out $root/gpu0/step_trace/runs
      fl arrivals --engine fused,chunked --rates 40 --n-requests 400 --pool-gib 0.5 --out $root/gpu0/arrivals/runs
      fl kernel-gate --out $root/gpu0/kernels/kernel_gate
      fl layout-bench --out $root/gpu0/kernels/layout_bench" &
    # GPU 1: capacity probe (every request arrives within seconds), then the closed runs.
    # (GPU 0 ends with the same probe for the 0.5 GiB small-pool control.)
    on 1 bash -c "
      fl arrivals --engine fused,chunked --rates 40 --n-requests 400 --out $root/gpu1/arrivals/runs
      fl closed --engine fused,chunked --workload mixed,p256 --batch-size 8,32 --out $root/gpu1/closed/runs
      fl closed --engine fused,chunked --workload mixed --batch-size 64 --out $root/gpu1/closed/runs" &
    wait ;;
  sweep)
    # RATES: two comma lists separated by '/', one per GPU (e.g. 4,7,10,15/6,9,12,20).
    r0=${rates%/*}; r1=${rates#*/}
    on 0 fl arrivals --engine fused,chunked --rates "$r0" --n-requests "${N:-400}" --out "$root/gpu0/arrivals/runs" &
    on 1 fl arrivals --engine fused,chunked --rates "$r1" --n-requests "${N:-400}" --out "$root/gpu1/arrivals/runs" &
    wait ;;
  s2)
    # Session 2 got one GPU, so one chain, in priority order: what data/ lacked entirely
    # first (peer, sensitivity, small pool), then the CUDA-graph / split-KV step traces
    # (predictions_next.md), then the 400-request sweep. Each command runs the phase again;
    # finished runs are skipped, so it resumes where the last one was cut off.
    chain 0 "
      [ -f $root/gpu_tests.rc ] || { FUSEDLIB_GPU_TESTS=1 timeout 240 python3 -m pytest -q -x tests/test_graphs.py \
          tests/test_engine_gpu.py tests/attention > $root/gpu_tests.log 2>&1; echo \$? > $root/gpu_tests.rc; }
      fl closed --engine fused,chunked --workload mixed --batch-size 64 --out $root/gpu0/closed/runs
      peer_env; fl peer --workload mixed --batch-size 64 --warmups 1 --repeats 3 --out $root/gpu0/peer/runs
      fl sensitivity --engine fused,chunked --seed 0,1,2,3,4 --long-shares none --rates 40 --n-requests 200 --out $root/gpu0/sensitivity/runs
      fl sensitivity --engine fused,chunked --seed 0 --long-shares 0,0.4 --rates 40 --n-requests 200 --out $root/gpu0/sensitivity/runs
      fl arrivals --engine fused,chunked --rates 8,4 --n-requests 200 --pool-gib 0.5 --out $root/gpu0/arrivals/runs
      fl step-trace --engine chunked,fused --out $root/gpu0/step_trace/runs
      fl step-trace --engine chunked,fused --cuda-graphs --out $root/gpu0/beyond/step_trace
      fl step-trace --engine chunked,fused --attention triton-splitkv --cuda-graphs --out $root/gpu0/beyond/step_trace
      fl step-trace --engine chunked,fused --attention triton-splitkv --out $root/gpu0/beyond/step_trace
      fl arrivals --engine fused,chunked --rates 10,6,4,8,5,7 --out $root/gpu0/arrivals/runs
      fl sensitivity --engine fused,chunked --seed 0 --long-shares 0.2 --rates 40 --n-requests 200 --out $root/gpu0/sensitivity/runs
      fl arrivals --engine fused,chunked --rates 40 --attention triton-splitkv --cuda-graphs --out $root/gpu0/beyond/arrivals" ;;
  s3)
    # First the piecewise-graph GPU test and step traces (new code; a minute; predictions_next.md,
    # prediction 9). Then what the second campaign left that issue 6 needs: the 20% share, the
    # peer open loop on the 400 requests at 40/s (carry .whl/), three capacity runs per engine at
    # 40/s (engines alternating), the sweep's other rates (20/s past saturation first), and last
    # the capacity with CUDA graphs and split-KV (prediction 4). The published rows are copied in
    # first, so a run in data/ is skipped, except the first campaign's capacity runs (40/s, 400
    # requests, on a host running another job): those are measured again, and the book's
    # `latest` shows the new ones (the old rows stay in data/).
    for exp in arrivals sensitivity; do
      mkdir -p "$root/gpu0/$exp"
      [ -f "$root/gpu0/$exp/runs.jsonl" ] || python3 -c "
from fusedlib.bench.rows import append_rows, read_rows
rows = [r for r in read_rows('data/$exp/runs')
        if not (r.get('campaign_phase') == 'calibrate' and r.get('rate') == 40.0 and r.get('pool_gib') is None)]
append_rows('$root/gpu0/$exp/runs', rows)"
    done
    chain 0 "
      PYTHONPATH=. python3 scripts/gpu_tests.py $root h200_s3 tests/test_graphs.py
      fl step-trace --engine chunked,fused --attention triton-splitkv --cuda-graphs --graph-chunks --out $root/gpu0/beyond/step_trace
      fl sensitivity --engine fused,chunked --seed 0 --long-shares 0.2 --rates 40 --n-requests 200 --out $root/gpu0/sensitivity/runs
      peer_env; fl peer --rates 40 --n-requests 400 --warmups 2 --out $root/gpu0/peer/arrivals
      fl arrivals --engine fused,chunked --rates 40 --repeats 3 --out $root/gpu0/arrivals/runs
      fl arrivals --engine fused,chunked --rates 20,8,7,6,5,4 --out $root/gpu0/arrivals/runs
      fl arrivals --engine fused,chunked --rates 40 --attention triton-splitkv --cuda-graphs --out $root/gpu0/beyond/arrivals" ;;
  s4)
    # What s3 did not reach: the 400-request sweep at 4/s (both) and 5/s (chunked; fused ran),
    # then capacity with graphs (predictions_next.md 4 and 10), three runs per engine
    # alternating. The published rows are copied in first, so a run in data/ is skipped.
    # Session 4: the first command's decode-graphs line skipped every run as "already in" (the
    # resume key missed graph_chunks; fixed at dd29fda); the second command started without
    # the first's rows (campaign/ is not carried unless named) and measured 4/s, chunked 5/s
    # and one all-graphs run again; both sets are kept in data/ (git_commit tells them apart).
    # The third (LIMIT=225, then s5) ran 5 of the 6 decode-graphs runs; a fourth ran the last.
    for stem in arrivals/runs beyond/arrivals; do
      mkdir -p "$root/gpu0/$(dirname $stem)"
      [ -f "$root/gpu0/$stem.jsonl" ] || cp data/$stem.jsonl data/$stem.csv "$root/gpu0/$(dirname $stem)/"
    done
    chain 0 "
      fl arrivals --engine fused,chunked --rates 5,4 --out $root/gpu0/arrivals/runs
      fl arrivals --engine fused,chunked --rates 40 --repeats 3 --attention triton-splitkv --cuda-graphs --graph-chunks --out $root/gpu0/beyond/arrivals
      fl arrivals --engine fused,chunked --rates 40 --repeats 3 --attention triton-splitkv --cuda-graphs --out $root/gpu0/beyond/arrivals" ;;
  s5)
    # The peer's open loop at a second offered rate (carry .whl/): 2/s, near the 1.69 req/s it
    # served at 40/s, so its served-vs-offered curve has a point that is not deep past saturation.
    mkdir -p "$root/gpu0/peer"
    [ -f "$root/gpu0/peer/arrivals.jsonl" ] || cp data/peer/arrivals.jsonl data/peer/arrivals.csv "$root/gpu0/peer/"
    chain 0 "peer_env; fl peer --rates 2 --n-requests 400 --warmups 2 --out $root/gpu0/peer/arrivals" ;;
  s6)
    # Eager and graphed capacity in one campaign: the book's eager capacity (campaign 3) and
    # graphed capacity (campaign 4) came from machines that ran the same steps at different
    # speeds. Nothing is copied in, so every run is measured again; merged, the book's `latest`
    # shows these. Three runs per engine per configuration, the engines alternating.
    chain 0 "
      fl arrivals --engine fused,chunked --rates 40 --repeats 3 --out $root/gpu0/arrivals/runs
      fl arrivals --engine fused,chunked --rates 40 --repeats 3 --attention triton-splitkv --cuda-graphs --graph-chunks --out $root/gpu0/beyond/arrivals" ;;
  s7)
    # Why the fused engine's mixed step (eager in this configuration) ran slow and ragged with
    # decode graphs and split-KV (the beyond page): the step trace's workload under
    # torch.profiler, kernels, copies and host ops per step, in the three configurations that
    # tell it apart. A few minutes; rows under beyond/step_profile.
    chain 0 "
      fl step-profile --engine fused,chunked --out $root/gpu0/beyond/step_profile
      fl step-profile --engine fused,chunked --attention triton-splitkv --out $root/gpu0/beyond/step_profile
      fl step-profile --engine fused,chunked --attention triton-splitkv --cuda-graphs --out $root/gpu0/beyond/step_profile" ;;
  *) echo "unknown phase $phase"; exit 2 ;;
esac
