#!/usr/bin/env bash
# bench/gpu_check.sh: the CUDA half of ai3 on a machine with an NVIDIA GPU.
#
#   bench/gpu_check.sh                 # build, GPU tests, benchmark
#   bench/gpu_check.sh --models=vgg16  # extra flags go to //bench:gpu_bench
#
# 1. builds the core with --config=cuda (nvcc; cuDNN/cuBLAS from the venv);
# 2. runs the GPU tests (//tests/gpu: every CUDA algorithm vs PyTorch over a
#    parameter grid; swap_conv2d / swap_backend on resnet18, vgg16,
#    mobilenet_v2), unsandboxed so they see the GPU;
# 3. runs the seed paper's benchmark (//bench:gpu_bench).
# Each step has a time limit; the whole run is meant to take well under ten
# minutes on one GPU (most of it the first --config=cuda build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n=== gpu_check: %s ===\n' "$*"; }
# .bazelrc keeps CI at 2 jobs; a GPU machine has more cores.
jobs="--jobs=$(nproc)"

step "GPU"
if ! nvidia-smi -L; then
  echo "gpu_check: no NVIDIA GPU here (nvidia-smi failed); nothing to check" >&2
  exit 2
fi

step "build --config=cuda"
timeout 420 ./bazelw build --config=cuda "$jobs" //frontends/ai3:_core.so //tests/gpu:all //bench:gpu_bench

step "GPU tests"
# local: the tests need /dev/nvidia*; they must not skip here.
timeout 240 ./bazelw test --config=cuda "$jobs" --spawn_strategy=local --test_output=errors \
  --test_env=CUDA_VISIBLE_DEVICES --test_env=AI3_REQUIRE_GPU=1 //tests/gpu:all

step "benchmark"
timeout 300 ./bazelw run --config=cuda "$jobs" //bench:gpu_bench -- --repeats=3 --budget_s=240 "$@"
