#!/usr/bin/env bash
# The GPU acceptance as one device command on a machine with no network and no package index
# (docs/cost-at-scale.md, "The device call"). Run from the repository root, with the carry bundle
# (scripts/gpu_bundle.py) at $BUNDLE and $OUT naming the folder whose files come back:
#
#   bash scripts/gpu_call.sh                      # the GPU machine: every phase at the real shapes
#   PYTHON=.../bin/python bash scripts/gpu_call.sh --tiny    # a CPU rehearsal (tiny shapes)
#
# 1. the image's versions, before anything is installed (image-versions.txt);
# 2. the bundle's wheels into a fresh folder, with no index and no dependency resolution;
# 3. benchmarks/gpu_acceptance.py, every phase, a skipped one counting as a failure, within
#    $DEADLINE seconds (default 520: with the set-up, well inside one 600 s command).
# Writes $OUT/call.log (all of this output), image-versions.txt, acceptance.json, logs/<phase>.log.
set -uo pipefail

PY="${PYTHON:-python3}"
BUNDLE="${BUNDLE:-.gpu-bundle}"
DEADLINE="${DEADLINE:-520}"
if [ -z "${OUT:-}" ]; then
  echo "gpu_call: set OUT to the folder that receives the results" >&2
  exit 2
fi
if ! ls "$BUNDLE"/*.whl >/dev/null 2>&1 || [ ! -f "$BUNDLE/gsm8k/train.jsonl" ]; then
  echo "gpu_call: no carry bundle in $BUNDLE (build it with: python scripts/gpu_bundle.py)" >&2
  exit 2
fi
# the bundle goes into a new folder: SITE may name one that does not exist yet, never an existing one
if [ -n "${SITE:-}" ] && [ -e "$SITE" ]; then
  echo "gpu_call: SITE=$SITE exists; name a folder that does not" >&2
  exit 2
fi
mkdir -p "$OUT/logs"
exec > >(tee -a "$OUT/call.log") 2>&1
started=$(date +%s)

echo "== the image, before the bundle"
"$PY" - <<'EOF' | tee "$OUT/image-versions.txt"
import importlib.metadata as metadata
import platform
import sys

print(f"python {platform.python_version()} ({sys.executable}) on {platform.platform()}")
names = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        names[name.lower().replace("_", "-")] = (name, dist.version)
for key in sorted(names):
    print(f"{names[key][0]}=={names[key][1]}")
print("# what the bundle's wheels lean on (datasets 5.0.0 declares pyarrow>=21.0.0, fsspec<=2026.4.0):")
for key in ("pyarrow", "fsspec", "huggingface-hub", "numpy", "torch", "transformers", "accelerate", "peft"):
    print(f"# {key}: {names.get(key, (key, 'NOT INSTALLED'))[1]}")
EOF
if command -v nvidia-smi >/dev/null; then nvidia-smi | tee "$OUT/nvidia-smi.txt"; fi

echo "== the bundle ($BUNDLE), no index, no dependencies"
SITE="${SITE:-$(mktemp -d /tmp/procrl-gpu-site.XXXXXX)}"
"$PY" -m pip install -q --no-index --no-deps --disable-pip-version-check --target "$SITE" "$BUNDLE"/*.whl || {
  echo "gpu_call: installing the bundle failed" >&2
  exit 3
}
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PROCRL_GSM8K_TRAIN="$PWD/$BUNDLE/gsm8k/train.jsonl"
# built models (the 7B shape is 15 GB) stay out of $OUT, which comes back
export PROCRL_CACHE="${PROCRL_CACHE:-$(mktemp -d /tmp/procrl-cache.XXXXXX)}"
# a new folder for what torch compiles (DeepSpeed's CPU comm op in a CPU rehearsal; nothing on
# CUDA): a compile ended half-way in a shared folder leaves a lock that makes every later run wait
export TORCH_EXTENSIONS_DIR="$(mktemp -d /tmp/procrl-torch-ext.XXXXXX)"
# no network there: a hub look-up would wait for its time-out instead of failing
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=offline
echo "installed in $((  $(date +%s) - started )) s into $SITE"

echo "== every phase (deadline ${DEADLINE} s)"
"$PY" benchmarks/gpu_acceptance.py --require-all --deadline "$DEADLINE" \
  --json "$OUT/acceptance.json" --logs "$OUT/logs" "$@"
code=$?
echo "gpu_call: exit status $code after $(( $(date +%s) - started )) s"
exit $code
