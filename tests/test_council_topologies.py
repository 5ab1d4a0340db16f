"""Council topologies are objects, one module each, chosen by ``topology`` (issue 23, item 2)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from numpy.typing import NDArray
from pydantic import ValidationError
from typer.testing import CliRunner

from voicebudget.cli import app
from voicebudget.councils import Council, evaluate_council
from voicebudget.councils._latency import CouncilSamples
from voicebudget.councils._topologies import TOPOLOGIES, get_topology
from voicebudget.councils._topologies._base import ParallelTopology, QualityResult
from voicebudget.tuning import tune_council

runner = CliRunner()
KNOWN = "known: all, first_k, vote, router, cascade"


def _members(*latencies_and_p: tuple[float, float]) -> list[dict[str, object]]:
    return [
        {
            "name": f"m{i}",
            "p": p,
            "output_usd_per_mtok": 1.0,
            "output_tokens": 10,
            "stage": {"kind": "fixed", "value_ms": ms},
        }
        for i, (ms, p) in enumerate(latencies_and_p)
    ]


def test_an_unknown_topology_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=f"unknown topology 'fastest'; {KNOWN}"):
        Council.model_validate({"topology": "fastest", "members": _members((100.0, 0.6))})
    with pytest.raises(ValueError, match=f"unknown topology 'x'; {KNOWN}"):
        get_topology("x")
    path = tmp_path / "c.toml"
    path.write_text(
        'topology = "fastest"\n[[members]]\nname = "a"\np = 0.6\nstage = { kind = "fixed", value_ms = 1 }\n'
    )
    out = runner.invoke(app, ["council", str(path)])
    assert out.exit_code == 2
    assert f"topology: unknown topology 'fastest'; {KNOWN}" in out.output
    search = path.read_text().replace('"fastest"', '"all"') + '[search]\ntopology = ["all", "nope"]\n'
    path.write_text(search)
    with pytest.raises(Exception, match=f"unknown topology 'nope'; {KNOWN}"):
        tune_council(path)


def test_the_schema_lists_the_registered_topologies() -> None:
    topology = Council.model_json_schema()["$defs"]["Council"]["properties"]["topology"]
    assert topology == {"enum": list(TOPOLOGIES), "title": "Topology", "type": "string"}  # as the Literal gave


def test_each_council_uses_its_topology_object() -> None:
    for name, topology in TOPOLOGIES.items():
        assert topology.name == name
    council = Council.model_validate({"topology": "first_k", "k": 1, "members": _members((100.0, 0.6), (200.0, 0.9))})
    assert council.topology_model is TOPOLOGIES["first_k"]
    res = evaluate_council(council, samples=1000, seed=1)
    assert res.report.total.p95_ms == 100.0  # the first of two fixed members
    assert res.quality.accuracy == pytest.approx(0.6)  # that member's answer, k = 1
    assert res.cost_per_turn_usd == pytest.approx(2 * 10 * 1.0 / 1e6)  # both are launched


class _Fastest(ParallelTopology):
    """A made-up topology for the test: the first member in answers alone (first_k at k = 1, no knob)."""

    name: ClassVar[str] = "fastest"

    def finish(
        self, council: Council, lat: NDArray[np.float64], seed: int
    ) -> tuple[NDArray[np.intp], NDArray[np.bool_], NDArray[np.float64]]:
        which = np.argmin(lat, axis=0)
        read = np.zeros_like(lat, dtype=bool)
        read[which, np.arange(lat.shape[1])] = True
        return which, read, np.empty(0)

    def quality(self, council: Council, draws: CouncilSamples) -> QualityResult:
        p = np.asarray(council.p)
        return QualityResult(float((p @ draws.read).mean()), "exact", 0.0, max(council.p))


def test_a_new_topology_is_its_object_and_one_registry_entry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(TOPOLOGIES, "fastest", _Fastest())
    members = _members((100.0, 0.6), (200.0, 0.9))
    council = Council.model_validate({"topology": "fastest", "members": members})
    res = evaluate_council(council, samples=2000, seed=1)
    assert res.report.total.p95_ms == 100.0
    assert res.quality.accuracy == pytest.approx(0.6)
    assert res.cost_per_turn_usd == pytest.approx(2e-5)
    assert res.tail_driver == "m0"
    with pytest.raises(ValidationError, match="an aggregator reads several answers"):
        Council.model_validate(
            {"topology": "router", "members": members, "aggregator": {"ttft": {"kind": "fixed", "value_ms": 1}}}
        )
    # the tuner searches it like any other: fastest answers at 100 ms with the weaker member
    path = tmp_path / "t.toml"
    path.write_text(
        'topology = "all"\n[budget]\ntotal_ms = 1000\n[search]\ntopology = ["all", "fastest"]\n'
        + "".join(
            f'[[members]]\nname = "{m["name"]}"\np = {m["p"]}\noutput_tokens = 10\noutput_usd_per_mtok = 1.0\n'
            f'stage = {{ kind = "fixed", value_ms = {m["stage"]["value_ms"]} }}\n'  # type: ignore[index]
            for m in members
        )
    )
    tuned = tune_council(path, samples=500, refine_samples=500)
    by_topology = {c.config["topology"]: c for c in tuned.pareto}
    assert set(by_topology) == {"all", "fastest"}
    assert by_topology["fastest"].p95_ms == 100.0
    assert by_topology["all"].p95_ms == 200.0
    assert by_topology["fastest"].quality == pytest.approx(0.6)
