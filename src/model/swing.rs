//! Swing's peer arithmetic (De Sensi, Bonato, Saam and Hoefler, "Swing:
//! Short-cutting Rings for Higher Bandwidth Allreduce", NSDI'24): the peer
//! function `rho`, the per-dimension fold for sizes that are not powers of
//! two, the reach sets of every coordinate, and the analytic per-dimension
//! model the collective model uses. `schedule::swing` builds explicit
//! schedules from the same arithmetic; its module doc says how.

use crate::model::workload::CollectiveKind;

/// The peers of a step are not a butterfly on this dimension.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotButterfly(pub String);

/// `rho(s) = sum_{i=0..s} (-2)^i = (1 - (-2)^(s+1)) / 3`.
pub fn rho(s: u32) -> i64 {
    (1 - (-2i64).pow(s + 1)) / 3
}

/// Swing's peer of rank `r` at step `s` on a ring of `p`.
pub fn peer(r: u32, s: u32, p: u32) -> u32 {
    let d = rho(s);
    let x = if r.is_multiple_of(2) {
        i64::from(r) + d
    } else {
        i64::from(r) - d
    };
    x.rem_euclid(i64::from(p)) as u32
}

/// Which peer function the butterfly uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peers {
    /// Swing's `r +- rho(s)`.
    Swing,
    /// Recursive doubling's `r xor 2^s`.
    Doubling,
}

/// What each step moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Halving blocks (reduce-scatter, then all-gather).
    Bandwidth,
    /// The whole vector every step (all-reduce only).
    Latency,
}

/// One dimension of the torus as the builder sees it.
#[derive(Debug, Clone)]
pub(crate) struct Dim {
    /// Physical size.
    pub(crate) p: u32,
    /// Largest power of two not above `p`.
    pub(crate) q: u32,
    /// `p - q`: coordinates `1, 3, .., 2e-1` fold.
    pub(crate) e: u32,
    /// `log2 q`.
    pub(crate) steps: u32,
    /// Rank stride.
    pub(crate) stride: u32,
}

impl Dim {
    /// Bandwidth-optimal Swing runs natively on an even size (`q = p`) and
    /// folds one coordinate of an odd one (`q = p - 1`); exchanges of the
    /// whole vector and recursive doubling need a butterfly, a power of two
    /// (`q` = the largest not above `p`).
    pub(crate) fn new(p: u32, stride: u32, peers: Peers, variant: Variant) -> Dim {
        let q = match (peers, variant) {
            _ if p <= 2 => p,
            (Peers::Swing, Variant::Bandwidth) => p - p % 2,
            _ => 1 << (31 - p.leading_zeros()),
        };
        Dim {
            p,
            q,
            e: p - q,
            steps: if q <= 1 { 0 } else { 32 - (q - 1).leading_zeros() },
            stride,
        }
    }

    /// Physical coordinate of virtual coordinate `v`.
    pub(crate) fn phys(&self, v: u32) -> u32 {
        if v < self.e { 2 * v } else { v + self.e }
    }

    /// Offsets from `phys(v)` of the physical coordinates folded into
    /// virtual `v` (itself first).
    pub(crate) fn preimage(&self, v: u32) -> &'static [u32] {
        if v < self.e { &[0, 1] } else { &[0] }
    }

    /// Whether physical coordinate `x` folds away.
    pub(crate) fn extra(&self, x: u32) -> bool {
        x < 2 * self.e && x % 2 == 1
    }

    /// Whether physical coordinate `x` absorbs a folded neighbour.
    pub(crate) fn absorbs(&self, x: u32) -> bool {
        x < 2 * self.e && x.is_multiple_of(2)
    }

    /// Virtual peer of `v` at local step `k`.
    pub(crate) fn peer(&self, v: u32, k: u32, peers: Peers, mirror: bool) -> u32 {
        match peers {
            Peers::Doubling => v ^ (1 << k),
            Peers::Swing => {
                let d = rho(k);
                let up = v.is_multiple_of(2) != mirror;
                (if up { i64::from(v) + d } else { i64::from(v) - d }).rem_euclid(i64::from(self.q)) as u32
            }
        }
    }
}

/// A set of physical coordinates on one dimension: its elements and the
/// same set as arithmetic runs `(start, count, stride)`.
#[derive(Debug, Clone, Default)]
pub(crate) struct CoordSet {
    pub(crate) elems: Vec<u32>,
    pub(crate) runs: Vec<(u32, u32, u32)>,
}

