//! `[[frontier]]` (the budget axis and number of points of each frontier
//! `run` draws) and `[[case]]` (the named fixed allocations `run` evaluates
//! and shows beside them); and the budget axis names a `[[sweep]]` also uses.

use super::StudyFile;
use super::fabric::check_bw;
use crate::error::InputError;
use crate::model::fabric::Fabric;
use crate::optimize::frontier::Axis;
use serde::Deserialize;
use toml::Spanned;

/// A `[[frontier]]` to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierSpec {
    /// Budget axis.
    pub axis: Axis,
    /// Number of points.
    pub points: usize,
}

/// A `[[case]]`: a named fixed allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Name.
    pub name: String,
    /// GB/s per NPU per dimension.
    pub bw: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFrontier {
    axis: Option<Spanned<String>>,
    points: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCase {
    name: String,
    bw: Spanned<Vec<super::Gbps>>,
}

/// A budget axis by name (default: cost).
pub(super) fn axis(a: &Option<Spanned<String>>, field: String, src: StudyFile<'_>) -> Result<Axis, InputError> {
    match a {
        None => Ok(Axis::Cost),
        Some(a) => a
            .get_ref()
            .parse::<Axis>()
            .map_err(|e| src.at(a.span(), field, e.to_string())),
    }
}

/// Every `[[frontier]]`: 2 to 100000 points (default 40) on an axis.
pub(super) fn frontiers(raw: &[Spanned<RawFrontier>], src: StudyFile<'_>) -> Result<Vec<FrontierSpec>, InputError> {
    let mut frontiers = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let r = f.get_ref();
        let points = match &r.points {
            None => 40,
            Some(p) if (2..=100_000).contains(p.get_ref()) => *p.get_ref() as usize,
            Some(p) => {
                return Err(src.at(
                    p.span(),
                    format!("frontier[{i}].points"),
                    format!("{} is not allowed: use 2 to 100000 points", p.get_ref()),
                ));
            }
        };
        frontiers.push(FrontierSpec {
            axis: axis(&r.axis, format!("frontier[{i}].axis"), src)?,
            points,
        });
    }
    Ok(frontiers)
}

/// Every `[[case]]`, its allocation checked against the fabric (and
/// against the servers of `procurement`'s dimensions that come with them).
pub(super) fn cases(
    raw: &[Spanned<RawCase>],
    fabric: &Fabric,
    procurement: Option<&crate::model::bom::Procurement>,
    src: StudyFile<'_>,
) -> Result<Vec<Case>, InputError> {
    let mut cases = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let r = c.get_ref();
        let bw = check_bw(&super::gbps_values(r.bw.get_ref()), fabric)
            .and_then(|bw| match procurement {
                Some(p) => super::procurement::check_server_bw(p, fabric, &bw).map(|()| bw),
                None => Ok(bw),
            })
            .map_err(|e| src.at(r.bw.span(), format!("case[{i}].bw"), e.to_string()))?;
        cases.push(Case {
            name: r.name.clone(),
            bw,
        });
    }
    Ok(cases)
}

impl super::Study {
    /// The frontier a command line asks for: `axis` (`--axis`) and
    /// `points` (`--points`, 2 to 100,000), each defaulting to the study's
    /// first `[[frontier]]`'s, else cost and 40.
    pub fn frontier_request(&self, axis: Option<&str>, points: Option<usize>) -> Result<FrontierSpec, InputError> {
        let spec = self.frontiers.first();
        let axis = match axis {
            Some(a) => a
                .parse::<Axis>()
                .map_err(|e| InputError::arg("--axis", e.to_string()))?,
            None => spec.map_or(Axis::Cost, |f| f.axis),
        };
        let points = points.or_else(|| spec.map(|f| f.points)).unwrap_or(40);
        if !(2..=100_000).contains(&points) {
            return Err(InputError::arg(
                "--points",
                format!("{points} is not allowed: use 2 to 100000"),
            ));
        }
        Ok(FrontierSpec { axis, points })
    }
}
