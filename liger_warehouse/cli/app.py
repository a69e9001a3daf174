"""The Typer app, the options every command shares, and the one place errors are printed.

Every command module is imported to build the app, for ``--help`` and for a command that only
reads: so their top-level imports stay light (Typer, Rich, DuckDB), and Dagster, PyArrow, Polars
and the analysis and report stacks are imported inside the commands that need them
(tests/test_cli_startup.py holds this).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import duckdb
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from liger_warehouse import settings
from liger_warehouse.lake.connect import read_lake
from liger_warehouse.lake.location import ALIAS, Lake, NoWarehouse, configured
from liger_warehouse.store.storage import Storage

console = Console(stderr=True)
DEBUG_HINT = "run again with --debug for the trace"
COMMANDS_WITH_OUT = ("export", "report")
OFFLINE_HINT = (
    "offline or GitHub unreachable? refresh from a mirror directory: --upstream DIR or LIGER_WAREHOUSE_UPSTREAM=DIR"
)


class CliError(Exception):
    """A failure the user can act on: what failed, and what to do about it."""

    def __init__(self, what: str, hint: str) -> None:
        super().__init__(what)
        self.what, self.hint = what, hint


@dataclass
class Options:
    """The global options of the current invocation."""

    debug: bool = False
    # The invocation is the whole process (the installed command), not a call inside a caller
    # such as a test: what it loads may then be frozen for the garbage collector (cli.main).
    owns_process: bool = False


options = Options()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _file_error(exc: OSError, command: str | None) -> tuple[str, str]:
    # A failed os.replace(temporary, target) names the target second.
    path = exc.filename2 or exc.filename
    where = "for --out, " if command in COMMANDS_WITH_OUT else ""
    if isinstance(exc, IsADirectoryError):
        return f"{path} is a directory", f"{where}give a file path, not a directory"
    if isinstance(exc, NotADirectoryError | FileExistsError):
        return f"{path}: a file stands where a directory is needed", f"{where}give a directory, or a new path"
    if isinstance(exc, PermissionError):
        return f"permission denied: {path}", f"{where}choose a place you may write to"
    return f"{exc.strerror or _first_line(exc)}: {path}", f"{where}choose another path"


def explain(exc: Exception, command: str | None) -> tuple[str, str]:
    """What failed, in one line, and what to do about it, in another."""
    from liger_warehouse.triage.events import TriageRejected
    from liger_warehouse.upstream.http import UpstreamError, UpstreamUnreachable  # HTTPX: only once something failed

    if isinstance(exc, CliError):
        return exc.what, exc.hint
    if isinstance(exc, TriageRejected):
        return str(exc), "nothing was written; fix the command and run it again"
    if isinstance(exc, settings.SettingsError):
        return str(exc), "fix or unset that variable (README: Configuration)"
    if isinstance(exc, UpstreamUnreachable):
        return str(exc), OFFLINE_HINT
    if isinstance(exc, UpstreamError):
        return str(exc), "check --upstream / LIGER_WAREHOUSE_UPSTREAM and the GitHub settings (README: Configuration)"
    if isinstance(exc, duckdb.Error):
        hint = "fix the query and run it again" if command == "sql" else DEBUG_HINT
        return _first_line(exc), hint
    if isinstance(exc, OSError) and exc.filename:
        return _file_error(exc, command)
    return f"{type(exc).__name__}: {_first_line(exc)}", DEBUG_HINT


def print_error(what: str, hint: str) -> None:
    # soft_wrap: one line however long (a URL), whatever the terminal width.
    console.print(f"[red]error:[/red] {escape(what)}", soft_wrap=True)
    console.print(escape(hint), soft_wrap=True)


class ErrorsInOneLine(TyperGroup):
    """Every command's uncaught error becomes one line saying what failed and one saying what to
    do, exit status 1; ``--debug`` lets it through with its trace."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            print_error(*explain(exc, ctx.invoked_subcommand))
            raise typer.Exit(1) from None


app = typer.Typer(
    help="The warehouse of record for Liger-Kernel benchmark results.",
    no_args_is_help=True,
    cls=ErrorsInOneLine,
    # A trace with locals could show a GITHUB_TOKEN.
    pretty_exceptions_show_locals=False,
)


@app.callback()
def main(
    debug: Annotated[bool, typer.Option("--debug", help="On an error, show the trace; show Dagster's logs.")] = False,
) -> None:
    """Refresh the warehouse from upstream, inspect it, query it and export from it."""
    options.debug = debug


WarehouseOpt = Annotated[
    str | None, typer.Option("--warehouse", "-w", help="Warehouse root (default $LIGER_WAREHOUSE_DIR or ./warehouse).")
]
CatalogOpt = Annotated[
    str | None,
    typer.Option(
        help="The lake's DuckLake catalog: sqlite:PATH or postgres:dbname=… host=… "
        "(default $LIGER_WAREHOUSE_CATALOG, else <warehouse>/catalog.sqlite)."
    ),
]
DataOpt = Annotated[
    str | None,
    typer.Option(
        help="Where the lake's Parquet files are: a directory or s3://… "
        "(default $LIGER_WAREHOUSE_DATA, else <warehouse>/lake/)."
    ),
]
UpstreamOpt = Annotated[
    str | None,
    typer.Option(help="github:OWNER/REPO or a mirror directory (default $LIGER_WAREHOUSE_UPSTREAM)."),
]


def warehouse_root(warehouse: str | None) -> str:
    """The warehouse root to use; a local root that exists must be a directory."""
    root = warehouse or settings.current().dir
    storage = Storage(root)
    if storage.is_local and Path(storage.root).exists() and not Path(storage.root).is_dir():
        raise CliError(
            f"the warehouse root {root} is a file, not a directory",
            "point --warehouse or LIGER_WAREHOUSE_DIR at a directory (a refresh creates it)",
        )
    return root


def lake_of(warehouse: str | None, catalog: str | None = None, data: str | None = None) -> Lake:
    """The lake the options name, else the settings: by default the one in the warehouse root."""
    return configured(warehouse_root(warehouse), catalog, data)


def open_reader(lake: Lake, as_of: str | None = None, allow_read: Sequence[Path] = ()) -> duckdb.DuckDBPyConnection:
    """A locked-down reader of ``lake`` (``read_lake``) at snapshot ``as_of``; a clear one-line
    exit, status 1, when nothing is published there or it holds no such snapshot."""
    try:
        return read_lake(lake, as_of, allow_read)
    except NoWarehouse as exc:
        console.print(str(exc), soft_wrap=True)
        raise typer.Exit(1) from None
    except duckdb.InvalidInputException as exc:
        if as_of is None:
            raise
        print_one_line(f"--as-of {as_of}: {_first_line(exc)}; {_snapshots_held(lake)}")
        raise typer.Exit(1) from None


def _snapshots_held(lake: Lake) -> str:
    with read_lake(lake) as con:
        first, last = con.execute(
            f"select min(snapshot_id), max(snapshot_id) from ducklake_snapshots('{ALIAS}')"
        ).fetchone()
    return f"the lake holds snapshots {first} to {last} (`liger-warehouse status` lists them)"


def print_one_line(what: str) -> None:
    """An error that says what to do in the same line."""
    console.print(f"[red]error:[/red] {escape(what)}", soft_wrap=True)
