//! A study file (TOML), anchored in studies/ so the LIBRA files it names
//! resolve; an accepted study is evaluated at its own allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = dimsum_fuzz::repo().join("studies/fuzz.toml");
    if let Ok(study) = dimsum::study::Study::parse(text, &path) {
        if let Ok(bw) = study.allocation(None) {
            let _ = study.evaluate_given(&bw);
        }
    }
});
