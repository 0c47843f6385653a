//! One Chakra ET trace (protobuf, length-delimited).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dimsum::interop::chakra::Trace::decode(data, std::path::Path::new("trace.0.et"));
});
