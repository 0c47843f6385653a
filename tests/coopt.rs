//! Co-optimizing the parallelization with the fabric, against brute force.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use dimsum::model::training::IterationModel;
use dimsum::model::transformer;
use dimsum::optimize::{self, Objective, Problem};
use dimsum::pipeline::coopt::{self, Verdict};
use dimsum::study::Study;
use std::path::Path;

const TINY: &str = r#"
name = "tiny-coopt"
time_model = "pipelined"
[[fabric.dims]]
name = "a"
block = "ring"
npus = 4
latency_ns = 100
[[fabric.dims]]
name = "b"
block = "switch"
npus = 4
latency_ns = 500
[cost.tiers.a]
link_usd_per_gbps = 1.0
[cost.tiers.b]
link_usd_per_gbps = 5.0
[model]
layers = 4
hidden = 1024
heads = 16
ffn = 4096
ffn_matrices = 2
seq = 512
vocab = 1000
global_batch = 32
micro_batch = 1
bytes_weight = 2
bytes_grad = 2
bytes_optimizer = 12
[npu]
peak_tflops = 100
efficiency = 0.5
hbm_gib = 80
[parallelism]
tp = 4
pp = 1
dp = 4
[optimize]
constraints = ["a + b == 200"]
"#;

fn tiny(dir: &Path, text: &str) -> Study {
    let p = dir.join("tiny.toml");
    std::fs::write(&p, text).unwrap();
    Study::load(&p).unwrap()
}

/// The joint optimum equals the best of solving every strategy on its own,
/// and is no worse than any of them; pruning loses nothing.
#[test]
fn joint_optimum_against_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny(dir.path(), TINY);
    let r = coopt::coopt(&s, &dimsum::progress::Quiet).unwrap();
    let best = r.strategies[0].time_ms().unwrap();
    let base = s.parallelism.clone().unwrap();
    let all = coopt::strategies(16, &base, 0);
    assert!(r.searched <= all.len());
    let mut brute = f64::INFINITY;
    let mut valid = 0;
    for st in &all {
        let Ok(g) = transformer::generate(s.model.as_ref().unwrap(), s.npu.as_ref().unwrap(), st, &s.fabric) else {
            continue;
        };
        valid += 1;
        let it = IterationModel::new(&g.workload, &s.fabric, &s.collective, s.training_loop);
        let p = Problem::new(&s.fabric, it, s.linear_cost(), s.constraints(&[]).unwrap());
        let t = optimize::solve(&p, Objective::Perf).unwrap().iteration_time_ms;
        assert!(best <= t * (1.0 + 1e-9), "{st:?}: {t} < joint {best}");
        brute = brute.min(t);
    }
    assert!(valid > 3, "{valid}");
    assert!((best - brute).abs() <= 1e-9 * brute, "{best} vs {brute}");
    assert_eq!(r.solved + r.pruned + r.rejected, r.searched);
    assert!(r.searched - r.rejected <= valid);
    // The comparisons are never better than the joint optimum.
    assert!(r.best_on_equal_split_ms.unwrap() >= best * (1.0 - 1e-9));
    assert!(r.default_optimized_ms.unwrap() >= best * (1.0 - 1e-9));
}

