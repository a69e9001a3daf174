"""Commands that read the warehouse: ``sql``, ``regressions`` and ``versions``."""

from __future__ import annotations

import difflib
import sys
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import duckdb
import typer

from pipelines.cli.app import CliError, WarehouseOpt, app, console, open_database
from pipelines.cli.output import Format, write
from pipelines.database import NotAQuery, read_only_statements

FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="table for people; csv or json for programs.")]


AllowReadOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--allow-read",
        exists=True,
        help="Also let the SQL read this file or directory (repeat for more); name it by its absolute path.",
    ),
]


def _run(con: duckdb.DuckDBPyConnection, query: str) -> duckdb.DuckDBPyRelation | None:
    """Run ``query`` if every statement of it only reads; raises NotAQuery before running any
    statement when one does not."""
    read_only_statements(query)
    return con.sql(query)


READS_ONLY = "this session reads only the warehouse; --allow-read PATH opens more"
QUERIES_ONLY = "only queries run here: the warehouse changes through `liger-warehouse refresh` and `import`"


def _one_line(exc: Exception) -> str:
    if isinstance(exc, duckdb.PermissionException):  # its first line names the file
        return f"{str(exc).splitlines()[0]} ({READS_ONLY})"
    return str(exc)


@app.command()
def sql(
    query: Annotated[str | None, typer.Argument(help="SQL to run; omit for an interactive prompt.")] = None,
    warehouse: WarehouseOpt = None,
    fmt: FormatOpt = Format.table,
    allow_read: AllowReadOpt = None,
) -> None:
    """Run SQL against liger.duckdb: queries only; it reads the warehouse and nothing else, and
    writes nothing. `set variable regression_threshold = 0.10` and `set memory_limit = '4GB'`
    work too; COPY, ATTACH, INSTALL, CREATE, other settings and files outside the warehouse are
    refused."""
    con = open_database(warehouse, allow_read or ())
    if query is not None:
        # Errors go to the app's handler: what failed in one line, what to do in another.
        try:
            relation = _run(con, query)
            if fmt is Format.table or relation is None:
                print(relation if relation is not None else "")
            else:
                write(fmt, relation.columns, relation.fetchall())
        except NotAQuery as exc:
            raise CliError(str(exc), QUERIES_ONLY) from exc
        except duckdb.PermissionException as exc:
            raise CliError(str(exc).splitlines()[0], READS_ONLY) from exc
        return
    while True:
        try:
            line = input("liger> ")
        except EOFError:
            return
        if line.strip():
            try:
                relation = _run(con, line)
                if relation is not None:
                    print(relation)
            except (NotAQuery, duckdb.Error) as exc:
                print(_one_line(exc), file=sys.stderr)


class Verdict(StrEnum):
    regression = "regression"
    improvement = "improvement"
    unchanged = "unchanged"
    changed = "changed"
    all = "all"


# Every value is a bound parameter; the macro and the filters are the only SQL text.
COMPARE_SQL = """
select *
from compare_versions($base, $head, threshold := $threshold)
where ($gpu::varchar is null or contains(lower(gpu), lower($gpu)) or lower(architecture) = lower($gpu))
  and ($kernel::varchar is null or lower(kernel) = lower($kernel))
order by abs(change) desc nulls last, kernel, mode, provider, metric, gpu, workload
"""
SHOWN = ("kernel", "mode", "provider", "metric", "gpu", "workload", "base_p50", "head_p50", "change", "verdict")


def _fail(message: str) -> NoReturn:
    console.print(f"[red]{message}[/red]")
    raise typer.Exit(2)


def _listing(values: list[str]) -> str:
    return ", ".join(values) if values else "nothing yet"


