"""The input limits: size caps by kind of input, nesting and YAML alias expansion."""

from __future__ import annotations

MAX_DOCUMENT_BYTES = 16 * 2**20
"""Largest scenario, council or tuning file read (16 MiB; the bundled ones are a few KB)."""
MAX_DATA_BYTES = 256 * 2**20
"""Largest empirical samples file (CSV/JSON) read (256 MiB: tens of millions of samples)."""
MAX_TRACE_BYTES = 4 * 2**30
"""Largest trace file read (4 GiB; a million LiveKit turns is about 1.4 GB)."""
MAX_NESTING = 100
"""Deepest nesting of lists/tables accepted in JSON, YAML and TOML (real documents stay under 20)."""
MAX_YAML_ALIAS_NODES = 100_000
"""Most nodes that YAML aliases may add when expanded (a billion-laughs document adds 10^8 and more)."""
