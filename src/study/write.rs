//! The study written back as TOML (`Study::to_toml`), in the format the
//! other modules read: the top-level keys, `[[fabric.dims]]`, `[optimize]`,
//! `[cost.tiers.<name>]` and `[workload]` with every layer inline. This is how
//! `dimsum import libra` produces a study; the generator sections and the
//! `run` sections (`[run]`, `[[frontier]]`, `[[case]]`, `[[sweep]]`,
//! `[evaluator]`, `[procurement]`, `[reliability]`) are not written.

use super::Study;
use crate::model::fabric::Rails;
use crate::model::workload::PhaseKind;
use std::fmt::Write as _;

impl Study {
    /// The study as TOML, in the format `parse` reads, with every layer
    /// inline. `header` lines are written first as comments.
    pub fn to_toml(&self, header: &[String]) -> String {
        let mut s = String::new();
        for h in header {
            let _ = writeln!(s, "# {h}");
        }
        let _ = writeln!(s, "name = {}", quote(&self.name));
        if !self.description.is_empty() {
            let _ = writeln!(s, "description = {}", quote(&self.description));
        }
        let _ = writeln!(s, "time_model = {}", quote(self.collective.time_model.name()));
        let _ = writeln!(s, "group_bandwidth = {}", quote(self.collective.group_bandwidth.name()));
        match self.collective.reduction_gbps {
            Some(m) => {
                let _ = writeln!(s, "reduction_memory = {}", fmt_f64(m));
            }
            None => {
                let _ = writeln!(s, "reduction_memory = false");
            }
        }
        let _ = writeln!(s, "training_loop = {}", quote(self.training_loop.name()));
        if let Some(bw) = &self.bw {
            let _ = writeln!(s, "bw = [{}]", join(bw.iter().map(|b| fmt_f64(*b))));
        }
        for (d, alg) in self.fabric.dims.iter().zip(&self.collective.algorithms) {
            let _ = writeln!(s, "\n[[fabric.dims]]");
            let _ = writeln!(s, "name = {}", quote(&d.name));
            let _ = writeln!(s, "block = {}", quote(d.block_name()));
            if let Some(t) = &d.fat_tree {
                if let Some(l) = t.levels {
                    let _ = writeln!(s, "levels = {l}");
                }
                if !t.oversubscription.is_empty() {
                    let _ = writeln!(
                        s,
                        "oversubscription = [{}]",
                        join(t.oversubscription.iter().map(|v| fmt_f64(*v)))
                    );
                }
                if t.rails == Rails::Optimized {
                    let _ = writeln!(s, "rails = \"optimized\"");
                }
            }
            let _ = writeln!(s, "npus = {}", d.npus);
            let _ = writeln!(s, "latency_ns = {}", fmt_f64(d.latency_ns));
            let _ = writeln!(s, "tier = {}", quote(&d.tier));
            let _ = writeln!(s, "algorithm = {}", quote(alg.name()));
            if let Some(m) = d.min_gbps {
                let _ = writeln!(s, "min_gbps = {}", fmt_f64(m));
            }
            if let Some(m) = d.max_gbps {
                let _ = writeln!(s, "max_gbps = {}", fmt_f64(m));
            }
            if let Some(o) = &d.options_gbps {
                let _ = writeln!(s, "options_gbps = [{}]", join(o.iter().map(|v| fmt_f64(*v))));
            }
        }
        let o = &self.optimize;
        if o.objective.is_some() || o.target_ms.is_some() || !o.constraints.is_empty() {
            let _ = writeln!(s, "\n[optimize]");
            if let Some(obj) = &o.objective {
                let _ = writeln!(s, "objective = {}", quote(obj));
            }
            if let Some(t) = o.target_ms {
                let _ = writeln!(s, "target_ms = {}", fmt_f64(t));
            }
            let _ = writeln!(
                s,
                "constraints = [{}]",
                join(o.constraints.iter().map(|c| quote(&c.text)))
            );
        }
        for (name, t) in &self.cost.tiers {
            let key = if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                name.clone()
            } else {
                quote(name)
            };
            let _ = writeln!(s, "\n[cost.tiers.{key}]");
            let _ = writeln!(s, "link_usd_per_gbps = {}", fmt_f64(t.link_usd_per_gbps));
            let _ = writeln!(s, "switch_usd_per_gbps = {}", fmt_f64(t.switch_usd_per_gbps));
            let _ = writeln!(s, "nic_usd_per_gbps = {}", fmt_f64(t.nic_usd_per_gbps));
            let _ = writeln!(s, "link_pj_per_bit = {}", fmt_f64(t.link_pj_per_bit));
            let _ = writeln!(s, "switch_pj_per_bit = {}", fmt_f64(t.switch_pj_per_bit));
            let _ = writeln!(s, "nic_pj_per_bit = {}", fmt_f64(t.nic_pj_per_bit));
        }
        let _ = writeln!(s, "\n[workload]");
        for l in &self.workload.layers {
            let _ = writeln!(s, "\n[[workload.layers]]");
            let _ = writeln!(s, "name = {}", quote(&l.name));
            for kind in PhaseKind::ALL {
                let p = l.phase(kind);
                let mut fields = vec![format!("compute_ns = {}", fmt_f64(p.compute_ns))];
                if let Some(c) = &p.comm {
                    fields.push(format!("collective = {}", quote(c.kind.name())));
                    fields.push(format!("bytes = {}", fmt_f64(c.bytes)));
                    fields.push(format!(
                        "group = [{}]",
                        join(c.group.to_libra().iter().map(|g| g.to_string()))
                    ));
                }
                let _ = writeln!(s, "{} = {{ {} }}", kind.name(), fields.join(", "));
            }
        }
        s
    }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn join(it: impl Iterator<Item = String>) -> String {
    it.collect::<Vec<_>>().join(", ")
}

/// Shortest text that reads back as the same f64 (Rust's `{}` does this).
fn fmt_f64(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}
