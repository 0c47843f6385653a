//! Chakra execution traces (mlcommons/chakra, `schema/protobuf/et_def.proto`,
//! package `ChakraProtoMsg`, proto3): the messages, written by hand with
//! prost's derive (field numbers and value types as the schema has them),
//! the length-delimited framing, and the translation between a schedule and
//! one trace per rank.
//!
//! A file is a `GlobalMetadata` then `Node`s, each message preceded by its
//! length as a base-128 varint; rank `r`'s file is `<prefix>.<r>.et`.
//!
//! **Schedule to traces.** Every transfer becomes a `COMM_SEND_NODE` on its
//! sender (`comm_dst`, `comm_size` in bytes, `comm_tag` = the transfer's
//! index) and a `COMM_RECV_NODE` on its receiver (`comm_src`, the same size
//! and tag); a reduction adds a `COMP_NODE` after the receive (the sum), a
//! local copy is a `COMP_NODE` alone. A dependency on a transfer that
//! arrived at the sender goes in the send node's `data_deps` (the receive,
//! or its reduction); one that arrived at the receiver (a reduction waiting
//! for the receiver's earlier phases) in the receive node's; `after` (a
//! receive buffer) makes the reduction wait for the rank's own sends. Nodes
//! also carry dimsum's own attributes (`dimsum_chunks`: the chunk runs as
//! start, count, stride triples; `dimsum_deps`, `dimsum_after`,
//! `dimsum_route`, `dimsum_op`) and the metadata the schedule's header, so
//! a schedule read back is the one written; other consumers ignore them.
//!
//! **Traces to schedule.** Traces dimsum wrote (`dimsum_format` in the
//! metadata) give that schedule back, checked (every send received, no
//! dependency cycle); another producer's traces become an untracked
//! schedule (sends matched to receives per sender, receiver and tag; sizes
//! and compute durations, no chunk identities). Reading errors are
//! [`TraceError`]s naming the file; writing ones [`WriteError`]s.

use crate::model::units::us_to_ns;
use crate::model::workload::CollectiveKind;
use crate::schedule::{Op, Run, Schedule, SmallVec, Transfer};
use prost::Message;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

/// The schema version written in `GlobalMetadata.version`.
pub const VERSION: &str = "0.0.4";

/// The most bytes one rank's trace may hold when read: 1 GiB.
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// `GlobalMetadata`.
#[derive(Clone, PartialEq, Message)]
pub struct GlobalMetadata {
    /// Schema version.
    #[prost(string, tag = "1")]
    pub version: String,
    /// Attributes.
    #[prost(message, repeated, tag = "2")]
    pub attr: Vec<AttributeProto>,
}

/// `IOInfo`.
#[derive(Clone, PartialEq, Message)]
pub struct IoInfo {
    /// Values.
    #[prost(string, tag = "1")]
    pub values: String,
    /// Shapes.
    #[prost(string, tag = "2")]
    pub shapes: String,
    /// Types.
    #[prost(string, tag = "3")]
    pub types: String,
}

/// `Node`.
#[derive(Clone, PartialEq, Message)]
pub struct Node {
    /// Unique within the file.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// `NodeType`.
    #[prost(enumeration = "NodeType", tag = "3")]
    pub r#type: i32,
    /// Control dependencies.
    #[prost(uint64, repeated, tag = "4")]
    pub ctrl_deps: Vec<u64>,
    /// Data dependencies.
    #[prost(uint64, repeated, tag = "5")]
    pub data_deps: Vec<u64>,
    /// Start time, us.
    #[prost(uint64, tag = "6")]
    pub start_time_micros: u64,
    /// Duration, us.
    #[prost(uint64, tag = "7")]
    pub duration_micros: u64,
    /// Inputs.
    #[prost(message, optional, tag = "8")]
    pub inputs: Option<IoInfo>,
    /// Outputs.
    #[prost(message, optional, tag = "9")]
    pub outputs: Option<IoInfo>,
    /// Attributes.
    #[prost(message, repeated, tag = "10")]
    pub attr: Vec<AttributeProto>,
}

/// `NodeType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum NodeType {
    /// Invalid.
    InvalidNode = 0,
    /// Metadata.
    MetadataNode = 1,
    /// Memory load.
    MemLoadNode = 2,
    /// Memory store.
    MemStoreNode = 3,
    /// Compute.
    CompNode = 4,
    /// Point-to-point send.
    CommSendNode = 5,
    /// Point-to-point receive.
    CommRecvNode = 6,
    /// Collective.
    CommCollNode = 7,
}

/// `CollectiveCommType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CollectiveCommType {
    /// All-reduce.
    AllReduce = 0,
    /// Reduce.
    Reduce = 1,
    /// All-gather.
    AllGather = 2,
    /// Gather.
    Gather = 3,
    /// Scatter.
    Scatter = 4,
    /// Broadcast.
    Broadcast = 5,
    /// All-to-all.
    AllToAll = 6,
    /// Reduce-scatter.
    ReduceScatter = 7,
    /// Reduce-scatter into blocks.
    ReduceScatterBlock = 8,
    /// Barrier.
    Barrier = 9,
}

/// `AttributeProto`.
#[derive(Clone, PartialEq, Message)]
pub struct AttributeProto {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Documentation.
    #[prost(string, tag = "2")]
    pub doc_string: String,
    /// The value.
    #[prost(
        oneof = "Value",
        tags = "3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32"
    )]
    pub value: Option<Value>,
}

macro_rules! list {
    ($name:ident, $kind:ident, $ty:ty) => {
        /// A `*_list` attribute value: `repeated values = 1`.
        #[derive(Clone, PartialEq, Message)]
        pub struct $name {
            /// The values.
            #[prost($kind, repeated, tag = "1")]
            pub values: Vec<$ty>,
        }
    };
}
list!(DoubleList, double, f64);
list!(FloatList, float, f32);
list!(Int32List, int32, i32);
list!(Int64List, int64, i64);
list!(Uint32List, uint32, u32);
list!(Uint64List, uint64, u64);
list!(Sint32List, sint32, i32);
list!(Sint64List, sint64, i64);
list!(Fixed32List, fixed32, u32);
list!(Fixed64List, fixed64, u64);
list!(Sfixed32List, sfixed32, i32);
list!(Sfixed64List, sfixed64, i64);
list!(BoolList, bool, bool);
list!(StringList, string, String);
list!(BytesList, bytes, Vec<u8>);

