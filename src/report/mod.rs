//! Rendering results (the files themselves are written through `io`: atomic,
//! stamped): CSV tables and the plotters charts (SVG and PNG) of a frontier,
//! and, in submodules, the study report, the terminal tables and the JSON
//! documents.
//!
//! Charts draw on linear axes in transformed coordinates (log10 where a range
//! spans more than a decade) and label ticks with the real values, so one
//! drawing routine serves every combination of linear and log axes.
//!
//! Reports are typed: [`doc::Doc`] holds headings, paragraphs, lists,
//! tables and charts, and renders as Markdown or as a self-contained page.
//!
//! ```
//! use dimsum::report::doc::{Block, Doc};
//! use std::collections::BTreeMap;
//!
//! let mut d = Doc::default();
//! d.heading(2, "Frontier");
//! d.push(Block::Table(vec!["budget".into(), "ms".into()], vec![vec!["1".into(), "2.5".into()]]));
//! assert_eq!(d.markdown(), "## Frontier\n\n| budget | ms |\n|---|---|\n| 1 | 2.5 |\n");
//! let page = dimsum::report::html::render(&d, "t", &BTreeMap::new());
//! assert!(page.contains("<h2>Frontier</h2>") && page.contains("<td>2.5</td>"));
//! ```

pub mod bars;
pub mod collective;
pub mod compare;
pub mod doc;
pub mod failures;
pub mod html;
pub mod json;
pub mod schedule;
pub mod shapes;
pub mod study;
pub mod text;
pub mod validation;

use crate::io::{Stamp, WriteError, write_atomic, write_via_temp};
use crate::optimize::frontier::{Frontier, Marker};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Why a result could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written.
    #[error(transparent)]
    Io(#[from] WriteError),
    /// A JSON document could not be made.
    #[error("cannot write {path} as JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// A chart could not be drawn.
    #[error("cannot draw {path}: {message}")]
    Chart {
        /// The file.
        path: PathBuf,
        /// The cause.
        message: String,
    },
}

/// The frontier as CSV: one row per point.
pub(crate) fn frontier_csv(f: &Frontier, dim_names: &[String], stamp: &Stamp) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = [
        "dimsum_version",
        "study_hash",
        "axis",
        "budget",
        "unit",
        "spent",
        "iteration_time_ms",
        "lower_bound_ms",
        "gap",
        "network_cost_usd",
        "network_power_w",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(dim_names.iter().map(|d| format!("bw_{d}_gbps")));
    header.extend(["equal_split_ms", "knee", "binding"].map(String::from));
    let _ = w.write_record(&header);
    for (i, p) in f.points.iter().enumerate() {
        let mut row = vec![
            stamp.dimsum_version.clone(),
            stamp.study_hash.clone(),
            f.axis.name().to_string(),
            p.budget.to_string(),
            f.axis.unit().to_string(),
            p.spent.to_string(),
            p.iteration_time_ms.to_string(),
            p.lower_bound_ms.to_string(),
            format!("{:.3e}", p.gap),
            p.network_cost_usd.to_string(),
            p.network_power_w.to_string(),
        ];
        row.extend(p.bw_gbps.iter().map(|b| b.to_string()));
        row.push(if p.equal_split_ms.is_finite() {
            p.equal_split_ms.to_string()
        } else {
            String::new()
        });
        row.push((i == f.knee).to_string());
        row.push(p.binding.join("; "));
        let _ = w.write_record(&row);
    }
    w.into_inner().unwrap_or_default()
}

/// One axis: log10 when the range spans more than a decade.
#[derive(Debug, Clone, Copy)]
struct Scale {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Scale {
    fn new(values: impl Iterator<Item = f64>, force_log: bool) -> Scale {
        let (mut lo, mut hi) = values
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        if !lo.is_finite() {
            (lo, hi) = (1.0, 2.0);
        }
        let log = force_log || hi / lo > 10.0;
        if log {
            Scale {
                log,
                lo: lo.log10() - 0.03 * (hi / lo).log10().max(0.3),
                hi: hi.log10() + 0.03 * (hi / lo).log10().max(0.3),
            }
        } else {
            let pad = 0.05 * (hi - lo).max(hi * 0.02);
            Scale {
                log,
                lo: (lo - pad).max(0.0),
                hi: hi + pad,
            }
        }
    }

