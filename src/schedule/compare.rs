//! Collective algorithms against each other: [`compare`] builds every
//! algorithm's schedule on every topology (through `algorithm::build`, so a
//! name means the same schedule as everywhere else), replays it at every
//! vector size and bounds the collective there, one typed [`Row`] per
//! (topology, algorithm, size). The CSV, table and chart of `dimsum
//! compare` are rendered from the rows by `report::compare`.

use super::algorithm::{self, Algorithm, Options, SpecError};
use super::bounds;
use super::simulate::{self, LinkModel, SimError, SimOptions};
use crate::model::topology::Topology;
use crate::model::workload::CollectiveKind;
use crate::progress::Progress;

/// One replay: an algorithm's schedule on a topology at one vector size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The topology's name as the caller gave it (e.g. `torus:8x8`).
    pub topology: String,
    /// The topology's NPUs.
    pub npus: u32,
    /// The vector size, bytes.
    pub size: f64,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The replayed time, ns.
    pub time_ns: f64,
    /// The collective's lower bound on the topology, ns.
    pub bound_ns: f64,
    /// Whether the replay computed the collective.
    pub valid: bool,
}

/// Why an algorithm could not be compared on a topology.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{topology}, {algorithm}: {cause}")]
pub struct CompareError {
    /// The topology's name.
    pub topology: String,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// What went wrong.
    pub cause: Cause,
}

/// What went wrong with one algorithm on one topology.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Cause {
    /// The schedule could not be built.
    #[error(transparent)]
    Build(#[from] SpecError),
    /// The schedule could not be replayed.
    #[error(transparent)]
    Replay(#[from] SimError),
    /// The observer asked the comparison to stop (before this pair).
    #[error("cancelled")]
    Cancelled,
}

/// Every `algorithms` schedule of `kind` on every one of `topologies`
/// (name, topology), replayed with `model` links at every one of `sizes`
/// (bytes): rows topology by topology, then algorithm by algorithm, then
/// size by size. Each schedule is built once per topology, except TACOS,
/// forest and best, which depend on the size and are built per size.
/// `progress` hears `compare` ((topology, algorithm) pairs done) and
/// stops the comparison, with [`Cause::Cancelled`], before the next pair
/// once it cancels.
pub fn compare(
    topologies: &[(String, Topology)],
    kind: CollectiveKind,
    algorithms: &[Algorithm],
    sizes: &[f64],
    model: LinkModel,
    progress: Progress,
) -> Result<Vec<Row>, CompareError> {
    let pairs = topologies.len() * algorithms.len();
    let mut rows = Vec::with_capacity(topologies.len() * algorithms.len() * sizes.len());
    let mut done = 0;
    for (name, topo) in topologies {
        // The exact cut depends on the topology and the collective only.
        let exact = bounds::exact_cut(topo, kind);
        for &algorithm in algorithms {
            let fail = |cause: Cause| CompareError {
                topology: name.clone(),
                algorithm,
                cause,
            };
            if progress.cancelled() {
                return Err(fail(Cause::Cancelled));
            }
            let mut schedule = None;
            for &size in sizes {
                let s = match schedule.take() {
                    Some(s) if !matches!(algorithm, Algorithm::Tacos | Algorithm::Forest | Algorithm::Best) => s,
                    _ => {
                        let opt = Options {
                            size_bytes: size,
                            link_model: model,
                            ..Options::default()
                        };
                        algorithm::build(topo, kind, algorithm, &opt).map_err(|e| fail(e.into()))?
                    }
                };
                let opt = SimOptions {
                    size_bytes: size,
                    model,
                    record: false,
                    reduce_gbps: None,
                };
                let sim = simulate::simulate(&s, topo, &opt).map_err(|e| fail(e.into()))?;
                rows.push(Row {
                    topology: name.clone(),
                    npus: topo.npus,
                    size,
                    algorithm,
                    time_ns: sim.time_ns,
                    bound_ns: bounds::lower_bounds_with(topo, s.collective, size, exact.as_ref()).bound_ns,
                    valid: sim.valid,
                });
                schedule = Some(s);
            }
            done += 1;
            progress.progress("compare", done, pairs);
        }
    }
    Ok(rows)
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::topology::from_spec;

    #[test]
    fn every_algorithm_on_every_topology_at_every_size_is_valid_and_above_its_bound() {
        let topologies: Vec<(String, Topology)> = ["ring:4", "torus:2x4"]
            .iter()
            .map(|s| (s.to_string(), from_spec(s, &[50.0], &[500.0]).unwrap()))
            .collect();
        let algorithms = [Algorithm::Ring, Algorithm::Swing, Algorithm::Tacos];
        let sizes = [1024.0, 1048576.0];
        let calls = std::sync::Mutex::new(Vec::new());
        let progress = |_: &str, d: usize, n: usize| calls.lock().unwrap().push((d, n));
        let rows = compare(
            &topologies,
            CollectiveKind::AllReduce,
            &algorithms,
            &sizes,
            LinkModel::AlphaBeta,
            &progress,
        )
        .unwrap();
        assert_eq!(rows.len(), topologies.len() * algorithms.len() * sizes.len());
        assert_eq!(calls.into_inner().unwrap(), (1..=6).map(|d| (d, 6)).collect::<Vec<_>>());
        for r in &rows {
            assert!(r.valid, "{r:?}");
            assert!(r.bound_ns > 0.0 && r.time_ns >= r.bound_ns * (1.0 - 1e-9), "{r:?}");
        }
        // Topology by topology, then algorithm by algorithm, then size by size.
        let order: Vec<(&str, Algorithm, f64)> = rows
            .iter()
            .map(|r| (r.topology.as_str(), r.algorithm, r.size))
            .collect();
        assert_eq!(order[0], ("ring:4", Algorithm::Ring, 1024.0));
        assert_eq!(order[1], ("ring:4", Algorithm::Ring, 1048576.0));
        assert_eq!(order[2], ("ring:4", Algorithm::Swing, 1024.0));
        assert_eq!(order[6], ("torus:2x4", Algorithm::Ring, 1024.0));
        assert_eq!(rows[6].npus, 8);
    }

    #[test]
    fn a_schedule_that_cannot_be_built_names_topology_and_algorithm() {
        let topologies = vec![("ring:12".to_string(), from_spec("ring:12", &[50.0], &[0.0]).unwrap())];
        let e = compare(
            &topologies,
            CollectiveKind::AllToAll,
            &[Algorithm::HalvingDoubling],
            &[1024.0],
            LinkModel::AlphaBeta,
            &crate::progress::Quiet,
        )
        .unwrap_err();
        assert_eq!(e.topology, "ring:12");
        assert_eq!(e.algorithm, Algorithm::HalvingDoubling);
        assert!(matches!(e.cause, Cause::Build(SpecError::Build(_))), "{e}");
        assert!(e.to_string().starts_with("ring:12, halving-doubling: "), "{e}");
    }
}