def _version(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The version as stored, from '0.7.0', 'v0.7.0' or a release run name; exits if unknown."""
    known = [v for (v,) in con.execute("select liger_version from dim_version order by version_rank").fetchall()]
    version = con.execute("select version_text($text)", {"text": text}).fetchall()[0][0]
    if version not in known:
        _fail(f"unknown version {text!r}; the warehouse holds, oldest first: {_listing(known)}")
    return version


def _check_gpu(con: duckdb.DuckDBPyConnection, gpu: str) -> None:
    """A GPU matches by part of its name (H100, B200) or by architecture (sm_90)."""
    known = con.execute("select gpu_name, architecture from dim_environment order by gpu_name").fetchall()
    wanted = gpu.lower()
    if not any(wanted in name.lower() or wanted == (arch or "").lower() for name, arch in known):
        names = [f"{name} ({arch})" if arch else name for name, arch in known]
        _fail(f"unknown GPU {gpu!r}; the warehouse holds: {_listing(names)}")


def _check_kernel(con: duckdb.DuckDBPyConnection, kernel: str) -> None:
    known = [k for (k,) in con.execute("select distinct kernel from dim_workload order by 1").fetchall()]
    if kernel.lower() not in {k.lower() for k in known}:
        close = difflib.get_close_matches(kernel, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        _fail(f"unknown kernel {kernel!r}{hint}; the warehouse holds: {_listing(known)}")


def _title(base: str, head: str, counts: Counter, threshold: float, where: str) -> str:
    parts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    total = sum(counts.values())
    return f"{base} → {head}{where}: {parts} of {total} series in both (threshold {threshold:g}%)"


def _readable(columns: list[str], rows: list[tuple]) -> list[tuple]:
    index = {c: i for i, c in enumerate(columns)}
    out = []
    for row in rows:
        unit = row[index["unit"]]
        change = row[index["change"]]
        shown = {
            **{c: row[index[c]] for c in SHOWN},
            "base_p50": f"{row[index['base_p50']]:.4g} {unit}",
            "head_p50": f"{row[index['head_p50']]:.4g} {unit}",
            "change": f"{change:+.1%}" if change is not None else "",
        }
        out.append(tuple(shown[c] for c in SHOWN))
    return out


@app.command()
def regressions(
    base: Annotated[str, typer.Option(help="Base version: 0.6.3, v0.6.3 or a release run such as d5648bf-v0.6.3.")],
    head: Annotated[str, typer.Option(help="Head version, written the same ways.")],
    gpu: Annotated[
        str | None,
        typer.Option(help="Only GPUs whose name contains this (H100, B200) or of architecture sm_XX."),
    ] = None,
    kernel: Annotated[str | None, typer.Option(help="Only this kernel (e.g. rms_norm).")] = None,
    threshold: Annotated[float, typer.Option(min=0, help="Smallest change of p50 that counts, in percent.")] = 5.0,
    verdict: Annotated[Verdict, typer.Option(help="Which verdicts to list.")] = Verdict.regression,
    fmt: FormatOpt = Format.table,
    warehouse: WarehouseOpt = None,
) -> None:
    """Compare two Liger versions over every series that has a result in both.

    A change counts when p50 moved by more than --threshold percent and the two p20-p80 bands
    do not overlap; lower is better for ms and MB. When a version has several results in a
    series (several gh-pages runs of one release), the most recently observed one stands for it.
    """
    con = open_database(warehouse)
    base_version, head_version = _version(con, base), _version(con, head)
    if gpu is not None:
        _check_gpu(con, gpu)
    if kernel is not None:
        _check_kernel(con, kernel)
    params = {"base": base_version, "head": head_version, "threshold": threshold / 100, "gpu": gpu, "kernel": kernel}
    cursor = con.execute(COMPARE_SQL, params)
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    where = "".join(f" {label} {value}" for label, value in (("on", gpu), ("for", kernel)) if value)
    counts = Counter(row[columns.index("verdict")] for row in rows)
    if not rows:
        console.print(f"no series has a result in both {base_version} and {head_version}{where}")
    if verdict is not Verdict.all:
        rows = [row for row in rows if row[columns.index("verdict")] == verdict.value]
    if fmt is not Format.table:
        write(fmt, columns, rows)
    elif counts:
        title = _title(base_version, head_version, counts, threshold, where)
        write(fmt, SHOWN, _readable(columns, rows), title)


@app.command()
def versions(fmt: FormatOpt = Format.table, warehouse: WarehouseOpt = None) -> None:
    """List the Liger versions in release order, with what the warehouse holds for each."""
    con = open_database(warehouse)
    cursor = con.execute("select * from versions order by version_rank")
    write(fmt, [d[0] for d in cursor.description], cursor.fetchall(), "Liger versions, oldest first")
