"""``python -m liger_warehouse.cli``: the ``liger-warehouse`` command."""

from liger_warehouse.cli import main

main()
