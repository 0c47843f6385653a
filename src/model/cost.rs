//! Dollar and power models of a fabric, both linear in the per-dimension
//! bandwidths.
//!
//! Cost follows LIBRA's model (astra-sim/libra, `src/cost_model`): each
//! dimension is built from copies of its building block, and each block costs
//! its links' bandwidth times a per-GB/s price, plus switch and NIC prices on
//! switch dimensions. Counting copies and links, every block collapses to the
//! same per-NPU form:
//!
//! - ring of n: N/n rings x 2n unidirectional links x B/2 per link = N * B
//! - fully-connected of n: N/n groups x n(n-1) links x B/(n-1) = N * B
//! - switch: (product of the outer sizes) switches x (product of the inner
//!   sizes, this one included) links x B = N * B
//!
//! so `cost = N * sum_d kappa_d * B_d` with `kappa_d` = link, plus switch and
//! NIC on switch dimensions, in dollars per GB/s. Power uses the same shape
//! with energy per bit: `power = N * sum_d B_d * 8e9 bit/GB * e_d pJ/bit`.

use crate::model::fabric::{Block, Fabric};
use crate::model::units;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Prices and energies of one cost tier (e.g. `InterPod`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    /// Link, dollars per GB/s.
    pub link_usd_per_gbps: f64,
    /// Switch, dollars per GB/s (switch dimensions only).
    #[serde(default)]
    pub switch_usd_per_gbps: f64,
    /// NIC, dollars per GB/s (switch dimensions only).
    #[serde(default)]
    pub nic_usd_per_gbps: f64,
    /// Link energy, pJ/bit.
    #[serde(default)]
    pub link_pj_per_bit: f64,
    /// Switch energy, pJ/bit (switch dimensions only).
    #[serde(default)]
    pub switch_pj_per_bit: f64,
    /// NIC energy, pJ/bit (switch dimensions only).
    #[serde(default)]
    pub nic_pj_per_bit: f64,
}

impl Tier {
    /// Dollars per GB/s per NPU on a dimension of this block: kappa_d.
    pub(crate) fn usd_per_gbps(&self, block: Block) -> f64 {
        match block {
            Block::Switch => self.link_usd_per_gbps + self.switch_usd_per_gbps + self.nic_usd_per_gbps,
            Block::Ring | Block::FullyConnected => self.link_usd_per_gbps,
        }
    }

    /// pJ/bit per NPU on a dimension of this block: e_d.
    fn pj_per_bit(&self, block: Block) -> f64 {
        match block {
            Block::Switch => self.link_pj_per_bit + self.switch_pj_per_bit + self.nic_pj_per_bit,
            Block::Ring | Block::FullyConnected => self.link_pj_per_bit,
        }
    }
}

/// Cost tiers by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Tier name -> prices and energies.
    pub tiers: BTreeMap<String, Tier>,
}

/// Per-NPU linear coefficients of cost and power, one per dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Linear {
    /// Network cost = `npus * sum_d usd_per_gbps[d] * B_d` (dollars).
    pub usd_per_gbps: Vec<f64>,
    /// Network power = `npus * sum_d w_per_gbps[d] * B_d` (watts).
    pub w_per_gbps: Vec<f64>,
    /// Total NPUs.
    pub npus: f64,
}

impl Linear {
    /// Coefficients of `fabric` under `model`. Every dimension's tier must
    /// exist (the study checks this with line numbers before it gets here);
    /// a missing tier is a cost of zero.
    pub fn new(fabric: &Fabric, model: &CostModel) -> Self {
        let zero = Tier::default();
        let tiers: Vec<&Tier> = fabric
            .dims
            .iter()
            .map(|d| model.tiers.get(&d.tier).unwrap_or(&zero))
            .collect();
        Linear {
            usd_per_gbps: fabric
                .dims
                .iter()
                .zip(&tiers)
                .map(|(d, t)| t.usd_per_gbps(d.block))
                .collect(),
            w_per_gbps: fabric
                .dims
                .iter()
                .zip(&tiers)
                .map(|(d, t)| units::watts(1.0, t.pj_per_bit(d.block)))
                .collect(),
            npus: fabric.npus() as f64,
        }
    }

    /// Network cost of dimension d at `gbps`, dollars.
    pub(crate) fn dim_cost(&self, d: usize, gbps: f64) -> f64 {
        self.npus * self.usd_per_gbps[d] * gbps
    }

