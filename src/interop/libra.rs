//! LIBRA's input files, read exactly as LIBRA reads them (astra-sim/libra,
//! `src/*/..._parser.py`), with line-numbered errors.
//!
//! - Workload: ASTRA-sim 1.0 text, one layer per line, 12 whitespace-separated
//!   fields: name, a reserved field (-1), then for forward, input-grad and
//!   weight-grad in turn: compute time, collective type (`NONE`,
//!   `ALLREDUCE`, `REDUCESCATTER`, `ALLGATHER`, `ALLTOALL`, any case), size
//!   in bytes; and last an update time LIBRA does not use. Compute times are
//!   added to collective times in ns, as LIBRA does. Blank lines and `#`
//!   comments are skipped, and so is an ASTRA-sim 1.0 header (a one-word
//!   parallelism line, then the layer count), which LIBRA's files omit.
//! - Communicator YAML: `Forward`, `InputGrad`, `WeightGrad`, each a list of
//!   group sizes per dimension, -1 where a dimension is not involved.
//! - Network YAML: `Topology` (`Ring`, `FullyConnected`, `Switch`),
//!   `NpusCount`, `CostDimension` (the cost tier of each dimension).
//! - Cost-model YAML: per tier, `Link`, `Switch`, `Nic` in dollars per GB/s.
//!   As in LIBRA, every price must be positive and a switch dimension's tier
//!   must price all three.

use crate::error::{InputError, one_of};
use crate::model::cost::{CostModel, Tier};
use crate::model::fabric::{Block, Dim, Fabric};
use crate::model::workload::{CollectiveKind, Comm, Group, Layer, Phase, Workload};
use serde_yaml::Value;
use std::path::Path;

/// One layer of an ASTRA-sim 1.0 workload, before communicators are attached.
#[derive(Debug, Clone, PartialEq)]
pub struct TextLayer {
    /// Layer name.
    pub name: String,
    /// 1-based line in the file.
    pub line: usize,
    /// Forward, input-grad, weight-grad: compute ns and the collective, if any.
    pub phases: [(f64, Option<(CollectiveKind, f64)>); 3],
}

/// A LIBRA communicator file: the group of each phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Communicator {
    /// Forward, input-grad, weight-grad groups.
    pub groups: [Group; 3],
    /// The line each was read from.
    pub lines: [Option<usize>; 3],
}

impl Communicator {
    /// Checks every group against the fabric, naming the file's line.
    pub fn check(&self, fabric: &Fabric, file: &Path) -> Result<(), InputError> {
        for (i, g) in self.groups.iter().enumerate() {
            g.check(fabric)
                .map_err(|m| InputError::at(file, self.lines[i], COMM_KEYS[i], m.to_string()))?;
        }
        Ok(())
    }
}

const COMM_KEYS: [&str; 3] = ["Forward", "InputGrad", "WeightGrad"];
const FIELD_NAMES: [&str; 12] = [
    "name",
    "reserved",
    "forward compute time",
    "forward comm type",
    "forward comm size",
    "input-grad compute time",
    "input-grad comm type",
    "input-grad comm size",
    "weight-grad compute time",
    "weight-grad comm type",
    "weight-grad comm size",
    "update time",
];
const COMM_TYPES: [&str; 5] = ["NONE", "ALLREDUCE", "REDUCESCATTER", "ALLGATHER", "ALLTOALL"];

fn read_text(path: &Path, what: &str) -> Result<String, InputError> {
    crate::io::read_text(path, crate::io::MAX_TEXT_BYTES)
        .map_err(|e| InputError::at(path, None, "", format!("cannot read the {what}: {e}")))
}

/// Reads an ASTRA-sim 1.0 workload text file.
pub fn read_workload(path: &Path) -> Result<Vec<TextLayer>, InputError> {
    parse_workload(&read_text(path, "LIBRA workload")?, path)
}

