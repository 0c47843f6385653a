"""dimsum from Python: design the network fabrics of ML training clusters.

The library itself (Rust) is called directly, no subprocess: each call
parses its arguments as the command line parses its flags, runs the same
job, and returns a typed result whose ``to_dict()`` is what the CLI's
``--json`` prints for the same inputs.

>>> import dimsum
>>> study = dimsum.Study.load("studies/gpt3-4d.toml")
>>> study.dims
['chiplet', 'package', 'node', 'pod']
>>> best = study.optimize(objective="perf")
>>> round(best.iteration_time_ms, 1), best.gap < 1e-6
(708.4, True)
>>> study.evaluate(bw=[250, 250, 250, 250]).to_pandas()  # doctest: +SKIP

Errors: bad input raises :class:`InputError` (a ``ValueError``: ``file``,
``line``, ``field``, ``message``; ``str()`` is the CLI's line); a run that
fails on good input raises :class:`DimsumError` (a ``RuntimeError``).
Long calls take ``progress=`` (see :mod:`dimsum._progress`) and stop on
Ctrl-C with ``KeyboardInterrupt``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, List, Literal, Optional, Sequence, Union, overload

from . import _dimsum
from ._dimsum import DimsumError, InputError, __version__
from ._progress import Progress, ProgressCallback, observer
from ._results import (
    Bom,
    BomItem,
    CatalogOptimum,
    Collective,
    CollectiveTime,
    Coopt,
    DimFigures,
    Evaluation,
    Frontier,
    FrontierPoint,
    Optimum,
    Record,
    Run,
    Strategy,
)

__all__ = [
    "Bom",
    "BomItem",
    "CatalogOptimum",
    "Collective",
    "CollectiveTime",
    "Coopt",
    "DimFigures",
    "DimsumError",
    "DimsumWarning",
    "Evaluation",
    "Frontier",
    "FrontierPoint",
    "InputError",
    "Optimum",
    "Progress",
    "ProgressCallback",
    "Record",
    "Run",
    "Strategy",
    "Study",
    "__version__",
    "collective",
    "run",
]

PathLike = Union[str, "os.PathLike[str]"]


class DimsumWarning(UserWarning):
    """A warning dimsum's CLI prints on stderr: a study's located warnings
    (on load), an allocation outside a dimension's bounds (on evaluate)."""


def _warn(lines: Sequence[str]) -> None:
    for line in lines:
        text = line[len("warning: ") :] if line.startswith("warning: ") else line
        warnings.warn(text, DimsumWarning, stacklevel=3)


def _floats(values: Optional[Sequence[float]], name: str) -> Optional[List[float]]:
    if values is None:
        return None
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} takes a sequence of numbers (GB/s per NPU per dimension), not a string")
    return [float(v) for v in values]


