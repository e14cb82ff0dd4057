"""The HTML report as a user sees it: rendered by headless Chromium.

Skips when chromium is absent, except under CI=true (where .ci/run installs it).
"""

from __future__ import annotations

import base64
import io
import os
import random
import re
import shutil
import subprocess

import numpy as np
import pytest

from memtune.report.html import write_report
from memtune.trace.model import Action, DeviceTrace, Event, Trace
from memtune.trace.replay import replay

CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("CI=true but chromium is not installed (.ci/run installs it)")
    pytest.skip("chromium is not installed")


def run_chromium(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    cmd = [chromium(), *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    rng = random.Random(7)
    events, live = [], []
    for i in range(500):
        if live and rng.random() < 0.45:
            events.append(Event(Action.FREE, live.pop(rng.randrange(len(live))), 0, 0, 50.0 * i))
        else:
            live.append(i + 1)
            events.append(Event(Action.ALLOC, i + 1, rng.randint(1, 48 << 20), 0, 50.0 * i))
    trace = Trace("memory://render.jsonl", "memtune-jsonl", [DeviceTrace(0, events, framework="pytorch-cuda")])
    results = replay(trace, "all", timeline=True)
    out = tmp_path_factory.mktemp("render")
    return write_report(results, out / "report", title="render test"), results


def test_dom_has_table_and_plots(report, tmp_path):
    path, results = report
    proc = run_chromium(["--dump-dom", path.resolve().as_uri()], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert '<table class="results">' in dom and '<table class="advice">' in dom
    rows = re.findall(r"<tr[^>]*>\s*<td>\d+</td>", dom)
    assert len(rows) == len(results)
    for r in results:
        assert f">{r.label}<" in dom
    from PIL import Image

    imgs = re.findall(r'<img[^>]+src="data:image/png;base64,([^"]+)"', dom)
    assert len(imgs) == 2
    for b64 in imgs:
        w, h = Image.open(io.BytesIO(base64.b64decode(b64))).size
        assert w >= 800 and h >= 300


def test_screenshot_is_not_blank(report, tmp_path):
    path, _ = report
    shot = tmp_path / "shot.png"
    proc = run_chromium([f"--screenshot={shot}", "--window-size=1280,2400", path.resolve().as_uri()], tmp_path)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape[0] == 2400 and img.shape[1] == 1280
    # Text, table borders and plot lines: many distinct colours and real contrast.
    assert img.std() > 20
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50
    # The plots (coloured lines) are rendered: some saturated pixels exist.
    sat = img.max(axis=2) - img.min(axis=2)
    assert (sat > 100).sum() > 500
