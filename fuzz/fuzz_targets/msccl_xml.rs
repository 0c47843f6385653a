//! An MSCCL-IR algorithm (XML); an accepted one is written back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(s) = dimsum::interop::msccl::parse(text) {
        let _ = dimsum::interop::msccl::write(&s);
    }
});
