"""Safe writes: `fit -o` and `--plot` never replace a file without --force, never an input, and write
whole files (temporary file + os.replace), checked before any work."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from voicebudget import ScenarioError
from voicebudget._io import check_target, write_atomic
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "tests" / "data" / "traces" / "livekit-metrics.jsonl"
runner = CliRunner()


def flat(output: str) -> str:
    return " ".join(output.split())


def test_fit_refuses_an_existing_output_without_force(tmp_path: Path) -> None:
    out = tmp_path / "mine.toml"
    out.write_text("# my notes\n")
    result = runner.invoke(app, ["fit", str(TRACE), "-o", str(out)])
    assert result.exit_code == 2
    assert f"-o {out}: exists; give --force to replace it" in flat(result.output)
    assert out.read_text() == "# my notes\n"
    result = runner.invoke(app, ["fit", str(TRACE), "-o", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert "[pipeline]" in out.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["mine.toml"]  # no temporary file left


def test_fit_never_writes_over_its_own_input(tmp_path: Path) -> None:
    trace = tmp_path / "t.yaml"  # a trace whose name is also a valid output name
    shutil.copy(TRACE, trace)
    before = trace.read_bytes()
    for extra in ([], ["--force"]):
        result = runner.invoke(app, ["fit", str(trace), "-o", str(trace), *extra])
        assert result.exit_code == 2
        assert f"-o {trace}: is an input file ({trace}); refusing to write over it" in flat(result.output)
    # the same file through another name
    alias = tmp_path / "alias.yaml"
    alias.symlink_to(trace)
    result = runner.invoke(app, ["fit", str(trace), "-o", str(alias), "--force"])
    assert result.exit_code == 2
    assert "is an input file" in result.output
    assert trace.read_bytes() == before


def test_the_library_write_refuses_the_same(tmp_path: Path) -> None:
    from voicebudget.traces import fit_traces

    trace = tmp_path / "t.yml"
    shutil.copy(TRACE, trace)
    fit = fit_traces([trace], verify_samples=0)
    out = fit.write(tmp_path / "a.toml")
    with pytest.raises(ScenarioError, match=r"a\.toml: exists; give overwrite=True"):  # the CLI says --force
        fit.write(out)
    assert fit.write(out, overwrite=True) == out
    with pytest.raises(ScenarioError, match="is an input file"):
        fit.write(trace, overwrite=True)
    assert trace.read_bytes() == TRACE.read_bytes()


def test_an_interrupted_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "x.png"
    target.write_bytes(b"old")

    def half(tmp: Path) -> None:
        tmp.write_bytes(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, half)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.png"]
    write_atomic(target, "new")
    assert target.read_text() == "new"


def test_plot_targets_are_checked_before_simulating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr("voicebudget._simulate.run_scenarios", lambda *a, **k: calls.append(a))
    scenario = ROOT / "scenarios" / "webrtc-cascade.toml"
    out = tmp_path / "plot.png"
    out.write_bytes(b"mine")
    result = runner.invoke(app, ["run", str(scenario), "--plot", str(out)])
    assert result.exit_code == 2
    assert f"--plot {out}: exists; give --force to replace it" in flat(result.output)
    # several scenarios: NAME-1.png, NAME-2.png are checked too (the user never named them)
    out.unlink()
    (tmp_path / "plot-2.png").write_bytes(b"someone else's")
    result = runner.invoke(app, ["run", str(scenario), str(scenario), "--plot", str(out)])
    assert result.exit_code == 2
    assert f"--plot {tmp_path / 'plot-2.png'}: exists; give --force" in flat(result.output)
    assert calls == []  # nothing was simulated
    assert (tmp_path / "plot-2.png").read_bytes() == b"someone else's"


def test_plot_with_force_replaces_whole_files(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "plot.png"
    out.write_bytes(b"old")
    result = runner.invoke(app, ["run", "-n", "2000", "--plot", str(out), "--force", "-f", "json"])
    assert result.exit_code in (0, 1), result.output
    assert out.read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png"]


def test_check_target_refuses_folders_and_missing_folders(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="exists and is not a regular file"):
        check_target(tmp_path, overwrite=True)
    with pytest.raises(ScenarioError, match="does not exist"):
        check_target(tmp_path / "nope" / "x.toml")
    assert check_target(tmp_path / "new.toml") == tmp_path / "new.toml"


# --- the machine refuses the write (issue 22): exit 2, one line, nothing left behind ----------------------

VOICEBUDGET = [sys.executable, "-m", "voicebudget"]


def _small_file_limit() -> None:  # in the child: files over 4 KiB fail with EFBIG instead of a SIGXFSZ kill
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["hardware"], ["run", "-n", "200", "-f", "json"]])
def test_stdout_on_a_full_device_exits_2_in_one_line(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([*VOICEBUDGET, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == "error: cannot write the output: No space left on device\n"


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE (POSIX)")
def test_plot_over_the_file_size_limit_exits_2_naming_the_file(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "out.png"
    done = subprocess.run(
        [*VOICEBUDGET, "run", "-n", "200", "--plot", str(plot)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_small_file_limit,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == f"error: cannot write {plot}: File too large\n"
    assert list(tmp_path.iterdir()) == []  # neither the plot nor its temporary file


FULL_DISK = """
set -e
mount -t tmpfs -o size=16k tmpfs "$1"
"$2" -m voicebudget run -n 200 --plot "$1/out.png" > /dev/null 2> "$3" || echo "rc=$?" >> "$3"
ls -A "$1" >> "$3"
"""


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_plot_on_a_full_disk_exits_2_naming_the_file(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    disk, log = tmp_path / "disk", tmp_path / "log"
    disk.mkdir()
    # a 16 KiB tmpfs in a private user and mount namespace (no root needed where user namespaces are on)
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("user namespaces are off here (unshare -rm fails)")
    cmd = ["unshare", "-rm", "sh", "-c", FULL_DISK, "sh", str(disk), sys.executable, str(log)]
    subprocess.run(cmd, check=True, timeout=120)
    assert log.read_text() == f"error: cannot write {disk / 'out.png'}: No space left on device\nrc=2\n"


SIGTERM_MID_WRITE = """
import os, signal, sys, time
from voicebudget._io import write_atomic

def slow_plot(tmp):
    tmp.write_bytes(b"half a png")
    os.kill(os.getpid(), signal.SIGTERM)  # as `kill PID` would, while the figure is being written
    time.sleep(30)

write_atomic(sys.argv[1], slow_plot)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")
def test_sigterm_during_a_write_removes_the_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "out.png"
    target.write_bytes(b"the old plot")
    done = subprocess.run([sys.executable, "-c", SIGTERM_MID_WRITE, str(target)], timeout=60)
    assert done.returncode == -signal.SIGTERM  # still ended by the signal, as without the cleanup
    assert [p.name for p in tmp_path.iterdir()] == ["out.png"]  # no .out.png.*.tmp left
    assert target.read_bytes() == b"the old plot"
