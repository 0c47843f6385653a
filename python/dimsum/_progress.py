"""Progress of long calls: the user's callback, or tqdm bars.

Every long call takes ``progress=``:

- a callable ``(task: str, done: int, total: int) -> None``, called from
  dimsum's worker thread (with the GIL held) as the work advances; if it
  raises, the work stops at its next step and the call raises the same
  exception;
- ``None`` (the default): tqdm bars on stderr when tqdm is installed, else
  nothing;
- ``False``: nothing.

Ctrl-C interrupts a call at the work's next step (KeyboardInterrupt), in
every case.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any, Callable, Iterator, Optional, Union

ProgressCallback = Callable[[str, int, int], Any]
"""``(task, done, total)``: ``done`` of ``total`` steps of ``task``."""

Progress = Union[ProgressCallback, bool, None]
"""What ``progress=`` takes: a callback, ``None`` (tqdm when installed) or
``False`` (nothing)."""


class TqdmProgress:
    """A progress callback drawing one tqdm bar per task (a new bar when
    the task changes), closed by ``close()``; as the CLI's bars, a bar
    appears only once its task has lasted a second."""

    def __init__(self, tqdm: Any) -> None:
        self._tqdm = tqdm
        self._task: Optional[str] = None
        self._bar: Any = None

    def __call__(self, task: str, done: int, total: int) -> None:
        """Moves the bar of ``task`` to ``done`` of ``total``."""
        if task != self._task or self._bar is None or done < self._bar.n:
            self.close()
            self._task = task
            self._bar = self._tqdm(total=total, desc=task, leave=False, dynamic_ncols=True, delay=1.0)
        if self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        """Closes the current bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def observer(progress: Progress) -> Iterator[Optional[ProgressCallback]]:
    """The callback to hand to the native call for ``progress=`` (see the
    module), closing any bar it opened at the end."""
    if progress is False:
        yield None
        return
    if progress is True or progress is None:
        try:
            tqdm = importlib.import_module("tqdm.auto").tqdm
        except ImportError:
            if progress is True:
                raise ImportError("progress=True needs tqdm: pip install tqdm") from None
            yield None
            return
        bars = TqdmProgress(tqdm)
        try:
            yield bars
        finally:
            bars.close()
        return
    if not callable(progress):
        raise TypeError(f"progress must be a callable (task, done, total), None or False, not {progress!r}")
    yield progress
