//! Compute time from first principles: every kernel of a transformer layer
//! timed by a roofline (peak FLOP/s, HBM bandwidth) times an achieved
//! fraction that depends on the kernel's shape, on an accelerator from a
//! built-in table or described by the study.
//!
//! A matrix product of m x n x k (`batch` of them) takes
//! `max(2 batch m n k / (peak x e_gemm x q_tile x q_wave), bytes / (HBM x e_mem))`
//! where `bytes = batch (m k + k n + m n) x element bytes`. The shape
//! factors are NVIDIA's tile and wave quantization ("Matrix Multiplication
//! Background User's Guide", NVIDIA Deep Learning Performance docs): the
//! output is cut into 256 x 128 tiles (`q_tile` = useful / computed
//! elements) and the tiles run in waves of one per streaming multiprocessor
//! (`q_wave` = tiles / (waves x SMs)). Element-wise and normalisation
//! kernels (layer norm, bias + dropout + residual, softmax, GeLU, the
//! optimizer step, the fp32 gradient accumulation) move bytes only and take
//! `bytes / (HBM x e_mem)`. `e_gemm` and `e_mem` are the accelerator's
//! calibration (the fraction of peak a large matrix product and a streaming
//! kernel reach), one pair per accelerator type, with their source in
//! [`ACCELERATORS`].
//!
//! With an explicit `efficiency` (the study's `[npu] efficiency`), every
//! kernel takes `FLOPs / (peak x efficiency)` and memory traffic is not
//! modelled: the one-constant model, kept as an override.

use crate::model::units::flops_per_ns;

/// One accelerator of the built-in table, with the source of every figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Accelerator {
    /// The name a study gives as `[npu] type`.
    pub name: &'static str,
    /// Peak dense BF16 TFLOP/s (no sparsity).
    pub bf16_tflops: f64,
    /// Peak dense FP8 TFLOP/s, where the part has FP8.
    pub fp8_tflops: Option<f64>,
    /// HBM capacity, GiB.
    pub hbm_gib: f64,
    /// HBM bandwidth, GB/s.
    pub hbm_gbps: f64,
    /// Streaming multiprocessors (compute units on AMD parts).
    pub sms: u32,
    /// Board power, W.
    pub tdp_w: f64,
    /// A public list price, $, where one is published.
    pub price_usd: Option<f64>,
    /// Fraction of the BF16 peak a large matrix product reaches.
    pub gemm_efficiency: f64,
    /// Fraction of the HBM bandwidth a streaming kernel reaches.
    pub memory_efficiency: f64,
    /// Where the figures come from, with dates.
    pub source: &'static str,
}

/// The built-in accelerators. Peak figures are the vendors' data-sheet
/// numbers; the calibration is explained per row.
pub const ACCELERATORS: [Accelerator; 6] = [
    Accelerator {
        name: "a100-40gb",
        bf16_tflops: 312.0,
        fp8_tflops: None,
        hbm_gib: 40.0,
        hbm_gbps: 1555.0,
        sms: 108,
        tdp_w: 400.0,
        price_usd: None,
        gemm_efficiency: A100_GEMM,
        memory_efficiency: A100_MEMORY,
        source: "NVIDIA A100 Tensor Core GPU datasheet (2021): 312 TFLOP/s dense BF16, 40 GB HBM2 at 1,555 GB/s, 400 W SXM4, 108 SMs (A100 architecture whitepaper, 2020); calibration as a100-80gb",
    },
    Accelerator {
        name: "a100-80gb",
        bf16_tflops: 312.0,
        fp8_tflops: None,
        hbm_gib: 80.0,
        hbm_gbps: 2039.0,
        sms: 108,
        tdp_w: 400.0,
        price_usd: None,
        gemm_efficiency: A100_GEMM,
        memory_efficiency: A100_MEMORY,
        source: "NVIDIA A100 Tensor Core GPU datasheet (2021): 312 TFLOP/s dense BF16, 80 GB HBM2e at 2,039 GB/s, 400 W SXM4, 108 SMs; calibration: see A100_GEMM and A100_MEMORY",
    },
    Accelerator {
        name: "h100-sxm",
        bf16_tflops: 989.4,
        fp8_tflops: Some(1978.9),
        hbm_gib: 80.0,
        hbm_gbps: 3350.0,
        sms: 132,
        tdp_w: 700.0,
        price_usd: None,
        gemm_efficiency: H100_GEMM,
        memory_efficiency: H100_MEMORY,
        source: "NVIDIA H100 Tensor Core GPU datasheet (2023): 989 TFLOP/s dense BF16, 1,979 dense FP8, 80 GB HBM3 at 3.35 TB/s, up to 700 W, 132 SMs (H100 SXM5); calibration: see H100_GEMM and H100_MEMORY",
    },
    Accelerator {
        name: "h200",
        bf16_tflops: 989.4,
        fp8_tflops: Some(1978.9),
        hbm_gib: 141.0,
        hbm_gbps: 4800.0,
        sms: 132,
        tdp_w: 700.0,
        price_usd: None,
        gemm_efficiency: H100_GEMM,
        memory_efficiency: H100_MEMORY,
        source: "NVIDIA H200 Tensor Core GPU datasheet (2024): H100's compute (989 TFLOP/s dense BF16, 1,979 dense FP8) with 141 GB HBM3e at 4.8 TB/s, up to 700 W; calibration as h100-sxm",
    },
    Accelerator {
        name: "b200",
        bf16_tflops: 2250.0,
        fp8_tflops: Some(4500.0),
        hbm_gib: 180.0,
        hbm_gbps: 8000.0,
        sms: 148,
        tdp_w: 1000.0,
        price_usd: None,
        gemm_efficiency: H100_GEMM,
        memory_efficiency: H100_MEMORY,
        source: "NVIDIA DGX B200 datasheet (2024): 72 PFLOP/s FP8 training and 1,440 GB HBM3e at 64 TB/s for 8 GPUs, i.e. per GPU 4.5 PFLOP/s dense FP8, 2.25 dense BF16, 180 GB at 8 TB/s; 1,000 W per GPU (HGX B200); 148 SMs; no measured calibration: H100's assumed",
    },
    Accelerator {
        name: "mi300x",
        bf16_tflops: 1307.4,
        fp8_tflops: Some(2614.9),
        hbm_gib: 192.0,
        hbm_gbps: 5300.0,
        sms: 304,
        tdp_w: 750.0,
        price_usd: None,
        gemm_efficiency: MI300X_GEMM,
        memory_efficiency: H100_MEMORY,
        source: "AMD Instinct MI300X data sheet (2023): 1,307.4 TFLOP/s dense BF16, 2,614.9 dense FP8, 192 GB HBM3 at 5.3 TB/s, 750 W, 304 compute units; calibration: see MI300X_GEMM",
    },
];

