//! Host side of the fused CUDA layer norm kernels (`candle-kernels/src/layer_norm.cu`), which
//! also run the RMS norm and the softmax over the last dimension: which kernel a row width gets,
//! and how it is launched.
//!
//! The kernel tiers come from the registry `candle-kernels/src/layer_norm_tiers.cuh`, which the
//! kernels are instantiated from as well, so the host can only ask for kernels that exist.
use std::sync::OnceLock;

use candle::cuda_backend::cudarc::driver::{
    sys, CudaFunction, CudaSlice, CudaView, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use candle::cuda_backend::{kernel_name, kernels, CudaDType, WrapErr};
use candle::{CudaDevice, CudaStorage, DType, Layout, Result, WithDType};

/// Which normalization a kernel computes: the layer norm, or the RMS norm (no mean removed, no
/// bias), which runs the same tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Norm {
    Layer,
    Rms,
}

/// The kernel name prefix of the softmax kernels, which run the same tiers.
const SOFTMAX: &str = "softmax";

impl Norm {
    fn prefix(self) -> &'static str {
        match self {
            Self::Layer => "layernorm",
            Self::Rms => "rmsnorm",
        }
    }
}

/// Which way a kernel goes: the registry has one tier list per direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Fwd,
    Bwd,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Self::Fwd => "fwd",
            Self::Bwd => "bwd",
        }
    }

    fn registry_list(self) -> &'static str {
        match self {
            Self::Fwd => "LAYER_NORM_FWD_TIERS",
            Self::Bwd => "LAYER_NORM_BWD_TIERS",
        }
    }

    /// The shipped tiers of this direction for `dtype`, in the registry's order.
    fn tiers(self, dtype: DType) -> &'static [Tier] {
        static FWD: [OnceLock<Vec<Tier>>; 2] = [OnceLock::new(), OnceLock::new()];
        static BWD: [OnceLock<Vec<Tier>>; 2] = [OnceLock::new(), OnceLock::new()];
        let cells = match self {
            Self::Fwd => &FWD,
            Self::Bwd => &BWD,
        };
        cells[is_16bit(dtype) as usize].get_or_init(|| {
            parse_tiers(kernels::LAYER_NORM_TIERS, self.registry_list(), dtype)
                .unwrap_or_else(|e| panic!("candle-kernels layer_norm_tiers.cuh: {e}"))
        })
    }
}

/// The two kernels of the backward for rows past the widest backward tier
/// (`layer_norm_bwd.cuh`, `bwd_split_*`): a segment of a row per block for the statistics, a
/// column block for `dx` and the parameter partials.
struct SplitTiers {
    stats: Tier,
    dx: Tier,
}

impl SplitTiers {
    fn get() -> &'static Self {
        static SPLIT: OnceLock<SplitTiers> = OnceLock::new();
        SPLIT.get_or_init(|| {
            let one =
                |list| match parse_tiers(kernels::LAYER_NORM_TIERS, list, DType::F32).as_deref() {
                    Ok([tier]) => tier.clone(),
                    Ok(tiers) => panic!("candle-kernels layer_norm_tiers.cuh: {list}: {tiers:?}"),
                    Err(e) => panic!("candle-kernels layer_norm_tiers.cuh: {e}"),
                };
            Self {
                stats: one("LAYER_NORM_BWD_SPLIT_STATS_TIER"),
                dx: one("LAYER_NORM_BWD_SPLIT_DX_TIER"),
            }
        })
    }

    /// The kernel names, statistics then `dx`; `op` is [`Norm::prefix`]. Rows of 2-byte
    /// elements that fit no 8-byte vector take the `words` instances, which load and store a
    /// full slot in aligned pieces where the others go element by element.
    fn names(op: &str, dtype: DType, n_cols: usize) -> [String; 2] {
        let words = if unaligned_16bit(n_cols, dtype) {
            "words_"
        } else {
            ""
        };
        ["stats", "dx"].map(|k| format!("{op}_bwd_split_{k}_{words}{}", dtype.as_str()))
    }
}

/// One row of the registry: `lanes` threads share a row, each holding `vecs` 16-byte vectors of
/// it; `smem`: the backward keeps its parameter partials in dynamic shared memory (registry
/// value 1, tag `s`; 2, tag `sq`: the layer norm takes the block's rows two at a time, which
/// changes nothing for the host; 3, tag `sqa`: pairs too); `stage` (value 3): the layer norm's
/// backward stages the next pair of rows in shared memory as well, which needs more of it (see
/// [`bwd_stage_bytes`]); `prefetch`: the kernel loads the next row of its group while reducing
/// the current one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tier {
    tag: String,
    lanes: usize,
    vecs: usize,
    smem: bool,
    stage: bool,
    prefetch: bool,
}

/// Whether `dtype` takes the registry's `X16` rows (else its `X32` rows).
fn is_16bit(dtype: DType) -> bool {
    dtype.size_in_bytes() == 2
}

/// Parses the rows `X(tag, lanes, vecs, smem, prefetch, min_blocks)` of the registry macro `list`
/// that `dtype` ships: the `X` rows and, where the macro has them, its `X16` or `X32` rows.
fn parse_tiers(registry: &str, list: &str, dtype: DType) -> std::result::Result<Vec<Tier>, String> {
    let define = format!("#define {list}(");
    let start = registry
        .find(&define)
        .ok_or_else(|| format!("no `{define}`"))?;
    let params = registry[start + define.len()..]
        .split(')')
        .next()
        .unwrap_or_default();
    let params: Vec<&str> = params.split(',').map(str::trim).collect();
    let mut tiers: Vec<Tier> = vec![];
    for line in registry[start..].lines().skip(1) {
        let line = line.trim_end();
        let row = line.trim_end_matches('\\').trim();
        let parsed = row.split_once('(').and_then(|(macro_name, r)| {
            let args = r.strip_suffix(')')?;
            params.contains(&macro_name).then_some((macro_name, args))
        });
        let Some((macro_name, args)) = parsed else {
            return Err(format!("{list}: unexpected line `{line}`"));
        };
        let shipped = match macro_name {
            "X" => true,
            "X16" => is_16bit(dtype),
            "X32" => !is_16bit(dtype),
            _ => return Err(format!("{list}: unknown row macro `{macro_name}`")),
        };
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        let num = |i: usize| -> std::result::Result<usize, String> {
            args.get(i)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{list}: bad row `{row}`"))
        };
        let smem = match num(3)? {
            0 => "",
            1 => "s",
            2 => "sq",
            3 => "sqa",
            _ => return Err(format!("{list}: bad smem flag in `{row}` (0 to 3)")),
        };
        let tier = Tier {
            tag: args[0].to_string(),
            lanes: num(1)?,
            vecs: num(2)?,
            smem: !smem.is_empty(),
            stage: smem == "sqa",
            prefetch: num(4)? != 0,
        };
        num(5)?;
        let tag = format!(
            "l{}v{}{smem}{}{}",
            tier.lanes,
            tier.vecs,
            if tier.prefetch { "p" } else { "" },
            if list == TILE_TIERS { "t" } else { "" }
        );
        if tier.tag != tag {
            return Err(format!("{list}: tag {} should be {tag}", tier.tag));
        }
        if let Some(prev) = tiers.last().filter(|_| shipped) {
            if prev.lanes * prev.vecs > tier.lanes * tier.vecs {
                return Err(format!(
                    "{list}: {} is not sorted by lanes * vecs for {dtype:?}",
                    tier.tag
                ));
            }
        }
        if shipped {
            tiers.push(tier);
        }
        if !line.ends_with('\\') {
            return Ok(tiers);
        }
    }
    Err(format!("{list}: unterminated"))
}

