//! MSCCL-IR XML (microsoft/msccl-tools, what MSCCLang compiles to) into a
//! schedule, so MSCCLang algorithms can be simulated and costed ([`parse`],
//! errors naming the line: [`MscclError`]); and a schedule back into
//! MSCCL-IR ([`write()`], refusals: [`WriteError`]).
//!
//! `<algo ngpus nchunksperloop coll inplace>` holds `<gpu id>`s, which hold
//! threadblocks `<tb id send recv chan>` of ordered `<step s type srcbuf
//! srcoff dstbuf dstoff cnt depid deps>`. Buffers `i` and `o` are one chunk
//! space here (offsets in chunks of the whole buffer: `nchunksperloop`
//! chunks, `K = nchunksperloop / ngpus` per GPU; offset `j` is dimsum's chunk
//! `(j mod K) * ngpus + j / K`, so GPU g's own block is offset `g K ..`);
//! scratch buffers (`s`) have no place in dimsum's IR and are refused.
//!
//! Translation:
//! - a sending step (`s`, `rcs`, `rrs`, `rrcs`) on GPU g's threadblock with
//!   `send = p` is matched, first come first served per channel, with the
//!   next receiving step (`r`, `rcs`, `rrc`, `rrs`, `rrcs`) on GPU p's
//!   threadblock with `recv = g`: one transfer of `cnt` chunks from
//!   `srcoff`, a reduction when the receiver reduces (`rr*`), else a send;
//!   the receiver must land them at the same chunks;
//! - a step starts when the step before it in its threadblock has finished,
//!   and when step `deps` of threadblock `depid` has: a transfer depends on
//!   the transfers of those steps, and a received transfer is applied only
//!   after them (`after`, the receive buffer MSCCL's runtime has);
//! - `cpy` and `re` within the same chunks and `nop` only order; a copy or a
//!   local reduction between different chunks is refused (the IR keeps
//!   chunk identities).

use crate::model::workload::CollectiveKind;
use crate::schedule::{Op, Run, Schedule, SmallVec, Transfer};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

/// Why an MSCCL-IR file cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct MscclError {
    /// 1-based line of the element.
    pub line: u32,
    /// What is wrong, naming the GPU, threadblock and step.
    pub message: String,
}

#[derive(Debug, Clone)]
struct Step {
    kind: String,
    src_off: u32,
    dst_off: u32,
    src_buf: String,
    dst_buf: String,
    cnt: u32,
    dep: Option<(usize, usize)>,
    line: u32,
    /// dimsum's own attributes, when dimsum wrote the file.
    exact: Option<Exact>,
}

/// A transfer as dimsum wrote it (on the first step that sends it).
#[derive(Debug, Clone)]
struct Exact {
    index: usize,
    op: Op,
    chunks: Vec<Run>,
    deps: Vec<u32>,
    after: Vec<u32>,
    route: Vec<u32>,
}

fn list(text: Option<&str>) -> Option<Vec<u32>> {
    match text {
        None => Some(Vec::new()),
        Some(t) if t.trim().is_empty() => Some(Vec::new()),
        Some(t) => t.split(',').map(|x| x.trim().parse().ok()).collect(),
    }
}

/// Why a step's dimsum attributes (`dimsum_transfer`, `dimsum_op`, ...)
/// cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum ExactError {
    /// `dimsum_transfer` is not a whole number.
    #[error("dimsum_transfer `{0}` is not an index")]
    Index(String),
    /// `dimsum_op` is absent or not one of the three.
    #[error("dimsum_op {0:?} is not send, reduce or copy")]
    Op(Option<String>),
    /// The attribute is not a comma-separated list of numbers.
    #[error("{0} is not a list of numbers")]
    List(&'static str),
    /// `dimsum_chunks` does not hold whole runs.
    #[error("dimsum_chunks is not start, count, stride triples")]
    Triples,
}

/// The transfer dimsum wrote on step `st`, if it carries one.
fn exact_of(st: roxmltree::Node) -> Result<Option<Exact>, ExactError> {
    let Some(index) = st.attribute("dimsum_transfer") else {
        return Ok(None);
    };
    let index = index.parse().map_err(|_| ExactError::Index(index.into()))?;
    let op = match st.attribute("dimsum_op") {
        Some("send") => Op::Send,
        Some("reduce") => Op::Reduce,
        Some("copy") => Op::Copy,
        other => return Err(ExactError::Op(other.map(str::to_string))),
    };
    let runs = list(st.attribute("dimsum_chunks")).ok_or(ExactError::List("dimsum_chunks"))?;
    if runs.len() % 3 != 0 {
        return Err(ExactError::Triples);
    }
    let field = |a: &'static str| list(st.attribute(a)).ok_or(ExactError::List(a));
    Ok(Some(Exact {
        index,
        op,
        chunks: runs
            .chunks(3)
            .map(|c| Run {
                start: c[0],
                count: c[1],
                stride: c[2],
            })
            .collect(),
        deps: field("dimsum_deps")?,
        after: field("dimsum_after")?,
        route: field("dimsum_route")?,
    }))
}

