//! Linear constraint expressions over the dimension bandwidths.
//!
//! Grammar (whitespace ignored):
//!
//! ```text
//! constraint := side op side        op := "<=" | ">=" | "==" | "="
//! side       := ["-"] term (("+" | "-") term)*
//! term       := number ["*" name] | name ["*" number] | number
//! name       := a dimension name | "B0" .. "B{n-1}" | "cost" | "power"
//! ```
//!
//! `cost` (dollars) and `power` (watts) are linear in B, so they are
//! substituted by their per-dimension coefficients: every constraint ends up
//! as `sum_d a_d B_d (op) rhs`. An error names the offending token and its
//! column.

use crate::model::cost::Linear;
use crate::model::fabric::Fabric;
use std::fmt;

/// Comparison of a constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sense {
    /// `<=`
    Le,
    /// `>=`
    Ge,
    /// `==`
    Eq,
}

impl fmt::Display for Sense {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sense::Le => "<=",
            Sense::Ge => ">=",
            Sense::Eq => "==",
        })
    }
}

/// What a constraint's right-hand side is measured in, for reporting the
/// value of relaxing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// GB/s (a bandwidth expression).
    Gbps,
    /// Dollars (mentions `cost` only).
    Usd,
    /// Watts (mentions `power` only).
    Watts,
}

/// `sum_d coeffs[d] * B_d (sense) rhs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// How the user wrote it (or a generated description).
    pub text: String,
    /// Coefficient of each B_d.
    pub coeffs: Vec<f64>,
    /// Comparison.
    pub sense: Sense,
    /// Right-hand side.
    pub rhs: f64,
    /// Unit of the right-hand side.
    pub unit: Unit,
}

impl Constraint {
    /// Left-hand side at `bw`.
    pub fn lhs(&self, bw: &[f64]) -> f64 {
        self.coeffs.iter().zip(bw).map(|(a, b)| a * b).sum()
    }

    /// Whether `bw` satisfies the constraint within a relative tolerance.
    pub fn holds(&self, bw: &[f64], tol: f64) -> bool {
        let lhs = self.lhs(bw);
        let scale = self
            .rhs
            .abs()
            .max(self.coeffs.iter().zip(bw).map(|(a, b)| (a * b).abs()).sum::<f64>())
            .max(1.0);
        match self.sense {
            Sense::Le => lhs <= self.rhs + tol * scale,
            Sense::Ge => lhs >= self.rhs - tol * scale,
            Sense::Eq => (lhs - self.rhs).abs() <= tol * scale,
        }
    }
}

/// Why an expression did not parse: a message and the 1-based column.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    /// What is wrong.
    pub message: String,
    /// 1-based column of the offending token.
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    Plus,
    Minus,
    Star,
    Op(Sense),
}

fn lex(s: &str) -> Result<Vec<(Tok, usize)>, ParseError> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
                // exponent sign: 1e-3, 2E+5
                if (b[i] == b'e' || b[i] == b'E') && i + 1 < b.len() && (b[i + 1] == b'-' || b[i + 1] == b'+') {
                    i += 1;
                }
                i += 1;
            }
            let text = s[start..i].replace('_', "");
            let v = text
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| ParseError {
                    message: format!("`{}` is not a finite number", &s[start..i]),
                    column: col,
                })?;
            out.push((Tok::Num(v), col));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            // '-' is always minus, so dimension names used in constraints
            // are letters, digits and '_'.
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Name(s[start..i].to_string()), col));
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let (tok, len) = match (c, two) {
                (_, "<=") => (Tok::Op(Sense::Le), 2),
                (_, ">=") => (Tok::Op(Sense::Ge), 2),
                (_, "==") => (Tok::Op(Sense::Eq), 2),
                ('=', _) => (Tok::Op(Sense::Eq), 1),
                ('+', _) => (Tok::Plus, 1),
                ('-', _) => (Tok::Minus, 1),
                ('*', _) => (Tok::Star, 1),
                ('<', _) | ('>', _) => {
                    return Err(ParseError {
                        message: format!("`{c}` is not allowed: use `{c}=` (constraints are not strict)"),
                        column: col,
                    });
                }
                _ => {
                    return Err(ParseError {
                        message: format!("unexpected `{c}`"),
                        column: col,
                    });
                }
            };
            out.push((tok, col));
            i += len;
        }
    }
    Ok(out)
}

