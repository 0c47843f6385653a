//! A switch dimension built as a fat-tree (`block = "fat-tree"` in a
//! study): its switch and cable counts per tier, and the taper its
//! oversubscription puts on a collective's bytes.
//!
//! **Counts.** A tree of N endpoints on switches of radix R (h = R/2) with
//! `levels` L and oversubscription o_i (down:up, >= 1) at level i below the
//! top (o_1 at the leaves):
//! - one level (N <= R): one switch;
//! - level 1 (leaves): S_1 = ceil(N / h), each with h ports down (the
//!   rail-aligned leaf of a scalable unit) and u_1 = ceil(h / o_1) up;
//!   U_1 = S_1 u_1 links up;
//! - a middle level i (1 < i < L): S_i = ceil(U_{i-1} / h), h down and
//!   u_i = ceil(h / o_i) up, U_i = S_i u_i;
//! - the top level: S_L = ceil(U_{L-1} / R), every port down.
//!
//! Non-blocking (every o_i = 1) this is the folded Clos of NVIDIA's DGX
//! SuperPOD reference architectures at R = 64: L = 2 while N <= R^2/2 =
//! 2,048 (1 SU, 256 GPUs: 8 leaves, 4 spines, 256 leaf-spine links), L = 3
//! above (16 SU, 4,096 GPUs: 128 leaves, 128 spines, 64 core; 4,096 links
//! on each tier). L levels reach at most `R h^(L-1)` endpoints
//! ([`fewest_levels`]); oversubscription removes uplinks and upper-tier
//! switches, never adds endpoints to a leaf (a 2:1 leaf keeps its h ports
//! down and has h/2 up: half the spines).
//!
//! **Rails.** `rails = "optimized"`: the tree spans the dimension's groups
//! together with every dimension below it (its N is the product of their
//! sizes: 8 GPUs x 32 nodes = 256 at 1 SU), one leaf per rail per scalable
//! unit, so any GPU reaches any other without the scale-up fabric; with
//! `per-group` (the default) each group of the dimension has its own tree,
//! as today's switch dimension does. One tree per port plane either way.
//!
//! **Time.** A group of p NPUs placed in order fills subtrees of
//! `s_i = h^i` NPUs below level i+1 (the leaves' h, then pods of h^2, ...).
//! A share `f_i = (p - s_i) / (p - 1)` of uniform traffic (every NPU to
//! every other alike) leaves a level-i subtree (0 when p <= s_i), and the
//! same share of a halving-doubling collective's bytes moves in the steps
//! whose peers are `s_i` or more ranks apart (their bytes S(1 - s_i/p)
//! against S(1 - 1/p) in all). The uplinks of a level-i subtree carry
//! `1 / O_i` of what its NPUs inject, `O_i = o_1 ... o_i`. So the bytes of
//! LIBRA's model are scaled by a constant (the coefficient contract stays
//! `alpha + bytes / B`, convex in B):
//! - direct (all NPUs send at once): the injection link and the busiest
//!   uplink run together, `max(1, max_i f_i O_i)`;
//! - halving-doubling and Swing (the steps run one after another):
//!   `1 + sum_i (f_i - f_{i+1}) (O_i - 1)`, f beyond the top 0 (one level:
//!   `1 + f (o - 1)`);
//! - ring and send-recv: 1 (a ring in rank order crosses a subtree's
//!   uplinks with one flow each way, which its ceil(h/o) >= 1 uplinks carry).
//!
//! Non-blocking trees scale nothing: a fat-tree dimension's time equals the
//! switch's. Replays (`--evaluator schedule`) see the dimension as one
//! non-blocking switch: the taper is in the analytic model only.

use crate::model::collective::Algorithm;
use crate::model::fabric::FatTree;
use crate::model::workload::CollectiveKind;

/// One tier of a tree: its switches and the links from it to the tier
/// above (0 at the top).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    /// Switches on the tier.
    pub switches: u64,
    /// Links up to the next tier.
    pub uplinks: u64,
}

/// The fewest levels of radix-`radix` switches that reach `npus`
/// endpoints: the least L with `npus <= R (R/2)^(L-1)`; `None` for a radix
/// under 2 or past 8 levels.
pub fn fewest_levels(radix: u32, npus: u64) -> Option<u32> {
    if radix < 2 {
        return None;
    }
    let half = u128::from(radix / 2);
    let mut reach = u128::from(radix);
    for levels in 1..=MAX_LEVELS {
        if u128::from(npus) <= reach {
            return Some(levels);
        }
        reach = reach.saturating_mul(half);
    }
    None
}

/// The most levels a study may ask for.
pub const MAX_LEVELS: u32 = 8;

/// The oversubscription at level `i` (1: the leaves), 1 where not given.
fn over(o: &[f64], i: usize) -> f64 {
    o.get(i - 1).copied().unwrap_or(1.0).max(1.0)
}