/// `AttributeProto.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    /// 3.
    #[prost(double, tag = "3")]
    DoubleVal(f64),
    /// 4.
    #[prost(message, tag = "4")]
    DoubleList(DoubleList),
    /// 5.
    #[prost(float, tag = "5")]
    FloatVal(f32),
    /// 6.
    #[prost(message, tag = "6")]
    FloatList(FloatList),
    /// 7.
    #[prost(int32, tag = "7")]
    Int32Val(i32),
    /// 8.
    #[prost(message, tag = "8")]
    Int32List(Int32List),
    /// 9.
    #[prost(int64, tag = "9")]
    Int64Val(i64),
    /// 10.
    #[prost(message, tag = "10")]
    Int64List(Int64List),
    /// 11.
    #[prost(uint32, tag = "11")]
    Uint32Val(u32),
    /// 12.
    #[prost(message, tag = "12")]
    Uint32List(Uint32List),
    /// 13.
    #[prost(uint64, tag = "13")]
    Uint64Val(u64),
    /// 14.
    #[prost(message, tag = "14")]
    Uint64List(Uint64List),
    /// 15.
    #[prost(sint32, tag = "15")]
    Sint32Val(i32),
    /// 16.
    #[prost(message, tag = "16")]
    Sint32List(Sint32List),
    /// 17.
    #[prost(sint64, tag = "17")]
    Sint64Val(i64),
    /// 18.
    #[prost(message, tag = "18")]
    Sint64List(Sint64List),
    /// 19.
    #[prost(fixed32, tag = "19")]
    Fixed32Val(u32),
    /// 20.
    #[prost(message, tag = "20")]
    Fixed32List(Fixed32List),
    /// 21.
    #[prost(fixed64, tag = "21")]
    Fixed64Val(u64),
    /// 22.
    #[prost(message, tag = "22")]
    Fixed64List(Fixed64List),
    /// 23.
    #[prost(sfixed32, tag = "23")]
    Sfixed32Val(i32),
    /// 24.
    #[prost(message, tag = "24")]
    Sfixed32List(Sfixed32List),
    /// 25.
    #[prost(sfixed64, tag = "25")]
    Sfixed64Val(i64),
    /// 26.
    #[prost(message, tag = "26")]
    Sfixed64List(Sfixed64List),
    /// 27.
    #[prost(bool, tag = "27")]
    BoolVal(bool),
    /// 28.
    #[prost(message, tag = "28")]
    BoolList(BoolList),
    /// 29.
    #[prost(string, tag = "29")]
    StringVal(String),
    /// 30.
    #[prost(message, tag = "30")]
    StringList(StringList),
    /// 31.
    #[prost(bytes, tag = "31")]
    BytesVal(Vec<u8>),
    /// 32.
    #[prost(message, tag = "32")]
    BytesList(BytesList),
}

/// An attribute.
pub fn attr(name: &str, value: Value) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        doc_string: String::new(),
        value: Some(value),
    }
}

impl Node {
    /// The attribute called `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.attr.iter().find(|a| a.name == name).and_then(|a| a.value.as_ref())
    }

    /// An integer attribute of any integer type.
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            Value::Int32Val(v) | Value::Sint32Val(v) | Value::Sfixed32Val(v) => Some(i64::from(*v)),
            Value::Int64Val(v) | Value::Sint64Val(v) | Value::Sfixed64Val(v) => Some(*v),
            Value::Uint32Val(v) | Value::Fixed32Val(v) => Some(i64::from(*v)),
            Value::Uint64Val(v) | Value::Fixed64Val(v) => i64::try_from(*v).ok(),
            _ => None,
        }
    }

    /// An integer-list attribute.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        match self.get(name)? {
            Value::Int64List(l) => Some(l.values.clone()),
            Value::Uint64List(l) => Some(l.values.iter().map(|&v| v as i64).collect()),
            Value::Int32List(l) => Some(l.values.iter().map(|&v| i64::from(v)).collect()),
            _ => None,
        }
    }

    /// The node type, if known.
    pub fn kind(&self) -> Option<NodeType> {
        NodeType::try_from(self.r#type).ok()
    }
}

/// Why a trace cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct TraceError {
    /// The file.
    pub path: String,
    /// What is wrong, naming the rank, node or byte offset.
    pub message: String,
}

fn err(path: &Path, message: impl Into<String>) -> TraceError {
    TraceError {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// One rank's trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The metadata.
    pub metadata: GlobalMetadata,
    /// The nodes, in file order.
    pub nodes: Vec<Node>,
}

impl Trace {
    /// The framed bytes: metadata, then every node, each length-delimited.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into a Vec cannot run out of room.
        let _ = self.metadata.encode_length_delimited(&mut out);
        for n in &self.nodes {
            let _ = n.encode_length_delimited(&mut out);
        }
        out
    }

    /// Decodes framed bytes; `path` names the file in errors.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Trace, TraceError> {
        let mut pos = 0usize;
        let meta = next_message(bytes, &mut pos, "the metadata")
            .map_err(|e| err(path, e.to_string()))?
            .ok_or_else(|| err(path, "empty file: no GlobalMetadata"))?;
        let metadata = GlobalMetadata::decode(meta).map_err(|e| err(path, format!("GlobalMetadata: {e}")))?;
        let mut nodes = Vec::new();
        while let Some(msg) = next_message(bytes, &mut pos, &format!("node {} (in file order)", nodes.len()))
            .map_err(|e| err(path, e.to_string()))?
        {
            let node =
                Node::decode(msg).map_err(|e| err(path, format!("node {} (in file order): {e}", nodes.len())))?;
            nodes.push(node);
        }
        Ok(Trace { metadata, nodes })
    }
}

/// Why a length-delimited message cannot be framed ([`next_message`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum FrameError {
    /// The length prefix does not decode.
    #[error("byte {at}: {what}: the length prefix is not a varint ({cause})")]
    Varint {
        /// Where the message starts.
        at: usize,
        /// Which message (the metadata, node i).
        what: String,
        /// The decoder's complaint.
        cause: prost::DecodeError,
    },
    /// The message runs past the end of the file.
    #[error("byte {at}: {what} is {len} bytes long but the file has {left} left (truncated)")]
    Truncated {
        /// Where the message starts.
        at: usize,
        /// Which message (the metadata, node i).
        what: String,
        /// Its length, bytes.
        len: usize,
        /// The bytes after its prefix.
        left: usize,
    },
}

/// The next length-delimited message of `bytes` from `pos`, if any.
fn next_message<'a>(bytes: &'a [u8], pos: &mut usize, what: &str) -> Result<Option<&'a [u8]>, FrameError> {
    if *pos >= bytes.len() {
        return Ok(None);
    }
    let at = *pos;
    let mut rest = &bytes[at..];
    let len = prost::encoding::decode_varint(&mut rest).map_err(|cause| FrameError::Varint {
        at,
        what: what.into(),
        cause,
    })?;
    let start = bytes.len() - rest.len();
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    if len > rest.len() {
        return Err(FrameError::Truncated {
            at,
            what: what.into(),
            len,
            left: rest.len(),
        });
    }
    *pos = start + len;
    Ok(Some(&bytes[start..start + len]))
}

/// `<prefix>.<rank>.et`.
pub fn rank_path(prefix: &Path, rank: u32) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(format!(".{rank}.et"));
    PathBuf::from(s)
}

/// Reads `<prefix>.0.et`, `<prefix>.1.et`, ... up to the first that is
/// missing (at least rank 0).
pub fn read_traces(prefix: &Path) -> Result<Vec<Trace>, TraceError> {
    let mut out = Vec::new();
    loop {
        let path = rank_path(prefix, out.len() as u32);
        match crate::io::read_limited(&path, MAX_TRACE_BYTES) {
            Ok(bytes) => out.push(Trace::decode(&bytes, &path)?),
            Err(_) if !out.is_empty() => return Ok(out),
            Err(e) => return Err(err(&path, format!("cannot read rank 0's trace: {e}"))),
        }
    }
}

