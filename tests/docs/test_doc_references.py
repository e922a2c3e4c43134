"""What the docs name exists: every chart value path in backticks is in values.schema.json, every `make
TARGET` is a target, every `ragfr VERB [SUBVERB]` is a command, every `examples/NAME.yaml` is a file. A
renamed value or command, or a doc written from memory, fails here with the file and line."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from tests.support.paths import REPO

from ragfr.cli import build_parser

CHART = REPO / "charts" / "ragfr"
DOCS = sorted([*(REPO / "docs").rglob("*.md"), REPO / "README.md"])
SCHEMA = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
TOP = set(yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8")))
CODE = re.compile(r"`([^`\n]+)`")
# A value path: a top-level key of values.yaml, then dotted keys (a `=value` or `: value` after it is cut).
VALUE = re.compile(r"^([a-zA-Z][a-zA-Z0-9]*(?:\.[a-zA-Z0-9_-]+)+)(?:\s*[=:].*)?$")


# Where a shell command starts: the line's (or span's) start, a prompt, or after ; & | ( or `.
COMMAND_START = r"(?:^\s*|\$\s+|[;&|(`]\s*)"
FILE_SUFFIXES = {"dump", "sh", "yaml", "yml", "md", "json", "gz", "py", "tpl", "txt", "conf", "sql", "lock"}


def lines() -> Iterator[tuple[str, int, str]]:
    for path in DOCS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            yield str(path.relative_to(REPO)), number, line


def code(line: str, fenced: bool) -> list[str]:
    """The code of a line: all of it inside a fenced block, else its `spans`."""
    return [line] if fenced else CODE.findall(line)


def code_lines() -> Iterator[tuple[str, int, str]]:
    fenced, current = False, ""
    for where, number, line in lines():
        if where != current:
            fenced, current = False, where
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        for text in code(line, fenced):
            yield where, number, text


def schema_has(path: list[str], node: dict[str, Any] = SCHEMA) -> bool:
    """True when `path` names a value the schema accepts: declared properties, or keys of an open map."""
    if not path:
        return True
    props = node.get("properties", {})
    if path[0] in props:
        return schema_has(path[1:], props[path[0]])
    if isinstance(node.get("additionalProperties"), dict) or node.get("additionalProperties") is True:
        return True  # a map: openwebui.env.X, ragdb.settings.X, ...
    if node.get("patternProperties"):
        return True
    items = node.get("items")
    return isinstance(items, dict) and path[0].isdigit() and schema_has(path[1:], items)


def value_paths() -> Iterator[tuple[str, int, str]]:
    for where, number, line in lines():
        for span in CODE.findall(line):
            m = VALUE.match(span.strip())
            if m and m.group(1).split(".")[0] in TOP and m.group(1).rsplit(".", 1)[1] not in FILE_SUFFIXES:
                yield where, number, m.group(1)


def make_targets() -> set[str]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in [REPO / "Makefile", *(REPO / "mk").glob("*.mk")])
    return set(re.findall(r"^([a-z][a-z0-9-]*):", text, re.M))


def commands() -> dict[str, set[str]]:
    """ragfr's verbs, each with its sub-verbs (empty when it has none)."""
    out: dict[str, set[str]] = {}
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for verb, sub in action.choices.items():
                subs: set[str] = set()
                for a in sub._actions:
                    if isinstance(a, argparse._SubParsersAction):
                        subs |= set(a.choices)
                out[verb] = subs
    return out


def test_every_value_path_named_in_the_docs_is_in_the_schema() -> None:
    found = list(value_paths())
    assert len(found) > 100, "the scan found almost no value paths: is the pattern still right?"
    wrong = [f"{where}:{n}: {path}" for where, n, path in found if not schema_has(path.split("."))]
    assert not wrong, "values the chart's schema does not have:\n" + "\n".join(wrong)


def test_every_make_target_named_in_the_docs_exists() -> None:
    targets = make_targets()
    named = [(where, n, t) for where, n, text in code_lines()
             for t in re.findall(COMMAND_START + r"make ([a-z][a-z0-9-]*)", text)]
    assert len(named) > 50, "the scan found almost no make commands: is the pattern still right?"
    wrong = [f"{where}:{n}: make {t}" for where, n, t in named if t not in targets]
    assert not wrong, "make targets that do not exist:\n" + "\n".join(wrong)


def test_every_ragfr_command_named_in_the_docs_exists() -> None:
    verbs = commands()
    wrong = []
    named = [(where, n, m.groups()) for where, n, text in code_lines()
             for m in re.finditer(COMMAND_START + r"ragfr ([a-z][a-z-]*)(?: ([a-z][a-z0-9-]*))?", text)]
    assert len(named) > 50, "the scan found almost no ragfr commands: is the pattern still right?"
    for where, n, (verb, sub) in named:
        if verb not in verbs:
            wrong.append(f"{where}:{n}: ragfr {verb}")
        elif verbs[verb] and sub is not None and sub not in verbs[verb]:
            wrong.append(f"{where}:{n}: ragfr {verb} {sub}")
    assert not wrong, "ragfr commands that do not exist:\n" + "\n".join(wrong)


def test_every_example_file_named_in_the_docs_exists() -> None:
    wrong = [f"{where}:{n}: {name}" for where, n, line in lines()
             for name in re.findall(r"examples/([a-z0-9-]+\.yaml)", line) if not (CHART / "examples" / name).exists()]
    assert not wrong, "example values files that do not exist:\n" + "\n".join(wrong)


@pytest.mark.parametrize(("path", "known"), [("database.tls.certManager.issuerRef.name", True),
                                              ("openwebui.env.RAG_TOP_K", True), ("database.cnpg.nope", False),
                                              ("backup.serverName", False)])
def test_the_schema_walk(path: str, known: bool) -> None:
    assert schema_has(path.split(".")) is known


def test_no_password_on_a_documented_command_line() -> None:
    # A password in argv is readable by every user of the machine (`ps`); ragfr takes DATABASE_URL and libpq
    # PGPASSWORD from the environment, so `--dsn "$DATABASE_URL"` is both redundant and a leak.
    leaky = re.compile(r"--dsn\s+\S*(?:\$DATABASE_URL|\$\{DATABASE_URL\}|://[^/@\s:]+:[^/@\s]+@)")
    wrong = [f"{where}:{n}: {text.strip()}" for where, n, text in code_lines() if leaky.search(text)]
    assert not wrong, "commands that put a password on the command line:\n" + "\n".join(wrong)


def test_every_namespace_in_the_docs_is_the_same() -> None:
    # One namespace in every command, as the install guide creates it: copying a runbook's command into
    # another namespace's shell is how a restore or a migration reaches the wrong release.
    named = [(where, n, ns) for where, n, text in code_lines()
             for ns in re.findall(r"(?:\s-n|--namespace|--k8s-namespace)[ =]([a-z][a-z0-9-]*)", text)]
    assert len(named) > 20, "the scan found almost no namespaces: is the pattern still right?"
    wrong = [f"{where}:{n}: {ns}" for where, n, ns in named if ns != "ragfr"]
    assert not wrong, "commands in another namespace than ragfr:\n" + "\n".join(wrong)
