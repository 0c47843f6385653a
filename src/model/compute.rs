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
    /// Fraction of the FP8 peak a large FP8 matrix product reaches.
    pub fp8_gemm_efficiency: f64,
    /// Fraction of the HBM bandwidth a streaming kernel reaches.
    pub memory_efficiency: f64,
    /// Where the figures come from, with dates.
    pub source: &'static str,
}

impl Accelerator {
    /// Its FP8 matrix products, where it has them.
    pub fn fp8(&self) -> Option<Fp8> {
        self.fp8_tflops.map(|peak| Fp8 {
            peak_tflops: peak,
            gemm_efficiency: self.fp8_gemm_efficiency,
        })
    }
}

/// The H100 SXM5, which the H800 repeats but for its NVLink (the fabric's).
const H100_SXM: Accelerator = Accelerator {
    name: "h100-sxm",
    bf16_tflops: 989.4,
    fp8_tflops: Some(1978.9),
    hbm_gib: 80.0,
    hbm_gbps: 3350.0,
    sms: 132,
    tdp_w: 700.0,
    price_usd: None,
    gemm_efficiency: H100_GEMM,
    fp8_gemm_efficiency: H100_FP8_GEMM,
    memory_efficiency: H100_MEMORY,
    source: "NVIDIA H100 Tensor Core GPU datasheet (2023): 989 TFLOP/s dense BF16, 1,979 dense FP8, 80 GB HBM3 at 3.35 TB/s, up to 700 W, 132 SMs (H100 SXM5); calibration: see H100_GEMM and H100_MEMORY",
};

/// The built-in accelerators. Peak figures are the vendors' data-sheet
/// numbers; the calibration is explained per row.
pub const ACCELERATORS: [Accelerator; 7] = [
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
        fp8_gemm_efficiency: 0.0,
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
        fp8_gemm_efficiency: 0.0,
        memory_efficiency: A100_MEMORY,
        source: "NVIDIA A100 Tensor Core GPU datasheet (2021): 312 TFLOP/s dense BF16, 80 GB HBM2e at 2,039 GB/s, 400 W SXM4, 108 SMs; calibration: see A100_GEMM and A100_MEMORY",
    },
    H100_SXM,
    Accelerator {
        name: "h800",
        source: "NVIDIA H800 SXM5: the H100 SXM5's compute and memory (989 TFLOP/s dense BF16, 1,979 dense FP8, 80 GB HBM3 at 3.35 TB/s, 700 W, 132 SMs) with NVLink cut to 400 GB/s per GPU (200 GB/s per direction; DeepSeek-AI, \"Insights into DeepSeek-V3\", arXiv 2505.09343: \"reduced from 900 GB/s to 400 GB/s\"); its fabric is the study's; calibration as h100-sxm",
        ..H100_SXM
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
        fp8_gemm_efficiency: H100_FP8_GEMM,
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
        fp8_gemm_efficiency: H100_FP8_GEMM,
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
        fp8_gemm_efficiency: MI300X_GEMM,
        memory_efficiency: H100_MEMORY,
        source: "AMD Instinct MI300X data sheet (2023): 1,307.4 TFLOP/s dense BF16, 2,614.9 dense FP8, 192 GB HBM3 at 5.3 TB/s, 750 W, 304 compute units; calibration: see MI300X_GEMM",
    },
];

