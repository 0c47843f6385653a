//! The library's folders are layers (src/lib.rs): a module imports only
//! from its own layer or from layers below it, and no two top-level
//! modules import each other; inside a folder, the files' imports of each
//! other form no circle either. Test modules may reach anywhere; the
//! binary's `cli` sits on top of everything.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first; the rank of each top-level module of the library.
const RANK: [(&str, u8); 12] = [
    ("error", 0),
    ("io", 0),
    ("lp", 0),
    ("progress", 0),
    ("sys", 0),
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

/// The identifiers a path continues with after `at` in `text`: `g` for
/// `g::...` or `g;`, and each first identifier of `{a, b::c, ...}`.
fn heads(text: &str) -> Vec<String> {
    let ident = |t: &str| -> String {
        t.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let t = text.trim_start();
    let Some(inner) = t.strip_prefix('{') else {
        return vec![ident(t)];
    };
    let (mut depth, mut out, mut start) = (0, Vec::new(), 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(ident(inner[start..i].trim_start()));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(ident(inner[start..i].trim_start()));
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// `(file, sibling file)` for every file of a folder (not its mod.rs)
/// that names another file of the same folder (`super::g`, `crate::X::g`),
/// outside comments and test modules.
fn file_edges(src: &Path) -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = BTreeSet::new();
    for f in &files {
        let (Some(dir), Some(stem)) = (f.parent(), f.file_stem().map(|s| s.to_string_lossy().to_string())) else {
            continue;
        };
        if dir == src || stem == "mod" {
            continue;
        }
        let folder = dir.strip_prefix(src).unwrap().to_string_lossy().replace('/', "::");
        let text = std::fs::read_to_string(f).unwrap();
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for prefix in ["super::".to_string(), format!("crate::{folder}::")] {
            for (i, _) in code.match_indices(&prefix) {
                for g in heads(&code[i + prefix.len()..]) {
                    if g != stem && !g.is_empty() && dir.join(format!("{g}.rs")).exists() {
                        out.insert((format!("{folder}/{stem}"), format!("{folder}/{g}")));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn no_circle_of_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = file_edges(&src);
    // Depth-first: a file met again while it is on the path closes a circle.
    let nodes: BTreeSet<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    fn visit<'a>(
        n: &'a String,
        edges: &'a BTreeSet<(String, String)>,
        path: &mut Vec<&'a String>,
        done: &mut BTreeSet<&'a String>,
    ) -> Option<String> {
        if let Some(at) = path.iter().position(|p| *p == n) {
            let circle: Vec<&str> = path[at..].iter().map(|s| s.as_str()).chain([n.as_str()]).collect();
            return Some(circle.join(" -> "));
        }
        if !done.insert(n) {
            return None;
        }
        path.push(n);
        for (_, b) in edges.iter().filter(|(a, _)| a == n) {
            if let Some(c) = visit(b, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for n in &nodes {
        if let Some(c) = visit(n, &edges, &mut Vec::new(), &mut done) {
            panic!("files importing each other in a circle: {c}");
        }
    }
    // The check sees the imports it should: the whole run uses the jobs,
    // the search uses procurement's pricing.
    assert!(
        edges.contains(&("pipeline/run".into(), "pipeline/jobs".into())),
        "{edges:?}"
    );
    assert!(
        edges.contains(&("pipeline/coopt".into(), "pipeline/procure".into())),
        "{edges:?}"
    );
}