/// Names a constraint may use on `fabric`.
pub fn names(fabric: &Fabric) -> String {
    let n = fabric.ndims();
    let dims: Vec<&str> = fabric.dims.iter().map(|d| d.name.as_str()).collect();
    format!("B0..B{}, {}, cost, power", n - 1, dims.join(", "))
}

/// Parses `text` into a constraint over `fabric`'s bandwidths.
pub fn parse(text: &str, fabric: &Fabric, cost: &Linear) -> Result<Constraint, ParseError> {
    let toks = lex(text)?;
    let n = fabric.ndims();
    let end = text.len() + 1;
    let op_pos = toks.iter().position(|(t, _)| matches!(t, Tok::Op(_)));
    let Some(op_pos) = op_pos else {
        return Err(ParseError {
            message: "no comparison: use <=, >= or ==".into(),
            column: end,
        });
    };
    if let Some((_, col)) = toks[op_pos + 1..].iter().find(|(t, _)| matches!(t, Tok::Op(_))) {
        return Err(ParseError {
            message: "a second comparison: write one constraint per expression".into(),
            column: *col,
        });
    }
    let Tok::Op(sense) = toks[op_pos].0 else {
        unreachable!("position found an Op")
    };
    // One linear form: coefficients over B, a constant; what it mentions.
    let mut coeffs = vec![0.0; n];
    let mut constant = 0.0;
    let mut mentions = (false, false, false); // (bandwidth, cost, power)
    let op_col = toks[op_pos].1;
    for (side, range, empty_col) in [(1.0, 0..op_pos, op_col), (-1.0, op_pos + 1..toks.len(), end)] {
        let toks = &toks[range];
        if toks.is_empty() {
            return Err(ParseError {
                message: "nothing on this side of the comparison".into(),
                column: empty_col,
            });
        }
        let mut i = 0;
        let mut first = true;
        while i < toks.len() {
            let mut sign = side;
            // Sign.
            match &toks[i].0 {
                Tok::Plus if !first => i += 1,
                Tok::Minus => {
                    sign = -side;
                    i += 1;
                }
                Tok::Plus => i += 1,
                _ if first => {}
                _ => {
                    return Err(ParseError {
                        message: format!("expected + or - before `{}`", show(&toks[i].0)),
                        column: toks[i].1,
                    });
                }
            }
            first = false;
            let Some((t, col)) = toks.get(i) else {
                return Err(ParseError {
                    message: "a term is missing after the sign".into(),
                    column: end,
                });
            };
            // term := number ["*" name] | name ["*" number]
            let (mut factor, mut name): (f64, Option<(String, usize)>) = match t {
                Tok::Num(v) => (*v, None),
                Tok::Name(s) => (1.0, Some((s.clone(), *col))),
                other => {
                    return Err(ParseError {
                        message: format!("expected a number or a name, found `{}`", show(other)),
                        column: *col,
                    });
                }
            };
            i += 1;
            if matches!(toks.get(i), Some((Tok::Star, _))) {
                i += 1;
                match (toks.get(i), &name) {
                    (Some((Tok::Name(s), c)), None) => name = Some((s.clone(), *c)),
                    (Some((Tok::Num(v), _)), Some(_)) => factor *= v,
                    (Some((t, c)), _) => {
                        return Err(ParseError {
                            message: format!("`{}` cannot follow `*` here: write number*name", show(t)),
                            column: *c,
                        });
                    }
                    (None, _) => {
                        return Err(ParseError {
                            message: "a factor is missing after `*`".into(),
                            column: end,
                        });
                    }
                }
                i += 1;
            }
            let factor = sign * factor;
            match name {
                None => constant += factor,
                Some((s, c)) => {
                    if s == "cost" {
                        mentions.1 = true;
                        for (d, k) in coeffs.iter_mut().enumerate() {
                            *k += factor * cost.npus * cost.usd_per_gbps[d];
                        }
                    } else if s == "power" {
                        mentions.2 = true;
                        for (d, k) in coeffs.iter_mut().enumerate() {
                            *k += factor * cost.npus * cost.w_per_gbps[d];
                        }
                    } else {
                        let d = fabric.dim_index(&s).or_else(|| {
                            s.strip_prefix('B')
                                .and_then(|x| x.parse::<usize>().ok())
                                .filter(|d| *d < n)
                        });
                        let Some(d) = d else {
                            return Err(ParseError {
                                message: format!("unknown name `{s}`; allowed: {}", names(fabric)),
                                column: c,
                            });
                        };
                        mentions.0 = true;
                        coeffs[d] += factor;
                    }
                }
            }
        }
    }
    if coeffs.iter().all(|c| *c == 0.0) {
        return Err(ParseError {
            message: "the constraint does not involve any bandwidth".into(),
            column: 1,
        });
    }
    let unit = match mentions {
        (false, true, false) => Unit::Usd,
        (false, false, true) => Unit::Watts,
        _ => Unit::Gbps,
    };
    Ok(Constraint {
        text: text.trim().to_string(),
        coeffs,
        sense,
        rhs: -constant,
        unit,
    })
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Num(v) => v.to_string(),
        Tok::Name(s) => s.clone(),
        Tok::Plus => "+".into(),
        Tok::Minus => "-".into(),
        Tok::Star => "*".into(),
        Tok::Op(s) => s.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::cost::{CostModel, Linear, Tier};
    use crate::model::fabric::tests::libra_4d;

    fn lin() -> Linear {
        let mut m = CostModel::default();
        for (i, t) in ["chiplet", "package", "node", "pod"].iter().enumerate() {
            m.tiers.insert(
                t.to_string(),
                Tier {
                    link_usd_per_gbps: (i + 1) as f64,
                    link_pj_per_bit: 1.0,
                    ..Tier::default()
                },
            );
        }
        Linear::new(&libra_4d(), &m)
    }

    fn p(s: &str) -> Result<Constraint, ParseError> {
        parse(s, &libra_4d(), &lin())
    }

    #[test]
    fn libra_constraints() {
        let c = p("B0 + B1 + B2 + B3 == 1000").unwrap();
        assert_eq!(c.coeffs, vec![1.0; 4]);
        assert_eq!((c.sense, c.rhs), (Sense::Eq, 1000.0));
        let c = p("B0 >= B1").unwrap();
        assert_eq!(c.coeffs, vec![1.0, -1.0, 0.0, 0.0]);
        assert_eq!((c.sense, c.rhs), (Sense::Ge, 0.0));
        let c = p("2*chiplet - package <= 0").unwrap();
        assert_eq!(c.coeffs, vec![2.0, -1.0, 0.0, 0.0]);
        let c = p("-node*0.5 + 3 = pod - 1e2").unwrap();
        // -0.5 node + 3 - pod + 100 = 0  ->  -0.5 node - pod == -103
        assert_eq!(c.coeffs, vec![0.0, 0.0, -0.5, -1.0]);
        assert_eq!((c.sense, c.rhs), (Sense::Eq, -103.0));
    }

    #[test]
    fn cost_and_power_substitute() {
        // cost = 4096 * (1 B0 + 2 B1 + 3 B2 + 4 B3) dollars
        let c = p("cost <= 2e7").unwrap();
        assert_eq!(c.coeffs, vec![4096.0, 8192.0, 12288.0, 16384.0]);
        assert_eq!(c.unit, Unit::Usd);
        // power = 4096 * B * 8e9 * 1 pJ * 1e-12 = 4096 * 0.008 W per GB/s
        let c = p("power <= 4e5").unwrap();
        assert!((c.coeffs[0] - 4096.0 * 0.008).abs() < 1e-9);
        assert_eq!(c.unit, Unit::Watts);
    }

    #[test]
    fn errors_point_at_the_token() {
        let e = p("B0 + B9 <= 3").unwrap_err();
        assert_eq!(e.column, 6);
        assert!(
            e.message.contains("unknown name `B9`") && e.message.contains("chiplet"),
            "{}",
            e.message
        );
        let e = p("B0 + + B1 <= 3").unwrap_err();
        assert_eq!(e.column, 6);
        let e = p("B0 < 3").unwrap_err();
        assert_eq!(e.column, 4);
        let e = p("B0 + B1").unwrap_err();
        assert!(e.message.contains("no comparison"));
        let e = p("B0 <= 3 <= 4").unwrap_err();
        assert_eq!(e.column, 9);
        let e = p("B0 <= ").unwrap_err();
        assert!(e.message.contains("nothing on this side"), "{}", e.message);
        let e = p("3 <= 4").unwrap_err();
        assert!(e.message.contains("does not involve"));
        let e = p("B0 $ 3").unwrap_err();
        assert_eq!(e.column, 4);
        let e = p("B0 * B1 <= 3").unwrap_err();
        assert_eq!(e.column, 6);
        let e = p("1e999*B0 <= 3").unwrap_err();
        assert!(e.message.contains("finite") && e.column == 1, "{}", e.message);
    }
}
