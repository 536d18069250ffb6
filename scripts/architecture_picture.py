"""Draw harp_lib's folders and layers from the code: a Mermaid picture in docs/architecture.md.

The picture is generated, never drawn by hand: one box per layer (read from the "## Layers" table of
docs/architecture.md, top floor first), one node per package with its modules, and one arrow per
package that imports another (the transitive reduction: an arrow implied by two others is left
out, so the picture stays readable).  It sits between the ``architecture-picture`` markers of the
doc; ``--check`` exits 1 when the doc's picture is not what the code draws (tests/test_architecture_picture.py).

    .venv/bin/python scripts/architecture_picture.py            # rewrite the picture in the doc
    .venv/bin/python scripts/architecture_picture.py --check    # exit 1 if it is stale
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- architecture-picture:begin (scripts/architecture_picture.py) -->", "<!-- architecture-picture:end -->"


def layers(doc_text: str) -> list[tuple[str, list[str]]]:
    """``[(layer name, [package, ...])]`` of the doc's layer table, lowest first (``__init__`` is ``harp_lib``)."""
    body = doc_text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    out = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0][:1].isdigit():
            names = re.findall(r"`([A-Za-z_][\w.]*?)(?:\.\*)?`", cells[1])
            out.append((cells[0], ["harp_lib" if n == "__init__" else f"harp_lib.{n}" for n in names]))
    return out


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for p in sorted((root / "harp_lib").rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def package_edges(root: Path) -> dict[str, set[str]]:
    """``package -> packages it imports`` from every import statement (module level or not)."""
    mods = modules(root)
    out: dict[str, set[str]] = {package_of(m): set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (name.split(".") if path.name == "__init__.py" else name.split(".")[:-1])
                mod = (".".join(base[:len(base) - node.level + 1] + [node.module or ""]).strip(".")
                       if node.level else node.module or "")
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            for t in targets:
                if t.startswith("harp_lib.") and package_of(t) != package_of(name):
                    out[package_of(name)].add(package_of(t))
    return out


def reduce(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The transitive reduction of an acyclic graph: drop ``a -> c`` when ``a -> b -> ... -> c``."""
    def reach(a: str, seen: set[str]) -> set[str]:
        for b in edges.get(a, ()):
            if b not in seen:
                seen.add(b)
                reach(b, seen)
        return seen
    return {a: {c for c in bs if not any(c in reach(b, set()) for b in bs if b != c)} for a, bs in edges.items()}


def node_id(package: str) -> str:
    return package.replace(".", "_")


def picture(root: Path = ROOT, doc_text: str | None = None) -> str:
    """The Mermaid block: layers top floor first, packages with their modules, reduced arrows."""
    doc_text = DOC.read_text(encoding="utf-8") if doc_text is None else doc_text
    mods = modules(root)
    lines = ["```mermaid", "flowchart TB"]
    for i, (layer, packages) in enumerate(reversed(layers(doc_text))):
        lines.append(f'  subgraph L{i}["{layer}"]')
        for p in packages:
            inner = sorted(m.split(".", 2)[2] for m in mods if package_of(m) == p and m.count(".") >= 2
                           and m.split(".")[2] != "__init__")
            inner = sorted({m.split(".")[0] for m in inner})
            label = p if p == "harp_lib" else p.split(".", 1)[1] + "/"
            shown = ", ".join(inner)
            lines.append(f'    {node_id(p)}["<b>{label}</b><br/>{shown}"]' if shown else f'    {node_id(p)}["<b>{label}</b>"]')
        lines.append("  end")
    for a, bs in sorted(reduce(package_edges(root)).items()):
        lines += [f"  {node_id(a)} --> {node_id(b)}" for b in sorted(bs)]
    lines.append("```")
    return "\n".join(lines)


def with_picture(doc_text: str, block: str) -> str:
    if BEGIN not in doc_text or END not in doc_text:
        raise SystemExit(f"{DOC}: the markers {BEGIN!r} / {END!r} are missing")
    head, rest = doc_text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{block}\n{END}{rest.split(END, 1)[1]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the doc's picture is stale")
    args = ap.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    new = with_picture(text, picture(ROOT, text))
    if args.check:
        if new != text:
            print(f"{DOC.relative_to(ROOT)}: the architecture picture is stale; run "
                  f".venv/bin/python scripts/architecture_picture.py", file=sys.stderr)
            return 1
        print(f"checked: {DOC.relative_to(ROOT)} (the picture is the code's)")
        return 0
    if new != text:
        tmp = DOC.with_name(f".{DOC.name}.{__import__('os').getpid()}.tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(DOC)
    print(f"written: {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
