"""Liger release versions: parsing, semantic ordering, and gh-pages run names.

Versions are PEP 440 (what ``importlib.metadata.version("liger-kernel")`` reports upstream),
so ``packaging`` orders them: ``0.5.10`` after ``0.5.9``, ``0.7.0.dev1 < 0.7.0rc1 < 0.7.0``.
Plain string order gets both of those wrong, which is why nothing sorts version text.
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

# A gh-pages run is the benchmarked commit (7 hex upstream, up to a full sha), plus
# "-v<version>" for release runs. Anchored and without "/" or "..", so a run name can be
# joined into a path or URL safely.
# fullmatch, not "$": "$" would also accept a trailing newline.
_RUN_NAME = re.compile(r"(?P<commit>[0-9a-f]{7,40})(?:-v(?P<version>[0-9A-Za-z.+!_-]+))?")

# Unparseable text sorts before every real version, so max() always picks a release.
_UNPARSED = 0
_PARSED = 1


def parse_version(text: str | None) -> Version | None:
    """The PEP 440 version in ``text`` (surrounding blanks ignored), or None if it is not one."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return Version(text.strip())
    except InvalidVersion:
        return None


def version_sort_key(text: str | None) -> tuple[int, Version | str]:
    """A key that orders any version text semantically; unparseable text first, by its text."""
    version = parse_version(text)
    if version is None:
        return (_UNPARSED, text or "")
    return (_PARSED, version)


def _run_match(run: str) -> re.Match[str] | None:
    match = _RUN_NAME.fullmatch(run) if isinstance(run, str) else None
    if match is None:
        return None
    version = match.group("version")
    # "-v0..1" and friends pass the character class but are not versions.
    if version is not None and (".." in version or parse_version(version) is None):
        return None
    return match


def is_valid_run_name(run: str) -> bool:
    """True for ``<hex commit>`` or ``<hex commit>-v<PEP 440 version>`` and nothing else."""
    return _run_match(run) is not None


def split_run_name(run: str) -> tuple[str, str | None]:
    """``"0a62700-v0.6.4"`` -> ``("0a62700", "0.6.4")``; ``"0a62700"`` -> ``("0a62700", None)``.

    The release version is returned as written in the run name. Raises ``ValueError`` for
    anything ``is_valid_run_name`` rejects.
    """
    match = _run_match(run)
    if match is None:
        raise ValueError(f"not a gh-pages run name (<hex commit>[-v<version>]): {run!r}")
    return match.group("commit"), match.group("version")
