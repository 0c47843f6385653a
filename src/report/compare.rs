//! The report of `dimsum compare`, rendered from `schedule::compare`'s typed
//! rows: the CSV (one line per replay), the markdown table (per topology, a
//! row per vector size: every algorithm's time, the fastest in bold, and the
//! speedup of the best algorithm under study over the best baseline) and the
//! speedup chart (one line per topology, through [`line_chart`]).

use super::{Chart, ReportError, Series, line_chart, sig3};
use crate::io::Stamp;
use crate::model::workload::CollectiveKind;
use crate::schedule::algorithm::Algorithm;
use crate::schedule::compare::Row;
use crate::schedule::simulate::LinkModel;
use std::fmt::Write as _;
use std::path::Path;

/// What a comparison ran, as the report describes it.
#[derive(Debug, Clone, Copy)]
pub struct Setup<'a> {
    /// The collective.
    pub collective: CollectiveKind,
    /// The algorithms under study (their best is compared).
    pub subjects: &'a [Algorithm],
    /// The baselines (their best is the reference).
    pub baselines: &'a [Algorithm],
    /// The topologies' names, in the table's order.
    pub topologies: &'a [String],
    /// The vector sizes, bytes, in the table's order.
    pub sizes: &'a [f64],
    /// The link model.
    pub model: LinkModel,
    /// Link bandwidth, GB/s, as given (one value or one per dimension).
    pub link_gbps: &'a str,
    /// Link latency, us, as given.
    pub link_latency_us: &'a str,
    /// The command line after `dimsum`, quoted in the table.
    pub command: &'a str,
}

impl Setup<'_> {
    /// The algorithms under study, then the baselines: the table's columns.
    fn all(&self) -> impl Iterator<Item = Algorithm> + '_ {
        self.subjects.iter().chain(self.baselines).copied()
    }

    fn subject_names(&self) -> String {
        join(self.subjects, " / ")
    }
}

fn join(algorithms: &[Algorithm], sep: &str) -> String {
    algorithms.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(sep)
}

use crate::model::units::ns_to_us as us;

/// A size in bytes as the table shows it: `4 MiB`, `64 KiB`, `32 B`.
fn human(bytes: f64) -> String {
    let b = bytes as u64;
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// The CSV: a header, then one line per row.
pub fn csv(rows: &[Row], collective: CollectiveKind) -> String {
    let mut csv = String::from("topology,npus,collective,size_bytes,algorithm,time_us,lower_bound_us,valid\n");
    for r in rows {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{:.6},{:.6},{}",
            r.topology,
            r.npus,
            collective.name(),
            r.size,
            r.algorithm,
            us(r.time_ns),
            us(r.bound_ns),
            r.valid
        );
    }
    csv
}

/// The fastest of `algorithms` on `topology` at `size`: (time in us, algorithm).
fn best(rows: &[Row], topology: &str, size: f64, algorithms: &[Algorithm]) -> Option<(f64, Algorithm)> {
    rows.iter()
        .filter(|r| r.topology == topology && r.size.total_cmp(&size).is_eq() && algorithms.contains(&r.algorithm))
        .map(|r| (us(r.time_ns), r.algorithm))
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

/// Per size of `topology` where both sides ran: the size, the best time
/// under study, the best baseline's time and name (us).
fn speedups<'a>(
    rows: &'a [Row],
    setup: &'a Setup<'a>,
    topology: &'a str,
) -> impl Iterator<Item = (f64, f64, f64, Algorithm)> + 'a {
    setup.sizes.iter().filter_map(move |&size| {
        let (sub, _) = best(rows, topology, size, setup.subjects)?;
        let (base, base_name) = best(rows, topology, size, setup.baselines)?;
        Some((size, sub, base, base_name))
    })
}

/// The chart's series: per topology, (size, best baseline time / best time
/// under study).
fn speedup_series(rows: &[Row], setup: &Setup) -> Vec<Series> {
    setup
        .topologies
        .iter()
        .map(|spec| {
            let pts = speedups(rows, setup, spec)
                .map(|(size, sub, base, _)| (size, base / sub))
                .collect();
            (spec.clone(), pts)
        })
        .collect()
}

/// The markdown report: a section per topology, then the count of replays
/// and of invalid ones, and the stamp.
pub fn markdown(rows: &[Row], setup: &Setup, stamp: &Stamp) -> String {
    let all: Vec<Algorithm> = setup.all().collect();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# {} of {} against {}\n",
        setup.collective.name(),
        setup.subject_names(),
        join(setup.baselines, ", ")
    );
    // A `fabric:` topology takes its links from its study, not from the
    // link flags: say so rather than print a bandwidth it does not use.
    let studies = setup.topologies.iter().filter(|t| t.starts_with("fabric:")).count();
    let links = if studies == setup.topologies.len() {
        format!(
            "{} links, each at its study fabric's bandwidth and latency",
            setup.model
        )
    } else if studies > 0 {
        format!(
            "{} links, {} GB/s and {} us per link; `fabric:` topologies at their study fabric's",
            setup.model, setup.link_gbps, setup.link_latency_us
        )
    } else {
        format!(
            "{} links, {} GB/s and {} us per link",
            setup.model, setup.link_gbps, setup.link_latency_us
        )
    };
    let _ = writeln!(
        md,
        "Generated by `dimsum {}`. Every schedule is built, replayed with link contention\n\
         ({links}) and checked; times in us, the best per row in bold.\n\
         Speedup: the best baseline's time over the best of {}'s.\n",
        setup.command,
        setup.subject_names()
    );
    for spec in setup.topologies {
        let _ = writeln!(md, "## {spec}\n");
        let _ = writeln!(md, "| size | bound | {} | speedup | best baseline |", join(&all, " | "));
        let _ = writeln!(md, "|---|---|{}---|---|", "---|".repeat(all.len()));
        for (size, sub, base, base_name) in speedups(rows, setup, spec) {
            let speedup = base / sub;
            let fastest = sub.min(base);
            let cells: Vec<String> = all
                .iter()
                .map(|a| {
                    rows.iter()
                        .find(|r| r.topology == *spec && r.size.total_cmp(&size).is_eq() && r.algorithm == *a)
                        .map_or("-".into(), |r| {
                            let t = sig3(us(r.time_ns));
                            let t = if r.valid { t } else { format!("{t} (invalid)") };
                            if us(r.time_ns).total_cmp(&fastest).is_eq() {
                                format!("**{t}**")
                            } else {
                                t
                            }
                        })
                })
                .collect();
            let bound = rows
                .iter()
                .find(|r| r.topology == *spec && r.size.total_cmp(&size).is_eq())
                .map_or(0.0, |r| us(r.bound_ns));
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.2}x | {base_name} |",
                human(size),
                sig3(bound),
                cells.join(" | "),
                speedup
            );
        }
        let _ = writeln!(md);
    }
    let invalid = rows.iter().filter(|r| !r.valid).count();
    let _ = writeln!(md, "{} replays, {} invalid.\n\n*{}*", rows.len(), invalid, stamp.line());
    md
}

