#!/usr/bin/env bash
# One device command of the paired campaign: `scripts/device_campaign.sh OUT PHASE...` runs the
# phases in order (python -m fusedlib.bench.campaign) with rows under .camp/paired, and leaves
# OUT/camp.tgz (the rows) and OUT/campaign.log. Carry .camp/ (seeded from data/paired, and from
# the last command's camp.tgz) so each command resumes where the last stopped; carry .whl/ to
# run the peer on transformers 5.24 (the version the tests pin; the GPU image has 5.17).
# A command may run 10 minutes: phases stop starting runs at LIMIT s (default 540) and a run
# still going at HARD s (default 575) is killed, so the rows always come back. PAIRS (default 5)
# is each comparison's pairs: more extend the same ABBA order, and the stored runs are kept.
# Set FUSEDLIB_GIT_COMMIT to the commit sent: the device's copy of .git can be older than its tree.
set -u
out=$1; shift
limit=${LIMIT:-540}; hard=${HARD:-575}; pairs=${PAIRS:-5}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
mkdir -p .camp/paired "$out"
for phase in "$@"; do
  left=$((limit - SECONDS))
  if [ "$left" -lt 45 ]; then echo "campaign $phase: not started, $left s left" | tee -a "$out/campaign.log"; continue; fi
  timeout $((hard - SECONDS)) python3 -m fusedlib.bench.campaign .camp --phase "$phase" --limit "$left" --pairs "$pairs" 2>&1 \
    | tee -a "$out/campaign.log"
done
tar czf "$out/camp.tgz" .camp/paired