#[test]
fn strategies_over_hbm_are_rejected_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let text = TINY
        .replace("hbm_gib = 80", "hbm_gib = 0.12")
        .replace("tp = 4\npp = 1\ndp = 4", "tp = 16\npp = 1\ndp = 1");
    let s = tiny(dir.path(), &text);
    let r = coopt::coopt(&s, &dimsum::progress::Quiet).unwrap();
    let memory: Vec<&str> = r
        .strategies
        .iter()
        .filter_map(|x| match &x.verdict {
            Verdict::Rejected { reason } if reason.contains("HBM") => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert!(!memory.is_empty());
    assert!(
        memory[0].contains("GiB per NPU") && memory[0].contains("0.12 GiB"),
        "{}",
        memory[0]
    );
    // Whatever is solved fits.
    for row in &r.strategies {
        if row.time_ms().is_some() {
            assert!(row.memory_gib.unwrap() <= 0.12);
        }
    }
}

#[test]
fn coopt_json_lists_strategies_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tiny.toml");
    std::fs::write(&p, TINY).unwrap();
    let out = Command::cargo_bin("dimsum")
        .unwrap()
        .args(["coopt", "--json", "--replay"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // `--replay`: the joint optimum on its schedules, the analytic time
    // the search ranked it by, the bound under the replay.
    let replayed = &v["optimum_replayed"];
    let ms = |k: &str| replayed[k].as_f64().unwrap_or_else(|| panic!("{k}: {replayed}"));
    let best = v["best_ms"].as_f64().unwrap();
    assert!((ms("analytic_iteration_time_ms") - best).abs() <= 1e-9 * best);
    assert!(ms("lower_bound_ms") <= ms("iteration_time_ms") * (1.0 + 1e-9));
    assert!(!replayed["collectives"].as_array().unwrap().is_empty());
    let list = v["strategies"].as_array().unwrap();
    let solved: Vec<&serde_json::Value> = list.iter().filter(|x| x["status"] == "solved").collect();
    assert!(!solved.is_empty());
    for key in [
        "tp",
        "pp",
        "dp",
        "mapping",
        "iteration_time_ms",
        "bw_gbps",
        "memory_gib",
        "stages",
    ] {
        assert!(solved[0].get(key).is_some(), "missing {key}");
    }
    let times: Vec<f64> = solved
        .iter()
        .map(|x| x["iteration_time_ms"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    // A study without a model is refused with exit 2.
    let plain = dir.path().join("plain.toml");
    std::fs::write(
        &plain,
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/gpt3-4d.toml")).unwrap(),
    )
    .unwrap();
    let out = Command::cargo_bin("dimsum")
        .unwrap()
        .arg("coopt")
        .arg(&plain)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_model_sections_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to, needle) in [
        ("layers = 4\n", "preset = \"gpt-5\"\n", "not a preset"),
        ("ffn_matrices = 2", "ffn_matrices = 5", "ffn_matrices"),
        ("tp = 4\n", "tp = 3\n", "tp x pp x dp"),
        (
            "[parallelism]\ntp = 4",
            "[parallelism]\norder = \"tp,tp,dp\"\ntp = 4",
            "once each",
        ),
        ("efficiency = 0.5", "efficiency = 1.5", "efficiency"),
    ] {
        let text = TINY.replacen(from, to, 1);
        assert_ne!(text, TINY, "{from}");
        let p = dir.path().join("bad.toml");
        std::fs::write(&p, &text).unwrap();
        let out = Command::cargo_bin("dimsum")
            .unwrap()
            .arg("eval")
            .arg("--bw")
            .arg("100,100")
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{from}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{from}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1);
    }
}

/// A recipe space small enough to brute-force on TINY: 3 micro-batches x 3
/// recomputations x 4 ZeRO stages x SP off / on x 1 or 2 virtual stages.
fn small_space() -> transformer::RecipeSpace {
    transformer::RecipeSpace {
        micro_batch: vec![1, 2, 4],
        recompute: vec![
            transformer::Recompute::None,
            transformer::Recompute::Selective,
            transformer::Recompute::Full,
        ],
        zero: vec![0, 1, 2, 3],
        sequence_parallel: vec![false, true],
        virtual_stages: vec![1, 2],
        precision: vec![transformer::Precision::Bf16],
        cp: vec![1],
    }
}

/// Every candidate of the recipe search, brute-forced: each placement with
/// each recipe generated and solved on its own. The search's optimum is
/// their best; no candidate beats it; its closed-form compute bound is what
/// the generated records sum to, and never above the solved time; ZeRO 1
/// and 2 build the same iteration (the solve they share); the counts add up.
#[test]
fn recipe_search_against_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny(dir.path(), TINY);
    let space = small_space();
    let r = coopt::coopt_in(&s, &space, &dimsum::progress::Quiet).unwrap();
    let best = r.strategies[0].time_ms().unwrap();
    let (model, npu) = (s.model.as_ref().unwrap(), s.npu.as_ref().unwrap());
    let base = s.parallelism.clone().unwrap();
    let mut brute = f64::INFINITY;
    let mut times = Vec::new();
    let (mut valid, mut all) = (0, 0);
    for placement in coopt::strategies(16, &base, 0) {
        for (mb, st) in space.each(&placement) {
            all += 1;
            let m = transformer::ModelSpec {
                micro_batch: mb,
                ..model.clone()
            };
            let Ok(g) = transformer::generate(&m, npu, &st, &s.fabric) else {
                assert!(transformer::plan(&m, npu, &st, &s.fabric).is_err());
                continue;
            };
            valid += 1;
            let planned = transformer::plan(&m, npu, &st, &s.fabric).unwrap();
            let summed = g.workload.compute_ns();
            assert!(
                (planned.compute_ns - summed).abs() <= 1e-12 * summed,
                "{st:?} mb {mb}: {} vs {summed}",
                planned.compute_ns
            );
            if st.zero == 2 {
                let one = transformer::Strategy { zero: 1, ..st.clone() };
                assert_eq!(
                    transformer::generate(&m, npu, &one, &s.fabric).unwrap().workload,
                    g.workload
                );
            }
            let it = IterationModel::new(&g.workload, &s.fabric, &s.collective, s.training_loop);
            counted_matches_listed(&m, npu, &st, &s, &g.workload, &it);
            let p = Problem::new(&s.fabric, it, s.linear_cost(), s.constraints(&[]).unwrap());
            let t = optimize::solve(&p, Objective::Perf).unwrap().iteration_time_ms;
            assert!(summed / 1e6 <= t * (1.0 + 1e-12), "bound {summed} ns above {t} ms");
            assert!(best <= t * (1.0 + 1e-9), "{st:?} mb {mb}: {t} < joint {best}");
            brute = brute.min(t);
            times.push(t);
        }
    }
    assert!(valid > 100, "{valid} of {all}");
    // The first EXACT_TOP rows are the EXACT_TOP best of all, in order.
    times.sort_by(f64::total_cmp);
    let listed: Vec<f64> = r
        .strategies
        .iter()
        .take(coopt::EXACT_TOP)
        .map(|x| x.time_ms().unwrap())
        .collect();
    for (a, b) in listed.iter().zip(&times) {
        assert!(
            (a - b).abs() <= 1e-9 * b,
            "{listed:?} vs {:?}",
            &times[..coopt::EXACT_TOP]
        );
    }
    assert!((best - brute).abs() <= 1e-9 * brute, "{best} vs {brute}");
    assert_eq!(r.solved + r.pruned + r.rejected, r.searched);
    assert!(r.searched <= all && r.searched - r.rejected <= valid);
    assert!(r.pruned > 0, "the bound pruned nothing");
    assert_eq!(r.recipe_space, space);
    // A wider space never does worse than the study's recipe alone.
    let own = coopt::coopt(&s, &dimsum::progress::Quiet).unwrap();
    assert!(best <= own.strategies[0].time_ms().unwrap() * (1.0 + 1e-9));
}

/// `[coopt]` in a study sets the space; `recipe = "whole"` is every value;
/// bad values are refused with the field and what is allowed.
#[test]
fn coopt_table_sets_the_recipe_space() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny(
        dir.path(),
        &format!("{TINY}[coopt]\nmicro_batch = [1, 2]\nzero = [1, 3]\nrecompute = [\"none\", \"full\"]\n"),
    );
    let sp = s.recipe_space.clone().unwrap();
    assert_eq!(sp.micro_batch, vec![1, 2]);
    assert_eq!(sp.zero, vec![1, 3]);
    // micro-batch 2 x ZeRO 2 x recompute 2 x the study's one SP and one v.
    assert_eq!(sp.len(), 8);
    let s = tiny(dir.path(), &format!("{TINY}[coopt]\nrecipe = \"whole\"\n"));
    // micro-batch 1, 2, 4, 8, 16 x 3 x 4 x 2 x 3.
    assert_eq!(s.recipe_space.unwrap().len(), 5 * 3 * 4 * 2 * 3);
    let p = dir.path().join("bad.toml");
    for (extra, needle) in [
        ("zero = [4]", "coopt.zero: 4 is not a ZeRO stage: 0 to 3"),
        (
            "micro_batch = [0]",
            "coopt.micro_batch: 0 is not allowed: 1 to the global batch, 32",
        ),
        ("recipe = \"all\"", "coopt.recipe: `all` is not a recipe space"),
        (
            "virtual_stages = []",
            "coopt.virtual_stages: give 1 to 64 values, not 0",
        ),
    ] {
        std::fs::write(&p, format!("{TINY}[coopt]\n{extra}\n")).unwrap();
        let e = Study::load(&p).unwrap_err().to_string();
        assert!(e.contains(needle), "{extra}: {e}");
    }
}

