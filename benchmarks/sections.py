"""Generated sections of a Markdown page: each benchmark owns the block between its markers."""

from __future__ import annotations

from pathlib import Path


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def replace_section(text: str, name: str, new: str) -> str:
    """``text`` with the block of ``name`` swapped for ``new`` (appended the first time),
    leaving every other section alone."""
    begin, end = markers(name)
    block = f"{begin}\n{new}{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        return head + block + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def write_section(path: Path, name: str, new: str) -> None:
    """Rewrite the block of ``name`` in the page at ``path`` (a new page starts as "# Performance")."""
    text = path.read_text() if path.is_file() else "# Performance\n"
    path.write_text(replace_section(text, name, new))
