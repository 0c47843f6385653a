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

use crate::schedule::{Op, Run, Schedule, Transfer};
use crate::workload::CollectiveKind;
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
    let line_of = |n: roxmltree::Node| doc.text_pos_at(n.range().start).row;
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
        gpus[id as usize] = tbs.into_iter().map(|t| t.1).collect();
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
    // The transfers a step waits for: the steps before it in its tb and its
    // cross-tb dependency, through nops, copies and local reductions.
    let mut memo: HashMap<Key, Vec<u32>> = HashMap::new();
    fn done(
        key: Key,
        gpus: &[Vec<Tb>],
        sent: &HashMap<Key, u32>,
        got: &HashMap<Key, u32>,
        memo: &mut HashMap<Key, Vec<u32>>,
        depth: usize,
    ) -> Result<Vec<u32>, MscclError> {
        if let Some(v) = memo.get(&key) {
            return Ok(v.clone());
        }
        let (g, t, i) = key;
        let st = gpus[g]
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
        // What this step's own completion stands for.
        let mut own: Vec<u32> = sent.get(&key).into_iter().chain(got.get(&key)).copied().collect();
        if own.is_empty() {
            // nop / cpy / re: done when what it waited for is.
            own = waits(key, gpus, sent, got, memo, depth + 1)?;
        }
        memo.insert(key, own.clone());
        Ok(own)
    }
    fn waits(
        key: Key,
        gpus: &[Vec<Tb>],
        sent: &HashMap<Key, u32>,
        got: &HashMap<Key, u32>,
        memo: &mut HashMap<Key, Vec<u32>>,
        depth: usize,
    ) -> Result<Vec<u32>, MscclError> {
        let (g, t, i) = key;
        let st = &gpus[g][t].steps[i];
        let mut out = Vec::new();
        if i > 0 {
            out.extend(done((g, t, i - 1), gpus, sent, got, memo, depth + 1)?);
        }
        if let Some((dt, ds)) = st.dep {
            out.extend(done((g, dt, ds), gpus, sent, got, memo, depth + 1)?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
    for (g, tbs) in gpus.iter().enumerate() {
        for (t, tb) in tbs.iter().enumerate() {
            for i in 0..tb.steps.len() {
                let key = (g, t, i);
                let w = waits(key, &gpus, &sent, &got, &mut memo, 0)?;
                if let Some(&id) = got.get(&key) {
                    // Applied once the receiving step may run.
                    s.transfers[id as usize].after = w.iter().copied().filter(|&x| x != id).collect();
                }
                if let Some(&id) = sent.get(&key) {
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