/// The value of `#define {name} <n>` in `registry`.
fn parse_define(registry: &str, name: &str) -> std::result::Result<usize, String> {
    let define = format!("#define {name} ");
    registry
        .lines()
        .find_map(|line| line.strip_prefix(&define))
        .ok_or_else(|| format!("no `{define}<n>`"))?
        .trim()
        .parse()
        .map_err(|e| format!("{name}: {e}"))
}

/// The most partial rows for which the parameter reduce takes a column per thread
/// (`LAYER_NORM_BWD_REDUCE_COLUMN_PARTS`, read from the registry as the kernel reads it).
fn reduce_column_parts() -> usize {
    static PARTS: OnceLock<usize> = OnceLock::new();
    registry_define(&PARTS, "LAYER_NORM_BWD_REDUCE_COLUMN_PARTS")
}

/// The registry list of the layer norm's tile tiers (`layer_norm_bwd.cuh`, `bwd_tile`), whose
/// tags end in `t`.
const TILE_TIERS: &str = "LAYER_NORM_BWD_TILE_TIERS";

/// A `#define` of the registry, read once.
fn registry_define(cell: &'static OnceLock<usize>, name: &str) -> usize {
    *cell.get_or_init(|| {
        parse_define(kernels::LAYER_NORM_TIERS, name)
            .unwrap_or_else(|e| panic!("candle-kernels layer_norm_tiers.cuh: {e}"))
    })
}

/// The layer norm backward's tile tiers that `dtype` ships, in the registry's order.
fn tile_tiers(dtype: DType) -> &'static [Tier] {
    static TILE: [OnceLock<Vec<Tier>>; 2] = [OnceLock::new(), OnceLock::new()];
    TILE[is_16bit(dtype) as usize].get_or_init(|| {
        parse_tiers(kernels::LAYER_NORM_TIERS, TILE_TIERS, dtype)
            .unwrap_or_else(|e| panic!("candle-kernels layer_norm_tiers.cuh: {e}"))
    })
}

/// The tile tier that takes the layer norm's backward of rows of `n_cols` columns, if one does:
/// the first that holds the row, where the row fills more than half of it and either has no
/// 8-byte vectors (the resident tiers' `words` instances) or leaves lanes of a tier of one
/// vector a lane idle. H100, 2026-12-07 (bench/results/2026-12-06-narrow-tiles), 16-bit rows
/// against the resident tiers: 0.68-0.76x their time at 97, 201 and 333 columns, 0.87x at 96
/// and 192; 1.05-2.5x at 32, 48, 64, 128, 256, 384 and 512.
fn tile_tier(dtype: DType, n_cols: usize) -> Option<&'static Tier> {
    let n_vecs = n_cols.div_ceil(16 / dtype.size_in_bytes());
    let tier = tile_tiers(dtype)
        .iter()
        .find(|t| t.lanes * t.vecs >= n_vecs)?;
    let fills_half = 2 * n_vecs > tier.lanes * tier.vecs;
    let idle_lanes = tier.vecs == 1 && n_vecs < tier.lanes;
    (fills_half && (unaligned_16bit(n_cols, dtype) || idle_lanes)).then_some(tier)
}

/// How a tile tier runs a shape: threads a block, rows a tile, dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TileGeometry {
    threads: usize,
    tile_rows: usize,
    smem_bytes: usize,
}

impl TileGeometry {
    /// Tiles of about `LAYER_NORM_BWD_TILE_BYTES` of x, a whole number of rows for each group of
    /// `tier.lanes` threads (and no more rows than the tensor's, so rounded up); shared memory
    /// for two stages of x and dy, dx, and the weights where a lane holds more than
    /// `LAYER_NORM_BWD_TILE_REREAD` columns, or for the groups' partial sums at the end if more
    /// (`bwd_tile`).
    fn new(tier: &Tier, n_rows: usize, n_cols: usize, dtype: DType, acc_bytes: usize) -> Self {
        static THREADS: OnceLock<usize> = OnceLock::new();
        static BYTES: OnceLock<usize> = OnceLock::new();
        static REREAD: OnceLock<usize> = OnceLock::new();
        let threads = registry_define(&THREADS, "LAYER_NORM_BWD_TILE_THREADS");
        let tile_bytes = registry_define(&BYTES, "LAYER_NORM_BWD_TILE_BYTES");
        let reread = tier.vecs * (16 / dtype.size_in_bytes())
            > registry_define(&REREAD, "LAYER_NORM_BWD_TILE_REREAD");
        let groups = threads / tier.lanes;
        let group_bytes = groups * n_cols.max(1) * dtype.size_in_bytes();
        let per_group =
            ((tile_bytes + group_bytes / 2) / group_bytes).clamp(1, n_rows.div_ceil(groups).max(1));
        let tile_rows = groups * per_group;
        let words = (tile_rows * n_cols * dtype.size_in_bytes()).div_ceil(16) + 1;
        let staged = 5 * words * 16 + if reread { n_cols * acc_bytes } else { 0 };
        let partials = 2 * groups * n_cols * acc_bytes;
        Self {
            threads,
            tile_rows,
            smem_bytes: staged.max(partials),
        }
    }
}

/// Past this many columns, 16-bit rows without vectors take the softmax's `big` kernel (see
/// [`LaunchPlan::big_when_unaligned`]). H200, 2026-12-02, the layer-norm forward's element by
/// element tiers: at 50257 and 65535 columns the `big` kernel takes half to three quarters of
/// the widest tier's time; at 7777 it took 1.8 times the tier's (measured with the aligned
/// pieces inside the kernel's one loop, the build before they got an instance of their own).
const BIG_UNALIGNED_COLS: usize = 32768;

/// Rows of 2-byte elements whose width is not a multiple of an 8-byte vector: every other row
/// starts inside a 16-byte word, so the tiers' vector loads cannot be used.
fn unaligned_16bit(n_cols: usize, dtype: DType) -> bool {
    dtype.size_in_bytes() == 2 && n_cols % 4 != 0
}

/// Dynamic shared memory of a backward `s` tier with `acc_bytes` accumulators: the dw / db
/// partial sums, two rows of `n_cols` rounded up to whole vectors; its `words` instance takes
/// rows as spans of aligned words (bwd_resident in layer_norm_bwd.cuh), one vector longer, and
/// holds the weights of a span too.
fn bwd_smem_bytes(n_cols: usize, dtype: DType, acc_bytes: usize) -> usize {
    let elem_per_vec = 16 / dtype.size_in_bytes();
    let words = unaligned_16bit(n_cols, dtype);
    let slots = n_cols.div_ceil(elem_per_vec) + words as usize;
    2 * slots * elem_per_vec * acc_bytes + if words { slots * 16 } else { 0 }
}

/// Dynamic shared memory that a backward `sqa` tier needs on top of [`bwd_smem_bytes`]: the
/// layer norm's instance for rows with vectors stages the next pair of rows, x and dy, one
/// 16-byte word per vector of each (bwd_resident in layer_norm_bwd.cuh). Its `words` instance
/// and the RMS norm take no stage.
fn bwd_stage_bytes(n_cols: usize, dtype: DType, norm: Norm) -> usize {
    if norm == Norm::Rms || unaligned_16bit(n_cols, dtype) {
        return 0;
    }
    4 * n_cols.div_ceil(16 / dtype.size_in_bytes()) * 16
}

