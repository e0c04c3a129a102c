#!/usr/bin/env bash
# On a lent GPU machine (the device tool, carry [".device"]): install the wheels the image lacks, then run
# judge_train/gpu_run.py. Example, one call:  bash judge_train/gpu_run.sh --out $OUT --combine support-stage:relevance-stage
set -euo pipefail
payload=.device
for ((i = 1; i <= $#; i++)); do [ "${!i}" = --payload ] && { j=$((i + 1)); payload=${!j}; }; done
site=${GPU_SITE:-/tmp/ragdoctor-site}
if compgen -G "$payload/wheels/*.whl" >/dev/null; then
  ${PYTHON:-python3} -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
    "$payload"/wheels/*.whl
fi
export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec ${PYTHON:-python3} -m judge_train.gpu_run "$@"