    fn to(&self, v: f64) -> f64 {
        if self.log { v.max(1e-300).log10() } else { v }
    }

    fn label(&self, t: f64) -> String {
        let v = if self.log { 10f64.powf(t) } else { t };
        tick(v)
    }

    /// The axis with round ticks ([`Scale::keys`]) for plotters.
    fn range(&self) -> Ticks {
        Ticks {
            inner: (self.lo..self.hi).into(),
            keys: self.keys(),
        }
    }

    /// Round ticks in the axis' coordinates: on a log axis 1, 2 and 5 times
    /// the powers of ten in range (only the powers when that makes more
    /// than ten; 1, 1.5, 2, 3, ... 9 times them when fewer than four; round
    /// linear steps when the range is too narrow even for those); on a
    /// linear one multiples of 1, 2, 2.5 or 5 times a power of ten, about six.
    fn keys(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (10f64.powf(self.lo), 10f64.powf(self.hi));
            let pick = |ms: &[f64]| -> Vec<f64> {
                let mut out = Vec::new();
                for k in (self.lo.floor() as i32)..=(self.hi.ceil() as i32) {
                    for m in ms {
                        let v = m * 10f64.powi(k);
                        if v >= a * (1.0 - 1e-12) && v <= b * (1.0 + 1e-12) {
                            out.push(v.log10());
                        }
                    }
                }
                out
            };
            let keys = pick(&[1.0, 2.0, 5.0]);
            if keys.len() > 10 {
                return pick(&[1.0]);
            }
            if keys.len() >= 4 {
                return keys;
            }
            let keys = pick(&[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
            if keys.len() >= 4 {
                return keys;
            }
            // Less than a factor of about two: round linear steps.
            linear_ticks(a, b).into_iter().map(f64::log10).collect()
        } else {
            linear_ticks(self.lo, self.hi)
        }
    }
}

/// About six round values in `lo..=hi`: multiples of 1, 2, 2.5 or 5 times
/// a power of ten.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let raw = (hi - lo).max(1e-300) / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    // Ends within rounding of a tick keep it (a log axis' ends come back
    // through 10^log10).
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A linear f64 axis whose ticks (bold and light) are given: the round
/// values of [`Scale::keys`]. Labels come from the charts' formatters.
struct Ticks {
    inner: RangedCoordf64,
    keys: Vec<f64>,
}

impl Ranged for Ticks {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.keys.clone()
    }
}

/// A tick label: [`sig3`] without trailing zeros (ticks are round: 0.2,
/// 10, 2500).
fn tick(v: f64) -> String {
    let s = sig3(v);
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A number with three significant digits, without exponent for everyday sizes.
pub(crate) fn sig3(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.2e}")
    } else {
        let digits = (2 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.digits$}")
    }
}

/// A bandwidth in both units a buyer reads: `50 GB/s = 400 Gb/s`.
pub(crate) fn gbps_both(gbps: f64) -> String {
    format!("{} GB/s = {} Gb/s", sig3(gbps), sig3(gbps * 8.0))
}

/// A count with thousands separators: `18,432`.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// GB/s values at three significant digits, comma-separated.
pub(crate) fn sig3_list(v: &[f64]) -> String {
    v.iter().map(|b| sig3(*b)).collect::<Vec<_>>().join(", ")
}

pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// A white chart with the stamp in a footer line; returns the area above it.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    stamp: &Stamp,
) -> Result<DrawingArea<DB, Shift>, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (body, footer) = root.split_vertically(root.dim_in_pixel().1 - 24);
    footer.draw(&Text::new(
        stamp.line(),
        (10, 4),
        ("sans-serif", 13).into_font().color(&RGBColor(110, 110, 110)),
    ))?;
    Ok(body)
}

