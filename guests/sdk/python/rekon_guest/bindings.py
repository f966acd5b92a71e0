"""The componentize-py bindings of a world (the ``wit_world`` package), generated
on demand for native runs: ``componentize-py bindings`` into a directory that is
put on ``sys.path``. Inside the component, componentize-py provides them itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import CONTRACT_VERSION


class BindingsError(Exception):
    """The bindings of a world could not be generated."""


def wit_dir(start: Path) -> Path:
    """``$REKON_WIT_DIR``, else the nearest ``wit/`` at or above ``start``."""
    if "REKON_WIT_DIR" in os.environ:
        return Path(os.environ["REKON_WIT_DIR"])
    for parent in [start, *start.parents]:
        if (parent / "wit").is_dir():
            return parent / "wit"
    raise BindingsError(f"no wit/ directory at or above {start} (set REKON_WIT_DIR)")


def componentize_py() -> str:
    """The ``componentize-py`` next to this Python (a venv), else on ``PATH``."""
    beside = Path(sys.executable).parent / "componentize-py"
    found = str(beside) if beside.exists() else shutil.which("componentize-py")
    if found is None:
        raise BindingsError("componentize-py is not installed (pip install -r requirements.txt)")
    return found


def load(world: str, wit: Path, out: Path) -> Path:
    """Generates the bindings of ``world`` into ``out`` (when a WIT file is newer
    than them) and puts ``out`` first on ``sys.path``. Returns ``out``."""
    stamp = out / "wit_world" / "__init__.py"
    newest = max(p.stat().st_mtime for p in wit.rglob("*.wit"))
    if not stamp.exists() or stamp.stat().st_mtime < newest:
        shutil.rmtree(out, ignore_errors=True)
        command = [
            componentize_py(),
            "-d", str(wit), "-w", f"rekon:reconcile/{world}@{CONTRACT_VERSION}",
            "bindings", str(out),
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise BindingsError(f"{' '.join(command)}: {done.stderr.strip()}")
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    return out
