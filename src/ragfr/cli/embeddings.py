"""`ragfr embeddings`: move the stored corpus to another embedding model without downtime or data loss."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ragfr.cli.common import add_dsn, require_dsn

if TYPE_CHECKING:
    from ragfr.embmigrate.status import Status

RUNBOOK = "docs/runbooks/embedding-migration.md"
# `migrate --dry-run` when the real run would refuse or stop (another migrator running, another target
# open, leftovers...): distinct from 0 (it would run) and 2 (bad input, unreachable database).
DRY_RUN_REFUSED = 4

EPILOG = f"""\
how it works (full procedure, timings and disk estimates: {RUNBOOK}):
  migrate   adds a shadow column vector_next vector(M), re-embeds every chunk's stored text into it in
            checkpointed batches, builds its HNSW index CONCURRENTLY, catches up rows Open WebUI wrote
            meanwhile, verifies (every chunk has an M-dim vector of the new model; HNSW recall@10 against
            exact search), then switches in ONE transaction: document_chunk.vector IS the new column with
            index idx_document_chunk_vector, the old one is kept as vector_prev. Searches keep using the
            old space until that transaction commits. Then, in committed batches, each chunk's
            vmetadata.embedding_config.model is rewritten to the new model (rollback writes the old one
            back). Interrupted (even kill -9)? Run the same command.
  status    phase, progress, pending rows, index validity, whether a migrator is running.
  rollback  before finalize: restores the old space exactly (re-embeds with the old model only the rows
            written after the switch).
  finalize  drops the old vectors and their index (no rollback after this).
  k8s       runs migrate as a Job in the cluster; at the switch Open WebUI's ConfigMap
            (RAG_EMBEDDING_MODEL, PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH) is updated and it is restarted.

stopping: Ctrl-C, SIGTERM or SIGHUP (also for a `nohup ... &` run) stops at the next safe point (after the
  batch in flight) with one line saying what was kept; a second signal stops at once. Nothing committed is
  lost; the same command resumes.
locks: each schema change (prepare, switch, rollback, finalize) waits at most --lock-timeout (2 s) per
  attempt for its ACCESS EXCLUSIVE lock -- Open WebUI's queries arriving meanwhile wait that long -- and
  retries, 1 s apart, for at most --lock-wait (60 s) in total. Each retry names the sessions holding the
  table (server pid, application, since when); SELECT pg_terminate_backend(PID) ends one.
progress: a bar on a terminal; elsewhere (log file, nohup, Job log) one line every --progress-every rows.
exit status: 0 done (or nothing to do), 2 bad input or refused, {DRY_RUN_REFUSED} `migrate --dry-run`: a real run
  would refuse or stop (the reason is printed), 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP.

