//! Readers and writers of other tools' formats. Each submodule translates
//! between a format and dimsum's types and holds no model logic.
//!
//! - [`astra`]: an ASTRA-sim input set (network, system, memory, the
//!   workload as Chakra traces) for a designed fabric.
//! - [`chakra`]: Chakra execution traces (protobuf, one file per rank), to
//!   and from schedules.
//! - [`msccl`]: MSCCL-IR XML (MSCCLang's output) into schedules, and
//!   schedules into it.
//! - [`libra`]: LIBRA's inputs (astra-sim/libra, ISPASS'24): the ASTRA-sim 1.0
//!   workload text, and the network, communicator and cost-model YAML.
//!
//! ```
//! use dimsum::interop::{chakra, msccl};
//! use dimsum::model::topology;
//! use dimsum::model::workload::CollectiveKind;
//! use dimsum::schedule::algorithm::{self, Algorithm, Options};
//!
//! let topo = topology::from_spec("ring:4", &[50.0], &[0.0])?;
//! let s = algorithm::build(&topo, CollectiveKind::AllReduce, Algorithm::Ring, &Options::default())?;
//! // MSCCL-IR and Chakra ET both carry the schedule back exactly.
//! let xml = msccl::write(&s)?;
//! assert_eq!(msccl::parse(&xml)?.transfers, s.transfers);
//! let traces = chakra::from_schedule(&s, s.chunk_bytes(1e6))?;
//! assert_eq!(traces.len(), 4); // one per rank
//! assert_eq!(chakra::to_schedule(&traces, "ring".as_ref())?.transfers, s.transfers);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod astra;
pub mod chakra;
pub mod libra;
pub mod msccl;

use crate::schedule::Op;

/// Why a writer refuses an untracked schedule.
const UNTRACKED: &str = "an untracked schedule (read from another producer's trace) has no chunks to write: export the schedule it came from";

/// dimsum's name of an operation (`dimsum_op`).
fn op_name(op: Op) -> &'static str {
    match op {
        Op::Send => "send",
        Op::Reduce => "reduce",
        Op::Copy => "copy",
    }
}
