//! One schedule replayed on one topology, beside the lower bounds of its
//! collective: [`Replay`] owns the topology, the schedule, the simulator's
//! result, the bounds, the buffer size and the link model, which is
//! everything `dimsum collective` reports (the renderers are in
//! `report::collective`).

use super::Schedule;
use super::bounds::{self, Bounds};
use super::simulate::{self, LinkModel, SimError, SimOptions, SimResult};
use crate::model::topology::Topology;
use std::sync::atomic::AtomicU64;

/// A schedule replayed on a topology, with the lower bounds.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The topology.
    pub topo: Topology,
    /// The schedule.
    pub schedule: Schedule,
    /// The replay.
    pub sim: SimResult,
    /// The lower bounds of the schedule's collective on the topology.
    pub bounds: Bounds,
    /// Buffer size, bytes.
    pub size: f64,
    /// Link model.
    pub model: LinkModel,
}

impl Replay {
    /// Replays `schedule` on `topo` with a buffer of `size` bytes (keeping
    /// every hop for a timeline when `record`) and bounds its collective.
    pub fn new(
        topo: Topology,
        schedule: Schedule,
        size: f64,
        model: LinkModel,
        record: bool,
    ) -> Result<Replay, SimError> {
        Replay::staged(topo, schedule, size, model, record, &|| (), &AtomicU64::new(0))
    }

    /// [`Replay::new`], calling `replayed` between the replay and the
    /// bounds (the two long stages on large topologies, for progress) and
    /// counting the transfers landed in `landed` as the replay goes
    /// ([`simulate::simulate_observed`]).
    pub fn staged(
        topo: Topology,
        schedule: Schedule,
        size: f64,
        model: LinkModel,
        record: bool,
        replayed: &dyn Fn(),
        landed: &AtomicU64,
    ) -> Result<Replay, SimError> {
        let opt = SimOptions {
            size_bytes: size,
            model,
            record,
            reduce_gbps: None,
        };
        let sim = simulate::simulate_observed(&schedule, &topo, &opt, landed)?;
        replayed();
        let bounds = bounds::lower_bounds(&topo, schedule.collective, size);
        Ok(Replay {
            topo,
            schedule,
            sim,
            bounds,
            size,
            model,
        })
    }

    /// Time over the lower bound (1 when the bound is 0).
    pub fn ratio(&self) -> f64 {
        if self.bounds.bound_ns > 0.0 {
            self.sim.time_ns / self.bounds.bound_ns
        } else {
            1.0
        }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::topology::from_spec;
    use crate::model::workload::CollectiveKind;
    use crate::schedule::algorithm::{self, Algorithm, Options};

    #[test]
    fn a_ring_all_reduce_replays_valid_and_above_its_bound() {
        let topo = from_spec("ring:4", &[50.0], &[500.0]).unwrap();
        let kind = CollectiveKind::AllReduce;
        let s = algorithm::build(&topo, kind, Algorithm::Ring, &Options::default()).unwrap();
        let r = Replay::new(topo, s, 1e6, LinkModel::AlphaBeta, false).unwrap();
        assert!(r.sim.valid, "{:?}", r.sim.errors);
        assert!(r.bounds.bound_ns > 0.0);
        assert!(r.ratio() >= 1.0 - 1e-9, "{}", r.ratio());
        assert_eq!(r.ratio(), r.sim.time_ns / r.bounds.bound_ns);
        // A schedule for other NPUs is refused, not replayed.
        let other = from_spec("ring:8", &[50.0], &[500.0]).unwrap();
        assert!(matches!(
            Replay::new(other, r.schedule, 1e6, LinkModel::AlphaBeta, false),
            Err(SimError::Size { .. })
        ));
    }
}
