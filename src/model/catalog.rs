//! The component catalog: the ports, switches and cables a fabric is bought
//! from, each with a unit price, a power draw and where those figures come
//! from (TOML; `catalog/default.toml` is built in).
//!
//! A *port* is what one NPU needs to drive one link of a dimension (a NIC,
//! a PHY, a SerDes block), at `gbits` Gb/s per direction; `blocks` says
//! which building blocks it can form (on-package die-to-die links make
//! rings and fully-connected groups, NICs need a switch). A *switch* has
//! `ports` ports of `gbits` of one `kind`. A *cable* is one link with both
//! ends, `gbits` at most `reach_m` metres, for the port kinds its `kinds`
//! lists (every kind when it lists none). A *server* is what the GPUs come
//! in: `gpus` per server and the scale-up fabric it ships with (NVLink on
//! an HGX baseboard, Infinity Fabric on an MI300X platform), fixed at
//! `scale_up_gbits` per GPU per direction over a domain of `domain` GPUs;
//! a dimension bought with a server takes that bandwidth and buys no ports,
//! switches or cables. Validation keeps the line of every value it checks,
//! so a bad catalog is named to the line.

use crate::error::{InputError, line_of_offset, one_of};
use crate::model::fabric::Block;
use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::Spanned;

/// The built-in catalog's text.
const DEFAULT: &str = include_str!("../../catalog/default.toml");

/// Port and switch kinds.
pub const KINDS: [&str; 5] = ["on-package", "scale-up", "pcie", "ethernet", "infiniband"];

/// Technologies a study may restrict a dimension to
/// (`[procurement.dims.NAME] tech`), each the catalog kind of its parts;
/// a kind's own name is accepted too.
pub const TECHS: [(&str, &str); 5] = [
    ("infiniband", "infiniband"),
    ("ethernet", "ethernet"),
    ("nvlink", "scale-up"),
    ("ucie", "on-package"),
    ("pcie", "pcie"),
];

/// The catalog kind of technology `tech` (a name of [`TECHS`] or a kind of
/// [`KINDS`]), if it is one.
pub fn tech_kind(tech: &str) -> Option<&'static str> {
    TECHS
        .iter()
        .find(|(t, _)| *t == tech)
        .map(|(_, k)| *k)
        .or_else(|| KINDS.iter().find(|k| **k == tech).copied())
}

/// How a report names the technology of a catalog kind.
pub fn kind_label(kind: &str) -> &'static str {
    match kind {
        "infiniband" => "InfiniBand",
        "ethernet" => "Ethernet",
        "scale-up" => "NVLink-class scale-up",
        "on-package" => "on-package die-to-die",
        "pcie" => "PCIe",
        _ => "other",
    }
}

/// The largest figure a catalog may give for the field `field` names
/// (by its last segment): a unit price of $100M, 10 MW, 1 Pb/s, 100 km,
/// 1 s of latency. Anything larger is a typo, and would print as `inf`.
fn limit(field: &str) -> f64 {
    match field.rsplit('.').next().unwrap_or("") {
        "usd" => 1e8,
        "watts" => 1e7,
        "gbits" | "scale_up_gbits" => 1e6,
        "reach_m" => 1e5,
        _ => 1e9,
    }
}

/// Cable media.
pub const MEDIA: [&str; 4] = ["trace", "copper", "active", "optical"];

/// A part's mean time between failures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mtbf {
    /// Hours per failure of one unit.
    pub hours: f64,
    /// Where the figure comes from, with the arithmetic.
    pub source: String,
}

/// A port class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Port {
    /// Name.
    pub name: String,
    /// One of [`KINDS`].
    pub kind: String,
    /// Blocks it can build.
    pub blocks: Vec<Block>,
    /// Gb/s per direction.
    pub gbits: f64,
    /// Unit price, $.
    pub usd: f64,
    /// Typical power, W.
    pub watts: f64,
    /// Where the figures come from.
    pub source: String,
    /// When.
    pub date: String,
    /// Mean time between failures, with its source (`model::failure`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtbf: Option<Mtbf>,
}

impl Port {
    /// GB/s per direction (dimsum's bandwidth unit).
    pub fn gbps(&self) -> f64 {
        crate::model::units::gbits_to_gbytes(self.gbits)
    }
}