/// The kernel for a row: a resident tier, its instance for 16-bit rows without vectors (the
/// norms only, see [`LaunchPlan::words_when_unaligned`]), or the `big` kernel that streams the
/// row twice.
#[derive(Debug, Clone, Copy)]
enum Kernel<'a> {
    Resident(&'a Tier),
    Words(&'a Tier),
    Big,
}

impl Kernel<'_> {
    /// The one place that turns a tier into a kernel name; `op` is [`Norm::prefix`] or
    /// [`SOFTMAX`].
    fn name(&self, op: &str, dir: Direction, dtype: DType) -> String {
        let tag = match self {
            Self::Resident(tier) => tier.tag.clone(),
            Self::Words(tier) => format!("{}_words", tier.tag),
            Self::Big => "big".to_string(),
        };
        format!("{op}_{}_{tag}_{}", dir.name(), dtype.as_str())
    }
}

/// How one kernel is launched for a given shape.
#[derive(Debug, Clone, Copy)]
struct LaunchPlan<'a> {
    kernel: Kernel<'a>,
    /// Threads per block.
    block_dim: u32,
    /// Rows a block processes at once.
    rows_per_block: usize,
    /// Dynamic shared memory, bytes.
    smem_bytes: usize,
    /// The grid holds only as many blocks as can be resident, each loops over the rows.
    persistent: bool,
    /// Bytes of each row that the `big` kernel reads twice (0 for the resident tiers).
    reread_bytes: usize,
}

impl<'a> LaunchPlan<'a> {
    /// The first tier of `tiers` whose row fits, or the `big` kernel. `smem_bytes` is what an
    /// `smem` tier needs, `stage_bytes` what a `stage` tier needs on top, `max_smem` what a block
    /// can opt in to: tiers that do not fit are skipped.
    fn new(
        tiers: &'a [Tier],
        n_cols: usize,
        dtype: DType,
        smem_bytes: usize,
        stage_bytes: usize,
        max_smem: usize,
    ) -> Self {
        let n_vecs = n_cols.div_ceil(16 / dtype.size_in_bytes());
        let smem_of = |t: &Tier| match (t.smem, t.stage) {
            (false, _) => 0,
            (true, false) => smem_bytes,
            (true, true) => smem_bytes + stage_bytes,
        };
        let tier = tiers
            .iter()
            .filter(|t| smem_of(t) <= max_smem)
            .find(|t| t.lanes * t.vecs >= n_vecs);
        match tier {
            Some(tier) => {
                let block_dim = tier.lanes.max(128);
                Self {
                    kernel: Kernel::Resident(tier),
                    block_dim: block_dim as u32,
                    rows_per_block: block_dim / tier.lanes,
                    smem_bytes: smem_of(tier),
                    persistent: tier.prefetch,
                    reread_bytes: 0,
                }
            }
            None => Self::big(n_cols, dtype),
        }
    }

    /// The `big` kernel: one row per block of 1024 threads, which streams it twice.
    fn big(n_cols: usize, dtype: DType) -> Self {
        Self {
            kernel: Kernel::Big,
            block_dim: 1024,
            rows_per_block: 1,
            smem_bytes: 0,
            persistent: false,
            reread_bytes: n_cols * dtype.size_in_bytes(),
        }
    }

    /// The `big` kernel for rows of 2-byte elements that fit no 8-byte vector (odd widths),
    /// past [`BIG_UNALIGNED_COLS`] columns: the tiers load such rows element by element, the
    /// `big` kernel in aligned pieces. For the softmax forward, whose tiers have no `words`
    /// instances (the backward tiers end there).
    fn big_when_unaligned(self, n_cols: usize, dtype: DType) -> Self {
        if unaligned_16bit(n_cols, dtype) && n_cols > BIG_UNALIGNED_COLS {
            Self::big(n_cols, dtype)
        } else {
            self
        }
    }

    /// The tier's `words` instance for rows of 2-byte elements that fit no 8-byte vector: it
    /// loads and stores a row's full 16-byte slots in the widest aligned pieces, where the tier
    /// goes element by element (the backward's tiers of one row per block and the forward's of
    /// one row per warp; the others' instances keep element accesses, faster there). For the
    /// norms (the layer norm and the RMS norm), whose 16-bit tiers have these instances in both
    /// directions: in the forward up to the widest tier, where they beat the `big` kernel.
    fn words_when_unaligned(self, n_cols: usize, dtype: DType) -> Self {
        match self.kernel {
            Kernel::Resident(tier) if unaligned_16bit(n_cols, dtype) => Self {
                kernel: Kernel::Words(tier),
                ..self
            },
            _ => self,
        }
    }

    /// The shared memory `func`, the plan's kernel, declares itself.
    fn static_smem(&self, func: &CudaFunction) -> Result<usize> {
        Ok(func.shared_size_bytes().w()? as usize)
    }

    /// Lets `func`, the plan's kernel, use the plan's dynamic shared memory: past 48 KiB for
    /// the dynamic and the kernel's static shared memory together, a block has to opt in.
    fn prepare(&self, func: &CudaFunction) -> Result<()> {
        if self.smem_bytes > 0 && self.smem_bytes + self.static_smem(func)? > 48 * 1024 {
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                self.smem_bytes as i32,
            )
            .w()?;
        }
        Ok(())
    }

    /// Blocks for `n_rows` rows: one per row group, capped at the number of blocks that can be
    /// resident at once when `persistent`. That number only depends on the kernel and the
    /// device, so a persistent grid is the same on every run.
    ///
    /// The `big` kernel's grid is capped by [`big_grid`].
    fn grid(&self, dev: &CudaDevice, func: &CudaFunction, n_rows: usize) -> Result<usize> {
        let n_blocks = n_rows.div_ceil(self.rows_per_block).min(i32::MAX as usize);
        if let Kernel::Big = self.kernel {
            let l2_bytes = attribute(
                dev,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
            )?;
            let n_sms = attribute(
                dev,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )?;
            return Ok(big_grid(n_blocks, n_sms, l2_bytes, self.reread_bytes));
        }
        if !self.persistent {
            return Ok(n_blocks);
        }
        let n_sms = attribute(
            dev,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?;
        let blocks_per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(self.block_dim, self.smem_bytes, None)
            .w()?
            .max(1) as usize;
        Ok(n_blocks.min(n_sms * blocks_per_sm))
    }

    fn config(&self, n_blocks: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (n_blocks as u32, 1, 1),
            block_dim: (self.block_dim, 1, 1),
            shared_mem_bytes: self.smem_bytes as u32,
        }
    }
}

fn attribute(dev: &CudaDevice, attr: sys::CUdevice_attribute) -> Result<usize> {
    Ok(dev.cuda_stream().context().attribute(attr).w()? as usize)
}

/// Blocks for the `big` kernel, which reads each row again after a block reduction: as many as
/// keep the rows in flight (`reread_bytes` each) within half of L2, so that the second read hits
/// it, but at least one per SM. Its blocks loop over the rows, so any grid covers them.
fn big_grid(n_blocks: usize, n_sms: usize, l2_bytes: usize, reread_bytes: usize) -> usize {
    let fit = l2_bytes / 2 / reread_bytes.max(1);
    n_blocks.min(fit.max(n_sms))
}

fn view<'a, T>(s: &'a CudaSlice<T>, l: &Layout, name: &str) -> Result<CudaView<'a, T>> {
    match l.contiguous_offsets() {
        None => candle::bail!("layer-norm {name} has to be contiguous"),
        Some((o1, o2)) => Ok(s.slice(o1..o2)),
    }
}

fn opt_view<'a, T>(
    s: Option<(&'a CudaStorage, &Layout)>,
    name: &str,
) -> Result<Option<CudaView<'a, T>>>
where
    T: CudaDType,
{
    match s {
        None => Ok(None),
        Some((s, l)) => Ok(Some(view(s.as_cuda_slice::<T>()?, l, name)?)),
    }
}