#[derive(Debug, Clone)]
struct Tb {
    send: Option<u32>,
    recv: Option<u32>,
    chan: i64,
    steps: Vec<Step>,
}

fn sends(kind: &str) -> bool {
    matches!(kind, "s" | "rcs" | "rrs" | "rrcs")
}

fn receives(kind: &str) -> bool {
    matches!(kind, "r" | "rcs" | "rrc" | "rrs" | "rrcs")
}

/// Parses MSCCL-IR XML into a schedule.
pub fn parse(text: &str) -> Result<Schedule, MscclError> {
    let doc = roxmltree::Document::parse(text).map_err(|e| MscclError {
        line: e.pos().row,
        message: format!("not XML: {e}"),
    })?;
    let lines = Lines::new(text);
    let algo = doc.root_element();
    let head = lines.algo(algo)?;
    let gpus = lines.gpus(algo, &head)?;
    let queue = receive_queues(&gpus)?;
    let mut s = Schedule::new(
        algo.attribute("name").unwrap_or("msccl").to_string(),
        head.kind,
        head.n,
        head.k,
    );
    let matched = match_sends(&gpus, queue, &mut s, head.n, head.k)?;
    check_local_steps(&gpus)?;
    // Written by dimsum: its own attributes give the schedule back exactly.
    if let Some(count) = algo.attribute("dimsum_transfers") {
        return lines.exact_schedule(algo, count, &gpus, s);
    }
    set_dependencies(&gpus, &matched, &mut s)?;
    s.check().map_err(|e| MscclError {
        line: 1,
        message: e.to_string(),
    })?;
    Ok(s)
}

/// What `<algo>` says: GPUs, chunks and the collective.
struct Algo {
    /// `ngpus`.
    ngpus: i64,
    /// `nchunksperloop`.
    nchunks: i64,
    /// NPUs of the schedule (`ngpus`).
    n: u32,
    /// Chunks per NPU (`nchunksperloop / ngpus`).
    k: u32,
    /// The collective.
    kind: CollectiveKind,
}