/// Why a schedule cannot be written as Chakra traces.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WriteError {
    /// The schedule was read from another producer's trace: it has no
    /// chunks to write.
    #[error("{}", super::UNTRACKED)]
    Untracked,
    /// More transfers than `comm_tag` (int32) can number.
    #[error("{0} transfers: more than comm_tag (int32) can number")]
    TooManyTransfers(usize),
    /// A transfer depends on one that arrives at neither of its NPUs.
    #[error(
        "transfer {transfer} ({src} -> {dst}) depends on transfer {dep} ({dep_src} -> {dep_dst}), which arrives at neither of its NPUs: a trace only orders a rank's own nodes"
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

/// Refuses what no trace can hold: an untracked schedule, and more
/// transfers than `comm_tag` numbers.
fn check_writable(s: &Schedule) -> Result<(), WriteError> {
    if s.untracked {
        return Err(WriteError::Untracked);
    }
    if s.transfers.len() > i32::MAX as usize {
        return Err(WriteError::TooManyTransfers(s.transfers.len()));
    }
    Ok(())
}

/// Refuses, in transfer order, a dependency that arrives at neither NPU
/// of the transfer waiting for it (a trace only orders a rank's own nodes).
fn check_deps(s: &Schedule) -> Result<(), WriteError> {
    for (i, t) in s.transfers.iter().enumerate() {
        for &d in &t.deps {
            let dt = &s.transfers[d as usize];
            if dt.dst != t.src && dt.dst != t.dst {
                return Err(WriteError::DepElsewhere {
                    transfer: i,
                    src: t.src,
                    dst: t.dst,
                    dep: d,
                    dep_src: dt.src,
                    dep_dst: dt.dst,
                });
            }
        }
    }
    Ok(())
}

/// The node ids of every transfer, numbered per rank in transfer order
/// (ids first: dependencies may point forward in transfer order).
struct NodeIds {
    /// Its send node, on the sender.
    send: Vec<u64>,
    /// Its receive node, on the receiver.
    recv: Vec<u64>,
    /// The node whose end is its arrival, on the receiver: the receive, or
    /// the reduction after it. A copy is one node, all three.
    done: Vec<u64>,
}

impl NodeIds {
    fn of(s: &Schedule) -> NodeIds {
        let nt = s.transfers.len();
        let mut ids = NodeIds {
            send: vec![0; nt],
            recv: vec![0; nt],
            done: vec![0; nt],
        };
        let mut next_id = vec![0u64; s.npus as usize];
        let mut take = |rank: u32| {
            let id = next_id[rank as usize];
            next_id[rank as usize] += 1;
            id
        };
        for (i, t) in s.transfers.iter().enumerate() {
            if t.op == Op::Copy {
                let id = take(t.src);
                (ids.send[i], ids.recv[i], ids.done[i]) = (id, id, id);
                continue;
            }
            ids.send[i] = take(t.src);
            ids.recv[i] = take(t.dst);
            ids.done[i] = if t.op == Op::Reduce { take(t.dst) } else { ids.recv[i] };
        }
        ids
    }
}

/// `comm_size`: the transfer's chunks in bytes, rounded.
fn comm_size(t: &Transfer, chunk_bytes: f64) -> i64 {
    (t.chunk_count() as f64 * chunk_bytes).round() as i64
}

/// The schedule's header, as `GlobalMetadata` attributes, with the
/// buffer its traces move (`dimsum_size_bytes`, a string that reads back
/// exactly: the schedule's own size when it has one, else `chunk_bytes`
/// times its chunks).
fn header(s: &Schedule, chunk_bytes: f64) -> Vec<AttributeProto> {
    let size = s
        .size_bytes
        .filter(|b| (s.chunk_bytes(*b) - chunk_bytes).abs() <= 1e-9 * chunk_bytes.abs())
        .unwrap_or(chunk_bytes * f64::from(s.npus) * f64::from(s.chunks_per_npu));
    vec![
        attr("dimsum_size_bytes", Value::StringVal(format!("{size}"))),
        attr("dimsum_format", Value::StringVal(s.format.clone())),
        attr("dimsum_algorithm", Value::StringVal(s.algorithm.clone())),
        attr("dimsum_topology", Value::StringVal(s.topology.clone())),
        attr("dimsum_collective", Value::StringVal(s.collective.name().into())),
        attr("dimsum_npus", Value::Int64Val(i64::from(s.npus))),
        attr("dimsum_chunks_per_npu", Value::Int64Val(i64::from(s.chunks_per_npu))),
        attr("dimsum_transfers", Value::Int64Val(s.transfers.len() as i64)),
    ]
}

/// The traces of `s`, one per rank.
pub fn from_schedule(s: &Schedule, chunk_bytes: f64) -> Result<Vec<Trace>, WriteError> {
    check_writable(s)?;
    let ids = NodeIds::of(s);
    check_deps(s)?;
    let mut nodes: Vec<Vec<Node>> = vec![Vec::new(); s.npus as usize];
    for i in 0..s.transfers.len() {
        push_transfer(&mut nodes, s, &ids, i, chunk_bytes);
    }
    let header = header(s, chunk_bytes);
    Ok(nodes
        .into_iter()
        .map(|nodes| Trace {
            metadata: GlobalMetadata {
                version: VERSION.into(),
                attr: header.clone(),
            },
            nodes,
        })
        .collect())
}

/// dimsum's attributes of transfer `i` on its send (or copy) node.
fn dimsum_attrs(i: usize, t: &Transfer) -> Vec<AttributeProto> {
    let runs: Vec<u64> = t
        .chunks
        .iter()
        .flat_map(|r| [u64::from(r.start), u64::from(r.count), u64::from(r.stride)])
        .collect();
    let mut common = vec![
        attr("is_cpu_op", Value::BoolVal(false)),
        attr("dimsum_transfer", Value::Int64Val(i as i64)),
        attr("dimsum_chunks", Value::Uint64List(Uint64List { values: runs })),
    ];
    for (name, v) in [
        ("dimsum_deps", &t.deps),
        ("dimsum_after", &t.after),
        ("dimsum_route", &t.route),
    ] {
        if !v.is_empty() {
            common.push(attr(
                name,
                Value::Int64List(Int64List {
                    values: v.iter().map(|&d| i64::from(d)).collect(),
                }),
            ));
        }
    }
    common
}

/// The nodes `t` waits for, per side: the arrivals of its dependencies
/// that landed on its sender, and of those that landed on its receiver.
fn side_deps(s: &Schedule, t: &Transfer, ids: &NodeIds) -> (Vec<u64>, Vec<u64>) {
    let (mut at_src, mut at_dst) = (Vec::new(), Vec::new());
    for &d in &t.deps {
        let dt = &s.transfers[d as usize];
        if dt.dst == t.src {
            at_src.push(ids.done[d as usize]);
        } else if dt.dst == t.dst {
            at_dst.push(ids.done[d as usize]);
        }
    }
    (at_src, at_dst)
}