/// A switch model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Switch {
    /// Name.
    pub name: String,
    /// One of [`KINDS`].
    pub kind: String,
    /// Radix.
    pub ports: u32,
    /// Gb/s per port per direction.
    pub gbits: f64,
    /// Unit price, $.
    pub usd: f64,
    /// Typical power, W.
    pub watts: f64,
    /// Where the figures come from.
    pub source: String,
    /// When.
    pub date: String,
    /// Mean time between failures, with its source (`model::failure`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtbf: Option<Mtbf>,
}

/// A cable (or a pair of transceivers and fibre): one link, both ends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cable {
    /// Name.
    pub name: String,
    /// One of [`MEDIA`].
    pub medium: String,
    /// Gb/s per direction.
    pub gbits: f64,
    /// Longest link, m.
    pub reach_m: f64,
    /// Price per link, $.
    pub usd: f64,
    /// Power per link, W.
    pub watts: f64,
    /// Port kinds it serves (empty: every kind).
    pub kinds: Vec<String>,
    /// Where the figures come from.
    pub source: String,
    /// When.
    pub date: String,
    /// Mean time between failures, with its source (`model::failure`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtbf: Option<Mtbf>,
}

/// A server (or rack) the GPUs are bought in, with the scale-up fabric it
/// ships with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Server {
    /// Name.
    pub name: String,
    /// GPUs per server.
    pub gpus: u32,
    /// GPUs one scale-up domain joins (the server's own, or a rack's).
    pub domain: u32,
    /// The scale-up link, as its maker names it (`NVLink 4`).
    pub link: String,
    /// Scale-up bandwidth per GPU per direction, Gb/s.
    pub scale_up_gbits: f64,
    /// Scale-up latency, ns.
    pub latency_ns: f64,
    /// Unit price, $ (where published).
    pub usd: Option<f64>,
    /// Power of one server at its maximum, W.
    pub watts: f64,
    /// Where the figures come from.
    pub source: String,
    /// When.
    pub date: String,
}

impl Server {
    /// Scale-up bandwidth per GPU per direction, GB/s.
    pub fn gbps(&self) -> f64 {
        crate::model::units::gbits_to_gbytes(self.scale_up_gbits)
    }
}