fn draw_frontier<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    f: &Frontier,
    markers: &[Marker],
    stamp: &Stamp,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let body = frame(root, stamp)?;
    let (xs, ys, top) = frontier_scales(f, markers);
    let mut chart = ChartBuilder::on(&body)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(xs.range(), ys.range())?;
    frontier_mesh(&mut chart, f, &xs, &ys)?;
    let blue = RGBColor(31, 119, 180);
    let grey = RGBColor(127, 127, 127);
    let pts: Vec<(f64, f64)> = f
        .points
        .iter()
        .map(|p| (xs.to(p.budget), ys.to(p.iteration_time_ms)))
        .collect();
    let eq: Vec<(f64, f64)> = f
        .points
        .iter()
        .filter(|p| p.equal_split_ms.is_finite() && p.equal_split_ms <= 1.5 * top)
        .map(|p| (xs.to(p.budget), ys.to(p.equal_split_ms)))
        .collect();
    let mut lines = vec![pts.clone(), eq.clone()];
    let entries = 1
        + usize::from(!eq.is_empty())
        + usize::from(!markers.is_empty())
        + usize::from(f.points.get(f.knee).is_some());
    if !eq.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(eq, 8, 5, grey.stroke_width(2)))?
            .label("equal split, same budget")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(2)));
    }
    chart
        .draw_series(LineSeries::new(pts.clone(), blue.stroke_width(3)))?
        .label("optimal allocation (dimsum)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(3)));
    if pts.len() <= 120 {
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, blue.filled())))?;
    }
    let orange = RGBColor(230, 110, 0);
    if !markers.is_empty() {
        let at: Vec<(f64, f64)> = markers.iter().map(|m| (xs.to(m.budget), ys.to(m.time_ms))).collect();
        lines.extend(at.iter().map(|p| vec![*p]));
        chart
            .draw_series(at.into_iter().map(|p| TriangleMarker::new(p, 8, orange.filled())))?
            .label("fixed designs (labelled)")
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, orange.filled()));
    }
    label_markers(&body, &chart, markers, &xs, &ys)?;
    if let Some(k) = f.points.get(f.knee) {
        lines.push(vec![draw_knee(&body, &mut chart, k, f, &xs, &ys)?]);
    }
    chart
        .configure_series_labels()
        .position(clear_corner(&lines, &xs, &ys, entries))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()?;
    root.present()?;
    Ok(())
}

/// The frontier chart's axes: x over the budgets of the frontier and the
/// markers, y over their times and the equal split's (clipped at 1.5 times
/// the slowest of them, `top`, the third value).
fn frontier_scales(f: &Frontier, markers: &[Marker]) -> (Scale, Scale, f64) {
    let xs = Scale::new(
        f.points
            .iter()
            .map(|p| p.budget)
            .chain(markers.iter().map(|m| m.budget)),
        f.log_x,
    );
    // The y range follows the frontier and the markers; the equal split,
    // far slower at small budgets, may leave the chart at the top (clipped)
    // rather than squash the frontier.
    let top = f
        .points
        .iter()
        .map(|p| p.iteration_time_ms)
        .chain(markers.iter().map(|m| m.time_ms))
        .fold(0.0, f64::max);
    let ys = Scale::new(
        f.points
            .iter()
            .flat_map(|p| {
                [
                    p.iteration_time_ms,
                    if p.equal_split_ms.is_finite() {
                        p.equal_split_ms.min(1.5 * top)
                    } else {
                        f64::NAN
                    },
                ]
            })
            .chain(markers.iter().map(|m| m.time_ms)),
        false,
    );
    (xs, ys, top)
}

/// The chart of a frontier or an allocation, in the transformed
/// coordinates of its two [`Scale`]s.
type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<Ticks, Ticks>>;

/// The frontier chart's grid and axis titles (the budget's unit, and which
/// axes are log scale), ticks labelled with the real values.
fn frontier_mesh<DB: DrawingBackend>(chart: &mut Plot<'_, DB>, f: &Frontier, xs: &Scale, ys: &Scale) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let xlabel = match f.axis.name() {
        "cost" => "network cost ($M)".to_string(),
        "power" => "network power (kW)".to_string(),
        _ => "total bandwidth (GB/s per NPU)".to_string(),
    };
    chart
        .configure_mesh()
        .x_desc(format!("{xlabel}{}", if xs.log { ", log scale" } else { "" }))
        .y_desc(format!(
            "iteration time (ms){}",
            if ys.log { ", log scale" } else { "" }
        ))
        .x_label_formatter(&|t| xs.label(*t))
        .y_label_formatter(&|t| ys.label(*t))
        .x_labels(8)
        .y_labels(8)
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    Ok(())
}

