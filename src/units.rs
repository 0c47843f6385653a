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

/// Time in ns to move `bytes` at `gbps` GB/s: bytes / (GB/s) = ns.
/// Zero bytes take no time even on a zero-bandwidth dimension; positive bytes
/// on zero bandwidth take forever (`f64::INFINITY`).
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

#[cfg(test)]
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
    }
}