def _flag(value: Any) -> Optional[str]:
    """A number, a sequence of numbers or a string as the CLI flag's text
    (numbers exactly: integers without a point, floats in their shortest
    round-trip form)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError(f"expected a number, a sequence of numbers or a string, not {value!r}")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            return str(int(value))
        return repr(value) if isinstance(value, float) else str(value)
    if hasattr(value, "__iter__"):
        return ",".join(_flag(v) or "" for v in value)
    return str(value)


class Study:
    """A study file, read and validated once (:meth:`load`); each method
    runs one command of the CLI on it.

    Attributes: ``name``, ``description``, ``path``, ``dims`` (the
    dimensions' names, fastest first), ``npus``, ``fabric`` (the shape),
    ``bw`` (the study's own allocation, or None), ``has_model``,
    ``warnings``.
    """

    __slots__ = ("_native",)

    def __init__(self, study: Union[_dimsum.Study, PathLike]) -> None:
        """The study at a path (as :meth:`load`), or a native study."""
        if isinstance(study, _dimsum.Study):
            self._native = study
        else:
            self._native = Study.load(study)._native

    @classmethod
    def load(cls, path: PathLike) -> "Study":
        """Reads and validates the study at ``path`` (TOML). Raises
        :class:`InputError` at the file's line and key; the study's own
        warnings (the CLI prints them) are issued as :class:`DimsumWarning`."""
        native = _dimsum.Study.load(os.fspath(path))
        _warn(native.warnings)
        return cls(native)

    @property
    def name(self) -> str:
        """The study's name."""
        return self._native.name

    @property
    def description(self) -> str:
        """The study's description."""
        return self._native.description

    @property
    def path(self) -> str:
        """The file it was read from."""
        return self._native.path

    @property
    def dims(self) -> List[str]:
        """The dimensions' names, fastest first."""
        return self._native.dims

    @property
    def npus(self) -> int:
        """NPUs in the fabric."""
        return self._native.npus

    @property
    def fabric(self) -> str:
        """The fabric's shape, e.g. ``Ring(4) x Switch(32)``."""
        return self._native.fabric

    @property
    def bw(self) -> Optional[List[float]]:
        """The study's own allocation (``bw``), GB/s per NPU per dimension."""
        return self._native.bw

    @property
    def has_model(self) -> bool:
        """Whether the study has a ``[model]`` (what :meth:`coopt` needs)."""
        return self._native.has_model

    @property
    def warnings(self) -> List[str]:
        """The study's warnings, each located."""
        return self._native.warnings

    def __repr__(self) -> str:
        return repr(self._native)

    def evaluate(
        self,
        bw: Optional[Sequence[float]] = None,
        *,
        evaluator: Optional[str] = None,
        schedule_algorithm: Optional[str] = None,
        schedule_chunks: Optional[int] = None,
        progress: Progress = None,
    ) -> Evaluation:
        """Evaluates one allocation (``dimsum eval --json``): iteration time
        and its lower bound, compute and communication, cost, power, per
        dimension and per collective.

        ``bw``: GB/s per NPU per dimension (default: the study's ``bw``).
        ``evaluator``: ``analytic`` or ``schedule`` (every collective
        replayed; default: the study's ``[evaluator]``), with
        ``schedule_algorithm`` and ``schedule_chunks``.
        """
        with observer(progress) as cb:
            d, lines = self._native.evaluate(
                _floats(bw, "bw"), evaluator, schedule_algorithm, schedule_chunks, cb
            )
        _warn(lines)
        return Evaluation(d)

    @overload
    def optimize(
        self,
        objective: Optional[str] = ...,
        constraints: Sequence[str] = ...,
        *,
        target_ms: Optional[float] = ...,
        no_study_constraints: bool = ...,
        catalog: Literal[False] = ...,
        budget_usd: Optional[float] = ...,
        budget_w: Optional[float] = ...,
        evaluator: Optional[str] = ...,
        schedule_algorithm: Optional[str] = ...,
        schedule_chunks: Optional[int] = ...,
        progress: Progress = ...,
    ) -> Optimum: ...

    @overload
    def optimize(
        self,
        objective: Optional[str] = ...,
        constraints: Sequence[str] = ...,
        *,
        target_ms: Optional[float] = ...,
        no_study_constraints: bool = ...,
        catalog: Literal[True],
        budget_usd: Optional[float] = ...,
        budget_w: Optional[float] = ...,
        evaluator: Optional[str] = ...,
        schedule_algorithm: Optional[str] = ...,
        schedule_chunks: Optional[int] = ...,
        progress: Progress = ...,
    ) -> CatalogOptimum: ...

    def optimize(
        self,
        objective: Optional[str] = None,
        constraints: Sequence[str] = (),
        *,
        target_ms: Optional[float] = None,
        no_study_constraints: bool = False,
        catalog: bool = False,
        budget_usd: Optional[float] = None,
        budget_w: Optional[float] = None,
        evaluator: Optional[str] = None,
        schedule_algorithm: Optional[str] = None,
        schedule_chunks: Optional[int] = None,
        progress: Progress = None,
    ) -> Union[Optimum, CatalogOptimum]:
        """The optimal bandwidth per dimension, certified with a lower
        bound and a gap (``dimsum optimize --json``).

        ``objective``: ``perf``, ``perf-per-cost``, ``min-cost`` or
        ``min-power`` (default: the study's, else perf; the last two need
        ``target_ms``). ``constraints``: linear constraints added to the
        study's, in the study's language (``"B0 + B1 == 1000"``,
        ``"cost <= 2e7"``, ``"2*chiplet - package <= 0"``);
        ``no_study_constraints`` drops the study's ``[optimize]`` ones.
        ``catalog=True``: the best fabric the catalog sells (a
        :class:`CatalogOptimum`), within ``budget_usd`` / ``budget_w``.
        """
        if isinstance(constraints, str):
            constraints = [constraints]
        with observer(progress) as cb:
            d = self._native.optimize(
                objective,
                list(constraints),
                None if target_ms is None else float(target_ms),
                no_study_constraints,
                catalog,
                None if budget_usd is None else float(budget_usd),
                None if budget_w is None else float(budget_w),
                evaluator,
                schedule_algorithm,
                schedule_chunks,
                cb,
            )
        return CatalogOptimum(d) if catalog else Optimum(d)

    def frontier(
        self,
        axis: Optional[str] = None,
        points: Optional[int] = None,
        *,
        out: Optional[PathLike] = None,
        evaluator: Optional[str] = None,
        schedule_algorithm: Optional[str] = None,
        schedule_chunks: Optional[int] = None,
        progress: Progress = None,
    ) -> Frontier:
        """The fastest design at ``points`` budgets on ``axis`` (``cost``,
        ``power`` or ``total-bw``; default: the study's first
        ``[[frontier]]``, else 40 points on cost), as ``dimsum frontier``
        computes it. With ``out``, also writes the CLI's files there
        (``frontier-<axis>.csv``, the charts)."""
        with observer(progress) as cb:
            d = self._native.frontier(
                axis,
                points,
                None if out is None else os.fspath(out),
                evaluator,
                schedule_algorithm,
                schedule_chunks,
                cb,
            )
        return Frontier(d)

    def coopt(
        self,
        *,
        recipe: str = "study",
        replay: bool = False,
        top: int = 10,
        progress: Progress = None,
    ) -> Coopt:
        """Co-optimizes the parallelization (TP, PP, DP, EP and their
        placement) with the bandwidth allocation (``dimsum coopt --json``);
        needs a ``[model]``. ``recipe``: ``study`` (its ``[coopt]`` space)
        or ``whole``; ``replay``: the joint optimum replayed on the best
        schedules; ``top``: strategies listed."""
        with observer(progress) as cb:
            d = self._native.coopt(recipe, replay, top, cb)
        return Coopt(d)

    def bom(self, bw: Optional[Sequence[float]] = None) -> Bom:
        """The bill of materials of an allocation (``dimsum bom --json``):
        ports, switches and cables from the study's catalog (or the
        built-in one), capex and power. ``bw`` defaults to the study's."""
        return Bom(self._native.bom(_floats(bw, "bw")))


def run(
    path: PathLike,
    out: PathLike = "results",
    *,
    evaluator: Optional[str] = None,
    schedule_algorithm: Optional[str] = None,
    schedule_chunks: Optional[int] = None,
    progress: Progress = None,
) -> Run:
    """Everything the study at ``path`` declares (``dimsum run``), written
    into ``out/<study>/``: the files written, each objective's recommended
    allocation and, with ``[procurement]``, the decision."""
    with observer(progress) as cb:
        d = _dimsum.run(
            os.fspath(path),
            os.fspath(out),
            evaluator,
            schedule_algorithm,
            schedule_chunks,
            cb,
        )
    _warn(d.get("warnings") or [])
    return Run(d)


def collective(
    topology: str,
    collective: str = "all-reduce",
    size: Union[str, int, float, None] = None,
    algorithm: Optional[str] = None,
    *,
    dim_algorithms: Union[str, Sequence[str], None] = None,
    chunks_per_npu: int = 1,
    link_gbps: Union[str, float, Sequence[float], None] = None,
    link_latency_us: Union[str, float, Sequence[float], None] = None,
    bw: Union[str, Sequence[float], None] = None,
    link_model: str = "alpha-beta",
    single_port: bool = False,
    best_tolerance: Union[str, float] = "1%",
    seed: int = 0,
    restarts: int = 1,
    schedule_in: Optional[PathLike] = None,
    schedule_out: Optional[PathLike] = None,
    charts: Optional[PathLike] = None,
    replay: bool = False,
    progress: Progress = None,
) -> Collective:
    """One collective's schedule built (or read from ``schedule_in``) and
    replayed on a topology with link contention, against the lower bounds
    (``dimsum collective --json``; each argument is the flag of the same
    name).

    ``topology``: ``ring:8``, ``fc:8``, ``switch:8``, ``torus:4x4``,
    ``mesh:5x5``, ``fabric:STUDY.toml`` (with ``bw``), ``edges:FILE`` or
    ``astra:FILE.yml``. ``size``: the buffer, bytes or with a unit
    (``"64MiB"``). ``algorithm``: ``ring``, ``direct``, ``hierarchical``,
    ``tacos``, ``forest``, ``best``, ... ``link_gbps`` / ``link_latency_us``:
    one value or one per dimension. An invalid schedule is returned, not
    raised: check ``valid``.
    """
    if dim_algorithms is not None and not isinstance(dim_algorithms, str):
        dim_algorithms = ",".join(dim_algorithms)
    with observer(progress) as cb:
        d = _dimsum.collective(
            topology,
            collective,
            _flag(size),
            algorithm,
            dim_algorithms,
            chunks_per_npu,
            _flag(link_gbps),
            _flag(link_latency_us),
            _flag(bw),
            link_model,
            single_port,
            _flag(best_tolerance) or "1%",
            seed,
            restarts,
            None if schedule_in is None else os.fspath(schedule_in),
            None if schedule_out is None else os.fspath(schedule_out),
            None if charts is None else os.fspath(charts),
            replay,
            cb,
        )
    return Collective(d)