/// Each fixed design's label, `name (t ms)`, with a leader line to its
/// marker.
fn label_markers<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
    chart: &Plot<'_, DB>,
    markers: &[Marker],
    xs: &Scale,
    ys: &Scale,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let orange = RGBColor(230, 110, 0);
    let (w, _) = body.dim_in_pixel();
    for (i, m) in markers.iter().enumerate() {
        let at = (xs.to(m.budget), ys.to(m.time_ms));
        // Labels stack upwards from the marker, on its left when it sits in
        // the right part of the chart, so they neither overlap nor clip.
        let (px, py) = chart.backend_coord(&at);
        let text = format!("{} ({} ms)", m.name, sig3(m.time_ms));
        let style = ("sans-serif", 15).into_font().color(&orange);
        let width = 8 * text.len() as i32;
        let x = if px > w as i32 * 6 / 10 {
            px - width - 12
        } else {
            px + 12
        };
        let y = py - 24 - 20 * i as i32;
        body.draw(&PathElement::new(
            vec![(px, py - 8), (x + width / 2, y + 16)],
            orange.stroke_width(1),
        ))?;
        body.draw(&Text::new(text, (x, y), style))?;
    }
    Ok(())
}

/// The knee `k` of frontier `f`: its circle (with its legend entry) and its
/// label; returns where it is, for the legend to stay clear of it.
fn draw_knee<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
    chart: &mut Plot<'_, DB>,
    k: &crate::optimize::frontier::Point,
    f: &Frontier,
    xs: &Scale,
    ys: &Scale,
) -> Result<(f64, f64), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let red = RGBColor(214, 39, 40);
    let at = (xs.to(k.budget), ys.to(k.iteration_time_ms));
    chart
        .draw_series(std::iter::once(Circle::new(at, 8, red.stroke_width(3))))?
        .label("knee (labelled)")
        .legend(move |(x, y)| Circle::new((x + 10, y), 6, red.stroke_width(3)));
    // The knee's label sits above and to the right of it, off the
    // falling curve.
    let (px, py) = chart.backend_coord(&at);
    body.draw(&Text::new(
        format!(
            "knee: {} {}, {} ms",
            sig3(k.budget),
            f.axis.unit(),
            sig3(k.iteration_time_ms)
        ),
        (px + 12, py - 34),
        ("sans-serif", 16).into_font().color(&red),
    ))?;
    Ok(at)
}

