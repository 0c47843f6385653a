"""Every call of the Python module against the CLI: for the same inputs,
``to_dict()`` equals what ``--json`` prints (wall-clock times masked), the
files written are the CLI's byte for byte, and each call's bad input
raises ``InputError`` with the CLI's error line and exit code 2."""

from __future__ import annotations

import csv
import filecmp
import json
from pathlib import Path

import pytest

import dimsum
from conftest import Cli, masked

GPT3 = "studies/gpt3-4d.toml"
PROCUREMENT = "studies/gpt3-4d-procurement.toml"
COOPT = "studies/llama2-70b-coopt.toml"


@pytest.fixture(scope="module")
def gpt3() -> dimsum.Study:
    return dimsum.Study.load(GPT3)


def same_error(e: dimsum.InputError, cli: Cli, *args: str) -> None:
    """The CLI fails on the same input with exit code 2 and `e`'s line."""
    code, line = cli.error(*args)
    assert code == 2
    assert str(e) == line


# ---------------------------------------------------------------- load


def test_load(gpt3: dimsum.Study) -> None:
    assert gpt3.name == "gpt3-4d"
    assert gpt3.dims == ["chiplet", "package", "node", "pod"]
    # Ring(4) x FullyConnected(8) x Ring(4) x Switch(32).
    assert gpt3.npus == 4 * 8 * 4 * 32
    assert gpt3.fabric == "Ring(4) x FullyConnected(8) x Ring(4) x Switch(32)"
    assert gpt3.bw == [250.0, 250.0, 250.0, 250.0]
    assert not gpt3.has_model
    assert dimsum.Study.load(Path(COOPT)).has_model  # a PathLike too
    assert dimsum.Study(GPT3).dims == gpt3.dims  # Study(path) loads too


def test_load_errors(tmp_path: Path, cli: Cli) -> None:
    with pytest.raises(dimsum.InputError) as missing:
        dimsum.Study.load("studies/no-such-study.toml")
    e = missing.value
    assert isinstance(e, ValueError)
    assert (e.file, e.line, e.field) == ("studies/no-such-study.toml", None, "")
    assert e.message.startswith("cannot read the study file")
    same_error(e, cli, "eval", "studies/no-such-study.toml")

    # A bad value, refused at its line and key.
    bad = tmp_path / "bad.toml"
    lines = Path(GPT3).read_text().splitlines()
    at = [i for i, l in enumerate(lines) if l.startswith("bw = ")]
    assert len(at) == 1
    lines[at[0]] = "bw = [250, 250, -1, 250]"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(dimsum.InputError) as located:
        dimsum.Study.load(bad)
    e = located.value
    assert e.file == str(bad)
    assert e.line == at[0] + 1
    assert e.field == "bw"
    assert e.message == "-1 GB/s on dimension `node` is not allowed: use a bandwidth >= 0"
    assert str(e) == f"{bad}:{e.line}: bw: {e.message}"
    same_error(e, cli, "eval", str(bad))


# ---------------------------------------------------------------- evaluate


def test_evaluate_equals_cli(gpt3: dimsum.Study, cli: Cli) -> None:
    e = gpt3.evaluate(bw=[500, 300, 150, 50])
    assert e.to_dict() == cli.json("eval", GPT3, "--bw", "500,300,150,50")
    assert e.bw_gbps == [500.0, 300.0, 150.0, 50.0]
    # The study's own bw by default.
    assert gpt3.evaluate().to_dict() == cli.json("eval", GPT3)


def test_evaluate_fields_and_table(gpt3: dimsum.Study) -> None:
    e = gpt3.evaluate()
    d = e.to_dict()
    assert e.iteration_time_ms == d["iteration_time_ms"]
    assert e.iteration_lower_bound_ms <= e.iteration_time_ms
    # The iteration is compute plus exposed communication (no overlap).
    assert e.iteration_time_ms == pytest.approx(e.compute_time_ms + e.comm_time_ms, rel=1e-12)
    assert [x.name for x in e.dims] == gpt3.dims
    assert len(e.collectives) == len(d["per_collective"]) > 0
    assert all(c.lower_bound_ms <= c.time_ms for c in e.collectives)
    df = e.to_pandas()
    assert list(df.columns[:7]) == ["layer", "phase", "type", "bytes", "group", "time_ms", "lower_bound_ms"]
    assert df["time_ms"].tolist() == [c.time_ms for c in e.collectives]
    assert e.to_pandas("dims")["name"].tolist() == gpt3.dims
    with pytest.raises(ValueError, match="not a table"):
        e.to_pandas("links")
    # to_dict is a copy.
    d["iteration_time_ms"] = 0
    assert e.iteration_time_ms != 0


