"""Where the real traces are, and their names (for test parametrization).

Real traces live in ../shared/traces (never copied into the repository).
``MEMTUNE_SHARED_TRACES`` points elsewhere. When the directory is absent, the
names come from its README's list, so parametrized tests still collect and
then skip (or fail under ``CI=true``, see conftest.shared_trace).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("MEMTUNE_SHARED_TRACES", REPO.parent / "shared" / "traces"))
#: The traces named in ../shared/traces/README.md.
KNOWN = [
    "lifetimes-pangu-2.6b.csv", "lifetimes-resnet50.csv", "pytorch-snapshot-cold-expandable-3dev.pickle",
    "pytorch-snapshot-cold-small.pickle", "pytorch-snapshot-warm-emptycache.pickle",
    "pytorch-snapshot-warm-finetune.pickle", "pytorch-snapshot-warm-lm-fullstep.pickle",
    "torch-profiler-cpu-encoder-train.json.gz", "torch-profiler-cuda-2gpu-rank1.json.gz",
]
ALL_TRACES = (sorted(p.name for p in SHARED_TRACES.iterdir() if p.name != "README.md")
              if SHARED_TRACES.is_dir() else KNOWN)
SNAPSHOTS = [n for n in ALL_TRACES if n.startswith("pytorch-snapshot-") and n.endswith(".pickle")]
