//! The review report: a [`Doc`] as one self-contained HTML page, each
//! chart's SVG inlined, so the page opens anywhere with nothing else (no
//! network, no other files). The SVGs come from the renderer that drew
//! them, never from the files written beside the page.

use super::doc::{Block, Doc};
use std::collections::BTreeMap;

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

/// `doc` as one HTML page titled `title`, each chart's SVG taken from
/// `svgs` (by file stem) and inlined; a chart missing there is named in its
/// place.
pub fn render(doc: &Doc, title: &str, svgs: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(&format!(
        "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
        escape(title),
        STYLE
    ));
    for b in &doc.blocks {
        match b {
            Block::Heading(level, t) => out.push_str(&format!("<h{level}>{}</h{level}>\n", inline(t))),
            Block::Stamp(t) => out.push_str(&format!("<p class=\"stamp\">{}</p>\n", inline(t))),
            Block::Para(lines) => {
                let text: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
                out.push_str(&format!("<p>{}</p>\n", inline(text.join(" ").trim())));
            }
            Block::List(items) => {
                out.push_str("<ul>\n");
                for it in items {
                    out.push_str(&format!("<li>{}</li>\n", inline(it)));
                }
                out.push_str("</ul>\n");
            }
            Block::Table(header, rows) => {
                out.push_str("<table>\n<thead><tr>");
                for c in header {
                    out.push_str(&format!("<th>{}</th>", inline(c)));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for r in rows {
                    out.push_str("<tr>");
                    for c in r {
                        // Numbers (and lists of them) align right, words left.
                        let numeric = !c.is_empty()
                            && c.chars().any(|ch| ch.is_ascii_digit())
                            && c.chars().all(|ch| ch.is_ascii_digit() || " .,-+eE%x$()".contains(ch));
                        if numeric {
                            out.push_str(&format!("<td>{}</td>", inline(c)));
                        } else {
                            out.push_str(&format!("<td class=\"t\">{}</td>", inline(c)));
                        }
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody>\n</table>\n");
            }
            Block::Chart(caption, stem) => match svgs.get(stem) {
                Some(svg) => out.push_str(&format!(
                    "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                    svg_body(svg),
                    escape(caption)
                )),
                None => out.push_str(&format!(
                    "<p>[chart {} not found]</p>\n",
                    escape(&format!("{stem}.png"))
                )),
            },
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// An SVG document's markup from its `<svg` element on (no XML declaration).
fn svg_body(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

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

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::report::doc::tests::sample;

    #[test]
    fn html_escapes_inlines_charts_and_is_self_contained() {
        let svgs = BTreeMap::from([(
            "chart".to_string(),
            "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\"><text>x &amp; y</text></svg>\n".to_string(),
        )]);
        let h = render(&sample(), "T", &svgs);
        assert!(h.contains("<h1>T</h1>"));
        assert!(h.contains("<p class=\"stamp\">stamp <code>x</code></p>"));
        assert!(h.contains("<h2>Part &lt;1&gt;</h2>"));
        assert!(h.contains("<li>one</li>\n<li>two</li>"));
        assert!(h.contains("<th>a</th><th>b</th>"));
        assert!(h.contains("<td>1</td><td class=\"t\"><b>2</b></td>"));
        assert!(h.contains("<td class=\"t\">x</td><td class=\"t\"></td>"));
        assert!(h.contains("<svg width=\"10\""));
        assert!(!h.contains("<?xml"));
        assert!(h.contains("<p>text <code>a&lt;b</code> and more</p>"));
        assert!(!h.contains("src=") && !h.contains("href="), "self-contained");
        let missing = render(&sample(), "T", &BTreeMap::new());
        assert!(missing.contains("<p>[chart chart.png not found]</p>"));
    }
}
