//! Charts of a replayed schedule: per-link utilization as a sender x
//! receiver heatmap, and the schedule as a timeline of transfers on links.
//! Each is written as SVG and PNG, atomically.

use super::{DrawResult, ReportError, render, sig3};
use crate::model::topology::Topology;
use crate::model::units::ns_to_us;
use crate::schedule::Schedule;
use crate::schedule::simulate::SimResult;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Most rows and columns a heatmap draws; larger topologies are binned
/// (each cell the busiest link between the two bins).
const MAX_CELLS: usize = 128;
/// Most links a timeline shows (the busiest ones).
const MAX_ROWS: usize = 48;
/// Most bars a timeline draws.
const MAX_BARS: usize = 20_000;

fn heat(u: f64) -> RGBColor {
    // White -> orange -> dark red.
    let u = u.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64, t: f64| (a + (b - a) * t).round() as u8;
    if u < 0.5 {
        let t = u / 0.5;
        RGBColor(255, lerp(255.0, 160.0, t), lerp(255.0, 40.0, t))
    } else {
        let t = (u - 0.5) / 0.5;
        RGBColor(lerp(255.0, 140.0, t), lerp(160.0, 0.0, t), lerp(40.0, 0.0, t))
    }
}

struct Heatmap {
    title: String,
    cells: usize,
    bin: usize,
    grid: Vec<f64>,
}

/// Heatmap of link utilization (busy time / completion time), rows the
/// sending node, columns the receiving node: `utilization.svg` and `.png`.
pub fn utilization_chart(dir: &Path, topo: &Topology, sim: &SimResult) -> Result<(), ReportError> {
    let nodes = topo.nodes() as usize;
    let bin = nodes.div_ceil(MAX_CELLS).max(1);
    let cells = nodes.div_ceil(bin);
    let mut grid = vec![f64::NAN; cells * cells];
    let util = sim.utilization();
    for (i, l) in topo.links.iter().enumerate() {
        let c = (l.src as usize / bin) * cells + l.dst as usize / bin;
        grid[c] = if grid[c].is_nan() {
            util[i]
        } else {
            grid[c].max(util[i])
        };
    }
    let h = Heatmap {
        title: format!(
            "{}: link utilization over {} us{}",
            topo.name,
            sig3(ns_to_us(sim.time_ns)),
            if bin > 1 {
                format!(", {bin} nodes per cell")
            } else {
                String::new()
            }
        ),
        cells,
        bin,
        grid,
    };
    render(dir, "utilization", (900, 860), &|a| heatmap(a, &h), &|a| heatmap(a, &h)).map(|_| ())
}

fn heatmap<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, h: &Heatmap) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (cells, bin) = (h.cells, h.bin);
    root.fill(&WHITE)?;
    let (main, legend) = root.split_vertically(800);
    let mut chart = ChartBuilder::on(&main)
        .caption(&h.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(0f64..cells as f64, 0f64..cells as f64)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("receiving node")
        .y_desc("sending node")
        .x_label_formatter(&|v| format!("{}", (*v as usize) * bin))
        .y_label_formatter(&|v| format!("{}", (*v as usize) * bin))
        .draw()?;
    chart.draw_series(h.grid.iter().enumerate().map(|(c, u)| {
        let (r, col) = ((c / cells) as f64, (c % cells) as f64);
        let color = if u.is_nan() { RGBColor(238, 238, 238) } else { heat(*u) };
        Rectangle::new([(col, r), (col + 1.0, r + 1.0)], color.filled())
    }))?;
    // Legend: gray = no link, then 0..100 %.
    legend.draw(&Rectangle::new([(30, 20), (52, 38)], RGBColor(238, 238, 238).filled()))?;
    legend.draw(&Text::new("no link", (60, 22), ("sans-serif", 14)))?;
    for i in 0..200 {
        let x = 190 + i * 3;
        legend.draw(&Rectangle::new(
            [(x, 20), (x + 3, 38)],
            heat(f64::from(i) / 199.0).filled(),
        ))?;
    }
    legend.draw(&Text::new("idle", (155, 22), ("sans-serif", 14)))?;
    legend.draw(&Text::new("100% busy", (800, 22), ("sans-serif", 14)))?;
    Ok(())
}

struct Timeline {
    title: String,
    labels: Vec<String>,
    /// (row, start us, end us, sender)
    bars: Vec<(f64, f64, f64, u32)>,
    t_end: f64,
}

/// The schedule as a timeline: one row per link (the busiest), one bar per
/// transfer while it occupies the link, coloured by the sending NPU:
/// `timeline.svg` and `.png`.
pub fn timeline_chart(dir: &Path, topo: &Topology, s: &Schedule, sim: &SimResult) -> Result<(), ReportError> {
    let mut order: Vec<usize> = (0..topo.links.len()).filter(|&l| sim.link_busy_ns[l] > 0.0).collect();
    order.sort_by(|&a, &b| sim.link_busy_ns[b].total_cmp(&sim.link_busy_ns[a]).then(a.cmp(&b)));
    order.truncate(MAX_ROWS);
    order.sort_unstable();
    let row: std::collections::HashMap<u32, usize> = order.iter().enumerate().map(|(i, &l)| (l as u32, i)).collect();
    let bars = sim
        .timeline
        .iter()
        .filter(|h| row.contains_key(&h.link))
        .take(MAX_BARS)
        .map(|h| {
            (
                row[&h.link] as f64,
                ns_to_us(h.start_ns),
                ns_to_us(h.end_ns.max(h.start_ns)),
                s.transfers[h.transfer as usize].src,
            )
        })
        .collect();
    let node = |n: u32| {
        if n < topo.npus {
            n.to_string()
        } else {
            format!("s{}", n - topo.npus)
        }
    };
    let labels = order
        .iter()
        .map(|&l| format!("{}->{}", node(topo.links[l].src), node(topo.links[l].dst)))
        .collect();
    let t_end = ns_to_us(sim.time_ns).max(1e-9);
    let title = format!(
        "{} {} on {}: {} us{}",
        s.algorithm,
        s.collective,
        topo.name,
        sig3(t_end),
        if order.len() < topo.links.len() {
            format!(" ({} busiest links of {})", order.len(), topo.links.len())
        } else {
            String::new()
        }
    );
    let height = ((120 + 18 * order.len().max(1)) as u32).max(300);
    let t = Timeline {
        title,
        labels,
        bars,
        t_end,
    };
    render(dir, "timeline", (1100, height), &|a| gantt(a, &t), &|a| gantt(a, &t)).map(|_| ())
}

fn gantt<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, t: &Timeline) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let rows = t.labels.len().max(1);
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(&t.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..t.t_end * 1.02, -0.5f64..rows as f64 - 0.5)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("time (us)")
        .y_desc("link")
        .y_labels(rows)
        .y_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < t.labels.len() {
                t.labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .draw()?;
    chart.draw_series(t.bars.iter().map(|&(r, a, b, src)| {
        let color = Palette99::pick(src as usize).to_rgba();
        Rectangle::new([(a, r - 0.4), (b, r + 0.4)], color.filled())
    }))?;
    // A thin white edge so back-to-back transfers of one sender stay apart.
    chart.draw_series(
        t.bars
            .iter()
            .map(|&(r, a, b, _)| Rectangle::new([(a, r - 0.4), (b, r + 0.4)], WHITE.stroke_width(1))),
    )?;
    Ok(())
}
