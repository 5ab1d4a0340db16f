"""How ``pytest -n auto`` spreads the suite (pytest-xdist's ``pytest_xdist_auto_num_workers`` and
``pytest_xdist_make_scheduler`` hooks, from tests/conftest.py).

About half of the workers' time is real time (262 of 529 s on 2026-12-02): Pipecat and LiveKit conversations
that wait their scripted delays, sleeps timed by the checker. A worker in such a test leaves its core idle. So
``-n auto`` starts two workers more than the machine has cores, and the first two workers are the real-time
lanes: they take the tests of :data:`REALTIME` (at most two conversations at once, whatever the machine), the
others take the rest; a lane with nothing of its kind left takes the other kind. Within that, tests go out one
at a time, as ``--dist load`` sends them, except that

- the tests of a module in :data:`ONE_WORKER` go to one worker together, so its module-scoped fixtures (a
  conversation, a recorded call) run once in the suite, not once per worker;
- the longest tests go out first (:data:`FIRST`): a long test that starts last keeps one worker busy while the
  others have nothing left to do.

pytest-xdist's own ``--dist loadgroup`` (``xdist_group`` marks) could not keep a module on one worker here:
with pytest 9.2 its marks no longer reach the scheduler (it renames the test's node id, which pytest 9.2 no
longer reads; pytest-dev/pytest-xdist#1386, open on 2026-12-02), so every test was sent out on its own and
the matrix's conversations ran once per worker.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import PurePosixPath

import pytest
from xdist.plugin import pytest_xdist_auto_num_workers as xdist_auto_num_workers
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

REALTIME_LANES = 2
"""Workers added to the cores under ``-n auto``, and the most tests of :data:`REALTIME` that run at once."""

REALTIME = frozenset(
    {
        "test_audio_join",
        "test_checker",
        "test_conformance_matrix",
        "test_conformance_pipecat",
        "test_doc_outputs",
        "test_livekit_hook",
        "test_pipecat",
        "test_pipecat_audio",
        "test_predicted",
        "test_telemetry_frameworks",
        "test_telemetry_prometheus",
        "test_testing",
    }
)
"""Modules that run Pipecat or LiveKit conversations, or time real sleeps, in real time."""

ONE_WORKER: dict[str, str] = {
    "test_conformance_matrix": "function",  # one unit per framework: each has its own module fixture
    "test_audio_join": "module",
    "test_audio": "module",
    "test_conformance_pipecat": "module",
    "test_livekit_conformance": "module",
    "test_endpointing_frontier": "module",
}
"""Modules whose tests share a module-scoped fixture, longest first: ``module``, all its tests on one worker;
``function``, each test function's cases on one worker (a fixture per function)."""

FIRST: tuple[str, ...] = (
    # real time: the matrix's two conversations, then the longest single tests
    "test_conformance_matrix",
    "test_predicted",
    "test_testing",
    "test_audio_join",
    "test_conformance_pipecat",
    # the rest: the modules of ONE_WORKER, then the longest single tests
    "test_audio",
    "test_livekit_conformance",
    "test_endpointing_frontier",
    "test_tuning_noise",
    "test_inference_cli",
    "test_inference_measurements",
    "test_tuning_as_written",
    "test_ci_job",
    "test_baseline_stats",
    "test_plugin",
    "test_tuning",
)
"""The order the tests go out in, by module, before every other module's: the longest tests (tens of seconds: a
real-time conversation, five tunings, a pytest run in a subprocess) and the modules of :data:`ONE_WORKER` (a
worker low on tests is sent its next unit while it still runs one: a whole module queued behind a long test
would wait while the others idle)."""


def module(nodeid: str) -> str:
    """The test's module name (``tests/test_io.py::test_x`` -> ``test_io``)."""
    return PurePosixPath(nodeid.partition("::")[0]).stem


def unit(nodeid: str) -> str:
    """The work unit a test belongs to: its module or its function for :data:`ONE_WORKER`, else itself."""
    path, _, name = nodeid.partition("::")
    how = ONE_WORKER.get(module(nodeid))
    if how == "module":
        return path
    if how == "function":
        return f"{path}::{name.partition('[')[0]}"
    return nodeid


def rank(nodeid: str) -> int:
    """Where a test's unit goes in the queue: :data:`FIRST`'s order, then every other module."""
    return FIRST.index(module(nodeid)) if module(nodeid) in FIRST else len(FIRST)


def auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: pytest-xdist's count (the cores, or ``PYTEST_XDIST_AUTO_NUM_WORKERS``) plus the real-time
    lanes; the variable, when set, is taken as it is."""
    import os

    cores = xdist_auto_num_workers(config)
    return cores if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") else cores + REALTIME_LANES


class UnitScheduling(LoadScopeScheduling):
    """pytest-xdist's ``loadscope`` scheduler on the units of :func:`unit`, queued by :func:`rank`, the units of
    :data:`REALTIME` modules on the real-time lanes."""

    lanes: frozenset[WorkerController] = frozenset()
    index: dict[str, int]
    """A test's place in the collection (what a worker is sent)."""

    def _split_scope(self, nodeid: str) -> str:
        return unit(nodeid)

    def schedule(self) -> None:
        """LoadScopeScheduling's ``schedule`` with the queue in :func:`rank` order (collection order within a
        rank) rather than by the units' sizes, and the lanes chosen."""
        assert self.collection_is_completed
        if self.collection is not None:  # a node came up late: the first distribution is done
            for node in self.nodes:
                self._reschedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        if not self.collection:
            return
        self.index = {nodeid: i for i, nodeid in enumerate(self.collection)}
        units: dict[str, dict[str, bool]] = {}
        for nodeid in self.collection:
            units.setdefault(unit(nodeid), {})[nodeid] = False
        self.workqueue = OrderedDict(sorted(units.items(), key=lambda kv: rank(next(iter(kv[1])))))
        for _ in range(len(self.nodes) - len(self.workqueue)):  # more workers than units
            node, _work = self.assigned_work.popitem()
            node.shutdown()
        # with one or two workers, one lane; a single worker runs everything
        self.lanes = frozenset(self.nodes[: min(REALTIME_LANES, len(self.nodes) - 1)])
        for node in self.nodes:
            self._assign_work_unit(node)
        for node in self.nodes:
            self._reschedule(node)
        if not self.workqueue:
            for node in self.nodes:
                node.shutdown()

    def _assign_work_unit(self, node: WorkerController) -> None:
        """Send ``node`` the first queued unit of its kind (real time on a lane, the rest elsewhere), or of the
        other kind when none is left."""
        assert self.workqueue
        lane = node in self.lanes
        scope = next((s for s in self.workqueue if (module(s) in REALTIME) == lane), next(iter(self.workqueue)))
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        node.send_runtest_some([self.index[nodeid] for nodeid, done in work_unit.items() if not done])