/// Where each line of the text starts, to name an element's line in
/// errors (`text_pos_at` scans from the start of the text, which is
/// quadratic over a large file); the reading of elements, which needs it.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        Lines {
            starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        }
    }

    /// The 1-based line of `n`.
    fn of(&self, n: roxmltree::Node) -> u32 {
        self.starts.partition_point(|&x| x <= n.range().start) as u32
    }

    /// An error at `n`'s line.
    fn bad(&self, n: roxmltree::Node, message: String) -> MscclError {
        MscclError {
            line: self.of(n),
            message,
        }
    }

    /// `n`'s integer attribute `a`.
    fn num(&self, n: roxmltree::Node, a: &str) -> Result<i64, MscclError> {
        let v = n
            .attribute(a)
            .ok_or_else(|| self.bad(n, format!("<{}> has no `{a}`", n.tag_name().name())))?;
        v.trim()
            .parse::<i64>()
            .map_err(|_| self.bad(n, format!("`{a}` is `{v}`, not an integer")))
    }

    /// The root `<algo>`'s attributes.
    fn algo(&self, algo: roxmltree::Node) -> Result<Algo, MscclError> {
        if algo.tag_name().name() != "algo" {
            return Err(self.bad(algo, format!("the root is <{}>, not <algo>", algo.tag_name().name())));
        }
        let ngpus = self.num(algo, "ngpus")?;
        let nchunks = self.num(algo, "nchunksperloop")?;
        if ngpus < 2 || nchunks < 1 || nchunks % ngpus != 0 {
            return Err(self.bad(
                algo,
                format!(
                    "ngpus {ngpus} and nchunksperloop {nchunks}: need at least 2 GPUs and a whole number of chunks per GPU"
                ),
            ));
        }
        // Sizes before anything is allocated by them: every GPU is listed
        // (so ngpus is at most the file's <gpu> count), and the schedule's
        // NPU-chunk pairs stay within what a replay may hold (2^29).
        let listed = algo.children().filter(|c| c.has_tag_name("gpu")).count() as i64;
        if ngpus != listed {
            return Err(self.bad(
                algo,
                format!("ngpus is {ngpus} but the file lists {listed} <gpu>: list each GPU once"),
            ));
        }
        if i128::from(ngpus) * i128::from(nchunks) > 1 << 29 {
            return Err(self.bad(
                algo,
                format!(
                    "ngpus {ngpus} x nchunksperloop {nchunks} NPU-chunk pairs: the limit is 2^29 (the replay keeps state for each)"
                ),
            ));
        }
        let coll = algo.attribute("coll").unwrap_or("");
        let kind = match coll {
            "allreduce" => CollectiveKind::AllReduce,
            "allgather" => CollectiveKind::AllGather,
            "reducescatter" | "reduce_scatter" => CollectiveKind::ReduceScatter,
            other => {
                return Err(self.bad(
                    algo,
                    format!("coll `{other}`: dimsum reads allreduce, allgather and reducescatter"),
                ));
            }
        };
        Ok(Algo {
            ngpus,
            nchunks,
            n: ngpus as u32,
            k: (nchunks / ngpus) as u32,
            kind,
        })
    }

    /// Every GPU's threadblocks, by GPU id (each id once, none missing).
    fn gpus(&self, algo: roxmltree::Node, head: &Algo) -> Result<Vec<Vec<Tb>>, MscclError> {
        let mut gpus: Vec<Vec<Tb>> = vec![Vec::new(); head.n as usize];
        let mut seen = vec![false; head.n as usize];
        for g in algo.children().filter(|c| c.has_tag_name("gpu")) {
            let id = self.num(g, "id")?;
            if !(0..head.ngpus).contains(&id) || seen[id as usize] {
                return Err(self.bad(
                    g,
                    format!("gpu id {id}: ids run from 0 to {} once each", head.ngpus - 1),
                ));
            }
            seen[id as usize] = true;
            gpus[id as usize] = self.gpu(g, id, head)?;
        }
        if let Some(g) = seen.iter().position(|s| !s) {
            return Err(self.bad(algo, format!("gpu {g} is missing")));
        }
        Ok(gpus)
    }

    /// GPU `id`'s threadblocks, in id order (ids 0, 1, 2, ...), every
    /// cross-threadblock dependency naming a step that exists.
    fn gpu(&self, g: roxmltree::Node, id: i64, head: &Algo) -> Result<Vec<Tb>, MscclError> {
        let mut tbs: Vec<(i64, Tb)> = Vec::new();
        for tb in g.children().filter(|c| c.has_tag_name("tb")) {
            tbs.push(self.threadblock(tb, id, head)?);
        }
        tbs.sort_by_key(|t| t.0);
        if tbs.iter().enumerate().any(|(i, t)| t.0 != i as i64) {
            return Err(self.bad(g, format!("gpu {id}: threadblock ids must run 0, 1, 2, ...")));
        }
        let tbs: Vec<Tb> = tbs.into_iter().map(|t| t.1).collect();
        for (t, tb) in tbs.iter().enumerate() {
            for (i, st) in tb.steps.iter().enumerate() {
                if let Some((dt, ds)) = st.dep
                    && tbs.get(dt).is_none_or(|x| ds >= x.steps.len())
                {
                    return Err(MscclError {
                        line: st.line,
                        message: format!(
                            "gpu {id}: tb {t} step {i} depends on tb {dt} step {ds}, which does not exist"
                        ),
                    });
                }
            }
        }
        Ok(tbs)
    }

    /// A `<tb>` of GPU `id`: its id and the threadblock (its steps read
    /// first, then its id and peers).
    fn threadblock(&self, tb: roxmltree::Node, id: i64, head: &Algo) -> Result<(i64, Tb), MscclError> {
        let peer = |a: &str| -> Result<Option<u32>, MscclError> {
            let v = self.num(tb, a)?;
            match v {
                -1 => Ok(None),
                v if (0..head.ngpus).contains(&v) && v != id => Ok(Some(v as u32)),
                v => Err(self.bad(tb, format!("gpu {id}: tb `{a}` = {v} is not another GPU"))),
            }
        };
        let mut steps = Vec::new();
        for st in tb.children().filter(|c| c.has_tag_name("step")) {
            let step = self.step(st, id, steps.len(), head)?;
            steps.push(step);
        }
        Ok((
            self.num(tb, "id")?,
            Tb {
                send: peer("send")?,
                recv: peer("recv")?,
                chan: tb.attribute("chan").and_then(|c| c.parse().ok()).unwrap_or(0),
                steps,
            },
        ))
    }

    /// A `<step>` of GPU `id`, expected to be its threadblock's step
    /// `expected`: a known type, in-range offsets, buffers `i` or `o` only.
    fn step(&self, st: roxmltree::Node, id: i64, expected: usize, head: &Algo) -> Result<Step, MscclError> {
        let s = self.num(st, "s")?;
        if s != expected as i64 {
            return Err(self.bad(st, format!("gpu {id}: step s = {s} out of order (expected {expected})")));
        }
        let kind = st.attribute("type").unwrap_or("").to_string();
        if !STEP_TYPES.contains(&kind.as_str()) {
            return Err(self.bad(
                st,
                format!("gpu {id}: step {s}: type `{kind}` is not one of s, r, rcs, rrc, rrs, rrcs, cpy, re, nop"),
            ));
        }
        let depid = self.num(st, "depid")?;
        let deps = self.num(st, "deps")?;
        let off = |a: &str| -> Result<u32, MscclError> {
            let v = self.num(st, a)?;
            u32::try_from(v).map_err(|_| self.bad(st, format!("gpu {id}: step {s}: `{a}` = {v} is negative")))
        };
        let buf = |a: &str| st.attribute(a).unwrap_or("i").to_string();
        let step = Step {
            src_off: if kind == "nop" { 0 } else { off("srcoff")? },
            dst_off: if kind == "nop" { 0 } else { off("dstoff")? },
            src_buf: buf("srcbuf"),
            dst_buf: buf("dstbuf"),
            cnt: if kind == "nop" { 0 } else { off("cnt")? },
            dep: (depid >= 0 && deps >= 0).then_some((depid as usize, deps as usize)),
            line: self.of(st),
            exact: exact_of(st).map_err(|m| self.bad(st, format!("gpu {id}: step {s}: {m}")))?,
            kind,
        };
        let nchunks = head.nchunks;
        for (b, o) in [(&step.src_buf, step.src_off), (&step.dst_buf, step.dst_off)] {
            if step.kind != "nop" && b != "i" && b != "o" {
                return Err(self.bad(
                    st,
                    format!(
                        "gpu {id}: step {s}: buffer `{b}`: scratch buffers have no place in dimsum's IR (only i and o)"
                    ),
                ));
            }
            if step.kind != "nop" && u64::from(o) + u64::from(step.cnt) > nchunks as u64 {
                return Err(self.bad(
                    st,
                    format!(
                        "gpu {id}: step {s}: chunks {o}..{} past the {nchunks} of the buffer",
                        o + step.cnt
                    ),
                ));
            }
        }
        Ok(step)
    }

    /// The schedule dimsum's own attributes give (`count` transfers, each
    /// on the first step that sends it).
    fn exact_schedule(
        &self,
        algo: roxmltree::Node,
        count: &str,
        gpus: &[Vec<Tb>],
        mut s: Schedule,
    ) -> Result<Schedule, MscclError> {
        let count: usize = count
            .parse()
            .map_err(|_| self.bad(algo, format!("dimsum_transfers `{count}` is not a count")))?;
        let mut exact: Vec<Option<Transfer>> = vec![None; count];
        for (g, tbs) in gpus.iter().enumerate() {
            for tb in tbs {
                for st in &tb.steps {
                    let Some(x) = &st.exact else { continue };
                    let dst = if x.op == Op::Copy { Some(g as u32) } else { tb.send };
                    let (Some(dst), Some(slot)) = (dst, exact.get_mut(x.index)) else {
                        return Err(MscclError {
                            line: st.line,
                            message: format!("gpu {g}: dimsum_transfer {} has no place among {count}", x.index),
                        });
                    };
                    *slot = Some(Transfer {
                        src: g as u32,
                        dst,
                        op: x.op,
                        chunks: x.chunks.clone().into(),
                        deps: x.deps.clone().into(),
                        route: x.route.clone().into(),
                        after: x.after.clone().into(),
                        bytes: None,
                        duration_ns: 0.0,
                    });
                }
            }
        }
        s.transfers = exact
            .into_iter()
            .enumerate()
            .map(|(i, t)| t.ok_or_else(|| self.bad(algo, format!("dimsum transfer {i} is on no step"))))
            .collect::<Result<_, _>>()?;
        s.topology = algo.attribute("dimsum_topology").unwrap_or("").to_string();
        s.check().map_err(|e| MscclError {
            line: 1,
            message: e.to_string(),
        })?;
        Ok(s)
    }
}

