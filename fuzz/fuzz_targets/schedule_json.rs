//! A schedule file (JSON, as `collective --schedule-out` writes it); an
//! accepted schedule is exported as MSCCL-IR and Chakra ET, as `dimsum
//! export` would.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = dimsum_fuzz::scratch(data, "json");
    if let Ok(s) = dimsum::schedule::Schedule::load(&path) {
        let _ = dimsum::interop::msccl::write(&s);
        if s.npus <= 64 {
            let _ = dimsum::interop::chakra::encode_schedule(&s, s.chunk_bytes(1e6));
        }
    }
});