/// Transfer `i`'s nodes, onto their ranks: a copy node, or a send node, a
/// receive node and, for a reduction, the sum after it.
fn push_transfer(nodes: &mut [Vec<Node>], s: &Schedule, ids: &NodeIds, i: usize, chunk_bytes: f64) {
    let t = &s.transfers[i];
    let size = comm_size(t, chunk_bytes);
    let mut common = dimsum_attrs(i, t);
    let (at_src, at_dst) = side_deps(s, t, ids);
    if t.op == Op::Copy {
        common.push(attr("dimsum_op", Value::StringVal(super::op_name(t.op).into())));
        nodes[t.src as usize].push(Node {
            id: ids.send[i],
            name: format!("copy {i}"),
            r#type: NodeType::CompNode as i32,
            data_deps: at_src,
            attr: common,
            ..Default::default()
        });
        return;
    }
    let mut send_attr = common;
    send_attr.extend([
        attr("comm_dst", Value::Int32Val(t.dst as i32)),
        attr("comm_size", Value::Int64Val(size)),
        attr("comm_tag", Value::Int32Val(i as i32)),
        attr("dimsum_op", Value::StringVal(super::op_name(t.op).into())),
    ]);
    nodes[t.src as usize].push(Node {
        id: ids.send[i],
        name: format!("send {i} to {}", t.dst),
        r#type: NodeType::CommSendNode as i32,
        data_deps: at_src,
        attr: send_attr,
        ..Default::default()
    });
    nodes[t.dst as usize].push(Node {
        id: ids.recv[i],
        name: format!("recv {i} from {}", t.src),
        r#type: NodeType::CommRecvNode as i32,
        data_deps: at_dst,
        attr: vec![
            attr("is_cpu_op", Value::BoolVal(false)),
            attr("comm_src", Value::Int32Val(t.src as i32)),
            attr("comm_size", Value::Int64Val(size)),
            attr("comm_tag", Value::Int32Val(i as i32)),
            attr("dimsum_transfer", Value::Int64Val(i as i64)),
        ],
        ..Default::default()
    });
    if t.op == Op::Reduce {
        let mut deps = vec![ids.recv[i]];
        deps.extend(t.after.iter().map(|&a| ids.send[a as usize]));
        nodes[t.dst as usize].push(Node {
            id: ids.done[i],
            name: format!("reduce {i}"),
            r#type: NodeType::CompNode as i32,
            data_deps: deps,
            attr: vec![
                attr("is_cpu_op", Value::BoolVal(false)),
                attr("dimsum_transfer", Value::Int64Val(i as i64)),
            ],
            ..Default::default()
        });
    }
}

