"""Shared fixtures: the repository's root (the tests run there, so the
studies' relative paths are the ones the CLI is given) and the CLI binary
the results are compared with (env DIMSUM_BIN, else
$CARGO_TARGET_DIR/release/dimsum, by default target/release/dimsum, as
`cargo build --release` leaves it)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Wall-clock figures: the only keys whose values differ between two runs.
WALL_CLOCK = {"solve_ms", "solve_s"}


def masked(v: Any) -> Any:
    """``v`` without its wall-clock keys, at any depth."""
    if isinstance(v, dict):
        return {k: masked(x) for k, x in v.items() if k not in WALL_CLOCK}
    if isinstance(v, list):
        return [masked(x) for x in v]
    return v


@pytest.fixture(autouse=True)
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="session")
def dimsum_bin() -> Path:
    target = ROOT / os.environ.get("CARGO_TARGET_DIR", "target")
    path = Path(os.environ.get("DIMSUM_BIN") or target / "release" / "dimsum")
    if not path.is_file():
        pytest.fail(f"no dimsum binary at {path}: run `cargo build --release` or set DIMSUM_BIN")
    return path


class Cli:
    """Runs the dimsum binary in the repository's root."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(self, *args: str) -> Tuple[int, str, str]:
        """(exit code, stdout, stderr)."""
        p = subprocess.run(
            [str(self.path), *args], cwd=ROOT, capture_output=True, text=True, check=False
        )
        return p.returncode, p.stdout, p.stderr

    def json(self, *args: str) -> Any:
        """The JSON a successful command prints with --json."""
        code, out, err = self.run(*args, "--json")
        assert code == 0, err
        return json.loads(out)

    def error(self, *args: str) -> Tuple[int, str]:
        """(exit code, the error line) of a failing command."""
        code, _, err = self.run(*args)
        assert code != 0
        lines: List[str] = [l for l in err.splitlines() if l.startswith("error: ")]
        assert lines, err
        return code, lines[-1][len("error: ") :]


@pytest.fixture(scope="session")
def cli(dimsum_bin: Path) -> Cli:
    return Cli(dimsum_bin)