/// Parses ASTRA-sim 1.0 workload text; `path` names it in errors.
fn parse_workload(text: &str, path: &Path) -> Result<Vec<TextLayer>, InputError> {
    let lines: Vec<(usize, Vec<&str>)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            (
                i + 1,
                l.split('#').next().unwrap_or("").split_whitespace().collect::<Vec<_>>(),
            )
        })
        .filter(|(_, f)| !f.is_empty())
        .collect();
    // Optional ASTRA-sim 1.0 header: a one-word parallelism line, then a count.
    let mut start = 0;
    let mut declared = None;
    if lines.len() >= 2 && lines[0].1.len() == 1 && lines[1].1.len() == 1 {
        let (count_line, count) = (lines[1].0, lines[1].1[0]);
        let n = count.parse::<usize>().map_err(|_| {
            InputError::at(
                path,
                Some(count_line),
                "layer count",
                format!(
                    "`{count}` is not a layer count (ASTRA-sim 1.0 header: parallelism, then the number of layers)"
                ),
            )
        })?;
        declared = Some((count_line, n));
        start = 2;
    }
    let mut layers = Vec::new();
    for (line, fields) in &lines[start..] {
        let line = *line;
        if fields.len() != 12 {
            return Err(InputError::at(
                path,
                Some(line),
                "layer",
                format!(
                    "{} fields found; an ASTRA-sim 1.0 layer has 12: {}",
                    fields.len(),
                    FIELD_NAMES.join(", ")
                ),
            ));
        }
        let num = |i: usize| -> Result<f64, InputError> {
            let v = fields[i].parse::<f64>().map_err(|_| {
                InputError::at(
                    path,
                    Some(line),
                    FIELD_NAMES[i],
                    format!("`{}` is not a number", fields[i]),
                )
            })?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(InputError::at(
                    path,
                    Some(line),
                    FIELD_NAMES[i],
                    format!("{v} is not allowed: use a value >= 0"),
                ));
            }
            Ok(v)
        };
        let mut phases = [(0.0, None), (0.0, None), (0.0, None)];
        for (p, phase) in phases.iter_mut().enumerate() {
            let base = 2 + 3 * p;
            let compute = num(base)?;
            let kind = match fields[base + 1].to_ascii_lowercase().as_str() {
                "none" => None,
                "allreduce" => Some(CollectiveKind::AllReduce),
                "reducescatter" => Some(CollectiveKind::ReduceScatter),
                "allgather" => Some(CollectiveKind::AllGather),
                "alltoall" => Some(CollectiveKind::AllToAll),
                other => {
                    return Err(InputError::at(
                        path,
                        Some(line),
                        FIELD_NAMES[base + 1],
                        format!("`{other}` is not a collective type; allowed: {}", one_of(&COMM_TYPES)),
                    ));
                }
            };
            let size = num(base + 2)?;
            // A collective of zero bytes takes no time in LIBRA's model.
            *phase = (compute, kind.filter(|_| size > 0.0).map(|k| (k, size)));
        }
        layers.push(TextLayer {
            name: fields[0].to_string(),
            line,
            phases,
        });
    }
    if let Some((line, n)) = declared
        && n != layers.len()
    {
        return Err(InputError::at(
            path,
            Some(line),
            "layer count",
            format!("the header declares {n} layers but {} follow", layers.len()),
        ));
    }
    if layers.is_empty() {
        return Err(InputError::at(path, None, "layer", "the workload has no layers"));
    }
    Ok(layers)
}

/// Gives every collective of `layers` its phase's group.
/// `groups[p]` is `None` when no communicator covers phase p.
pub(crate) fn attach_communicators(
    layers: &[TextLayer],
    groups: &[Option<Group>; 3],
    path: &Path,
) -> Result<Vec<Layer>, InputError> {
    let phase = |l: &TextLayer, p: usize| -> Result<Phase, InputError> {
        let (compute_ns, comm) = &l.phases[p];
        let comm = match comm {
            None => None,
            Some((kind, bytes)) => {
                let group = groups[p].clone().ok_or_else(|| {
                    InputError::at(
                        path,
                        Some(l.line),
                        FIELD_NAMES[3 + 3 * p],
                        format!("a {kind} needs a {} communicator, and none is given", COMM_KEYS[p]),
                    )
                })?;
                Some(Comm {
                    kind: *kind,
                    bytes: *bytes,
                    group,
                })
            }
        };
        Ok(Phase {
            compute_ns: *compute_ns,
            comm,
            ..Default::default()
        })
    };
    layers
        .iter()
        .map(|l| {
            Ok(Layer {
                name: l.name.clone(),
                forward: phase(l, 0)?,
                input_grad: phase(l, 1)?,
                weight_grad: phase(l, 2)?,
            })
        })
        .collect()
}

fn parse_yaml(text: &str, path: &Path) -> Result<serde_yaml::Mapping, InputError> {
    let v: Value = serde_yaml::from_str(text).map_err(|e| {
        let line = e.location().map(|l| l.line());
        InputError::at(path, line, "", format!("not valid YAML: {e}"))
    })?;
    match v {
        Value::Mapping(m) => Ok(m),
        _ => Err(InputError::at(
            path,
            None,
            "",
            "expected a YAML mapping of keys to values",
        )),
    }
}

/// 1-based line of a top-level YAML key.
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.strip_prefix(key).is_some_and(|r| r.trim_start().starts_with(':')))
        .map(|i| i + 1)
}

fn required<'a>(m: &'a serde_yaml::Mapping, key: &str, path: &Path) -> Result<&'a Value, InputError> {
    m.get(key)
        .ok_or_else(|| InputError::at(path, None, key, format!("missing key `{key}`")))
}

