//! The `tft` binary's command line, and the one place that refuses arguments that cannot work
//! (before any data is windowed or any model is built).

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use tft::data::{split_index, Series, CO2_CSV};
use tft::norm;
use tft::TftConfig;

/// Fraction of the weeks (the most recent ones) held out for validation.
pub const VAL_FRAC: f64 = 0.2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LayerNormChoice {
    /// The fused kernel (when the shim is built with feature `kernel`, the default).
    Kernel,
    /// The differentiable composite of stock candle ops.
    Composite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeviceChoice {
    Cpu,
    Cuda,
}

#[derive(Debug, Parser)]
#[command(about = "Temporal Fusion Transformer on weekly Mauna Loa CO2 (candle + fused LayerNorm)")]
pub struct Args {
    /// Passes over the training windows (at least 1).
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    /// Windows per optimizer step (at least 1).
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Peak learning rate (cosine decay to a tenth of it over the run); finite, above 0.
    #[arg(long, default_value_t = 3e-3, allow_negative_numbers = true)]
    pub lr: f64,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Cpu)]
    pub device: DeviceChoice,
    #[arg(long, value_enum, default_value_t = LayerNormChoice::Kernel)]
    pub layer_norm: LayerNormChoice,
    /// Model width; a positive multiple of the number of attention heads (4).
    #[arg(long, default_value_t = 32)]
    pub hidden: usize,
    /// Weeks of history per window (at least 2).
    #[arg(long, default_value_t = 52)]
    pub lookback: usize,
    /// Weeks forecast per window (at least 1).
    #[arg(long, default_value_t = 12)]
    pub horizon: usize,
    /// Hide the progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Instead of training: time STEPS training steps (after 3 warm-up steps) phase by phase
    /// (data, forward, backward, optimizer), with tensors created and host allocations.
    #[arg(long, value_name = "STEPS")]
    pub profile: Option<usize>,
}

/// Parses the command line; on a refusal prints one `error: ...` line and exits with status 2
/// (as clap does for arguments it cannot parse).
pub fn parse() -> Args {
    let args = Args::parse();
    if let Err(e) = args.validate() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    args
}

impl Args {
    /// Refuses what cannot work, naming the flag and what to use instead.
    pub fn validate(&self) -> Result<()> {
        let heads = TftConfig::default().n_heads;
        if self.epochs == 0 {
            bail!("--epochs must be at least 1 (got 0)");
        }
        if self.batch_size == 0 {
            bail!("--batch-size must be at least 1 (got 0)");
        }
        if self.profile == Some(0) {
            bail!("--profile must be at least 1 step (got 0)");
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            bail!(
                "--lr must be a finite number above 0, e.g. --lr 3e-3 (got {})",
                self.lr
            );
        }
        if self.device == DeviceChoice::Cuda && !cfg!(feature = "cuda") {
            bail!(
                "--device cuda: this binary was built without CUDA; rebuild with `--features cuda`"
            );
        }
        if self.layer_norm == LayerNormChoice::Kernel && !norm::kernel_compiled() {
            bail!("--layer-norm kernel: the fused kernel is not compiled in (build with feature `kernel`, the default) — use --layer-norm composite");
        }
        if self.hidden == 0 || !self.hidden.is_multiple_of(heads) {
            bail!(
                "--hidden must be a positive multiple of {heads} (the attention heads), e.g. --hidden 32 (got {})",
                self.hidden
            );
        }
        if self.lookback < 2 {
            bail!("--lookback must be at least 2 (got {})", self.lookback);
        }
        if self.horizon == 0 {
            bail!("--horizon must be at least 1 (got 0)");
        }
        self.check_fits(Series::parse(CO2_CSV)?.len())
    }

    /// `--lookback` and `--horizon` against a series of `n` weeks split by [`VAL_FRAC`]: a
    /// validation window needs `horizon` held-out weeks, and the training weeks must hold at
    /// least two windows of `lookback + horizon` (the rule of `Dataset::new`).
    fn check_fits(&self, n: usize) -> Result<()> {
        let split = split_index(n, VAL_FRAC);
        let max_horizon = n - split;
        if self.horizon > max_horizon {
            bail!(
                "--horizon must be at most {max_horizon}, the weeks held out for validation (got {})",
                self.horizon
            );
        }
        let max_window = split.saturating_sub(1);
        if self.lookback.saturating_add(self.horizon) > max_window {
            bail!(
                "--lookback + --horizon must be at most {max_window}, the training weeks less one (got {} + {}); use --lookback {} or less",
                self.lookback,
                self.horizon,
                max_window.saturating_sub(self.horizon)
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tft::data::Dataset;

    fn args(lookback: usize, horizon: usize) -> Args {
        let (l, h) = (lookback.to_string(), horizon.to_string());
        let argv = [
            "tft",
            "--layer-norm",
            "composite",
            "--lookback",
            &l,
            "--horizon",
            &h,
        ];
        Args::parse_from(argv)
    }

    /// `validate` accepts exactly the windows `Dataset::new` accepts, at and past each limit.
    #[test]
    fn window_limits_match_the_dataset() {
        let n = Series::parse(CO2_CSV).unwrap().len();
        let split = split_index(n, VAL_FRAC);
        let (max_h, max_w) = (n - split, split - 1);
        let cases = [
            (52, 12),
            (2, 1),
            (max_w - max_h, max_h),
            (max_w - 1, 1),
            (max_w - max_h + 1, max_h),
            (2, max_h + 1),
            (max_w, 1),
        ];
        let mut outcomes = Vec::new();
        for (l, h) in cases {
            let ok = args(l, h).validate().is_ok();
            let data_ok = Dataset::co2(l, h, VAL_FRAC).is_ok();
            assert_eq!(ok, data_ok, "lookback {l}, horizon {h}");
            outcomes.push(ok);
        }
        assert_eq!(outcomes, [true, true, true, true, false, false, false]);
    }
}