/// Protobuf wire-format writing for [`encode_schedule`]: the bytes prost
/// would write for the same messages (tested equal), without building them.
mod wire {
    pub fn varint(b: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            b.push((v as u8) | 0x80);
            v >>= 7;
        }
        b.push(v as u8);
    }

    /// Decimal digits of `v` (no allocation).
    pub fn num(mut v: u64) -> NumBuf {
        let mut b = [0u8; 20];
        let mut i = 20;
        loop {
            i -= 1;
            b[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        NumBuf(b, i)
    }

    /// A number's digits, from `num`.
    pub struct NumBuf([u8; 20], usize);

    impl std::ops::Deref for NumBuf {
        type Target = [u8];
        fn deref(&self) -> &[u8] {
            &self.0[self.1..]
        }
    }

    /// `out` = the parts, concatenated.
    pub fn text(out: &mut Vec<u8>, parts: &[&[u8]]) {
        out.clear();
        for p in parts {
            out.extend_from_slice(p);
        }
    }

    pub fn varint_len(v: u64) -> usize {
        (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
    }

    /// Bytes of a field key (fields from 16 on take two).
    pub fn key_len(field: u32) -> usize {
        varint_len(u64::from(field << 3))
    }

    pub fn key(b: &mut Vec<u8>, field: u32, wire: u32) {
        varint(b, u64::from(field << 3 | wire));
    }

    /// A varint field, skipped when zero (proto3 defaults).
    pub fn uint(b: &mut Vec<u8>, field: u32, v: u64) {
        if v != 0 {
            key(b, field, 0);
            varint(b, v);
        }
    }

    pub fn bytes(b: &mut Vec<u8>, field: u32, s: &[u8]) {
        key(b, field, 2);
        varint(b, s.len() as u64);
        b.extend_from_slice(s);
    }

    pub fn packed(b: &mut Vec<u8>, field: u32, vals: &[u64]) {
        if vals.is_empty() {
            return;
        }
        key(b, field, 2);
        varint(b, vals.iter().map(|&v| varint_len(v) as u64).sum());
        for &v in vals {
            varint(b, v);
        }
    }

    /// An `AttributeProto` (field 10 of a node) with a varint value in
    /// oneof field `field` (always written, as oneof members are).
    pub fn attr_varint(b: &mut Vec<u8>, name: &str, field: u32, v: u64) {
        let len = 1 + varint_len(name.len() as u64) + name.len() + key_len(field) + varint_len(v);
        key(b, 10, 2);
        varint(b, len as u64);
        bytes(b, 1, name.as_bytes());
        key(b, field, 0);
        varint(b, v);
    }

    /// An `AttributeProto` with a string value (oneof field 29).
    pub fn attr_string(b: &mut Vec<u8>, name: &str, v: &str) {
        let len = 1 + varint_len(name.len() as u64) + name.len() + key_len(29) + varint_len(v.len() as u64) + v.len();
        key(b, 10, 2);
        varint(b, len as u64);
        bytes(b, 1, name.as_bytes());
        key(b, 29, 2);
        varint(b, v.len() as u64);
        b.extend_from_slice(v.as_bytes());
    }

    /// An `AttributeProto` with a list value (oneof field `field`, a message
    /// with packed `values = 1`).
    pub fn attr_list(b: &mut Vec<u8>, name: &str, field: u32, vals: &[u64]) {
        let inner: usize = if vals.is_empty() {
            0
        } else {
            let p: usize = vals.iter().map(|&v| varint_len(v)).sum();
            1 + varint_len(p as u64) + p
        };
        let len = 1 + varint_len(name.len() as u64) + name.len() + key_len(field) + varint_len(inner as u64) + inner;
        key(b, 10, 2);
        varint(b, len as u64);
        bytes(b, 1, name.as_bytes());
        key(b, field, 2);
        varint(b, inner as u64);
        packed(b, 1, vals);
    }
}

/// The traces of `s` as framed bytes, one per rank: exactly
/// `from_schedule(s, chunk_bytes)` encoded, written directly and in
/// parallel over ranks (millions of nodes per second).
pub fn encode_schedule(s: &Schedule, chunk_bytes: f64) -> Result<Vec<Vec<u8>>, WriteError> {
    use rayon::prelude::*;
    check_writable(s)?;
    let by_rank = ByRank::of(s);
    let ids = NodeIds::of(s);
    check_deps(s)?;
    let meta = metadata_bytes(s, chunk_bytes);
    let out: Vec<Vec<u8>> = (0..s.npus as usize)
        .into_par_iter()
        .map(|r| RankEncoder::encode(s, &ids, chunk_bytes, &meta, r, by_rank.rank(r)))
        .collect();
    Ok(out)
}

/// Per rank, the transfers that put nodes on it, in transfer order (one
/// compressed row per rank).
struct ByRank {
    /// Where each rank's row starts in `transfers` (and, last, the end).
    start: Vec<usize>,
    /// The rows.
    transfers: Vec<u32>,
}

impl ByRank {
    fn of(s: &Schedule) -> ByRank {
        let n = s.npus as usize;
        let mut start = vec![0usize; n + 1];
        for t in &s.transfers {
            start[t.src as usize + 1] += 1;
            if t.dst != t.src {
                start[t.dst as usize + 1] += 1;
            }
        }
        for r in 0..n {
            start[r + 1] += start[r];
        }
        let mut fill = start.clone();
        let mut transfers = vec![0u32; start[n]];
        for (i, t) in s.transfers.iter().enumerate() {
            transfers[fill[t.src as usize]] = i as u32;
            fill[t.src as usize] += 1;
            if t.dst != t.src {
                transfers[fill[t.dst as usize]] = i as u32;
                fill[t.dst as usize] += 1;
            }
        }
        ByRank { start, transfers }
    }

    fn rank(&self, r: usize) -> &[u32] {
        &self.transfers[self.start[r]..self.start[r + 1]]
    }
}

/// The framed `GlobalMetadata` every rank's file starts with.
fn metadata_bytes(s: &Schedule, chunk_bytes: f64) -> Vec<u8> {
    let mut m = Vec::new();
    wire::bytes(&mut m, 1, VERSION.as_bytes());
    for a in header(s, chunk_bytes) {
        // GlobalMetadata's attributes are field 2, not 10.
        let mut b = Vec::new();
        match a.value {
            Some(Value::StringVal(x)) => wire::attr_string(&mut b, &a.name, &x),
            Some(Value::Int64Val(x)) => wire::attr_varint(&mut b, &a.name, 9, x as u64),
            _ => {}
        }
        b[0] = 2 << 3 | 2;
        m.extend_from_slice(&b);
    }
    let mut meta = Vec::new();
    wire::varint(&mut meta, m.len() as u64);
    meta.extend_from_slice(&m);
    meta
}

/// One rank's trace bytes, written node by node into reused buffers.
struct RankEncoder<'a> {
    s: &'a Schedule,
    ids: &'a NodeIds,
    chunk_bytes: f64,
    /// The file so far.
    out: Vec<u8>,
    /// The node being written.
    b: Vec<u8>,
    /// Its name.
    name: Vec<u8>,
    /// Its `data_deps`.
    deps: Vec<u64>,
    /// A list attribute's values.
    list: Vec<u64>,
}

impl<'a> RankEncoder<'a> {
    /// Rank `r`'s file: `meta`, then the nodes of `transfers` on it.
    fn encode(
        s: &'a Schedule,
        ids: &'a NodeIds,
        chunk_bytes: f64,
        meta: &[u8],
        r: usize,
        transfers: &[u32],
    ) -> Vec<u8> {
        let mut e = RankEncoder {
            s,
            ids,
            chunk_bytes,
            // About 200 bytes per node: no regrowth on the way.
            out: Vec::with_capacity(meta.len() + transfers.len() * 240),
            b: Vec::with_capacity(256),
            name: Vec::with_capacity(32),
            deps: Vec::new(),
            list: Vec::new(),
        };
        e.out.extend_from_slice(meta);
        for &i in transfers {
            let i = i as usize;
            let t = &s.transfers[i];
            if t.op == Op::Copy {
                e.copy(i);
                continue;
            }
            if t.src as usize == r {
                e.send(i);
            }
            if t.dst as usize == r {
                e.recv(i);
                if t.op == Op::Reduce {
                    e.reduce(i);
                }
            }
        }
        e.out
    }

    /// The node in `b`, framed, onto the file.
    fn emit(&mut self) {
        wire::varint(&mut self.out, self.b.len() as u64);
        self.out.extend_from_slice(&self.b);
        self.b.clear();
    }

    /// A node's id, `name`, type and `deps`.
    fn head(&mut self, id: u64, kind: NodeType) {
        wire::uint(&mut self.b, 1, id);
        wire::bytes(&mut self.b, 2, &self.name);
        wire::uint(&mut self.b, 3, kind as u64);
        wire::packed(&mut self.b, 5, &self.deps);
    }

    /// `deps` = the nodes transfer `i` waits for on rank `at` (its sender
    /// or its receiver).
    fn side_deps(&mut self, i: usize, at: u32) {
        let (s, ids) = (self.s, self.ids);
        let done = &ids.done;
        let t = &s.transfers[i];
        self.deps.clear();
        self.deps.extend(
            t.deps
                .iter()
                .filter(|&&d| {
                    let dd = s.transfers[d as usize].dst;
                    if at == t.src {
                        dd == t.src
                    } else {
                        dd == t.dst && dd != t.src
                    }
                })
                .map(|&d| done[d as usize]),
        );
    }

    /// dimsum's attributes of transfer `i` (see [`dimsum_attrs`]).
    fn common(&mut self, i: usize) {
        let s = self.s;
        let t = &s.transfers[i];
        let (b, list) = (&mut self.b, &mut self.list);
        wire::attr_varint(b, "is_cpu_op", 27, 0);
        wire::attr_varint(b, "dimsum_transfer", 9, i as u64);
        list.clear();
        list.extend(
            t.chunks
                .iter()
                .flat_map(|c| [u64::from(c.start), u64::from(c.count), u64::from(c.stride)]),
        );
        wire::attr_list(b, "dimsum_chunks", 14, list);
        for (field, v) in [
            ("dimsum_deps", &t.deps),
            ("dimsum_after", &t.after),
            ("dimsum_route", &t.route),
        ] {
            if !v.is_empty() {
                list.clear();
                list.extend(v.iter().map(|&x| u64::from(x)));
                wire::attr_list(b, field, 10, list);
            }
        }
    }

    fn copy(&mut self, i: usize) {
        let s = self.s;
        let t = &s.transfers[i];
        self.side_deps(i, t.src);
        wire::text(&mut self.name, &[b"copy ", &wire::num(i as u64)]);
        self.head(self.ids.send[i], NodeType::CompNode);
        self.common(i);
        wire::attr_string(&mut self.b, "dimsum_op", super::op_name(t.op));
        self.emit();
    }

    fn send(&mut self, i: usize) {
        let s = self.s;
        let t = &s.transfers[i];
        let size = comm_size(t, self.chunk_bytes);
        self.side_deps(i, t.src);
        wire::text(
            &mut self.name,
            &[b"send ", &wire::num(i as u64), b" to ", &wire::num(u64::from(t.dst))],
        );
        self.head(self.ids.send[i], NodeType::CommSendNode);
        self.common(i);
        let b = &mut self.b;
        wire::attr_varint(b, "comm_dst", 7, u64::from(t.dst));
        wire::attr_varint(b, "comm_size", 9, size as u64);
        wire::attr_varint(b, "comm_tag", 7, i as u64);
        wire::attr_string(b, "dimsum_op", super::op_name(t.op));
        self.emit();
    }

    fn recv(&mut self, i: usize) {
        let s = self.s;
        let t = &s.transfers[i];
        let size = comm_size(t, self.chunk_bytes);
        self.side_deps(i, t.dst);
        wire::text(
            &mut self.name,
            &[b"recv ", &wire::num(i as u64), b" from ", &wire::num(u64::from(t.src))],
        );
        self.head(self.ids.recv[i], NodeType::CommRecvNode);
        let b = &mut self.b;
        wire::attr_varint(b, "is_cpu_op", 27, 0);
        wire::attr_varint(b, "comm_src", 7, u64::from(t.src));
        wire::attr_varint(b, "comm_size", 9, size as u64);
        wire::attr_varint(b, "comm_tag", 7, i as u64);
        wire::attr_varint(b, "dimsum_transfer", 9, i as u64);
        self.emit();
    }

    fn reduce(&mut self, i: usize) {
        let s = self.s;
        let t = &s.transfers[i];
        self.deps.clear();
        self.deps.push(self.ids.recv[i]);
        let ids = self.ids;
        self.deps.extend(t.after.iter().map(|&a| ids.send[a as usize]));
        wire::text(&mut self.name, &[b"reduce ", &wire::num(i as u64)]);
        self.head(self.ids.done[i], NodeType::CompNode);
        wire::attr_varint(&mut self.b, "is_cpu_op", 27, 0);
        wire::attr_varint(&mut self.b, "dimsum_transfer", 9, i as u64);
        self.emit();
    }
}

fn meta_get<'a>(m: &'a GlobalMetadata, name: &str) -> Option<&'a Value> {
    m.attr.iter().find(|a| a.name == name).and_then(|a| a.value.as_ref())
}