/// A search too large to plan is refused before any work, with exit 2 and
/// the count: 5,040 NPUs (2^4 3^2 5 7: 15 x 6 x 3 x 3 = 810 ordered degree
/// triples, each in up to 6 orders) x 1,152 recipes (16 micro-batches x 3
/// x 4 x 2 x 3) is more than 2^22 candidates.
#[test]
fn oversized_recipe_searches_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = TINY
        .replace(
            "block = \"ring\"\nnpus = 4\nlatency_ns = 100",
            "block = \"switch\"\nnpus = 10080\nlatency_ns = 100",
        )
        .replace(
            "[[fabric.dims]]\nname = \"b\"\nblock = \"switch\"\nnpus = 4\nlatency_ns = 500\n",
            "",
        )
        .replace("[cost.tiers.b]\nlink_usd_per_gbps = 5.0\n", "")
        .replace("a + b == 200", "a == 200")
        .replace("tp = 4\npp = 1\ndp = 4", "tp = 1\npp = 1\ndp = 10080")
        .replace("global_batch = 32", "global_batch = 161280")
        + &format!(
            "[coopt]\nrecipe = \"whole\"\nmicro_batch = [{}]\n",
            (1..=56).map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
        );
    let p = dir.path().join("big.toml");
    std::fs::write(&p, text).unwrap();
    let started = std::time::Instant::now();
    let out = Command::cargo_bin("dimsum")
        .unwrap()
        .args(["coopt"])
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // 1134 placements (ordered factorizations of 10080 = 2^5 3^2 5 7 into
    // three: C(7,2) C(4,2) C(3,2) C(3,2); on one dimension every order is
    // one placement) x 72 recipes per micro-batch x 56 micro-batches.
    assert!(err.contains("1134 placements x 4032 recipes = 4572288"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(started.elapsed().as_secs() < 60);
}

/// The study's own strategy is reported optimally allocated even when the
/// searched space leaves its recipe out (here ZeRO 3 only; TINY's own is
/// ZeRO 1): the figure is its own solve.
#[test]
fn the_studys_own_strategy_is_reported_outside_the_space() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny(dir.path(), TINY);
    let space = transformer::RecipeSpace {
        zero: vec![3],
        ..transformer::RecipeSpace::only(s.model.as_ref().unwrap(), s.parallelism.as_ref().unwrap())
    };
    let r = coopt::coopt_in(&s, &space, &dimsum::progress::Quiet).unwrap();
    let g = transformer::generate(
        s.model.as_ref().unwrap(),
        s.npu.as_ref().unwrap(),
        s.parallelism.as_ref().unwrap(),
        &s.fabric,
    )
    .unwrap();
    let it = IterationModel::new(&g.workload, &s.fabric, &s.collective, s.training_loop);
    let p = Problem::new(&s.fabric, it, s.linear_cost(), s.constraints(&[]).unwrap());
    let own = optimize::solve(&p, Objective::Perf).unwrap().iteration_time_ms;
    assert!(r.strategies.iter().all(|x| x.zero == 3));
    assert_eq!(r.default_optimized_ms, Some(own));
}

/// TINY as a mixture of experts: 8 experts of FFN 1024, top-2, the first
/// layer dense, the busiest expert at 1.25 x the mean.
fn tiny_moe() -> String {
    TINY.replacen(
        "bytes_optimizer = 12\n",
        "bytes_optimizer = 12\nkv_heads = 4\nexperts = 8\ntop_k = 2\nexpert_ffn = 1024\nfirst_dense = 1\nexpert_imbalance = 1.25\n",
        1,
    )
}

