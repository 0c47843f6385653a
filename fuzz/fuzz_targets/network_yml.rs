//! An ASTRA-sim analytical network.yml.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = dimsum::model::topology::Topology::parse_astra(text, std::path::Path::new("network.yml"));
});