/// A100: 70.5% of the BF16 peak on large matrix products (about 220
/// TFLOP/s), calibrated on one published measurement: the 1.7B row of
/// Megatron-LM's SC'21 Table 1 (Narayanan et al.; TP 1, PP 1, so compute
/// alone up to the overlapped gradient all-reduce; 137 TFLOP/s per GPU),
/// the least efficiency in steps of 0.005 at which dimsum reproduces it
/// (within 0.2%). The other nine rows are predictions: every one within
/// 9.7% (`results/validation/megatron-sc21.md`). NVIDIA's "Matrix
/// Multiplication Background User's Guide" shows a higher plateau (about
/// 80%) for isolated square GEMMs; a training step's GEMMs are smaller and
/// interleaved with other kernels.
pub const A100_GEMM: f64 = 0.705;
/// A100: 80% of the HBM bandwidth for streaming kernels (the fraction
/// STREAM-like copy kernels reach on HBM2e; an assumption, not fitted).
pub const A100_MEMORY: f64 = 0.80;
/// H100 SXM: 70% of the BF16 peak (about 690 TFLOP/s; an assumption, about
/// the A100's calibrated fraction). Not fitted: MosaicML's MPT runs on H100
/// (`results/validation/mpt-h100.md`) come out 8-21% slower than this
/// predicts, and their best single constant is 0.60.
pub const H100_GEMM: f64 = 0.70;
/// H100: 80% of the HBM bandwidth for streaming kernels (an assumption).
pub const H100_MEMORY: f64 = 0.80;
/// MI300X: 45% of the BF16 peak (about 590 TFLOP/s; an assumption, no
/// validation run).
pub const MI300X_GEMM: f64 = 0.45;

/// HBM a built-in accelerator keeps free by default: the CUDA context and
/// the caching allocator's fragmentation, about 2 GiB in practice (an
/// estimate).
pub const DEFAULT_HEADROOM_GIB: f64 = 2.0;

/// The built-in accelerator `name`.
pub fn accelerator(name: &str) -> Option<&'static Accelerator> {
    ACCELERATORS.iter().find(|a| a.name == name)
}

/// The names of the built-in accelerators.
pub fn accelerator_names() -> Vec<&'static str> {
    ACCELERATORS.iter().map(|a| a.name).collect()
}

/// What the compute model needs of an NPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Device {
    /// Peak dense TFLOP/s.
    pub peak_tflops: f64,
    /// HBM bandwidth, GB/s.
    pub hbm_gbps: f64,
    /// Streaming multiprocessors (for wave quantization).
    pub sms: u32,
    /// Fraction of the peak a large matrix product reaches.
    pub gemm_efficiency: f64,
    /// Fraction of the HBM bandwidth a streaming kernel reaches.
    pub memory_efficiency: f64,
    /// The one-constant override: every kernel at this fraction of the
    /// peak, memory traffic not modelled.
    pub flat: Option<f64>,
}

/// Output tile of a matrix product (rows x columns), as cuBLAS's large BF16
/// kernels use on A100 and H100.
const TILE: (f64, f64) = (256.0, 128.0);