/// The MoE search (TP x PP x DP x EP, placements and a recipe space),
/// brute-forced: every candidate generated and solved on its own. The
/// search's optimum and first rows are the brute-force best; its compute
/// bound is what the records sum to; expert parallelism is searched and
/// the best uses it.
#[test]
fn moe_search_against_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny(dir.path(), &tiny_moe());
    let space = transformer::RecipeSpace {
        micro_batch: vec![1, 2],
        recompute: vec![transformer::Recompute::None, transformer::Recompute::Full],
        zero: vec![1, 3],
        sequence_parallel: vec![false, true],
        virtual_stages: vec![1, 2],
        precision: vec![transformer::Precision::Bf16],
        cp: vec![1],
    };
    let r = coopt::coopt_in(&s, &space, &dimsum::progress::Quiet).unwrap();
    let best = r.strategies[0].time_ms().unwrap();
    let (model, npu) = (s.model.as_ref().unwrap(), s.npu.as_ref().unwrap());
    let base = s.parallelism.clone().unwrap();
    let placements = coopt::strategies(16, &base, 8);
    // EP 1, 2, 4 and 8 where they divide DP.
    assert!(placements.iter().any(|p| p.ep == 8) && placements.iter().all(|p| p.dp % p.ep == 0));
    let mut times = Vec::new();
    for placement in placements {
        for (mb, st) in space.each(&placement) {
            let m = transformer::ModelSpec {
                micro_batch: mb,
                ..model.clone()
            };
            let Ok(g) = transformer::generate(&m, npu, &st, &s.fabric) else {
                continue;
            };
            let planned = transformer::plan(&m, npu, &st, &s.fabric).unwrap();
            let summed = g.workload.compute_ns();
            assert!((planned.compute_ns - summed).abs() <= 1e-12 * summed, "{st:?}");
            let it = IterationModel::new(&g.workload, &s.fabric, &s.collective, s.training_loop);
            counted_matches_listed(&m, npu, &st, &s, &g.workload, &it);
            let p = Problem::new(&s.fabric, it, s.linear_cost(), s.constraints(&[]).unwrap());
            let t = optimize::solve(&p, Objective::Perf).unwrap().iteration_time_ms;
            assert!(best <= t * (1.0 + 1e-9), "{st:?} mb {mb}: {t} < joint {best}");
            times.push(t);
        }
    }
    times.sort_by(f64::total_cmp);
    assert!(times.len() > 100, "{}", times.len());
    for (row, t) in r.strategies.iter().take(coopt::EXACT_TOP).zip(&times) {
        let a = row.time_ms().unwrap();
        assert!((a - t).abs() <= 1e-9 * t, "{a} vs {t}");
    }
    assert_eq!(r.solved + r.pruned + r.rejected, r.searched);
    assert!(
        r.strategies.iter().any(|x| x.ep > 1 && x.time_ms().is_some()),
        "no EP > 1 solved"
    );
}