/// A validated catalog.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Catalog {
    /// Its name.
    pub name: String,
    /// When its figures were collected.
    pub date: String,
    /// What the abbreviations in its sources stand for.
    pub legend: String,
    /// Port classes.
    pub ports: Vec<Port>,
    /// Switch models.
    pub switches: Vec<Switch>,
    /// Cables.
    pub cables: Vec<Cable>,
    /// Servers.
    pub servers: Vec<Server>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    meta: RawMeta,
    #[serde(default)]
    port: Vec<Spanned<RawPort>>,
    #[serde(default)]
    switch: Vec<Spanned<RawSwitch>>,
    #[serde(default)]
    cable: Vec<Spanned<RawCable>>,
    #[serde(default)]
    server: Vec<Spanned<RawServer>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMeta {
    name: String,
    date: String,
    #[serde(default)]
    legend: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    name: String,
    kind: Spanned<String>,
    blocks: Vec<Block>,
    gbits: Spanned<f64>,
    usd: Spanned<f64>,
    watts: Spanned<f64>,
    source: Spanned<String>,
    date: String,
    mtbf_h: Option<Spanned<f64>>,
    mtbf_source: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    name: String,
    kind: Spanned<String>,
    ports: Spanned<i64>,
    gbits: Spanned<f64>,
    usd: Spanned<f64>,
    watts: Spanned<f64>,
    source: Spanned<String>,
    date: String,
    mtbf_h: Option<Spanned<f64>>,
    mtbf_source: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCable {
    name: String,
    medium: Spanned<String>,
    gbits: Spanned<f64>,
    reach_m: Spanned<f64>,
    usd: Spanned<f64>,
    watts: Spanned<f64>,
    #[serde(default)]
    kinds: Vec<Spanned<String>>,
    source: Spanned<String>,
    date: String,
    mtbf_h: Option<Spanned<f64>>,
    mtbf_source: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: String,
    gpus: Spanned<i64>,
    domain: Option<Spanned<i64>>,
    link: String,
    scale_up_gbits: Spanned<f64>,
    latency_ns: Spanned<f64>,
    usd: Option<Spanned<f64>>,
    watts: Spanned<f64>,
    source: Spanned<String>,
    date: String,
}

impl Catalog {
    /// The built-in catalog.
    ///
    /// ```
    /// use dimsum::model::catalog::{Catalog, KINDS};
    /// let c = Catalog::builtin();
    /// assert!(!c.ports.is_empty() && !c.switches.is_empty() && !c.cables.is_empty());
    /// // Every part says where its figures come from, and is of a known kind.
    /// assert!(c.ports.iter().all(|p| !p.source.trim().is_empty() && KINDS.contains(&p.kind.as_str())));
    /// // Names are unique, so a part is found by its name.
    /// let first = &c.ports[0];
    /// assert_eq!(c.port(&first.name), Some(first));
    /// ```
    pub fn builtin() -> Catalog {
        // The built-in text is compiled in and a test parses it: a broken one
        // is a bug of this build, not something a user can type.
        #[allow(clippy::panic)]
        Catalog::parse(DEFAULT, Path::new("catalog/default.toml")).unwrap_or_else(|e| panic!("built-in catalog: {e}"))
    }

    /// Reads a catalog file.
    pub fn load(path: &Path) -> Result<Catalog, InputError> {
        let text = crate::io::read_text(path, crate::io::MAX_TEXT_BYTES)
            .map_err(|e| InputError::at(path, None, "", format!("cannot read the catalog: {e}")))?;
        Catalog::parse(&text, path)
    }

    /// Parses and checks a catalog.
    pub fn parse(text: &str, path: &Path) -> Result<Catalog, InputError> {
        let raw: RawCatalog = toml::from_str(text).map_err(|e| crate::error::toml_error(text, path, &e))?;
        let mut c = Check {
            text,
            path,
            names: Vec::new(),
        };
        let ports = raw
            .port
            .iter()
            .enumerate()
            .map(|(i, p)| c.port(i, p))
            .collect::<Result<_, _>>()?;
        let switches = raw
            .switch
            .iter()
            .enumerate()
            .map(|(i, s)| c.switch(i, s))
            .collect::<Result<_, _>>()?;
        let cables = raw
            .cable
            .iter()
            .enumerate()
            .map(|(i, x)| c.cable(i, x))
            .collect::<Result<_, _>>()?;
        let servers = raw
            .server
            .iter()
            .enumerate()
            .map(|(i, s)| c.server(i, s))
            .collect::<Result<_, _>>()?;
        Ok(Catalog {
            name: raw.meta.name,
            date: raw.meta.date,
            legend: raw.meta.legend,
            ports,
            switches,
            cables,
            servers,
        })
    }

    /// The port class called `name`.
    pub fn port(&self, name: &str) -> Option<&Port> {
        self.ports.iter().find(|p| p.name == name)
    }

    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// The checks of a catalog's parts ([`Catalog::parse`]), each error at the
/// line of the value it is about; the part names seen so far.
struct Check<'a> {
    text: &'a str,
    path: &'a Path,
    names: Vec<String>,
}

impl Check<'_> {
    /// An error about `field` at the line where `span` starts.
    fn at(&self, span: std::ops::Range<usize>, field: String, msg: String) -> InputError {
        InputError::at(self.path, Some(line_of_offset(self.text, span.start)), field, msg)
    }

    /// A finite figure above 0 (or 0, when `zero_ok`) and at most the
    /// field's [`limit`].
    fn positive(&self, v: &Spanned<f64>, field: String, zero_ok: bool) -> Result<f64, InputError> {
        let x = *v.get_ref();
        let max = limit(&field);
        if x.is_finite() && (x > 0.0 || (zero_ok && x == 0.0)) && x <= max {
            Ok(x)
        } else {
            Err(self.at(
                v.span(),
                field,
                format!(
                    "{x} is not allowed: use a number {} and at most {max:e}",
                    if zero_ok { ">= 0" } else { "> 0" }
                ),
            ))
        }
    }

    /// An optional MTBF: hours above 0 with a source that says where they
    /// come from, or neither.
    fn mtbf(
        &self,
        hours: &Option<Spanned<f64>>,
        source: &Option<Spanned<String>>,
        part: &std::ops::Range<usize>,
        f: &dyn Fn(&str) -> String,
    ) -> Result<Option<Mtbf>, InputError> {
        match (hours, source) {
            (None, None) => Ok(None),
            (Some(h), Some(src)) => Ok(Some(Mtbf {
                hours: self.positive(h, f("mtbf_h"), false)?,
                source: self.cited(src, f("mtbf_source"))?,
            })),
            (Some(h), None) => Err(self.at(
                h.span(),
                f("mtbf_source"),
                "an MTBF needs its source: say where the figure comes from in `mtbf_source`".into(),
            )),
            (None, Some(_)) => Err(self.at(
                part.clone(),
                f("mtbf_h"),
                "`mtbf_source` without `mtbf_h`: give the hours too".into(),
            )),
        }
    }

    /// One of [`KINDS`].
    fn kind(&self, k: &Spanned<String>, field: String) -> Result<String, InputError> {
        if KINDS.contains(&k.get_ref().as_str()) {
            Ok(k.get_ref().clone())
        } else {
            Err(self.at(
                k.span(),
                field,
                format!("`{}` is not a kind; allowed: {}", k.get_ref(), one_of(&KINDS)),
            ))
        }
    }

    /// A source that says something.
    fn cited(&self, s: &Spanned<String>, field: String) -> Result<String, InputError> {
        if s.get_ref().trim().is_empty() {
            Err(self.at(s.span(), field, "say where the figures come from".into()))
        } else {
            Ok(s.get_ref().clone())
        }
    }

    /// A part name no other part has taken (every kind of part counted).
    fn unique(&mut self, name: &str, span: std::ops::Range<usize>, field: String) -> Result<(), InputError> {
        if self.names.iter().any(|n| n == name) {
            return Err(self.at(span, field, format!("`{name}` names two parts: names must be unique")));
        }
        self.names.push(name.to_string());
        Ok(())
    }

    /// Port `i`, checked.
    fn port(&mut self, i: usize, sp: &Spanned<RawPort>) -> Result<Port, InputError> {
        let p = sp.get_ref();
        let f = |x: &str| format!("port[{i}].{x}");
        self.unique(&p.name, sp.span(), f("name"))?;
        if p.blocks.is_empty() {
            return Err(self.at(sp.span(), f("blocks"), "list the blocks the port can build".into()));
        }
        Ok(Port {
            name: p.name.clone(),
            kind: self.kind(&p.kind, f("kind"))?,
            blocks: p.blocks.clone(),
            gbits: self.positive(&p.gbits, f("gbits"), false)?,
            usd: self.positive(&p.usd, f("usd"), true)?,
            watts: self.positive(&p.watts, f("watts"), true)?,
            source: self.cited(&p.source, f("source"))?,
            date: p.date.clone(),
            mtbf: self.mtbf(&p.mtbf_h, &p.mtbf_source, &sp.span(), &f)?,
        })
    }

    /// Switch `i`, checked: 2 to 100,000 ports.
    fn switch(&mut self, i: usize, ss: &Spanned<RawSwitch>) -> Result<Switch, InputError> {
        let s = ss.get_ref();
        let f = |x: &str| format!("switch[{i}].{x}");
        self.unique(&s.name, ss.span(), f("name"))?;
        let radix = *s.ports.get_ref();
        if !(2..=100_000).contains(&radix) {
            return Err(self.at(
                s.ports.span(),
                f("ports"),
                format!("{radix} is not allowed: a switch has 2 to 100000 ports"),
            ));
        }
        Ok(Switch {
            name: s.name.clone(),
            kind: self.kind(&s.kind, f("kind"))?,
            ports: radix as u32,
            gbits: self.positive(&s.gbits, f("gbits"), false)?,
            usd: self.positive(&s.usd, f("usd"), true)?,
            watts: self.positive(&s.watts, f("watts"), true)?,
            source: self.cited(&s.source, f("source"))?,
            date: s.date.clone(),
            mtbf: self.mtbf(&s.mtbf_h, &s.mtbf_source, &ss.span(), &f)?,
        })
    }

    /// Cable `i`, checked: one of the [`MEDIA`].
    fn cable(&mut self, i: usize, sc: &Spanned<RawCable>) -> Result<Cable, InputError> {
        let c = sc.get_ref();
        let f = |x: &str| format!("cable[{i}].{x}");
        self.unique(&c.name, sc.span(), f("name"))?;
        if !MEDIA.contains(&c.medium.get_ref().as_str()) {
            return Err(self.at(
                c.medium.span(),
                f("medium"),
                format!("`{}` is not a medium; allowed: {}", c.medium.get_ref(), one_of(&MEDIA)),
            ));
        }
        Ok(Cable {
            name: c.name.clone(),
            medium: c.medium.get_ref().clone(),
            gbits: self.positive(&c.gbits, f("gbits"), false)?,
            reach_m: self.positive(&c.reach_m, f("reach_m"), false)?,
            usd: self.positive(&c.usd, f("usd"), true)?,
            watts: self.positive(&c.watts, f("watts"), true)?,
            kinds: c
                .kinds
                .iter()
                .map(|k| self.kind(k, f("kinds")))
                .collect::<Result<_, _>>()?,
            source: self.cited(&c.source, f("source"))?,
            date: c.date.clone(),
            mtbf: self.mtbf(&c.mtbf_h, &c.mtbf_source, &sc.span(), &f)?,
        })
    }

    /// A count of 1 to 100,000 GPUs.
    fn gpus(&self, v: &Spanned<i64>, field: String) -> Result<u32, InputError> {
        let x = *v.get_ref();
        if (1..=100_000).contains(&x) {
            Ok(x as u32)
        } else {
            Err(self.at(v.span(), field, format!("{x} is not allowed: use 1 to 100000 GPUs")))
        }
    }

    /// Server `i`, checked: its domain whole servers.
    fn server(&mut self, i: usize, ss: &Spanned<RawServer>) -> Result<Server, InputError> {
        let s = ss.get_ref();
        let f = |x: &str| format!("server[{i}].{x}");
        self.unique(&s.name, ss.span(), f("name"))?;
        let gpus = self.gpus(&s.gpus, f("gpus"))?;
        let domain = match &s.domain {
            None => gpus,
            Some(d) => self.gpus(d, f("domain"))?,
        };
        if domain % gpus != 0 {
            return Err(self.at(
                ss.span(),
                f("domain"),
                format!("a domain of {domain} GPUs is not whole servers of {gpus}"),
            ));
        }
        let gbits = self.positive(&s.scale_up_gbits, f("scale_up_gbits"), false)?;
        Ok(Server {
            name: s.name.clone(),
            gpus,
            domain,
            link: s.link.clone(),
            scale_up_gbits: gbits,
            latency_ns: self.positive(&s.latency_ns, f("latency_ns"), true)?,
            usd: match &s.usd {
                None => None,
                Some(u) => Some(self.positive(u, f("usd"), true)?),
            },
            watts: self.positive(&s.watts, f("watts"), true)?,
            source: self.cited(&s.source, f("source"))?,
            date: s.date.clone(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_parses_and_cites_every_part() {
        let c = Catalog::builtin();
        assert!(c.ports.len() >= 6 && c.switches.len() >= 4 && c.cables.len() >= 6);
        for s in c
            .ports
            .iter()
            .map(|p| &p.source)
            .chain(c.switches.iter().map(|s| &s.source))
            .chain(c.cables.iter().map(|c| &c.source))
        {
            assert!(s.len() > 20, "{s}");
        }
        // NICs at 200, 400 and 800 Gb/s.
        for g in [200.0, 400.0, 800.0] {
            assert!(
                c.ports
                    .iter()
                    .any(|p| p.gbits.total_cmp(&g).is_eq() && p.blocks.contains(&Block::Switch))
            );
        }
    }

    #[test]
    fn bad_catalog_values_name_the_line() {
        let text = DEFAULT.replacen("gbits = 400\nusd = 2188.0", "gbits = -400\nusd = 2188.0", 1);
        assert_ne!(text, DEFAULT);
        let e = Catalog::parse(&text, Path::new("c.toml")).unwrap_err();
        assert!(e.to_string().contains("gbits"), "{e}");
        assert!(e.line.is_some());
        let text = DEFAULT.replacen("kind = \"infiniband\"", "kind = \"carrier-pigeon\"", 1);
        let e = Catalog::parse(&text, Path::new("c.toml")).unwrap_err();
        assert!(
            e.to_string().contains("carrier-pigeon") && e.to_string().contains("allowed"),
            "{e}"
        );
    }
}