/// The step types MSCCL-IR has.
/// The most bytes an MSCCL-IR file may hold when read: 1 GiB.
pub const MAX_XML_BYTES: u64 = 1 << 30;

const STEP_TYPES: [&str; 9] = ["s", "r", "rcs", "rrc", "rrs", "rrcs", "cpy", "re", "nop"];

/// A step's place: (GPU, threadblock, step).
type Key = (usize, usize, usize);

/// Receives waiting for their send, per (sender, receiver, channel): the
/// receiver's (threadblock, step), in order.
type Queues = HashMap<(u32, u32, i64), VecDeque<(usize, usize)>>;

/// Every receiving step, queued for its sender.
fn receive_queues(gpus: &[Vec<Tb>]) -> Result<Queues, MscclError> {
    let mut queue: Queues = HashMap::new();
    for (g, tbs) in gpus.iter().enumerate() {
        for (t, tb) in tbs.iter().enumerate() {
            for (i, st) in tb.steps.iter().enumerate() {
                if receives(&st.kind) {
                    let from = tb.recv.ok_or_else(|| MscclError {
                        line: st.line,
                        message: format!("gpu {g}: tb {t} step {i} ({}) receives but the tb has recv=-1", st.kind),
                    })?;
                    queue.entry((from, g as u32, tb.chan)).or_default().push_back((t, i));
                }
            }
        }
    }
    Ok(queue)
}

