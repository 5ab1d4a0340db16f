"""Names from the user's files are printed and drawn as written (issue 22: the fuzzer's exit 3 ``MarkupError:
closing tag '[/x]'`` from a hardware TOML's id was one case of a kind).

rich reads ``[...]`` as markup in table cells, titles, captions and ``Text.from_markup``: a ``[/q]`` in any
name raised ``MarkupError`` (exit 3), a ``[b]`` vanished. matplotlib reads ``$...$`` as TeX: ``a$^$`` as a
stage name raised ``ValueError`` when the plot was saved. Each command below gets the smallest files whose
every name (scenario, stage, variant, description, council, member, chip id, model folder, turn id, measure,
file path) carries the markup, and must print each as written, never with rich's escape backslash."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "tests" / "data" / "traces"
runner = CliRunner()

FIXED = '{ kind = "fixed", value_ms = 1 }'
COUNCIL = (
    'kind = "council"\nname = "c[/q]"\ntopology = "all"\n'
    '[[members]]\nname = "a[/q]"\np = 0.8\nstage = { kind = "fixed", value_ms = 100 }\n'
    '[[members]]\nname = "b[/q]"\np = 0.9\nstage = { kind = "sequence", stages."x[/q]" = '
    '{ kind = "lognormal", p50_ms = 100, p95_ms = 200 } }\n'
    "[search]\nmembers = { n = [1, 2] }\n"
)


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "250"})  # no name broken over lines
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def folder(tmp_path: Path) -> Path:
    """``tmp_path/d[/q]``: every file path in the output carries the markup too (``d[`` holds ``q]``)."""
    path = tmp_path / "d[" / "q]"
    path.mkdir(parents=True)
    return path


def run(d: Path) -> list[str | Path]:
    (d / "s.toml").write_text(
        f'name = "n[/q]"\n[pipeline]\nkind = "sequence"\nstages."a[/q]" = {FIXED}\n'
        'stages."c[/q]" = { kind = "council", name = "k[/q]", topology = "all", members = ['
        f'{{ name = "m[/q]", p = 0.8, stage = {FIXED} }}, {{ name = "m2[b]", p = 0.8, stage = {FIXED} }}] }}\n'
        '[variants."v[/q]"]\ndescription = "d[b]"\n'
    )
    return ["run", d / "s.toml", "-n", "200"]


def council(d: Path) -> list[str | Path]:
    (d / "c.toml").write_text(COUNCIL)
    return ["council", d / "c.toml", "-n", "200"]


def tune(d: Path) -> list[str | Path]:
    (d / "c.toml").write_text(COUNCIL)
    return ["tune", d / "c.toml", "-n", "200", "--workers", "1"]


def council_fit(d: Path) -> list[str | Path]:
    rows = [f"{i},{m},{a},{int(a == 'x')}" for i in (1, 2, 3) for m, a in (("a[/q]", "x"), ("b[b]", "y[/q]"))]
    (d / "logs.csv").write_text("item,member,answer,correct\n" + "\n".join(rows) + "\n")
    return ["council-fit", d / "logs.csv"]


def infer_chip(d: Path) -> list[str | Path]:
    text = (ROOT / "docs" / "examples" / "l40s.toml").read_text()
    (d / "chip.toml").write_text(text.replace('id = "l40s-example"', 'id = "l[/q]"'))
    return ["infer", "--hardware-config", d / "chip.toml", "-m", "llama-3.1-8b"]


def infer_model(d: Path) -> list[str | Path]:
    (d / "m[b]x").mkdir()
    config = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8}
    config |= {"intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072}
    (d / "m[b]x" / "config.json").write_text(json.dumps(config))
    return ["infer", "--model-config", d / "m[b]x" / "config.json", "-H", "h100-sxm", "--request-rate", "1"]


def capacity(d: Path) -> list[str | Path]:
    text = (ROOT / "scenarios" / "support-line.toml").read_text()
    text = re.sub(r'^name = "(.*)"', r'name = "\1 [/q]"', text, count=1, flags=re.M)
    (d / "cap.toml").write_text(text.replace("[variants.h200]", '[variants."h200[/q]"]'))
    return ["capacity", d / "cap.toml", "-n", "300"]


def endpointing(d: Path) -> list[str | Path]:
    text = (ROOT / "scenarios" / "semantic-turn-detector.yaml").read_text()
    (d / "e.yaml").write_text(text.replace("\n  vad-only:", '\n  "vad-only[/q]":'))
    return ["endpointing", d / "e.yaml", "--pauses", ROOT / "docs" / "examples" / "pauses-call-center.toml"]


def guard_report(d: Path) -> list[str | Path]:
    endpointing(d)
    return ["guard-report", d / "e.yaml", "--variant", "vad-only[/q]", "-n", "500", "--guard-turns", "500"]


def check(d: Path) -> list[str | Path]:
    text = (TRACES / "livekit-metrics.jsonl").read_text()
    (d / "t[b].jsonl").write_text(re.sub(r'"speech_id": "([^"]*)"', r'"speech_id": "\1[/q]"', text))
    return ["check", d / "t[b].jsonl"]


def compare(d: Path) -> list[str | Path]:
    code, out = invoke("check", TRACES / "livekit-metrics.jsonl", "-f", "json")
    (d / "new.json").write_text(out[out.index("{") :].replace("llm_ttft", "l[/q]m"))
    assert invoke("baseline", "pin", d / "new.json", "-o", d / "base.json")[0] == 0
    return ["compare", d / "base.json", d / "new.json", "--allow-few-turns"]


CASES: dict[str, tuple[Callable[[Path], list[str | Path]], int, list[str]]] = {
    "run": (run, 0, ["n[/q]", "a[/q]", "c[/q]", "└ m[/q]", "└ m2[b]", "variant: v[/q] (ms)", "d[b]", "v[/q] "]),
    "council": (council, 0, ["c[/q] [all] (ms)", "a[/q]", "b[/q]", "tail driver: b[/q]"]),
    "tune": (tune, 0, ["c[/q]: exhaustive", "b[/q]"]),
    "council-fit": (council_fit, 0, ["d[/q]/logs.csv", "p (a[/q])", "p (b[b])"]),
    "infer chip": (infer_chip, 0, ["llama-3.1-8b on 1 x l[/q] (bf16)"]),
    "infer model": (infer_model, 0, ["m[b]x on 1 x h100-sxm (bf16) at 1 requests/s"]),
    "capacity": (capacity, 0, ["500 concurrent calls [/q]:", "h200[/q]"]),
    "endpointing": (endpointing, 0, ["vad-only[/q]"]),
    "guard-report": (guard_report, 0, ["e.yaml vad-only[/q]: 500 turns replayed"]),
    "check": (check, 1, ["t[b].jsonl", "speech_010007[/q]"]),
    "compare": (compare, 0, ["l[/q]m"]),
}


@pytest.mark.parametrize("command", sorted(CASES))
def test_markup_in_every_name_is_printed_as_written(tmp_path: Path, command: str) -> None:
    make, code, names = CASES[command]
    args = make(folder(tmp_path))
    got, output = invoke(*args)
    assert got == code, output  # was exit 3: MarkupError: closing tag '[/q]' ... doesn't match any open tag
    for name in names:
        assert name in output, name
    assert "\\[" not in output  # rich's escape never shows


def test_control_characters_in_a_name_are_shown_not_sent_to_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"  # an ESC sequence in a stage name would colour (or clear) the user's terminal
    path.write_text(f'name = "n\\u0007"\n[pipeline]\nkind = "sequence"\nstages."e\\u001b[31m" = {FIXED}\n')
    code, output = invoke("run", path, "-n", "200")
    assert code == 0, output
    assert "e\\x1b[31m" in output
    assert "n\\x07" in output
    assert "\x1b" not in output
    code, output = invoke("run", tmp_path / "missing\x1b[2J.toml")
    assert code == 2
    assert "missing\\x1b[2J.toml" in output  # an error line too
    assert "\x1b" not in output


@pytest.mark.parametrize("command", ["run", "council", "endpointing"])
def test_a_dollar_in_a_name_is_drawn_as_written(tmp_path: Path, command: str) -> None:
    pytest.importorskip("matplotlib")
    d = folder(tmp_path)
    args = {"run": run, "council": council, "endpointing": endpointing}[command](d)
    for path in d.iterdir():
        if path.is_file():  # a '$' pair around a name's markup: mathtext's parser refused 'a$^$' when saving
            path.write_text(path.read_text().replace("[/q]", "$^$"))
    code, output = invoke(*args, "--plot", d / "out.png")
    assert code == 0, output  # was exit 3: ValueError: ... ParseSyntaxException
    assert (d / "out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