fn list<'a>(v: &'a Value, key: &str, text: &str, path: &Path) -> Result<&'a Vec<Value>, InputError> {
    v.as_sequence()
        .ok_or_else(|| InputError::at(path, key_line(text, key), key, "expected a list, e.g. [ 4, 8, 4, 32 ]"))
}

fn int_list(v: &Value, key: &str, text: &str, path: &Path) -> Result<Vec<i64>, InputError> {
    list(v, key, text, path)?
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_i64().ok_or_else(|| {
                InputError::at(
                    path,
                    key_line(text, key),
                    format!("{key}[{i}]"),
                    format!("`{}` is not an integer", yaml_str(x)),
                )
            })
        })
        .collect()
}

fn yaml_str(v: &Value) -> String {
    serde_yaml::to_string(v)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Reads a LIBRA communicator file.
pub fn read_communicator(path: &Path) -> Result<Communicator, InputError> {
    let text = read_text(path, "LIBRA communicator")?;
    let m = parse_yaml(&text, path)?;
    let mut groups = Vec::new();
    let mut lines = [None; 3];
    for (i, key) in COMM_KEYS.iter().enumerate() {
        let v = required(&m, key, path)?;
        let sizes = int_list(v, key, &text, path)?;
        lines[i] = key_line(&text, key);
        groups.push(Group::from_libra(&sizes).map_err(|e| InputError::at(path, lines[i], *key, e.to_string()))?);
    }
    let [f, ig, wg]: [Group; 3] = groups
        .try_into()
        .map_err(|_| InputError::at(path, None, "", "expected three communicators"))?;
    Ok(Communicator {
        groups: [f, ig, wg],
        lines,
    })
}

/// Reads a LIBRA network file into a fabric. Dimensions are named after
/// their cost tier without its `Inter` prefix (`InterPod` -> `pod`); links
/// get no latency, since LIBRA models none.
pub fn read_network(path: &Path) -> Result<Fabric, InputError> {
    let text = read_text(path, "LIBRA network")?;
    let m = parse_yaml(&text, path)?;
    let topo = list(required(&m, "Topology", path)?, "Topology", &text, path)?;
    let npus = int_list(required(&m, "NpusCount", path)?, "NpusCount", &text, path)?;
    let tiers = list(required(&m, "CostDimension", path)?, "CostDimension", &text, path)?;
    if npus.len() != topo.len() {
        return Err(InputError::at(
            path,
            key_line(&text, "NpusCount"),
            "NpusCount",
            format!("{} entries but Topology has {}", npus.len(), topo.len()),
        ));
    }
    if tiers.len() != topo.len() {
        return Err(InputError::at(
            path,
            key_line(&text, "CostDimension"),
            "CostDimension",
            format!("{} entries but Topology has {}", tiers.len(), topo.len()),
        ));
    }
    if topo.is_empty() {
        return Err(InputError::at(
            path,
            key_line(&text, "Topology"),
            "Topology",
            "the network needs at least one dimension",
        ));
    }
    let mut dims: Vec<Dim> = Vec::new();
    for d in 0..topo.len() {
        let name = topo[d].as_str().unwrap_or_default();
        let block = match name {
            "Ring" => Block::Ring,
            "FullyConnected" => Block::FullyConnected,
            "Switch" => Block::Switch,
            _ => {
                return Err(InputError::at(
                    path,
                    key_line(&text, "Topology"),
                    format!("Topology[{d}]"),
                    format!(
                        "`{}` is not a building block; allowed: {}",
                        yaml_str(&topo[d]),
                        one_of(&["Ring", "FullyConnected", "Switch"])
                    ),
                ));
            }
        };
        if npus[d] < 2 || npus[d] > i64::from(u32::MAX) {
            return Err(InputError::at(
                path,
                key_line(&text, "NpusCount"),
                format!("NpusCount[{d}]"),
                format!(
                    "{} NPUs is not allowed: a dimension has from 2 to 4294967295 NPUs",
                    npus[d]
                ),
            ));
        }
        let tier = tiers[d]
            .as_str()
            .ok_or_else(|| {
                InputError::at(
                    path,
                    key_line(&text, "CostDimension"),
                    format!("CostDimension[{d}]"),
                    "expected a tier name",
                )
            })?
            .to_string();
        let short = tier.strip_prefix("Inter").unwrap_or(&tier).to_ascii_lowercase();
        let name = if short.is_empty() || dims.iter().any(|x| x.name == short) {
            format!("dim{d}")
        } else {
            short
        };
        dims.push(Dim {
            name,
            block,
            npus: npus[d] as u32,
            latency_ns: 0.0,
            min_gbps: None,
            max_gbps: None,
            tier,
            options_gbps: None,
            fat_tree: None,
        });
    }
    Ok(Fabric { dims })
}

/// Reads a LIBRA cost-model file.
pub fn read_cost_model(path: &Path) -> Result<CostModel, InputError> {
    let text = read_text(path, "LIBRA cost model")?;
    let m = parse_yaml(&text, path)?;
    let mut model = CostModel::default();
    for (k, v) in &m {
        let tier = k.as_str().unwrap_or_default().to_string();
        let line = key_line(&text, &tier);
        let elements = v
            .as_mapping()
            .ok_or_else(|| InputError::at(path, line, &tier, "expected Link, Switch and Nic prices in $ per GB/s"))?;
        let mut t = Tier::default();
        for (ek, ev) in elements {
            let element = ek.as_str().unwrap_or_default();
            let field = format!("{tier}.{element}");
            let eline = text
                .lines()
                .enumerate()
                .skip(line.unwrap_or(0))
                .find(|(_, l)| l.trim_start().starts_with(element))
                .map(|(i, _)| i + 1);
            let price = ev.as_f64().ok_or_else(|| {
                InputError::at(
                    path,
                    eline,
                    &field,
                    format!("`{}` is not a price in $ per GB/s", yaml_str(ev)),
                )
            })?;
            if !(price.is_finite() && price > 0.0) {
                return Err(InputError::at(
                    path,
                    eline,
                    &field,
                    format!("{price} is not allowed: a price is positive"),
                ));
            }
            match element {
                "Link" => t.link_usd_per_gbps = price,
                "Switch" => t.switch_usd_per_gbps = price,
                "Nic" => t.nic_usd_per_gbps = price,
                _ => {
                    return Err(InputError::at(
                        path,
                        eline,
                        &field,
                        format!(
                            "`{element}` is not a cost element; allowed: {}",
                            one_of(&["Link", "Switch", "Nic"])
                        ),
                    ));
                }
            }
        }
        model.tiers.insert(tier, t);
    }
    Ok(model)
}

/// LIBRA's four inputs, read and checked against each other.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The workload file's stem, lower case with `-` for `_`.
    pub name: String,
    /// The network.
    pub fabric: Fabric,
    /// The cost model.
    pub cost: CostModel,
    /// The workload with its communicators attached.
    pub workload: Workload,
    /// FNV-1a hash of the four files' bytes, in order.
    pub hash: String,
}