/// Splits sorted `xs` into arithmetic runs: the fewest of a greedy cut and
/// of the residue classes modulo a power of two (Swing's reach sets are two
/// residue classes).
pub(crate) fn arith_runs(xs: &[u32], p: u32) -> Vec<(u32, u32, u32)> {
    let greedy = {
        let mut out = Vec::new();
        let mut i = 0;
        while i < xs.len() {
            if i + 1 < xs.len() {
                let st = xs[i + 1] - xs[i];
                let mut j = i + 1;
                while j + 1 < xs.len() && xs[j + 1] - xs[j] == st {
                    j += 1;
                }
                out.push((xs[i], (j - i + 1) as u32, st));
                i = j + 1;
            } else {
                out.push((xs[i], 1, 1));
                i += 1;
            }
        }
        out
    };
    let mut best = greedy;
    let n = xs.len() as u64;
    let mut m = 2u32;
    while m < p && u64::from(m) * n <= 8 * u64::from(p) {
        // Residue classes mod m: each must be consecutive in xs.
        let mut classes: Vec<(u32, u32, u32)> = Vec::new();
        let mut last: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
        let mut ok = true;
        for &x in xs {
            match last.get(&(x % m)) {
                Some(&i) => {
                    let c = &mut classes[i];
                    if c.0 + c.1 * m != x {
                        ok = false;
                        break;
                    }
                    c.1 += 1;
                }
                None => {
                    last.insert(x % m, classes.len());
                    classes.push((x, 1, m));
                }
            }
        }
        if ok && classes.len() < best.len() {
            best = classes;
        }
        m *= 2;
    }
    for r in &mut best {
        if r.1 == 1 {
            r.2 = 1;
        }
    }
    best
}

/// Per dimension and mirror flag: the physical coordinates reached from
/// virtual `v` using local steps `c..`, for every `c` and `v`.
pub(crate) struct Reach {
    /// `sets[c][v]`: reached from `v` with local steps `c..`.
    pub(crate) sets: Vec<Vec<CoordSet>>,
    /// `diff[c][v]`: `sets[c][v]` minus `sets[c + 1][v]`, what `v` hands
    /// its peer at local step `c` of a reduce-scatter.
    pub(crate) diff: Vec<Vec<CoordSet>>,
}

impl Reach {
    pub(crate) fn new(d: &Dim, peers: Peers, mirror: bool) -> Result<Reach, NotButterfly> {
        let q = d.q as usize;
        let mut virt: Vec<Vec<u32>> = (0..d.q).map(|v| vec![v]).collect();
        let mut levels: Vec<Vec<Vec<u32>>> = vec![virt.clone()];
        for c in (0..d.steps).rev() {
            let mut next = Vec::with_capacity(q);
            for v in 0..d.q {
                let w = d.peer(v, c, peers, mirror);
                if w >= d.q || d.peer(w, c, peers, mirror) != v || w == v {
                    return Err(NotButterfly(format!(
                        "the peers of step {c} on a dimension of {} are not symmetric",
                        d.q
                    )));
                }
                let mut s: Vec<u32> = virt[v as usize].iter().chain(&virt[w as usize]).copied().collect();
                s.sort_unstable();
                s.dedup();
                next.push(s);
            }
            virt = next;
            levels.push(virt.clone());
        }
        levels.reverse();
        if let Some(v) = levels[0].iter().position(|s| s.len() != q) {
            return Err(NotButterfly(format!(
                "on a dimension of {}, coordinate {v} reaches only {} of the others in {} steps",
                d.q,
                levels[0][v].len() - 1,
                d.steps
            )));
        }
        let coord_set = |vs: &[u32]| -> CoordSet {
            let mut elems: Vec<u32> = vs
                .iter()
                .flat_map(|&v| d.preimage(v).iter().map(move |o| d.phys(v) + o))
                .collect();
            elems.sort_unstable();
            let runs = arith_runs(&elems, d.p);
            CoordSet { elems, runs }
        };
        let diff = (0..d.steps as usize)
            .map(|c| {
                (0..q)
                    .map(|v| {
                        let later = &levels[c + 1][v];
                        let only: Vec<u32> = levels[c][v]
                            .iter()
                            .copied()
                            .filter(|x| later.binary_search(x).is_err())
                            .collect();
                        coord_set(&only)
                    })
                    .collect()
            })
            .collect();
        let sets = levels
            .iter()
            .map(|level| level.iter().map(|vs| coord_set(vs)).collect())
            .collect();
        Ok(Reach { sets, diff })
    }
}

/// Swing (bandwidth-optimal, both directions as the multiport form runs it)
/// on one dimension of `p` NPUs, for the analytic model: the collective
/// takes `hops * latency + factor * size / B`, with `B` an NPU's bandwidth
/// on the dimension (both directions together on a ring) and `size` the
/// vector at this dimension (the all-reduce / reduce-scatter input, the
/// all-gather output).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DimModel {
    /// Link hops on the chain of steps (latency multiplier).
    pub hops: f64,
    /// Time per byte of the vector, in units of `1 / B`.
    pub factor: f64,
}

