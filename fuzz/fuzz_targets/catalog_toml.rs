//! A catalog file (TOML, the format of catalog/default.toml).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = dimsum::model::catalog::Catalog::parse(text, std::path::Path::new("fuzz.toml"));
});
