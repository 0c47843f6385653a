//! The review report: `summary.md` as one self-contained HTML page, each
//! chart (`![..](NAME.png)`) replaced by the SVG that `report` wrote beside
//! it, inlined, so the page opens anywhere with nothing else (no network,
//! no other files).
//!
//! The markdown is the subset `cli::run` writes: `#` headings, paragraphs,
//! `-` lists, `|` tables (the second row the separator), image lines,
//! `code`, **bold** and a paragraph in `_..._` (the stamp).

use std::path::Path;

const STYLE: &str = r#"
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; max-width: 1180px; margin: 2em auto; padding: 0 1.5em; color: #1d2733; line-height: 1.45; }
h1 { border-bottom: 3px solid #1f77b4; padding-bottom: .3em; }
h2 { margin-top: 2em; border-bottom: 1px solid #c8d0d8; padding-bottom: .2em; color: #16406b; }
h3 { color: #16406b; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.88em; }
th, td { border: 1px solid #c8d0d8; padding: 4px 8px; text-align: right; vertical-align: top; }
th { background: #eef3f8; }
td:first-child, th:first-child, td.t { text-align: left; }
tr:nth-child(even) td { background: #f8fafc; }
code { background: #f1f4f7; padding: 1px 4px; border-radius: 3px; font-size: 0.92em; }
.stamp { color: #5b6773; font-style: italic; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #e3e8ee; }
figcaption { color: #5b6773; font-size: 0.85em; }
"#;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Inline markup: `code` and **bold**, escaped.
fn inline(s: &str) -> String {
    let mut out = String::new();
    let mut code = false;
    for (i, part) in s.split('`').enumerate() {
        if i > 0 {
            out.push_str(if code { "</code>" } else { "<code>" });
            code = !code;
        }
        if code {
            out.push_str(&escape(part));
        } else {
            let mut bold = false;
            for (j, b) in escape(part).split("**").enumerate() {
                if j > 0 {
                    out.push_str(if bold { "</b>" } else { "<b>" });
                    bold = !bold;
                }
                out.push_str(b);
            }
            if bold {
                out.push_str("</b>");
            }
        }
    }
    if code {
        out.push_str("</code>");
    }
    out
}

fn cells(line: &str) -> Vec<String> {
    let t = line.trim().trim_start_matches('|').trim_end_matches('|');
    t.split('|').map(|c| c.trim().to_string()).collect()
}

/// An SVG file's markup without its XML declaration, or `None`.
fn svg_of(dir: &Path, image: &str) -> Option<String> {
    let stem = image.strip_suffix(".png").or_else(|| image.strip_suffix(".svg"))?;
    if stem.contains('/') || stem.contains("..") {
        return None;
    }
    let text = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).ok()?;
    let start = text.find("<svg")?;
    Some(text[start..].to_string())
}

/// The page for `markdown`, with charts from `dir`.
pub fn render(title: &str, markdown: &str, dir: &Path) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(&format!(
        "<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    ));
    let lines: Vec<&str> = markdown.lines().collect();
    let mut i = 0;
    let mut para: Vec<&str> = Vec::new();
    let flush = |para: &mut Vec<&str>, out: &mut String| {
        if para.is_empty() {
            return;
        }
        let text = para.join(" ");
        let t = text.trim();
        if t.len() > 2 && t.starts_with('_') && t.ends_with('_') {
            out.push_str(&format!("<p class=\"stamp\">{}</p>\n", inline(&t[1..t.len() - 1])));
        } else {
            out.push_str(&format!("<p>{}</p>\n", inline(t)));
        }
        para.clear();
    };
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        if t.is_empty() {
            flush(&mut para, &mut out);
            i += 1;
        } else if let Some(h) = t.strip_prefix("### ") {
            flush(&mut para, &mut out);
            out.push_str(&format!("<h3>{}</h3>\n", inline(h)));
            i += 1;
        } else if let Some(h) = t.strip_prefix("## ") {
            flush(&mut para, &mut out);
            out.push_str(&format!("<h2>{}</h2>\n", inline(h)));
            i += 1;
        } else if let Some(h) = t.strip_prefix("# ") {
            flush(&mut para, &mut out);
            out.push_str(&format!("<h1>{}</h1>\n", inline(h)));
            i += 1;
        } else if t.starts_with("![") && t.ends_with(')') {
            flush(&mut para, &mut out);
            let alt = &t[2..t.find(']').unwrap_or(2)];
            let src = t.rsplit_once('(').map_or("", |(_, s)| s.trim_end_matches(')'));
            match svg_of(dir, src) {
                Some(svg) => out.push_str(&format!(
                    "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
                    escape(alt)
                )),
                None => out.push_str(&format!("<p>[chart {} not found]</p>\n", escape(src))),
            }
            i += 1;
        } else if t.starts_with('|') {
            flush(&mut para, &mut out);
            let header = cells(t);
            let sep = lines
                .get(i + 1)
                .is_some_and(|l| l.trim().starts_with("|-") || l.trim().starts_with("|:"));
            out.push_str("<table>\n");
            if sep {
                out.push_str("<thead><tr>");
                for c in &header {
                    out.push_str(&format!("<th>{}</th>", inline(c)));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                i += 2;
            } else {
                out.push_str("<tbody>\n");
            }
            while i < lines.len() && lines[i].trim().starts_with('|') {
                out.push_str("<tr>");
                for c in cells(lines[i]) {
                    // Numbers (and lists of them) align right, words left.
                    let numeric = !c.is_empty()
                        && c.chars().any(|ch| ch.is_ascii_digit())
                        && c.chars().all(|ch| ch.is_ascii_digit() || " .,-+eE%x$()".contains(ch));
                    if numeric {
                        out.push_str(&format!("<td>{}</td>", inline(&c)));
                    } else {
                        out.push_str(&format!("<td class=\"t\">{}</td>", inline(&c)));
                    }
                }
                out.push_str("</tr>\n");
                i += 1;
            }
            out.push_str("</tbody>\n</table>\n");
        } else if let Some(item) = t.strip_prefix("- ") {
            flush(&mut para, &mut out);
            out.push_str("<ul>\n");
            let mut cur = item.to_string();
            i += 1;
            loop {
                // Continuation lines of an item are indented.
                while i < lines.len() && lines[i].starts_with("  ") && !lines[i].trim().starts_with("- ") {
                    cur.push(' ');
                    cur.push_str(lines[i].trim());
                    i += 1;
                }
                out.push_str(&format!("<li>{}</li>\n", inline(&cur)));
                match lines.get(i).and_then(|l| l.trim().strip_prefix("- ")) {
                    Some(next) => {
                        cur = next.to_string();
                        i += 1;
                    }
                    None => break,
                }
            }
            out.push_str("</ul>\n");
        } else {
            para.push(t);
            i += 1;
        }
    }
    flush(&mut para, &mut out);
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_subset_to_html() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("chart.svg"),
            "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\"><text>x &amp; y</text></svg>\n",
        )
        .unwrap();
        let md = "# T\n\n_stamp `x`_\n\n## Part <1>\n\n- one\n  more\n- two\n\n| a | b |\n|---|---|\n| 1 | **2** |\n\n![c](chart.png)\n\ntext `a<b`\n";
        let h = render("T", md, dir.path());
        assert!(h.contains("<h1>T</h1>"));
        assert!(h.contains("<p class=\"stamp\">stamp <code>x</code></p>"));
        assert!(h.contains("<h2>Part &lt;1&gt;</h2>"));
        assert!(h.contains("<li>one more</li>\n<li>two</li>"));
        assert!(h.contains("<th>a</th><th>b</th>"));
        assert!(h.contains("<td>1</td><td class=\"t\"><b>2</b></td>"));
        assert!(h.contains("<svg width=\"10\""));
        assert!(!h.contains("<?xml"));
        assert!(h.contains("<p>text <code>a&lt;b</code></p>"));
        assert!(!h.contains("src=") && !h.contains("href="), "self-contained");
    }
}