/// The fused forward over the last dimension of `xs`; `alpha` and `beta` are optional (`beta`
/// is `None` for the RMS norm).
pub(crate) fn fwd<T>(
    dev: &CudaDevice,
    norm: Norm,
    (xs, l): (&CudaStorage, &Layout),
    alpha: Option<(&CudaStorage, &Layout)>,
    beta: Option<(&CudaStorage, &Layout)>,
    eps: f32,
) -> Result<CudaStorage>
where
    T: CudaDType + WithDType + DeviceRepr,
{
    let xs = view(xs.as_cuda_slice::<T>()?, l, "input")?;
    let alpha = opt_view::<T>(alpha, "alpha")?;
    let beta = opt_view::<T>(beta, "beta")?;
    let el_count = l.shape().elem_count();
    let n_cols = l.dims().last().copied().unwrap_or(1);
    // SAFETY: Set later by running the kernel.
    let dst = unsafe { dev.alloc::<T>(el_count)? };
    if el_count > 0 {
        let n_rows = el_count / n_cols;
        let plan = LaunchPlan::new(Direction::Fwd.tiers(T::DTYPE), n_cols, T::DTYPE, 0, 0, 0)
            .words_when_unaligned(n_cols, T::DTYPE);
        let name = plan.kernel.name(norm.prefix(), Direction::Fwd, T::DTYPE);
        let func = dev.get_or_load_func(&name, &kernels::LAYER_NORM)?;
        plan.prepare(&func)?;
        let cfg = plan.config(plan.grid(dev, &func, n_rows)?);
        let null = 0u64;
        let mut builder = func.builder();
        builder.arg(&xs);
        builder.arg(&dst);
        match &alpha {
            Some(alpha) => builder.arg(alpha),
            None => builder.arg(&null),
        };
        match &beta {
            Some(beta) => builder.arg(beta),
            None => builder.arg(&null),
        };
        candle::builder_arg!(builder, n_rows as i64, n_cols as i64, eps);
        // SAFETY: ffi.
        unsafe { builder.launch(cfg) }.w()?;
    }
    Ok(CudaStorage::wrap_cuda_slice(dst, dev.clone()))
}

/// The fused backward: one kernel computes `dx` and per block partial sums for `dalpha`/`dbeta`
/// over a persistent grid whose size only depends on the shape and the device, a second kernel
/// adds the partial sums in a fixed order. No atomics, so the result is deterministic.
///
/// Returns `dx` (the shape of `xs`) and, each in a buffer of its own, `dalpha` and `dbeta`
/// (`n_cols` each) for those requested. `A` is the accumulation type of the kernels (f64 for
/// f64, f32 otherwise).
#[allow(clippy::too_many_arguments)]
pub(crate) fn bwd<T, A>(
    dev: &CudaDevice,
    norm: Norm,
    (xs, l): (&CudaStorage, &Layout),
    (grad, grad_l): (&CudaStorage, &Layout),
    alpha: Option<(&CudaStorage, &Layout)>,
    eps: f32,
    alpha_grad: bool,
    beta_grad: bool,
) -> Result<(CudaStorage, Vec<CudaStorage>)>
where
    T: CudaDType + WithDType + DeviceRepr + ValidAsZeroBits,
    A: DeviceRepr + ValidAsZeroBits,
{
    let xs = view(xs.as_cuda_slice::<T>()?, l, "input")?;
    let grad = view(grad.as_cuda_slice::<T>()?, grad_l, "grad")?;
    let alpha = opt_view::<T>(alpha, "alpha")?;
    let el_count = l.shape().elem_count();
    let n_cols = l.dims().last().copied().unwrap_or(1);
    if el_count == 0 {
        // Zero parameter gradients; dx has no element (the cuda backend cannot allocate an
        // empty buffer, one element holds it).
        let dx = dev.alloc_zeros::<T>(1)?;
        let zeros = |want: bool| want.then(|| dev.alloc_zeros::<T>(n_cols)).transpose();
        return Ok(outputs(dev, dx, zeros(alpha_grad)?, zeros(beta_grad)?));
    }
    let n_rows = el_count / n_cols;
    // SAFETY: Set later by running the kernels.
    let mut dxs = unsafe { dev.alloc::<T>(el_count)? };
    let [dalpha, dbeta] = [alpha_grad, beta_grad].map(|want| alloc_parts::<T>(dev, want, n_cols));
    let (mut dalpha, mut dbeta) = (dalpha?, dbeta?);

    let smem_bytes = bwd_smem_bytes(n_cols, T::DTYPE, std::mem::size_of::<A>());
    let stage_bytes = bwd_stage_bytes(n_cols, T::DTYPE, norm);
    let max_smem = dev
        .cuda_stream()
        .context()
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .w()? as usize;
    if norm == Norm::Layer {
        let tile = tile_tier(T::DTYPE, n_cols)
            .map(|t| {
                let geometry =
                    TileGeometry::new(t, n_rows, n_cols, T::DTYPE, std::mem::size_of::<A>());
                (t, geometry)
            })
            .filter(|(_, g)| g.smem_bytes <= max_smem);
        if let Some((tier, geometry)) = tile {
            bwd_tile::<T, A>(
                dev,
                tier,
                geometry,
                (&xs, &grad, alpha.as_ref()),
                eps,
                (&mut dxs, dalpha.as_mut(), dbeta.as_mut()),
                n_rows,
                n_cols,
            )?;
            return Ok(outputs(dev, dxs, dalpha, dbeta));
        }
    }
    // Persistent for every tier, prefetching or not: the partial sums depend on the grid.
    let plan_for = |max_smem| LaunchPlan {
        persistent: true,
        ..LaunchPlan::new(
            Direction::Bwd.tiers(T::DTYPE),
            n_cols,
            T::DTYPE,
            smem_bytes,
            stage_bytes,
            max_smem,
        )
        .words_when_unaligned(n_cols, T::DTYPE)
    };
    let load = |plan: &LaunchPlan| {
        let name = plan.kernel.name(norm.prefix(), Direction::Bwd, T::DTYPE);
        dev.get_or_load_func(&name, &kernels::LAYER_NORM)
    };
    let mut plan = plan_for(max_smem);
    if plan.smem_bytes > 0 {
        let func = load(&plan)?;
        if plan.smem_bytes + plan.static_smem(&func)? > max_smem {
            // The kernel's own shared memory leaves too little room for the partial sums.
            plan = plan_for(0);
        }
    }
    if matches!(plan.kernel, Kernel::Big) {
        bwd_split::<T, A>(
            dev,
            norm,
            &xs,
            &grad,
            alpha.as_ref(),
            eps,
            (&mut dxs, dalpha.as_mut(), dbeta.as_mut()),
            n_rows,
            n_cols,
        )?;
        return Ok(outputs(dev, dxs, dalpha, dbeta));
    }
    let func = load(&plan)?;
    plan.prepare(&func)?;
    let n_blocks = plan.grid(dev, &func, n_rows)?;
    let n_blocks = match plan.kernel {
        // The `words` instance of an `s` tier takes the rows of a block as spans of aligned
        // 16-byte words when they all start at the same offset in a word: for 16-bit rows, when
        // the grid is a multiple of 8 blocks.
        Kernel::Words(tier) if tier.smem && n_blocks > 8 => n_blocks / 8 * 8,
        _ => n_blocks,
    };
    let [dalpha_part, dbeta_part] =
        [alpha_grad, beta_grad].map(|want| alloc_parts::<A>(dev, want, n_blocks * n_cols));
    let (dalpha_part, dbeta_part) = (dalpha_part?, dbeta_part?);
    let null = 0u64;
    {
        let mut builder = func.builder();
        builder.arg(&xs);
        builder.arg(&grad);
        match &alpha {
            Some(alpha) => builder.arg(alpha),
            None => builder.arg(&null),
        };
        builder.arg(&mut dxs);
        match &dalpha_part {
            Some(p) => builder.arg(p),
            None => builder.arg(&null),
        };
        match &dbeta_part {
            Some(p) => builder.arg(p),
            None => builder.arg(&null),
        };
        candle::builder_arg!(builder, n_rows as i64, n_cols as i64, eps);
        // SAFETY: ffi.
        unsafe { builder.launch(plan.config(n_blocks)) }.w()?;
    }
    reduce_parts::<T, A>(
        dev,
        (dalpha.as_mut(), dbeta.as_mut()),
        dalpha_part.as_ref(),
        dbeta_part.as_ref(),
        n_blocks,
        n_cols,
    )?;
    Ok(outputs(dev, dxs, dalpha, dbeta))
}

