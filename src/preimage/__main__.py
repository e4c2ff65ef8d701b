"""``python -m preimage`` runs the CLI."""

from preimage.cli import main

main()
