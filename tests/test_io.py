"""The input boundary (voicebudget._io): size caps, special files, lines, JSON/YAML/TOML limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from voicebudget import ScenarioError
from voicebudget._io import (
    MAX_NESTING,
    compose_yaml,
    iter_lines,
    load_toml,
    load_yaml,
    parse_json,
    read_document,
    read_text,
    split_lines,
)


def test_size_cap_names_the_file_and_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * 3000)
    with pytest.raises(ScenarioError, match=r"big\.toml: file is 3,000 bytes, over the 2,048 bytes limit"):
        read_text(big, max_bytes=2048)
    assert read_text(big, max_bytes=3000) == "#" * 3000


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_devices_and_folders_are_refused_at_once(tmp_path: Path) -> None:
    """Refused before a byte is read (how fast: benchmarks/bench_io.py)."""
    with pytest.raises(ScenarioError, match=r"/dev/zero: is a device, not a regular file; refused"):
        read_text("/dev/zero")
    with pytest.raises(ScenarioError, match=r"/dev/zero: is a device"):
        list(iter_lines("/dev/zero"))
    with pytest.raises(ScenarioError, match="is a folder"):
        read_text(tmp_path)
    with pytest.raises(ScenarioError, match="nope.yaml: file not found"):
        read_document(tmp_path / "nope.yaml")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_a_pipe_is_read_up_to_the_cap(tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "p"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "wb") as fh:
            try:
                fh.write(b"x" * 5000)
            except BrokenPipeError:
                pass

    thread = threading.Thread(target=writer)
    thread.start()
    with pytest.raises(ScenarioError, match="over the 1,000 bytes limit"):
        read_text(fifo, max_bytes=1000)
    thread.join(5)


def test_bom_is_dropped_and_lines_split_on_newline_only(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"a": "x\xe2\x80\xa8y"}\r\n{"b": 1}\n')
    text = read_text(f)
    assert split_lines(text) == ['{"a": "x\u2028y"}', '{"b": 1}']
    assert list(iter_lines(f)) == [(1, '{"a": "x\u2028y"}'), (2, '{"b": 1}')]
    assert split_lines("a\x0cb\x85c") == ["a\x0cb\x85c"]


def test_lines_longer_than_a_chunk_come_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line over many chunks (a character split between two of them, CRLF, no final newline) is one line,
    as split_lines reads the whole text; invalid UTF-8 in it names its line (how fast: benchmarks/bench_io.py)."""
    from voicebudget._io import _files

    monkeypatch.setattr(_files, "_LINE_CHUNK", 7)
    f = tmp_path / "long.log"
    data = "short\r\n" + "é" * 40 + "x\u2028y" * 5 + "\r\n\n" + "z" * 30
    f.write_bytes(data.encode())
    assert list(iter_lines(f)) == list(enumerate(split_lines(data), start=1))
    assert [n for n, line in iter_lines(f)] == [1, 2, 3, 4]
    f.write_bytes(b"ok\n" + b"a" * 50 + b"\xff" + b"b" * 50 + b"\n")
    with pytest.raises(ScenarioError, match=r"long\.log: line 2: not UTF-8 text \(byte 50 of the line\)"):
        list(iter_lines(f, errors="strict"))


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_bytes(b'name = "x"\nx = "\xff"\n')
    with pytest.raises(ScenarioError, match=r"s\.toml: line 2: not UTF-8 text"):
        read_document(f)


def test_json_limits_become_scenario_errors() -> None:
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(ScenarioError, match=rf"t\.jsonl: line 7: JSON nested deeper than {MAX_NESTING} levels"):
        parse_json(deep, origin="t.jsonl", line=7)
    with pytest.raises(ScenarioError, match=r"t\.json: cannot parse JSON: an integer longer than 4,300 digits"):
        parse_json("[" + "9" * 4301 + "]", origin="t.json")
    with pytest.raises(ScenarioError, match=r"t\.json: line 2: cannot parse JSON: Expecting value"):
        parse_json('{\n "a": }', origin="t.json")
    with pytest.raises(ScenarioError, match="Infinity is not a number"):
        parse_json("[Infinity]", origin="t.json", allow_nan=False)
    # brackets inside strings do not count as nesting
    assert parse_json('{"a": "' + "[" * 500 + '"}', origin="t.json") == {"a": "[" * 500}
    nested: object = 1
    for _ in range(MAX_NESTING):
        nested = [nested]
    assert parse_json(str(nested), origin="t.json") == nested


def test_yaml_billion_laughs_is_refused_at_once() -> None:
    """Counted on the node graph, never expanded (how fast: benchmarks/bench_io.py)."""
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(ScenarioError, match=r"b\.yaml: line 1: cannot parse YAML: aliases expand to [\d,]+ nodes"):
        load_yaml("\n".join(levels), origin="b.yaml")
    with pytest.raises(ScenarioError, match="refers to its own parent"):
        load_yaml("a: &a [1, *a]", origin="r.yaml")


def test_yaml_merge_keys_work_and_keys_are_checked() -> None:
    doc = load_yaml("base: &b {kind: fixed, value_ms: 1}\nstage: {<<: *b, value_ms: 5}\n", origin="m.yaml")
    assert doc["stage"] == {"kind": "fixed", "value_ms": 5}
    with pytest.raises(ScenarioError, match=r"l\.yaml: line 1: .*a mapping key must be a string or number, not a list"):
        load_yaml("? [a, b]\n: 1\n", origin="l.yaml")
    with pytest.raises(ScenarioError, match=r"d\.yaml: line 3: .*duplicate key 'x'"):
        load_yaml("x: 1\ny: 2\nx: 3\n", origin="d.yaml")
    with pytest.raises(ScenarioError, match=rf"nested deeper than {MAX_NESTING} levels"):
        load_yaml("a: " + "[" * 200 + "]" * 200, origin="n.yaml")
    # control characters are refused by PyYAML's reader before parsing starts (found by the fuzzer)
    with pytest.raises(ScenarioError, match=r"c\.yaml: cannot parse YAML: .*special characters are not allowed"):
        load_yaml("a: 1\nb: \x00\n", origin="c.yaml")


def test_toml_limits() -> None:
    with pytest.raises(ScenarioError, match=rf"t\.toml: TOML nested deeper than {MAX_NESTING} levels"):
        load_toml("x = " + "[" * 1000 + "]" * 1000, origin="t.toml")
    with pytest.raises(ScenarioError, match="an integer longer than 4,300 digits"):
        load_toml("x = " + "1" * 4400, origin="t.toml")
    assert load_toml('x = "[[[[" # [[[[\n', origin="t.toml") == {"x": "[[[["}


def test_reading_allocates_the_file_size_not_the_cap(tmp_path: Path) -> None:
    # read(cap + 1) would allocate the whole 4 GiB cap up front (a MemoryError under a memory limit)
    import resource

    f = tmp_path / "t.log"
    f.write_text("x\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, hard))
    try:
        assert read_text(f, max_bytes=8 * 2**30) == "x\n"
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize(
    "text",
    ["a:\n\tb: 1\n", "a: [1\n", "a: &x [*x]\n", "[" * (MAX_NESTING + 5)],
    ids=["tab", "unclosed", "recursive", "deep"],
)
def test_composing_yaml_refuses_what_loading_refuses_in_the_same_words(text: str) -> None:
    with pytest.raises(ScenarioError) as loaded:
        load_yaml(text, origin="x.yaml")
    with pytest.raises(ScenarioError) as composed:
        compose_yaml(text, origin="x.yaml")
    assert str(composed.value) == str(loaded.value)
