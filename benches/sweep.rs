//! The sweep over every 4-dimension split of 4096 NPUs with three building
//! blocks per dimension (165 shapes x 81 block choices = 13,365 designs, each
//! a certified perf solve at 1,000 GB/s per NPU), timed once: too long for
//! criterion's repeated samples. `cargo bench --bench sweep`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::pipeline::sweep::{self, Shard};
use dimsum::study::Study;
use std::path::Path;
use std::time::Instant;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = Study::load(&root.join("studies/gpt3-shapes.toml")).expect("study");
    let spec = &s.sweeps[0];
    let dir = std::env::temp_dir().join(format!("dimsum-bench-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let n = sweep::items(spec, s.fabric.ndims()).len();
    let t = Instant::now();
    let o = sweep::run(
        &sweep::SweepOn::of(&s),
        spec,
        Shard::ALL,
        &dir,
        None,
        &dimsum::progress::Quiet,
    )
    .expect("sweep");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "sweep/gpt3-shapes: {n} designs in {secs:.2} s ({:.2} ms per design, {} rayon threads)",
        1e3 * secs / n as f64,
        rayon::current_num_threads()
    );
    assert_eq!(o.items, n);
    let _ = std::fs::remove_dir_all(&dir);
}
