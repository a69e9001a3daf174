"""The committed fixture cuts (tests/fixtures/README.md): small, and what cut_mirror.py writes."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import MIRROR, require_full_mirror
from tests.fixtures.cut_mirror import main, oldest_beside

LIMIT_BYTES = 2 * 1024 * 1024


def _files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_the_cuts_stay_small() -> None:
    # As `du -sb` counts them: the files and the directories that hold them.
    cuts = [MIRROR, oldest_beside(MIRROR)]
    assert sum(path.stat().st_size for cut in cuts for path in [cut, *cut.rglob("*")]) <= LIMIT_BYTES


def test_the_committed_cuts_are_what_the_script_writes_from_the_whole_mirror(tmp_path: Path) -> None:
    again = tmp_path / MIRROR.name
    main([str(require_full_mirror()), str(again)])
    assert _files(again) == _files(MIRROR)
    assert _files(oldest_beside(again)) == _files(oldest_beside(MIRROR))
