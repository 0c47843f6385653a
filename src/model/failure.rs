//! What a failed part costs: the group that lost it, rebuilt around the
//! failure, and how often parts fail.
//!
//! **One failure, one group.** A part of dimension d fails in one group of
//! that dimension; the other groups are unharmed. The training step is
//! synchronous, so it is as slow as its slowest group: the collectives that
//! use dimension d run at the failed group's pace. Each block has its own
//! parts and its own remedy (the cheapest the fabric allows):
//!
//! | block | part | remedy | the group's links after it |
//! |---|---|---|---|
//! | ring | `npu-link` (a link between neighbours) | `line` | the ring of n opened into a line of n; a group on part of the ring (a line of p) detours the other way round, through the NPUs of the other groups |
//! | fully-connected | `npu-link` (one pair's link) | `rerouted` | the pair's traffic takes two hops through a peer: the other n - 2 NPUs of the dimension (those outside the group carry no traffic of the group's: their links to it are idle); a pair with no peer (n = 2) cannot |
//! | switch | `nic`, `cable` (an NPU's port or its cable) | `rerouted` | PXN-style: the NPU sends and receives through the NIC of its neighbour on the dimension below, at that dimension's per-link bandwidth, and shares the neighbour's NIC with the neighbour's own group (half of it each) |
//! | switch | `nic`, `cable`, innermost dimension | `re-formed` | no dimension below to reroute over: the group re-forms on its p - 1 survivors |
//! | switch | `switch` (the group's switch) | `rerouted` | every member reroutes through its neighbour below into the neighbouring group's switch, which then carries two groups (half of each NIC each) |
//! | switch | `switch`, innermost dimension | `restart` | the group cannot communicate: the job stops until the switch is replaced |
//!
//! Relays (the peers a rerouted byte passes through) are switch nodes of
//! the failed group's [`Topology`]: they forward and take part in no
//! collective. Where the group is too large to replay (more than
//! [`MAX_REPLAY_NPUS`] members or [`MAX_REPLAY_NODES`] nodes), the
//! closed-form estimate of a bandwidth-bound collective stands in
//! ([`Failed::estimate`], an upper estimate): a line of n at B/2 per
//! direction gathers (or reduce-scatters) S in `2 (n-1)/n S / B`, twice the
//! healthy bidirectional ring's `(n-1)/n S / B` (an end NPU receives
//! `(n-1)/n S` over its one link), and all-reduces it in no less than
//! `2 S / B`, n/(n-1) of the ring's `2 (n-1)/n S / B` (every cut of the line
//! carries S each way over one link): the estimate takes the larger, 2; a
//! fully-connected pair's share of 1/(n-1) spread over the n - 2 two-hop
//! paths adds 1/(n-2) to each link; a rerouted NIC runs at min(B/2, the
//! link below) instead of B; a re-formed group is no slower per byte (a
//! failure never makes a collective faster: the healthy fabric can run
//! whatever the failed one runs).
//!
//! **How often.** A part with a mean time between failures (MTBF, hours,
//! from the catalog) fails `count x 24 / MTBF` times a day; the cluster's
//! rate is the sum over its parts. Parts with no MTBF in the catalog stay
//! unknown, never guessed.
//!
//! **Goodput after checkpoint-restart** (Young, CACM 1974; Daly, FGCS
//! 2006, first order): with the cluster's failure rate λ per hour, a
//! checkpoint every τ hours that takes δ hours to write, and R hours to
//! restart, each failure loses on average half an interval of work plus
//! the restart, and every interval pays its write: the expected fraction
//! of time lost is `λ (τ/2 + R) + δ/τ`, and the goodput is one minus that
//! (at least 0). Young's interval `sqrt(2 δ / λ)` minimises it.

use crate::model::fabric::Block;
use crate::model::topology::{DimKind, NoRoute, Topology};
use serde::Serialize;

/// Most members a failed group may have to be replayed.
pub const MAX_REPLAY_NPUS: u32 = 64;
/// Most nodes (members, relays and switches) a failed group's topology may
/// have to be replayed.
pub const MAX_REPLAY_NODES: u32 = 160;

/// A part that fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// A link between two NPUs (ring, fully-connected): its ports or cable.
    NpuLink,
    /// An NPU's port to a switch (its NIC).
    Nic,
    /// The cable between an NPU and its switch.
    Cable,
    /// A group's switch.
    Switch,
}

