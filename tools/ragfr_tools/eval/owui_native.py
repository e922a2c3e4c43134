"""`owui-native`: stock Open WebUI 0.12.4's native hybrid search, run through the real package in its own
venv (a subprocess: its dependencies are not ragfr's). Skipped, with the reason, when the venv is absent."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from ragfr.eval.beir import Query
from ragfr.eval.configs import ConfigSpec, EvalContext, Ranker
from ragfr.owui.runtime.errors import OwuiError
from ragfr_tools.repo import OWUI_VENV

DRIVER = Path(__file__).with_name("owui_driver.py")
STARTUP_TIMEOUT_S = 180


def owui_python() -> Path:
    """$RAGFR_OWUI_VENV (default: .venv-owui next to the ragfr checkout) / bin/python."""
    return Path(os.environ.get("RAGFR_OWUI_VENV", OWUI_VENV)) / "bin" / "python"


def sqlalchemy_url(dsn: str) -> str:
    # Open WebUI builds a SQLAlchemy engine; psycopg 3 is what its venv ships for PostgreSQL.
    for prefix in ("postgresql://", "postgres://"):
        if dsn.startswith(prefix):
            return "postgresql+psycopg://" + dsn[len(prefix):]
    return dsn


def owui_env(dsn: str, dims: int, data_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGVECTOR_", "RAG_", "VECTOR_DB"))}
    env.update({
        "DATA_DIR": data_dir,
        "STATIC_DIR": f"{data_dir}/static",  # Open WebUI copies assets there at import
        # Open WebUI's own application database (users, settings), not the vector store: a throwaway SQLite
        # file, so an inherited DATABASE_URL never points it at the evaluation database.
        "DATABASE_URL": f"sqlite:///{data_dir}/webui.db",
        "WEBUI_SECRET_KEY": "ragfr-eval-not-a-secret",
        "OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
        "ENABLE_PERSISTENT_CONFIG": "false",
        "VECTOR_DB": "pgvector",
        "PGVECTOR_DB_URL": sqlalchemy_url(dsn),
        "PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH": str(dims),
        # ragfr's migrations create idx_document_chunk_vector as HNSW(m=16, ef_construction=64); any other
        # method makes Open WebUI refuse to start.
        "PGVECTOR_INDEX_METHOD": "hnsw",
        "PGVECTOR_HNSW_M": "16",
        "PGVECTOR_HNSW_EF_CONSTRUCTION": "64",
        "RAG_EMBEDDING_ENGINE": "ollama",
        "ENABLE_OPENAI_API": "false",
    })
    return env


class OwuiNative:
    name = "owui-native"

    def __init__(self, ctx: EvalContext, python: Path) -> None:
        self.ctx = ctx
        self.tmp = tempfile.TemporaryDirectory(prefix="ragfr-eval-owui-")
        self.unanswered = 0
        # The child holds its own descriptor; ours is closed as soon as it is handed over.
        with open(Path(self.tmp.name) / "stderr.log", "w") as stderr:
            self.proc = subprocess.Popen(
                [str(python), str(DRIVER), ctx.collection],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                text=True, env=owui_env(ctx.dsn, ctx.embedder.dims, self.tmp.name), cwd=self.tmp.name,
            )
        first = self._read()
        if first.get("ready") is not True:
            raise OwuiError(f"Open WebUI driver did not start: {first}")

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def _read(self) -> dict[str, Any]:
        line = self._pipes()[1].readline()
        if not line:
            log = (Path(self.tmp.name) / "stderr.log").read_text(errors="replace").strip().splitlines()
            raise OwuiError("Open WebUI driver exited: " + (log[-1] if log else f"code {self.proc.wait()}"))
        answer: dict[str, Any] = json.loads(line)
        return answer

    def rank(self, query: Query, query_vector: Sequence[float]) -> list[str]:
        stdin, _ = self._pipes()
        stdin.write(json.dumps({"query": query.text, "vector": list(query_vector), "limit": self.ctx.depth}) + "\n")
        stdin.flush()
        ids = self._read()["ids"]
        if ids is None:  # Open WebUI would fall back to its legacy path; nothing native to score
            self.unanswered += 1
            return []
        return [str(i) for i in ids]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.tmp.cleanup()


def _factory(ctx: EvalContext) -> Ranker | str:
    python = owui_python()
    if not python.exists():
        return f"Open WebUI venv not found ({python.parent.parent}; set RAGFR_OWUI_VENV)"
    try:
        return OwuiNative(ctx, python)
    except OwuiError as exc:
        return f"Open WebUI failed to start: {exc}"


SPECS = [ConfigSpec(
    "owui-native",
    "Open WebUI 0.12.4 PgvectorClient.hybrid_search through the real package (no metadata filter: its native "
    "path passes none)",
    _factory,
)]
