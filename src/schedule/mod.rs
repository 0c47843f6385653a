//! The schedule IR: an explicit collective algorithm as transfers of chunks
//! between NPUs, with the dependencies that order them and the links they
//! take.
//!
//! The collective's buffer is cut into equal chunks. For all-gather,
//! reduce-scatter and all-reduce there are `npus * chunks_per_npu` of them
//! and chunk `c` is shard `c % npus` (lane `c / npus`): NPU `r` owns shard `r`
//! before an all-gather and must hold it, reduced over every NPU, after a
//! reduce-scatter. For all-to-all, chunk `(s * npus + d) * chunks_per_npu + k`
//! is the `k`-th piece that NPU `s` sends to NPU `d`.
//!
//! A [`Transfer`] moves a set of chunks from one NPU to another: a `send`
//! (the receiver stores them), a `reduce` (the receiver adds them into its
//! own) or a `copy` (a local move, source = destination, no link). Seen per
//! NPU these are the operations send, receive, receive-and-reduce and copy
//! ([`Schedule::ops`]). A transfer starts once every transfer in its `deps`
//! has arrived; its `route` names the links it takes (empty: the topology
//! routes it); `after` lists transfers that must have left the receiver
//! before it applies the data (a receive buffer, for exchanges). This is what MSCCL-IR's threadblock steps (each send matched
//! to its receive, with the threadblock order and cross-threadblock
//! dependencies as `deps`) and Chakra ET's send / receive / compute nodes
//! with `data_deps` both express, so either can be written from it.
//!
//! Chunk sets are runs `start, start + stride, ...` (`count` of them), which
//! keeps hierarchical schedules small: after the reduce-scatter on the first
//! dimensions an NPU holds every `P`-th shard.
//!
//! ```
//! use dimsum::model::topology;
//! use dimsum::model::workload::CollectiveKind;
//! use dimsum::schedule::algorithm::{self, Algorithm, Options};
//! use dimsum::schedule::bounds::lower_bounds;
//! use dimsum::schedule::simulate::{simulate, LinkModel, SimOptions};
//! use dimsum::schedule::Schedule;
//!
//! // A hierarchical all-gather on a 4x4 torus: each dimension's own algorithm.
//! let topo = topology::from_spec("torus:4x4", &[50.0], &[0.5])?;
//! let s = algorithm::build(&topo, CollectiveKind::AllGather, Algorithm::Hierarchical, &Options::default())?;
//! s.check()?; // every chunk reaches every NPU it must
//! let back: Schedule = serde_json::from_str(&s.to_json())?;
//! assert_eq!(back.transfers.len(), s.transfers.len());
//! let opt = SimOptions { size_bytes: 16e6, model: LinkModel::AlphaBeta, record: false, reduce_gbps: None };
//! let r = simulate(&s, &topo, &opt)?;
//! assert!(r.valid && r.time_ns >= lower_bounds(&topo, CollectiveKind::AllGather, 16e6).bound_ns);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod algorithm;
pub mod bounds;
pub mod builtin;
pub mod compare;
pub mod cut;
mod file;
pub mod flow;
pub mod forest;
pub mod product;
pub mod replay;
pub mod shape;
pub mod simulate;
pub mod swing;
pub mod synth;
pub mod trees;

use crate::model::workload::CollectiveKind;
use serde::{Deserialize, Serialize};
pub use smallvec::{SmallVec, smallvec};

/// Most NPU-chunk pairs a schedule may track (the simulator keeps 12 bytes
/// each: 24 GiB at most would be 2^31; this keeps it near 6 GiB). Builders
/// refuse larger schedules before they allocate.
pub(crate) const MAX_STATE: u64 = 1 << 29;

/// Most transfers a built-in schedule may hold: a transfer and its replay
/// take about 320 bytes (a 2,048-NPU flat ring all-reduce, 8.4 M transfers,
/// peaks at 2.7 GB), so this keeps one schedule near 5 GiB. Builders refuse
/// larger schedules before they allocate (a direct or ring all-reduce over
/// 4,096 NPUs is 33.5 M).
pub(crate) const MAX_TRANSFERS: u64 = 1 << 24;