impl Part {
    /// The name in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Part::NpuLink => "npu-link",
            Part::Nic => "nic",
            Part::Cable => "cable",
            Part::Switch => "switch",
        }
    }

    /// The parts of a block, in report order.
    pub fn of(block: Block) -> &'static [Part] {
        match block {
            Block::Ring | Block::FullyConnected => &[Part::NpuLink],
            Block::Switch => &[Part::Nic, Part::Cable, Part::Switch],
        }
    }

    /// Whether a bill-of-materials item of `kind` (`port`, `switch`,
    /// `cable`) is this part.
    pub fn is_item(self, kind: &str) -> bool {
        match self {
            Part::NpuLink => kind == "port" || kind == "cable",
            Part::Nic => kind == "port",
            Part::Cable => kind == "cable",
            Part::Switch => kind == "switch",
        }
    }
}

/// What the fabric does about a failed part (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Remedy {
    /// A ring opened into a line.
    Line,
    /// Traffic takes another path (a peer, the dimension below).
    Rerouted,
    /// The group carries on without the member.
    ReFormed,
    /// Nothing carries the group's traffic: the job restarts once the part
    /// is replaced.
    Restart,
}

impl Remedy {
    /// The name in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Remedy::Line => "line",
            Remedy::Rerouted => "rerouted",
            Remedy::ReFormed => "re-formed",
            Remedy::Restart => "restart",
        }
    }
}

/// A collective's group on one dimension: what a failure there rebuilds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DimGroup {
    /// The dimension's block.
    pub block: Block,
    /// NPUs along the dimension.
    pub npus: u32,
    /// The group's members on it (at least 2, at most `npus`).
    pub members: u32,
    /// Per-link bandwidth, GB/s (`topology::per_link_gbps`).
    pub gbps: f64,
    /// Link latency, ns.
    pub latency_ns: f64,
    /// Per-link bandwidth to a neighbour on the dimension below, GB/s, if
    /// there is one (PXN's detour).
    pub lower_gbps: Option<f64>,
}

/// The group after a failure.
#[derive(Debug, Clone)]
pub struct Failed {
    /// What the fabric did.
    pub remedy: Remedy,
    /// The links the group's collective runs on, members first; `None`
    /// when the group is too large to replay, has nothing left to run
    /// (re-formed on one member) or cannot run (`restart`).
    pub topology: Option<Topology>,
    /// Closed-form estimate of failed / healthy time for a bandwidth-bound
    /// collective, at least 1 (module doc).
    pub estimate: f64,
}

impl DimGroup {
    /// The group's own links when nothing has failed (as the schedule
    /// evaluator builds them: a ring's part is a line).
    pub fn healthy(&self) -> Topology {
        let p = self.members;
        let kind = match self.block {
            Block::Ring if p == self.npus => DimKind::Ring,
            Block::Ring => DimKind::Line,
            Block::FullyConnected => DimKind::FullyConnected,
            Block::Switch => DimKind::Switch,
        };
        Topology::from_dims(
            &format!("{}{p}", kind.name()),
            &[("group".to_string(), kind, p)],
            &[self.gbps],
            &[self.latency_ns],
        )
    }

    /// Whether the group is small enough to replay.
    fn replayable(&self, nodes: u32) -> bool {
        self.members <= MAX_REPLAY_NPUS && nodes <= MAX_REPLAY_NODES
    }

    /// The group after `part` failed (module doc).
    pub fn failed(&self, part: Part) -> Result<Failed, NoRoute> {
        let (p, n) = (self.members, self.npus);
        match (self.block, part) {
            (Block::Ring, _) => self.ring(),
            (Block::FullyConnected, _) if p == 2 && n == 2 => Ok(Failed {
                remedy: Remedy::Restart,
                topology: None,
                estimate: 1.0,
            }),
            (Block::FullyConnected, _) => self.fully_connected(),
            (Block::Switch, Part::Switch) if self.lower_gbps.is_none() => Ok(Failed {
                remedy: Remedy::Restart,
                topology: None,
                estimate: 1.0,
            }),
            (Block::Switch, _) if self.lower_gbps.is_none() => Ok(Failed {
                remedy: Remedy::ReFormed,
                topology: (p >= 3 && self.replayable(p)).then(|| {
                    DimGroup {
                        members: p - 1,
                        ..*self
                    }
                    .healthy()
                }),
                estimate: 1.0,
            }),
            (Block::Switch, _) => self.pxn(part == Part::Switch),
        }
    }

