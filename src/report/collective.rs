//! The report of one replayed schedule (`dimsum collective`), rendered from
//! a `schedule::replay::Replay`: [`json`] (one object: time, bounds,
//! validity, per-dimension bytes and latency, every link's busy time and
//! utilization, the critical path) and [`table`] (the same for a reader).
//! Times are reported in us.

use super::sig3;
use crate::model::topology::Topology;
use crate::schedule::bounds::Bounds;
use crate::schedule::product::RoundTime;
use crate::schedule::replay::Replay;
use std::fmt::Write as _;

use crate::model::units::ns_to_us as us;

/// The JSON report: one object with the replay's figures, every link and
/// the critical path.
pub fn json(o: &Replay) -> serde_json::Value {
    let util = o.sim.utilization();
    let names = o.topo.dim_names();
    let links: Vec<serde_json::Value> = o
        .topo
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            serde_json::json!({
                "src": l.src, "dst": l.dst,
                "dim": l.dim.and_then(|d| names.get(usize::from(d)).cloned()),
                "gbps": l.gbps, "latency_us": us(l.latency_ns),
                "busy_us": us(o.sim.link_busy_ns[i]), "bytes": o.sim.link_bytes[i],
                "utilization": util[i],
            })
        })
        .collect();
    let path: Vec<serde_json::Value> = o
        .sim
        .critical_path
        .iter()
        .map(|p| {
            serde_json::json!({
                "transfer": p.transfer, "src": p.src, "dst": p.dst,
                "issue_us": us(p.issue_ns), "arrive_us": us(p.arrive_ns), "waited_for": p.waited_for,
            })
        })
        .collect();
    let dims = if names.is_empty() {
        vec!["all".to_string()]
    } else {
        names
    };
    serde_json::json!({
        "format": "dimsum-collective/1",
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "topology": o.topo.name,
        "npus": o.topo.npus,
        "collective": o.schedule.collective.name(),
        "algorithm": o.schedule.algorithm,
        "size_bytes": o.size,
        "chunks_per_npu": o.schedule.chunks_per_npu,
        "link_model": o.model,
        "time_us": us(o.sim.time_ns),
        "lower_bound_us": us(o.bounds.bound_ns),
        "ratio": o.ratio(),
        "bounds": {
            "injection_us": us(o.bounds.injection_ns),
            "cut_us": us(o.bounds.cut_ns),
            "cut": o.bounds.cut,
            "cut_set": o.bounds.cut_set,
            "latency_us": us(o.bounds.latency_ns),
        },
        "valid": o.sim.valid,
        "data_checked": o.sim.data_checked,
        "errors": o.sim.errors,
        "error_count": o.sim.error_count,
        "transfers": o.sim.transfers,
        "hops": o.sim.hops,
        "dims": dims,
        "bytes_per_dim": o.sim.bytes_per_dim,
        "alpha_us_per_dim": o.sim.alpha_ns_per_dim.iter().map(|a| us(*a)).collect::<Vec<f64>>(),
        "critical_serialization_us_per_dim": o.sim.beta_ns_per_dim.iter().map(|a| us(*a)).collect::<Vec<f64>>(),
        "mean_bytes_per_dim": o.sim.mean_bytes_per_dim,
        "max_utilization": util.iter().copied().fold(0.0, f64::max),
        "mean_utilization": if util.is_empty() { 0.0 } else { util.iter().sum::<f64>() / util.len() as f64 },
        "links": links,
        "critical_path": path,
    })
}

/// The table's lower-bound line: the bound, its parts and `ratio`.
fn bound_line(b: &Bounds, ratio: f64) -> String {
    format!(
        "lower bound   {}  (injection {}, cut {} [{}], latency {}); time / bound = {:.3}\n",
        fmt_us(b.bound_ns),
        fmt_us(b.injection_ns),
        fmt_us(b.cut_ns),
        if b.cut.is_empty() { "-" } else { &b.cut },
        fmt_us(b.latency_ns),
        ratio
    )
}

fn fmt_us(ns: f64) -> String {
    format!("{} us", sig3(us(ns)))
}