/// A100: 80% of the BF16 peak on large matrix products (about 250
/// TFLOP/s; the plateau, before the per-tile fill of [`K_FILL_BYTES`] and
/// the tile and wave quantization), calibrated on one published
/// measurement: the 1.7B row of Megatron-LM's SC'21 Table 1 (Narayanan et
/// al.; TP 1, PP 1, so compute alone up to the overlapped gradient
/// all-reduce; 137 TFLOP/s per GPU), the least efficiency in steps of
/// 0.005 at which dimsum reproduces it within 1% (-0.9%). The other nine
/// rows are predictions (`results/validation/megatron-sc21.md`). NVIDIA's
/// "Matrix Multiplication Background User's Guide" shows about the same
/// plateau (about 80%) for large isolated GEMMs.
pub const A100_GEMM: f64 = 0.80;
/// A100: 80% of the HBM bandwidth for streaming kernels (the fraction
/// STREAM-like copy kernels reach on HBM2e; an assumption, not fitted).
pub const A100_MEMORY: f64 = 0.80;
/// H100 SXM: 57% of the BF16 peak on large matrix products (about 560
/// TFLOP/s), calibrated on one published measurement: MosaicML's MPT-7B
/// on 8 H100s in BF16 (llm-foundry's benchmark table; PyTorch FSDP, no
/// tensor or pipeline parallelism: 459.5 model TFLOP/s per GPU), the least
/// efficiency in steps of 0.005 at which dimsum reproduces it within 1%
/// (-0.8%); the other MPT rows are predictions
/// (`results/validation/mpt-h100.md`). Below the A100's fraction: the
/// H100's tensor cores outrun its memory and the framework's kernels more.
pub const H100_GEMM: f64 = 0.55;
/// H100: 80% of the HBM bandwidth for streaming kernels (an assumption).
pub const H100_MEMORY: f64 = 0.80;
/// H100 (and H800, H200, B200): the fraction of the dense FP8 peak a large
/// FP8 matrix product reaches (Transformer Engine's recipe): fitted on one
/// published row, NVIDIA NeMo 24.07's GPT-3 5B on 64 DGX-H100 GPUs in FP8
/// (TP 1, PP 1: compute alone up to the gradient all-reduce; 23,406
/// tokens/s per GPU), the least efficiency in steps of 0.005 at which
/// dimsum's prediction is within 1% of it (-0.6%;
/// `validation/nemo-h100.toml`, every other row a prediction).
pub const H100_FP8_GEMM: f64 = 0.55;
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
    /// A parametric accelerator's arrays, buffer and vector units
    /// (`[npu.arch]`); `None` for a GPU of the built-in table.
    pub onchip: Option<OnChip>,
    /// Its FP8 matrix products, where it has them.
    pub fp8: Option<Fp8>,
}

/// An accelerator's FP8 matrix products: the dense FP8 peak and the
/// fraction of it a large product reaches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fp8 {
    /// Peak dense FP8 TFLOP/s.
    pub peak_tflops: f64,
    /// Fraction of that peak a large FP8 matrix product reaches.
    pub gemm_efficiency: f64,
}

/// What the compute model sees of a parametric accelerator beyond a GPU's
/// roofline (`model::arch`): its matrix units are output-stationary
/// systolic arrays, its GEMM operands pass through one on-chip buffer, and
/// its element-wise kernels run on vector units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnChip {
    /// One array's output tile, rows x columns (its PEs, width x depth):
    /// the tile of the tile and wave quantization, over `Device::sms`
    /// arrays.
    pub tile: [f64; 2],
    /// Cycles an output tile spends filling and draining the array beyond
    /// its k steps (width + depth): a tile of reduction length k runs at
    /// k / (k + fill) of its peak.
    pub fill: f64,
    /// The shared on-chip buffer operands are tiled through, bytes.
    pub buffer_bytes: f64,
    /// Element-wise throughput of the vector units, elements per ns (an
    /// element-wise kernel's every 2 bytes streamed count as one element).
    pub vector_elements_per_ns: f64,
}

impl OnChip {
    /// HBM bytes of `batch` products of m x n x k (`e`-byte elements)
    /// tiled through the buffer: output blocks of tm x tn stay on chip
    /// (half the buffer; the other half streams the operands' k-slices),
    /// so A is read ceil(n / tn) times, B ceil(m / tm) times and C written
    /// once; the least over tm in powers of two (the tiling search of a
    /// per-level roofline). With a buffer holding the whole output block,
    /// each operand moves once: `(m k + k n + m n) e`.
    pub fn gemm_bytes(&self, m: f64, n: f64, k: f64, batch: f64, e: f64) -> f64 {
        let block = (self.buffer_bytes / (2.0 * e)).floor();
        let once = m * k + k * n + m * n;
        if !(m >= 1.0 && n >= 1.0) {
            // Less than one row or column (or not a number): nothing to tile.
            return batch * e * once;
        }
        if block < 1.0 {
            // No output element fits: every operand element read for each use.
            return batch * e * (2.0 * m * n * k + m * n).max(once);
        }
        let mut best = f64::INFINITY;
        let mut tm: f64 = 1.0;
        loop {
            let tm_used = tm.min(m);
            let tn = (block / tm_used).floor().min(n);
            if tn >= 1.0 {
                let elems = m * k * (n / tn).ceil() + k * n * (m / tm_used).ceil() + m * n;
                best = best.min(elems);
            }
            if tm >= m {
                break;
            }
            tm *= 2.0;
        }
        batch * e * best.max(once)
    }
}

/// Output tile of a matrix product (rows x columns), as cuBLAS's large BF16
/// kernels use on A100 and H100.
const TILE: (f64, f64) = (256.0, 128.0);