fn draw_allocation<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    f: &Frontier,
    dim_names: &[String],
    stamp: &Stamp,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let body = frame(root, stamp)?;
    let xs = Scale::new(f.points.iter().map(|p| p.budget), f.log_x);
    let top = f
        .points
        .iter()
        .map(|p| p.bw_gbps.iter().sum::<f64>())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let mut chart = ChartBuilder::on(&body)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(xs.range(), 0.0..top * 1.08)?;
    let xlabel = match f.axis.name() {
        "cost" => "network cost budget ($M)",
        "power" => "network power budget (kW)",
        _ => "total bandwidth budget (GB/s per NPU)",
    };
    chart
        .configure_mesh()
        .x_desc(format!("{xlabel}{}", if xs.log { ", log scale" } else { "" }))
        .y_desc("bandwidth per NPU (GB/s), stacked by dimension")
        .x_label_formatter(&|t| xs.label(*t))
        .y_label_formatter(&|v| sig3(*v))
        .x_labels(8)
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    let palette = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    // Top of the stack first, so each lower band paints over the one above.
    for d in (0..dim_names.len()).rev() {
        let color = palette[d % palette.len()];
        let series: Vec<(f64, f64)> = f
            .points
            .iter()
            .map(|p| (xs.to(p.budget), p.bw_gbps[..=d].iter().sum::<f64>()))
            .collect();
        chart
            .draw_series(AreaSeries::new(series, 0.0, color.mix(0.85)).border_style(color.stroke_width(1)))?
            .label(format!("{} (dim {d})", dim_names[d]))
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Capex by dimension, one stacked horizontal bar per design (SVG and PNG,
/// `dir/stem.*`): `rows` are (design, $M per dimension).
pub(crate) fn capex_chart(
    dir: &Path,
    stem: &str,
    title: &str,
    rows: &[(String, Vec<f64>)],
    dim_names: &[String],
    stamp: &Stamp,
) -> Result<Chart, ReportError> {
    bar_chart(dir, stem, title, rows, dim_names, Bars::CAPEX, stamp)
}

/// What a stacked bar chart's values are: the axis and each bar's total.
#[derive(Clone, Copy)]
pub(crate) struct Bars {
    /// The value axis's description.
    pub axis: &'static str,
    /// Before and after each bar's total (`$`, `M`).
    pub total: (&'static str, &'static str),
    /// The label area widens to the longest label (about 8 px a
    /// character), else stays 230 px.
    pub fit_labels: bool,
}

impl Bars {
    /// Capex in $M.
    pub const CAPEX: Bars = Bars {
        axis: "capex ($M)",
        total: ("$", "M"),
        fit_labels: false,
    };
}

/// Stacked horizontal bars, one per row, a segment per name of `parts`.
pub(crate) fn bar_chart(
    dir: &Path,
    stem: &str,
    title: &str,
    rows: &[(String, Vec<f64>)],
    parts: &[String],
    bars: Bars,
    stamp: &Stamp,
) -> Result<Chart, ReportError> {
    let size = (1100, 200 + 70 * rows.len() as u32);
    render(
        dir,
        stem,
        size,
        &|r| draw_capex(r, title, rows, parts, bars, stamp),
        &|r| draw_capex(r, title, rows, parts, bars, stamp),
    )
}

fn draw_capex<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    rows: &[(String, Vec<f64>)],
    dim_names: &[String],
    unit: Bars,
    stamp: &Stamp,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let body = frame(root, stamp)?;
    let n = rows.len().max(1);
    let top = rows
        .iter()
        .map(|(_, v)| v.iter().sum::<f64>())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let labels: Vec<String> = rows.iter().map(|(l, _)| l.clone()).collect();
    let label_px = if unit.fit_labels {
        labels
            .iter()
            .map(|l| 8 * l.chars().count() as u32)
            .fold(230, u32::max)
            .min(600)
    } else {
        230
    };
    let mut chart = ChartBuilder::on(&body)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(label_px)
        .build_cartesian_2d(0.0..top * 1.4, -0.5..(n as f64 - 0.5))?;
    chart
        .configure_mesh()
        .x_desc(unit.axis)
        .y_labels(n)
        .y_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                // The first design on top.
                labels.get(n - 1 - i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_formatter(&|v| sig3(*v))
        .disable_y_mesh()
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    for (d, name) in dim_names.iter().enumerate() {
        let (r, g, b) = PALETTE[d % PALETTE.len()];
        let color = RGBColor(r, g, b);
        let bars: Vec<Rectangle<(f64, f64)>> = rows
            .iter()
            .enumerate()
            .map(|(i, (_, v))| {
                let x0: f64 = v[..d].iter().sum();
                let y = (n - 1 - i) as f64;
                Rectangle::new([(x0, y - 0.32), (x0 + v[d], y + 0.32)], color.filled())
            })
            .collect();
        chart
            .draw_series(bars)?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.filled()));
    }
    for (i, (_, v)) in rows.iter().enumerate() {
        let total: f64 = v.iter().sum();
        chart.draw_series(std::iter::once(Text::new(
            format!("{}{}{}", unit.total.0, sig3(total), unit.total.1),
            (total + top * 0.01, (n - 1 - i) as f64 + 0.1),
            ("sans-serif", 15).into_font(),
        )))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()?;
    root.present()?;
    Ok(())
}

const SIZE: (u32, u32) = (1100, 680);

/// A chart as written: its SVG markup (for pages that inline it) and the
/// files, `dir/stem.svg` and `dir/stem.png`.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The file stem.
    pub stem: String,
    /// The SVG document.
    pub svg: String,
    /// The SVG file, then the PNG file.
    pub files: Vec<PathBuf>,
}

