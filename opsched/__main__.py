"""``python -m opsched``: the same as the ``opsched`` command."""

from opsched.cli import main

main()
