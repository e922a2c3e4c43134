#!/usr/bin/env bash
# `make up`: the whole stack on this machine, no cluster needed.
#   1. the private PostgreSQL with our pgvector build (scripts/db.sh), migrations applied;
#   2. .venv-owui (the real open-webui 0.12.4) and a patched copy of its package (patches/open-webui/apply);
#   3. embeddings: a real Ollama at $OLLAMA_HOST when one answers (bge-m3, 1024 dims, database `ragfr`),
#      else the Ollama-API TEST DOUBLE with the offline e5 model (384 dims, database `ragfr_e5`);
#   4. Open WebUI on http://127.0.0.1:${OWUI_PORT:-8080} with charts/ragfr/files/openwebui-env.yaml.
#      Its interface is in French (DEFAULT_LOCALE=fr-FR there); `DEFAULT_LOCALE=en-US make up` for another.
# No cross-encoder, as the chart's default. UP_RERANKER=<model folder> (e.g. .state/reranker/model-<hash>, what
# `make reranker` trained) runs that French cross-encoder as the chart's openwebui.reranker.source=image does:
# its Hugging Face cache in .state/owui/hf-cache, RAG_RERANKING_MODEL=ragfr/reranker-fr, proven to load offline
# (the chart's reranker-cache.py) before Open WebUI starts.
# Processes run in the background; their pids and logs are in .state/owui/. `make down` stops them.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
VENV="${VENV:-$ROOT/.venv}"
OWUI_VENV="${OWUI_VENV:-$ROOT/.venv-owui}"
STATE="$ROOT/.state/owui"
PORT="${OWUI_PORT:-8080}"
OLLAMA="${OLLAMA_HOST:-http://127.0.0.1:11434}"
[[ "$OLLAMA" == http* ]] || OLLAMA="http://$OLLAMA"
ENV_FILE="$ROOT/charts/ragfr/files/openwebui-env.yaml"
mkdir -p "$STATE"
step() { echo "up: [$1/5] $2" >&2; }
running() { [[ -f "$STATE/$1.pid" ]] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

if running open-webui; then
  echo "up: Open WebUI already running (pid $(cat "$STATE/open-webui.pid")) on http://127.0.0.1:$PORT; make down first" >&2
  exit 0
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  echo "up: port $PORT is taken by another program; set OWUI_PORT=..." >&2
  exit 1
fi

step 1 "Open WebUI venv (first time: about 2 minutes, 3 GB)"
bash "$ROOT/scripts/setup-owui.sh" >&2
SITE="$("$OWUI_VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"

step 2 "patched copy of open_webui"
key="$(cat "$ROOT/patches/open-webui/manifest.json" "$ROOT"/patches/open-webui/bodies/* | sha256sum | cut -c1-16)"
if [[ ! -f "$STATE/patched/.stamp-$key" ]]; then
  rm -rf "$STATE/patched"; mkdir -p "$STATE/patched"
  # The frontend build (241 MB) is read from the venv via FRONTEND_BUILD_DIR; only Python files are copied.
  (cd "$SITE" && tar --exclude=open_webui/frontend --exclude=__pycache__ -cf - open_webui open_webui-*.dist-info) \
    | tar -C "$STATE/patched" -xf -
  "$VENV/bin/python" "$ROOT/patches/open-webui/apply" --target "$STATE/patched" >&2
  touch "$STATE/patched/.stamp-$key"
fi
"$VENV/bin/ragfr" owui check --open-webui-dir "$STATE/patched" >&2

step 3 "embeddings"
if [[ "$(curl -s -m 3 -D - -o /dev/null "$OLLAMA/api/version" | tr -d '\r')" == *"200"* ]] \
    && ! curl -s -m 3 -D - -o /dev/null "$OLLAMA/api/version" | grep -qi '^X-Ragfr-Test-Double'; then
  OLLAMA_URL="$OLLAMA"; DB=ragfr; DIMS=1024; SPACE="ollama:bge-m3"; EMBED_MODEL="bge-m3"; PREFIXES=()
  CHAT_MODELS=()  # values.yaml's ollama.models.chat and extra
  BANNER="EMBEDDINGS: the real Ollama at $OLLAMA (bge-m3). Pull it first: ollama pull bge-m3"
else
  dport="$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  rm -f "$STATE/double.port"
  nohup "$VENV/bin/python" -m ragfr_tools.devserver --port "$dport" --port-file "$STATE/double.port" \
    >"$STATE/double.log" 2>&1 &
  echo $! >"$STATE/double.pid"
  for _ in $(seq 120); do [[ -s "$STATE/double.port" ]] && break; sleep 0.5; done
  [[ -s "$STATE/double.port" ]] || { tail -20 "$STATE/double.log" >&2; echo "up: the test double did not start" >&2; exit 1; }
  OLLAMA_URL="http://127.0.0.1:$dport"; DB=ragfr_e5; DIMS=384; SPACE="local:multilingual-e5-small"
  EMBED_MODEL="multilingual-e5-small-test-double"
  CHAT_MODELS=(--chat-model ragfr-extractive-test-double)
  PREFIXES=(RAG_EMBEDDING_QUERY_PREFIX="query: " RAG_EMBEDDING_CONTENT_PREFIX="passage: ")
  BANNER="EMBEDDINGS: NO Ollama answered at $OLLAMA -> the ragfr TEST DOUBLE on $OLLAMA_URL
   (offline multilingual-e5-small, 384 dims; chat model 'ragfr-extractive-test-double' is NOT a language
   model: it quotes the best context sentence). Start a real Ollama and run make down && make up for real answers."
fi

step 4 "PostgreSQL (database $DB, embedding space $SPACE, $DIMS dims)"
DSN="$(RAGFR_DB="$DB" bash "$ROOT/scripts/db.sh" --dims "$DIMS" --embedding-model "$SPACE" | tail -1)"
DSN="${DSN#DATABASE_URL=}"
# Open WebUI names the model of the vectors it writes (libpq options in its URL, as the chart does):
# migration 0009 refuses a vector of another model than the database's embedding space.

step 5 "Open WebUI on http://127.0.0.1:$PORT (about 30 s)"
[[ -s "$STATE/secret" ]] || (umask 077; "$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(48))' >"$STATE/secret")
mkdir -p "$STATE/data/static"
# The env file is the one documented place for Open WebUI's settings; this machine overrides only the
# computed values (database, embeddings endpoint and width) and, with UP_RERANKER, the cross-encoder.
RERANKER=()
if [[ -n "${UP_RERANKER:-}" ]]; then
  rm -rf "$STATE/hf-cache"
  PYTHONPATH="$ROOT/tools" "$VENV/bin/python" -m ragfr_tools.reranker.package --model "$UP_RERANKER" \
    --out "$STATE/hf-cache" >/dev/null
  RERANKER=(RAG_RERANKING_MODEL=ragfr/reranker-fr SENTENCE_TRANSFORMERS_HOME="$STATE/hf-cache" HF_HOME="$STATE/hf-cache")
  env "${RERANKER[@]}" RERANKER_SOURCE=image "$OWUI_VENV/bin/python" "$ROOT/charts/ragfr/files/reranker-cache.py" >&2
fi
# The settings file, then what the chart computes from values.yaml's defaults: the analysts' rights
# (openwebui.analysts) and the chat models Open WebUI lists (never the embedding model).
mapfile -t SETTINGS < <(PYTHONPATH="$ROOT/tools" "$VENV/bin/python" -m ragfr_tools.owui_settings \
  --embedding-model "$EMBED_MODEL" "${CHAT_MODELS[@]}")
(( ${#SETTINGS[@]} )) || { echo "up: no Open WebUI settings from $ENV_FILE" >&2; exit 1; }
# The interface language is the file's (fr-FR) unless the caller names another: `DEFAULT_LOCALE=en-US make up`
# (env keeps the last assignment of a name).
[[ -n "${DEFAULT_LOCALE:-}" ]] && SETTINGS+=("DEFAULT_LOCALE=$DEFAULT_LOCALE")
(
  cd "$STATE"
  exec env "${SETTINGS[@]}" "${PREFIXES[@]}" \
    PYTHONPATH="$STATE/patched:$ROOT/src:$OWUI_VENV/ragfr-site" \
    FROM_INIT_PY=true DATA_DIR="$STATE/data" STATIC_DIR="$STATE/data/static" FRONTEND_BUILD_DIR="$SITE/open_webui/frontend" \
    WEBUI_SECRET_KEY="$(cat "$STATE/secret")" \
    PGVECTOR_DB_URL="$DSN?options=-c%20ragfr.writer_model%3D${SPACE//:/%3A}" PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH="$DIMS" \
    OLLAMA_BASE_URL="$OLLAMA_URL" RAG_OLLAMA_BASE_URL="$OLLAMA_URL" RAG_EMBEDDING_MODEL="$EMBED_MODEL" \
    "${RERANKER[@]}" HF_HUB_OFFLINE=1 \
    nohup "$OWUI_VENV/bin/python" -m uvicorn open_webui.main:app --host 127.0.0.1 --port "$PORT" \
    >"$STATE/open-webui.log" 2>&1
) &
echo $! >"$STATE/open-webui.pid"
for i in $(seq 240); do
  if curl -sf -m 2 "http://127.0.0.1:$PORT/health" >/dev/null; then break; fi
  running open-webui || { tail -30 "$STATE/open-webui.log" >&2; echo "up: Open WebUI exited (log: $STATE/open-webui.log)" >&2; exit 1; }
  (( i % 20 == 0 )) && echo "up:   still starting ($((i / 2)) s)" >&2
  sleep 0.5
done
curl -sf -m 2 "http://127.0.0.1:$PORT/health" >/dev/null || { echo "up: Open WebUI did not answer /health in 120 s" >&2; exit 1; }

cat >&2 <<EOF
==============================================================================
 Open WebUI (patched: French retrieval through ragfr) on http://127.0.0.1:$PORT
 The first account you create there becomes the administrator.
 $BANNER
 Database: ${DSN%%:*}://...@${DSN##*@}   Logs: $STATE/*.log   Stop: make down
==============================================================================
EOF
