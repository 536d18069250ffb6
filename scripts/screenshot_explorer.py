#!/usr/bin/env python
"""Screenshot of the HARP explorer running live in JupyterLab (headless Chromium) -> docs/explorer.png.

Everything is local: JupyterLab on 127.0.0.1 with a random token, Chromium headless driven
over its DevTools protocol (also on 127.0.0.1), both killed at the end.  Steps: write a small
notebook that opens the explorer on one query, open it in JupyterLab, run all cells, wait
until the result is shown, hide the code and side bars, capture.

    .venv/bin/python scripts/screenshot_explorer.py --domain clinical --query exhibited-0001 --setup A5

Data come from params.yaml (``HARP_ROOT`` / ``--profile`` pick another tree): the benchmark in
``paths.benchmark`` and an index in ``paths.index`` (``harp extract`` + ``harp index``).
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float, proc=None) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server behind {url.split('?')[0]} exited with code {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def _notebook(domain: str, query: str, setup: str, segment: int, profile: str | None) -> dict:
    src = [
        "import os\n",
        "os.environ['HARP_PROGRESS'] = 'off'\n",
        "from harp_lib.config import load_config\n",
        "from harp_lib.viz import explore\n",
        f"ex = explore(load_config(profile={profile!r}), domain={domain!r})\n",
        f"ex.segments.value = ex.state.segments[{segment}].id     # select a segment: hear it, read it\n",
        f"ex.query.value = {query!r}                               # pick a benchmark query\n",
        f"ex.setup.value = {setup!r}                               # choose a setup: runs the query\n",
        "ex.state.trace is not None or ex.run()                   # (same setup as before: run it)\n",
    ]
    return {"cells": [{"cell_type": "code", "execution_count": None, "id": "explorer", "metadata": {},
                       "outputs": [], "source": src}],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


class CDP:
    """A minimal Chrome DevTools Protocol client (one page target)."""

    def __init__(self, port: int, timeout: float):
        import websocket
        _wait_http(f"http://127.0.0.1:{port}/json/version", timeout)
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=5).read())
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.n = 0

    def call(self, method: str, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def js(self, expr: str):
        r = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if r.get("exceptionDetails"):
            raise RuntimeError(f"javascript failed: {expr[:80]}: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def wait(self, expr: str, timeout: float, what: str) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                if self.js(expr):
                    return
            except RuntimeError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--domain", default="clinical")
    ap.add_argument("--query", default="exhibited-0001", help="benchmark query id to run")
    ap.add_argument("--setup", default="A5")
    ap.add_argument("--segment", type=int, default=0, help="index of the segment to select")
    ap.add_argument("--profile", default=None)
    ap.add_argument("--out", default=str(REPO / "docs" / "explorer.png"))
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds for the whole run")
    a = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"screenshot: no Chromium at {CHROMIUM} (set $CHROMIUM)", file=sys.stderr)
        return 2
    deadline = time.time() + a.timeout
    left = lambda: max(5.0, deadline - time.time())  # noqa: E731
    work = Path(tempfile.mkdtemp(prefix="harp_shot_"))
    (work / "explorer.ipynb").write_text(json.dumps(_notebook(a.domain, a.query, a.setup, a.segment, a.profile)))
    token, lab_port, cdp_port = secrets.token_hex(16), _free_port(), _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", HARP_PROGRESS="off", JUPYTER_CONFIG_DIR=str(work / "cfg"),
               JUPYTER_RUNTIME_DIR=str(work / "rt"), JUPYTER_DATA_DIR=os.environ.get("JUPYTER_DATA_DIR", ""),
               HARP_ROOT=os.environ.get("HARP_ROOT", str(REPO)))
    if not env["JUPYTER_DATA_DIR"]:
        env.pop("JUPYTER_DATA_DIR")
    jupyter = Path(sys.executable).with_name("jupyter")
    procs, cdp = [], None
    try:
        lab = subprocess.Popen([str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={lab_port}",
                                f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
                                "--LabApp.expose_app_in_browser=True", "--ServerApp.disable_check_xsrf=True",
                                "--ServerApp.open_browser=False"] + (["--allow-root"] if os.geteuid() == 0 else []),
                               cwd=work, env=env, stdout=open(work / "lab.log", "w"), stderr=subprocess.STDOUT,
                               start_new_session=True)
        procs.append(lab)
        _wait_http(f"http://127.0.0.1:{lab_port}/api/status?token={token}", left(), lab)
        chrome = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                   "--disable-background-networking", "--disable-component-update",
                                   "--disable-sync", f"--user-data-dir={work / 'chrome'}",
                                   f"--window-size={a.width},{a.height}", f"--remote-debugging-port={cdp_port}",
                                   "--remote-debugging-address=127.0.0.1", "--remote-allow-origins=*",
                                   "about:blank"],
                                  stdout=open(work / "chrome.log", "w"), stderr=subprocess.STDOUT,
                                  start_new_session=True)
        procs.append(chrome)
        cdp = CDP(cdp_port, left())
        cdp.call("Emulation.setDeviceMetricsOverride", width=a.width, height=a.height, deviceScaleFactor=1,
                 mobile=False)
        cdp.call("Page.enable")
        cdp.call("Page.navigate", url=f"http://127.0.0.1:{lab_port}/lab/tree/explorer.ipynb?token={token}")
        cdp.wait("!!(window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell'))", left(), "JupyterLab")
        cdp.wait("!!document.querySelector('.jp-Notebook-ExecutionIndicator, .jp-KernelStatus, "
                 ".jp-Toolbar-kernelName')", left(), "the kernel indicator")
        time.sleep(3.0)   # run-all-cells queues until the kernel is up
        # dismiss the "get notified about news?" toast
        cdp.js("(() => { for (const b of document.querySelectorAll('.jp-toast-button, button')) "
               "{ if (b.innerText.trim() === 'No') { b.click(); } } })()")
        cdp.js("window.jupyterapp.commands.execute('application:set-mode', {mode: 'single-document'})")
        for cmd in ("application:toggle-left-area", "notebook:run-all-cells"):
            cdp.js(f"window.jupyterapp.commands.execute('{cmd}')")
        cdp.wait("document.body.innerText.includes('Verdicts') || document.body.innerText.includes('Error:')",
                 left(), "the explorer to show a result")
        time.sleep(2.0)   # let the timeline image and the audio player lay out
        cdp.js("window.jupyterapp.commands.execute('notebook:hide-all-cell-code')")
        cdp.js("(() => { const s = document.querySelector('.jp-Cell-outputArea'); if (s) s.scrollIntoView(); })()")
        time.sleep(1.0)
        text = cdp.js("document.body.innerText") or ""
        if "Traceback" in text:
            raise RuntimeError("the notebook cell failed:\n" + text[text.index("Traceback"):][:2000])
        shot = cdp.call("Page.captureScreenshot", format="png")
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(shot["data"]))
        print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")
        return 0
    except Exception:
        try:
            debug = Path(tempfile.gettempdir()) / "harp_explorer_failed.png"
            debug.write_bytes(base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"]))
            print(f"screenshot of the failure: {debug}", file=sys.stderr)
        except Exception:  # noqa: BLE001 - no browser yet
            pass
        for log in ("lab.log", "chrome.log"):
            if (work / log).exists():
                print(f"--- {log} (tail)\n" + (work / log).read_text(errors="replace")[-1500:], file=sys.stderr)
        raise
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=10)
            except Exception:  # noqa: BLE001 - make sure it is gone
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
