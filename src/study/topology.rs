//! A study's fabric as an explicit topology (what `dimsum collective
//! --topology fabric:STUDY.toml` replays on): the allocation picked (the
//! one given, else the study's `bw`), checked positive on every dimension,
//! and turned into links by `Topology::from_fabric`. Errors name `--bw`,
//! the flag that supplies an allocation.

use super::Study;
use crate::error::InputError;
use crate::model::topology::{self, DimKind, Topology, check_links};
use crate::model::units::{self, UnitError};
use std::path::Path;

/// `text`'s comma-separated values, each read by `parse`; errors name `field`.
fn list(text: &str, field: &str, parse: impl Fn(&str) -> Result<f64, UnitError>) -> Result<Vec<f64>, InputError> {
    text.split(',')
        .map(|v| parse(v.trim()).map_err(|m| InputError::arg(field, m.to_string())))
        .collect()
}

/// The topology `spec` names (`--topology`: `ring:8`, `torus:4x4`,
/// `fabric:STUDY.toml`, `edges:FILE`, `astra:FILE.yml`, ...), with the
/// texts of `--link-gbps` (GB/s, one value or one per dimension; default
/// 50), `--link-latency-us` (default 0.5) and `--bw` (a fabric's GB/s per
/// NPU per dimension) as given. A topology that brings its own links
/// refuses link flags; only a fabric takes `--bw`.
pub fn from_flags(
    spec: &str,
    link_gbps: Option<&str>,
    link_latency_us: Option<&str>,
    bw: Option<&str>,
) -> Result<Topology, InputError> {
    let gbps = list(link_gbps.unwrap_or("50"), "--link-gbps", units::parse_gbps)?;
    let lat = list(link_latency_us.unwrap_or("0.5"), "--link-latency-us", |v| {
        units::parse_time_ns(v, 1e3)
    })?;
    if ["fabric:", "edges:", "astra:"].iter().any(|p| spec.starts_with(p)) {
        for (given, flag) in [
            (link_gbps.is_some(), "--link-gbps"),
            (link_latency_us.is_some(), "--link-latency-us"),
        ] {
            if given {
                return Err(InputError::arg(
                    flag,
                    format!(
                        "`{spec}` brings its own links' bandwidth and latency: drop {flag} (for a fabric, use --bw)"
                    ),
                ));
            }
        }
    }
    if bw.is_some() && !spec.starts_with("fabric:") {
        return Err(InputError::arg(
            "--bw",
            "only a fabric:STUDY.toml topology takes per-NPU bandwidths: use --link-gbps",
        ));
    }
    match spec.strip_prefix("fabric:") {
        Some(path) => Study::load_topology(Path::new(path), bw),
        None => topology::from_spec(spec, &gbps, &lat),
    }
}

impl Study {
    /// The study's own allocation (`bw = [...]`), which `--bw` replaces.
    fn own_bw(&self) -> Result<&[f64], InputError> {
        self.bw.as_deref().ok_or_else(|| {
            InputError::arg(
                "--bw",
                "the study names no allocation (`bw = [...]`): pass --bw with one GB/s value per dimension",
            )
        })
    }

    /// The allocation `bw` (`--bw`'s text: GB/s per NPU per dimension)
    /// gives, else the study's own.
    pub fn allocation(&self, bw: Option<&str>) -> Result<Vec<f64>, InputError> {
        match bw {
            Some(s) => self.parse_bw(s),
            None => self.own_bw().map(<[f64]>::to_vec),
        }
    }

    /// The fabric's topology at `bw` GB/s per NPU per dimension (default:
    /// the study's `bw`).
    pub fn topology(&self, bw: Option<&[f64]>) -> Result<Topology, InputError> {
        let bw = match bw {
            Some(b) => b,
            None => self.own_bw()?,
        };
        if let Some((d, _)) = bw.iter().enumerate().find(|(_, b)| **b <= 0.0) {
            return Err(InputError::arg(
                "--bw",
                format!("dimension {d} gets no bandwidth: every link needs a positive bandwidth"),
            ));
        }
        let kinds: Vec<(DimKind, u32)> = self
            .fabric
            .dims
            .iter()
            .map(|d| (DimKind::of(d.block), d.npus))
            .collect();
        check_links(&kinds).map_err(|e| InputError::at(&self.path, None, "fabric.dims", e.to_string()))?;
        Ok(Topology::from_fabric(&self.fabric, bw))
    }

