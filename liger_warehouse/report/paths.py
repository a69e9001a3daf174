"""Where each file of a report lives, relative to the report's directory (no drawing, no storage)."""

from __future__ import annotations

import hashlib
import re

INDEX = "index.html"
KERNELS = "kernels"
# Vega, Vega-Lite and vega-embed, written once per report at its root; every page loads it.
SCRIPT = "vega-bundle.js"
# A kernel name is its page's file name when it is a plain one (``dyt_beta=False`` is): no path
# separator, no leading dot, nothing a URL or a shell would have to quote beyond ``=`` and ``+``.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.=+-]{0,150}")


def kernel_path(kernel: str) -> str:
    """The path of ``kernel``'s page inside a report: ``kernels/<kernel>.html``, or, for a name
    that is no plain file name, its slug and a hash of it."""
    if PLAIN_NAME.fullmatch(kernel):
        return f"{KERNELS}/{kernel}.html"
    slug = re.sub(r"[^A-Za-z0-9_]+", "-", kernel).strip("-")[:80] or "kernel"
    return f"{KERNELS}/{slug}-{hashlib.sha256(kernel.encode()).hexdigest()[:8]}.html"


def script_src(page: str) -> str:
    """The relative URL of the report's script from the page at ``page`` (``index.html`` or
    ``kernels/<kernel>.html``): no network, and the set can move as a whole."""
    return "../" * page.count("/") + SCRIPT
