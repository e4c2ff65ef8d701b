"""``python -m preimage`` runs the CLI (``hook`` on its light path)."""

from preimage._entry import main

main()