def test_evaluate_errors(gpt3: dimsum.Study, cli: Cli) -> None:
    with pytest.raises(dimsum.InputError) as short:
        gpt3.evaluate(bw=[1, 2, 3])
    e = short.value
    assert (e.file, e.line, e.field) == (None, None, "--bw")
    assert e.message.startswith("3 values given but the fabric has 4 dimensions")
    same_error(e, cli, "eval", GPT3, "--bw", "1,2,3")

    with pytest.raises(dimsum.InputError) as zero:
        gpt3.evaluate(bw=[0, 250, 250, 250])
    same_error(zero.value, cli, "eval", GPT3, "--bw", "0,250,250,250")

    with pytest.raises(dimsum.InputError) as evaluator:
        gpt3.evaluate(evaluator="magic")
    assert evaluator.value.field == "--evaluator"
    same_error(evaluator.value, cli, "eval", GPT3, "--evaluator", "magic")

    with pytest.raises(TypeError):
        gpt3.evaluate(bw="250,250,250,250")  # type: ignore[arg-type]


def test_evaluate_warns_as_the_cli_does(cli: Cli) -> None:
    s = dimsum.Study.load(PROCUREMENT)
    with pytest.warns(dimsum.DimsumWarning) as caught:
        e = s.evaluate(bw=[2000, 250, 250, 250])
    code, _, err = cli.run("eval", PROCUREMENT, "--bw", "2000,250,250,250")
    assert code == 0
    assert [f"warning: {w.message}" for w in caught] == err.splitlines()
    assert [d.within_bounds for d in e.dims] == [False, True, True, False]


def test_evaluate_against_schedules_equals_cli(gpt3: dimsum.Study, cli: Cli) -> None:
    e = gpt3.evaluate(evaluator="schedule", schedule_algorithm="ring")
    args = ("eval", GPT3, "--evaluator", "schedule", "--schedule-algorithm", "ring")
    assert e.to_dict() == cli.json(*args)
    assert e.evaluator == "schedule"
    # The study is unchanged: the analytic evaluation as before.
    assert gpt3.evaluate().evaluator == "analytic"


# ---------------------------------------------------------------- optimize


def test_optimize_equals_cli(gpt3: dimsum.Study, cli: Cli) -> None:
    o = gpt3.optimize(objective="perf")
    assert masked(o.to_dict()) == masked(cli.json("optimize", GPT3, "--objective", "perf"))
    assert o.solve_ms > 0
    # Extra constraints join the study's, through the study's parser.
    budget = gpt3.optimize(constraints=["cost <= 2.25e7"])
    assert masked(budget.to_dict()) == masked(cli.json("optimize", GPT3, "--constraint", "cost <= 2.25e7"))
    assert budget.network_cost_usd <= 2.25e7 * (1 + 1e-9) < o.network_cost_usd
    assert budget.iteration_time_ms >= o.iteration_time_ms * (1 - 1e-9)  # tighter: never faster
    named = gpt3.optimize(constraints=["node <= 2*pod"])
    assert masked(named.to_dict()) == masked(cli.json("optimize", GPT3, "--constraint", "node <= 2*pod"))
    # The study's node + pod == 200 with node <= 2 pod binding: 400/3 and 200/3.
    assert named.bw_gbps[2:] == pytest.approx([400 / 3, 200 / 3], rel=1e-9)


def test_optimize_against_schedules_equals_cli(gpt3: dimsum.Study, cli: Cli) -> None:
    o = gpt3.optimize(evaluator="schedule", schedule_algorithm="ring")
    args = ("optimize", GPT3, "--evaluator", "schedule", "--schedule-algorithm", "ring")
    assert masked(o.to_dict()) == masked(cli.json(*args))
    assert o.evaluator == "schedule"
    # The fixed point's certificate is its last master solve's.
    assert o.gap == o["model"]["gap"] and o.lower_bound == o["model"]["lower_bound"]
    # Its allocation keeps the study's constraints: 1000 GB/s in all.
    assert sum(o.bw_gbps) == pytest.approx(1000, rel=1e-9)


