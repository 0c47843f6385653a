"""Progress callbacks, tqdm, and stopping a call: a callback that raises
stops the work at its next step and its exception reaches the caller;
Ctrl-C (here `_thread.interrupt_main`, which trips the same flag as
SIGINT) raises KeyboardInterrupt."""

from __future__ import annotations

import _thread
import threading
import time
from pathlib import Path
from typing import List, Tuple

import pytest

import dimsum
from dimsum._progress import TqdmProgress, observer

PROCUREMENT = "studies/gpt3-4d-procurement.toml"


def test_callback_hears_every_step() -> None:
    seen: List[Tuple[str, int, int]] = []
    f = dimsum.Study.load("studies/gpt3-4d.toml").frontier(
        axis="cost", points=10, progress=lambda *a: seen.append(a)
    )
    assert len(f.points) == 10
    counts = [d for task, d, n in seen if task == "frontier cost"]
    assert seen and all(n == 10 for task, _, n in seen if task == "frontier cost")
    assert max(counts) == 10


def test_callback_of_a_run_and_of_coopt() -> None:
    tasks = set()
    dimsum.Study.load("studies/llama2-70b-coopt.toml").coopt(top=1, progress=lambda t, d, n: tasks.add(t))
    assert "strategies" in tasks


def test_a_raising_callback_stops_the_call(tmp_path: Path) -> None:
    calls = []

    def boom(task: str, done: int, total: int) -> None:
        calls.append(task)
        raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        dimsum.run(PROCUREMENT, out=tmp_path, progress=boom)
    assert len(calls) == 1  # never called again once it raised
    # Stopped before the report was written.
    assert not (tmp_path / "gpt3-4d-procurement" / "summary.md").exists()


def test_keyboard_interrupt_from_the_callback(tmp_path: Path) -> None:
    def interrupt(task: str, done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dimsum.run(PROCUREMENT, out=tmp_path, progress=interrupt)
    assert not (tmp_path / "gpt3-4d-procurement" / "summary.md").exists()


def test_ctrl_c_interrupts_a_long_call(tmp_path: Path) -> None:
    # The whole run takes about a second on two cores; the interrupt comes
    # after 0.2 s, while the worker runs and the caller waits.
    timer = threading.Timer(0.2, _thread.interrupt_main)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            dimsum.run(PROCUREMENT, out=tmp_path, progress=False)
    finally:
        timer.cancel()
    assert time.monotonic() - started >= 0.2
    assert not (tmp_path / "gpt3-4d-procurement" / "summary.md").exists()
    # The module works after an interrupt.
    assert dimsum.Study.load("studies/gpt3-4d.toml").evaluate().iteration_time_ms > 0


def test_tqdm_bars() -> None:
    class Bar:
        """tqdm's interface as TqdmProgress uses it."""

        opened: List["Bar"] = []

        def __init__(self, total: int, desc: str, **_: object) -> None:
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            Bar.opened.append(self)

        def update(self, k: int) -> None:
            self.n += k

        def close(self) -> None:
            self.closed = True

    bars = TqdmProgress(Bar)
    bars("a", 1, 4)
    bars("a", 3, 4)
    bars("b", 0, 2)
    bars("b", 2, 2)
    bars.close()
    assert [(b.desc, b.n, b.total, b.closed) for b in Bar.opened] == [("a", 3, 4, True), ("b", 2, 2, True)]
    # The default: tqdm when installed, nothing with False.
    pytest.importorskip("tqdm")
    with observer(None) as cb:
        assert isinstance(cb, TqdmProgress)
    with observer(False) as cb:
        assert cb is None
    with pytest.raises(TypeError):
        with observer(42):  # type: ignore[arg-type]
            pass
