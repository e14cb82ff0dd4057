"""The held-out runs (and the bundled demo set): benchmarks/heldout/manifest.toml, read and
checked by benchmarks/heldout/manifest.py (for test parametrization).

The runs are part of the repository: never skipped. A broken or incomplete manifest (a
trace in benchmarks/heldout it does not list, a listed file that is not there, an unknown
key) fails the collection of the test files that import this module, naming each problem;
tests/plan/test_heldout_manifest.py checks the checks.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _manifest_module():
    """benchmarks/heldout/manifest.py, imported by its path (as benchmarks/bench_policy.py does)."""
    name = "heldout_manifest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / "heldout" / "manifest.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # (its dataclasses look their module up there)
        spec.loader.exec_module(module)
    return sys.modules[name]


manifest = _manifest_module()
#: every run of the manifest, in its order (the capture script's: the demo set, then the held-out
#: sets in order); ``HELDOUT_RUNS["vgg-train"]`` is one run
HELDOUT_RUNS = manifest.load()
