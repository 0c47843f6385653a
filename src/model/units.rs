//! Units and the conversions between them.
//!
//! dimsum follows LIBRA's convention: bandwidth is GB/s per NPU per dimension
//! with 1 GB = 1e9 B, sizes are bytes, and times are nanoseconds inside the
//! model. The pleasant consequence is that `bytes / (GB/s)` is exactly a time
//! in nanoseconds (1 B / 1e9 B/s = 1 ns), which is how LIBRA adds collective
//! times to the compute times of an ASTRA-sim 1.0 workload (cycles at 1 GHz,
//! i.e. ns). Reports convert to milliseconds at the edge.
//!
//! The model works on plain `f64` in these units (the optimizer needs raw
//! numbers); the helpers here name every conversion so none is written inline.

/// Bytes in one GB (decimal, as LIBRA and dimsum use).
pub const BYTES_PER_GB: f64 = 1e9;
/// Bytes in one GiB (binary, as ASTRA-sim's network configs use).
pub const BYTES_PER_GIB: f64 = 1_073_741_824.0;
/// Bits in one GB.
pub const BITS_PER_GB: f64 = 8e9;
/// Nanoseconds in one millisecond.
pub const NS_PER_MS: f64 = 1e6;
/// Nanoseconds in one microsecond (Chakra's `duration_micros`).
pub const NS_PER_US: f64 = 1e3;
/// Dollars in one $M (the optimizer's unit of capex).
pub const USD_PER_MUSD: f64 = 1e6;
/// Watts in one kW (the optimizer's unit of power).
pub const W_PER_KW: f64 = 1e3;

/// A GiB count as bytes.
pub fn gib(n: f64) -> f64 {
    n * BYTES_PER_GIB
}

/// A MiB count as bytes.
pub fn mib(n: f64) -> f64 {
    n * 1_048_576.0
}

/// Nanoseconds to milliseconds.
pub fn ns_to_ms(ns: f64) -> f64 {
    ns / NS_PER_MS
}

/// Nanoseconds to microseconds.
pub fn ns_to_us(ns: f64) -> f64 {
    ns / NS_PER_US
}

/// Microseconds to nanoseconds.
pub fn us_to_ns(us: f64) -> f64 {
    us * NS_PER_US
}

/// Dollars to millions of dollars.
pub fn usd_to_musd(usd: f64) -> f64 {
    usd / USD_PER_MUSD
}

/// Watts to kilowatts.
pub fn w_to_kw(w: f64) -> f64 {
    w / W_PER_KW
}

/// Gigabits to gigabytes (a port's Gb/s per direction as GB/s).
pub fn gbits_to_gbytes(gbits: f64) -> f64 {
    gbits / 8.0
}

/// FLOP per ns of an NPU with a peak of `peak_tflops` TFLOP/s run at
/// `efficiency` (TFLOP/s x 1e12 = FLOP/s; / 1e9 = FLOP/ns).
pub fn flops_per_ns(peak_tflops: f64, efficiency: f64) -> f64 {
    peak_tflops * 1e12 * efficiency / 1e9
}

/// Time in ns to move `bytes` at `gbps` GB/s: bytes / (GB/s) = ns.
/// Zero bytes take no time even on a zero-bandwidth dimension; positive bytes
/// on zero bandwidth take forever (`f64::INFINITY`).
///
/// ```
/// use dimsum::model::units::transfer_ns;
/// // 1 GB at 100 GB/s: 1e9 B / 100 B/ns = 1e7 ns (10 ms).
/// assert!((transfer_ns(1e9, 100.0) - 1e7).abs() < 1e-6);
/// assert!(transfer_ns(0.0, 0.0).abs() < f64::EPSILON);
/// assert!(transfer_ns(1.0, 0.0).is_infinite());
/// ```
pub fn transfer_ns(bytes: f64, gbps: f64) -> f64 {
    if bytes <= 0.0 {
        0.0
    } else if gbps <= 0.0 {
        f64::INFINITY
    } else {
        bytes / gbps
    }
}

/// Watts drawn by moving `gbps` GB/s at `pj_per_bit` picojoules per bit:
/// GB/s * 8e9 bit/GB * pJ/bit * 1e-12 J/pJ.
pub fn watts(gbps: f64, pj_per_bit: f64) -> f64 {
    gbps * BITS_PER_GB * pj_per_bit * 1e-12
}

