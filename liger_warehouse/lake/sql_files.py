"""The SQL files of ``sql/`` and the order they load in: each names what it reads.

``sql/macros/`` holds the macros, ``sql/views/`` the views (one ``create or replace`` per file,
named as the file) and ``sql/derived/`` one ``select`` per derived table. Every file says what
it reads in a header line, ``-- reads: results, dim_build`` (or ``-- reads: nothing``), and the
line is checked against the SQL: a file that reads an object it does not declare, or declares
one it does not read, is an error naming the file. Macros and views load in the topological
order of those lines, so the first one that fails is the root cause: what it reads loaded
already. No DuckDB here: this is text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

LOADED_KINDS = ("macros", "views")
KINDS = (*LOADED_KINDS, "derived")
_READS = re.compile(r"^--\s*reads:(.*)$", re.MULTILINE)
_DEFINES = re.compile(r"create\s+or\s+replace\s+(?:view|macro)\s+(\w+)", re.IGNORECASE)
_COMMENT_OR_STRING = re.compile(r"--[^\n]*|'(?:[^']|'')*'")
# An object is read after FROM / JOIN (and after a comma in a FROM list), or called: a name
# followed by "(".
_AFTER_FROM = re.compile(r"\b(?:from|join)\s+([a-z_][a-z0-9_]*)", re.IGNORECASE)
_FROM_LIST = re.compile(
    r"\bfrom\s+[a-z_][a-z0-9_]*(?:\s+(?:as\s+)?[a-z_][a-z0-9_]*)?((?:\s*,\s*[a-z_][a-z0-9_]*(?:\s+(?:as\s+)?[a-z_][a-z0-9_]*)?)+)",
    re.IGNORECASE,
)
_LISTED = re.compile(r",\s*([a-z_][a-z0-9_]*)", re.IGNORECASE)
_CALLED = re.compile(r"\b([a-z_][a-z0-9_]*)\s*\(", re.IGNORECASE)


class SqlFileError(ValueError):
    """A file of ``sql/`` whose header does not match its SQL, or a circle of reads."""


@dataclass(frozen=True)
class SqlFile:
    path: Path
    name: str  # the object it defines (a view or macro), or the derived table it selects
    reads: frozenset[str]
    sql: str

    @property
    def description(self) -> str:
        """The header's comment lines before ``-- reads:``: what one row (or call) is."""
        lines = []
        for line in self.sql.splitlines():
            if not line.startswith("--") or _READS.match(line):
                break
            lines.append(line.removeprefix("--").strip())
        return " ".join(line for line in lines if line)

    @property
    def kind(self) -> str:
        """``macros``, ``views`` or ``derived``: the folder it is in."""
        return self.path.parent.name

    def label(self, sql_dir: Path) -> str:
        return self.path.relative_to(sql_dir).as_posix()


def declared_reads(sql: str) -> frozenset[str] | None:
    """The names of the ``-- reads:`` line, None when there is no such line."""
    match = _READS.search(sql)
    if match is None:
        return None
    names = {n.strip() for n in match.group(1).split(",")} - {"", "nothing"}
    return frozenset(names)


def referenced(sql: str, known: set[str]) -> frozenset[str]:
    """The ``known`` objects the SQL reads (comments and string literals left out)."""
    code = _COMMENT_OR_STRING.sub(" ", sql)
    listed = [name for tail in _FROM_LIST.findall(code) for name in _LISTED.findall(tail)]
    names = {n.lower() for n in [*_AFTER_FROM.findall(code), *listed, *_CALLED.findall(code)]}
    return frozenset(names & known)


def read_sql_file(path: Path, sql_dir: Path, known: set[str]) -> SqlFile:
    """``path`` with its checked ``-- reads:`` line; ``known`` names every object there is."""
    sql = path.read_text()
    label = path.relative_to(sql_dir).as_posix()
    defined = _DEFINES.findall(sql)
    if path.parent.name in LOADED_KINDS and [d.lower() for d in defined] != [path.stem]:
        raise SqlFileError(f"{label}: defines {defined or 'nothing'}; it must define one object, {path.stem}")
    declared = declared_reads(sql)
    if declared is None:
        raise SqlFileError(f"{label}: no `-- reads:` header line naming what it reads (`-- reads: nothing` if so)")
    found = referenced(sql, known) - {path.stem}
    unknown = declared - known
    if unknown:
        raise SqlFileError(f"{label}: `-- reads:` names {sorted(unknown)}, which no table or sql/ file defines")
    if found - declared:
        raise SqlFileError(f"{label}: reads {sorted(found - declared)} without naming it in its `-- reads:` line")
    if declared - found:
        raise SqlFileError(f"{label}: `-- reads:` names {sorted(declared - found)}, which its SQL does not read")
    return SqlFile(path, path.stem, declared, sql)


def load_order(sql_dir: Path, tables: set[str]) -> list[SqlFile]:
    """The macros, views and derived tables of ``sql_dir`` in an order where each comes after
    what it reads; ``tables`` are the objects that exist before any of them (the stored tables)."""
    paths = sorted(p for kind in KINDS for p in (sql_dir / kind).glob("*.sql"))
    known = tables | {p.stem for p in paths}
    files = {f.name: f for f in (read_sql_file(p, sql_dir, known) for p in paths)}
    graph = TopologicalSorter({name: sorted(f.reads & files.keys()) for name, f in sorted(files.items())})
    try:
        graph.prepare()
    except CycleError as exc:
        circle = " -> ".join(exc.args[1])
        raise SqlFileError(f"sql/ files read each other in a circle: {circle}") from exc
    ordered: list[SqlFile] = []
    while graph.is_active():
        ready = sorted(graph.get_ready())
        ordered.extend(files[name] for name in ready)
        graph.done(*ready)
    return ordered
