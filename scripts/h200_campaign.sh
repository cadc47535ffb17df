#!/usr/bin/env bash
# The H200 campaigns, as they were run: `scripts/h200_campaign.sh PHASE OUT_ROOT [RATES]`.
# Session 1 ran calibrate, sweep (N=200) and part of extras; session 2 ran s2a, s2b, s2c.
# It drives only the CLI (`python -m fusedlib ...`), on a machine with two GPUs: each phase
# starts one job per GPU and waits. A comparison between the engines never crosses GPUs:
# both engines of a pair (same rate, same batch) run one after the other on the same GPU.
# Rows land under OUT_ROOT/gpu<N>/<experiment>/runs.{csv,jsonl} as each run finishes, so
# a phase killed by its time limit keeps what it finished; rerunning resumes.
set -u
phase=$1; root=$2; rates=${3:-}
export PYTHONUNBUFFERED=1
# The device's copy of the tree has no .git: pass the commit in (FUSEDLIB_GIT_COMMIT=$(git
# rev-parse --short HEAD) on the calling machine), or every row says "unknown".
export FUSEDLIB_GIT_COMMIT=${FUSEDLIB_GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
fl() { python3 -m fusedlib "$@" --profile "${PROFILE:-full}"; }
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
  s2a)
    # GPU 0: the GPU-only tests (refactored kernels, CUDA graphs), the step traces (baseline,
    # then graphs / split-KV / both: the predictions_next.md runs), the sweep's rate 8.
    # GPU 1: the 400-request sweep's two lowest rates.
    chain 0 "
      FUSEDLIB_GPU_TESTS=1 timeout 240 python3 -m pytest -q -x tests/test_graphs.py tests/test_engine_gpu.py tests/attention
      fl step-trace --engine chunked,fused --out $root/gpu0/step_trace/runs
      fl step-trace --engine chunked,fused --cuda-graphs --out $root/gpu0/beyond/step_trace
      fl step-trace --engine chunked,fused --attention triton-splitkv --out $root/gpu0/beyond/step_trace
      fl step-trace --engine chunked,fused --attention triton-splitkv --cuda-graphs --out $root/gpu0/beyond/step_trace
      fl arrivals --engine fused,chunked --rates 8 --out $root/gpu0/arrivals/runs" &
    chain 1 "fl arrivals --engine fused,chunked --rates 3,4 --out $root/gpu1/arrivals/runs" &
    wait ;;
  s2b)
    # The sweep's middle rates; the 0.5 GiB small pool at 4 and 8/s (200 requests: the rate-8
    # run is past any capacity the small pool can have, so it measures that capacity); the
    # capacity with CUDA graphs and split-KV (predictions_next.md, prediction 4).
    chain 0 "fl arrivals --engine fused,chunked --rates 5,6,7 --out $root/gpu0/arrivals/runs" &
    chain 1 "
      fl arrivals --engine fused,chunked --rates 10 --out $root/gpu1/arrivals/runs
      fl arrivals --engine fused,chunked --rates 4,8 --n-requests 200 --pool-gib 0.5 --out $root/gpu1/arrivals/runs
      fl arrivals --engine fused,chunked --rates 40 --attention triton-splitkv --cuda-graphs --out $root/gpu1/beyond/arrivals" &
    wait ;;
  s2c)
    # Sensitivity at rate 40, 200 requests a draw; then, on GPU 1, the closed mixed-64 runs of
    # both engines and the peer on the same 64 requests, one after the other.
    chain 0 "
      fl sensitivity --engine fused,chunked --seed 0,1,2,3,4 --long-shares none --rates 40 --n-requests 200 --out $root/gpu0/sensitivity/runs
      fl sensitivity --engine fused,chunked --seed 0 --long-shares 0.2 --rates 40 --n-requests 200 --out $root/gpu0/sensitivity/runs" &
    chain 1 "
      fl sensitivity --engine fused,chunked --seed 0 --long-shares 0,0.4 --rates 40 --n-requests 200 --out $root/gpu1/sensitivity/runs
      fl closed --engine fused,chunked --workload mixed --batch-size 64 --out $root/gpu1/closed/runs
      peer_env; fl peer --workload mixed --batch-size 64 --warmups 1 --repeats 3 --out $root/gpu1/peer/runs" &
    wait ;;
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
  alone)
    # Step traces and closed runs with nothing else on the machine: the first campaign ran
    # them beside another job and saw run-to-run spread and a stretch of slow chunked steps
    # it could not explain (writeup, Caveats). Costs the second GPU's time; worth it once.
    on 0 bash -c "
      fl step-trace --engine chunked,fused --out $root/gpu0/step_trace/runs
      fl closed --engine fused,chunked --workload mixed,p256 --batch-size 8,32,64 --out $root/gpu0/closed/runs" ;;
  sweep)
    # RATES: two comma lists separated by '/', one per GPU (e.g. 4,7,10,15/6,9,12,20).
    r0=${rates%/*}; r1=${rates#*/}
    on 0 fl arrivals --engine fused,chunked --rates "$r0" --n-requests "${N:-400}" --out "$root/gpu0/arrivals/runs" &
    on 1 fl arrivals --engine fused,chunked --rates "$r1" --n-requests "${N:-400}" --out "$root/gpu1/arrivals/runs" &
    wait ;;
  extras)
    # RATES: 'smallpool_rate_a,smallpool_rate_b/sensitivity_rate'.
    r0=${rates%/*}; r1=${rates#*/}
    # The peer drives transformers' continuous-batching manager as of 5.24; the GPU image
    # has 5.17, so carry the wheel in .whl/ (see the device notes) and put it first.
    if ls .whl/transformers-*.whl >/dev/null 2>&1; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    fi
    on 0 bash -c "
      fl arrivals --engine fused,chunked --rates $r0 --n-requests 400 --pool-gib 0.5 --out $root/gpu0/arrivals/runs
      fl peer --workload mixed --batch-size 64 --out $root/gpu0/peer/runs" &
    on 1 bash -c "
      fl sensitivity --engine fused,chunked --seed 0,1,2,3,4 --long-shares none --rates $r1 \
        --n-requests 200 --out $root/gpu1/sensitivity/runs
      fl sensitivity --engine fused,chunked --seed 0 --long-shares 0,0.2,0.4 --rates $r1 \
        --n-requests 200 --out $root/gpu1/sensitivity/runs" &
    wait ;;
  *) echo "unknown phase $phase"; exit 2 ;;
esac
