"""The typed results of dimsum's calls.

Every result wraps the dict the command line's ``--json`` prints for the
same inputs (``to_dict()`` returns a copy of it, key for key), and reads
its attributes from that dict. Where a result has a table (collectives,
dimensions, frontier points, strategies, parts), ``to_pandas()`` returns it
as a ``pandas.DataFrame`` (pandas is imported only then).
"""

from __future__ import annotations

import copy
import importlib
from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, Type, TypeVar, overload

T = TypeVar("T")
R = TypeVar("R", bound="Record")

_MISSING: Any = object()


def _pandas() -> Any:
    """``pandas``, imported on first use, or an ImportError saying how to get it."""
    try:
        pandas = importlib.import_module("pandas")
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "to_pandas() needs pandas, which is not installed: pip install pandas"
        ) from e
    return pandas


class field(Generic[T]):
    """A typed attribute of a result, read from its dict under ``key``
    (default: the attribute's name); ``default`` where the key may be
    absent."""

    def __init__(self, doc: str, key: Optional[str] = None, default: Any = _MISSING) -> None:
        self.__doc__ = doc
        self.key = key or ""
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        if not self.key:
            self.key = name

    @overload
    def __get__(self, obj: None, owner: Optional[type] = None) -> "field[T]": ...

    @overload
    def __get__(self, obj: object, owner: Optional[type] = None) -> T: ...

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        if obj is None:
            return self
        data = obj._data
        if self.default is _MISSING:
            return data[self.key]
        return data.get(self.key, copy.copy(self.default))


class rows(Generic[R]):
    """A list attribute of a result whose items are typed records of
    class ``cls``, read from the dict under ``key``."""

    def __init__(self, cls: Type[R], doc: str, key: Optional[str] = None) -> None:
        self.cls = cls
        self.__doc__ = doc
        self.key = key or ""

    def __set_name__(self, owner: type, name: str) -> None:
        if not self.key:
            self.key = name

    @overload
    def __get__(self, obj: None, owner: Optional[type] = None) -> "rows[R]": ...

    @overload
    def __get__(self, obj: object, owner: Optional[type] = None) -> List[R]: ...

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        if obj is None:
            return self
        return [self.cls(d) for d in obj._data.get(self.key) or []]