    /// A ring's link failed: a line, or a line's detour round the ring.
    fn ring(&self) -> Result<Failed, NoRoute> {
        let (p, n) = (self.members, self.npus);
        if p == n {
            let topology = self.replayable(p).then(|| {
                Topology::from_dims(
                    &format!("line{p}"),
                    &[("group".to_string(), DimKind::Line, p)],
                    &[self.gbps],
                    &[self.latency_ns],
                )
            });
            return Ok(Failed {
                remedy: Remedy::Line,
                topology,
                estimate: 2.0,
            });
        }
        // Members 0..p in line order, the other groups' NPUs after them
        // round the ring; the link in the middle of the line is gone.
        let cut = p / 2 - 1;
        let mut links = Vec::new();
        for a in 0..n {
            let b = (a + 1) % n;
            if a != cut {
                links.push((a, b, self.gbps, self.latency_ns));
                links.push((b, a, self.gbps, self.latency_ns));
            }
        }
        let topology = match self.replayable(n) {
            true => Some(Topology::from_links(
                &format!("line{p}/ring{n}-detour"),
                p,
                n - p,
                &links,
            )?),
            false => None,
        };
        Ok(Failed {
            remedy: Remedy::Rerouted,
            topology,
            estimate: 1.0,
        })
    }

    /// One pair's link of a fully-connected dimension failed.
    fn fully_connected(&self) -> Result<Failed, NoRoute> {
        let (p, n) = (self.members, self.npus);
        // The members' links to the relays (the NPUs outside the group)
        // first: routes take the lowest link id among the shortest, so the
        // lost pair's two hops go through an idle relay when there is one.
        // Relays only forward: no links among them.
        let mut links = Vec::new();
        for a in 0..p {
            for r in p..n {
                links.extend([(a, r, self.gbps, self.latency_ns), (r, a, self.gbps, self.latency_ns)]);
            }
        }
        for a in 0..p {
            for b in 0..p {
                if a != b && (a.min(b), a.max(b)) != (0, 1) {
                    links.push((a, b, self.gbps, self.latency_ns));
                }
            }
        }
        let topology = match self.replayable(n) {
            true => Some(Topology::from_links(&format!("fc{p}/{n}-pair"), p, n - p, &links)?),
            false => None,
        };
        let estimate = if p == n { 1.0 + 1.0 / f64::from(n - 2) } else { 1.0 };
        Ok(Failed {
            remedy: Remedy::Rerouted,
            topology,
            estimate,
        })
    }

    /// A switch port (or the switch) lost: PXN through the dimension below.
    fn pxn(&self, whole: bool) -> Result<Failed, NoRoute> {
        let p = self.members;
        let lower = self.lower_gbps.unwrap_or(self.gbps);
        let (lat, shared) = (self.latency_ns, self.gbps / 2.0);
        // Nodes: members 0..p, the switch at p, relays from p + 1.
        let sw = p;
        let mut links = Vec::new();
        let rerouted = if whole { p } else { 1 };
        for v in 0..p {
            if v < rerouted {
                let relay = p + 1 + v;
                links.extend([(v, relay, lower, lat), (relay, v, lower, lat)]);
                links.extend([(relay, sw, shared, lat), (sw, relay, shared, lat)]);
            } else {
                links.extend([(v, sw, self.gbps, lat), (sw, v, self.gbps, lat)]);
            }
        }
        let topology = match self.replayable(p + 1 + rerouted) {
            true => Some(Topology::from_links(
                &format!("switch{p}-pxn{rerouted}"),
                p,
                1 + rerouted,
                &links,
            )?),
            false => None,
        };
        Ok(Failed {
            remedy: Remedy::Rerouted,
            topology,
            estimate: (self.gbps / lower.min(shared)).max(1.0),
        })
    }
}

/// A part's failures per day: `count x 24 / MTBF`.
///
/// ```
/// use dimsum::model::failure::failures_per_day;
/// // 4,096 NICs at an MTBF of 3,033,381 h: 98,304 / 3,033,381 = 0.0324074 a day.
/// assert!((failures_per_day(4096, 3_033_381.0) - 0.032_407_4).abs() < 1e-7);
/// ```
pub fn failures_per_day(count: u64, mtbf_h: f64) -> f64 {
    count as f64 * 24.0 / mtbf_h
}

/// Checkpoint-restart settings (`[reliability]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Reliability {
    /// Minutes between checkpoints (τ).
    pub checkpoint_interval_min: f64,
    /// Minutes from a failure to training again (R): detection, restart,
    /// loading the checkpoint.
    pub restart_min: f64,
    /// Seconds the job stops to write one checkpoint (δ; 0: asynchronous).
    pub checkpoint_write_s: f64,
}