/// Renders one chart as SVG and PNG, `dir/stem.svg` and `dir/stem.png`.
pub(crate) fn render(
    dir: &Path,
    stem: &str,
    size: (u32, u32),
    draw_svg: &dyn Fn(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
    draw_png: &dyn Fn(&DrawingArea<BitMapBackend, Shift>) -> DrawResult,
) -> Result<Chart, ReportError> {
    let svg_path = dir.join(format!("{stem}.svg"));
    let png_path = dir.join(format!("{stem}.png"));
    let chart_err = |path: &Path, e: Box<dyn std::error::Error>| ReportError::Chart {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw_svg(&root).map_err(|e| chart_err(&svg_path, e))?;
    }
    write_atomic(&svg_path, svg.as_bytes())?;
    let mut drawn = Ok(());
    let written = write_via_temp(&png_path, |tmp| {
        let root = BitMapBackend::new(tmp, size).into_drawing_area();
        drawn = draw_png(&root).map_err(|e| chart_err(&png_path, e));
        drop(root);
        match drawn {
            Ok(()) => Ok(()),
            Err(_) => Err(std::io::Error::other("the chart was not drawn")),
        }
    });
    drawn?;
    written?;
    Ok(Chart {
        stem: stem.to_string(),
        svg,
        files: vec![svg_path, png_path],
    })
}

/// The frontier chart (time against budget, equal split, markers, knee) and
/// the stacked allocation chart, each as SVG and PNG: `frontier-<axis>.*`
/// and `allocation-<axis>.*` in `dir`.
pub(crate) fn frontier_charts(
    dir: &Path,
    study: &str,
    f: &Frontier,
    dim_names: &[String],
    markers: &[Marker],
    stamp: &Stamp,
) -> Result<Vec<Chart>, ReportError> {
    let axis = f.axis.name();
    let t1 = format!("{study}: fastest design per {} budget", f.axis.name().replace('-', " "));
    let t2 = format!("{study}: optimal bandwidth per dimension along the frontier");
    let frontier = render(
        dir,
        &format!("frontier-{axis}"),
        SIZE,
        &|a| draw_frontier(a, &t1, f, markers, stamp),
        &|a| draw_frontier(a, &t1, f, markers, stamp),
    )?;
    let allocation = render(
        dir,
        &format!("allocation-{axis}"),
        SIZE,
        &|a| draw_allocation(a, &t2, f, dim_names, stamp),
        &|a| draw_allocation(a, &t2, f, dim_names, stamp),
    )?;
    Ok(vec![frontier, allocation])
}

/// One line of a [`line_chart`]: a label and its points.
pub type Series = (String, Vec<(f64, f64)>);

/// A line chart (SVG and PNG, `dir/stem.*`): log-scale x (labelled in bytes
/// when `x_desc` names bytes or a size), one line with
/// markers per series, and a dashed reference line at `reference_y` (for
/// speedups: 1).
#[allow(clippy::too_many_arguments)]
pub fn line_chart(
    dir: &Path,
    stem: &str,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    reference_y: Option<f64>,
    stamp: &Stamp,
) -> Result<Chart, ReportError> {
    render(
        dir,
        stem,
        SIZE,
        &|r| draw_lines(r, title, x_desc, y_desc, series, reference_y, stamp),
        &|r| draw_lines(r, title, x_desc, y_desc, series, reference_y, stamp),
    )
}

/// A byte count with a decimal unit: 100 B, 1 kB, 10 MB.
fn bytes_label(v: f64) -> String {
    let (scale, unit) = [(1e9, "GB"), (1e6, "MB"), (1e3, "kB")]
        .into_iter()
        .find(|(s, _)| v >= *s * 0.999)
        .unwrap_or((1.0, "B"));
    format!("{} {unit}", tick(v / scale))
}

/// Sixteen distinguishable colours (the Tableau palette, then darker ones).
const PALETTE: [(u8, u8, u8); 16] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (0, 0, 0),
    (0, 90, 90),
    (120, 120, 0),
    (150, 0, 90),
    (70, 70, 190),
    (190, 110, 0),
];