/// The largest size dimsum takes: 1 PiB (2^50 bytes), far above any
/// collective's buffer, so that no time or count computed from it
/// overflows.
pub const MAX_BYTES: f64 = 1_125_899_906_842_624.0;

/// The bandwidths dimsum takes, GB/s: from 1 MB/s to 1 PB/s.
pub const GBPS_RANGE: (f64, f64) = (1e-3, 1e6);

/// The longest time dimsum takes: 10^15 ns (about 11.6 days).
pub const MAX_TIME_NS: f64 = 1e15;

/// `text` as an error message shows it: whole up to 32 characters, else
/// its first 24 and how long it is.
pub fn echo(text: &str) -> String {
    let n = text.chars().count();
    if n <= 32 {
        text.to_string()
    } else {
        format!("{}... ({n} characters)", text.chars().take(24).collect::<String>())
    }
}

/// Why a number with a unit could not be read. Each message says what is
/// allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a size (`parse_bytes`).
    #[error("`{}` is not a size: give bytes, e.g. 1048576, 64MB or 1GiB", echo(.0))]
    Size(String),
    /// A size above [`MAX_BYTES`].
    #[error("`{}` is above the largest size taken, 1 PiB (2^50 bytes)", echo(.0))]
    SizeTooLarge(String),
    /// Not a bandwidth (`parse_gbps`).
    #[error("`{}` is not a bandwidth: give GB/s, e.g. 50, 100GB/s, 50GiB/s, or bits, 400Gb/s", echo(.0))]
    Bandwidth(String),
    /// A bandwidth outside [`GBPS_RANGE`].
    #[error("`{}` is outside the bandwidths taken, 0.001 to 1000000 GB/s (1 MB/s to 1 PB/s)", echo(.0))]
    BandwidthRange(String),
    /// Not a time (`parse_time_ns`).
    #[error("`{}` is not a time: give e.g. 0.5us, 500ns or 1ms", echo(.0))]
    Time(String),
    /// A time above [`MAX_TIME_NS`].
    #[error("`{}` is above the longest time taken, 10^15 ns (about 11.6 days)", echo(.0))]
    TimeTooLong(String),
    /// Not a list or range of sizes (`parse_sizes`).
    #[error("`{}`: FROM must be at least 1 byte and TO at least FROM", echo(.0))]
    SizeRange(String),
    /// An empty list of sizes (`parse_sizes`).
    #[error("list at least one size")]
    NoSizes,
    /// A size below one byte in a list (`parse_sizes`).
    #[error("`{}`: a collective moves at least 1 byte", echo(.0))]
    BelowOneByte(String),
}

/// Splits `text` into its number and the unit after it (`"50GiB/s"` ->
/// `(50.0, "GiB/s")`). `None` if it does not start with a number.
fn split_number(text: &str) -> Option<(f64, String)> {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == '_'
                || ((c == 'e' || c == 'E')
                    && i > 0
                    && t[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+'))
                || ((c == '-' || c == '+') && (i == 0 || t[..i].ends_with(['e', 'E']))))
        })
        .map_or(t.len(), |(i, _)| i);
    let number: f64 = t[..end].replace('_', "").parse().ok()?;
    Some((number, t[end..].trim().to_string()))
}

/// Sizes in bytes: a comma-separated list of [`parse_bytes`] sizes, or
/// `FROM..TO` for every power of 4 times FROM up to TO.
///
/// ```
/// use dimsum::model::units::parse_sizes;
/// assert_eq!(parse_sizes("1KiB..16KiB").unwrap(), vec![1024.0, 4096.0, 16384.0]);
/// assert_eq!(parse_sizes("64, 1MB").unwrap(), vec![64.0, 1e6]);
/// assert!(parse_sizes("1MB..1KB").is_err());
/// ```
pub fn parse_sizes(text: &str) -> Result<Vec<f64>, UnitError> {
    if let Some((a, b)) = text.split_once("..") {
        let (lo, hi) = (parse_bytes(a.trim())?, parse_bytes(b.trim())?);
        if !(lo >= 1.0 && hi >= lo) {
            return Err(UnitError::SizeRange(text.to_string()));
        }
        let mut out = Vec::new();
        let mut s = lo;
        while s <= hi * (1.0 + 1e-12) {
            out.push(s);
            s *= 4.0;
        }
        return Ok(out);
    }
    let v: Vec<f64> = text
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| match parse_bytes(x)? {
            v if v < 1.0 => Err(UnitError::BelowOneByte(x.to_string())),
            v => Ok(v),
        })
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err(UnitError::NoSizes);
    }
    Ok(v)
}

