"""``python -m pipelines.cli``: the ``liger-warehouse`` command."""

from pipelines.cli import app

app(prog_name="liger-warehouse")
