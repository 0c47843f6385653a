//! The library's folders are layers (src/lib.rs): a module imports only
//! from its own layer or from layers below it, and no two top-level
//! modules import each other. Test modules may reach anywhere; the
//! binary's `cli` sits on top of everything.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first; the rank of each top-level module of the library.
const RANK: [(&str, u8); 10] = [
    ("error", 0),
    ("io", 0),
    ("lp", 0),
    ("model", 1),
    ("schedule", 2),
    ("optimize", 3),
    ("interop", 4),
    ("study", 5),
    ("pipeline", 6),
    ("report", 7),
];

fn rank(m: &str) -> Option<u8> {
    RANK.iter().find(|(n, _)| *n == m).map(|(_, r)| *r)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `(importer, imported)` for every `crate::X` path outside comments and
/// test modules, with the file and line of each upward import.
fn edges(src: &Path) -> (BTreeSet<(String, String)>, Vec<String>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut edges = BTreeSet::new();
    let mut upward = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let Some(own) = rank(&top) else {
            continue; // lib.rs, main.rs, cli/
        };
        let text = std::fs::read_to_string(&f).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (i, _) in line.match_indices("crate::") {
                let dep: String = line[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                let Some(r) = rank(&dep) else { continue };
                if dep == top {
                    continue;
                }
                edges.insert((top.clone(), dep.clone()));
                if r > own {
                    upward.push(format!(
                        "src/{}:{}: {top} imports {dep}: {}",
                        rel.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    (edges, upward)
}

#[test]
fn no_upward_import_and_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (edges, upward) = edges(&src);
    assert!(upward.is_empty(), "imports from a higher layer:\n{}", upward.join("\n"));
    let circles: Vec<String> = edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone())))
        .map(|(a, b)| format!("{a} <-> {b}"))
        .collect();
    assert!(circles.is_empty(), "modules importing each other: {circles:?}");
    // The check sees the imports it should: the pipeline uses the study.
    assert!(edges.contains(&("pipeline".into(), "study".into())), "{edges:?}");
}