/// Most dependency entries a built-in schedule may hold (4 bytes each and
/// their share of the replay: a direct all-reduce over a 1,024-NPU switch,
/// 2^31 of them, peaks at 9 GB; this keeps one near 4.5 GiB). A direct
/// step waits for every receive of the step before it, so a direct level
/// of p NPUs holds about n p^2 of them.
pub(crate) const MAX_DEPS: u64 = 1 << 30;

/// Most transfers a schedule read from a file may hold (four times what a
/// built-in schedule may, for schedules other tools wrote).
pub(crate) const MAX_FILE_TRANSFERS: u64 = 1 << 26;

/// The schedule file format's name and version.
pub const FORMAT: &str = "dimsum-schedule/1";

/// Chunks `start + i * stride` for `i` in `0..count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// First chunk.
    pub start: u32,
    /// Number of chunks.
    pub count: u32,
    /// Distance between consecutive chunks (1: contiguous).
    pub stride: u32,
}

impl Run {
    /// `count` contiguous chunks from `start`.
    pub fn range(start: u32, count: u32) -> Run {
        Run {
            start,
            count,
            stride: 1,
        }
    }

    /// The chunk ids.
    pub fn iter(self) -> impl Iterator<Item = u32> {
        (0..self.count).map(move |i| self.start + i * self.stride)
    }

    /// One past the largest chunk id.
    pub fn end(self) -> u64 {
        if self.count == 0 {
            0
        } else {
            u64::from(self.start) + u64::from(self.count - 1) * u64::from(self.stride) + 1
        }
    }
}

/// What the receiver does with the chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// The receiver stores the chunks (receive).
    Send,
    /// The receiver adds the chunks into its own (receive-and-reduce).
    Reduce,
    /// A local copy: source and destination are the same NPU.
    Copy,
}

/// Transfer or link ids of one transfer: two inline (most transfers wait
/// for one or two others and cross one or two links), more on the heap.
/// Held inline, a schedule of millions of transfers makes no allocation
/// per list (a 2,048-NPU ring all-reduce holds 8.4 million transfers).
pub type Ids = SmallVec<[u32; 2]>;

/// The chunk runs of one transfer: one inline.
pub type Runs = SmallVec<[Run; 1]>;

/// One movement of chunks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transfer {
    /// Sending NPU.
    pub src: u32,
    /// Receiving NPU.
    pub dst: u32,
    /// What the receiver does.
    pub op: Op,
    /// The chunks moved.
    pub chunks: Runs,
    /// Transfers that must have arrived before this one starts.
    #[serde(default, skip_serializing_if = "SmallVec::is_empty")]
    pub deps: Ids,
    /// Link ids, in order (empty: routed by the topology).
    #[serde(default, skip_serializing_if = "SmallVec::is_empty")]
    pub route: Ids,
    /// Transfers that must have left the receiver (arrived at their own
    /// destinations) before the receiver applies this one: a receive buffer.
    /// This is how an exchange is written (each side sends its vector and
    /// reduces the peer's once its own send is out, as `MPI_Sendrecv` then
    /// a local reduction does); the transfer still starts when its `deps`
    /// allow and its data is read when it arrives.
    #[serde(default, skip_serializing_if = "SmallVec::is_empty")]
    pub after: Ids,
    /// Bytes moved, when the chunks are not known (a foreign trace): used
    /// instead of the chunk count times the chunk size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    /// For a local operation (a copy, or a trace's compute node), how long
    /// it takes, ns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duration_ns: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_false(x: &bool) -> bool {
    !*x
}

impl Transfer {
    /// Number of chunks moved.
    pub(crate) fn chunk_count(&self) -> u64 {
        self.chunks.iter().map(|r| u64::from(r.count)).sum()
    }
}