impl Device {
    /// Shape efficiency of an m x n output (`batch` of them): tile
    /// quantization times wave quantization, in (0, 1].
    pub fn shape_factor(&self, m: f64, n: f64, batch: f64) -> f64 {
        let (tm, tn) = ((m / TILE.0).ceil(), (n / TILE.1).ceil());
        let q_tile = (m * n) / (tm * TILE.0 * tn * TILE.1);
        let tiles = tm * tn * batch;
        let sms = f64::from(self.sms.max(1));
        let q_wave = tiles / ((tiles / sms).ceil() * sms);
        q_tile * q_wave
    }

    /// Time of `batch` matrix products of m x n x k with `e`-byte elements, ns.
    pub fn gemm_ns(&self, m: f64, n: f64, k: f64, batch: f64, e: f64) -> f64 {
        let flops = 2.0 * batch * m * n * k;
        if let Some(eff) = self.flat {
            return flops / flops_per_ns(self.peak_tflops, eff);
        }
        let eff = self.gemm_efficiency * self.shape_factor(m, n, batch);
        let compute = flops / flops_per_ns(self.peak_tflops, eff);
        compute.max(self.stream_ns(batch * (m * k + k * n + m * n) * e))
    }

    /// Time of a kernel with `flops` at the large-GEMM efficiency and no
    /// shape loss (fused attention), or of its `bytes`, whichever is longer, ns.
    pub fn fused_ns(&self, flops: f64, bytes: f64) -> f64 {
        let eff = self.flat.unwrap_or(self.gemm_efficiency);
        (flops / flops_per_ns(self.peak_tflops, eff)).max(self.stream_ns(bytes))
    }

    /// Time to move `bytes` through HBM, ns (0 under the flat override).
    pub fn stream_ns(&self, bytes: f64) -> f64 {
        if self.flat.is_some() || bytes <= 0.0 {
            return 0.0;
        }
        // GB/s = bytes per ns.
        bytes / (self.hbm_gbps * self.memory_efficiency)
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    fn a100() -> Device {
        Device {
            peak_tflops: 312.0,
            hbm_gbps: 2039.0,
            sms: 108,
            gemm_efficiency: 0.8,
            memory_efficiency: 0.8,
            flat: None,
        }
    }

    #[test]
    fn shape_factors_by_hand() {
        let d = a100();
        // 2048 x 6912: 8 x 54 = 432 tiles exactly (no tile loss), 432 / 108
        // = 4 full waves: factor 1.
        assert_eq!(d.shape_factor(2048.0, 6912.0, 1.0), 1.0);
        // 2048 x 100: one column tile of 128 holds 100 useful columns:
        // q_tile = 100 / 128; 8 tiles in one wave of 108: q_wave = 8 / 108.
        let f = d.shape_factor(2048.0, 100.0, 1.0);
        assert!((f - (100.0 / 128.0) * (8.0 / 108.0)).abs() < 1e-12);
        // 109 tiles take two waves: 109 / 216.
        let f = d.shape_factor(256.0, 128.0, 109.0);
        assert!((f - 109.0 / 216.0).abs() < 1e-12);
    }

    #[test]
    fn gemm_roofline_by_hand() {
        let d = a100();
        // 2048 x 6912 x 2304, factor 1: 2 * 2048 * 6912 * 2304 FLOP at
        // 0.8 * 312 TFLOP/s = 249.6 FLOP/ns.
        let flops = 2.0 * 2048.0 * 6912.0 * 2304.0;
        assert!((d.gemm_ns(2048.0, 6912.0, 2304.0, 1.0, 2.0) - flops / 249.6e3).abs() < 1e-6);
        // A thin product is memory bound: 8192 x 256 x 8 (32 x 2 = 64
        // tiles, q_wave 64/108: 227 ns of compute) moves (8192*8 + 8*256 + 8192*256) * 2 bytes at 0.8 * 2039 GB/s.
        let bytes = (8192.0 * 8.0 + 8.0 * 256.0 + 8192.0 * 256.0) * 2.0;
        let t = d.gemm_ns(8192.0, 256.0, 8.0, 1.0, 2.0);
        assert!((t - bytes / (2039.0 * 0.8)).abs() < 1e-6, "{t}");
        // The flat override: FLOPs at peak x efficiency, bytes free.
        let flat = Device { flat: Some(0.5), ..d };
        assert!((flat.gemm_ns(8192.0, 256.0, 8.0, 1.0, 2.0) - 2.0 * 8192.0 * 256.0 * 8.0 / 156e3).abs() < 1e-9);
        assert_eq!(flat.stream_ns(1e9), 0.0);
    }

    #[test]
    fn table_is_consistent() {
        for a in &ACCELERATORS {
            assert!(a.bf16_tflops > 0.0 && a.hbm_gib > 0.0 && a.hbm_gbps > 0.0 && a.tdp_w > 0.0);
            assert!(a.gemm_efficiency > 0.0 && a.gemm_efficiency <= 1.0, "{}", a.name);
            assert!(a.fp8_tflops.is_none_or(|f| f >= a.bf16_tflops), "{}", a.name);
            assert!(!a.source.is_empty());
        }
        assert_eq!(accelerator("h100-sxm").map(|a| a.sms), Some(132));
        assert!(accelerator("tpu").is_none());
    }
}