/// The storages [`bwd`] returns: `dx` and the parameter gradients computed.
fn outputs<T: CudaDType + WithDType>(
    dev: &CudaDevice,
    dxs: CudaSlice<T>,
    dalpha: Option<CudaSlice<T>>,
    dbeta: Option<CudaSlice<T>>,
) -> (CudaStorage, Vec<CudaStorage>) {
    let wrap = |s| CudaStorage::wrap_cuda_slice(s, dev.clone());
    (
        wrap(dxs),
        [dalpha, dbeta].into_iter().flatten().map(wrap).collect(),
    )
}

/// `n` elements for one parameter's gradient or its partial sums, or none when it is not asked
/// for.
fn alloc_parts<A: DeviceRepr>(
    dev: &CudaDevice,
    want: bool,
    n: usize,
) -> Result<Option<CudaSlice<A>>> {
    // SAFETY: Set later by running the kernels: every block of the backward writes its partial
    // row, the reduction every column of the gradient.
    Ok(match want {
        true => Some(unsafe { dev.alloc::<A>(n)? }),
        false => None,
    })
}

/// The layer norm's backward by a tile tier (`bwd_tile` in layer_norm_bwd.cuh): a persistent
/// grid of as many blocks as are resident, each taking every grid-th tile, then the ordered
/// reduce of the blocks' partial rows.
#[allow(clippy::too_many_arguments)]
fn bwd_tile<T, A>(
    dev: &CudaDevice,
    tier: &Tier,
    geometry: TileGeometry,
    (xs, grad, alpha): (&CudaView<T>, &CudaView<T>, Option<&CudaView<T>>),
    eps: f32,
    (dxs, dalpha, dbeta): BwdOutputs<T>,
    n_rows: usize,
    n_cols: usize,
) -> Result<()>
where
    T: CudaDType + WithDType + DeviceRepr + ValidAsZeroBits,
    A: DeviceRepr + ValidAsZeroBits,
{
    let name = Kernel::Resident(tier).name(Norm::Layer.prefix(), Direction::Bwd, T::DTYPE);
    let func = dev.get_or_load_func(&name, &kernels::LAYER_NORM)?;
    let TileGeometry {
        threads,
        tile_rows,
        smem_bytes,
    } = geometry;
    if smem_bytes + func.shared_size_bytes().w()? as usize > 48 * 1024 {
        func.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem_bytes as i32,
        )
        .w()?;
    }
    let n_sms = attribute(
        dev,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )?;
    let blocks_per_sm = func
        .occupancy_max_active_blocks_per_multiprocessor(threads as u32, smem_bytes, None)
        .w()?
        .max(1) as usize;
    let n_blocks = n_rows.div_ceil(tile_rows).min(n_sms * blocks_per_sm);
    let [dalpha_part, dbeta_part] = [dalpha.is_some(), dbeta.is_some()]
        .map(|want| alloc_parts::<A>(dev, want, n_blocks * n_cols));
    let (dalpha_part, dbeta_part) = (dalpha_part?, dbeta_part?);
    let null = 0u64;
    {
        let mut builder = func.builder();
        builder.arg(xs);
        builder.arg(grad);
        match alpha {
            Some(alpha) => builder.arg(alpha),
            None => builder.arg(&null),
        };
        builder.arg(dxs);
        match &dalpha_part {
            Some(p) => builder.arg(p),
            None => builder.arg(&null),
        };
        match &dbeta_part {
            Some(p) => builder.arg(p),
            None => builder.arg(&null),
        };
        candle::builder_arg!(builder, n_rows as i64, n_cols as i64, tile_rows as i32, eps);
        let cfg = LaunchConfig {
            grid_dim: (n_blocks as u32, 1, 1),
            block_dim: (threads as u32, 1, 1),
            shared_mem_bytes: smem_bytes as u32,
        };
        // SAFETY: ffi.
        unsafe { builder.launch(cfg) }.w()?;
    }
    reduce_parts::<T, A>(
        dev,
        (dalpha, dbeta),
        dalpha_part.as_ref(),
        dbeta_part.as_ref(),
        n_blocks,
        n_cols,
    )
}

