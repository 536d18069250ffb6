"""Write `.dvc/plots/offline.html`: the page `dvc plots show` fills, with vega, vega-lite and
vega-embed inlined, so the plots render with no network (DVC's default page loads them from a CDN).

    .venv/bin/python scripts/offline_plots_template.py      # needs npm (the registry is reachable)

The versions are pinned below; the template is committed, so a user never needs npm.  vega,
vega-lite and vega-embed are BSD-3-Clause (c) the University of Washington Interactive Data Lab.
"""
from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / ".dvc" / "plots" / "offline.html"
PACKAGES = {"vega": ("5.33.1", "build/vega.min.js"), "vega-lite": ("5.23.0", "build/vega-lite.min.js"),
            "vega-embed": ("6.29.0", "build/vega-embed.min.js")}

PAGE = """<!DOCTYPE html>
<!-- harp_lib: DVC plots page with {versions} inlined (BSD-3-Clause, UW Interactive Data Lab);
     made by scripts/offline_plots_template.py, used through .dvc/config plots.html_template -->
<html>
<head>
    {{refresh_tag}}
    <title>DVC Plot</title>
{scripts}
    <style>
        table {{
            border-spacing: 15px;
        }}
    </style>
</head>
<body>
    {{plot_divs}}
</body>
</html>
"""


def main() -> int:
    scripts, versions = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (version, member) in PACKAGES.items():
            out = subprocess.run(["npm", "pack", f"{name}@{version}", "--silent"], cwd=tmp, check=True,
                                 capture_output=True, text=True).stdout.strip().splitlines()[-1]
            with tarfile.open(Path(tmp) / out) as tar:
                js = tar.extractfile(f"package/{member}").read().decode("utf-8")
            if "</script" in js:
                raise SystemExit(f"{name}: the bundle contains '</script' and cannot be inlined")
            scripts.append(f"    <script>/* {name} {version} */\n{js}\n    </script>")
            versions.append(f"{name} {version}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(PAGE.format(versions=", ".join(versions), scripts="\n".join(scripts)), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
