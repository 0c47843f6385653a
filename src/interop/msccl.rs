//! MSCCL-IR XML (microsoft/msccl-tools, what MSCCLang compiles to) into a
//! schedule, so MSCCLang algorithms can be simulated and costed.
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
use crate::schedule::{Op, Run, Schedule, Transfer};
use std::collections::{HashMap, VecDeque};

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

fn exact_of(st: roxmltree::Node) -> Result<Option<Exact>, String> {
    let Some(index) = st.attribute("dimsum_transfer") else {
        return Ok(None);
    };
    let index = index
        .parse()
        .map_err(|_| format!("dimsum_transfer `{index}` is not an index"))?;
    let op = match st.attribute("dimsum_op") {
        Some("send") => Op::Send,
        Some("reduce") => Op::Reduce,
        Some("copy") => Op::Copy,
        other => return Err(format!("dimsum_op {other:?} is not send, reduce or copy")),
    };
    let runs = list(st.attribute("dimsum_chunks")).ok_or("dimsum_chunks is not a list of numbers")?;
    if runs.len() % 3 != 0 {
        return Err("dimsum_chunks is not start, count, stride triples".into());
    }
    let field = |a: &str| list(st.attribute(a)).ok_or(format!("{a} is not a list of numbers"));
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
    // Line starts, for the line of an element (text_pos_at scans from the
    // start of the text, which is quadratic over a large file).
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |n: roxmltree::Node| starts.partition_point(|&x| x <= n.range().start) as u32;
    let algo = doc.root_element();
    let bad = |n: roxmltree::Node, m: String| MscclError {
        line: line_of(n),
        message: m,
    };
    if algo.tag_name().name() != "algo" {
        return Err(bad(
            algo,
            format!("the root is <{}>, not <algo>", algo.tag_name().name()),
        ));
    }
    let num = |n: roxmltree::Node, a: &str| -> Result<i64, MscclError> {
        let v = n
            .attribute(a)
            .ok_or_else(|| bad(n, format!("<{}> has no `{a}`", n.tag_name().name())))?;
        v.trim()
            .parse::<i64>()
            .map_err(|_| bad(n, format!("`{a}` is `{v}`, not an integer")))
    };
    let ngpus = num(algo, "ngpus")?;
    let nchunks = num(algo, "nchunksperloop")?;
    if ngpus < 2 || nchunks < 1 || nchunks % ngpus != 0 {
        return Err(bad(
            algo,
            format!(
                "ngpus {ngpus} and nchunksperloop {nchunks}: need at least 2 GPUs and a whole number of chunks per GPU"
            ),
        ));
    }
    let (n, k) = (ngpus as u32, (nchunks / ngpus) as u32);
    let coll = algo.attribute("coll").unwrap_or("");
    let kind = match coll {
        "allreduce" => CollectiveKind::AllReduce,
        "allgather" => CollectiveKind::AllGather,
        "reducescatter" | "reduce_scatter" => CollectiveKind::ReduceScatter,
        other => {
            return Err(bad(
                algo,
                format!("coll `{other}`: dimsum reads allreduce, allgather and reducescatter"),
            ));
        }
    };
    // GPUs and their threadblocks.
    let mut gpus: Vec<Vec<Tb>> = vec![Vec::new(); n as usize];
    let mut seen = vec![false; n as usize];
    for g in algo.children().filter(|c| c.has_tag_name("gpu")) {
        let id = num(g, "id")?;
        if !(0..ngpus).contains(&id) || seen[id as usize] {
            return Err(bad(
                g,
                format!("gpu id {id}: ids run from 0 to {} once each", ngpus - 1),
            ));
        }
        seen[id as usize] = true;
        let mut tbs: Vec<(i64, Tb)> = Vec::new();
        for tb in g.children().filter(|c| c.has_tag_name("tb")) {
            let peer = |a: &str| -> Result<Option<u32>, MscclError> {
                let v = num(tb, a)?;
                match v {
                    -1 => Ok(None),
                    v if (0..ngpus).contains(&v) && v != id => Ok(Some(v as u32)),
                    v => Err(bad(tb, format!("gpu {id}: tb `{a}` = {v} is not another GPU"))),
                }
            };
            let mut steps = Vec::new();
            for st in tb.children().filter(|c| c.has_tag_name("step")) {
                let s = num(st, "s")?;
                if s != steps.len() as i64 {
                    return Err(bad(
                        st,
                        format!("gpu {id}: step s = {s} out of order (expected {})", steps.len()),
                    ));
                }
                let kind = st.attribute("type").unwrap_or("").to_string();
                if !["s", "r", "rcs", "rrc", "rrs", "rrcs", "cpy", "re", "nop"].contains(&kind.as_str()) {
                    return Err(bad(
                        st,
                        format!(
                            "gpu {id}: step {s}: type `{kind}` is not one of s, r, rcs, rrc, rrs, rrcs, cpy, re, nop"
                        ),
                    ));
                }
                let depid = num(st, "depid")?;
                let deps = num(st, "deps")?;
                let off = |a: &str| -> Result<u32, MscclError> {
                    let v = num(st, a)?;
                    u32::try_from(v).map_err(|_| bad(st, format!("gpu {id}: step {s}: `{a}` = {v} is negative")))
                };
                let buf = |a: &str| st.attribute(a).unwrap_or("i").to_string();
                let step = Step {
                    src_off: if kind == "nop" { 0 } else { off("srcoff")? },
                    dst_off: if kind == "nop" { 0 } else { off("dstoff")? },
                    src_buf: buf("srcbuf"),
                    dst_buf: buf("dstbuf"),
                    cnt: if kind == "nop" { 0 } else { off("cnt")? },
                    dep: (depid >= 0 && deps >= 0).then_some((depid as usize, deps as usize)),
                    line: line_of(st),
                    exact: exact_of(st).map_err(|m| bad(st, format!("gpu {id}: step {s}: {m}")))?,
                    kind,
                };
                for (b, o) in [(&step.src_buf, step.src_off), (&step.dst_buf, step.dst_off)] {
                    if step.kind != "nop" && b != "i" && b != "o" {
                        return Err(bad(
                            st,
                            format!(
                                "gpu {id}: step {s}: buffer `{b}`: scratch buffers have no place in dimsum's IR (only i and o)"
                            ),
                        ));
                    }
                    if step.kind != "nop" && u64::from(o) + u64::from(step.cnt) > nchunks as u64 {
                        return Err(bad(
                            st,
                            format!(
                                "gpu {id}: step {s}: chunks {o}..{} past the {nchunks} of the buffer",
                                o + step.cnt
                            ),
                        ));
                    }
                }
                steps.push(step);
            }
            tbs.push((
                num(tb, "id")?,
                Tb {
                    send: peer("send")?,
                    recv: peer("recv")?,
                    chan: tb.attribute("chan").and_then(|c| c.parse().ok()).unwrap_or(0),
                    steps,
                },
            ));
        }
        tbs.sort_by_key(|t| t.0);
        if tbs.iter().enumerate().any(|(i, t)| t.0 != i as i64) {
            return Err(bad(g, format!("gpu {id}: threadblock ids must run 0, 1, 2, ...")));
        }
        let tbs: Vec<Tb> = tbs.into_iter().map(|t| t.1).collect();
        // Cross-threadblock dependencies name a step that exists.
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
        gpus[id as usize] = tbs;
    }
    if let Some(g) = seen.iter().position(|s| !s) {
        return Err(bad(algo, format!("gpu {g} is missing")));
    }
    let chunk = |j: u32| (j % k) * n + j / k;
    // Match sends to receives, FIFO per (sender, receiver, channel).
    let mut queue: HashMap<(u32, u32, i64), VecDeque<(usize, usize)>> = HashMap::new();
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
    // Transfer of each (gpu, tb, step): the one it sends, the one it receives.
    type Key = (usize, usize, usize);
    let mut sent: HashMap<Key, u32> = HashMap::new();
    let mut got: HashMap<Key, u32> = HashMap::new();
    let mut s = Schedule::new(algo.attribute("name").unwrap_or("msccl").to_string(), kind, n, k);
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
                    deps: Vec::new(),
                    route: Vec::new(),
                    after: Vec::new(),
                    bytes: None,
                    duration_ns: 0.0,
                });
                sent.insert((g, t, i), id);
                got.insert((to as usize, rt, ri), id);
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
    // Local steps must not move data between chunks.
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
    // Written by dimsum: its own attributes give the schedule back exactly.
    if let Some(count) = algo.attribute("dimsum_transfers") {
        let count: usize = count
            .parse()
            .map_err(|_| bad(algo, format!("dimsum_transfers `{count}` is not a count")))?;
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
                        chunks: x.chunks.clone(),
                        deps: x.deps.clone(),
                        route: x.route.clone(),
                        after: x.after.clone(),
                        bytes: None,
                        duration_ns: 0.0,
                    });
                }
            }
        }
        s.transfers = exact
            .into_iter()
            .enumerate()
            .map(|(i, t)| t.ok_or_else(|| bad(algo, format!("dimsum transfer {i} is on no step"))))
            .collect::<Result<_, _>>()?;
        s.topology = algo.attribute("dimsum_topology").unwrap_or("").to_string();
        s.check().map_err(|e| MscclError {
            line: 1,
            message: e.to_string(),
        })?;
        return Ok(s);
    }
    // The transfers a step waits for: the steps before it in its tb and its
    // cross-tb dependency, through nops, copies and local reductions. A
    // step that receives is done when its data, and everything before it in
    // the threadblock, has landed. A step that
    // only sends is done, for a later send, when it could start (sends
    // leave in order on their links anyway; waiting for their landing would
    // deadlock exchanges), and, for a later receive's buffer, when its data
    // has left (its own transfer's arrival: `after`).
    let mut memo: HashMap<(Key, bool), Vec<u32>> = HashMap::new();
    struct Ctx<'a> {
        gpus: &'a [Vec<Tb>],
        sent: &'a HashMap<Key, u32>,
        got: &'a HashMap<Key, u32>,
    }
    fn done(
        key: Key,
        for_after: bool,
        cx: &Ctx,
        memo: &mut HashMap<(Key, bool), Vec<u32>>,
        depth: usize,
    ) -> Result<Vec<u32>, MscclError> {
        if let Some(v) = memo.get(&(key, for_after)) {
            return Ok(v.clone());
        }
        let (g, t, i) = key;
        let st = cx.gpus[g]
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
        let mut own = waits(key, for_after, cx, memo, depth + 1)?;
        let stands_for = match (cx.got.get(&key), cx.sent.get(&key)) {
            (Some(&r), _) => Some(r),
            (None, Some(&x)) if for_after => Some(x),
            _ => None,
        };
        if let Some(x) = stands_for
            && let Err(at) = own.binary_search(&x)
        {
            own.insert(at, x);
        }
        memo.insert((key, for_after), own.clone());
        Ok(own)
    }
    fn waits(
        key: Key,
        for_after: bool,
        cx: &Ctx,
        memo: &mut HashMap<(Key, bool), Vec<u32>>,
        depth: usize,
    ) -> Result<Vec<u32>, MscclError> {
        let (g, t, i) = key;
        let st = &cx.gpus[g][t].steps[i];
        let mut out = Vec::new();
        if i > 0 {
            out.extend(done((g, t, i - 1), for_after, cx, memo, depth + 1)?);
        }
        if let Some((dt, ds)) = st.dep {
            out.extend(done((g, dt, ds), for_after, cx, memo, depth + 1)?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
    let cx = Ctx {
        gpus: &gpus,
        sent: &sent,
        got: &got,
    };
    // Settle every step in threadblock order first, so the recursion only
    // follows cross-threadblock dependencies (long threadblocks stay flat).
    for (g, tbs) in gpus.iter().enumerate() {
        for (t, tb) in tbs.iter().enumerate() {
            for i in 0..tb.steps.len() {
                for mode in [false, true] {
                    done((g, t, i), mode, &cx, &mut memo, 0)?;
                }
            }
        }
    }
    for (g, tbs) in gpus.iter().enumerate() {
        for (t, tb) in tbs.iter().enumerate() {
            for i in 0..tb.steps.len() {
                let key = (g, t, i);
                if let Some(&id) = got.get(&key) {
                    // Applied once the receiving step may run.
                    let w = waits(key, true, &cx, &mut memo, 0)?;
                    s.transfers[id as usize].after = w.into_iter().filter(|&x| x != id).collect();
                }
                if let Some(&id) = sent.get(&key) {
                    let w = waits(key, false, &cx, &mut memo, 0)?;
                    let mut deps: Vec<u32> = w.into_iter().filter(|&x| x != id).collect();
                    // A relay sends what it received in the same step.
                    if let Some(&r) = got.get(&key) {
                        deps.push(r);
                    }
                    deps.sort_unstable();
                    deps.dedup();
                    s.transfers[id as usize].deps = deps;
                }
            }
        }
    }
    s.check().map_err(|e| MscclError {
        line: 1,
        message: e.to_string(),
    })?;
    Ok(s)
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
pub fn write(s: &Schedule) -> Result<String, String> {
    if s.untracked {
        return Err("an untracked schedule (read from another producer's trace) has no chunks to write: export the schedule it came from".into());
    }
    use std::fmt::Write as _;
    let coll = match s.collective {
        CollectiveKind::AllReduce => "allreduce",
        CollectiveKind::AllGather => "allgather",
        CollectiveKind::ReduceScatter => "reducescatter",
        other => {
            return Err(format!(
                "MSCCL-IR has no {} here: all-reduce, all-gather and reduce-scatter",
                other.name()
            ));
        }
    };
    let (n, k) = (s.npus, s.chunks_per_npu);
    let offset = |c: u32| (c % n) * k + c / n;
    /// A step, or a `nop` waiting for a transfer's last step on the
    /// sender (`true`) or the receiver, resolved once every step is placed.
    enum Out {
        Step(String),
        Nop(u32, bool),
    }
    #[derive(Default)]
    struct TbOut {
        send: i64,
        recv: i64,
        chan: u32,
        steps: Vec<Out>,
    }
    let mut tbs: Vec<Vec<TbOut>> = (0..n).map(|_| Vec::new()).collect();
    let mut tb_of: Vec<HashMap<(i64, i64, u32), usize>> = vec![HashMap::new(); n as usize];
    let mut tb = |g: u32, send: i64, recv: i64, chan: u32, tbs: &mut Vec<Vec<TbOut>>| -> usize {
        *tb_of[g as usize].entry((send, recv, chan)).or_insert_with(|| {
            tbs[g as usize].push(TbOut {
                send,
                recv,
                chan,
                ..Default::default()
            });
            tbs[g as usize].len() - 1
        })
    };
    // Where each transfer's last step sits: on the sender and the receiver.
    let mut send_at: Vec<(usize, usize)> = vec![(0, 0); s.transfers.len()];
    let mut recv_at: Vec<(usize, usize)> = vec![(0, 0); s.transfers.len()];
    let join = |v: &[u32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
    for (i, t) in s.transfers.iter().enumerate() {
        // Contiguous offset ranges of the chunks, in order.
        let mut pieces: Vec<(u32, u32)> = Vec::new();
        for c in t.chunks.iter().flat_map(|r| r.iter()) {
            let o = offset(c);
            match pieces.last_mut() {
                Some(p) if p.0 + p.1 == o => p.1 += 1,
                _ => pieces.push((o, 1)),
            }
        }
        let runs: Vec<u32> = t.chunks.iter().flat_map(|r| [r.start, r.count, r.stride]).collect();
        let op = match t.op {
            Op::Send => "send",
            Op::Reduce => "reduce",
            Op::Copy => "copy",
        };
        let exact = format!(
            r#" dimsum_transfer="{i}" dimsum_op="{op}" dimsum_chunks="{}" dimsum_deps="{}" dimsum_after="{}" dimsum_route="{}""#,
            join(&runs),
            join(&t.deps),
            join(&t.after),
            join(&t.route)
        );
        // Each lane on its own channel: lanes are independent, and a
        // threadblock runs its steps in order.
        let lane = t.chunks.first().map_or(0, |r| r.start / n);
        // The sender's waits: data that arrived there.
        let st = if t.op == Op::Copy {
            tb(t.src, -1, -1, lane, &mut tbs)
        } else {
            tb(t.src, i64::from(t.dst), -1, lane, &mut tbs)
        };
        let rt = if t.op == Op::Copy {
            st
        } else {
            tb(t.dst, -1, i64::from(t.src), lane, &mut tbs)
        };
        for &d in &t.deps {
            let dt = &s.transfers[d as usize];
            let on = if dt.dst == t.src {
                (t.src, st)
            } else if dt.dst == t.dst {
                (t.dst, rt)
            } else {
                return Err(format!(
                    "transfer {i} ({} -> {}) depends on transfer {d} ({} -> {}), which arrives at neither of its GPUs",
                    t.src, t.dst, dt.src, dt.dst
                ));
            };
            tbs[on.0 as usize][on.1].steps.push(Out::Nop(d, false));
        }
        if t.op != Op::Copy {
            for &a in &t.after {
                tbs[t.dst as usize][rt].steps.push(Out::Nop(a, true));
            }
        }
        for (p, &(o, c)) in pieces.iter().enumerate() {
            let extra = if p == 0 { exact.as_str() } else { "" };
            let kind = if t.op == Op::Copy { "cpy" } else { "s" };
            let list = &mut tbs[t.src as usize][st].steps;
            let idx = list.len();
            list.push(Out::Step(format!(
                r#"type="{kind}" srcbuf="i" srcoff="{o}" dstbuf="i" dstoff="{o}" cnt="{c}" depid="-1" deps="-1"{extra}"#
            )));
            send_at[i] = (st, idx);
            if t.op == Op::Copy {
                recv_at[i] = (st, idx);
                continue;
            }
            let kind = if t.op == Op::Reduce { "rrc" } else { "r" };
            let list = &mut tbs[t.dst as usize][rt].steps;
            let idx = list.len();
            list.push(Out::Step(format!(
                r#"type="{kind}" srcbuf="i" srcoff="{o}" dstbuf="i" dstoff="{o}" cnt="{c}" depid="-1" deps="-1""#
            )));
            recv_at[i] = (rt, idx);
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<algo name="{}" proto="Simple" nchannels="1" nchunksperloop="{}" ngpus="{n}" coll="{coll}" inplace="1" dimsum_transfers="{}" dimsum_topology="{}">"#,
        xml_escape(&s.algorithm),
        n * k,
        s.transfers.len(),
        xml_escape(&s.topology)
    );
    for (g, list) in tbs.iter().enumerate() {
        // Steps some nop waits for.
        let mut needed: std::collections::HashSet<(usize, usize)> = std::collections::HashSet::new();
        for tb in list {
            for st in &tb.steps {
                if let Out::Nop(x, on_send) = st {
                    needed.insert(if *on_send {
                        send_at[*x as usize]
                    } else {
                        recv_at[*x as usize]
                    });
                }
            }
        }
        let _ = writeln!(
            out,
            r#"  <gpu id="{g}" i_chunks="{}" o_chunks="0" s_chunks="0">"#,
            n * k
        );
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
                        let (dt, ds) = if *on_send {
                            send_at[*x as usize]
                        } else {
                            recv_at[*x as usize]
                        };
                        format!(
                            r#"type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="0" depid="{dt}" deps="{ds}" hasdep="{hasdep}""#
                        )
                    }
                };
                let _ = writeln!(out, r#"      <step s="{i}" {body}/>"#);
            }
            let _ = writeln!(out, "    </tb>");
        }
        let _ = writeln!(out, "  </gpu>");
    }
    out.push_str("</algo>\n");
    Ok(out)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