/// The speedup chart, `speedup.svg` and `speedup.png` in `dir`.
pub fn speedup_chart(dir: &Path, rows: &[Row], setup: &Setup, stamp: &Stamp) -> Result<Chart, ReportError> {
    line_chart(
        dir,
        "speedup",
        &format!(
            "{} {}: speedup over the best baseline",
            setup.subject_names(),
            setup.collective.name()
        ),
        "vector size (bytes)",
        "speedup (best baseline time / time)",
        &speedup_series(rows, setup),
        Some(1.0),
        stamp,
    )
}

/// compare.csv, compare.md and the speedup chart written into `out`,
/// landing together.
pub fn write(out: &Path, rows: &[Row], setup: &Setup, stamp: &Stamp) -> Result<(), ReportError> {
    let staged = crate::io::Staged::new(out)?;
    let dir = staged.dir();
    crate::io::write_atomic(&dir.join("compare.csv"), csv(rows, setup.collective).as_bytes())?;
    crate::io::write_atomic(&dir.join("compare.md"), markdown(rows, setup, stamp).as_bytes())?;
    speedup_chart(dir, rows, setup, stamp)?;
    staged.commit()?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    fn row(topology: &str, size: f64, algorithm: Algorithm, time_ns: f64, valid: bool) -> Row {
        Row {
            topology: topology.into(),
            npus: 4,
            size,
            algorithm,
            time_ns,
            bound_ns: 1000.0,
            valid,
        }
    }

    #[test]
    fn table_csv_and_speedups_by_hand() {
        use Algorithm::{Ring, Swing};
        let rows = vec![
            row("ring:4", 1024.0, Swing, 2000.0, true),
            row("ring:4", 1048576.0, Swing, 8000.0, false),
            row("ring:4", 1024.0, Ring, 3000.0, true),
            row("ring:4", 1048576.0, Ring, 4000.0, true),
        ];
        let topologies = ["ring:4".to_string()];
        let setup = Setup {
            collective: CollectiveKind::AllReduce,
            subjects: &[Swing],
            baselines: &[Ring],
            topologies: &topologies,
            sizes: &[1024.0, 1048576.0],
            model: LinkModel::AlphaBeta,
            link_gbps: "50",
            link_latency_us: "0.5",
            command: "compare --topologies ring:4",
        };
        let c = csv(&rows, setup.collective);
        assert_eq!(
            c.lines().nth(1),
            Some("ring:4,4,all-reduce,1024,swing,2.000000,1.000000,true")
        );
        assert_eq!(c.lines().count(), 5);
        assert_eq!(
            speedup_series(&rows, &setup),
            vec![("ring:4".to_string(), vec![(1024.0, 1.5), (1048576.0, 0.5)])]
        );
        let stamp = Stamp::of(b"x");
        let md = markdown(&rows, &setup, &stamp);
        assert!(
            md.starts_with("# all-reduce of swing against ring\n\nGenerated by `dimsum compare --topologies ring:4`.")
        );
        assert!(md.contains("(alpha-beta links, 50 GB/s and 0.5 us per link)"), "{md}");
        assert!(md.contains("| size | bound | swing | ring | speedup | best baseline |\n|---|---|---|---|---|---|\n"));
        assert!(
            md.contains("| 1 KiB | 1.00 | **2.00** | 3.00 | 1.50x | ring |\n"),
            "{md}"
        );
        assert!(
            md.contains("| 1 MiB | 1.00 | 8.00 (invalid) | **4.00** | 0.50x | ring |\n"),
            "{md}"
        );
        assert!(md.contains("4 replays, 1 invalid."), "{md}");
        // A study's fabric brings its own links: the flags' 50 GB/s is not
        // claimed for it.
        let fabric = vec!["fabric:studies/dgx-h100-pod.toml".to_string()];
        let md = markdown(
            &[],
            &Setup {
                topologies: &fabric,
                ..setup
            },
            &stamp,
        );
        assert!(
            md.contains("(alpha-beta links, each at its study fabric's bandwidth and latency)"),
            "{md}"
        );
        assert!(!md.contains("50 GB/s"), "{md}");
        assert_eq!(
            (human(32.0), human(65536.0), human(3072.0), human(1536.0)),
            ("32 B".into(), "64 KiB".into(), "3 KiB".into(), "1536 B".into())
        );
    }
}