/// The transfer of each step: the one it sends, the one it receives.
struct Matched {
    sent: HashMap<Key, u32>,
    got: HashMap<Key, u32>,
}

/// Every sending step matched, first come first served, with the next
/// receive queued for it (`queue`): one transfer of `s` each, on `n` GPUs
/// of `k` chunks each. Every receive must be matched.
fn match_sends(gpus: &[Vec<Tb>], mut queue: Queues, s: &mut Schedule, n: u32, k: u32) -> Result<Matched, MscclError> {
    let chunk = |j: u32| (j % k) * n + j / k;
    let mut m = Matched {
        sent: HashMap::new(),
        got: HashMap::new(),
    };
    for (g, tbs) in gpus.iter().enumerate() {
        for (t, tb) in tbs.iter().enumerate() {
            for (i, st) in tb.steps.iter().enumerate() {
                if !sends(&st.kind) {
                    continue;
                }
                let to = tb.send.ok_or_else(|| MscclError {
                    line: st.line,
                    message: format!("gpu {g}: tb {t} step {i} ({}) sends but the tb has send=-1", st.kind),
                })?;
                let (rt, ri) = queue
                    .get_mut(&(g as u32, to, tb.chan))
                    .and_then(|q| q.pop_front())
                    .ok_or_else(|| MscclError {
                        line: st.line,
                        message: format!(
                            "gpu {g}: tb {t} step {i} sends to gpu {to} (channel {}), which has no receive left for it",
                            tb.chan
                        ),
                    })?;
                let rs = &gpus[to as usize][rt].steps[ri];
                // A relaying step sends what it received, from its destination.
                let from_off = if st.kind == "s" { st.src_off } else { st.dst_off };
                if rs.cnt != st.cnt || rs.dst_off != from_off {
                    return Err(MscclError {
                        line: rs.line,
                        message: format!(
                            "gpu {to}: tb {rt} step {ri} receives {} chunks at {} but gpu {g} sends {} from {from_off}: dimsum's IR keeps chunk identities",
                            rs.cnt, rs.dst_off, st.cnt
                        ),
                    });
                }
                let op = if rs.kind.starts_with("rr") {
                    Op::Reduce
                } else {
                    Op::Send
                };
                let chunks = (from_off..from_off + st.cnt).map(|j| Run::range(chunk(j), 1)).collect();
                let id = s.transfers.len() as u32;
                s.transfers.push(Transfer {
                    src: g as u32,
                    dst: to,
                    op,
                    chunks,
                    deps: SmallVec::new(),
                    route: SmallVec::new(),
                    after: SmallVec::new(),
                    bytes: None,
                    duration_ns: 0.0,
                });
                m.sent.insert((g, t, i), id);
                m.got.insert((to as usize, rt, ri), id);
            }
        }
    }
    if let Some((&(from, to, chan), q)) = queue.iter().find(|(_, q)| !q.is_empty()) {
        let (t, i) = q[0];
        return Err(MscclError {
            line: gpus[to as usize][t].steps[i].line,
            message: format!(
                "gpu {to}: tb {t} step {i} receives from gpu {from} (channel {chan}), which never sends it"
            ),
        });
    }
    Ok(m)
}