/// A size in bytes: a plain number of bytes or one with a unit, `B`, `KB`,
/// `MB`, `GB`, `TB` (powers of 1000) or `KiB`, `MiB`, `GiB`, `TiB` (powers of
/// 1024). The error says what is allowed.
pub fn parse_bytes(text: &str) -> Result<f64, UnitError> {
    let bad = || UnitError::Size(text.to_string());
    let (n, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit.as_str() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1_048_576.0,
        "GiB" => BYTES_PER_GIB,
        "TiB" => BYTES_PER_GIB * 1024.0,
        _ => return Err(bad()),
    };
    let v = n * scale;
    if !(v.is_finite() && v >= 0.0) {
        Err(bad())
    } else if v > MAX_BYTES {
        Err(UnitError::SizeTooLarge(text.to_string()))
    } else {
        Ok(v)
    }
}

/// A bandwidth in GB/s (1 GB = 1e9 B): a plain number (GB/s) or one with a
/// unit, `GB/s`, `GiB/s`, `MB/s`, `TB/s`, or bits: `Gbps`, `Gb/s`,
/// `Gbit/s`, `Tb/s`.
pub fn parse_gbps(text: &str) -> Result<f64, UnitError> {
    let bad = || UnitError::Bandwidth(text.to_string());
    let (n, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit.as_str() {
        "" | "GB/s" | "GBps" => 1.0,
        "GiB/s" => BYTES_PER_GIB / BYTES_PER_GB,
        "MB/s" => 1e-3,
        "TB/s" => 1e3,
        "Gbps" | "Gb/s" | "Gbit/s" => 1.0 / 8.0,
        "Tbps" | "Tb/s" | "Tbit/s" => 1e3 / 8.0,
        _ => return Err(bad()),
    };
    let v = n * scale;
    if !v.is_finite() {
        Err(bad())
    } else if !(GBPS_RANGE.0..=GBPS_RANGE.1).contains(&v) {
        Err(UnitError::BandwidthRange(text.to_string()))
    } else {
        Ok(v)
    }
}

/// A time in ns: a plain number with a default unit (`default_ns` ns per
/// unit, e.g. 1000 for microseconds) or one with a unit, `ns`, `us`, `ms`, `s`.
pub fn parse_time_ns(text: &str, default_ns: f64) -> Result<f64, UnitError> {
    let bad = || UnitError::Time(text.to_string());
    let (n, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit.as_str() {
        "" => default_ns,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad()),
    };
    let v = n * scale;
    if !(v.is_finite() && v >= 0.0) {
        Err(bad())
    } else if v > MAX_TIME_NS {
        Err(UnitError::TimeTooLong(text.to_string()))
    } else {
        Ok(v)
    }
}

/// The items of a comma-separated list, trimmed, empty ones dropped.
///
/// ```
/// assert_eq!(dimsum::model::units::split_list(" ring:8, ,torus:4x4"), ["ring:8", "torus:4x4"]);
/// ```
pub fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn bytes_over_gbps_is_ns() {
        // 1 GB at 1 GB/s is one second = 1e9 ns.
        assert_relative_eq!(transfer_ns(1e9, 1.0), 1e9);
        // 805306368 B at 500 GB/s = 1610612.736 ns.
        assert_relative_eq!(transfer_ns(805_306_368.0, 500.0), 1_610_612.736);
        assert_eq!(transfer_ns(0.0, 0.0), 0.0);
        assert!(transfer_ns(1.0, 0.0).is_infinite());
    }

    #[test]
    fn watts_from_pj_per_bit() {
        // 100 GB/s * 8e9 * 10 pJ/bit = 8e12 pJ/s = 8 W.
        assert_relative_eq!(watts(100.0, 10.0), 8.0);
    }

    #[test]
    fn binary_units() {
        assert_relative_eq!(gib(1.0), 1_073_741_824.0);
        assert_relative_eq!(mib(1.0), 1_048_576.0);
        assert_relative_eq!(ns_to_ms(2.5e6), 2.5);
        assert_eq!(ns_to_us(1500.0), 1.5);
        assert_eq!(us_to_ns(3.0), 3000.0);
    }

    #[test]
    fn helpers_are_the_inline_operations_bit_for_bit() {
        // Each helper is the exact operation it replaced (x / 1e6 and
        // x * 1e-6 differ in the last bit), so outputs stay byte-identical.
        for x in [0.1, 1.0 / 3.0, 2.5e6, 123_456_789.123, 7e-3, 4096.0 * 13.7] {
            assert_eq!(ns_to_ms(x).to_bits(), (x / 1e6).to_bits());
            assert_eq!(usd_to_musd(x).to_bits(), (x / 1e6).to_bits());
            assert_eq!(w_to_kw(x).to_bits(), (x / 1e3).to_bits());
            assert_eq!(gbits_to_gbytes(x).to_bits(), (x / 8.0).to_bits());
            assert_eq!(flops_per_ns(x, 0.37).to_bits(), (x * 1e12 * 0.37 / 1e9).to_bits());
        }
    }

    #[test]
    fn parse_units() {
        assert_eq!(parse_bytes("1GiB").unwrap(), 1_073_741_824.0);
        assert_eq!(parse_bytes("64MB").unwrap(), 64e6);
        assert_eq!(parse_bytes("1048576").unwrap(), 1_048_576.0);
        assert_eq!(parse_bytes("1e6").unwrap(), 1e6);
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("-5").is_err());
        // 50 GiB/s = 50 * 1.073741824 GB/s.
        assert_relative_eq!(parse_gbps("50GiB/s").unwrap(), 53.6870912);
        assert_eq!(parse_gbps("100GB/s").unwrap(), 100.0);
        assert_eq!(parse_gbps("400Gbps").unwrap(), 50.0);
        assert!(parse_gbps("0").is_err());
        assert_eq!(parse_time_ns("0.5us", 1.0).unwrap(), 500.0);
        assert_eq!(parse_time_ns("0.5", 1e3).unwrap(), 500.0);
        assert_eq!(parse_time_ns("700ns", 1e3).unwrap(), 700.0);
        assert!(parse_time_ns("fast", 1.0).is_err());
    }

    #[test]
    fn unit_error_messages() {
        assert_eq!(
            parse_bytes("12 parsecs").unwrap_err().to_string(),
            "`12 parsecs` is not a size: give bytes, e.g. 1048576, 64MB or 1GiB"
        );
        assert_eq!(
            parse_gbps("fast").unwrap_err().to_string(),
            "`fast` is not a bandwidth: give GB/s, e.g. 50, 100GB/s, 50GiB/s, or bits, 400Gb/s"
        );
        // Out of range, with the range: 0 GB/s; 2 PB/s; 2^50 + 1 bytes
        // (1 PiB is 1024^5 = 1125899906842624); 10^15 ns + 1.
        assert_eq!(
            parse_gbps("0").unwrap_err().to_string(),
            "`0` is outside the bandwidths taken, 0.001 to 1000000 GB/s (1 MB/s to 1 PB/s)"
        );
        assert!(parse_gbps("2TB/s").is_ok() && parse_gbps("2000TB/s").is_err());
        assert_eq!(parse_bytes("1125899906842624").unwrap(), MAX_BYTES);
        assert_eq!(
            parse_bytes("1125899906842625").unwrap_err(),
            UnitError::SizeTooLarge("1125899906842625".into())
        );
        assert!(parse_time_ns("1000000000000000", 1.0).is_ok());
        assert!(parse_time_ns("1000000000000001", 1.0).is_err());
        // Long values are cut: 40 nines show 24 and the count.
        let long = "9".repeat(40);
        assert_eq!(echo(&long), format!("{}... (40 characters)", "9".repeat(24)));
        assert_eq!(echo("short"), "short");
        assert_eq!(
            parse_time_ns("fast", 1.0).unwrap_err().to_string(),
            "`fast` is not a time: give e.g. 0.5us, 500ns or 1ms"
        );
    }
}
