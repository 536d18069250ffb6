"""The ``harp`` command: one CLI layer for every pipeline stage, for scripts and SLURM users.

Every subcommand gets the same shared options, parsed and applied here once::

    --profile P       params.yaml profile (mini | ci | paper; default: $HARP_PROFILE, then the file's)
    --params FILE     another params.yaml (default: the repository's)
    -S KEY=VALUE      override a params key for this run (repeatable), e.g. -S agent.top_k=1
    --debug           show the traceback of an error (and debug logging)
    --quiet           no progress bars

A stage module contributes two functions: ``add_arguments(parser)`` for its own options and
``run(cfg, args) -> int`` with the validated :class:`~harp_lib.config.Config`.  Every stage module
is imported here; ``harp --help`` stays quick because heavy libraries (torch, scipy, pandas, ...)
are imported only inside the functions that use them (tests/test_local_imports.py).

Errors of our own kinds (a bad params value, bad input, a missing file, weights or backend)
are printed as one line naming the cause and what to do; the traceback is shown only with
``--debug``.  Exit code 2 for a usage error (the command line, params, a manifest, a path that
does not exist), 1 for a fault (:func:`is_fault`: storage, a corrupt index input, the LLM).

>>> sorted(COMMANDS)[:3]
['ask', 'bench', 'doctor']
"""
from __future__ import annotations

import argparse
import difflib
import logging
import sys
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from harp_lib.agent import runner
from harp_lib.app import doctor, fetch_weights, sweep, verify
from harp_lib import __version__, bench
from harp_lib.config import load_config
from harp_lib.corpora.datasets import cli as datasets_cli
from harp_lib.corpora.synth import cli as synth_cli
from harp_lib.evaluate import figures, human, judge, paraphrases, scoring, tables
from harp_lib.extract import pipeline as extract_pipeline
from harp_lib.extract import quality
from harp_lib.llm import probe as llm_probe
from harp_lib.ownaudio import ask, ingest
from harp_lib.retrieval import index_stage
from harp_lib.core.errors import HarpError

__all__ = ["Command", "COMMANDS", "main", "run_command", "add_shared_options", "user_error_types",
           "one_line"]


@dataclass(frozen=True)
class Command:
    """A ``harp`` subcommand: its help line, the functions that add its options and run it, and
    the params profile it uses when neither ``--profile`` nor ``$HARP_PROFILE`` is given.  ``about``
    is the parser's description (the first paragraph of the command's module, :func:`about`); the
    help line when empty."""
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[..., Optional[int]]
    profile: Optional[str] = None
    about: str = ""


def about(module) -> str:
    """The first paragraph of a module's docstring: a command's ``--help`` description."""
    return (module.__doc__ or "").strip().split("\n\n")[0]


COMMANDS: dict[str, Command] = {
    "synth": Command("generate the built-in benchmark (recordings, references, ground truth, queries)",
                     synth_cli.add_arguments, synth_cli.run, about=about(synth_cli)),
    "extract": Command("stage 1 + 2: segment, transcribe, embed and label recordings",
                       extract_pipeline.add_arguments, extract_pipeline.run, about=about(extract_pipeline)),
    "quality": Command("extraction quality (VAD F1, DER, WER, ...) against ground truth",
                       quality.add_arguments, quality.run, about=about(quality)),
    "index": Command("build FAISS and keyword indexes from extracted segments", index_stage.add_arguments,
                     index_stage.run, about=about(index_stage)),
    "infer": Command("run the agent (plan, retrieve, answer) for one domain and setup", runner.add_arguments,
                     runner.run, about=about(runner)),
    "judge": Command("grade predictions (answer, factual, faithful) with rule or LLM judges", judge.add_arguments,
                     judge.run, about=about(judge)),
    "score": Command("hit rates and per-query scores from predictions and judgements", scoring.add_arguments,
                     scoring.run, about=about(scoring)),
    "tables": Command("write Table II, hit-rate and judge-agreement tables", tables.add_arguments, tables.run,
                      about=about(tables)),
    "figures": Command("draw the paper's figures", figures.add_arguments, figures.run, about=about(figures)),
    "human": Command("build human-study annotation pages and score returned answers", human.add_arguments,
                     human.run, about=about(human)),
    "sweep": Command("sweep params keys over setups and domains into one table", sweep.add_arguments, sweep.run,
                     about=about(sweep)),
    "prepare": Command("prepare the paper's corpora (LongEmo, MedMosaic, SongEval) into our schema",
                       datasets_cli.add_arguments, datasets_cli.run, profile="paper", about=about(datasets_cli)),
    "doctor": Command("check weights, tokens, servers and files needed by a profile", doctor.add_arguments,
                      doctor.run, about=about(doctor)),
    "llm-probe": Command("check that an OpenAI-compatible server hears the whole audio clip", llm_probe.add_arguments,
                         llm_probe.run, about=about(llm_probe)),
    "fetch-weights": Command("download the checkpoints a profile's paper backends load (online, explicit)",
                             fetch_weights.add_arguments, fetch_weights.run, about=about(fetch_weights)),
    "paraphrase-eval": Command("plan hit rate and answer accuracy on questions in other words (paraphrase set)",
                               paraphrases.add_arguments, paraphrases.run, about=about(paraphrases)),
    "ingest": Command("add your own recordings (any audio format): convert, extract, index",
                      ingest.ingest_add_arguments, ingest.ingest_run),
    "ask": Command("ask a free-text question about an ingested recording", ask.ask_add_arguments, ask.ask_run),
    "bench": Command("measure speed and memory; write results/bench/", bench.add_arguments, bench.run,
                     about=about(bench)),
    "verify": Command("after dvc repro: which committed outputs differ, the first stage, the first words",
                      verify.add_arguments, verify.run, about=about(verify)),
}


