//! `dimsum bom`: an allocation as the parts that buy it; and the tables of
//! the catalog-constrained optimum.

use crate::bom::{self, Bom};
use crate::error::InputError;
use crate::report::sig3;
use crate::study::Study;
use serde_json::json;
use std::fmt::Write as _;

/// A bill of materials as a table.
pub fn bom_table(study: &Study, b: &Bom) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {} = {} NPUs", study.fabric.shape(), b.npus);
    let _ = writeln!(s, "catalog      {}", b.catalog);
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:<18} {:>9} {:>12} {:>12} {:<34} {:>14} {:>12}",
        "dimension", "port", "ports/NPU", "asked GB/s", "bought GB/s", "switches", "capex $", "power W"
    );
    for d in &b.dims {
        let sw = d.switch.as_ref().map_or("-".to_string(), |p| {
            if p.tiers == 1 {
                format!("{} x {}", p.leaves, p.model)
            } else {
                format!("{} leaf + {} spine {}", p.leaves, p.spines, p.model)
            }
        });
        let _ = writeln!(
            s,
            "{:<12} {:<18} {:>9} {:>12.2} {:>12.2} {:<34} {:>14.0} {:>12.1}",
            d.dimension, d.port, d.ports_per_npu, d.asked_gbps, d.bought_gbps, sw, d.capex_usd, d.power_w
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:<20} {:<18} {:>10} {:>12} {:>10} {:>14} {:>12}",
        "dimension", "component", "role", "quantity", "unit $", "unit W", "capex $", "power W"
    );
    for i in &b.items {
        let _ = writeln!(
            s,
            "{:<12} {:<20} {:<18} {:>10} {:>12.2} {:>10.2} {:>14.0} {:>12.1}",
            i.dimension,
            i.component,
            i.role,
            i.quantity,
            i.unit_price_usd,
            i.unit_power_w,
            i.capex_usd(),
            i.power_w()
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "capex        {:>14.0} $   ({} $ per NPU)",
        b.capex_usd,
        sig3(b.cost_per_npu_usd)
    );
    let _ = writeln!(s, "power        {:>14.1} W", b.power_w);
    s
}

/// The JSON of a bill of materials.
pub fn bom_json(study: &Study, asked: &[f64], b: &Bom) -> serde_json::Value {
    json!({
        "study": study.name,
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "fabric": study.fabric.shape(),
        "catalog": b.catalog,
        "npus": b.npus,
        "bw_gbps": asked,
        "bought_gbps": b.bought_gbps,
        "capex_usd": b.capex_usd,
        "power_w": b.power_w,
        "cost_per_npu_usd": b.cost_per_npu_usd,
        "dims": b.dims,
        "items": b.items.iter().map(|i| json!({
            "component": i.component,
            "kind": i.kind,
            "role": i.role,
            "dimension": i.dimension,
            "quantity": i.quantity,
            "unit_price_usd": i.unit_price_usd,
            "unit_power_w": i.unit_power_w,
        })).collect::<Vec<_>>(),
    })
}

/// `dimsum bom`.
pub fn run_bom(study: &Study, bw: &[f64], json_out: bool) -> anyhow::Result<()> {
    let spec = study.procurement();
    let b = bom::bom(&study.fabric, &spec, bw).map_err(|e| InputError::arg("--bw", e.to_string()))?;
    if json_out {
        println!("{}", bom_json(study, bw, &b));
    } else {
        print!("{}", bom_table(study, &b));
    }
    Ok(())
}