    /// Loads the study at `path` and returns its fabric's topology at `bw`
    /// (`--bw`'s text: GB/s per NPU per dimension; default: the study's
    /// `bw`), named `fabric:PATH`.
    fn load_topology(path: &Path, bw: Option<&str>) -> Result<Topology, InputError> {
        let study = Study::load(path)?;
        let bw = bw.map(|s| study.parse_bw(s)).transpose()?;
        let mut t = study.topology(bw.as_deref())?;
        t.name = format!("fabric:{}", path.display());
        Ok(t)
    }
}

/// Every topology of a list (`dimsum compare --topologies`), each built
/// and checked before any is used: the link flags go to the topologies
/// built from them, `--bw` to the fabrics (and is refused when no
/// `fabric:` topology is listed); an error names the flag and the
/// topology.
pub fn from_flag_list(
    specs: &[String],
    link_gbps: Option<&str>,
    link_latency_us: Option<&str>,
    bw: Option<&str>,
) -> Result<Vec<(String, Topology)>, InputError> {
    let own_links = |spec: &str| ["fabric:", "edges:", "astra:"].iter().any(|p| spec.starts_with(p));
    if bw.is_some() && !specs.iter().any(|t| t.starts_with("fabric:")) {
        return Err(InputError::arg(
            "--bw",
            "no fabric:STUDY.toml topology is listed to take it",
        ));
    }
    let topology = |spec: &String| -> Result<Topology, InputError> {
        let (g, l, bw) = if own_links(spec) {
            (None, None, bw.filter(|_| spec.starts_with("fabric:")))
        } else {
            (link_gbps, link_latency_us, None)
        };
        from_flags(spec, g, l, bw).map_err(|e| {
            let flag = if e.field.starts_with("--link") {
                e.field.as_str()
            } else {
                "--topologies"
            };
            InputError::arg(flag, format!("{spec}: {}", e.message))
        })
    };
    specs.iter().map(|spec| Ok((spec.clone(), topology(spec)?))).collect()
}

/// The buffer `dimsum collective` replays: `--size` as given (at least one
/// byte), or the one a loaded schedule records (which a given size must
/// match).
pub fn collective_buffer(size: Option<&str>, loaded: Option<&crate::schedule::Schedule>) -> Result<f64, InputError> {
    let given = match size {
        Some(s) => match crate::model::units::parse_bytes(s).map_err(|m| InputError::arg("--size", m.to_string()))? {
            v if v < 1.0 => return Err(InputError::arg("--size", "a collective moves at least 1 byte")),
            v => Some(v),
        },
        None => None,
    };
    match (loaded, given) {
        (Some(s), given) => s
            .size_to_use(given)
            .map_err(|m| InputError::arg("--size", m.to_string())),
        (None, Some(v)) => Ok(v),
        (None, None) => Err(InputError::arg(
            "--size",
            "give the collective's buffer, e.g. --size 64MiB",
        )),
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    const STUDY: &str = r#"
name = "two"
time_model = "pipelined"
bw = [100, 50]

[[fabric.dims]]
name = "a"
block = "ring"
npus = 4
latency_ns = 100
tier = "t"

[[fabric.dims]]
name = "b"
block = "switch"
npus = 2
latency_ns = 500
tier = "t"

[cost.tiers.t]
link_usd_per_gbps = 2.0
link_pj_per_bit = 1.0

[workload]
communicator = { weight_grad = [4, 2] }

[[workload.layers]]
name = "l0"
forward = { compute_ns = 1000 }
input_grad = { compute_ns = 2000 }
weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
"#;

    #[test]
    fn the_given_allocation_else_the_studys_and_never_a_zero() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.toml");
        std::fs::write(&path, STUDY).unwrap();
        let study = Study::load(&path).unwrap();
        let own = study.topology(None).unwrap();
        assert_eq!(own.links, Topology::from_fabric(&study.fabric, &[100.0, 50.0]).links);
        let given = study.topology(Some(&[10.0, 20.0])).unwrap();
        assert_eq!(given.links, Topology::from_fabric(&study.fabric, &[10.0, 20.0]).links);
        assert_ne!(own.links, given.links);
        let e = study.topology(Some(&[10.0, 0.0])).unwrap_err();
        assert_eq!(e.field, "--bw");
        assert!(e.message.starts_with("dimension 1 gets no bandwidth"), "{e}");
        let none = Study {
            bw: None,
            ..study.clone()
        };
        assert!(
            none.topology(None)
                .unwrap_err()
                .message
                .starts_with("the study names no allocation")
        );

        let t = Study::load_topology(&path, Some("10, 20")).unwrap();
        assert_eq!(t.name, format!("fabric:{}", path.display()));
        assert_eq!(t.links, given.links);
        assert_eq!(Study::load_topology(&path, Some("x")).unwrap_err().field, "--bw");
    }
}
