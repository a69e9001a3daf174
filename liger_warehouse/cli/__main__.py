"""``python -m liger_warehouse.cli``: the ``liger-warehouse`` command."""

from liger_warehouse.cli import app

app(prog_name="liger-warehouse")
