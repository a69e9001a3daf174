"""The body of a kernel's page: its p50 per gh-pages run with the runs marked, its triage, its
regressions, and its p50 across Liger releases (the index's chart of it)."""

from __future__ import annotations

import html
from urllib.parse import quote

from liger_warehouse.report import page
from liger_warehouse.report.history import key_html
from liger_warehouse.report.kernels import KernelHistory
from liger_warehouse.report.paths import kernel_path

HISTORY = "history"
RELEASES = "releases"
INDEX_LINK = "../index.html"

HISTORY_TEXT = (
    "p50 of every implementation of this kernel in each gh-pages run (the <code>run_history</code> view), "
    "one panel per GPU, with the p20&ndash;p80 band as a bar. Pick the measurement and the workload above "
    "the chart; y scales are per GPU. Diamonds mark the change points of the series shown "
    "(<code>change_points</code>); rules across a panel mark the runs that were environment shifts "
    "(<code>environment_shifts</code>) and the runs people acknowledged or annotated "
    "(<code>triage_reach</code>): hover the symbol above a rule for what it says."
)
REGRESSIONS_TEXT = (
    "From the <code>regressions</code> view: the steps between consecutive builds at which a series of this "
    "kernel regressed, of any implementation, newest first, with their triage: <code>confirmation</code> "
    "(what the builds after it say), <code>acknowledged</code> and <code>acknowledgement</code> (the kind and "
    "note of an acknowledgement of a run between the two builds), <code>muted</code> and "
    "<code>annotations</code>. <code>series</code> is the start of the series digest."
)
RELEASES_TEXT = (
    "The index's chart of this kernel: p50 across Liger releases at one representative workload "
    "(the <code>version_history</code> view, release builds)."
)


def href(kernel: str) -> str:
    """The link to ``kernel``'s page from the index (``=`` stays as it is; ``+`` is quoted for S3)."""
    return quote(kernel_path(kernel), safe="/=")


def kernel_nav(kernels: list[str], open_counts: dict[str, tuple[int, int]]) -> str:
    """A link to every kernel's page, with its open regressions."""
    links = []
    for kernel in kernels:
        count = open_counts.get(kernel, (0, 0))[0]
        badge = f' <span class="badge">{count}</span>' if count else ""
        links.append(f'<a href="{html.escape(href(kernel))}">{html.escape(kernel)}{badge}</a>')
    return f'<nav class="kernels">{" ".join(links)}</nav>'


def body(history: KernelHistory, meta: str, open_count: tuple[int, int], releases: bool, footer: str) -> str:
    """The page of one kernel; ``meta`` says which snapshot it was read from."""
    kernel = html.escape(history.kernel)
    nav = " ".join(
        f'<a href="{h}">{t}</a>'
        for h, t in (
            (INDEX_LINK, "report index"),
            (f"{INDEX_LINK}#open", "open regressions"),
            (f"#{HISTORY}", "per run"),
            ("#regressions", "regressions"),
            (f"#{RELEASES}", "across releases"),
        )
    )
    return "\n".join(
        (
            f"<nav>{nav}</nav><h1>Kernel <code>{kernel}</code></h1>",
            f'<p class="meta">{meta} {_summary(history, open_count)}</p>',
            _triage(history),
            _history(history),
            f'<section id="regressions"><h2>Regressions</h2><p>{REGRESSIONS_TEXT}</p>{_regressions(history)}</section>',
            f'<section id="{RELEASES}"><h2>p50 across Liger releases</h2><p>{RELEASES_TEXT}</p>'
            f"{page.chart_div(RELEASES) if releases else _none('No release build measured this kernel.')}</section>",
            footer,
        )
    )


def _summary(history: KernelHistory, open_count: tuple[int, int]) -> str:
    runs = f"{len(history.series):,} series on {len(history.gpus)} GPUs in {len(history.runs)} gh-pages runs"
    opened, confirmed = open_count
    return f"{runs}; {opened} open regressions ({confirmed} confirmed): neither acknowledged nor muted nor retracted."


def _triage(history: KernelHistory) -> str:
    """The mutes and thresholds that reach the kernel and the notes on its whole history, if any."""
    items = history.triage + [f"note: {n}" for n in history.notes]
    if not items:
        return ""
    lines = "".join(f"<li>{html.escape(item)}</li>" for item in items)
    return f'<section id="triage"><h2>Triage</h2><ul class="triage">{lines}</ul></section>'


def _history(history: KernelHistory) -> str:
    head = f'<section id="{HISTORY}"><h2>p50 per gh-pages run</h2><p>{HISTORY_TEXT}</p>'
    if not history.points:
        return head + _none("No gh-pages run measured this kernel.") + "</section>"
    left_out = (
        _none(f"Left out to keep the page small: {html.escape(', '.join(history.left_out))}.")
        if history.left_out
        else ""
    )
    return head + key_html() + page.chart_div(HISTORY) + left_out + "</section>"


def _regressions(history: KernelHistory) -> str:
    if history.regressions is None:
        return _none("This warehouse has no regressions view.")
    return page.table_html(history.regressions)


def _none(text: str) -> str:
    return f'<p class="note">{text}</p>'