/// A GPU matrix product's fixed cost per output tile, in bytes of its
/// reduction dimension k: the software pipeline that streams k through
/// shared memory fills before the first product and drains after the last
/// (cuBLAS's and CUTLASS's A100 and H100 kernels keep 3-4 stages of 64
/// BF16 or 128 FP8 elements of k in flight: about 256 BF16, 512 FP8
/// elements, 512 bytes), plus the tile's epilogue. A product runs at `k /
/// (k + K_FILL_BYTES / e)` of its plateau efficiency: short-k products
/// (a small expert's down projection, 768 deep) well below it, the long-k
/// products of a large model near it. The parametric accelerator's
/// systolic fill (`OnChip::fill`, 256 elements) is the same effect.
pub const K_FILL_BYTES: f64 = 512.0;

impl Device {
    /// Shape efficiency of an m x n output (`batch` of them): tile
    /// quantization times wave quantization, in (0, 1].
    pub fn shape_factor(&self, m: f64, n: f64, batch: f64) -> f64 {
        let tile = self.onchip.map_or([TILE.0, TILE.1], |o| o.tile);
        let (tm, tn) = ((m / tile[0]).ceil(), (n / tile[1]).ceil());
        let q_tile = (m * n) / (tm * tile[0] * tn * tile[1]);
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
        let mut eff = self.gemm_efficiency * self.shape_factor(m, n, batch);
        let bytes = match &self.onchip {
            None => {
                eff *= k / (k + K_FILL_BYTES / e);
                batch * (m * k + k * n + m * n) * e
            }
            Some(o) => {
                eff *= k / (k + o.fill);
                o.gemm_bytes(m, n, k, batch, e)
            }
        };
        let compute = flops / flops_per_ns(self.peak_tflops, eff);
        compute.max(self.hbm_ns(bytes))
    }

    /// The device its FP8 matrix products run on (the FP8 peak and its
    /// calibration), if it has them.
    pub fn fp8_device(&self) -> Option<Device> {
        self.fp8.map(|f| Device {
            peak_tflops: f.peak_tflops,
            gemm_efficiency: f.gemm_efficiency,
            fp8: None,
            ..*self
        })
    }

    /// Time of a kernel with `flops` at the large-GEMM efficiency and no
    /// shape loss (fused attention), or of its `bytes` through HBM, or of
    /// its `elements` of softmax on a parametric accelerator's vector
    /// units, whichever is longest, ns.
    pub fn fused_ns(&self, flops: f64, bytes: f64, elements: f64) -> f64 {
        let eff = self.flat.unwrap_or(self.gemm_efficiency);
        let vector = match &self.onchip {
            Some(o) if self.flat.is_none() => elements / o.vector_elements_per_ns,
            _ => 0.0,
        };
        (flops / flops_per_ns(self.peak_tflops, eff))
            .max(self.hbm_ns(bytes))
            .max(vector)
    }

    /// Time of an element-wise kernel streaming `bytes` through HBM, ns
    /// (0 under the flat override): the HBM's time, or a parametric
    /// accelerator's vector units' where slower.
    pub fn stream_ns(&self, bytes: f64) -> f64 {
        let hbm = self.hbm_ns(bytes);
        match &self.onchip {
            Some(o) if hbm > 0.0 => hbm.max(bytes / 2.0 / o.vector_elements_per_ns),
            _ => hbm,
        }
    }

    /// Time to move `bytes` through HBM, ns (0 under the flat override).
    fn hbm_ns(&self, bytes: f64) -> f64 {
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
            onchip: None,
            fp8: None,
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
        // 0.8 * 312 TFLOP/s = 249.6 FLOP/ns, times the fill of 512 bytes
        // (256 BF16 elements) of k: 2304 / 2560 = 0.9.
        let flops = 2.0 * 2048.0 * 6912.0 * 2304.0;
        assert!((d.gemm_ns(2048.0, 6912.0, 2304.0, 1.0, 2.0) - flops / (249.6e3 * 0.9)).abs() < 1e-6);
        // The same in FP8 (1-byte elements): the fill is 512 elements,
        // 2304 / 2816.
        let fp8 = d.gemm_ns(2048.0, 6912.0, 2304.0, 1.0, 1.0);
        assert!((fp8 - flops / (249.6e3 * 2304.0 / 2816.0)).abs() < 1e-6);
        // A thin product is bound by its tiles' fill: 8192 x 256 x 8 (32 x
        // 2 = 64 tiles, q_wave 64/108) at 8 / (8 + 256) of the plateau,
        // 7.5 us, where its (8192*8 + 8*256 + 8192*256) * 2 bytes take 2.7
        // us at 0.8 * 2039 GB/s.
        let flops = 2.0 * 8192.0 * 256.0 * 8.0;
        let t = d.gemm_ns(8192.0, 256.0, 8.0, 1.0, 2.0);
        assert!(
            (t - flops / (249.6e3 * (64.0 / 108.0) * (8.0 / 264.0))).abs() < 1e-6,
            "{t}"
        );
        let bytes = (8192.0 * 8.0 + 8.0 * 256.0 + 8192.0 * 256.0) * 2.0;
        assert!(t > bytes / (2039.0 * 0.8));
        // The flat override: FLOPs at peak x efficiency, bytes free.
        let flat = Device { flat: Some(0.5), ..d };
        assert!((flat.gemm_ns(8192.0, 256.0, 8.0, 1.0, 2.0) - 2.0 * 8192.0 * 256.0 * 8.0 / 156e3).abs() < 1e-9);
        assert_eq!(flat.stream_ns(1e9), 0.0);
    }