/// MoE and GQA fields are checked where they are written.
#[test]
fn moe_fields_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    for (from, to, needle) in [
        ("top_k = 2", "top_k = 9", "top_k = 9 is not allowed: 1 to the 8 experts"),
        ("experts = 8", "experts = 1", "experts = 1 is not allowed"),
        (
            "kv_heads = 4",
            "kv_heads = 5",
            "kv_heads 5 is not allowed: a divisor of the 16 heads",
        ),
        ("first_dense = 1", "first_dense = 4", "first_dense = 4 is not allowed"),
        (
            "expert_imbalance = 1.25",
            "expert_imbalance = 0.5",
            "expert_imbalance = 0.5 is not allowed",
        ),
        (
            "expert_imbalance = 1.25",
            "expert_imbalance = 1.25\ncapacity_factor = 1.0",
            "not both",
        ),
        ("experts = 8\n", "", "`top_k` needs `experts`"),
        ("dp = 4", "dp = 4\nep = 3", "ep 3 must divide dp 4 and the 8 experts"),
    ] {
        let text = tiny_moe().replacen(from, to, 1);
        assert_ne!(text, tiny_moe(), "{from}");
        std::fs::write(&p, &text).unwrap();
        let e = Study::load(&p).unwrap_err().to_string();
        assert!(e.contains(needle), "{from}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// The counted workload (`transformer::census`, what coopt bounds and
/// times candidates by without their records) against the listed one:
/// the same iteration time under no-overlap at uneven allocations, never
/// above it under overlap, the same collectives issued as often.
fn counted_matches_listed(
    m: &transformer::ModelSpec,
    npu: &transformer::Npu,
    st: &transformer::Strategy,
    s: &Study,
    listed: &dimsum::model::workload::Workload,
    it: &IterationModel,
) {
    use dimsum::model::training::{Counted, Loop};
    let census = transformer::census(m, npu, st, &s.fabric).unwrap();
    let counted = Counted::new(census.compute_ns, &census.comms, &s.fabric, &s.collective);
    let issued: u64 = census.comms.iter().map(|(_, _, n)| n).sum();
    let listed_comms = listed
        .layers
        .iter()
        .flat_map(|l| [&l.forward.comm, &l.input_grad.comm, &l.weight_grad.comm])
        .flatten()
        .count() as u64;
    assert_eq!(issued, listed_comms, "{st:?}");
    let overlap = IterationModel::new(listed, &s.fabric, &s.collective, Loop::Overlap);
    for bw in [[37.0, 163.0], [150.0, 50.0]] {
        let t = it.iteration_ns(&bw);
        let c = counted.iteration_ns(&bw, s.training_loop);
        assert!((c - t).abs() <= 1e-12 * t, "{st:?}: counted {c} vs listed {t}");
        assert!(counted.iteration_ns(&bw, Loop::Overlap) <= overlap.iteration_ns(&bw) * (1.0 + 1e-12));
    }
}

/// TINY with two accelerator types to choose among.
fn tiny_types(extra: &str) -> String {
    TINY.replacen(
        "[npu]\npeak_tflops = 100\nefficiency = 0.5\nhbm_gib = 80\n",
        &format!("[npu]\ntype = [\"h100-sxm\", \"b200\"]\nprice_usd = [25000, 35000]\n{extra}"),
        1,
    )
}

/// Each accelerator's design is the search on that accelerator alone;
/// cost, power and the objectives follow from it by hand; the best by
/// each objective is the best design within the budgets.
#[test]
fn accelerator_choice_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let text = tiny_types("");
    assert_ne!(text, TINY);
    let s = tiny(dir.path(), &text);
    assert_eq!(s.npu_choices.len(), 2);
    let a = coopt::coopt_accelerators(&s, &dimsum::progress::Quiet).unwrap();
    assert_eq!(a.designs.len(), 2);
    let tokens = 32.0 * 512.0; // global batch x sequence
    for (d, npu) in a.designs.iter().zip(&s.npu_choices) {
        let mut one = s.clone();
        one.npu = Some(npu.clone());
        one.collective.reduction_gbps = Some(npu.device.hbm_gbps);
        let alone = coopt::coopt(&one, &dimsum::progress::Quiet).unwrap();
        let Verdict::Solved {
            iteration_time_ms,
            network_cost_usd,
            network_power_w,
            ..
        } = alone.strategies[0].verdict.clone()
        else {
            panic!("nothing solved on {}", npu.name)
        };
        assert_eq!(d.iteration_ms, Some(iteration_time_ms));
        // 16 accelerators at their price and board power, plus the fabric.
        let (price, tdp) = if d.npu == "b200" {
            (35000.0, 1000.0)
        } else {
            (25000.0, 700.0)
        };
        assert_eq!(d.npu_capex_usd, 16.0 * price);
        assert_eq!(d.capex_usd, Some(16.0 * price + network_cost_usd));
        assert_eq!(d.power_w, Some(16.0 * tdp + network_power_w));
        let per_s = tokens / (iteration_time_ms / 1e3);
        // $ per second: capex over 4 years, plus the power at $0.10 per kWh.
        let usd_per_s = (16.0 * price + network_cost_usd) / (4.0 * 365.25 * 86400.0)
            + (16.0 * tdp + network_power_w) / 1e3 * 0.10 / 3600.0;
        let close = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() <= 1e-12 * y.abs();
        assert!(close(d.tokens_per_s, per_s));
        assert!(close(d.tokens_per_usd, per_s / usd_per_s));
        assert!(close(d.tokens_per_joule, per_s / (16.0 * tdp + network_power_w)));
    }
    let best_by = |key: &dyn Fn(&coopt::AcceleratorDesign) -> f64| {
        a.designs
            .iter()
            .min_by(|x, y| key(x).total_cmp(&key(y)))
            .unwrap()
            .npu
            .clone()
    };
    assert_eq!(a.best[0], ("time".into(), best_by(&|d| d.iteration_ms.unwrap())));
    assert_eq!(
        a.best[2],
        ("tokens per $".into(), best_by(&|d| -d.tokens_per_usd.unwrap()))
    );
    // A cluster budget the B200s alone exceed leaves the H100 (16 x
    // $35,000 = $560,000 > $500,000 > 16 x $25,000 + its fabric).
    let h100_total = a.designs[0].capex_usd.unwrap();
    assert!(h100_total < 500_000.0, "{h100_total}");
    let s = tiny(dir.path(), &format!("{}[coopt]\nbudget_usd = 500000\n", tiny_types("")));
    let a = coopt::coopt_accelerators(&s, &dimsum::progress::Quiet).unwrap();
    assert!(
        a.designs[1]
            .note
            .as_deref()
            .unwrap()
            .contains("over the cluster's $0.5M budget")
    );
    assert!(a.best.iter().all(|(_, npu)| npu == "h100-sxm"));
}

/// A list of types is checked: prices one per type, built-in types only,
/// no per-type figures, no repeats.
#[test]
fn accelerator_lists_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    for (text, needle) in [
        (
            tiny_types("").replacen("price_usd = [25000, 35000]\n", "", 1),
            "price_usd = [...] is missing: one price per type (2 types)",
        ),
        (
            tiny_types("").replacen("[25000, 35000]", "[25000]", 1),
            "price_usd: 1 prices for 2 types",
        ),
        (tiny_types("hbm_gib = 80\n"), "give no per-type figure"),
        (
            tiny_types("").replacen("\"b200\"]", "\"h100-sxm\"]", 1),
            "type `h100-sxm` is listed twice",
        ),
        (
            tiny_types("").replacen("\"b200\"]", "\"tpu\"]", 1),
            "type `tpu` is not a built-in accelerator",
        ),
        (
            format!("{}[coopt]\nlife_years = 0\n", tiny_types("")),
            "coopt.life_years: 0 is not allowed",
        ),
        (
            format!("{TINY}[coopt]\nbudget_usd = 1e6\n"),
            "coopt.budget_usd: compares accelerators: give it with [npu] type = [...]",
        ),
        (
            TINY.replacen("efficiency = 0.5\n", "efficiency = 0.5\nprice_usd = 30000\n", 1),
            "give it with a list, type = [...]",
        ),
        (
            TINY.replacen("[model]\n", "[model]\npreset = \"llama2-70b\"\n", 1),
            "heads is overridden on a preset with 8 key-value heads: give kv_heads too",
        ),
    ] {
        std::fs::write(&p, &text).unwrap();
        let e = Study::load(&p).unwrap_err().to_string();
        assert!(e.contains(needle), "{needle}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// TINY on parametric accelerators: 3 x 2 x 2 x 2 x 2 = 48 architectures
/// (one HBM stack or two: the reduction bandwidth follows each).
fn tiny_arch(extra: &str) -> String {
    TINY.replacen(
        "[npu]\npeak_tflops = 100\nefficiency = 0.5\nhbm_gib = 80\n",
        &format!(
            "[npu.arch]\ntensor_units = [4, 1, 16]\narray_width = [32, 128]\narray_depth = [32]\nvector_units = [1, 8]\nvector_width = [64]\nsram_mib = [4, 32]\nhbm_stacks = [1, 2]\nstack_gbps = 100\nstack_gib = 8\nclock_ghz = 1.0\n{extra}"
        ),
        1,
    )
}

/// The architecture search is one exact search: its ten best rows are the
/// ten best of solving every architecture x strategy on its own; each
/// architecture's best time (where solved) is its brute-force best, and
/// its bound never exceeds it; the study's own architecture's best is its
/// brute-force best.
#[test]
fn arch_search_against_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let text = tiny_arch("");
    assert_ne!(text, TINY);
    let s = tiny(dir.path(), &text);
    let space = s.arch_space.clone().unwrap();
    let a = coopt::coopt_archs(&s, None, &dimsum::progress::Quiet).unwrap();
    assert_eq!(a.archs.len(), 48);
    assert_eq!(a.over_budget, 0);
    let base = s.parallelism.clone().unwrap();
    let model = s.model.as_ref().unwrap();
    let mut all = Vec::new();
    for d in &a.archs {
        let npu = dimsum::study::arch_npu(&space, &d.arch, 0.0);
        let mut one = s.clone();
        one.collective.reduction_gbps = Some(npu.device.hbm_gbps);
        let mut mine = f64::INFINITY;
        // Orders that put the same groups on the same dimensions are one
        // placement, as the search counts them.
        let mut seen = std::collections::HashSet::new();
        for st in coopt::strategies(16, &base, 0) {
            let mapping = st.groups(&s.fabric).map(|g| g.map(|x| x.to_libra()));
            if !seen.insert((st.tp, st.pp, st.dp, mapping)) {
                continue;
            }
            let Ok(g) = transformer::generate(model, &npu, &st, &s.fabric) else {
                continue;
            };
            let it = IterationModel::new(&g.workload, &s.fabric, &one.collective, s.training_loop);
            let p = Problem::new(&s.fabric, it, s.linear_cost(), s.constraints(&[]).unwrap());
            let t = optimize::solve(&p, Objective::Perf).unwrap().iteration_time_ms;
            mine = mine.min(t);
            all.push(t);
        }
        assert!(
            d.bound_ms <= mine * (1.0 + 1e-9),
            "{}: bound {} > {mine}",
            d.name,
            d.bound_ms
        );
        if let Some(b) = d.best_ms {
            assert!(b >= mine * (1.0 - 1e-9), "{}: {b} < {mine}", d.name);
            if d.exact {
                assert!((b - mine).abs() <= 1e-9 * mine, "{}: {b} vs {mine}", d.name);
            }
        }
        if d.name == a.archs[0].name {
            let own = a.own_best.as_ref().unwrap().time_ms().unwrap();
            assert!((own - mine).abs() <= 1e-9 * mine, "own {own} vs {mine}");
        }
    }
    all.sort_by(f64::total_cmp);
    assert!(all.len() > 100, "{}", all.len());
    for (row, t) in a.coopt.strategies.iter().take(coopt::EXACT_TOP).zip(&all) {
        let x = row.time_ms().unwrap();
        assert!((x - t).abs() <= 1e-9 * t, "{x} vs {t}");
        assert!(row.npu.is_some());
    }
    let c = &a.coopt;
    assert_eq!(c.solved + c.pruned + c.rejected, c.searched);
    // Its JSON, written field by field to keep only the top rows, is the
    // whole search serialized when every row is kept.
    assert_eq!(
        dimsum::report::json::arch_search(&a, usize::MAX),
        serde_json::to_value(&a).unwrap()
    );
    let top = dimsum::report::json::arch_search(&a, 3);
    assert_eq!(top["coopt"]["strategies"].as_array().unwrap().len(), 3);
    // Architectures differ: the best is not the slowest by far.
    assert!(all.last().unwrap() > &(2.0 * all[0]));
}

/// `1, 2, ..., 64`.
fn sixty_four() -> String {
    (1..=64).map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

/// `area_mm2 = "own"` keeps the architectures no larger than the first;
/// `[npu.arch]`'s errors name the field and what is allowed.
#[test]
fn arch_budgets_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny(dir.path(), &tiny_arch("area_mm2 = \"own\"\n"));
    let space = s.arch_space.clone().unwrap();
    let own = space.first().area(&dimsum::model::arch::N7).total_mm2;
    assert_eq!(space.area_mm2, Some(own));
    let within: Vec<_> = space
        .all()
        .into_iter()
        .filter(|x| space.within(x, &dimsum::model::arch::N7))
        .collect();
    assert!(within.len() < 48 && within.len() > 1, "{}", within.len());
    assert!(within.iter().all(|x| x.area(&dimsum::model::arch::N7).total_mm2 <= own));
    let a = coopt::coopt_archs(&s, None, &dimsum::progress::Quiet).unwrap();
    assert_eq!(a.archs.len(), within.len());
    assert_eq!(a.over_budget, 48 - within.len());
    let p = dir.path().join("bad.toml");
    for (text, needle) in [
        (
            tiny_arch("area_mm2 = \"mine\"\n"),
            "arch.area_mm2 = \"mine\" is not allowed",
        ),
        (tiny_arch("power_w = 1\n"), "no architecture of [npu.arch] is within"),
        (
            tiny_arch("").replacen("tensor_units = [4, 1, 16]", "tensor_units = [4, 0]", 1),
            "arch.tensor_units = 0 is not allowed",
        ),
        (
            tiny_arch("").replacen("clock_ghz = 1.0", "clock_ghz = -1.0", 1),
            "arch.clock_ghz = -1 is not allowed: use more than 0 to 10",
        ),
        (
            tiny_arch("").replacen("[npu.arch]", "[npu]\ntype = \"h100-sxm\"\n[npu.arch]", 1),
            "with [npu.arch], give no type",
        ),
        (
            // 3 x 2 x 1 x 2 x 64 x 64 x 2 = 98,304 combinations.
            tiny_arch("")
                .replacen("sram_mib = [4, 32]", &format!("sram_mib = [{}]", sixty_four()), 1)
                .replacen("vector_width = [64]", &format!("vector_width = [{}]", sixty_four()), 1),
            "spans 98304 architectures, more than 65536: give its lists fewer values",
        ),
        (
            tiny_arch("").replacen("sram_mib = [4, 32]", "sram_mib = [4, 4]", 1),
            "arch.sram_mib: a value is listed twice",
        ),
        (
            tiny_arch("").replacen("sram_mib = [4, 32]", &format!("sram_mib = [{}, 65]", sixty_four()), 1),
            "arch.sram_mib: give 1 to 64 values, not 65",
        ),
        (
            tiny_arch("").replacen("clock_ghz = 1.0", "clock_ghz = 20.0", 1),
            "arch.clock_ghz = 20 is not allowed: use more than 0 to 10",
        ),
        (
            tiny_arch("").replacen("[npu.arch]", "[npu]\nheadroom_gib = 8\n[npu.arch]", 1),
            "use 0 to less than the least HBM of [npu.arch] (8 GiB)",
        ),
        (tiny_arch("cores = 4\n"), "unknown field `cores`"),
    ] {
        std::fs::write(&p, &text).unwrap();
        let e = Study::load(&p).unwrap_err().to_string();
        assert!(e.contains(needle), "{needle}: {e}");
        assert!(e.contains("bad.toml:"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// The joint optimum replayed (`coopt::replay`): the iteration replayed is
/// the one the search solved (its analytic time is the row's), and no
/// replay beats its certified bound. Then a placed MoE strategy by hand:
/// TP 4 on the ring `a`, DP 4 with EP 4 on the switch `b` at 100 GB/s. Each
/// MoE layer's dispatch and combine move `b s h e top_k load` = 1 x 512 x
/// 1024 x 2 B x 2 x 1.25 = 2,621,440 bytes per NPU over the EP group; on
/// a switch every NPU sends 3/4 of them through its one link, so no
/// schedule beats 0.75 x 2,621,440 / 100 = 19,660.8 ns (the certified
/// bound), and the best one (the flow schedule) adds the switch's two
/// 500 ns hops and its last piece's second hop. They are issued 4 times
/// (dispatch and combine, forward and backward) per MoE layer (3: the
/// first is dense) per micro-batch (32 / 4 = 8): 96. That is without
/// sequence parallelism (every TP rank dispatches every token); with it
/// each TP rank dispatches its 512 / 4 tokens, 655,360 bytes.
#[test]
fn joint_optimum_replays_on_its_schedules() {
    let dir = tempfile::tempdir().unwrap();
    let s = tiny(dir.path(), &tiny_moe());
    // ZeRO 1 and 2 build the same iteration: equal times, the first kept.
    let space = transformer::RecipeSpace {
        micro_batch: vec![1, 2],
        zero: vec![1, 2],
        ..transformer::RecipeSpace::only(s.model.as_ref().unwrap(), s.parallelism.as_ref().unwrap())
    };
    let r = coopt::coopt_in(&s, &space, &dimsum::progress::Quiet).unwrap();
    let o = r.optimum.as_ref().unwrap();
    let first = &r.strategies[0];
    assert_eq!(first.time_ms(), r.strategies[1].time_ms(), "no tie to break");
    assert_eq!(
        (
            o.strategy.tp,
            o.strategy.pp,
            o.strategy.dp,
            o.strategy.ep,
            o.strategy
                .groups(&s.fabric)
                .map(|g| [g[0].to_libra(), g[1].to_libra(), g[2].to_libra()]),
            o.model.micro_batch,
            o.strategy.zero,
            o.strategy.recompute,
        ),
        (
            first.tp,
            first.pp,
            first.dp,
            first.ep,
            first.mapping.clone(),
            first.micro_batch,
            first.zero,
            first.recompute,
        )
    );
    let Verdict::Solved {
        bw_gbps,
        iteration_time_ms,
        ..
    } = &first.verdict
    else {
        panic!("{:?}", first.verdict)
    };
    assert_eq!(&o.bw_gbps, bw_gbps);
    let m = coopt::replay(&s, o, &dimsum::progress::Quiet).unwrap();
    let analytic_ms = m.analytic_iteration_ns / 1e6;
    assert!((analytic_ms - iteration_time_ms).abs() <= 1e-9 * iteration_time_ms);
    assert!(m.lower_bound_ns <= m.iteration_ns * (1.0 + 1e-9));
    for c in &m.collectives {
        assert!(c.lower_bound_ms <= c.simulated_ms * (1.0 + 1e-9), "{c:?}");
    }

    let model = s.model.clone().unwrap();
    let strategy = transformer::Strategy {
        ep: 4,
        sequence_parallel: false,
        ..transformer::Strategy::new(4, 1, 4)
    };
    let sp = transformer::Strategy {
        sequence_parallel: true,
        ..strategy.clone()
    };
    let g = transformer::generate(s.model.as_ref().unwrap(), s.npu.as_ref().unwrap(), &sp, &s.fabric).unwrap();
    let dispatch = g.workload.layers.iter().find(|l| l.name == "mb0.l1.dispatch").unwrap();
    assert_eq!(dispatch.forward.comm.as_ref().unwrap().bytes, 655_360.0);
    let by_hand = coopt::Optimum {
        model,
        npu: s.npu.clone().unwrap(),
        strategy,
        bw_gbps: vec![100.0, 100.0],
    };
    let m = coopt::replay(&s, &by_hand, &dimsum::progress::Quiet).unwrap();
    let a2a: Vec<_> = m
        .collectives
        .iter()
        .filter(|c| c.kind == dimsum::model::workload::CollectiveKind::AllToAll)
        .collect();
    assert_eq!(a2a.len(), 1, "{a2a:?}");
    let a2a = a2a[0];
    assert_eq!(a2a.bytes, 2_621_440.0);
    assert_eq!(a2a.group, vec![-1, 4]);
    assert_eq!(a2a.count, 96);
    let floor_ms = 0.75 * 2_621_440.0 / 100.0 / 1e6;
    assert!((a2a.lower_bound_ms - floor_ms).abs() <= 1e-12, "{a2a:?}");
    // The flow schedule in 16 pieces per destination: the sender's link
    // busy 19,660.8 ns, its 500 ns latency, then the last piece (2,621,440
    // / 4 / 16 = 40,960 B) on the receiver's link, 409.6 ns, and its 500
    // ns: 21,070.4 ns.
    assert!(a2a.algorithm.starts_with("best: flow(k=16);"), "{a2a:?}");
    let by_hand_ms = (19_660.8 + 500.0 + 409.6 + 500.0) / 1e6;
    assert!((a2a.simulated_ms - by_hand_ms).abs() <= 1e-9, "{a2a:?}");
}

/// `[coopt] replay`: `run` replays the joint optimum unless the study
/// says `false`; anything but a boolean is refused with its line.
#[test]
fn coopt_replay_key() {
    let dir = tempfile::tempdir().unwrap();
    assert!(tiny(dir.path(), TINY).replay_optimum);
    let off = format!("{TINY}[coopt]\nreplay = false\n");
    let study = tiny(dir.path(), &off);
    assert!(!study.replay_optimum);
    let out = dir.path().join("out");
    let r = dimsum::pipeline::run::run_study(&study, &out, &dimsum::progress::Quiet).unwrap();
    assert!(r.coopt.as_ref().unwrap().optimum.is_some() && r.coopt_replay.is_none());
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, format!("{TINY}[coopt]\nreplay = 3\n")).unwrap();
    let e = Study::load(&p).unwrap_err().to_string();
    let line = TINY.lines().count() + 2;
    assert!(e.contains("replay") && e.contains(&format!("bad.toml:{line}")), "{e}");
}

/// A custom model from defaults: bytes per parameter left out are mixed
/// precision with fp32 master weights and Adam (2, 4, 12), and every
/// missing field is named in one message.
#[test]
fn custom_model_defaults_and_every_missing_field_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = TINY
        .replacen("bytes_weight = 2\n", "", 1)
        .replacen("bytes_grad = 2\n", "", 1)
        .replacen("bytes_optimizer = 12\n", "", 1);
    let s = tiny(dir.path(), &text);
    let m = s.model.as_ref().unwrap();
    assert_eq!((m.bytes_weight, m.bytes_grad, m.bytes_optimizer), (2.0, 4.0, 12.0));
    let text = TINY
        .replacen("hidden = 1024\n", "", 1)
        .replacen("seq = 512\n", "", 1)
        .replacen("vocab = 1000\n", "", 1);
    let p = dir.path().join("missing.toml");
    std::fs::write(&p, &text).unwrap();
    let e = Study::load(&p).unwrap_err().to_string();
    for f in ["`hidden`", "`seq`", "`vocab`"] {
        assert!(e.contains(f), "{f}: {e}");
    }
    assert_eq!(e.lines().count(), 1);
}

/// coopt as a newcomer expects: a study with no [parallelism] is searched
/// (eval says what is missing), and one whose own strategy does not fit in
/// HBM is searched with its own strategy named invalid with the reason.
#[test]
fn coopt_searches_without_a_strategy_or_with_one_that_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let run = |text: &str, cmd: &[&str]| {
        let p = dir.path().join("s.toml");
        std::fs::write(&p, text).unwrap();
        Command::cargo_bin("dimsum")
            .unwrap()
            .args(cmd)
            .arg(&p)
            .output()
            .unwrap()
    };
    // No [parallelism]: coopt searches every split; eval exits 2 saying so.
    let none = TINY.replacen("[parallelism]\ntp = 4\npp = 1\ndp = 4\n", "", 1);
    assert_ne!(none, TINY);
    let out = run(&none, &["coopt"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("own strategy: invalid: the study names no strategy"),
        "{text}"
    );
    let out = run(&none, &["eval"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no [parallelism]") && err.contains("dimsum coopt"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1);
    // The same model at tp 1, pp 1, dp 16 keeps every parameter's bf16
    // weight and gradient on each GPU: 4 layers x (4 x 1024^2 + 2 x 1024 x
    // 4096) + 1000 x 1024 = 49.4M parameters x 4 bytes = 198 MB = 0.18 GiB,
    // over 0.12 GiB before any optimizer state or activation.
    let big = TINY.replacen("hbm_gib = 80", "hbm_gib = 0.12", 1).replacen(
        "tp = 4\npp = 1\ndp = 4",
        "tp = 1\npp = 1\ndp = 16",
        1,
    );
    let out = run(&big, &["coopt", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let why = j["own_invalid"].as_str().unwrap_or_else(|| panic!("{j}"));
    assert!(why.contains("HBM") || why.contains("GiB"), "{why}");
    let out = run(&big, &["eval"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not fit"));
}
