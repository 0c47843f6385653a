//! The command line's value parsers: the first byte picks one (sizes, a
//! size list, bandwidths, times, topology specs without files, shard
//! specs, placement orders, schedule algorithms), the rest is the value.
#![no_main]
use dimsum::model::{topology, units};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match pick % 8 {
        0 => drop(units::parse_bytes(text)),
        1 => drop(units::parse_sizes(text)),
        2 => drop(units::parse_gbps(text)),
        3 => drop(units::parse_time_ns(text, 1e3)),
        4 => {
            // Specs that read files are the readers' own targets.
            let kind = text.split(':').next().unwrap_or("");
            if !matches!(kind, "edges" | "astra" | "fabric") {
                let _ = topology::from_spec(text, &[50.0], &[500.0]);
            }
        }
        5 => drop(dimsum::pipeline::sweep::Shard::parse(text)),
        6 => drop(dimsum::study::parse_order(text)),
        _ => drop(dimsum::optimize::scheduled::parse_algorithm(text)),
    }
});