/// An explicit collective algorithm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Always [`FORMAT`].
    pub format: String,
    /// What made it, e.g. `hierarchical(bidirectional-ring,direct)`.
    pub algorithm: String,
    /// The topology the routes refer to (its spec), if routed.
    #[serde(default)]
    pub topology: String,
    /// The collective.
    pub collective: CollectiveKind,
    /// Participating NPUs: ranks `0..npus`.
    pub npus: u32,
    /// Chunks per NPU shard (all-to-all: per destination).
    pub chunks_per_npu: u32,
    /// The data each transfer moves is not known (a foreign trace, sizes
    /// only): a replay gives times and checks the structure, not the data.
    #[serde(default, skip_serializing_if = "is_false")]
    pub untracked: bool,
    /// The collective's whole buffer it was built for, bytes (as
    /// `--size`), when known: `export chakra` and `collective
    /// --schedule-in` take it from the file. `None` for schedules read
    /// from formats that do not say (MSCCL-IR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<f64>,
    /// The transfers.
    pub transfers: Vec<Transfer>,
}

/// One operation of one NPU, as [`Schedule::ops`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum NpuOp {
    /// Send transfer `transfer` to `peer`.
    Send {
        /// The transfer (index into [`Schedule::transfers`]).
        transfer: u32,
        /// The NPU it goes to.
        peer: u32,
    },
    /// Receive transfer `transfer` from `peer` into the buffer.
    Recv {
        /// The transfer (index into [`Schedule::transfers`]).
        transfer: u32,
        /// The NPU it comes from.
        peer: u32,
    },
    /// Receive transfer `transfer` from `peer` and reduce it into the buffer.
    RecvReduce {
        /// The transfer (index into [`Schedule::transfers`]).
        transfer: u32,
        /// The NPU it comes from.
        peer: u32,
    },
    /// A local copy.
    Copy {
        /// The transfer (index into [`Schedule::transfers`]).
        transfer: u32,
    },
}

/// A schedule that does not make sense on its own (before simulation).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// A field is out of range.
    #[error("transfer {transfer}: {message}")]
    Transfer {
        /// The transfer's index.
        transfer: usize,
        /// What is wrong.
        message: String,
    },
    /// The header is wrong.
    #[error("{0}")]
    Header(String),
}

impl Schedule {
    /// An empty schedule.
    pub fn new(algorithm: impl Into<String>, collective: CollectiveKind, npus: u32, chunks_per_npu: u32) -> Schedule {
        Schedule {
            format: FORMAT.to_string(),
            algorithm: algorithm.into(),
            topology: String::new(),
            collective,
            npus,
            chunks_per_npu,
            untracked: false,
            size_bytes: None,
            transfers: Vec::new(),
        }
    }

    /// Number of chunks of the buffer (module doc).
    pub fn chunks(&self) -> u64 {
        let n = u64::from(self.npus);
        let k = u64::from(self.chunks_per_npu);
        match self.collective {
            // Saturating: a header read from a file may be any size (check
            // refuses what this makes too large).
            CollectiveKind::AllToAll => n.saturating_mul(n).saturating_mul(k),
            _ => n.saturating_mul(k),
        }
    }

    /// Bytes of one chunk when the collective's buffer is `size` bytes (the
    /// all-gather output, the reduce-scatter input, the all-reduce vector,
    /// the all-to-all send buffer of one NPU).
    pub fn chunk_bytes(&self, size: f64) -> f64 {
        size / (f64::from(self.npus) * f64::from(self.chunks_per_npu))
    }