/// Local steps must not move data between chunks.
fn check_local_steps(gpus: &[Vec<Tb>]) -> Result<(), MscclError> {
    for (g, tbs) in gpus.iter().enumerate() {
        for (t, tb) in tbs.iter().enumerate() {
            for (i, st) in tb.steps.iter().enumerate() {
                if (st.kind == "cpy" || st.kind == "re") && st.src_off != st.dst_off {
                    return Err(MscclError {
                        line: st.line,
                        message: format!(
                            "gpu {g}: tb {t} step {i}: a local {} from chunk {} to chunk {}: dimsum's IR keeps chunk identities",
                            st.kind, st.src_off, st.dst_off
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Every transfer's `deps` (what its sending step waits for; a relay also
/// what it received in the same step) and `after` (what its receiving
/// step waits for).
fn set_dependencies(gpus: &[Vec<Tb>], m: &Matched, s: &mut Schedule) -> Result<(), MscclError> {
    let mut w = Waits {
        gpus,
        sent: &m.sent,
        got: &m.got,
        memo: HashMap::new(),
    };
    // Settle every step in threadblock order first, so the recursion only
    // follows cross-threadblock dependencies (long threadblocks stay flat).
    for (g, tbs) in gpus.iter().enumerate() {
        for (t, tb) in tbs.iter().enumerate() {
            for i in 0..tb.steps.len() {
                for mode in [false, true] {
                    w.done((g, t, i), mode, 0)?;
                }
            }
        }
    }
    for (g, tbs) in gpus.iter().enumerate() {
        for (t, tb) in tbs.iter().enumerate() {
            for i in 0..tb.steps.len() {
                let key = (g, t, i);
                if let Some(&id) = m.got.get(&key) {
                    // Applied once the receiving step may run.
                    let v = w.waits(key, true, 0)?;
                    s.transfers[id as usize].after = v.into_iter().filter(|&x| x != id).collect();
                }
                if let Some(&id) = m.sent.get(&key) {
                    let v = w.waits(key, false, 0)?;
                    let mut deps: Vec<u32> = v.into_iter().filter(|&x| x != id).collect();
                    // A relay sends what it received in the same step.
                    if let Some(&r) = m.got.get(&key) {
                        deps.push(r);
                    }
                    deps.sort_unstable();
                    deps.dedup();
                    s.transfers[id as usize].deps = deps.into();
                }
            }
        }
    }
    Ok(())
}

/// The transfers a step waits for: the steps before it in its tb and its
/// cross-tb dependency, through nops, copies and local reductions. A
/// step that receives is done when its data, and everything before it in
/// the threadblock, has landed. A step that only sends is done, for a
/// later send, when it could start (sends leave in order on their links
/// anyway; waiting for their landing would deadlock exchanges), and, for a
/// later receive's buffer, when its data has left (its own transfer's
/// arrival: `after`).
struct Waits<'a> {
    gpus: &'a [Vec<Tb>],
    sent: &'a HashMap<Key, u32>,
    got: &'a HashMap<Key, u32>,
    /// Per (step, for a receive's buffer): the transfers it is done after.
    memo: HashMap<(Key, bool), Vec<u32>>,
}

impl Waits<'_> {
    /// The transfers after which step `key` is done (`for_after`: for a
    /// later receive's buffer), sorted.
    fn done(&mut self, key: Key, for_after: bool, depth: usize) -> Result<Vec<u32>, MscclError> {
        if let Some(v) = self.memo.get(&(key, for_after)) {
            return Ok(v.clone());
        }
        let (g, t, i) = key;
        let st = self.gpus[g]
            .get(t)
            .and_then(|tb| tb.steps.get(i))
            .ok_or_else(|| MscclError {
                line: 0,
                message: format!("gpu {g}: a dependency on tb {t} step {i}, which does not exist"),
            })?;
        if depth > 10_000 {
            return Err(MscclError {
                line: st.line,
                message: format!("gpu {g}: tb {t} step {i} is in a dependency cycle"),
            });
        }
        // A threadblock finishes its steps in order: a step is done once
        // what it stands for and everything before it in the tb is.
        let mut own = self.waits(key, for_after, depth + 1)?;
        let stands_for = match (self.got.get(&key), self.sent.get(&key)) {
            (Some(&r), _) => Some(r),
            (None, Some(&x)) if for_after => Some(x),
            _ => None,
        };
        if let Some(x) = stands_for
            && let Err(at) = own.binary_search(&x)
        {
            own.insert(at, x);
        }
        self.memo.insert((key, for_after), own.clone());
        Ok(own)
    }

    /// The transfers step `key` waits for before it starts, sorted.
    fn waits(&mut self, key: Key, for_after: bool, depth: usize) -> Result<Vec<u32>, MscclError> {
        let (g, t, i) = key;
        let gpus = self.gpus;
        let st = &gpus[g][t].steps[i];
        let mut out = Vec::new();
        if i > 0 {
            out.extend(self.done((g, t, i - 1), for_after, depth + 1)?);
        }
        if let Some((dt, ds)) = st.dep {
            out.extend(self.done((g, dt, ds), for_after, depth + 1)?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

/// Why a schedule cannot be written as MSCCL-IR.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WriteError {
    /// The schedule was read from another producer's trace: it has no
    /// chunks to write.
    #[error("{}", super::UNTRACKED)]
    Untracked,
    /// MSCCL-IR (as written here) has no such collective.
    #[error("MSCCL-IR has no {} here: all-reduce, all-gather and reduce-scatter", .0.name())]
    Collective(CollectiveKind),
    /// A transfer depends on one that arrives at neither of its GPUs.
    #[error(
        "transfer {transfer} ({src} -> {dst}) depends on transfer {dep} ({dep_src} -> {dep_dst}), which arrives at neither of its GPUs"
    )]
    DepElsewhere {
        /// The waiting transfer.
        transfer: usize,
        /// Its sender.
        src: u32,
        /// Its receiver.
        dst: u32,
        /// The transfer it waits for.
        dep: u32,
        /// That one's sender.
        dep_src: u32,
        /// That one's receiver.
        dep_dst: u32,
    },
}

/// A schedule as MSCCL-IR XML: on every GPU one threadblock per peer it
/// sends to (`s` steps) and one per peer it receives from (`r`, or `rrc`
/// for a reduction), plus one for local copies (`cpy`); steps in transfer
/// order, a transfer's chunks cut into contiguous offset ranges; each
/// dependency a `nop` step with `depid`/`deps` before the step that waits
/// (on the sender for data that arrived there, on the receiver for the
/// receiver's earlier phases and its receive buffer). dimsum's own
/// attributes (`dimsum_*`) let [`parse`] give the same schedule back;
/// MSCCL's runtime ignores attributes it does not know.
pub fn write(s: &Schedule) -> Result<String, WriteError> {
    if s.untracked {
        return Err(WriteError::Untracked);
    }
    let coll = match s.collective {
        CollectiveKind::AllReduce => "allreduce",
        CollectiveKind::AllGather => "allgather",
        CollectiveKind::ReduceScatter => "reducescatter",
        other => return Err(WriteError::Collective(other)),
    };
    let mut layout = Layout::new(s);
    for i in 0..s.transfers.len() {
        layout.place(s, i)?;
    }
    Ok(layout.render(s, coll))
}

/// A step of [`write`]'s output, or a `nop` waiting for a transfer's last
/// step on the sender (`true`) or the receiver, resolved once every step
/// is placed.
enum Out {
    Step(String),
    Nop(u32, bool),
}

/// A threadblock of [`write`]'s output.
#[derive(Default)]
struct TbOut {
    send: i64,
    recv: i64,
    chan: u32,
    steps: Vec<Out>,
}

/// [`write`]'s threadblocks, per GPU, as the transfers are placed.
struct Layout {
    tbs: Vec<Vec<TbOut>>,
    /// Per GPU: (send, recv, channel) -> its threadblock.
    tb_of: Vec<HashMap<(i64, i64, u32), usize>>,
    /// Where each transfer's last step sits on the sender: (tb, step).
    send_at: Vec<(usize, usize)>,
    /// And on the receiver.
    recv_at: Vec<(usize, usize)>,
}

impl Layout {
    fn new(s: &Schedule) -> Layout {
        Layout {
            tbs: (0..s.npus).map(|_| Vec::new()).collect(),
            tb_of: vec![HashMap::new(); s.npus as usize],
            send_at: vec![(0, 0); s.transfers.len()],
            recv_at: vec![(0, 0); s.transfers.len()],
        }
    }

    /// GPU `g`'s threadblock for (`send`, `recv`, `chan`), made on first use.
    fn tb(&mut self, g: u32, send: i64, recv: i64, chan: u32) -> usize {
        let tbs = &mut self.tbs[g as usize];
        *self.tb_of[g as usize].entry((send, recv, chan)).or_insert_with(|| {
            tbs.push(TbOut {
                send,
                recv,
                chan,
                ..Default::default()
            });
            tbs.len() - 1
        })
    }

    /// Transfer `i`'s steps: its dependencies' `nop`s, then per piece a
    /// send (or copy) on the sender and a receive on the receiver.
    fn place(&mut self, s: &Schedule, i: usize) -> Result<(), WriteError> {
        let t = &s.transfers[i];
        let n = s.npus;
        let pieces = pieces(t, n, s.chunks_per_npu);
        let exact = exact_attrs(i, t);
        // Each lane on its own channel: lanes are independent, and a
        // threadblock runs its steps in order.
        let lane = t.chunks.first().map_or(0, |r| r.start / n);
        // The sender's waits: data that arrived there.
        let st = if t.op == Op::Copy {
            self.tb(t.src, -1, -1, lane)
        } else {
            self.tb(t.src, i64::from(t.dst), -1, lane)
        };
        let rt = if t.op == Op::Copy {
            st
        } else {
            self.tb(t.dst, -1, i64::from(t.src), lane)
        };
        for &d in &t.deps {
            let dt = &s.transfers[d as usize];
            let on = if dt.dst == t.src {
                (t.src, st)
            } else if dt.dst == t.dst {
                (t.dst, rt)
            } else {
                return Err(WriteError::DepElsewhere {
                    transfer: i,
                    src: t.src,
                    dst: t.dst,
                    dep: d,
                    dep_src: dt.src,
                    dep_dst: dt.dst,
                });
            };
            self.tbs[on.0 as usize][on.1].steps.push(Out::Nop(d, false));
        }
        if t.op != Op::Copy {
            for &a in &t.after {
                self.tbs[t.dst as usize][rt].steps.push(Out::Nop(a, true));
            }
        }
        for (p, &(o, c)) in pieces.iter().enumerate() {
            let extra = if p == 0 { exact.as_str() } else { "" };
            let kind = if t.op == Op::Copy { "cpy" } else { "s" };
            let list = &mut self.tbs[t.src as usize][st].steps;
            let idx = list.len();
            list.push(Out::Step(format!(
                r#"type="{kind}" srcbuf="i" srcoff="{o}" dstbuf="i" dstoff="{o}" cnt="{c}" depid="-1" deps="-1"{extra}"#
            )));
            self.send_at[i] = (st, idx);
            if t.op == Op::Copy {
                self.recv_at[i] = (st, idx);
                continue;
            }
            let kind = if t.op == Op::Reduce { "rrc" } else { "r" };
            let list = &mut self.tbs[t.dst as usize][rt].steps;
            let idx = list.len();
            list.push(Out::Step(format!(
                r#"type="{kind}" srcbuf="i" srcoff="{o}" dstbuf="i" dstoff="{o}" cnt="{c}" depid="-1" deps="-1""#
            )));
            self.recv_at[i] = (rt, idx);
        }
        Ok(())
    }

    /// The (tb, step) a `nop` waits for.
    fn waited(&self, x: u32, on_send: bool) -> (usize, usize) {
        if on_send {
            self.send_at[x as usize]
        } else {
            self.recv_at[x as usize]
        }
    }

    /// The XML.
    fn render(&self, s: &Schedule, coll: &str) -> String {
        let (n, k) = (s.npus, s.chunks_per_npu);
        let mut out = String::new();
        let _ = writeln!(
            out,
            r#"<algo name="{}" proto="Simple" nchannels="1" nchunksperloop="{}" ngpus="{n}" coll="{coll}" inplace="1" dimsum_transfers="{}" dimsum_topology="{}">"#,
            xml_escape(&s.algorithm),
            n * k,
            s.transfers.len(),
            xml_escape(&s.topology)
        );
        for (g, list) in self.tbs.iter().enumerate() {
            let _ = writeln!(
                out,
                r#"  <gpu id="{g}" i_chunks="{}" o_chunks="0" s_chunks="0">"#,
                n * k
            );
            self.render_tbs(&mut out, list);
            let _ = writeln!(out, "  </gpu>");
        }
        out.push_str("</algo>\n");
        out
    }

    /// One GPU's threadblocks.
    fn render_tbs(&self, out: &mut String, list: &[TbOut]) {
        // Steps some nop waits for.
        let mut needed: HashSet<(usize, usize)> = HashSet::new();
        for tb in list {
            for st in &tb.steps {
                if let Out::Nop(x, on_send) = st {
                    needed.insert(self.waited(*x, *on_send));
                }
            }
        }
        for (t, tb) in list.iter().enumerate() {
            let _ = writeln!(
                out,
                r#"    <tb id="{t}" send="{}" recv="{}" chan="{}">"#,
                tb.send, tb.recv, tb.chan
            );
            for (i, st) in tb.steps.iter().enumerate() {
                let hasdep = u8::from(needed.contains(&(t, i)));
                let body = match st {
                    Out::Step(b) => b.replacen(r#" deps="-1""#, &format!(r#" deps="-1" hasdep="{hasdep}""#), 1),
                    Out::Nop(x, on_send) => {
                        let (dt, ds) = self.waited(*x, *on_send);
                        format!(
                            r#"type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="0" depid="{dt}" deps="{ds}" hasdep="{hasdep}""#
                        )
                    }
                };
                let _ = writeln!(out, r#"      <step s="{i}" {body}/>"#);
            }
            let _ = writeln!(out, "    </tb>");
        }
    }
}

/// Transfer `t`'s chunks as contiguous offset ranges (offset, count), in
/// order, on `n` GPUs of `k` chunks each.
fn pieces(t: &Transfer, n: u32, k: u32) -> Vec<(u32, u32)> {
    let offset = |c: u32| (c % n) * k + c / n;
    let mut pieces: Vec<(u32, u32)> = Vec::new();
    for c in t.chunks.iter().flat_map(|r| r.iter()) {
        let o = offset(c);
        match pieces.last_mut() {
            Some(p) if p.0 + p.1 == o => p.1 += 1,
            _ => pieces.push((o, 1)),
        }
    }
    pieces
}

/// dimsum's attributes of transfer `i`, on its first step.
fn exact_attrs(i: usize, t: &Transfer) -> String {
    let join = |v: &[u32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
    let runs: Vec<u32> = t.chunks.iter().flat_map(|r| [r.start, r.count, r.stride]).collect();
    format!(
        r#" dimsum_transfer="{i}" dimsum_op="{}" dimsum_chunks="{}" dimsum_deps="{}" dimsum_after="{}" dimsum_route="{}""#,
        super::op_name(t.op),
        join(&runs),
        join(&t.deps),
        join(&t.after),
        join(&t.route)
    )
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
