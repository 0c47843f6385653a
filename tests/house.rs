//! The house rules that keep the code readable, checked on the source:
//! no function over 150 lines (from its `fn` to its closing brace) and no
//! `Result<_, String>` (every error is a type that says what went wrong).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use std::path::{Path, PathBuf};

/// Longest a function may be, lines.
const MOST_LINES: usize = 150;

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

/// `text` with its comments, strings and character literals blanked
/// (newlines kept, so lines still count).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |s: &[u8], out: &mut String| out.extend(s.iter().map(|&c| if c == b'\n' { '\n' } else { ' ' }));
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            i + rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            i + text[i + 2..].find("*/").map_or(rest.len(), |k| k + 4)
        } else if rest.starts_with(b"r\"") || rest.starts_with(b"r#") {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            i + 2
                + hashes
                + text[i + 2 + hashes..]
                    .find(&close)
                    .map_or(rest.len(), |k| k + close.len())
        } else if rest[0] == b'"' {
            let mut k = 1;
            while k < rest.len() && rest[k] != b'"' {
                k += if rest[k] == b'\\' { 2 } else { 1 };
            }
            i + k + 1
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime.
            let lit = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|k| k + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match lit {
                Some(n) => i + n,
                None => {
                    out.push('\'');
                    i += 1;
                    continue;
                }
            }
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
            continue;
        };
        let end = end.min(b.len());
        blank(&b[i..end], &mut out);
        i = end;
    }
    out
}

/// Every function with a body: (lines, file, line of its `fn`, name).
fn functions(src: &Path) -> Vec<(usize, String, usize, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = Vec::new();
    for f in files {
        let code = code_only(&std::fs::read_to_string(&f).unwrap());
        let b = code.as_bytes();
        for (at, _) in code.match_indices("fn ") {
            if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
                continue;
            }
            let name: String = code[at + 3..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() {
                continue;
            }
            let Some(open) = code[at..].find(['{', ';']).map(|k| at + k) else {
                continue;
            };
            if b[open] == b';' {
                continue;
            }
            let mut depth = 0;
            let mut close = open;
            for (k, c) in code[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            close = open + k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let first = code[..at].matches('\n').count() + 1;
            let last = code[..close].matches('\n').count() + 1;
            out.push((last - first + 1, f.display().to_string(), first, name));
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.0));
    out
}

#[test]
fn the_line_counter_counts_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let text = "fn a() {\n    let s = \"}\";\n    // }\n    let c = '}';\n}\nfn b<'a>(x: &'a str) -> &'a str { x }\n";
    std::fs::write(dir.path().join("x.rs"), text).unwrap();
    let fns = functions(dir.path());
    let got: Vec<(usize, usize, &str)> = fns.iter().map(|(n, _, l, name)| (*n, *l, name.as_str())).collect();
    // a: lines 1 to 5 (the braces in a string, a comment and a character
    // do not count); b: one line.
    assert_eq!(got, [(5, 1, "a"), (1, 6, "b")]);
}

#[test]
fn no_function_over_150_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let fns = functions(&src);
    // The check sees functions: the library has hundreds.
    assert!(fns.len() > 500, "{}", fns.len());
    let long: Vec<String> = fns
        .iter()
        .filter(|f| f.0 > MOST_LINES)
        .map(|(n, file, line, name)| format!("{file}:{line}: {name} is {n} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MOST_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_result_with_a_string_error() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for f in files {
        let code = code_only(&std::fs::read_to_string(&f).unwrap());
        for (at, _) in code.match_indices("Result<") {
            // The type arguments, up to the matching `>`; the error is the
            // last one at depth 1.
            let (mut depth, mut args, mut start) = (0, Vec::new(), at + 7);
            for (k, c) in code[at + 6..].char_indices() {
                let pos = at + 6 + k;
                match c {
                    '<' | '(' | '[' => depth += 1,
                    '>' | ')' | ']' => {
                        depth -= 1;
                        if depth == 0 {
                            args.push(code[start..pos].trim().to_string());
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        args.push(code[start..pos].trim().to_string());
                        start = pos + 1;
                    }
                    _ => {}
                }
            }
            if args.len() == 2 && args[1] == "String" {
                let line = code[..at].matches('\n').count() + 1;
                found.push(format!("{}:{line}", f.display()));
            }
        }
    }
    assert!(found.is_empty(), "Result<_, String>:\n{}", found.join("\n"));
}