/// The schedule a set of traces describes: exactly the one written, for
/// traces written by [`from_schedule`] (`dimsum_format` in the metadata; a
/// dimsum header missing a field is refused, naming it); for traces from
/// other producers, an untracked schedule (sizes and compute durations,
/// no chunk identities).
pub fn to_schedule(traces: &[Trace], prefix: &Path) -> Result<Schedule, TraceError> {
    let Some(first) = traces.first() else {
        return Err(err(
            &rank_path(prefix, 0),
            "no traces: expected one file per rank, PREFIX.0.et first",
        ));
    };
    if meta_get(&first.metadata, "dimsum_format").is_none() {
        return foreign(traces, prefix);
    }
    let (s, npus, count) = own_header(traces, prefix)?;
    let found = own_transfers(traces, prefix, npus, count)?;
    own_schedule(s, found, prefix)
}

/// The schedule dimsum's `GlobalMetadata` describes (no transfers yet),
/// its rank count (checked against the files found) and transfer count.
fn own_header(traces: &[Trace], prefix: &Path) -> Result<(Schedule, i64, usize), TraceError> {
    let path0 = rank_path(prefix, 0);
    let m = &traces[0].metadata;
    let text = |name: &str| -> Result<String, TraceError> {
        match meta_get(m, name) {
            Some(Value::StringVal(s)) => Ok(s.clone()),
            _ => Err(err(
                &path0,
                format!(
                    "GlobalMetadata has no `{name}`: not written by dimsum, so its chunks are unknown (a trace names sizes, not which data moves)"
                ),
            )),
        }
    };
    let int = |name: &str| -> Result<i64, TraceError> {
        match meta_get(m, name) {
            Some(Value::Int64Val(v)) => Ok(*v),
            _ => Err(err(&path0, format!("GlobalMetadata has no integer `{name}`"))),
        }
    };
    let format = text("dimsum_format")?;
    let collective = text("dimsum_collective")?;
    let kind = [
        CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce,
        CollectiveKind::AllToAll,
    ]
    .into_iter()
    .find(|k| k.name() == collective)
    .ok_or_else(|| err(&path0, format!("dimsum_collective `{collective}` is not a collective")))?;
    let npus = int("dimsum_npus")?;
    if npus != traces.len() as i64 {
        return Err(err(
            &path0,
            format!(
                "the metadata says {npus} ranks but {} trace files were found",
                traces.len()
            ),
        ));
    }
    let count = int("dimsum_transfers")?;
    let count = usize::try_from(count).map_err(|_| err(&path0, "dimsum_transfers is negative"))?;
    // Each transfer has a send node: more transfers than nodes is a lie
    // that must not size an allocation.
    let nodes: usize = traces.iter().map(|t| t.nodes.len()).sum();
    if count > nodes {
        return Err(err(
            &path0,
            format!("dimsum_transfers is {count} but the traces hold {nodes} nodes: each transfer has a send node"),
        ));
    }
    let mut s = Schedule::new(
        text("dimsum_algorithm")?,
        kind,
        npus as u32,
        int("dimsum_chunks_per_npu")? as u32,
    );
    s.format = format;
    s.topology = text("dimsum_topology")?;
    // Traces written before dimsum recorded the buffer have no size.
    s.size_bytes = match meta_get(m, "dimsum_size_bytes") {
        Some(Value::StringVal(v)) => Some(
            v.parse::<f64>()
                .map_err(|_| err(&path0, format!("dimsum_size_bytes `{v}` is not a number of bytes")))?,
        ),
        _ => None,
    };
    Ok((s, npus, count))
}

/// What dimsum's nodes say: the transfers, by index, and per transfer the
/// sender its receive names (to check every send has one).
struct Found {
    slots: Vec<Option<Transfer>>,
    received: HashMap<usize, u32>,
}

/// What one node of a dimsum trace stands for.
enum OwnNode {
    /// The receive of a transfer (its index), naming its sender.
    Recv(usize, u32),
    /// The node that sends (or copies) a transfer: the transfer.
    Send(usize, Transfer),
    /// A node that only orders (a reduction after its receive).
    Other,
}

/// Every node of dimsum's traces, into [`Found`].
fn own_transfers(traces: &[Trace], prefix: &Path, npus: i64, count: usize) -> Result<Found, TraceError> {
    let mut found = Found {
        slots: vec![None; count],
        received: HashMap::new(),
    };
    for (rank, tr) in traces.iter().enumerate() {
        let path = rank_path(prefix, rank as u32);
        for node in &tr.nodes {
            let at = |m: String| err(&path, format!("rank {rank}, node {} (`{}`): {m}", node.id, node.name));
            match own_node(node, rank, npus, count).map_err(|e| at(e.to_string()))? {
                OwnNode::Recv(idx, src) => {
                    found.received.insert(idx, src);
                }
                OwnNode::Send(idx, t) => {
                    if found.slots[idx].is_some() {
                        return Err(at(format!("transfer {idx} is sent twice")));
                    }
                    found.slots[idx] = Some(t);
                }
                OwnNode::Other => {}
            }
        }
    }
    Ok(found)
}