def test_optimize_fields(gpt3: dimsum.Study) -> None:
    o = gpt3.optimize()
    assert o.objective == "perf" and o.objective_unit == "ms"
    assert o.evaluator == "analytic"
    # Certified: the lower bound within the gap of the time.
    assert 0 <= o.gap <= 1e-7
    assert o.lower_bound <= o.iteration_time_ms
    assert (o.iteration_time_ms - o.lower_bound) / o.iteration_time_ms <= o.gap * (1 + 1e-9)
    # LIBRA's default constraints: the total is 1000 GB/s, B0 = 500, B2 + B3 = 200.
    assert sum(o.bw_gbps) == pytest.approx(1000, rel=1e-9)
    assert o.bw_gbps[0] == pytest.approx(500, rel=1e-9)
    assert o.bw_gbps[2] + o.bw_gbps[3] == pytest.approx(200, rel=1e-9)
    assert {b["constraint"] for b in o.binding_constraints} >= {"B0 == 500"}
    assert o.to_pandas()["bw_gbps"].tolist() == o.bw_gbps
    assert len(o.to_pandas("binding")) == len(o.binding_constraints)


def test_optimize_catalog_equals_cli(cli: Cli) -> None:
    s = dimsum.Study.load(PROCUREMENT)
    c = s.optimize(catalog=True)
    assert isinstance(c, dimsum.CatalogOptimum)
    assert masked(c.to_dict()) == masked(cli.json("optimize", PROCUREMENT, "--catalog"))
    assert c.bom.capex_usd == c.capex_usd
    assert c.capex_usd <= c.budget_usd


def test_optimize_errors(gpt3: dimsum.Study, cli: Cli) -> None:
    with pytest.raises(dimsum.InputError) as objective:
        gpt3.optimize(objective="fastest")
    e = objective.value
    assert e.field == "--objective"
    assert e.message.startswith("`fastest` is not an objective; allowed:")
    same_error(e, cli, "optimize", GPT3, "--objective", "fastest")

    with pytest.raises(dimsum.InputError) as constraint:
        gpt3.optimize(constraints=["B0 + + 3"])
    assert constraint.value.field == "--constraint"
    same_error(constraint.value, cli, "optimize", GPT3, "--constraint", "B0 + + 3")

    with pytest.raises(dimsum.InputError) as target:
        gpt3.optimize(objective="min-cost")
    assert target.value.field == "--target-ms"
    same_error(target.value, cli, "optimize", GPT3, "--objective", "min-cost")

    with pytest.raises(dimsum.InputError) as budget:
        gpt3.optimize(budget_usd=1e6)
    assert budget.value.field == "--budget-usd"

    # Good input that cannot be solved: DimsumError (the CLI's exit 1).
    with pytest.raises(dimsum.DimsumError) as infeasible:
        gpt3.optimize(constraints=["B0 + B1 + B2 + B3 >= 2000"])
    assert isinstance(infeasible.value, RuntimeError)
    code, line = cli.error("optimize", GPT3, "--constraint", "B0 + B1 + B2 + B3 >= 2000")
    assert code == 1 and str(infeasible.value) == line
    assert line.startswith("infeasible:")


# ---------------------------------------------------------------- frontier