class Record:
    """A dict from dimsum with typed attributes: the base of every result
    and every row of a result's tables."""

    __slots__ = ("_data",)

    def __init__(self, data: Dict[str, Any]) -> None:
        self._data = data

    def to_dict(self) -> Dict[str, Any]:
        """The dict as dimsum built it (for a call's result: what the CLI's
        ``--json`` prints for the same inputs), a deep copy."""
        return copy.deepcopy(self._data)

    def __getitem__(self, key: str) -> Any:
        """The dict's value under ``key`` (every key, also those without an
        attribute)."""
        return self._data[key]

    def keys(self) -> List[str]:
        """The dict's keys."""
        return list(self._data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and type(self) is type(other) and self._data == other._data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = [k for k in self._summary() if k in self._data]
        inner = ", ".join(f"{k}={self._data[k]!r}" for k in shown)
        return f"{type(self).__name__}({inner})"

    def _summary(self) -> Sequence[str]:
        """The keys ``repr`` shows: the first six typed attributes."""
        keys: List[str] = []
        for klass in reversed(type(self).__mro__):
            for attr in vars(klass).values():
                if isinstance(attr, (field, rows)) and attr.key not in keys:
                    keys.append(attr.key)
        return keys[:6] or list(self._data)[:6]


def _frame(records: List[Dict[str, Any]], columns: Optional[Sequence[str]] = None) -> Any:
    """A DataFrame of dicts; ``columns`` first, in order, then the rest."""
    pd = _pandas()
    df = pd.DataFrame.from_records(records)
    if columns:
        first = [c for c in columns if c in df.columns]
        df = df[first + [c for c in df.columns if c not in first]]
    return df


def _split_bw(records: List[Dict[str, Any]], dims: Sequence[str], key: str = "bw_gbps") -> List[Dict[str, Any]]:
    """Each record with its per-dimension list ``key`` also as one column
    per dimension, ``bw_<dim>_gbps`` (as dimsum's CSV files name them)."""
    out = []
    for r in records:
        r = dict(r)
        values = r.get(key)
        if isinstance(values, list) and len(values) == len(dims):
            for name, v in zip(dims, values):
                r[f"bw_{name}_gbps"] = v
        out.append(r)
    return out


def _table_choice(table: Optional[str], tables: Dict[str, Callable[[], Any]]) -> Any:
    name = table or next(iter(tables))
    if name not in tables:
        allowed = ", ".join(f"`{t}`" for t in tables)
        raise ValueError(f"`{name}` is not a table of this result; allowed: {allowed}")
    return tables[name]()


# ---------------------------------------------------------------- evaluate


class DimFigures(Record):
    """One dimension of an evaluated allocation."""

    name: field[str] = field("The dimension's name.")
    block: field[str] = field("ring, fully-connected or switch.")
    npus: field[int] = field("NPUs along the dimension.")
    bw_gbps: field[float] = field("GB/s per NPU.")
    bytes_per_npu: field[float] = field("Bytes one NPU moves over it per iteration.")
    busy_ms: field[float] = field("Time it is busy per iteration, ms.")
    bottleneck_of: field[int] = field("How many collectives it is the slowest part of.")
    cost_usd: field[float] = field("Its network cost, $ (the study's linear prices).")
    power_w: field[float] = field("Its network power, W.")
    within_bounds: field[bool] = field("Whether the bandwidth is within the dimension's bounds.")


class CollectiveTime(Record):
    """One collective of the workload, timed at an allocation."""

    layer: field[int] = field("The layer's index.")
    phase: field[str] = field("forward, input-grad or weight-grad.")
    type: field[str] = field("The collective: all-reduce, all-gather, reduce-scatter, all-to-all, ...")
    bytes: field[float] = field("Its size, bytes.")
    group: field[List[int]] = field("Its communicator, per dimension (LIBRA's notation: -1 spans the dimension).")
    time_ms: field[float] = field("Its time, ms.")
    lower_bound_ms: field[float] = field("What no algorithm can beat, ms.")
    combine: field[str] = field("How the dimensions' times combine: max or sum.")


class Evaluation(Record):
    """One allocation evaluated (``Study.evaluate``; the CLI's ``eval --json``).

    Tables for ``to_pandas``: ``collectives`` (default: every collective,
    its time and bound), ``dims`` (per dimension), ``constraints`` (the
    study's constraints at the allocation)."""

    study: field[str] = field("The study's name.")
    bw_gbps: field[List[float]] = field("The allocation, GB/s per NPU per dimension.")
    iteration_time_ms: field[float] = field("The iteration time, ms.")
    iteration_lower_bound_ms: field[float] = field("What no collective algorithm can beat, ms.")
    compute_time_ms: field[float] = field("Compute per iteration, ms.")
    comm_time_ms: field[float] = field("Exposed communication per iteration, ms.")
    total_collective_time_ms: field[float] = field(
        "Every collective's time summed, ms.", default=None
    )
    network_cost_usd: field[float] = field("Network cost, $ (the study's linear prices).")
    network_power_w: field[float] = field("Network power, W.")
    npus: field[int] = field("NPUs.")
    fabric: field[str] = field("The fabric's shape.")
    evaluator: field[str] = field("analytic, or schedule (collectives replayed).", default="analytic")
    dims: rows[DimFigures] = rows(DimFigures, "Per dimension: bandwidth, bytes, busy time, cost, power.")
    collectives: rows[CollectiveTime] = rows(
        CollectiveTime, "Every collective in workload order, with its time.", key="per_collective"
    )
    constraints: field[List[Dict[str, Any]]] = field(
        "The study's constraints at the allocation: constraint, value, rhs, unit, holds.", default=[]
    )
    flags: field[Optional[List[Any]]] = field(
        "With [procurement], what buying it runs into (None without).", default=None
    )

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """A table as a ``pandas.DataFrame``: ``collectives`` (default),
        ``dims`` or ``constraints``."""
        return _table_choice(
            table,
            {
                "collectives": lambda: _frame(
                    self._data.get("per_collective") or [],
                    ["layer", "phase", "type", "bytes", "group", "time_ms", "lower_bound_ms"],
                ),
                "dims": lambda: _frame(self._data.get("dims") or [], ["name"]),
                "constraints": lambda: _frame(self._data.get("constraints") or []),
            },
        )

    def _summary(self) -> Sequence[str]:
        return ["study", "bw_gbps", "iteration_time_ms", "iteration_lower_bound_ms", "network_cost_usd"]


# ---------------------------------------------------------------- optimize


class Optimum(Record):
    """A certified optimum (``Study.optimize``; the CLI's ``optimize
    --json``). With the schedule evaluator, the fixed point against
    replayed schedules (``evaluator == "schedule"``; its certificate is
    the last master solve's, under ``model``).

    Tables for ``to_pandas``: ``dims`` (default), ``binding``."""

    study: field[str] = field("The study's name.")
    evaluator: field[str] = field("analytic, or schedule.", default="analytic")
    bw_gbps: field[List[float]] = field("The optimal allocation, GB/s per NPU per dimension.")
    iteration_time_ms: field[float] = field("Its iteration time, ms.")
    network_cost_usd: field[float] = field("Its network cost, $ (the study's linear prices).")
    network_power_w: field[float] = field("Its network power, W.")
    objective: field[str] = field("perf, perf-per-cost, min-cost or min-power.")
    iteration_lower_bound_ms: field[Optional[float]] = field(
        "What no collective algorithm can beat at this allocation, ms.", default=None
    )
    speedup_vs_equal_split: field[Optional[float]] = field(
        "Speedup over the same total bandwidth split equally.", default=None
    )
    lp_solves: field[Optional[int]] = field("LP solves it took.", default=None)
    solve_ms: field[float] = field("Wall time of the solve, ms.")
    dims: rows[DimFigures] = rows(DimFigures, "Per dimension at the optimum.")

    def _certificate(self, key: str) -> Any:
        if key in self._data:
            return self._data[key]
        return (self._data.get("model") or {}).get(key)

    @property
    def gap(self) -> float:
        """The optimum's relative gap to its certified lower bound."""
        return float(self._certificate("gap"))

    @property
    def lower_bound(self) -> float:
        """The certified lower bound on the objective (its unit:
        ``objective_unit``)."""
        return float(self._certificate("lower_bound"))

    @property
    def objective_value(self) -> float:
        """The objective's value at the optimum."""
        return float(self._certificate("objective_value"))

    @property
    def objective_unit(self) -> str:
        """The objective's unit: ms, ms x $, $ or W."""
        return str(self._data.get("objective_unit") or (self._data.get("model") or {}).get("unit"))

    @property
    def binding_constraints(self) -> List[Dict[str, Any]]:
        """The binding constraints: constraint, marginal (what relaxing it
        is worth), per (its unit)."""
        return copy.deepcopy(self._certificate("binding_constraints") or [])

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """A table as a ``pandas.DataFrame``: ``dims`` (default) or
        ``binding``."""
        return _table_choice(
            table,
            {
                "dims": lambda: _frame(self._data.get("dims") or [], ["name", "bw_gbps"]),
                "binding": lambda: _frame(self.binding_constraints),
            },
        )

    def _summary(self) -> Sequence[str]:
        return ["study", "objective", "bw_gbps", "iteration_time_ms", "gap", "network_cost_usd"]


class BomItem(Record):
    """One line of a bill of materials."""

    component: field[str] = field("The catalog's part.")
    kind: field[str] = field("port, switch, cable, ...")
    role: field[str] = field("What it is for.")
    dimension: field[str] = field("The dimension it is bought for.")
    quantity: field[int] = field("How many.")
    unit_price_usd: field[float] = field("Price of one, $.")
    unit_power_w: field[float] = field("Power of one, W.")


class Bom(Record):
    """A bill of materials (``Study.bom``; the CLI's ``bom --json``).

    Tables for ``to_pandas``: ``items`` (default: every part, with its
    extended price and power), ``dims``, ``servers``."""

    study: field[str] = field("The study's name.")
    catalog: field[str] = field("The catalog priced from.")
    npus: field[int] = field("NPUs.")
    bw_gbps: field[List[float]] = field("The allocation asked, GB/s per NPU per dimension.")
    bought_gbps: field[List[float]] = field("The bandwidth the parts give, GB/s per NPU per dimension.")
    capex_usd: field[float] = field("Capital expense, $.")
    power_w: field[float] = field("Power, W.")
    cost_per_npu_usd: field[float] = field("Capex per NPU, $.")
    items: rows[BomItem] = rows(BomItem, "Every part: ports, switches, cables.")
    dims: field[List[Dict[str, Any]]] = field("Per dimension: the design bought, its capex and items.")
    servers: field[List[Dict[str, Any]]] = field("Servers a dimension comes with (outside capex).")

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """A table as a ``pandas.DataFrame``: ``items`` (default; with
        ``price_usd`` and ``power_w``: quantity times the unit's), ``dims``
        or ``servers``."""

        def items() -> Any:
            df = _frame(self._data.get("items") or [], ["dimension", "component", "kind", "role", "quantity"])
            if len(df):
                df["price_usd"] = df["quantity"] * df["unit_price_usd"]
                df["power_w"] = df["quantity"] * df["unit_power_w"]
            return df

        def dims() -> Any:
            return _frame(
                [{k: v for k, v in d.items() if k != "items"} for d in self._data.get("dims") or []],
                ["dimension"],
            )

        return _table_choice(
            table,
            {"items": items, "dims": dims, "servers": lambda: _frame(self._data.get("servers") or [])},
        )

    def _summary(self) -> Sequence[str]:
        return ["study", "bw_gbps", "bought_gbps", "capex_usd", "power_w"]


class CatalogOptimum(Record):
    """The best fabric the catalog sells (``Study.optimize(catalog=True)``;
    the CLI's ``optimize --catalog --json``): a MILP over purchasable
    designs, beside the continuous optimum.

    Tables for ``to_pandas``: the bill's (``items`` by default)."""

    study: field[str] = field("The study's name.")
    objective: field[str] = field("The objective.")
    budget_usd: field[Optional[float]] = field("The capex budget, $.")
    budget_w: field[Optional[float]] = field("The power budget, W.")
    bw_gbps: field[List[float]] = field("The design bought, GB/s per NPU per dimension.")
    iteration_time_ms: field[float] = field("Its iteration time, ms.")
    capex_usd: field[float] = field("Its capex, $.")
    power_w: field[float] = field("Its power, W.")
    mip_rel_gap: field[float] = field("The MILP's relative gap.")
    solve_ms: field[float] = field("Wall time, ms.")

    @property
    def bom(self) -> Bom:
        """The design's bill of materials."""
        return Bom(self._data["bom"])

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """The bill of materials' table (see ``Bom.to_pandas``)."""
        return self.bom.to_pandas(table)

    def _summary(self) -> Sequence[str]:
        return ["study", "objective", "bw_gbps", "iteration_time_ms", "capex_usd"]


# ---------------------------------------------------------------- frontier


class FrontierPoint(Record):
    """One budget of a frontier: the fastest design within it."""

    budget: field[float] = field("The budget, in the frontier's unit.")
    spent: field[float] = field("What the design spends of it.")
    iteration_time_ms: field[float] = field("The design's iteration time, ms.")
    lower_bound_ms: field[float] = field("Its certified lower bound, ms.")
    gap: field[float] = field("Its relative gap.")
    bw_gbps: field[List[float]] = field("The design, GB/s per NPU per dimension.")
    network_cost_usd: field[float] = field("Its network cost, $.")
    network_power_w: field[float] = field("Its network power, W.")
    binding: field[List[str]] = field("The constraints binding there.")
    equal_split_ms: field[float] = field("The same budget split equally, ms.")


class Frontier(Record):
    """The fastest design at each budget (``Study.frontier``; the rows of
    the CLI's ``frontier-<axis>.csv``).

    ``to_pandas()``: the points, with one ``bw_<dim>_gbps`` column per
    dimension and ``knee`` as the CSV has them."""

    study: field[str] = field("The study's name.")
    axis: field[str] = field("cost, power or total-bw.")
    unit: field[str] = field("The budget's unit: $M, kW or GB/s per NPU.")
    dims: field[List[str]] = field("The dimensions' names.")
    points: rows[FrontierPoint] = rows(FrontierPoint, "The points, budget ascending.")
    knee: field[int] = field("The index of the knee point.")
    lp_solves: field[int] = field("LP solves it took.")
    markers: field[List[Dict[str, Any]]] = field("The study's fixed designs on the axis: name, budget, time_ms.")
    schedule_backed: field[Optional[List[Dict[str, Any]]]] = field(
        "With the schedule evaluator: every budget optimized against schedules.", default=None
    )
    files: field[List[str]] = field("The files written (with ``out``), else empty.", default=[])

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """The points as a ``pandas.DataFrame`` (``points``, default), or
        the study's designs (``markers``) or the schedule-backed rows
        (``schedule_backed``)."""

        def points() -> Any:
            recs = _split_bw(self._data.get("points") or [], self.dims)
            for i, r in enumerate(recs):
                r["knee"] = i == self.knee
            return _frame(recs, ["budget", "spent", "iteration_time_ms", "lower_bound_ms", "gap"])

        return _table_choice(
            table,
            {
                "points": points,
                "markers": lambda: _frame(self.markers),
                "schedule_backed": lambda: _frame(_split_bw(self.schedule_backed or [], self.dims)),
            },
        )

    def _summary(self) -> Sequence[str]:
        return ["study", "axis", "unit", "knee", "lp_solves"]

    def __repr__(self) -> str:
        return f"Frontier(study={self.study!r}, axis={self.axis!r}, points={len(self._data.get('points') or [])})"


# ---------------------------------------------------------------- coopt


class Strategy(Record):
    """One parallelization strategy of a co-optimization, with its fabric."""

    tp: field[int] = field("Tensor-parallel degree.")
    pp: field[int] = field("Pipeline-parallel degree.")
    dp: field[int] = field("Data-parallel degree.")
    ep: field[int] = field("Expert-parallel degree.", default=1)
    status: field[str] = field("solved, or why not (e.g. over HBM).")
    iteration_time_ms: field[Optional[float]] = field("Its iteration time at its optimal fabric, ms.", default=None)
    bw_gbps: field[Optional[List[float]]] = field("Its optimal fabric, GB/s per NPU per dimension.", default=None)
    gap: field[Optional[float]] = field("The solve's relative gap.", default=None)
    equal_split_ms: field[Optional[float]] = field("Its time on the equal split, ms.", default=None)
    network_cost_usd: field[Optional[float]] = field("Its network cost, $.", default=None)
    network_power_w: field[Optional[float]] = field("Its network power, W.", default=None)
    memory_gib: field[Optional[float]] = field("HBM per NPU, GiB.", default=None)
    micro_batch: field[Optional[int]] = field("Micro-batch size.", default=None)
    recompute: field[Optional[str]] = field("Activation recomputation.", default=None)
    zero: field[Optional[int]] = field("ZeRO stage.", default=None)
    sequence_parallel: field[Optional[bool]] = field("Sequence parallelism.", default=None)
    virtual_stages: field[Optional[int]] = field("Virtual pipeline stages.", default=None)
    order: field[Optional[str]] = field("The placement order of tp, pp, dp on the fabric.", default=None)


class Coopt(Record):
    """The parallelization chosen with the fabric (``Study.coopt``; the
    CLI's ``coopt --json``).

    ``to_pandas()``: the strategies listed (the ``top`` best), with
    ``tp``, ``pp``, ``dp``, ``ep``, ``iteration_time_ms`` first."""

    study: field[str] = field("The study's name.")
    best_ms: field[Optional[float]] = field("The joint optimum's iteration time, ms.")
    strategies: rows[Strategy] = rows(Strategy, "The best strategies, fastest first (``top`` of them).")
    strategies_total: field[int] = field("Strategies in the search.")
    searched: field[int] = field("Candidates searched.")
    solved: field[int] = field("Candidates solved.")
    pruned: field[int] = field("Candidates pruned against the best.")
    rejected: field[int] = field("Candidates rejected (memory, divisibility).")
    equal_split_gbps: field[List[float]] = field("The equal split of the fabric, GB/s per NPU per dimension.")
    best_on_equal_split_ms: field[Optional[float]] = field("The best strategy on the equal split, ms.", default=None)
    default_optimized_ms: field[Optional[float]] = field(
        "The study's own strategy on its optimal fabric, ms.", default=None
    )
    solve_s: field[float] = field("Wall time, s.")
    optimum_replayed: field[Optional[Dict[str, Any]]] = field(
        "With ``replay=True``: the joint optimum replayed on the best schedules.", default=None
    )
    accelerators: field[Optional[Dict[str, Any]]] = field(
        "With ``[npu] type = [...]``: every accelerator's best design.", default=None
    )
    archs: field[Optional[Dict[str, Any]]] = field("With ``[npu.arch]``: the architecture search.", default=None)

    @property
    def best(self) -> Optional[Strategy]:
        """The joint optimum, or None when no strategy was solved."""
        s = self.strategies
        return s[0] if s else None

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """The strategies as a ``pandas.DataFrame`` (``strategies``,
        default)."""
        return _table_choice(
            table,
            {
                "strategies": lambda: _frame(
                    self._data.get("strategies") or [],
                    ["tp", "pp", "dp", "ep", "iteration_time_ms", "status", "bw_gbps", "gap"],
                )
            },
        )

    def _summary(self) -> Sequence[str]:
        return ["study", "best_ms", "strategies_total", "searched", "solved"]


# ---------------------------------------------------------------- run, collective


class Run(Record):
    """A study's whole run (``dimsum.run``; the CLI's ``dimsum run``): the
    files written, each objective's recommended allocation and, with
    ``[procurement]``, the decision.

    ``to_pandas()``: the recommended allocations, one row per objective."""

    study: field[str] = field("The study's name.")
    warnings: field[List[str]] = field("The study's warnings (issued as DimsumWarning too).", default=[])
    directory: field[str] = field("The directory written, ``OUT/<study>``.")
    summary: field[str] = field("The summary's path (summary.md).")
    files: field[List[str]] = field("Every file written.")
    recommended: field[List[Dict[str, Any]]] = field(
        "Per objective of ``[run]``: ``objective`` and ``solution`` (as ``optimize.json``), or ``error``."
    )
    decision: field[Optional[Dict[str, Any]]] = field(
        "With ``[procurement]``: the design to buy (objective, comparison, bom, next_faster, replayed); None without."
    )

    @property
    def decision_bom(self) -> Optional[Bom]:
        """The decision's bill of materials, or None."""
        d = self.decision
        return Bom(d["bom"]) if d else None

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """The recommended allocations (``recommended``, default)."""

        def recommended() -> Any:
            recs = []
            for r in self.recommended:
                s = r.get("solution") or {}
                recs.append(
                    {
                        "objective": r["objective"],
                        "bw_gbps": s.get("bw_gbps"),
                        "iteration_time_ms": s.get("iteration_time_ms"),
                        "network_cost_usd": s.get("network_cost_usd"),
                        "network_power_w": s.get("network_power_w"),
                        "gap": s.get("gap"),
                        "error": r.get("error"),
                    }
                )
            return _frame(recs)

        return _table_choice(table, {"recommended": recommended})

    def _summary(self) -> Sequence[str]:
        return ["study", "directory", "summary"]


class Collective(Record):
    """One collective replayed on a topology against its lower bounds
    (``dimsum.collective``; the CLI's ``collective --json``), or a forest
    timed in rounds (``timing == "rounds"``: no schedule replayed, so
    ``valid`` is None).

    ``to_pandas()``: the links (``links``, default: busy time, bytes,
    utilization) or the critical path (``critical_path``)."""

    topology: field[str] = field("The topology.")
    npus: field[int] = field("NPUs.")
    collective: field[str] = field("The collective.")
    algorithm: field[str] = field("The algorithm (what ``best`` chose, with what it tried).")
    size_bytes: field[float] = field("The buffer, bytes.")
    time_us: field[float] = field("The collective's time, us.")
    lower_bound_us: field[float] = field("What no algorithm can beat on this topology, us.")
    ratio: field[float] = field("time / bound.")
    bounds: field[Dict[str, Any]] = field("The bound's parts: injection, cut (and its set), latency, us.")
    timing: field[str] = field("replay, or rounds.", default="replay")
    chunks_per_npu: field[Optional[int]] = field("Chunks per NPU shard.", default=None)
    link_model: field[Optional[str]] = field("alpha-beta or tacos.", default=None)
    transfers: field[Optional[int]] = field("Transfers replayed.", default=None)
    max_utilization: field[Optional[float]] = field("The busiest link's utilization.", default=None)

    @property
    def valid(self) -> Optional[bool]:
        """Whether the replay delivered every chunk where it belongs (None
        for a forest timed in rounds)."""
        return self._data.get("valid")

    @property
    def errors(self) -> List[str]:
        """The replay's errors (an invalid schedule's first ones)."""
        return list(self._data.get("errors") or [])

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """A table as a ``pandas.DataFrame``: ``links`` (default) or
        ``critical_path``."""
        return _table_choice(
            table,
            {
                "links": lambda: _frame(self._data.get("links") or []),
                "critical_path": lambda: _frame(self._data.get("critical_path") or []),
            },
        )

    def _summary(self) -> Sequence[str]:
        return ["topology", "collective", "algorithm", "time_us", "lower_bound_us", "valid"]