/// What is wrong with one node of a trace ([`own_node`],
/// [`Foreign::add_node`]); the caller names the rank and the node.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum NodeError {
    /// A node type Chakra does not define.
    #[error("unknown node type {0}")]
    UnknownType(i32),
    /// A node of dimsum's trace without its transfer.
    #[error("no dimsum_transfer attribute")]
    NoTransfer,
    /// A transfer index beyond the schedule's transfers.
    #[error("dimsum_transfer {idx} is not below {count}")]
    TransferRange {
        /// The index given.
        idx: i64,
        /// The schedule's transfers.
        count: usize,
    },
    /// A receive without its sender.
    #[error("a receive without comm_src")]
    NoCommSrc,
    /// A send without its receiver.
    #[error("a send without comm_dst")]
    NoCommDst,
    /// A send without its size.
    #[error("a send without comm_size")]
    NoCommSize,
    /// A node type dimsum's traces do not hold.
    #[error("a {0:?} in a schedule's trace")]
    InSchedule(NodeType),
    /// A node type that has no place in a schedule (foreign traces).
    #[error("a {0:?} node has no place in a schedule")]
    NoPlace(Option<NodeType>),
    /// A collective node: a workload trace, not a schedule's.
    #[error("a collective node: this is a workload trace; import takes traces of point-to-point sends and receives")]
    Collective,
    /// `dimsum_chunks` is not whole runs of u32 values.
    #[error("dimsum_chunks is not a list of start, count, stride triples")]
    Chunks,
    /// `dimsum_op` is absent or not one of the three.
    #[error("dimsum_op is not send, reduce or copy")]
    Op,
    /// A receiver outside the ranks.
    #[error("comm_dst {dst} is not a rank (0..{npus})")]
    DstRange {
        /// The receiver given.
        dst: i64,
        /// The ranks.
        npus: i64,
    },
    /// A receiver outside the other ranks (foreign traces).
    #[error("comm_dst {dst} is not another rank (0..{n})")]
    DstNotOther {
        /// The receiver given.
        dst: i64,
        /// The ranks.
        n: u32,
    },
    /// A sender outside the other ranks (foreign traces).
    #[error("comm_src {src} is not another rank (0..{n})")]
    SrcNotOther {
        /// The sender given.
        src: i64,
        /// The ranks.
        n: u32,
    },
}