/// Where a legend of `entries` lines covers the least of `lines` (points
/// in the chart's coordinates, scaled by `xs` and `ys` to 0..1, y up): of
/// the plot's corners and edge middles, the
/// one whose box (two fifths of the width, the legend's height) holds the
/// fewest points of the lines sampled along each segment; ties in the order
/// lower left, upper right, upper left, lower right, then the middles.
fn clear_corner(lines: &[Vec<(f64, f64)>], xs: &Scale, ys: &Scale, entries: usize) -> SeriesLabelPosition {
    let unit = |p: &(f64, f64)| ((p.0 - xs.lo) / (xs.hi - xs.lo), (p.1 - ys.lo) / (ys.hi - ys.lo));
    let lines: Vec<Vec<(f64, f64)>> = lines.iter().map(|l| l.iter().map(unit).collect()).collect();
    // The legend's height as a share of a 680-pixel plot: 22 px a line.
    let h = ((entries as f64 * 22.0 + 16.0) / 560.0).min(0.9);
    let w = 0.42;
    let boxes = [
        (SeriesLabelPosition::LowerLeft, (0.0, w), (0.0, h)),
        (SeriesLabelPosition::UpperRight, (1.0 - w, 1.0), (1.0 - h, 1.0)),
        (SeriesLabelPosition::UpperLeft, (0.0, w), (1.0 - h, 1.0)),
        (SeriesLabelPosition::LowerRight, (1.0 - w, 1.0), (0.0, h)),
        (
            SeriesLabelPosition::UpperMiddle,
            (0.5 - w / 2.0, 0.5 + w / 2.0),
            (1.0 - h, 1.0),
        ),
        (
            SeriesLabelPosition::LowerMiddle,
            (0.5 - w / 2.0, 0.5 + w / 2.0),
            (0.0, h),
        ),
        (
            SeriesLabelPosition::MiddleLeft,
            (0.0, w),
            (0.5 - h / 2.0, 0.5 + h / 2.0),
        ),
        (
            SeriesLabelPosition::MiddleRight,
            (1.0 - w, 1.0),
            (0.5 - h / 2.0, 0.5 + h / 2.0),
        ),
    ];
    let samples: Vec<(f64, f64)> = lines
        .iter()
        .flat_map(|l| {
            l.windows(2)
                .flat_map(|s| {
                    (0..16).map(move |k| {
                        let t = f64::from(k) / 16.0;
                        (s[0].0 + t * (s[1].0 - s[0].0), s[0].1 + t * (s[1].1 - s[0].1))
                    })
                })
                .chain(l.last().copied())
                .collect::<Vec<_>>()
        })
        .collect();
    let count = |(x0, x1): (f64, f64), (y0, y1): (f64, f64)| {
        samples
            .iter()
            .filter(|p| p.0 >= x0 - 0.02 && p.0 <= x1 + 0.02 && p.1 >= y0 - 0.02 && p.1 <= y1 + 0.02)
            .count()
    };
    let mut best = (usize::MAX, SeriesLabelPosition::LowerLeft);
    for (pos, x, y) in boxes {
        let c = count(x, y);
        if c < best.0 {
            best = (c, pos);
        }
    }
    best.1
}

fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    reference_y: Option<f64>,
    stamp: &Stamp,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let body = frame(root, stamp)?;
    let xs = Scale::new(series.iter().flat_map(|s| s.1.iter().map(|p| p.0)), true);
    let ys = Scale::new(
        series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).chain(reference_y),
        false,
    );
    let mut chart = ChartBuilder::on(&body)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(xs.range(), ys.range())?;
    chart
        .configure_mesh()
        .x_desc(format!("{x_desc}, log scale"))
        .y_desc(format!("{y_desc}{}", if ys.log { ", log scale" } else { "" }))
        .x_label_formatter(&|t| {
            // Sizes in bytes get units; other axes (budgets) plain numbers.
            if x_desc.contains("bytes") || x_desc.contains("size") {
                bytes_label(10f64.powf(*t))
            } else {
                tick(10f64.powf(*t))
            }
        })
        .y_label_formatter(&|t| ys.label(*t))
        .x_labels(10)
        .y_labels(8)
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    if let Some(y) = reference_y {
        let grey = RGBColor(90, 90, 90);
        chart.draw_series(DashedLineSeries::new(
            vec![(xs.lo, ys.to(y)), (xs.hi, ys.to(y))],
            8,
            5,
            grey.stroke_width(2),
        ))?;
    }
    let mut drawn: Vec<Vec<(f64, f64)>> = Vec::new();
    for (i, (label, pts)) in series.iter().enumerate() {
        let (r, g, b) = PALETTE[i % PALETTE.len()];
        let colour = RGBColor(r, g, b);
        let pts: Vec<(f64, f64)> = pts.iter().map(|p| (xs.to(p.0), ys.to(p.1))).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(3)))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3)));
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, colour.filled())))?;
        drawn.push(pts);
    }
    chart
        .configure_series_labels()
        .position(clear_corner(&drawn, &xs, &ys, series.len()))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font(("sans-serif", 15))
        .draw()?;
    Ok(())
}

