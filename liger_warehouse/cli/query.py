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

from liger_warehouse.cli.app import CatalogOpt, CliError, DataOpt, WarehouseOpt, app, console, lake_of, open_reader
from liger_warehouse.cli.output import Format, write
from liger_warehouse.lake.read_only_sql import NotAQuery, read_only_statements

FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="table for people; csv or json for programs.")]


AllowReadOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--allow-read",
        exists=True,
        help="Also let the SQL read this file or directory (repeat for more); name it by its absolute path.",
    ),
]
AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        help="Read an earlier snapshot of the lake: its id, or a time such as '2026-12-01 02:00' "
        "(the snapshot current then). `status` lists them. Default: the newest.",
    ),
]


def _run(con: duckdb.DuckDBPyConnection, query: str) -> duckdb.DuckDBPyRelation | None:
    """Run ``query`` if every statement of it only reads; raises NotAQuery before running any
    statement when one does not."""
    read_only_statements(query, con)
    return con.sql(query)


READS_ONLY = "this session reads only the lake; --allow-read PATH opens more"
QUERIES_ONLY = "only queries run here: the lake changes through `liger-warehouse refresh` and `import`"


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
    as_of: AsOfOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Run SQL against the lake (every table, view and macro): queries only; it reads the lake
    and nothing else, and writes nothing. `set variable regression_threshold = 0.10` and
    `set memory_limit = '4GB'` work too; COPY, ATTACH, INSTALL, CREATE, other settings and files
    outside the lake are refused."""
    con = open_reader(lake_of(warehouse, catalog, data), as_of, allow_read or ())
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
    inconclusive = "inconclusive"
    changed = "changed"
    environment = "environment"
    all = "all"


# Every value is a bound parameter; the macro and the filters are the only SQL text.
COMPARE_SQL = """
select *
from {macro}($base, $head, threshold := $threshold)
where ($gpus::varchar[] is null or list_contains($gpus, gpu))
  and ($kernel::varchar is null or lower(kernel) = lower($kernel))
order by abs(adjusted_change) desc nulls last, kernel, mode, provider, metric, gpu, workload
"""
SHOWN = ("kernel", "mode", "provider", "metric", "gpu", "workload", "base_p50", "head_p50", "change",
         "adjusted_change", "noise", "verdict")  # fmt: skip


def _fail(message: str) -> NoReturn:
    console.print(f"[red]{message}[/red]")
    raise typer.Exit(2)


def _listing(values: list[str]) -> str:
    return ", ".join(values) if values else "nothing yet"


def _build(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The build as stored, from '0.7.0', 'v0.7.0', a run name or 'latest'; exits if unknown."""
    build = con.execute("select build_name($text)", {"text": text}).fetchall()[0][0]
    known = [b for (b,) in con.execute("select build from dim_build order by build_rank").fetchall()]
    if build not in known:
        releases = con.execute(
            "select build from dim_build where build_kind = 'release' order by build_rank"
        ).fetchall()
        _fail(
            f"unknown version {text!r}; the warehouse holds, oldest first: {_listing([b for (b,) in releases])} "
            "(and a nightly build per gh-pages run: `select build from dim_build`)"
        )
    return build


