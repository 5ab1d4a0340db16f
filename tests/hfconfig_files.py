"""Write a Hugging Face ``config.json`` for the ``--model-config`` tests (imported by the tests)."""

from __future__ import annotations

import json
from pathlib import Path


def write_config(tmp_path: Path, name: str, cfg: dict[str, object]) -> Path:
    """``tmp_path/name/config.json`` holding ``cfg``; returns its path."""
    d = tmp_path / name
    d.mkdir()
    p = d / "config.json"
    p.write_text(json.dumps(cfg), encoding="utf-8")
    return p