/// The human-readable report.
pub fn table(o: &Replay) -> String {
    let mut s = String::new();
    let util = o.sim.utilization();
    let _ = writeln!(
        s,
        "{} of {} B on {} ({} NPUs, {} switches, {} links)",
        o.schedule.collective,
        sig3(o.size),
        o.topo.name,
        o.topo.npus,
        o.topo.switches,
        o.topo.links.len()
    );
    let _ = writeln!(
        s,
        "algorithm {}, {} chunks per NPU, {} links\n",
        o.schedule.algorithm, o.schedule.chunks_per_npu, o.model
    );
    let _ = writeln!(s, "time          {}", fmt_us(o.sim.time_ns));
    s.push_str(&bound_line(&o.bounds, o.ratio()));
    if o.sim.valid && !o.sim.data_checked {
        let _ = writeln!(
            s,
            "valid         every transfer runs ({} transfers, {} link hops); the data is not known, so not checked",
            o.sim.transfers, o.sim.hops
        );
    } else if o.sim.valid {
        let _ = writeln!(
            s,
            "valid         yes ({} transfers, {} link hops)",
            o.sim.transfers, o.sim.hops
        );
    } else {
        let _ = writeln!(s, "valid         NO: {} problems", o.sim.error_count);
        for e in &o.sim.errors {
            let _ = writeln!(s, "  - {e}");
        }
    }
    let names = o.topo.dim_names();
    let names = if names.is_empty() {
        vec!["all".to_string()]
    } else {
        names
    };
    let _ = writeln!(
        s,
        "\nper dimension: bytes one NPU sends (max / mean over NPUs), latency on the critical path"
    );
    for (d, n) in names.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {:<12} {:>12} / {:>12} B   {}",
            n,
            sig3(o.sim.bytes_per_dim.get(d).copied().unwrap_or(0.0)),
            sig3(o.sim.mean_bytes_per_dim.get(d).copied().unwrap_or(0.0)),
            fmt_us(o.sim.alpha_ns_per_dim.get(d).copied().unwrap_or(0.0))
        );
    }
    let max = util.iter().copied().fold(0.0, f64::max);
    let mean = if util.is_empty() {
        0.0
    } else {
        util.iter().sum::<f64>() / util.len() as f64
    };
    let idle = util.iter().filter(|u| **u == 0.0).count();
    let _ = writeln!(
        s,
        "\nlink utilization: max {:.1}%, mean {:.1}%, {} of {} links idle",
        100.0 * max,
        100.0 * mean,
        idle,
        util.len()
    );
    let cp = &o.sim.critical_path;
    let by_link = cp.iter().filter(|p| p.waited_for == "link").count();
    let _ = writeln!(
        s,
        "critical path: {} transfers ({} waited for a busy link, {} for data)",
        cp.len(),
        by_link,
        cp.len().saturating_sub(by_link + 1)
    );
    s
}

/// The JSON report of a forest timed in rounds (`schedule::product::
/// round_time`: a product network too large to replay transfer by
/// transfer).
pub fn rounds_json(topo: &Topology, size: f64, r: &RoundTime, b: &Bounds) -> serde_json::Value {
    serde_json::json!({
        "format": "dimsum-collective/1",
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "topology": topo.name,
        "npus": topo.npus,
        "collective": r.collective,
        "algorithm": format!("forest(k={})", r.pieces),
        "size_bytes": size,
        "timing": "rounds",
        "pieces_per_tree": r.pieces,
        "trees_per_root": r.trees_per_root,
        "depth": r.depth,
        "rounds": r.rounds,
        "time_us": us(r.time_ns),
        "lower_bound_us": us(b.bound_ns),
        "ratio": r.time_ns / b.bound_ns,
        "bounds": {
            "injection_us": us(b.injection_ns),
            "cut_us": us(b.cut_ns),
            "cut": b.cut,
            "cut_set": b.cut_set,
            "latency_us": us(b.latency_ns),
        },
    })
}

/// The human-readable report of a forest timed in rounds.
pub fn rounds_table(topo: &Topology, size: f64, r: &RoundTime, b: &Bounds) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} of {} B on {} ({} NPUs, {} switches, {} links)",
        r.collective,
        sig3(size),
        topo.name,
        topo.npus,
        topo.switches,
        topo.links.len()
    );
    let _ = writeln!(
        s,
        "algorithm forest(k={}), {} trees per root, {} links deep, {} rounds\n\
         timed in rounds by translation symmetry (one message per link, level and round, each sent \
         once its link is free and its data has arrived), not replayed transfer by transfer \
         (--replay builds and replays the schedule where it fits)\n",
        r.pieces, r.trees_per_root, r.depth, r.rounds
    );
    let _ = writeln!(s, "time          {}", fmt_us(r.time_ns));
    s.push_str(&bound_line(b, r.time_ns / b.bound_ns));
    s
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::topology::from_spec;
    use crate::model::workload::CollectiveKind;
    use crate::schedule::algorithm::{self, Algorithm, Options};
    use crate::schedule::simulate::LinkModel;

    #[test]
    fn json_and_table_of_a_ring_all_gather() {
        let topo = from_spec("ring:4", &[50.0], &[500.0]).unwrap();
        let s = algorithm::build(&topo, CollectiveKind::AllGather, Algorithm::Ring, &Options::default()).unwrap();
        let r = Replay::new(topo, s, 4e6, LinkModel::AlphaBeta, false).unwrap();
        let j = json(&r);
        assert_eq!(j["topology"], "ring:4");
        assert_eq!(j["collective"], "all-gather");
        assert_eq!(j["link_model"], "alpha-beta");
        assert_eq!(j["time_us"], r.sim.time_ns / 1e3);
        assert_eq!(j["ratio"], r.ratio());
        assert_eq!(j["links"].as_array().map(Vec::len), Some(r.topo.links.len()));
        let t = table(&r);
        assert!(
            t.starts_with("all-gather of 4.00e6 B on ring:4 (4 NPUs, 0 switches, 8 links)\n"),
            "{t}"
        );
        assert!(t.contains("\nvalid         yes ("), "{t}");
    }
}
