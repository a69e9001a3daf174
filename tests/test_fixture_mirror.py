"""The committed fixture cut (tests/fixtures/README.md): small, and what cut_mirror.py writes."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import MIRROR, require_full_mirror
from tests.fixtures.cut_mirror import cut_mirror

LIMIT_BYTES = 2 * 1024 * 1024


def _files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_the_cut_stays_small() -> None:
    # As `du -sb` counts it: the files and the directories that hold them.
    assert sum(path.stat().st_size for path in [MIRROR, *MIRROR.rglob("*")]) <= LIMIT_BYTES


def test_the_committed_cut_is_what_the_script_writes_from_the_whole_mirror(tmp_path: Path) -> None:
    again = cut_mirror(require_full_mirror(), tmp_path / "liger-kernel")
    assert _files(again) == _files(MIRROR)
