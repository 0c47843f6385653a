//! LIBRA's inputs: the first byte picks the reader (ASTRA-sim 1.0 workload
//! text, communicator YAML, network YAML, cost-model YAML), the rest is
//! the file.
#![no_main]
use dimsum::interop::libra;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let path = dimsum_fuzz::scratch(rest, "txt");
    match pick % 4 {
        0 => drop(libra::read_workload(&path)),
        1 => drop(libra::read_communicator(&path)),
        2 => drop(libra::read_network(&path)),
        _ => drop(libra::read_cost_model(&path)),
    }
});
