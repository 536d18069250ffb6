import subprocess
import sys
from pathlib import Path

from harp_lib.cli import COMMANDS, main


def test_help_lists_every_stage(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("synth", "extract", "index", "infer", "judge", "tables", "doctor"):
        assert name in out


def test_unknown_stage(capsys):
    assert main(["frobnicate"]) == 2
    assert "unknown stage" in capsys.readouterr().err


def test_console_script_installed():
    exe = Path(sys.executable).with_name("harp")
    out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, check=True).stdout
    assert all(name in out for name in COMMANDS)