def add_shared_options(ap: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """The options every subcommand takes (``suppress``: for nested sub-parsers, so that an
    option given before the nested command is not reset by the nested parser's default)."""
    d = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
    g = ap.add_argument_group("shared options")
    g.add_argument("--profile", default=d(None),
                   help="params.yaml profile: mini | ci | paper (default: $HARP_PROFILE, then the file's `profile`)")
    g.add_argument("--params", default=d(None), metavar="FILE", help="params.yaml to read (default: the repository's)")
    g.add_argument("-S", "--override", action="append", default=d([]), metavar="KEY=VALUE",
                   help="override a params.yaml key for this run (repeatable), e.g. -S agent.top_k=1")
    g.add_argument("--debug", action="store_true", default=d(False), help="show tracebacks and debug logging")
    g.add_argument("--quiet", action="store_true", default=d(False), help="no progress bars")


def user_error_types() -> tuple[type, ...]:
    """Exceptions that report a problem with the user's input, files, setup or machine (not a bug):
    every :class:`~harp_lib.core.errors.HarpError`, and the file-system errors of the standard library."""
    return (HarpError, FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError,
            OSError)                                   # OSError: read-only, full, ...


def is_fault(e: BaseException) -> bool:
    """A fault of the machine or the data (exit 1): a :class:`~harp_lib.core.errors.HarpError` whose
    ``fault`` is set (storage: :class:`~harp_lib.core.atomic.StorageError`; a corrupt index input; an
    LLM that failed), or an ``OSError`` other than a wrong path.  Anything else the user can fix in
    the command line, params or manifests is a usage error (exit 2).

    >>> from harp_lib.retrieval.index_errors import CorruptIndexInput, IndexError_
    >>> is_fault(PermissionError(13, "Permission denied", "/x")), is_fault(FileNotFoundError(2, "No such file"))
    (True, False)
    >>> is_fault(CorruptIndexInput("x.npy: complex vectors")), is_fault(IndexError_("no index: run harp index"))
    (True, False)
    """
    if isinstance(e, HarpError):
        return bool(e.fault)
    if isinstance(e, (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)):
        return False
    return isinstance(e, OSError)


def one_line(e: BaseException) -> str:
    """The message of ``e`` on one line (KeyError's repr quotes are dropped)."""
    msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
    if isinstance(e, OSError) and e.filename and not str(msg).count(str(e.filename)):
        msg = f"{e.filename}: {e.strerror or msg}"
    return "; ".join(part.strip() for part in str(msg).splitlines() if part.strip()) or type(e).__name__


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: harp <stage> [options]   (harp <stage> --help for its options)", "",
             "HARP reproduction pipeline stages:"]
    lines += [f"  {n:<{width}}  {c.help}" for n, c in COMMANDS.items()]
    lines += ["", "shared options (every stage): --profile P, --params FILE, -S KEY=VALUE, --debug, --quiet"]
    return "\n".join(lines)


def build_parser(name: str) -> argparse.ArgumentParser:
    cmd = COMMANDS[name]
    ap = argparse.ArgumentParser(prog=f"harp {name}", description=cmd.about or cmd.help)
    cmd.add_arguments(ap)
    add_shared_options(ap)
    for action in ap._actions:                    # nested commands (`harp human build --profile ci`)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                add_shared_options(sub, suppress=True)
    return ap


def run_command(name: str, argv: Sequence[str] = ()) -> int:
    """Parse ``argv`` for subcommand ``name``, load and validate the config, run the stage."""
    cmd = COMMANDS[name]
    args = build_parser(name).parse_args(list(argv))
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        cfg = load_config(args.params, args.profile or cmd.profile, args.override)
        return int(cmd.run(cfg, args) or 0)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"harp {name}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - sorted below: ours -> one line, others -> traceback
        if args.debug or not isinstance(e, user_error_types()):
            raise
        print(f"harp {name}: error: {one_line(e)} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1 if is_fault(e) else 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        print(__version__)
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, list(COMMANDS), n=1)
        print(f"harp: unknown stage {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
              + f"\n\n{_usage()}", file=sys.stderr)
        return 2
    return run_command(name, rest)


if __name__ == "__main__":
    sys.exit(main())