def _gh_pages_run(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The gh-pages run as upstream names it, or 'latest' / 'previous'; exits if unknown."""
    run = con.execute("select run_name($text)", {"text": text}).fetchall()[0][0]
    known = [r for (r,) in con.execute(
        "select run from dim_upstream_revision where source = 'gh-pages' order by seq desc"
    ).fetchall()]  # fmt: skip
    if run not in known:
        _fail(f"unknown run {text!r}; the warehouse holds, newest first: {_listing(known[:12])}"
              + (", …" if len(known) > 12 else ""))  # fmt: skip
    return run


def matching_gpus(con: duckdb.DuckDBPyConnection, wanted: str) -> list[str]:
    """The GPUs ``wanted`` names: one GPU exactly ('NVIDIA H100 NVL'), else a family: a product
    with or without its vendor ('H100', 'NVIDIA A100': every form factor of it) or an
    architecture ('sm_90'). Empty when it names none."""
    rows = con.execute("select gpu_name, product, architecture from dim_environment order by gpu_name").fetchall()
    w = " ".join(wanted.lower().split())
    exact = [name for name, _, _ in rows if name.lower() == w]
    if exact:
        return exact
    family = [
        name for name, product, _ in rows if product and w in (product.lower(), product.lower().split(" ", 1)[-1])
    ]
    return family or [name for name, _, arch in rows if (arch or "").lower() == w]


def _gpus(con: duckdb.DuckDBPyConnection, gpu: str) -> list[str]:
    matched = matching_gpus(con, gpu)
    if not matched:
        known = con.execute("select gpu_name, architecture from dim_environment order by gpu_name").fetchall()
        names = [f"{name} ({arch})" if arch else name for name, arch in known]
        _fail(f"unknown GPU {gpu!r}: name one exactly, a family (H100, A100) or an architecture (sm_90); "
              f"the warehouse holds: {_listing(names)}")  # fmt: skip
    return matched


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


def _percent(value: float | None) -> str:
    return f"{value:+.1%}" if value is not None else ""


def _readable(columns: list[str], rows: list[tuple]) -> list[tuple]:
    index = {c: i for i, c in enumerate(columns)}
    out = []
    for row in rows:
        unit = row[index["unit"]]
        noise = row[index["noise"]]
        shown = {
            **{c: row[index[c]] for c in SHOWN},
            "base_p50": f"{row[index['base_p50']]:.4g} {unit}",
            "head_p50": f"{row[index['head_p50']]:.4g} {unit}",
            "change": _percent(row[index["change"]]),
            "adjusted_change": _percent(row[index["adjusted_change"]]),
            "noise": f"±{noise:.1%}" if noise is not None else "",
        }
        out.append(tuple(shown[c] for c in SHOWN))
    return out


def _where(gpu: str | None, gpus: list[str] | None, kernel: str | None) -> str:
    where = ""
    if gpu is not None:
        where += f" on {gpu}" + (f" ({', '.join(gpus)})" if gpus != [gpu] else "")
    if kernel is not None:
        where += f" for {kernel}"
    return where


@app.command()
def regressions(
    base: Annotated[
        str | None, typer.Option(help="Base version: 0.6.3, v0.6.3, a release run such as d5648bf-v0.6.3, or latest.")
    ] = None,
    head: Annotated[str | None, typer.Option(help="Head version, written the same ways.")] = None,
    base_run: Annotated[
        str | None, typer.Option(help="Compare two gh-pages runs instead: the base run (7644a0f, previous, ...).")
    ] = None,
    head_run: Annotated[str | None, typer.Option(help="The head run (7644a0f-v0.7.0, latest, ...).")] = None,
    gpu: Annotated[
        str | None,
        typer.Option(help='One GPU exactly ("NVIDIA H100 NVL"), a family (H100, A100) or an architecture (sm_90).'),
    ] = None,
    kernel: Annotated[str | None, typer.Option(help="Only this kernel (e.g. rms_norm).")] = None,
    threshold: Annotated[float, typer.Option(min=0, help="Smallest change of p50 that counts, in percent.")] = 5.0,
    verdict: Annotated[Verdict, typer.Option(help="Which verdicts to list.")] = Verdict.regression,
    fmt: FormatOpt = Format.table,
    warehouse: WarehouseOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Compare two Liger versions (--base/--head) or two gh-pages runs (--base-run/--head-run)
    over every series in both, with the verdicts of docs/VERDICTS.md.

    A change is a regression or an improvement when p50 moved by more than --threshold percent,
    also once the drift of the baselines that ran beside it is taken out, and by more than the
    series' run-to-run noise allows; `unchanged` when a change of 25% (or the threshold) is
    ruled out; `inconclusive` when the series is too noisy or too new to say. A version stands
    on its release run and the other runs of its commit (else its main-branch rows); nightly runs
    are builds of their own (0.7.0+20260213.7644a0f).
    """
    if (
        (base is None) != (head is None)
        or (base_run is None) != (head_run is None)
        or (base is None) == (base_run is None)
    ):
        _fail("give --base and --head (two versions) or --base-run and --head-run (two gh-pages runs)")
    con = open_reader(lake_of(warehouse, catalog, data))
    if base_run is not None:
        macro, base_name, head_name = "compare_runs", _gh_pages_run(con, base_run), _gh_pages_run(con, head_run)
    else:
        macro, base_name, head_name = "compare_versions", _build(con, base), _build(con, head)
    gpus = _gpus(con, gpu) if gpu is not None else None
    if kernel is not None:
        _check_kernel(con, kernel)
    params = {"base": base_name, "head": head_name, "threshold": threshold / 100, "gpus": gpus, "kernel": kernel}
    cursor = con.execute(COMPARE_SQL.format(macro=macro), params)
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    where = _where(gpu, gpus, kernel)
    counts = Counter(row[columns.index("verdict")] for row in rows)
    if not rows:
        console.print(f"no series has a result in both {base_name} and {head_name}{where}")
    elif fmt is not Format.table and gpus is not None:
        console.print(f"GPUs matched: {', '.join(gpus)}")
    if verdict is not Verdict.all:
        rows = [row for row in rows if row[columns.index("verdict")] == verdict.value]
    if fmt is not Format.table:
        write(fmt, columns, rows)
    elif counts:
        title = _title(base_name, head_name, counts, threshold, where)
        write(fmt, SHOWN, _readable(columns, rows), title)


@app.command()
def versions(
    fmt: FormatOpt = Format.table, warehouse: WarehouseOpt = None, catalog: CatalogOpt = None, data: DataOpt = None
) -> None:
    """List the Liger versions in release order, with what the warehouse holds for each."""
    con = open_reader(lake_of(warehouse, catalog, data))
    cursor = con.execute("select * from versions order by version_rank")
    write(fmt, [d[0] for d in cursor.description], cursor.fetchall(), "Liger versions, oldest first")
