"""Type stubs of ``dimsum._dimsum``, the native half of the package (Rust,
PyO3). Every call returns the dict the CLI's ``--json`` prints; the typed
wrappers are in ``dimsum`` itself."""

import builtins
from typing import Any, Callable, Dict, List, Optional, Tuple, final

__all__ = ["DimsumError", "InputError", "Study", "__version__", "collective", "run"]

__version__: str

_Callback = Optional[Callable[[str, int, int], Any]]

class InputError(builtins.ValueError):
    """Bad input: a study file, or an argument, that cannot be used; str()
    is the line the CLI prints."""

    file: Optional[str]
    """The file, or None for an argument."""
    line: Optional[int]
    """The 1-based line in ``file``, when known."""
    field: str
    """The key (``fabric.dims[2].npus``) or the CLI flag an argument stands
    for (``--bw``)."""
    message: str
    """What is wrong and what is allowed."""

class DimsumError(builtins.RuntimeError):
    """A run that failed on good input (infeasible, unbounded, a failed
    replay, a file that could not be written)."""

@final
class Study:
    """A study file, read and validated."""

    @staticmethod
    def load(path: str) -> Study:
        """Reads and validates the study file at ``path``."""
    @property
    def name(self) -> str:
        """The study's name."""
    @property
    def description(self) -> str:
        """The study's description."""
    @property
    def path(self) -> str:
        """The file it was read from."""
    @property
    def dims(self) -> List[str]:
        """The dimensions' names, fastest first."""
    @property
    def npus(self) -> int:
        """NPUs in the fabric."""
    @property
    def fabric(self) -> str:
        """The fabric's shape."""
    @property
    def bw(self) -> Optional[List[float]]:
        """The study's own allocation."""
    @property
    def has_model(self) -> bool:
        """Whether the study has a ``[model]``."""
    @property
    def warnings(self) -> List[str]:
        """The study's warnings, each located."""
    def evaluate(
        self,
        bw: Optional[List[float]] = None,
        evaluator: Optional[str] = None,
        schedule_algorithm: Optional[str] = None,
        schedule_chunks: Optional[int] = None,
        progress: _Callback = None,
    ) -> Tuple[Dict[str, Any], List[str]]:
        """``dimsum eval --json``, and the warnings the CLI prints."""
    def optimize(
        self,
        objective: Optional[str] = None,
        constraints: List[str] = ...,
        target_ms: Optional[float] = None,
        no_study_constraints: bool = False,
        catalog: bool = False,
        budget_usd: Optional[float] = None,
        budget_w: Optional[float] = None,
        evaluator: Optional[str] = None,
        schedule_algorithm: Optional[str] = None,
        schedule_chunks: Optional[int] = None,
        progress: _Callback = None,
    ) -> Dict[str, Any]:
        """``dimsum optimize --json``."""
    def frontier(
        self,
        axis: Optional[str] = None,
        points: Optional[int] = None,
        out: Optional[str] = None,
        evaluator: Optional[str] = None,
        schedule_algorithm: Optional[str] = None,
        schedule_chunks: Optional[int] = None,
        progress: _Callback = None,
    ) -> Dict[str, Any]:
        """``dimsum frontier``'s points, and the files written into ``out``."""
    def coopt(
        self,
        recipe: str = ...,  # "study"
        replay: bool = False,
        top: int = 10,
        progress: _Callback = None,
    ) -> Dict[str, Any]:
        """``dimsum coopt --json``."""
    def bom(self, bw: Optional[List[float]] = None) -> Dict[str, Any]:
        """``dimsum bom --json``."""

def run(
    path: str,
    out: str = ...,  # "results"
    evaluator: Optional[str] = None,
    schedule_algorithm: Optional[str] = None,
    schedule_chunks: Optional[int] = None,
    progress: _Callback = None,
) -> Dict[str, Any]:
    """``dimsum run``: the files written, the recommended allocations, the decision."""

def collective(
    topology: str,
    collective: str = ...,  # "all-reduce"
    size: Optional[str] = None,
    algorithm: Optional[str] = None,
    dim_algorithms: Optional[str] = None,
    chunks_per_npu: int = 1,
    link_gbps: Optional[str] = None,
    link_latency_us: Optional[str] = None,
    bw: Optional[str] = None,
    link_model: str = ...,  # "alpha-beta"
    single_port: bool = False,
    best_tolerance: str = ...,  # "1%"
    seed: int = 0,
    restarts: int = 1,
    schedule_in: Optional[str] = None,
    schedule_out: Optional[str] = None,
    charts: Optional[str] = None,
    replay: bool = False,
    progress: _Callback = None,
) -> Dict[str, Any]:
    """``dimsum collective --json``."""