    /// One 128 x 128 array at 1 GHz (32.768 TFLOP/s), 100 GB/s of HBM.
    fn one_array(buffer_bytes: f64) -> Device {
        Device {
            peak_tflops: 2.0 * 128.0 * 128.0 / 1e3,
            hbm_gbps: 100.0,
            sms: 1,
            gemm_efficiency: 1.0,
            memory_efficiency: 1.0,
            flat: None,
            onchip: Some(OnChip {
                tile: [128.0, 128.0],
                fill: 256.0,
                buffer_bytes,
                vector_elements_per_ns: 32.0,
            }),
            fp8: None,
        }
    }

    #[test]
    fn tiled_traffic_by_hand() {
        // 1024^3 in BF16 through 64 KiB: output blocks of 16,384 elements
        // (half the buffer). tm = 128, tn = 128: A read 1024/128 = 8 times
        // (8 Mi elements), B 8 times, C once (1 Mi): 17 Mi elements. Every
        // other power of two moves more: tm 64 / tn 256 and tm 256 / tn 64
        // move 4 + 16 + 1 = 21 Mi; tm 16 / tn 1024 moves 1 + 64 + 1 = 66 Mi.
        let mib = 1024.0 * 1024.0;
        let small = one_array(64.0 * 1024.0).onchip.unwrap();
        assert_eq!(small.gemm_bytes(1024.0, 1024.0, 1024.0, 1.0, 2.0), 17.0 * mib * 2.0);
        // 8 MiB holds the whole output (2 Mi elements in half): each
        // operand moves once, as on a GPU.
        let big = one_array(8.0 * mib).onchip.unwrap();
        assert_eq!(big.gemm_bytes(1024.0, 1024.0, 1024.0, 1.0, 2.0), 3.0 * mib * 2.0);
        // A batch moves batch times as much.
        assert_eq!(big.gemm_bytes(1024.0, 1024.0, 1024.0, 3.0, 2.0), 3.0 * 3.0 * mib * 2.0);
    }

    #[test]
    fn array_gemm_by_hand() {
        let flops = 2.0 * 1024.0f64.powi(3);
        // 64 tiles of 128 x 128 on one array: no tile or wave loss; fill
        // and drain: 1024 / (1024 + 256) = 0.8 of 32,768 FLOP/ns.
        let compute = flops / (32_768.0 * 0.8);
        // With 8 MiB the product is compute bound: 81,920 ns.
        let big = one_array(8.0 * 1024.0 * 1024.0);
        assert!((big.gemm_ns(1024.0, 1024.0, 1024.0, 1.0, 2.0) - compute).abs() < 1e-6);
        assert!((compute - 81_920.0).abs() < 1e-6);
        // With 64 KiB it waits on HBM: 34 MiB at 100 GB/s = 356,515.84 ns.
        let small = one_array(64.0 * 1024.0);
        let t = small.gemm_ns(1024.0, 1024.0, 1024.0, 1.0, 2.0);
        assert!((t - 17.0 * 2.0 * 1024.0 * 1024.0 / 100.0).abs() < 1e-6, "{t}");
        // Element-wise kernels run at the slower of HBM (100 B/ns) and the
        // vector units (32 elements of 2 bytes per ns here: 64 B/ns).
        assert!((big.stream_ns(6400.0) - 100.0).abs() < 1e-9);
        // Fused attention: 1e6 softmax elements at 32 per ns outlast 1e6
        // FLOPs (30.5 ns) and 1e3 bytes (10 ns): 31,250 ns.
        assert!((big.fused_ns(1e6, 1e3, 1e6) - 1e6 / 32.0).abs() < 1e-9);
        // A GPU has no vector-unit term.
        assert!((a100().fused_ns(1e6, 1e3, 1e12) - 1e6 / (312e3 * 0.8)).abs() < 1e-9);
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
