"""What upstream publishes, independent of where it is read from."""

from __future__ import annotations

from dataclasses import dataclass, field

from liger_warehouse.model.digests import digest

MAIN = "main"
GH_PAGES = "gh-pages"
IMPORT = "import"

DEFAULT_PATHS = (
    "benchmark/data/all_benchmark_data.csv",
    "benchmark/data/all_benchmark_data_cutedsl.csv",
    "benchmark/data/all_benchmark_data_cutile.csv",
)


@dataclass(frozen=True)
class RevisionRef:
    """One upstream revision of one CSV: a main-branch commit of a path, or a gh-pages run."""

    source: str
    path: str
    commit: str
    run: str | None = None
    seq: int = 0
    committed_at: str | None = None
    message: str | None = None
    html_url: str | None = None

    @property
    def source_key(self) -> str:
        """A source is one main-branch path or one gh-pages run."""
        return self.run if self.source == GH_PAGES else self.path

    @property
    def label(self) -> str:
        """How errors name this revision."""
        short = self.commit[:12]
        return f"{self.source} run {self.run}" if self.run else f"{self.path} @ {short}"

    def identity(self) -> dict:
        return {"source": self.source, "path": self.path, "commit": self.commit}


def revision_digest(ref: RevisionRef) -> str:
    """The digest of a revision's identity (source, path, commit): ``dim_upstream_revision``'s key."""
    return digest(ref.identity())


@dataclass
class UpstreamListing:
    """Everything upstream lists right now, oldest revision first within each source."""

    revisions: list[RevisionRef] = field(default_factory=list)
    golden_commits: bytes | None = None
    problems: list[str] = field(default_factory=list)
    requests: int = 0
    bytes_downloaded: int = 0

    def by_source(self) -> dict[str, list[RevisionRef]]:
        out: dict[str, list[RevisionRef]] = {}
        for ref in self.revisions:
            out.setdefault(ref.source_key, []).append(ref)
        return out