/// What `node`, on `rank`, stands for; the error names what is wrong.
fn own_node(node: &Node, rank: usize, npus: i64, count: usize) -> Result<OwnNode, NodeError> {
    let kind = node.kind().ok_or(NodeError::UnknownType(node.r#type))?;
    let idx = node.int("dimsum_transfer").ok_or(NodeError::NoTransfer)?;
    let idx = usize::try_from(idx)
        .ok()
        .filter(|&i| i < count)
        .ok_or(NodeError::TransferRange { idx, count })?;
    match kind {
        NodeType::CommRecvNode => {
            let src = node.int("comm_src").ok_or(NodeError::NoCommSrc)?;
            return Ok(OwnNode::Recv(idx, src as u32));
        }
        NodeType::CommSendNode | NodeType::CompNode if node.get("dimsum_chunks").is_some() => {}
        NodeType::CompNode => return Ok(OwnNode::Other),
        other => return Err(NodeError::InSchedule(other)),
    }
    let runs = node.ints("dimsum_chunks").unwrap_or_default();
    if !runs.len().is_multiple_of(3) || runs.iter().any(|&v| !(0..=i64::from(u32::MAX)).contains(&v)) {
        return Err(NodeError::Chunks);
    }
    let list = |name: &str| -> Vec<u32> {
        node.ints(name)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.clamp(0, i64::from(u32::MAX)) as u32)
            .collect()
    };
    let op = match node.get("dimsum_op") {
        Some(Value::StringVal(o)) if o == "send" => Op::Send,
        Some(Value::StringVal(o)) if o == "reduce" => Op::Reduce,
        Some(Value::StringVal(o)) if o == "copy" => Op::Copy,
        _ => return Err(NodeError::Op),
    };
    let dst = if op == Op::Copy {
        rank as i64
    } else {
        node.int("comm_dst").ok_or(NodeError::NoCommDst)?
    };
    if !(0..npus).contains(&dst) {
        return Err(NodeError::DstRange { dst, npus });
    }
    Ok(OwnNode::Send(
        idx,
        Transfer {
            src: rank as u32,
            dst: dst as u32,
            op,
            chunks: runs
                .chunks(3)
                .map(|c| Run {
                    start: c[0] as u32,
                    count: c[1] as u32,
                    stride: c[2] as u32,
                })
                .collect(),
            deps: list("dimsum_deps").into(),
            route: list("dimsum_route").into(),
            after: list("dimsum_after").into(),
            bytes: None,
            duration_ns: 0.0,
        },
    ))
}

/// `s` with the transfers found: every one sent, every send received, the
/// schedule valid and free of dependency cycles.
fn own_schedule(mut s: Schedule, found: Found, prefix: &Path) -> Result<Schedule, TraceError> {
    for (i, slot) in found.slots.into_iter().enumerate() {
        let t = slot.ok_or_else(|| err(prefix, format!("transfer {i} has no send node on any rank")))?;
        if t.op != Op::Copy && found.received.get(&i) != Some(&t.src) {
            return Err(err(
                &rank_path(prefix, t.dst),
                format!(
                    "rank {}: no receive matches transfer {i} sent by rank {} (comm_tag {i})",
                    t.dst, t.src
                ),
            ));
        }
        s.transfers.push(t);
    }
    s.check().map_err(|e| err(prefix, e.to_string()))?;
    if let Some(t) = cycle(&s) {
        let tr = &s.transfers[t];
        return Err(err(
            &rank_path(prefix, tr.src),
            format!(
                "rank {}: transfer {t} (to rank {}) is in a dependency cycle: it waits, through data_deps, for itself",
                tr.src, tr.dst
            ),
        ));
    }
    Ok(s)
}

/// A trace from another producer (ASTRA-sim's, MSCCL's conversion): sends
/// matched to receives per (sender, receiver, tag) in file order, each
/// pair a transfer of `comm_size` bytes; a `COMP_NODE` a local operation of
/// its `duration_micros`; a send's `data_deps` its `deps`, a receive's its
/// `after` (it completes after them). Which data moves is not in such a
/// trace, so the schedule is untracked: a replay times it and checks its
/// structure, not the data.
fn foreign(traces: &[Trace], prefix: &Path) -> Result<Schedule, TraceError> {
    let n = traces.len() as u32;
    let kind = match meta_get(&traces[0].metadata, "collective") {
        Some(Value::StringVal(c)) if c == "allgather" => CollectiveKind::AllGather,
        Some(Value::StringVal(c)) if c == "reducescatter" => CollectiveKind::ReduceScatter,
        _ => CollectiveKind::AllReduce,
    };
    let mut s = Schedule::new("chakra", kind, n.max(2), 1);
    s.untracked = true;
    s.topology = String::new();
    let mut f = Foreign {
        of: vec![HashMap::new(); traces.len()],
        sends: HashMap::new(),
        recvs: HashMap::new(),
    };
    // Pass 1: a transfer per send and per compute node.
    for (r, tr) in traces.iter().enumerate() {
        let path = rank_path(prefix, r as u32);
        for node in &tr.nodes {
            f.add_node(&mut s, r, node)
                .map_err(|e| err(&path, format!("rank {r}, node {} (`{}`): {e}", node.id, node.name)))?;
        }
    }
    f.match_receives(prefix)?;
    // Pass 2: dependencies.
    f.link(&mut s, traces, prefix)?;
    for t in &mut s.transfers {
        for v in [&mut t.deps, &mut t.after] {
            v.sort_unstable();
            v.dedup();
        }
    }
    s.check().map_err(|e| err(prefix, e.to_string()))?;
    if let Some(t) = cycle(&s) {
        let tr = &s.transfers[t];
        return Err(err(
            &rank_path(prefix, tr.src),
            format!("rank {}: transfer {t} is in a dependency cycle", tr.src),
        ));
    }
    Ok(s)
}

/// A (sender, receiver, tag) triple: sends and receives match per key.
type Tagged = (u32, u32, i64);

/// A foreign trace set on its way to a schedule.
struct Foreign {
    /// Per rank: node id -> the transfer that stands for it.
    of: Vec<HashMap<u64, u32>>,
    /// Sends waiting for their receive: transfers, in file order.
    sends: HashMap<Tagged, VecDeque<u32>>,
    /// Receives waiting for their send: (rank, node id), in file order.
    recvs: HashMap<Tagged, VecDeque<(usize, u64)>>,
}

impl Foreign {
    /// Rank `r`'s `node`: a send or a compute node becomes a transfer of
    /// `s`, a receive waits for its send; the error names what is wrong.
    fn add_node(&mut self, s: &mut Schedule, r: usize, node: &Node) -> Result<(), NodeError> {
        let n = self.of.len() as u32;
        let local = |dst: u32, op: Op, bytes: Option<f64>, duration_ns: f64| Transfer {
            src: r as u32,
            dst,
            op,
            chunks: SmallVec::new(),
            deps: SmallVec::new(),
            route: SmallVec::new(),
            after: SmallVec::new(),
            bytes,
            duration_ns,
        };
        match node.kind() {
            Some(NodeType::CommSendNode) => {
                let dst = node.int("comm_dst").ok_or(NodeError::NoCommDst)?;
                if !(0..i64::from(n)).contains(&dst) || dst == r as i64 {
                    return Err(NodeError::DstNotOther { dst, n });
                }
                let size = node.int("comm_size").ok_or(NodeError::NoCommSize)?;
                let id = s.transfers.len() as u32;
                s.transfers
                    .push(local(dst as u32, Op::Send, Some(size.max(0) as f64), 0.0));
                self.of[r].insert(node.id, id);
                let tag = node.int("comm_tag").unwrap_or(0);
                self.sends.entry((r as u32, dst as u32, tag)).or_default().push_back(id);
            }
            Some(NodeType::CommRecvNode) => {
                let src = node.int("comm_src").ok_or(NodeError::NoCommSrc)?;
                if !(0..i64::from(n)).contains(&src) || src == r as i64 {
                    return Err(NodeError::SrcNotOther { src, n });
                }
                let tag = node.int("comm_tag").unwrap_or(0);
                self.recvs
                    .entry((src as u32, r as u32, tag))
                    .or_default()
                    .push_back((r, node.id));
            }
            Some(NodeType::CompNode) => {
                let id = s.transfers.len() as u32;
                s.transfers
                    .push(local(r as u32, Op::Copy, None, us_to_ns(node.duration_micros as f64)));
                self.of[r].insert(node.id, id);
            }
            Some(NodeType::CommCollNode) => {
                return Err(NodeError::Collective);
            }
            other => return Err(NodeError::NoPlace(other)),
        }
        Ok(())
    }

    /// Every receive to the send it matches; refuses a receive nobody
    /// sends and a send nobody receives.
    fn match_receives(&mut self, prefix: &Path) -> Result<(), TraceError> {
        for (key, q) in &mut self.recvs {
            let sq = self.sends.entry(*key).or_default();
            while let Some((r, node)) = q.pop_front() {
                let t = sq.pop_front().ok_or_else(|| {
                    err(
                        &rank_path(prefix, r as u32),
                        format!(
                            "rank {r}, node {node}: a receive from rank {} (tag {}) that rank {} never sends",
                            key.0, key.2, key.0
                        ),
                    )
                })?;
                self.of[r].insert(node, t);
            }
        }
        if let Some((key, q)) = self.sends.iter().find(|(_, q)| !q.is_empty()) {
            return Err(err(
                &rank_path(prefix, key.0),
                format!(
                    "rank {}: a send to rank {} (tag {}, transfer {}) that rank {} never receives",
                    key.0, key.1, key.2, q[0], key.1
                ),
            ));
        }
        Ok(())
    }

    /// Every node's `data_deps` and `ctrl_deps` as its transfer's `deps`
    /// (a receive's as its `after`).
    fn link(&self, s: &mut Schedule, traces: &[Trace], prefix: &Path) -> Result<(), TraceError> {
        for (r, tr) in traces.iter().enumerate() {
            let path = rank_path(prefix, r as u32);
            for node in &tr.nodes {
                let me = self.of[r][&node.id];
                let mut deps = Vec::new();
                for d in node.data_deps.iter().chain(&node.ctrl_deps) {
                    let t = *self.of[r].get(d).ok_or_else(|| {
                        err(
                            &path,
                            format!(
                                "rank {r}, node {}: depends on node {d}, which rank {r} does not have",
                                node.id
                            ),
                        )
                    })?;
                    if t != me {
                        deps.push(t);
                    }
                }
                let t = &mut s.transfers[me as usize];
                if node.kind() == Some(NodeType::CommRecvNode) {
                    t.after.extend(deps);
                } else {
                    t.deps.extend(deps);
                }
            }
        }
        Ok(())
    }
}

/// A transfer that can never land, if any: the events are a transfer's
/// wire arrival (after every `deps` transfer has landed) and its landing
/// (after its own and every `after` transfer's wire arrival); whatever
/// Kahn's algorithm never frees sits on or behind a cycle.
fn cycle(s: &Schedule) -> Option<usize> {
    let n = s.transfers.len();
    // Event 2i: wire arrival of i; 2i+1: landing of i.
    let mut indeg = vec![0u32; 2 * n];
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); 2 * n];
    for (i, t) in s.transfers.iter().enumerate() {
        for &d in &t.deps {
            out[2 * d as usize + 1].push(2 * i as u32);
            indeg[2 * i] += 1;
        }
        out[2 * i].push(2 * i as u32 + 1);
        indeg[2 * i + 1] += 1;
        for &a in &t.after {
            out[2 * a as usize].push(2 * i as u32 + 1);
            indeg[2 * i + 1] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..2 * n).filter(|&e| indeg[e] == 0).collect();
    while let Some(e) = ready.pop() {
        for &f in &out[e] {
            indeg[f as usize] -= 1;
            if indeg[f as usize] == 0 {
                ready.push(f as usize);
            }
        }
    }
    (0..2 * n).find(|&e| indeg[e] > 0).map(|e| e / 2)
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    /// The framing is protobuf's: a varint length, then the message.
    #[test]
    fn framing_is_length_delimited() {
        let t = Trace {
            metadata: GlobalMetadata {
                version: "0.0.4".into(),
                attr: vec![],
            },
            nodes: vec![Node {
                id: 1,
                name: "x".into(),
                r#type: NodeType::CompNode as i32,
                ..Default::default()
            }],
        };
        let b = t.encode();
        // Metadata: tag 1 (0x0a), length 5, "0.0.4" = 7 bytes, prefixed by 7.
        assert_eq!(&b[..8], &[7, 0x0a, 5, b'0', b'.', b'0', b'.', b'4']);
        // Node: id (0x08 1), name (0x12 1 'x'), type (0x18 4) = 7 bytes.
        assert_eq!(&b[8..], &[7, 0x08, 1, 0x12, 1, b'x', 0x18, 4]);
        assert_eq!(Trace::decode(&b, Path::new("t")).unwrap(), t);
    }
}