/// The model of `kind` on a ring (`ring = true`: per-direction links of
/// `B/2`, transfers take the shorter way round, the load of the most loaded
/// link sets a step's time) or through a switch (each NPU sends and receives
/// at `B`, two hops a step), for `p` NPUs, folds included. Steps run one
/// after another; a step lasts as long as its most loaded link or its
/// longest message stored and forwarded hop by hop, whichever is longer. On
/// a ring of a power of two both are `|rho(s)|` messages per directed link,
/// so a step takes `|rho(s)| m / B` for per-NPU messages of `m` (`m / B`
/// through a switch) and the model equals the simulator; other sizes are
/// within 20 % of it (tests/swing.rs). Returns `None` for collectives Swing does
/// not build (all-to-all, send-recv).
pub fn dim_model(kind: CollectiveKind, p: u32, ring: bool) -> Option<DimModel> {
    let (up, down) = match kind {
        CollectiveKind::AllReduce => (true, true),
        CollectiveKind::ReduceScatter => (true, false),
        CollectiveKind::AllGather => (false, true),
        CollectiveKind::AllToAll | CollectiveKind::SendRecv => return None,
    };
    if p < 2 {
        return Some(DimModel { hops: 0.0, factor: 0.0 });
    }
    let d = Dim::new(p, 1, Peers::Swing, Variant::Bandwidth);
    let ports: &[bool] = if ring { &[false, true] } else { &[false] };
    let share = 1.0 / ports.len() as f64;
    let shard = 1.0 / f64::from(p);
    let (mut hops, mut factor) = (0.0, 0.0);
    // One step: messages (src, dst, fraction of the vector) -> (hops, time).
    let step = |msgs: &[(u32, u32, f64)]| -> (f64, f64) {
        if ring {
            let mut load = vec![0.0f64; 2 * p as usize];
            let (mut far, mut carried) = (0u32, 0.0f64);
            for &(a, b, m) in msgs {
                let fwd = (b + p - a) % p;
                let (dir, dist) = if fwd <= p - fwd { (0, fwd) } else { (1, p - fwd) };
                far = far.max(dist);
                carried = carried.max(f64::from(dist) * m);
                for h in 0..dist {
                    let at = if dir == 0 { (a + h) % p } else { (a + p - h) % p };
                    load[(2 * at + dir) as usize] += m;
                }
            }
            // The most loaded link, or a message stored and forwarded hop
            // by hop, whichever is longer.
            let most = load.iter().fold(carried, |x: f64, &y| x.max(y));
            (f64::from(far), 2.0 * most)
        } else {
            let mut out = vec![0.0f64; p as usize];
            let mut inn = vec![0.0f64; p as usize];
            for &(a, b, m) in msgs {
                out[a as usize] += m;
                inn[b as usize] += m;
            }
            let most = out.iter().chain(&inn).fold(0.0, |x: f64, &y| x.max(y));
            (2.0, most)
        }
    };
    let mut add = |(h, t): (f64, f64)| {
        hops += h;
        factor += t;
    };
    let extras: Vec<u32> = (0..p).filter(|&x| d.extra(x)).collect();
    // Fold in: the whole vector (reductions) or the held block (gather).
    if d.e > 0 {
        let m = if up { 1.0 } else { shard };
        add(step(&extras.iter().map(|&x| (x, x - 1, m)).collect::<Vec<_>>()));
    }
    let reach: Vec<Reach> = ports
        .iter()
        .map(|&mirror| Reach::new(&d, Peers::Swing, mirror))
        .collect::<Result<_, _>>()
        .ok()?;
    let msgs_at = |k: u32, gather: bool| -> Vec<(u32, u32, f64)> {
        let mut msgs = Vec::new();
        for (i, &mirror) in ports.iter().enumerate() {
            for v in 0..d.q {
                let w = d.peer(v, k, Peers::Swing, mirror);
                // The reduce-scatter hands the peer what only this side
                // reaches; the all-gather hands it back.
                let from = if gather { w } else { v };
                let n = reach[i].diff[k as usize][from as usize].elems.len() as f64;
                msgs.push((d.phys(v), d.phys(w), n * shard * share));
            }
        }
        msgs
    };
    if up {
        for k in 0..d.steps {
            add(step(&msgs_at(k, false)));
        }
    }
    if down {
        for k in (0..d.steps).rev() {
            add(step(&msgs_at(k, true)));
        }
    }
    // Unfold: the whole vector (all-reduce, all-gather) or the folded
    // coordinate's block (reduce-scatter).
    if d.e > 0 {
        let m = if down { 1.0 } else { shard };
        add(step(&extras.iter().map(|&x| (x - 1, x, m)).collect::<Vec<_>>()));
    }
    Some(DimModel { hops, factor })
}