/// Goodput after checkpoint-restart (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Goodput {
    /// The failures it counts, per day.
    pub failures_per_day: f64,
    /// Expected fraction of time lost: `λ (τ/2 + R) + δ/τ`.
    pub lost_fraction: f64,
    /// One minus the lost fraction, at least 0.
    pub goodput: f64,
    /// Young's interval `sqrt(2 δ / λ)`, minutes (with δ and λ above 0).
    pub young_interval_min: Option<f64>,
}

impl Reliability {
    /// The goodput at `failures_per_day` failures a day.
    ///
    /// ```
    /// use dimsum::model::failure::Reliability;
    /// // 2.4 failures a day = 0.1 an hour; a checkpoint every hour, 6 min
    /// // to restart, 36 s to write: 0.1 x (0.5 + 0.1) + 0.01 / 1 = 0.07.
    /// let r = Reliability { checkpoint_interval_min: 60.0, restart_min: 6.0, checkpoint_write_s: 36.0 };
    /// let g = r.goodput(2.4);
    /// assert!((g.lost_fraction - 0.07).abs() < 1e-12);
    /// assert!((g.goodput - 0.93).abs() < 1e-12);
    /// // Young: sqrt(2 x 0.01 h / 0.1 per h) = sqrt(0.2) h = 26.8 min.
    /// assert!((g.young_interval_min.unwrap() - 0.2f64.sqrt() * 60.0).abs() < 1e-9);
    /// ```
    pub fn goodput(&self, failures_per_day: f64) -> Goodput {
        let lambda = failures_per_day / 24.0;
        let tau = self.checkpoint_interval_min / 60.0;
        let restart = self.restart_min / 60.0;
        let write = self.checkpoint_write_s / 3600.0;
        let lost_fraction = lambda * (tau / 2.0 + restart) + write / tau;
        let young_interval_min = (write > 0.0 && lambda > 0.0).then(|| (2.0 * write / lambda).sqrt() * 60.0);
        Goodput {
            failures_per_day,
            lost_fraction,
            goodput: (1.0 - lost_fraction).max(0.0),
            young_interval_min,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(block: Block, npus: u32, members: u32, lower: Option<f64>) -> DimGroup {
        DimGroup {
            block,
            npus,
            members,
            gbps: 50.0,
            latency_ns: 0.0,
            lower_gbps: lower,
        }
    }

    #[test]
    fn each_block_rebuilds_its_group() {
        // A ring of 4 opens into a line: 3 links each way = 6.
        let f = group(Block::Ring, 4, 4, None).failed(Part::NpuLink).unwrap();
        assert_eq!(f.remedy, Remedy::Line);
        assert_eq!(f.topology.unwrap().links.len(), 6);
        // A line of 2 on a ring of 4: the one link gone, the detour through
        // 2 relays: 3 links each way.
        let t = group(Block::Ring, 4, 2, None)
            .failed(Part::NpuLink)
            .unwrap()
            .topology
            .unwrap();
        assert_eq!((t.npus, t.switches, t.links.len()), (2, 2, 6));
        // fc of 4: 12 links less the pair's 2.
        let t = group(Block::FullyConnected, 4, 4, None).failed(Part::NpuLink).unwrap();
        assert_eq!(t.topology.unwrap().links.len(), 10);
        assert!((t.estimate - 1.5).abs() < 1e-12);
        // A pair on fc of 8: 6 relays x 2 members x 2 ways = 24 links.
        let t = group(Block::FullyConnected, 8, 2, None).failed(Part::NpuLink).unwrap();
        assert_eq!(t.topology.unwrap().links.len(), 24);
        // A NIC on a switch of 4 with a dimension below: 3 members x 2 + 4.
        let f = group(Block::Switch, 4, 4, Some(100.0)).failed(Part::Nic).unwrap();
        assert_eq!((f.remedy, f.topology.unwrap().links.len()), (Remedy::Rerouted, 10));
        assert!((f.estimate - 2.0).abs() < 1e-12);
        // Innermost: re-formed on 3, or no switch at all.
        let f = group(Block::Switch, 4, 4, None).failed(Part::Nic).unwrap();
        assert_eq!((f.remedy, f.topology.unwrap().npus), (Remedy::ReFormed, 3));
        let f = group(Block::Switch, 4, 4, None).failed(Part::Switch).unwrap();
        assert_eq!((f.remedy, f.topology.is_none()), (Remedy::Restart, true));
    }
}