    /// Checks the structure: format, ranks, chunk ids, dependency indices,
    /// copies local and transfers remote.
    pub fn check(&self) -> Result<(), ScheduleError> {
        if self.format != FORMAT {
            return Err(ScheduleError::Header(format!(
                "format is `{}`, expected `{FORMAT}`",
                self.format
            )));
        }
        if self.npus < 2 || self.chunks_per_npu < 1 {
            return Err(ScheduleError::Header(
                "npus must be at least 2 and chunks_per_npu at least 1".into(),
            ));
        }
        if let Some(b) = self.size_bytes
            && !(b.is_finite() && (1.0..=crate::model::units::MAX_BYTES).contains(&b))
        {
            return Err(ScheduleError::Header(format!(
                "size_bytes is {b}: a buffer is from 1 byte to 1 PiB (2^50 bytes)"
            )));
        }
        if matches!(self.collective, CollectiveKind::SendRecv) {
            return Err(ScheduleError::Header("send-recv is not a collective a schedule can describe: use all-gather, reduce-scatter, all-reduce or all-to-all".into()));
        }
        // Limits before anything is sized by the header: the replay keeps
        // state per NPU and chunk, and a collective involves every NPU.
        let chunks = self.chunks();
        // What the replay tracks: every NPU's copy of every chunk it can
        // receive (an all-to-all's chunks are per destination already).
        let pairs = if self.collective == CollectiveKind::AllToAll {
            u128::from(chunks)
        } else {
            u128::from(self.npus) * u128::from(chunks)
        };
        if chunks > u64::from(u32::MAX) || pairs > u128::from(MAX_STATE) {
            return Err(ScheduleError::Header(format!(
                "npus {} x chunks {chunks} (npus x chunks_per_npu {}{}) = {pairs} NPU-chunk pairs: the limit is 2^29 \
                 (the replay keeps state for each); lower npus or chunks_per_npu",
                self.npus,
                self.chunks_per_npu,
                if self.collective == CollectiveKind::AllToAll {
                    " x npus"
                } else {
                    ""
                }
            )));
        }
        if self.transfers.len() as u64 > MAX_FILE_TRANSFERS {
            return Err(ScheduleError::Header(format!(
                "{} transfers: the limit is 2^26",
                self.transfers.len()
            )));
        }
        let mut involved = vec![false; self.npus as usize];
        for t in &self.transfers {
            for r in [t.src, t.dst] {
                if let Some(x) = involved.get_mut(r as usize) {
                    *x = true;
                }
            }
        }
        if let Some(idle) = involved.iter().position(|x| !x) {
            return Err(ScheduleError::Header(format!(
                "npus is {} but NPU {idle} neither sends nor receives: every NPU of a collective does",
                self.npus
            )));
        }
        let n = self.transfers.len();
        for (i, t) in self.transfers.iter().enumerate() {
            let bad = |m: String| ScheduleError::Transfer {
                transfer: i,
                message: m,
            };
            if t.src >= self.npus || t.dst >= self.npus {
                return Err(bad(format!(
                    "NPU {} -> {}: ranks go from 0 to {}",
                    t.src,
                    t.dst,
                    self.npus - 1
                )));
            }
            if (t.op == Op::Copy) != (t.src == t.dst) {
                return Err(bad(
                    "a copy stays on one NPU and a send or reduce goes to another".into()
                ));
            }
            if let Some(r) = t.chunks.iter().find(|r| r.end() > chunks || r.stride == 0) {
                return Err(bad(format!(
                    "chunks {}+{}x{}: the buffer has chunks 0..{chunks} and strides are positive",
                    r.start, r.count, r.stride
                )));
            }
            if let Some(d) = t.deps.iter().find(|&&d| d as usize >= n || d as usize == i) {
                return Err(bad(format!(
                    "depends on transfer {d}, which is not another transfer of the schedule"
                )));
            }
            if !(t.duration_ns >= 0.0 && t.duration_ns.is_finite())
                || t.bytes.is_some_and(|b| !(b >= 0.0 && b.is_finite()))
            {
                return Err(bad("durations and byte counts are finite and not negative".into()));
            }
            if let Some(d) = t.after.iter().find(|&&d| d as usize >= n || d as usize == i) {
                return Err(bad(format!(
                    "is applied after transfer {d}, which is not another transfer of the schedule"
                )));
            }
        }
        Ok(())
    }

