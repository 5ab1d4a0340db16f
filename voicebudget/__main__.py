"""``python -m voicebudget``: the command line."""

from __future__ import annotations

from voicebudget.cli import main

main()