    /// Network power of dimension d at `gbps`, watts.
    pub(crate) fn dim_power(&self, d: usize, gbps: f64) -> f64 {
        self.npus * self.w_per_gbps[d] * gbps
    }

    /// Network cost of the allocation `bw`, dollars.
    pub fn cost(&self, bw: &[f64]) -> f64 {
        bw.iter().enumerate().map(|(d, b)| self.dim_cost(d, *b)).sum()
    }

    /// Network power of the allocation `bw`, watts.
    pub fn power(&self, bw: &[f64]) -> f64 {
        bw.iter().enumerate().map(|(d, b)| self.dim_power(d, *b)).sum()
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::fabric::tests::libra_4d;
    use approx::assert_relative_eq;

    fn libra_4d_costs() -> CostModel {
        // LIBRA's inputs/cost_model/4d_cost_model.yml.
        let t = |link: f64, switch: f64, nic: f64| Tier {
            link_usd_per_gbps: link,
            switch_usd_per_gbps: switch,
            nic_usd_per_gbps: nic,
            ..Tier::default()
        };
        let mut tiers = BTreeMap::new();
        tiers.insert("chiplet".into(), t(2.00001, 0.0, 0.0));
        tiers.insert("package".into(), t(4.00002, 13.00002, 0.0));
        tiers.insert("node".into(), t(4.00003, 13.00003, 0.0));
        tiers.insert("pod".into(), t(7.80004, 18.00004, 31.60004));
        CostModel { tiers }
    }

    #[test]
    fn libra_cost_by_hand() {
        let lin = Linear::new(&libra_4d(), &libra_4d_costs());
        // Package and node are FC / ring: their switch price does not count.
        // Pod is a switch: 7.80004 + 18.00004 + 31.60004 = 57.40012 $/GB/s.
        assert_relative_eq!(lin.usd_per_gbps[1], 4.00002);
        assert_relative_eq!(lin.usd_per_gbps[3], 57.40012);
        // 4096 NPUs at B = (500, 300, 100, 100):
        // 4096 * (2.00001*500 + 4.00002*300 + 4.00003*100 + 57.40012*100)
        // = 4096 * (1000.005 + 1200.006 + 400.003 + 5740.012) = 4096 * 8340.026
        assert_relative_eq!(
            lin.cost(&[500.0, 300.0, 100.0, 100.0]),
            4096.0 * 8340.026,
            max_relative = 1e-12
        );
    }

    #[test]
    fn libra_block_counting_collapses_to_npus_times_b() {
        // LIBRA counts copies of each block and links per block; do that count
        // here independently and check it equals N * B per dimension.
        let f = libra_4d();
        let n: Vec<f64> = f.dims.iter().map(|d| d.npus as f64).collect();
        let total: f64 = n.iter().product();
        let b = 123.0;
        // ring(4), dim 0: N/4 rings, 2*4 links, B/2 per link
        assert_relative_eq!(total / n[0] * (2.0 * n[0]) * (b / 2.0), total * b);
        // FC(8), dim 1: N/8 groups, 8*7 links, B/7 per link
        assert_relative_eq!(total / n[1] * (n[1] * (n[1] - 1.0)) * (b / (n[1] - 1.0)), total * b);
        // switch(32), dim 3: prod(outer) = 1 switch, prod(inner incl.) = 4096 links, B per link
        assert_relative_eq!(1.0 * (n[0] * n[1] * n[2] * n[3]) * b, total * b);
    }

    #[test]
    fn power_from_energy_per_bit() {
        let mut m = libra_4d_costs();
        m.tiers.get_mut("pod").unwrap().link_pj_per_bit = 5.0;
        m.tiers.get_mut("pod").unwrap().nic_pj_per_bit = 10.0;
        m.tiers.get_mut("chiplet").unwrap().link_pj_per_bit = 1.0;
        let lin = Linear::new(&libra_4d(), &m);
        // 4096 * (200 GB/s * 8e9 * 1 pJ + 50 GB/s * 8e9 * 15 pJ) * 1e-12
        // = 4096 * (1.6 W + 6 W) = 31129.6 W
        assert_relative_eq!(lin.power(&[200.0, 0.0, 0.0, 50.0]), 31_129.6, max_relative = 1e-12);
    }
}
