//! Cancellation reaches inside long work: a frontier's points, the
//! co-optimization's waves, the schedule-backed fixed point, a comparison's
//! pairs and a study's replays stop at their next step once the observer
//! cancels, and the job ends with `RunError::Cancelled` (not an answer
//! computed from part of the work).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::topology::Topology;
use dimsum::model::workload::CollectiveKind;
use dimsum::optimize::Objective;
use dimsum::optimize::frontier::{Axis, CHAINS};
use dimsum::progress::Observer;
use dimsum::schedule::algorithm::Algorithm;
use dimsum::schedule::simulate::LinkModel;
use dimsum::{Executor, RunError, Study, jobs};
use std::path::Path;
use std::sync::Mutex;

/// Cancels once it has heard `after` reports of `task`; counts every
/// report of every task.
struct CancelAfter {
    task: &'static str,
    after: usize,
    heard: Mutex<Vec<(String, usize, usize)>>,
}

impl CancelAfter {
    fn new(task: &'static str, after: usize) -> CancelAfter {
        CancelAfter {
            task,
            after,
            heard: Mutex::new(Vec::new()),
        }
    }

    fn reports(&self, task: &str) -> Vec<(usize, usize)> {
        let heard = self.heard.lock().unwrap();
        heard
            .iter()
            .filter(|(t, _, _)| t == task)
            .map(|&(_, d, n)| (d, n))
            .collect()
    }
}

impl Observer for CancelAfter {
    fn progress(&self, task: &str, done: usize, total: usize) {
        self.heard.lock().unwrap().push((task.to_string(), done, total));
    }

    fn cancelled(&self) -> bool {
        self.reports(self.task).len() >= self.after
    }
}

fn cancelled<T: std::fmt::Debug>(r: Result<T, RunError>) {
    match r {
        Err(RunError::Cancelled) => {}
        other => panic!("expected RunError::Cancelled, got {other:?}"),
    }
}

fn gpt3_4d() -> Study {
    Study::load(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/studies/gpt3-4d.toml"))).unwrap()
}

/// A 40-point frontier cancelled after its 3rd point: each of the
/// `CHAINS` runs stops at its next point, so at most 3 + CHAINS points are
/// solved, not 40.
#[test]
fn a_frontier_stops_at_its_next_point() {
    let study = gpt3_4d();
    let problem = study.problem().unwrap();
    let o = CancelAfter::new("frontier cost", 3);
    cancelled(Executor::new(&o).run(jobs::Frontier {
        problem: &problem,
        axis: Axis::Cost,
        points: 40,
    }));
    let heard = o.reports("frontier cost");
    assert!(heard.len() >= 3 && heard.len() <= 3 + CHAINS, "{heard:?}");
    assert!(heard.iter().all(|&(_, n)| n == 40));
}

/// The same frontier uncancelled hears all 40 points (the observer above
/// is what stopped it).
#[test]
fn an_uncancelled_frontier_reports_every_point() {
    let study = gpt3_4d();
    let problem = study.problem().unwrap();
    let o = CancelAfter::new("never", 1);
    let f = Executor::new(&o)
        .run(jobs::Frontier {
            problem: &problem,
            axis: Axis::Cost,
            points: 40,
        })
        .unwrap();
    assert_eq!(f.points.len(), 40);
    let mut done: Vec<usize> = o.reports("frontier cost").iter().map(|&(d, _)| d).collect();
    done.sort_unstable();
    assert_eq!(done, (1..=40).collect::<Vec<_>>());
}

/// A 16-NPU co-optimization whose candidates fill several waves of 16:
/// cancelled after the first wave, it reports no more waves.
#[test]
fn a_coopt_stops_between_waves() {
    let text = r#"
name = "cancel"
bw = [100, 100]
[[fabric.dims]]
name = "a"
block = "ring"
npus = 4
[[fabric.dims]]
name = "b"
block = "switch"
npus = 4
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
[coopt]
micro_batch = [1, 2, 4]
[optimize]
constraints = ["a + b <= 400"]
"#;
    let study = Study::parse(text, Path::new("cancel.toml")).unwrap();
    // Uncancelled: more than one wave of strategies is visited.
    let all = CancelAfter::new("never", 1);
    let r = Executor::new(&all)
        .run(jobs::Coopt {
            study: &study,
            recipes: jobs::Recipes::Study,
            replay: false,
        })
        .unwrap();
    let waves = all.reports("strategies");
    assert!(waves.len() >= 3, "{waves:?}");
    assert!(r.coopt.solved > 0);
    // Cancelled after the first wave: no second one.
    let o = CancelAfter::new("strategies", 1);
    cancelled(Executor::new(&o).run(jobs::Coopt {
        study: &study,
        recipes: jobs::Recipes::Study,
        replay: false,
    }));
    let heard = o.reports("strategies");
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert!(heard[0].0 < heard[0].1);
}

/// The schedule-backed fixed point, cancelled before it starts, measures
/// nothing.
#[test]
fn a_fixed_point_stops_before_its_next_iteration() {
    let study = gpt3_4d();
    let problem = study.problem().unwrap();
    let backed = study.backed(&study.evaluator);
    let o = CancelAfter::new("fixed point", 0);
    cancelled(Executor::new(&o).run(jobs::FixedPoint {
        backed: &backed,
        problem: &problem,
        objective: Objective::Perf,
    }));
    assert!(o.reports("fixed point").is_empty());
    // Cancelled after one iteration: no second.
    let o = CancelAfter::new("fixed point", 1);
    cancelled(Executor::new(&o).run(jobs::FixedPoint {
        backed: &backed,
        problem: &problem,
        objective: Objective::Perf,
    }));
    assert_eq!(o.reports("fixed point").len(), 1);
}

/// Two topologies x two algorithms, cancelled after the first pair.
#[test]
fn a_comparison_stops_between_pairs() {
    let topologies = vec![
        ("ring8".to_string(), Topology::torus(&[8], true, &[100.0], &[0.0])),
        ("ring16".to_string(), Topology::torus(&[16], true, &[100.0], &[0.0])),
    ];
    let algorithms = [Algorithm::Ring, Algorithm::Direct];
    let o = CancelAfter::new("compare", 1);
    cancelled(Executor::new(&o).run(jobs::Compare {
        topologies: &topologies,
        kind: CollectiveKind::AllReduce,
        algorithms: &algorithms,
        sizes: &[1e6],
        model: LinkModel::AlphaBeta,
    }));
    assert_eq!(o.reports("compare"), vec![(1, 4)]);
}

/// A study's replays: a cancelled evaluator refuses every collective not
/// yet replayed.
#[test]
fn a_cancelled_replay_refuses_the_rest() {
    let study = gpt3_4d();
    let backed = study.backed(&study.evaluator);
    let bw = vec![100.0; study.fabric.ndims()];
    assert!(backed.measure(&bw).is_ok());
    backed.cancel();
    let e = backed.measure(&[200.0, 200.0, 200.0, 200.0]).unwrap_err();
    assert!(e.is_cancelled(), "{e}");
}