/// The backward for rows past the widest tier: per (row, segment) statistics, then `dx` and the
/// parameter partials over column blocks (`layer_norm_bwd.cuh`), then [`reduce_parts`].
#[allow(clippy::too_many_arguments)]
fn bwd_split<T, A>(
    dev: &CudaDevice,
    norm: Norm,
    xs: &CudaView<T>,
    grad: &CudaView<T>,
    alpha: Option<&CudaView<T>>,
    eps: f32,
    (dxs, dalpha, dbeta): BwdOutputs<T>,
    n_rows: usize,
    n_cols: usize,
) -> Result<()>
where
    T: CudaDType + WithDType + DeviceRepr + ValidAsZeroBits,
    A: DeviceRepr + ValidAsZeroBits,
{
    let split = SplitTiers::get();
    let n_vecs = n_cols.div_ceil(16 / T::DTYPE.size_in_bytes());
    let n_segs = n_vecs.div_ceil(split.stats.lanes * split.stats.vecs);
    let n_col_blocks = n_vecs.div_ceil(split.dx.lanes * split.dx.vecs);
    let tile_rows = split.dx.lanes / 32;
    let [stats_name, dx_name] = SplitTiers::names(norm.prefix(), T::DTYPE, n_cols);
    let stats_func = dev.get_or_load_func(&stats_name, &kernels::LAYER_NORM)?;
    let dx_func = dev.get_or_load_func(&dx_name, &kernels::LAYER_NORM)?;
    // As many dx blocks as can be resident: the partials depend on this grid, which only depends
    // on the kernel, the device and the shape.
    let n_sms = attribute(
        dev,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )?;
    let blocks_per_sm = dx_func
        .occupancy_max_active_blocks_per_multiprocessor(split.dx.lanes as u32, 0, None)
        .w()?
        .max(1) as usize;
    let n_parts = (n_sms * blocks_per_sm)
        .div_ceil(n_col_blocks)
        .min(n_rows.div_ceil(tile_rows))
        .min(u16::MAX as usize);
    // SAFETY: Set later by running the kernel, every (row, segment) is written.
    let stats = unsafe { dev.alloc::<A>(n_rows * n_segs * 4)? };
    let [dalpha_part, dbeta_part] = [dalpha.is_some(), dbeta.is_some()]
        .map(|want| alloc_parts::<A>(dev, want, n_parts * n_cols));
    let (dalpha_part, dbeta_part) = (dalpha_part?, dbeta_part?);
    let null = 0u64;
    {
        let mut builder = stats_func.builder();
        builder.arg(xs);
        builder.arg(grad);
        match alpha {
            Some(alpha) => builder.arg(alpha),
            None => builder.arg(&null),
        };
        builder.arg(&stats);
        candle::builder_arg!(builder, n_rows as i64, n_cols as i64);
        let cfg = LaunchConfig {
            grid_dim: (n_segs as u32, n_rows.min(u16::MAX as usize) as u32, 1),
            block_dim: (split.stats.lanes as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: ffi.
        unsafe { builder.launch(cfg) }.w()?;
    }
    {
        let mut builder = dx_func.builder();
        builder.arg(xs);
        builder.arg(grad);
        match alpha {
            Some(alpha) => builder.arg(alpha),
            None => builder.arg(&null),
        };
        builder.arg(&stats);
        builder.arg(dxs);
        match &dalpha_part {
            Some(p) => builder.arg(p),
            None => builder.arg(&null),
        };
        match &dbeta_part {
            Some(p) => builder.arg(p),
            None => builder.arg(&null),
        };
        candle::builder_arg!(builder, n_rows as i64, n_cols as i64, eps);
        let cfg = LaunchConfig {
            grid_dim: (n_col_blocks as u32, n_parts as u32, 1),
            block_dim: (split.dx.lanes as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: ffi.
        unsafe { builder.launch(cfg) }.w()?;
    }
    reduce_parts::<T, A>(
        dev,
        (dalpha, dbeta),
        dalpha_part.as_ref(),
        dbeta_part.as_ref(),
        n_parts,
        n_cols,
    )?;
    Ok(())
}

/// The buffers of the backward's results: `dx`, and `dalpha` and `dbeta` when requested.
type BwdOutputs<'a, T> = (
    &'a mut CudaSlice<T>,
    Option<&'a mut CudaSlice<T>>,
    Option<&'a mut CudaSlice<T>>,
);

/// Adds the `n_parts` partial rows of each requested parameter gradient, in a fixed order, into
/// `dalpha` and `dbeta` (`n_cols` each, those requested).
fn reduce_parts<T, A>(
    dev: &CudaDevice,
    (dalpha, dbeta): (Option<&mut CudaSlice<T>>, Option<&mut CudaSlice<T>>),
    dalpha_part: Option<&CudaSlice<A>>,
    dbeta_part: Option<&CudaSlice<A>>,
    n_parts: usize,
    n_cols: usize,
) -> Result<()>
where
    T: CudaDType + WithDType + DeviceRepr,
    A: DeviceRepr,
{
    let null = 0u64;
    if dalpha_part.is_some() || dbeta_part.is_some() {
        // 32 columns x 32 slices per block, a column per thread for few parts, see
        // layer_norm_bwd.cuh.
        let cols_per_block = if n_parts <= reduce_column_parts() {
            1024
        } else {
            32
        };
        let cfg = LaunchConfig {
            grid_dim: (n_cols.div_ceil(cols_per_block) as u32, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        let name = kernel_name::<T>("layernorm_bwd_reduce");
        let func = dev.get_or_load_func(&name, &kernels::LAYER_NORM)?;
        let mut builder = func.builder();
        match dalpha_part {
            Some(p) => builder.arg(p),
            None => builder.arg(&null),
        };
        match dbeta_part {
            Some(p) => builder.arg(p),
            None => builder.arg(&null),
        };
        match dalpha {
            Some(d) => builder.arg(d),
            None => builder.arg(&null),
        };
        match dbeta {
            Some(d) => builder.arg(d),
            None => builder.arg(&null),
        };
        candle::builder_arg!(builder, n_parts as i64, n_cols as i64);
        // SAFETY: ffi.
        unsafe { builder.launch(cfg) }.w()?;
    }
    Ok(())
}

/// The fused softmax over the last dimension of `xs`.
pub(crate) fn softmax_fwd<T>(
    dev: &CudaDevice,
    (xs, l): (&CudaStorage, &Layout),
) -> Result<CudaStorage>
where
    T: CudaDType + WithDType + DeviceRepr,
{
    let xs = view(xs.as_cuda_slice::<T>()?, l, "input")?;
    let el_count = l.shape().elem_count();
    let n_cols = l.dims().last().copied().unwrap_or(1);
    // SAFETY: Set later by running the kernel.
    let dst = unsafe { dev.alloc::<T>(el_count)? };
    if el_count > 0 {
        let n_rows = el_count / n_cols;
        let plan = LaunchPlan::new(Direction::Fwd.tiers(T::DTYPE), n_cols, T::DTYPE, 0, 0, 0)
            .big_when_unaligned(n_cols, T::DTYPE);
        let name = plan.kernel.name(SOFTMAX, Direction::Fwd, T::DTYPE);
        let func = dev.get_or_load_func(&name, &kernels::LAYER_NORM)?;
        plan.prepare(&func)?;
        let cfg = plan.config(plan.grid(dev, &func, n_rows)?);
        let mut builder = func.builder();
        builder.arg(&xs);
        builder.arg(&dst);
        candle::builder_arg!(builder, n_rows as i64, n_cols as i64);
        // SAFETY: ffi.
        unsafe { builder.launch(cfg) }.w()?;
    }
    Ok(CudaStorage::wrap_cuda_slice(dst, dev.clone()))
}

/// The fused softmax backward `ys * (grad - sum(grad * ys))` over the last dimension, from the
/// forward's output `ys` and the output gradient `grad` (same shape, both contiguous).
pub(crate) fn softmax_bwd<T>(
    dev: &CudaDevice,
    (ys, l): (&CudaStorage, &Layout),
    (grad, grad_l): (&CudaStorage, &Layout),
) -> Result<CudaStorage>
where
    T: CudaDType + WithDType + DeviceRepr,
{
    let ys = view(ys.as_cuda_slice::<T>()?, l, "softmax output")?;
    let grad = view(grad.as_cuda_slice::<T>()?, grad_l, "grad")?;
    let el_count = l.shape().elem_count();
    let n_cols = l.dims().last().copied().unwrap_or(1);
    // SAFETY: Set later by running the kernel.
    let dst = unsafe { dev.alloc::<T>(el_count)? };
    if el_count > 0 {
        let n_rows = el_count / n_cols;
        // No parameter partials: the backward's `s` tiers need no shared memory.
        let plan = LaunchPlan::new(Direction::Bwd.tiers(T::DTYPE), n_cols, T::DTYPE, 0, 0, 0);
        // The `big` kernel reads the output and its gradient twice.
        let plan = LaunchPlan {
            reread_bytes: 2 * plan.reread_bytes,
            ..plan
        };
        let name = plan.kernel.name(SOFTMAX, Direction::Bwd, T::DTYPE);
        let func = dev.get_or_load_func(&name, &kernels::LAYER_NORM)?;
        plan.prepare(&func)?;
        let cfg = plan.config(plan.grid(dev, &func, n_rows)?);
        let mut builder = func.builder();
        builder.arg(&ys);
        builder.arg(&grad);
        builder.arg(&dst);
        candle::builder_arg!(builder, n_rows as i64, n_cols as i64);
        // SAFETY: ffi.
        unsafe { builder.launch(cfg) }.w()?;
    }
    Ok(CudaStorage::wrap_cuda_slice(dst, dev.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DTYPES: [DType; 4] = [DType::BF16, DType::F16, DType::F32, DType::F64];

    /// The kernels the module defines, from its PTX (no GPU needed).
    fn ptx_kernels() -> Vec<String> {
        kernels::LAYER_NORM
            .ptx()
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".visible .entry "))
            .map(|l| l.split('(').next().unwrap_or(l).trim().to_string())
            .collect()
    }

    /// Every kernel name the host can ask for, for rows of 1 to 70000 columns, with and without
    /// room for the shared memory tiers.
    fn host_kernels() -> Vec<String> {
        let mut names = vec![];
        for dtype in DTYPES {
            names.push(kernel_name_of(dtype, "layernorm_bwd_reduce"));
            names.extend(
                tile_tiers(dtype)
                    .iter()
                    .map(|t| Kernel::Resident(t).name(Norm::Layer.prefix(), Direction::Bwd, dtype)),
            );
            for (op, dir) in [Norm::Layer.prefix(), Norm::Rms.prefix(), SOFTMAX]
                .into_iter()
                .flat_map(|op| [(op, Direction::Fwd), (op, Direction::Bwd)])
            {
                for max_smem in [0, usize::MAX] {
                    for n_cols in 1..=70_000 {
                        let mut plan =
                            LaunchPlan::new(dir.tiers(dtype), n_cols, dtype, 1, 1, max_smem);
                        plan = match (op, dir) {
                            (SOFTMAX, Direction::Fwd) => plan.big_when_unaligned(n_cols, dtype),
                            (SOFTMAX, Direction::Bwd) => plan,
                            _ => plan.words_when_unaligned(n_cols, dtype),
                        };
                        match (plan.kernel, dir) {
                            (Kernel::Big, Direction::Bwd) if op != SOFTMAX => {
                                names.extend(SplitTiers::names(op, dtype, n_cols))
                            }
                            _ => names.push(plan.kernel.name(op, dir, dtype)),
                        }
                    }
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }

    fn kernel_name_of(dtype: DType, base: &str) -> String {
        format!("{base}_{}", dtype.as_str())
    }

    #[test]
    fn big_grid_keeps_rows_in_flight_within_l2() {
        let (n_sms, l2) = (132, 50 << 20);
        // f32 rows of 32000: the softmax backward rereads 256000 bytes a row.
        let blocks = big_grid(4096, n_sms, l2, 256_000);
        assert_eq!(
            blocks, n_sms,
            "102 rows would fit in half of L2, but not fewer blocks than SMs"
        );
        // f32 rows of 20000, one tensor reread: 80000 bytes a row.
        let blocks = big_grid(4096, n_sms, l2, 80_000);
        assert!(blocks > n_sms && blocks * 80_000 <= l2 / 2, "{blocks}");
        // Fewer rows than that: one block per row.
        assert_eq!(big_grid(100, n_sms, l2, 80_000), 100);
    }

    #[test]
    fn unaligned_16bit_rows_take_the_big_kernel() {
        let big = |dtype, n_cols| {
            let plan = LaunchPlan::new(Direction::Fwd.tiers(dtype), n_cols, dtype, 0, 0, 0)
                .big_when_unaligned(n_cols, dtype);
            matches!(plan.kernel, Kernel::Big)
        };
        assert!(big(DType::BF16, 50257) && big(DType::F16, 65535) && big(DType::BF16, 32770));
        // Rows that take 8-byte vectors, and rows up to the threshold, keep their tier.
        assert!(!big(DType::BF16, 50256) && !big(DType::BF16, 7777) && !big(DType::F16, 32767));
    }

    #[test]
    fn unaligned_16bit_rows_take_the_words_instances() {
        let name = |dir: Direction, dtype, n_cols| {
            LaunchPlan::new(dir.tiers(dtype), n_cols, dtype, 1, 1, usize::MAX)
                .words_when_unaligned(n_cols, dtype)
                .kernel
                .name(Norm::Layer.prefix(), dir, dtype)
        };
        let bwd = |dtype, n_cols| name(Direction::Bwd, dtype, n_cols);
        assert_eq!(bwd(DType::BF16, 7777), "layernorm_bwd_l512v2sqa_words_bf16");
        assert!(bwd(DType::F16, 17).ends_with("_words_f16"));
        // Rows that take 8-byte vectors, and 4-byte dtypes, keep the tier.
        assert_eq!(bwd(DType::BF16, 7780), "layernorm_bwd_l512v2sqa_bf16");
        assert!(!bwd(DType::F32, 7777).contains("words"));
        // The forward's widest tier too: it beats the `big` kernel there.
        let fwd = |dtype, n_cols| name(Direction::Fwd, dtype, n_cols);
        assert_eq!(fwd(DType::BF16, 65535), "layernorm_fwd_l1024v8_words_bf16");
        assert!(fwd(DType::F16, 3001).ends_with("_words_f16"));
        assert!(!fwd(DType::BF16, 3000).contains("words"));
        assert!(!fwd(DType::F32, 3001).contains("words"));
        // Past the tiers the split backward takes any row, 16-bit rows without vectors in its
        // `words` instances.
        let plan = LaunchPlan::new(
            Direction::Bwd.tiers(DType::BF16),
            70001,
            DType::BF16,
            1,
            1,
            0,
        );
        assert!(matches!(
            plan.words_when_unaligned(70001, DType::BF16).kernel,
            Kernel::Big
        ));
        let split = |dtype, n_cols| SplitTiers::names(Norm::Layer.prefix(), dtype, n_cols);
        assert_eq!(
            split(DType::BF16, 70001),
            [
                "layernorm_bwd_split_stats_words_bf16",
                "layernorm_bwd_split_dx_words_bf16"
            ]
        );
        assert!(split(DType::F16, 70002)[1].ends_with("_dx_words_f16"));
        assert_eq!(
            split(DType::BF16, 70004)[0],
            "layernorm_bwd_split_stats_bf16"
        );
        assert_eq!(split(DType::F32, 70001)[1], "layernorm_bwd_split_dx_f32");
    }

    #[test]
    fn registry_parses() {
        for (dir, dtype) in [Direction::Fwd, Direction::Bwd]
            .into_iter()
            .flat_map(|dir| DTYPES.map(|dtype| (dir, dtype)))
        {
            let tiers = dir.tiers(dtype);
            assert!(tiers.len() > 4, "{dir:?} {dtype:?}: {tiers:?}");
            assert_eq!(tiers[0].lanes * tiers[0].vecs, 1);
        }
        // The split kernels reduce a segment over whole warps, one row per warp of a tile.
        let split = SplitTiers::get();
        for tier in [&split.stats, &split.dx] {
            assert!(tier.lanes >= 32 && tier.lanes % 32 == 0, "{tier:?}");
        }
        assert!(reduce_column_parts() > 0);
        assert_eq!(parse_define("#define A 1\n#define AB 12\n", "AB"), Ok(12));
        assert!(parse_define("#define AB x\n", "AB").is_err());
        assert!(parse_define("#define ABC 3\n", "AB").is_err());
        let bad = "#define LAYER_NORM_FWD_TIERS(X) \\\n  X(l2v1, 1, 1, 0, 0, 1)\n";
        assert!(parse_tiers(bad, "LAYER_NORM_FWD_TIERS", DType::F32).is_err());
        let unsorted = "#define L(X) \\\n  X(l2v1, 2, 1, 0, 0, 1) \\\n  X(l1v1, 1, 1, 0, 0, 1)\n";
        assert!(parse_tiers(unsorted, "L", DType::F32).is_err());
        // Rows for one element size: each dtype gets its own, sorted among the shared rows.
        let per_size = "#define L(X, X16, X32) \\\n  X(l1v1, 1, 1, 0, 0, 1) \\\n  \
                     X16(l1v4, 1, 4, 0, 0, 1) \\\n  X32(l2v1, 2, 1, 0, 0, 1) \\\n  \
                     X(l1v8, 1, 8, 0, 0, 1)\n";
        let tags = |dtype| {
            parse_tiers(per_size, "L", dtype)
                .unwrap()
                .into_iter()
                .map(|t| t.tag)
                .collect::<Vec<_>>()
        };
        assert_eq!(tags(DType::BF16), ["l1v1", "l1v4", "l1v8"]);
        assert_eq!(tags(DType::F64), ["l1v1", "l2v1", "l1v8"]);
        let stray = "#define L(X) \\\n  X16(l1v1, 1, 1, 0, 0, 1)\n";
        assert!(parse_tiers(stray, "L", DType::F16).is_err());
        // smem 2: the `sq` tiers, shared-memory tiers to the host; 3: the `sqa` tiers, which
        // stage rows as well.
        let pairs =
            "#define L(X) \\\n  X(l128v2sq, 128, 2, 2, 0, 4) \\\n  X(l128v3sqa, 128, 3, 3, 0, 4)\n";
        let tiers = parse_tiers(pairs, "L", DType::BF16).unwrap();
        assert!(
            tiers[0].smem && !tiers[0].stage && tiers[0].tag == "l128v2sq",
            "{tiers:?}"
        );
        assert!(
            tiers[1].smem && tiers[1].stage && tiers[1].tag == "l128v3sqa",
            "{tiers:?}"
        );
        // The tile tiers: a row's lanes inside a warp, tags ending in `t`.
        for dtype in [DType::BF16, DType::F16] {
            let tiles = tile_tiers(dtype);
            assert!(!tiles.is_empty(), "{dtype:?}");
            for t in tiles {
                assert!(t.lanes <= 32 && 32 % t.lanes == 0, "{t:?}");
                assert!(!t.smem && !t.prefetch, "{t:?}");
            }
        }
        let tile = format!("#define {TILE_TIERS}(X, X16, X32) \\\n  X16(l16v1t, 16, 1, 0, 0, 1)\n");
        let tiles = parse_tiers(&tile, TILE_TIERS, DType::BF16).unwrap();
        assert_eq!(tiles[0].tag, "l16v1t");
        assert!(parse_tiers(&tile, TILE_TIERS, DType::F32)
            .unwrap()
            .is_empty());
        let untagged = tile.replace("l16v1t", "l16v1");
        assert!(parse_tiers(&untagged, TILE_TIERS, DType::BF16).is_err());
        for bad in [
            "X(l128v2s, 128, 2, 2, 0, 4)",
            "X(l128v2sq, 128, 2, 3, 0, 4)",
            "X(l128v2sqa, 128, 2, 2, 0, 4)",
            "X(l128v2sqa, 128, 2, 4, 0, 4)",
        ] {
            let row = format!("#define L(X) \\\n  {bad}\n");
            assert!(parse_tiers(&row, "L", DType::BF16).is_err(), "{bad}");
        }
    }

    /// The tile tiers take the 16-bit rows they were measured to beat the resident tiers at (rows
    /// without 8-byte vectors, or idle lanes of a one-vector tier, filling more than half of the
    /// tier), and no others.
    #[test]
    fn tile_tiers_take_the_rows_they_beat() {
        let tag = |dtype, n_cols| tile_tier(dtype, n_cols).map(|t| t.tag.as_str());
        for dtype in [DType::BF16, DType::F16] {
            for (n_cols, want) in [
                (96, Some("l16v1t")),
                (97, Some("l16v1t")),
                (192, Some("l32v1t")),
                (201, Some("l32v1t")),
                (333, Some("l32v2t")),
                (513, Some("l32v4t")),
                (1001, Some("l32v4t")),
            ] {
                assert_eq!(tag(dtype, n_cols), want, "{dtype:?} {n_cols}");
            }
            for n_cols in [
                1, 31, 32, 48, 63, 64, 128, 256, 384, 512, 1000, 1024, 1025, 4097,
            ] {
                assert_eq!(tag(dtype, n_cols), None, "{dtype:?} {n_cols}");
            }
        }
        for n_cols in [97, 201, 333, 1001] {
            assert_eq!(tag(DType::F32, n_cols), None);
        }
    }

    /// A tile holds whole rows of every group of lanes, about `LAYER_NORM_BWD_TILE_BYTES` of x
    /// (no more rows than the tensor has, rounded up to the groups), and shared memory for two
    /// stages of x and dy, dx, and the groups' partials.
    #[test]
    fn tiles_hold_whole_groups() {
        static BYTES: OnceLock<usize> = OnceLock::new();
        let tile_bytes = registry_define(&BYTES, "LAYER_NORM_BWD_TILE_BYTES");
        for tier in tile_tiers(DType::BF16) {
            let n_cols = tier.lanes * tier.vecs * 8 - 3;
            let g = TileGeometry::new(tier, 1_000_000, n_cols, DType::BF16, 4);
            let groups = g.threads / tier.lanes;
            assert_eq!(g.tile_rows % groups, 0, "{tier:?} {g:?}");
            let bytes = g.tile_rows * n_cols * 2;
            assert!(
                bytes * 2 >= tile_bytes && bytes <= tile_bytes * 3 / 2,
                "{tier:?} {g:?}"
            );
            assert!(g.smem_bytes >= 5 * bytes, "{tier:?} {g:?}");
            assert!(g.smem_bytes >= 2 * groups * n_cols * 4, "{tier:?} {g:?}");
            let few = TileGeometry::new(tier, 3, n_cols, DType::BF16, 4);
            assert_eq!(few.tile_rows, groups, "{tier:?} {few:?}");
            assert!(
                few.smem_bytes >= 2 * groups * n_cols * 4,
                "{tier:?} {few:?}"
            );
        }
    }

    /// The `sqa` tiers get room for a pair of staged rows, where they stage them: the layer norm's
    /// rows with vectors, not its `words` instances or the RMS norm.
    #[test]
    fn staged_tiers_get_room_for_their_rows() {
        let tiers = Direction::Bwd.tiers(DType::BF16);
        let staged = tiers.iter().find(|t| t.stage).expect("a bf16 `sqa` tier");
        let n_cols = staged.lanes * staged.vecs * 8;
        let smem = bwd_smem_bytes(n_cols, DType::BF16, 4);
        let stage = bwd_stage_bytes(n_cols, DType::BF16, Norm::Layer);
        assert_eq!((smem, stage), (8 * n_cols, 8 * n_cols));
        let plan = LaunchPlan::new(tiers, n_cols, DType::BF16, smem, stage, usize::MAX);
        assert!(matches!(plan.kernel, Kernel::Resident(t) if t == staged));
        assert_eq!(plan.smem_bytes, smem + stage);
        // Without room for the stage, the next tier that fits.
        let plan = LaunchPlan::new(tiers, n_cols, DType::BF16, smem, stage, smem + stage - 1);
        assert!(
            matches!(plan.kernel, Kernel::Resident(t) if t != staged),
            "{plan:?}"
        );
        assert_eq!(bwd_stage_bytes(n_cols, DType::BF16, Norm::Rms), 0);
        assert_eq!(bwd_stage_bytes(n_cols - 1, DType::BF16, Norm::Layer), 0);
        assert_eq!(
            bwd_stage_bytes(n_cols - 8, DType::F16, Norm::Layer),
            8 * n_cols - 64
        );
    }

    /// A kernel the host can ask for but the module does not define fails only at run time on a
    /// GPU; this catches it on any machine that builds with `cuda`. The converse keeps kernels
    /// that nothing launches out of the module.
    #[test]
    fn host_kernels_are_the_module_kernels() {
        let defined = ptx_kernels();
        let wanted = host_kernels();
        let missing: Vec<_> = wanted.iter().filter(|n| !defined.contains(n)).collect();
        assert!(
            missing.is_empty(),
            "kernels the host launches but the PTX lacks: {missing:?}"
        );
        let unused: Vec<_> = defined.iter().filter(|n| !wanted.contains(n)).collect();
        assert!(
            unused.is_empty(),
            "kernels in the PTX that the host never launches: {unused:?}"
        );
    }
}