/// A red flag in words.
pub(crate) fn flag_text(f: &crate::pipeline::procure::Flag) -> String {
    use crate::pipeline::procure::Flag;
    match f {
        Flag::OverCapex { capex_usd, budget_usd } => format!(
            "costs ${}M, over the ${}M capex budget",
            sig3(crate::model::units::usd_to_musd(*capex_usd)),
            sig3(crate::model::units::usd_to_musd(*budget_usd))
        ),
        Flag::OverPower { power_w, budget_w } => format!(
            "draws {} kW, over the {} kW power budget",
            sig3(crate::model::units::w_to_kw(*power_w)),
            sig3(crate::model::units::w_to_kw(*budget_w))
        ),
        Flag::OverCap {
            dimension,
            bought_gbps,
            max_gbps,
        } => format!(
            "buys {} GB/s per NPU in `{dimension}`, over its max_gbps {}",
            sig3(*bought_gbps),
            sig3(*max_gbps)
        ),
        Flag::NotSold { reason } => format!("cannot be bought: {reason}"),
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    #[test]
    fn slower_is_never_called_faster_and_units_print_both_ways() {
        use super::study::faster;
        // 700 ms against 703.5 ms: 703.5 / 700 = 1.005x faster.
        assert_eq!(faster(703.5, 700.0), "1.005x faster than");
        // The issue's "0.995x faster": 700 / 703.5 = 0.995, slower by 1.005x.
        assert_eq!(faster(700.0, 703.5), "1.005x slower than");
        assert_eq!(faster(700.0, 700.1), "as fast as");
        // 50 GB/s = 50 x 8 = 400 Gb/s.
        assert_eq!(gbps_both(50.0), "50.0 GB/s = 400 Gb/s");
        assert_eq!(thousands(18_432), "18,432");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig3(708.4387), "708");
        assert_eq!(sig3(48.8189), "48.8");
        assert_eq!(sig3(1.2993), "1.30");
        assert_eq!(sig3(0.0123), "0.0123");
        assert_eq!(sig3(2.5e7), "2.50e7");
    }

    /// Ticks by hand: the labels a reader sees.
    #[test]
    fn round_ticks() {
        let labels = |sc: Scale| sc.keys().iter().map(|t| sc.label(*t)).collect::<Vec<_>>();
        let log = |a: f64, b: f64| Scale {
            log: true,
            lo: a.log10(),
            hi: b.log10(),
        };
        // Three decades: 1, 2 and 5 times the powers of ten.
        assert_eq!(
            labels(log(0.9, 1100.0)),
            ["1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"]
        );
        // Six decades: the powers alone.
        assert_eq!(
            labels(log(1.0, 1e6)),
            ["1", "10", "100", "1000", "10000", "100000", "1.00e6"]
        );
        // $10.5M to $42M: 20 alone would be one tick; 1.5 to 9 times.
        assert_eq!(labels(log(10.5, 42.0)), ["15", "20", "30", "40"]);
        // 700 to 790 ms on a log axis: linear steps of 20.
        assert_eq!(labels(log(700.0, 790.0)), ["700", "720", "740", "760", "780"]);
        // Linear 0 to 7: a step of 2 (7/6 rounds up to 2).
        let lin = Scale {
            log: false,
            lo: 0.0,
            hi: 7.0,
        };
        assert_eq!(labels(lin), ["0", "2", "4", "6"]);
        assert_eq!(tick(0.2), "0.2");
        assert_eq!(tick(2500.0), "2500");
    }
}