examples:
  ragfr embeddings migrate --to local:multilingual-e5-small --dry-run
  ragfr embeddings migrate --to local:multilingual-e5-small --dims 384
  ragfr embeddings status
  ragfr embeddings rollback        # or: finalize
  ragfr embeddings k8s --namespace ragfr --release ragfr --to ollama:nomic-embed-text --dry-run
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "embeddings",
        help="migrate the stored chunks to another embedding model (resumable, verified, reversible)",
        description="Change the embedding model of an existing corpus in place, with no downtime and no "
        "re-ingestion: the chunk text stored in document_chunk is re-embedded into a shadow column.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    m = verbs.add_parser(
        "migrate",
        help="re-embed, index, verify and switch (re-run to resume)",
        description="Re-embed every chunk with --to, index and verify it, then switch atomically. Safe to "
        "interrupt at any moment: re-running the same command resumes.",
    )
    add_dsn(m)
    _add_migrate_args(m)
    m.add_argument("--nice", type=int, default=10, metavar="N",
                   help="lower this process's CPU priority by N (default 10) so that live searches sharing the "
                   "machine keep their latency; 0 keeps the normal priority")
    _add_k8s_target(m, "after the switch, point this release's Open WebUI at the new model and restart it")
    m.set_defaults(func=run_migrate)

    s = verbs.add_parser("status", help="show the migration's phase and progress")
    add_dsn(s)
    s.add_argument("--json", action="store_true", help="print machine-readable JSON")
    s.set_defaults(func=run_status)

    r = verbs.add_parser("rollback", help="restore the old embedding space exactly (any time before finalize)")
    add_dsn(r)
    r.add_argument(
        "--batch", type=int, default=64, help="chunks per batch when re-embedding with the old model (default 64)"
    )
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_progress_every(r)
    _add_lock_budget(r)
    _add_k8s_target(r, "after the rollback, point this release's Open WebUI back at the old model and restart it")
    r.set_defaults(func=run_rollback)

    f = verbs.add_parser("finalize", help="drop the old vectors kept since the switch (no rollback afterwards)")
    add_dsn(f)
    _add_lock_budget(f)
    f.set_defaults(func=run_finalize)

    k = verbs.add_parser(
        "k8s",
        help="run the migration as a Kubernetes Job (Open WebUI reconfigured and restarted at the switch)",
        description="Create a Job (plus the ServiceAccount and Role it needs) that runs `ragfr embeddings "
        "migrate` in the cluster with the image, database credentials and network labels of the release's "
        "Open WebUI `wait-for-schema` init container, then follow it. Uses ~/.kube/config or the in-cluster "
        "service account.",
    )
    _add_migrate_args(k, dry_run_help="print the plan and the objects that would be created; create nothing")
    k.add_argument("-n", "--namespace",
                   help="namespace of the ragfr release (default, like kubectl: the kube context's namespace)")
    k.add_argument("--context", help="kubeconfig context to use (default: the current context)")
    k.add_argument("--release", required=True, help="the chart's full name (object name prefix), e.g. ragfr")
    k.add_argument("--no-wait", action="store_true", help="create the Job and return without following it")
    k.add_argument(
        "--timeout", type=float, default=6 * 3600.0, help="seconds to follow the Job before giving up (default 6 h)"
    )
    k.set_defaults(func=run_k8s)


def _add_migrate_args(p: argparse.ArgumentParser, dry_run_help: str | None = None) -> None:
    p.add_argument("--to", required=True, metavar="SPEC",
                   help="target embedder: ollama:MODEL, local:multilingual-e5-small, local:use-multilingual")
    p.add_argument("--dims", type=int, help="expected dimension; refused if the model returns another")
    p.add_argument("--batch", type=int, default=64, help="chunks embedded and committed per transaction (default 64)")
    p.add_argument("--dry-run", action="store_true",
                   help=dry_run_help or "check everything, measure the embedding rate, print the plan; change nothing")
    p.add_argument("--no-switch", action="store_true", help="stop once verified; re-run without it to switch")
    p.add_argument("--min-recall", type=float, default=0.9, help="minimum HNSW recall@10 vs exact search (default 0.9)")
    p.add_argument("--recall-sample", type=int, default=100, help="queries sampled for the recall check (default 100)")
    p.add_argument("--ef-search", type=int, default=40, help="hnsw.ef_search used by the recall check (default 40)")
    p.add_argument("--maintenance-work-mem", default="256MB", help="memory for the HNSW build (default 256MB)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_progress_every(p)
    _add_lock_budget(p)


def _add_progress_every(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress-every", type=int, default=500, metavar="N",
                   help="when stderr is not a terminal: one progress line every N rows (default 500)")


def _add_lock_budget(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lock-timeout", type=float, default=2.0, metavar="SECONDS",
                   help="longest wait of one attempt at a schema change's table lock; Open WebUI's queries queue "
                   "behind it that long (default 2)")
    p.add_argument("--lock-wait", type=float, default=60.0, metavar="SECONDS",
                   help="total time the attempts of one schema change may take before giving up with nothing "
                   "changed (default 60: about 20 attempts of 2 s, 1 s apart)")


def _add_k8s_target(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--k8s-release", metavar="FULLNAME", help=what + " (objects FULLNAME-openwebui[-env])")
    p.add_argument("--k8s-namespace", metavar="NS", help="namespace of --k8s-release (default: the pod's own)")


def _say(message: str) -> None:
    try:
        print(message, file=sys.stderr, flush=True)
    except (BrokenPipeError, OSError):
        pass  # nobody reads stderr any more (`2>&1 | head`, closed terminal): the migration itself goes on


def _options(args: argparse.Namespace, dsn: str) -> Any:
    from ragfr.embmigrate.options import MigrateOptions

    return MigrateOptions.from_args(args, dsn=dsn, progress=not args.no_progress, progress_every=args.progress_every,
                                    dsn_given=args.dsn is not None and args.dsn != os.environ.get("DATABASE_URL"))


def _budget(args: argparse.Namespace) -> Any:
    from ragfr.db.ddl import LockBudget

    return LockBudget(args.lock_timeout, args.lock_wait)


def _space_hook(args: argparse.Namespace) -> Any:
    if not args.k8s_release:
        return None
    from ragfr.embmigrate.k8s.openwebui import space_hook

    return space_hook(args.k8s_release, args.k8s_namespace, _say)


def run_migrate(args: argparse.Namespace) -> int:
    opts = _options(args, require_dsn(args))
    if args.nice:
        # The embedder (in this process when the model is local) is what competes with searches for CPU. Set
        # before a dry run too: its measured rate is then the rate at the priority the run will have.
        os.nice(max(0, min(args.nice, 19)))
    if args.dry_run:
        from ragfr.embmigrate.plan import plan

        result = plan(opts)
        print("\n".join(result.lines))
        return DRY_RUN_REFUSED if result.refused else 0
    from ragfr.embmigrate.runner import migrate
    from ragfr.stop import stop_on_signals

    if args.k8s_release:
        from ragfr.embmigrate.k8s.openwebui import owui_model

        owui_model(args.to)  # a target Open WebUI cannot use is refused before anything changes
    hook = _space_hook(args)
    with stop_on_signals():
        return migrate(opts, _say, on_switch=hook)


def run_status(args: argparse.Namespace) -> int:
    from ragfr.embmigrate.status import status

    report = status(require_dsn(args))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, default=str))
        return 0
    print(format_status(report))
    return 0


