#!/bin/sh
# Pulls the configured models into the Ollama server's volume through its API (OLLAMA_HOST), once the
# server answers; polls every 2 s, fails with one clear line after WAIT_TIMEOUT_SECONDS.
set -eu
timeout="${WAIT_TIMEOUT_SECONDS:-600}"
deadline=$(( $(date +%s) + timeout ))
until ollama list >/dev/null 2>&1; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "pull-models: Ollama at $OLLAMA_HOST not answering after ${timeout}s" >&2
    exit 1
  fi
  sleep 2
done
for model in $OLLAMA_PULL_MODELS; do
  echo "pull-models: pulling $model"
  ollama pull "$model"
done
ollama list