/// The four LIBRA inputs, checked against each other: every dimension's tier
/// is priced (Link always; Switch and Nic on switch dimensions, as LIBRA
/// requires), and every communicator fits the network.
pub(crate) fn read_inputs(
    network: &Path,
    workload: &Path,
    communicator: &Path,
    cost: &Path,
) -> Result<Inputs, InputError> {
    let fabric = read_network(network)?;
    let cost_model = read_cost_model(cost)?;
    let cost_text = read_text(cost, "LIBRA cost model")?;
    for d in &fabric.dims {
        let Some(t) = cost_model.tiers.get(&d.tier) else {
            let known: Vec<&str> = cost_model.tiers.keys().map(String::as_str).collect();
            return Err(InputError::at(
                cost,
                None,
                &d.tier,
                format!(
                    "the network's cost dimension `{}` is not priced here; priced: {}",
                    d.tier,
                    one_of(&known)
                ),
            ));
        };
        let mut missing = Vec::new();
        if t.link_usd_per_gbps == 0.0 {
            missing.push("Link");
        }
        if d.block == Block::Switch {
            if t.switch_usd_per_gbps == 0.0 {
                missing.push("Switch");
            }
            if t.nic_usd_per_gbps == 0.0 {
                missing.push("Nic");
            }
        }
        if !missing.is_empty() {
            return Err(InputError::at(
                cost,
                key_line(&cost_text, &d.tier),
                &d.tier,
                format!(
                    "dimension `{}` ({}) needs a {} price",
                    d.name,
                    d.block,
                    missing.join(" and ")
                ),
            ));
        }
    }
    let comm = read_communicator(communicator)?;
    comm.check(&fabric, communicator)?;
    let text_layers = read_workload(workload)?;
    let layers = attach_communicators(&text_layers, &comm.groups.clone().map(Some), workload)?;
    let name = workload.file_stem().map_or_else(
        || "libra".to_string(),
        |s| s.to_string_lossy().to_ascii_lowercase().replace('_', "-"),
    );
    let hash = crate::io::fnv1a64(
        &[network, workload, communicator, cost]
            .iter()
            .flat_map(|f| crate::io::read_limited(f, crate::io::MAX_TEXT_BYTES).unwrap_or_default())
            .collect::<Vec<u8>>(),
    );
    Ok(Inputs {
        name,
        fabric,
        cost: cost_model,
        workload: Workload { layers },
        hash,
    })
}