def format_status(report: Status) -> str:
    lines = [f"embedding space: {report.space_model} ({report.space_dims} dims), {report.chunks} chunk(s)",
             "migrator running: " + (f"yes ({report.running_holder})" if report.running else "no")]
    mig = report.migration
    if mig is None:
        lines.append("no embedding migration has ever run")
        return "\n".join(lines)
    head = "open migration" if report.open else "last migration"
    lines.append(f"{head} #{mig.id}: {mig.from_model} ({mig.from_dims}) -> {mig.to_model} ({mig.to_dims}), "
                 f"phase {mig.phase}")
    lines.append(f"  rows embedded {mig.rows_embedded} in {mig.batches} batch(es); "
                 f"re-embedded for the old space {mig.rows_reembedded_old}")
    if mig.recall_at_10 is not None:
        lines.append(f"  verified recall@10 {mig.recall_at_10:.3f} over {mig.recall_sample} queries")
    if report.open:
        lines.append(f"  pending ({report.pending_column} still NULL): {report.pending}")
        for idx in (report.index_next, report.index_prev):
            if idx is not None:
                lines.append(f"  index {idx.name}: {'valid' if idx.valid else 'INVALID (rebuilt on resume)'}")
        lines.append(f"  next: {report.next_action()}")
    return "\n".join(lines)


def run_rollback(args: argparse.Namespace) -> int:
    from ragfr.embmigrate.rollback import rollback
    from ragfr.stop import stop_on_signals

    with stop_on_signals():
        return rollback(
            require_dsn(args), _say, batch=args.batch, progress=not args.no_progress, on_rollback=_space_hook(args),
            budget=_budget(args), progress_every=args.progress_every,
        )


def run_finalize(args: argparse.Namespace) -> int:
    from ragfr.embmigrate.finalize import finalize
    from ragfr.stop import stop_on_signals

    with stop_on_signals():  # a signal while waiting for the table lock stops with nothing changed
        return finalize(require_dsn(args), _say, _budget(args))


def run_k8s(args: argparse.Namespace) -> int:
    from ragfr.embmigrate.k8s.client import default_namespace
    from ragfr.embmigrate.k8s.orchestrate import JobRequest, run

    namespace = args.namespace or default_namespace(args.context)
    request = JobRequest.from_args(args, namespace=namespace, release=args.release)
    return run(request, dry_run=args.dry_run, wait=not args.no_wait, timeout=args.timeout, say=_say, out=print,
               context=args.context)
