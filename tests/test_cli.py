import os
import subprocess
import sys
from pathlib import Path

import pytest

from harp_lib.app.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]


def test_help_lists_every_stage(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("synth", "extract", "index", "infer", "judge", "tables", "doctor", "sweep", "bench"):
        assert name in out
    assert "-S KEY=VALUE" in out


def test_unknown_stage(capsys):
    assert main(["idnex"]) == 2
    assert "unknown stage 'idnex' (did you mean 'index'?)" in capsys.readouterr().err


def test_console_script_installed():
    exe = Path(sys.executable).with_name("harp")
    out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, check=True).stdout
    assert all(name in out for name in COMMANDS)


def test_every_stage_has_the_shared_options():
    from harp_lib.app.cli import build_parser
    for name in COMMANDS:
        ap = build_parser(name)
        opts = {o for a in ap._actions for o in a.option_strings}
        assert {"--profile", "--params", "-S", "--debug", "--quiet"} <= opts, name


# ----------------------------------------------------------- subprocess: errors are one line, exit 2
@pytest.fixture()
def empty_root(tmp_path):
    """A project folder with the committed params.yaml and no data at all."""
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    return tmp_path


def harp(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HARP_ROOT=str(root), PYTHONPATH=str(REPO))
    env.pop("HARP_PROFILE", None)
    return subprocess.run([sys.executable, "-m", "harp_lib.app.cli", *args], capture_output=True, text=True,
                          cwd=root, env=env, timeout=300)


def _one_line_error(p: subprocess.CompletedProcess, stage: str, *needles: str) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"harp {stage}: error: ") and lines[0].endswith("(rerun with --debug for the traceback)")
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_index_without_extraction_is_one_line(empty_root):
    p = harp(empty_root, "index", "--domain", "emotion")
    _one_line_error(p, "index", "segments", "run `harp extract` first")


def test_judge_without_benchmark_is_one_line(empty_root):
    p = harp(empty_root, "judge", "--domain", "emotion", "--setup", "A1")
    _one_line_error(p, "judge", "queries.jsonl", "build the benchmark")


def test_score_without_predictions_is_one_line(empty_root):
    p = harp(empty_root, "score", "--domain", "emotion", "--setup", "A1")
    _one_line_error(p, "score", "queries.jsonl: no queries", "build the benchmark first")


def test_unknown_setup_is_one_line(empty_root):
    p = harp(empty_root, "judge", "--domain", "emotion", "--setup", "A9")
    _one_line_error(p, "judge", "unknown setup 'A9'", "A1, A2")


@pytest.mark.slow
def test_config_errors_are_one_line_and_debug_shows_the_traceback(empty_root):
    p = harp(empty_root, "index", "-S", "agent.top_k=-1")
    _one_line_error(p, "index", "agent.top_k = -1 is out of range; allowed: >= 1")
    p = harp(empty_root, "score", "-S", "agent.top_kk=2")
    _one_line_error(p, "score", "unknown key agent.top_kk (did you mean agent.top_k?)")
    bad = empty_root / "bad.yaml"
    bad.write_text((REPO / "params.yaml").read_text().replace("  workers: 2   ", "  workers: 0   "))
    p = harp(empty_root, "judge", "--params", str(bad))
    _one_line_error(p, "judge", "extract.workers = 0 is out of range")
    p = harp(empty_root, "index", "--profile", "papr")
    _one_line_error(p, "index", "unknown profile 'papr' (did you mean paper?)")
    p = harp(empty_root, "index", "-S", "agent.top_k=-1", "--debug")
    assert p.returncode != 0 and "Traceback" in p.stderr and "ConfigError" in p.stderr


def test_negative_limit_is_refused(empty_root):
    p = harp(empty_root, "infer", "--domain", "emotion", "--setup", "A1", "--limit", "-1")
    assert p.returncode == 2 and "-1 is out of range; allowed: an integer >= 1" in p.stderr
    assert "Traceback" not in p.stderr
