"""One Dask local cluster for the tests (imported by them): in-process workers, and the dashboard on a
free port, so a port already in use (8787, Dask's default, held by a Jupyter dashboard) cannot fail the
suite (``dashboard_address=None`` still means 8787: distributed reads its configured default)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

DASK_DASHBOARD_PORT = 8787


@contextmanager
def local_client() -> Iterator[Any]:
    """A ``distributed.Client`` on a two-worker local cluster (the test is skipped without distributed)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        with distributed.Client(cl) as client:
            yield client


@contextmanager
def port_held(port: int = DASK_DASHBOARD_PORT) -> Iterator[None]:
    """Hold ``port`` busy on all interfaces for the block (when something else holds it, it is busy anyway)."""
    with socket.socket() as sock:
        try:
            sock.bind(("", port))
            sock.listen()
        except OSError:
            pass  # already in use: busy, which is what the block needs
        yield