/// The tiers of one tree of `npus` endpoints on radix-`radix` switches
/// with `levels` levels (module doc), leaves first; `None` where the
/// levels are too few for the radix.
pub fn tiers(radix: u32, npus: u64, levels: u32, oversubscription: &[f64]) -> Option<Vec<Tier>> {
    let fewest = fewest_levels(radix, npus)?;
    if levels < fewest || levels > MAX_LEVELS {
        return None;
    }
    if levels == 1 {
        return Some(vec![Tier {
            switches: 1,
            uplinks: 0,
        }]);
    }
    let r = u64::from(radix);
    let half = r / 2;
    let mut out = Vec::new();
    // Endpoints (or links from below) each tier takes in.
    let mut below = npus;
    for i in 1..levels as usize {
        let switches = below.div_ceil(half);
        let up = (half as f64 / over(oversubscription, i)).ceil() as u64;
        let uplinks = switches * up.max(1);
        out.push(Tier { switches, uplinks });
        below = uplinks;
    }
    out.push(Tier {
        switches: below.div_ceil(r),
        uplinks: 0,
    });
    Some(out)
}

impl FatTree {
    /// The levels a tree of `npus` endpoints on radix-`radix` switches has:
    /// the study's `levels`, else the fewest the radix allows.
    pub fn levels_for(&self, radix: u32, npus: u64) -> Option<u32> {
        self.levels.or_else(|| fewest_levels(radix, npus))
    }

    /// How many times LIBRA's bytes a `kind` over a group of `p` takes on
    /// this tree under `algorithm` (module doc: the taper; 1 when no level
    /// is oversubscribed). The tree's radix is [`FatTree::radix`], its
    /// levels those it has for `p` NPUs at least.
    pub fn taper(&self, algorithm: Algorithm, kind: CollectiveKind, p: u32) -> f64 {
        if p <= 1 || kind == CollectiveKind::SendRecv || algorithm == Algorithm::Ring {
            return 1.0;
        }
        if self.oversubscription.iter().all(|o| *o <= 1.0) {
            return 1.0;
        }
        let pf = f64::from(p);
        let half = f64::from(self.radix / 2).max(1.0);
        // (f_i, O_i) per level below the top.
        let mut levels = Vec::new();
        let mut s = half;
        let mut taper = 1.0;
        for i in 1..=self.oversubscription.len() {
            taper *= over(&self.oversubscription, i);
            let f = if pf > s { (pf - s) / (pf - 1.0) } else { 0.0 };
            levels.push((f, taper));
            s *= half;
        }
        match algorithm {
            Algorithm::Direct => levels.iter().map(|(f, o)| f * o).fold(1.0, f64::max),
            Algorithm::HalvingDoubling | Algorithm::Swing | Algorithm::Ring => {
                let mut factor = 1.0;
                for (i, (f, o)) in levels.iter().enumerate() {
                    let next = levels.get(i + 1).map_or(0.0, |x| x.0);
                    factor += (f - next) * (o - 1.0);
                }
                factor
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::fabric::Rails;

    #[test]
    fn superpod_counts() {
        // R = 64: 256 GPUs, 8 leaves (256 / 32), 4 spines (8 x 32 / 64).
        let t = tiers(64, 256, 2, &[]).unwrap();
        assert_eq!(
            t,
            vec![
                Tier {
                    switches: 8,
                    uplinks: 256
                },
                Tier {
                    switches: 4,
                    uplinks: 0
                }
            ]
        );
        // 4,096 GPUs: 128 leaves, 4,096 / 32 = 128 spines, 4,096 / 64 = 64 core.
        let t = tiers(64, 4096, 3, &[]).unwrap();
        assert_eq!(t.iter().map(|x| x.switches).collect::<Vec<_>>(), vec![128, 128, 64]);
        assert_eq!(fewest_levels(64, 64), Some(1));
        assert_eq!(fewest_levels(64, 2048), Some(2));
        assert_eq!(fewest_levels(64, 2049), Some(3));
        assert_eq!(tiers(64, 4096, 2, &[]), None);
    }

    #[test]
    fn taper_by_hand() {
        let t = FatTree {
            levels: None,
            oversubscription: vec![2.0],
            rails: Rails::PerGroup,
            radix: 64,
        };
        // 64 NPUs over leaves of 32: 32 of 63 peers off the leaf.
        // direct: max(1, 32/63 x 2) = 64/63; halving-doubling 1 + 32/63.
        assert_eq!(t.taper(Algorithm::Direct, CollectiveKind::AllToAll, 64), 64.0 / 63.0);
        assert_eq!(
            t.taper(Algorithm::HalvingDoubling, CollectiveKind::AllReduce, 64),
            1.0 + 32.0 / 63.0
        );
        assert_eq!(t.taper(Algorithm::Ring, CollectiveKind::AllReduce, 64), 1.0);
        assert_eq!(t.taper(Algorithm::Direct, CollectiveKind::AllToAll, 32), 1.0);
    }
}
