"""dimsum from Python, notebook style: the bandwidth-vs-cost frontier of
the default study drawn with matplotlib, and a co-optimization's best
strategies as a pandas table.

    pip install .                      # the dimsum module, from a checkout
    pip install pandas matplotlib
    python examples/frontier.py [OUT.png]

Run from the repository's root (the studies' paths are relative to it);
the chart goes to OUT.png, else to a temporary directory.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import dimsum  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def frontier_chart(out: Path) -> None:
    # The default study: LIBRA's GPT-3 on its 4D fabric, with prices and caps.
    study = dimsum.Study.load(ROOT / "studies" / "gpt3-4d-procurement.toml")
    f = study.frontier(axis="cost", points=40, progress=False)
    df = f.to_pandas()  # one row per budget, bw_<dim>_gbps per dimension
    knee = df[df["knee"]].iloc[0]
    print(
        f"{study.name}: {len(df)} budgets from ${df.budget.min():.2f}M to ${df.budget.max():.2f}M; "
        f"knee at ${knee.budget:.2f}M, {knee.iteration_time_ms:.1f} ms per iteration "
        f"(worst gap {df.gap.max():.0e})"
    )

    fig, (time_ax, bw_ax) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    time_ax.plot(df.budget, df.iteration_time_ms, marker=".", label="fastest design")
    time_ax.plot(df.budget, df.equal_split_ms, linestyle="--", label="equal split of the same budget")
    time_ax.scatter([knee.budget], [knee.iteration_time_ms], color="red", zorder=3, label="knee")
    for m in f.markers:
        time_ax.scatter([m["budget"]], [m["time_ms"]], marker="x", color="black", zorder=3)
        time_ax.annotate(
            m["name"], (m["budget"], m["time_ms"]), textcoords="offset points", xytext=(-4, 8), ha="right"
        )
    time_ax.set_ylabel("iteration time (ms)")
    time_ax.set_title(f"{study.name}: the fastest design at each network budget")
    time_ax.legend()
    bw_ax.stackplot(
        df.budget,
        [df[f"bw_{d}_gbps"] for d in study.dims],
        labels=study.dims,
    )
    bw_ax.set_xlabel(f"network budget ({f.unit})")
    bw_ax.set_ylabel("GB/s per NPU")
    bw_ax.legend(loc="upper left")
    for ax in (time_ax, bw_ax):
        ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"frontier chart: {out}")


def coopt_table() -> None:
    # Llama-2 70B on a 4D fabric: every TP x PP x DP placement, each with
    # its optimal bandwidth allocation.
    study = dimsum.Study.load(ROOT / "studies" / "llama2-70b-coopt.toml")
    c = study.coopt(top=10, progress=False)
    df = c.to_pandas()
    cols = ["tp", "pp", "dp", "ep", "order", "iteration_time_ms", "equal_split_ms", "network_cost_usd", "memory_gib"]
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(f"\n{study.name}: {c.strategies_total} strategies, {c.solved} solved; the ten fastest:")
        print(df[cols].round(2).to_string(index=False))
    best = c.best
    assert best is not None
    print(f"joint optimum: TP {best.tp} x PP {best.pp} x DP {best.dp}, {best.iteration_time_ms:.1f} ms per iteration")


def main() -> None:
    if len(sys.argv) > 1:
        out = Path(sys.argv[1])
    else:
        out = Path(tempfile.mkdtemp(prefix="dimsum-")) / "frontier.png"
    frontier_chart(out)
    coopt_table()


if __name__ == "__main__":
    main()
