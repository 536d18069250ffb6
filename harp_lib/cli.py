"""The ``harp`` command: one subcommand per pipeline stage, for scripts and SLURM users.

Each subcommand lives in the module that implements the stage (a ``main(argv)`` function),
and is imported only when called, so ``harp --help`` is instant.
"""
from __future__ import annotations

import importlib
import sys
from typing import Optional, Sequence

#: name -> (one-line help, "module:function").  The function takes the remaining argv.
COMMANDS: dict[str, tuple[str, str]] = {
    "synth": ("generate the built-in benchmark (recordings, references, ground truth, queries)",
              "harp_lib.synth.cli:main"),
    "extract": ("stage 1 + 2: segment, transcribe, embed and label recordings",
                "harp_lib.extract.pipeline:main"),
    "index": ("build FAISS and keyword indexes from extracted segments", "harp_lib.index:main"),
    "infer": ("run the agent (plan, retrieve, answer) for one domain and setup",
              "harp_lib.agent.runner:main"),
    "judge": ("grade predictions (answer, factual, faithful) with rule or LLM judges",
              "harp_lib.evaluate.judge:main"),
    "score": ("hit rates and per-query scores from predictions and judgements",
              "harp_lib.evaluate.scoring:main"),
    "tables": ("write Table II, hit-rate and judge-agreement tables", "harp_lib.evaluate.tables:main"),
    "figures": ("draw the paper's figures", "harp_lib.evaluate.figures:main"),
    "human": ("build human-study annotation pages and score returned answers",
              "harp_lib.evaluate.human:main"),
    "prepare": ("prepare the paper's corpora (LongEmo, MedMosaic, SongEval) into our schema",
                "harp_lib.datasets.cli:main"),
    "doctor": ("check weights, tokens, servers and files needed by a profile", "harp_lib.doctor:main"),
    "bench": ("measure speed and memory; write results/bench/", "harp_lib.bench:main"),
    "ingest": ("add your own recordings (any audio format): convert, extract, index",
               "harp_lib.userdata:ingest_main"),
    "ask": ("ask a free-text question about an ingested recording", "harp_lib.userdata:ask_main"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: harp <stage> [options]   (harp <stage> --help for its options)", "",
             "HARP reproduction pipeline stages:"]
    lines += [f"  {n:<{width}}  {h}" for n, (h, _) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        from . import __version__
        print(__version__)
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"harp: unknown stage {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    mod_name, func_name = COMMANDS[name][1].split(":")
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        if e.name and mod_name.startswith(e.name):
            print(f"harp {name}: this stage is not available in this version of harp_lib "
                  f"({mod_name} is missing)", file=sys.stderr)
            return 2
        raise
    rc = getattr(mod, func_name)(rest)
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