    /// The operations of `npu`, in transfer order: for every transfer a send
    /// on its source and a receive (or receive-and-reduce) on its
    /// destination, or one copy.
    pub fn ops(&self, npu: u32) -> Vec<NpuOp> {
        let mut ops = Vec::new();
        for (i, t) in self.transfers.iter().enumerate() {
            let transfer = i as u32;
            if t.op == Op::Copy {
                if t.src == npu {
                    ops.push(NpuOp::Copy { transfer });
                }
                continue;
            }
            if t.src == npu {
                ops.push(NpuOp::Send { transfer, peer: t.dst });
            }
            if t.dst == npu {
                ops.push(match t.op {
                    Op::Reduce => NpuOp::RecvReduce { transfer, peer: t.src },
                    _ => NpuOp::Recv { transfer, peer: t.src },
                });
            }
        }
        ops
    }

    /// The schedule as JSON.
    /// The file also names the dimsum version that wrote it
    /// (`dimsum_version`, ignored when read back).
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct File<'a> {
            #[serde(flatten)]
            schedule: &'a Schedule,
            dimsum_version: &'static str,
        }
        serde_json::to_string(&File {
            schedule: self,
            dimsum_version: env!("CARGO_PKG_VERSION"),
        })
        .unwrap_or_default()
    }

    /// The buffer to time or export the schedule at, bytes: `given` (a
    /// flag's value) or the one the file records; when both are there they
    /// must agree (within 1e-9), and one of them must be.
    pub fn size_to_use(&self, given: Option<f64>) -> Result<f64, SizeError> {
        match (given, self.size_bytes) {
            (Some(g), Some(f)) if (g - f).abs() > 1e-9 * f.abs().max(1.0) => {
                Err(SizeError::Disagrees { given: g, recorded: f })
            }
            (Some(g), _) => Ok(g),
            (None, Some(f)) => Ok(f),
            (None, None) => Err(SizeError::Unknown),
        }
    }
}

/// Why a schedule has no buffer size to use ([`Schedule::size_to_use`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SizeError {
    /// The size given and the one the schedule records differ.
    #[error(
        "{given} bytes, but the schedule was built for {recorded} bytes (its size_bytes): leave the flag out or give {recorded}"
    )]
    Disagrees {
        /// The size given, bytes.
        given: f64,
        /// The size the schedule records (`size_bytes`), bytes.
        recorded: f64,
    },
    /// Neither a size given nor one recorded.
    #[error("the schedule does not record its buffer (no size_bytes): give the size")]
    Unknown,
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    #[test]
    fn runs_and_ops() {
        let r = Run {
            start: 2,
            count: 3,
            stride: 4,
        };
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![2, 6, 10]);
        assert_eq!(r.end(), 11);
        let mut s = Schedule::new("hand", CollectiveKind::AllGather, 2, 1);
        s.transfers.push(Transfer {
            src: 0,
            dst: 1,
            op: Op::Send,
            chunks: smallvec![Run::range(0, 1)],
            deps: smallvec![],
            route: smallvec![],
            after: smallvec![],
            bytes: None,
            duration_ns: 0.0,
        });
        s.transfers.push(Transfer {
            src: 1,
            dst: 0,
            op: Op::Reduce,
            chunks: smallvec![Run::range(1, 1)],
            deps: smallvec![0],
            route: smallvec![],
            after: smallvec![],
            bytes: None,
            duration_ns: 0.0,
        });
        s.check().unwrap();
        assert_eq!(
            s.ops(1),
            vec![
                NpuOp::Recv { transfer: 0, peer: 0 },
                NpuOp::Send { transfer: 1, peer: 0 }
            ]
        );
        let back: Schedule = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(back, s);
        s.transfers[1].deps = vec![5].into();
        assert!(s.check().unwrap_err().to_string().starts_with("transfer 1:"));
        s.transfers[1].deps = vec![].into();
        s.transfers[1].chunks = vec![Run::range(1, 2)].into();
        assert!(s.check().is_err());
    }
}
