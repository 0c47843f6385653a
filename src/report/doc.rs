//! A report as typed blocks (headings, paragraphs, lists, tables, charts),
//! rendered two ways: Markdown here (`summary.md`) and one self-contained
//! HTML page in `report::html` (`report.html`, each chart's SVG inlined).
//! Both renderers read the same blocks; neither parses the other's output.
//!
//! Inline text may hold `code` and **bold** spans; both renderers keep
//! them (Markdown as written, HTML as `<code>` and `<b>`, escaped).

/// One block of a report.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading of level 1 to 3.
    Heading(u8, String),
    /// The provenance line under the title (italic).
    Stamp(String),
    /// A paragraph: its lines, joined by a line break in Markdown and by a
    /// space in HTML.
    Para(Vec<String>),
    /// A bulleted list, one line per item.
    List(Vec<String>),
    /// A table: header cells and rows of cells.
    Table(Vec<String>, Vec<Vec<String>>),
    /// A chart: its caption and the file stem of its SVG and PNG.
    Chart(String, String),
}

/// A report: blocks in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    /// The blocks.
    pub blocks: Vec<Block>,
}

impl Doc {
    /// Appends a block.
    pub fn push(&mut self, b: Block) {
        self.blocks.push(b);
    }

    /// Appends a heading.
    pub fn heading(&mut self, level: u8, text: impl Into<String>) {
        self.push(Block::Heading(level, text.into()));
    }

    /// Appends a one-line paragraph.
    pub(crate) fn para(&mut self, text: impl Into<String>) {
        self.push(Block::Para(vec![text.into()]));
    }

    /// Appends a chart.
    pub(crate) fn chart(&mut self, caption: &str, stem: &str) {
        self.push(Block::Chart(caption.into(), stem.into()));
    }

    /// The report as Markdown: blocks separated by one blank line.
    ///
    /// ```
    /// use dimsum::report::doc::{Block, Doc};
    ///
    /// let mut d = Doc::default();
    /// d.heading(1, "Study");
    /// d.push(Block::Para(vec!["First line,".into(), "second line.".into()]));
    /// d.push(Block::List(vec!["a".into(), "b".into()]));
    /// d.push(Block::Table(vec!["x".into(), "y".into()], vec![vec!["1".into(), String::new()]]));
    /// d.push(Block::Chart("The frontier".into(), "frontier-cost".into()));
    /// assert_eq!(
    ///     d.markdown(),
    ///     "# Study\n\nFirst line,\nsecond line.\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | |\n\n![The frontier](frontier-cost.png)\n"
    /// );
    /// ```
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for (i, b) in self.blocks.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            match b {
                Block::Heading(level, t) => {
                    out.push_str(&"#".repeat(usize::from(*level)));
                    out.push(' ');
                    out.push_str(t);
                    out.push('\n');
                }
                Block::Stamp(t) => {
                    out.push('_');
                    out.push_str(t);
                    out.push_str("_\n");
                }
                Block::Para(lines) => {
                    for l in lines {
                        out.push_str(l);
                        out.push('\n');
                    }
                }
                Block::List(items) => {
                    for it in items {
                        out.push_str("- ");
                        out.push_str(it);
                        out.push('\n');
                    }
                }
                Block::Table(header, rows) => {
                    out.push_str(&md_row(header));
                    out.push('|');
                    out.push_str(&"---|".repeat(header.len()));
                    out.push('\n');
                    for r in rows {
                        out.push_str(&md_row(r));
                    }
                }
                Block::Chart(caption, stem) => {
                    out.push_str(&format!("![{caption}]({stem}.png)\n"));
                }
            }
        }
        out
    }
}

/// A Markdown table row; an empty cell is `| |`.
fn md_row(cells: &[String]) -> String {
    let mut s = String::from("|");
    for c in cells {
        if c.is_empty() {
            s.push_str(" |");
        } else {
            s.push(' ');
            s.push_str(c);
            s.push_str(" |");
        }
    }
    s.push('\n');
    s
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> Doc {
        let mut d = Doc::default();
        d.heading(1, "T");
        d.push(Block::Stamp("stamp `x`".into()));
        d.heading(2, "Part <1>");
        d.push(Block::List(vec!["one".into(), "two".into()]));
        d.push(Block::Table(
            vec!["a".into(), "b".into()],
            vec![vec!["1".into(), "**2**".into()], vec!["x".into(), String::new()]],
        ));
        d.chart("c", "chart");
        d.push(Block::Para(vec!["text `a<b`".into(), "and more".into()]));
        d
    }

    #[test]
    fn markdown_blocks_are_separated_by_one_blank_line() {
        let md = sample().markdown();
        assert_eq!(
            md,
            "# T\n\n_stamp `x`_\n\n## Part <1>\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | **2** |\n| x | |\n\n![c](chart.png)\n\ntext `a<b`\nand more\n"
        );
    }
}