def test_frontier_equals_cli_csv(gpt3: dimsum.Study, cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli.run("frontier", GPT3, "--axis", "cost", "--points", "12", "--out", str(tmp_path / "cli"))
    assert code == 0, err
    f = gpt3.frontier(axis="cost", points=12, out=tmp_path / "py", progress=False)
    # The same files, byte for byte.
    names = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert sorted(Path(p).name for p in f.files) == names
    assert "frontier-cost.csv" in names
    match, mismatch, errors = filecmp.cmpfiles(tmp_path / "cli", tmp_path / "py", names, shallow=False)
    assert (mismatch, errors) == ([], [])
    # And the points are the CSV's rows.
    with open(tmp_path / "cli" / "frontier-cost.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(f.points) == 12
    for row, p in zip(rows, f.points):
        assert float(row["budget"]) == p.budget
        assert float(row["iteration_time_ms"]) == p.iteration_time_ms
        assert [float(row[f"bw_{d}_gbps"]) for d in gpt3.dims] == p.bw_gbps
    assert f.axis == "cost" and f.unit == "$M"
    df = f.to_pandas()
    assert df["bw_pod_gbps"].tolist() == [p.bw_gbps[3] for p in f.points]
    assert df["knee"].tolist() == [row["knee"] == "true" for row in rows]
    # More budget is never slower.
    t = [p.iteration_time_ms for p in f.points]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(t, t[1:]))


def test_frontier_errors(gpt3: dimsum.Study, cli: Cli) -> None:
    with pytest.raises(dimsum.InputError) as axis:
        gpt3.frontier(axis="latency")
    assert axis.value.field == "--axis"
    same_error(axis.value, cli, "frontier", GPT3, "--axis", "latency")
    with pytest.raises(dimsum.InputError) as points:
        gpt3.frontier(points=1)
    assert points.value.field == "--points"
    same_error(points.value, cli, "frontier", GPT3, "--points", "1")


# ---------------------------------------------------------------- coopt


def test_coopt_equals_cli(cli: Cli) -> None:
    s = dimsum.Study.load(COOPT)
    c = s.coopt(top=5, progress=False)
    assert masked(c.to_dict()) == masked(cli.json("coopt", COOPT, "--top", "5"))
    assert len(c.strategies) == 5
    best = c.best
    assert best is not None and best.iteration_time_ms == c.best_ms
    # Every strategy fills the fabric: TP x PP x DP = NPUs.
    for st in c.strategies:
        assert st.tp * st.pp * st.dp == s.npus
    times = [st.iteration_time_ms for st in c.strategies]
    assert times == sorted(times)
    df = c.to_pandas()
    assert list(df.columns[:5]) == ["tp", "pp", "dp", "ep", "iteration_time_ms"]
    assert df["iteration_time_ms"].tolist() == times


def test_coopt_errors(gpt3: dimsum.Study, cli: Cli) -> None:
    with pytest.raises(dimsum.InputError) as no_model:
        gpt3.coopt()
    assert no_model.value.field == "coopt"
    same_error(no_model.value, cli, "coopt", GPT3)
    with pytest.raises(dimsum.InputError) as recipe:
        dimsum.Study.load(COOPT).coopt(recipe="all")
    e = recipe.value
    assert e.field == "--recipe"
    assert e.message == "`all` is not a recipe space; allowed: `study` or `whole`"


# ---------------------------------------------------------------- bom


def test_bom_equals_cli(cli: Cli) -> None:
    s = dimsum.Study.load(PROCUREMENT)
    b = s.bom(bw=[400, 300, 200, 100])
    assert b.to_dict() == cli.json("bom", PROCUREMENT, "--bw", "400,300,200,100")
    assert s.bom().to_dict() == cli.json("bom", PROCUREMENT)
    # Capex is the sum of the items.
    assert sum(i.quantity * i.unit_price_usd for i in b.items) == pytest.approx(b.capex_usd, rel=1e-12)
    df = b.to_pandas()
    assert df["price_usd"].sum() == pytest.approx(b.capex_usd, rel=1e-12)
    assert all(x >= y for x, y in zip(b.bought_gbps, b.bw_gbps))


def test_bom_errors(cli: Cli) -> None:
    s = dimsum.Study.load(PROCUREMENT)
    with pytest.raises(dimsum.InputError) as nan:
        s.bom(bw=[float("nan"), 1, 1, 1])
    assert nan.value.field == "--bw"
    with pytest.raises(dimsum.InputError) as short:
        s.bom(bw=[1])
    same_error(short.value, cli, "bom", PROCUREMENT, "--bw", "1")


# ---------------------------------------------------------------- run


def test_run_writes_what_the_cli_writes(cli: Cli, tmp_path: Path) -> None:
    code, out, err = cli.run("run", PROCUREMENT, "--out", str(tmp_path / "cli"))
    assert code == 0, err
    r = dimsum.run(PROCUREMENT, out=tmp_path / "py", progress=False)
    assert r.study == "gpt3-4d-procurement"
    assert r.directory == str(tmp_path / "py" / r.study)
    assert r.summary == str(Path(r.directory) / "summary.md")
    ours, theirs = Path(r.directory), tmp_path / "cli" / r.study
    names = sorted(p.name for p in theirs.iterdir())
    assert sorted(Path(f).relative_to(ours).as_posix() for f in r.files) == names
    match, mismatch, errors = filecmp.cmpfiles(theirs, ours, names, shallow=False)
    assert (mismatch, errors) == ([], [])
    # The recommended allocations are optimize.json's; the decision bom.json's.
    opt = json.loads((ours / "optimize.json").read_text())
    assert r.recommended == opt["optimize"]
    bom = json.loads((ours / "bom.json").read_text())
    assert r.decision is not None
    assert r.decision["objective"] == bom["decision"]
    assert r.decision["replayed"] == bom["decision_replayed"]
    decided = next(a for a in bom["answers"] if a["objective"] == bom["decision"])
    assert r.decision["bom"] == decided["bom"]
    assert r.decision_bom is not None and r.decision_bom.capex_usd <= bom["budget_usd"]
    assert r.to_pandas()["objective"].tolist() == [x["objective"] for x in opt["optimize"]]


def test_run_errors(cli: Cli, tmp_path: Path) -> None:
    with pytest.raises(dimsum.InputError) as missing:
        dimsum.run("studies/no-such-study.toml", out=tmp_path)
    same_error(missing.value, cli, "run", "studies/no-such-study.toml", "--out", str(tmp_path))
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- collective


def test_collective_equals_cli(cli: Cli, tmp_path: Path) -> None:
    # A one-way ring all-reduce of 8 MB on 8 NPUs, 50 GB/s, no latency:
    # 2 (p - 1) = 14 steps of one 1 MB chunk, 20 us each.
    c = dimsum.collective(topology="ring:8", size="8MB", algorithm="ring", link_latency_us=0,
                          schedule_out=tmp_path / "py.json")
    assert c.to_dict() == cli.json(
        "collective", "--topology", "ring:8", "--size", "8MB", "--algorithm", "ring",
        "--link-latency-us", "0", "--schedule-out", str(tmp_path / "cli.json"),
    )
    assert c.valid is True and c.errors == []
    assert c.time_us == pytest.approx(280.0, rel=1e-12)
    assert c.lower_bound_us <= c.time_us
    assert filecmp.cmp(tmp_path / "py.json", tmp_path / "cli.json", shallow=False)
    links = c.to_pandas()
    assert len(links) == 16  # each of the ring's 8 links, both ways
    assert (links["busy_us"] > 0).sum() == 8  # a one-way ring uses one way

    # Numbers are given as the flags' text: 64 MiB as an int, GB/s per dimension as a list.
    f = dimsum.collective("torus:4x4", "all-gather", 64 * 2**20, "forest", link_gbps=[50, 100])
    assert f.to_dict() == cli.json(
        "collective", "--topology", "torus:4x4", "--collective", "all-gather", "--size", "64MiB",
        "--algorithm", "forest", "--link-gbps", "50,100",
    )
    assert f.timing == "rounds" and f.valid is None
    assert f.lower_bound_us <= f.time_us


def test_collective_errors(cli: Cli) -> None:
    with pytest.raises(dimsum.InputError) as kind:
        dimsum.collective("ring:8", "gather", "1MiB")
    assert kind.value.field == "--collective"
    same_error(kind.value, cli, "collective", "--topology", "ring:8", "--collective", "gather", "--size", "1MiB")
    with pytest.raises(dimsum.InputError) as size:
        dimsum.collective("ring:8")
    assert size.value.field == "--size"
    same_error(size.value, cli, "collective", "--topology", "ring:8")
    with pytest.raises(dimsum.InputError) as topo:
        dimsum.collective("hypercube:8", size=1024)
    assert topo.value.field == "--topology"
    same_error(topo.value, cli, "collective", "--topology", "hypercube:8", "--size", "1024")
    with pytest.raises(dimsum.InputError) as algo:
        dimsum.collective("ring:8", size=1024, algorithm="wing")
    assert algo.value.field == "--algorithm"
