//! The `tft` binary's command line, and the one place that refuses arguments that cannot work
//! (before any data is windowed or any model is built).

use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;
use tft::data::{split_index, Dataset, Series, CO2_CSV};
use tft::norm;
use tft::synth::SynthConfig;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatasetChoice {
    /// Weekly Mauna Loa CO2 (one series, shipped).
    Co2,
    /// The seeded hourly multi-series panel of `tft::synth` (64 series x 16 weeks).
    Synthetic,
}

/// Model and window sizes; an explicit `--hidden`/`--heads`/`--lookback`/`--horizon`/
/// `--batch-size` overrides the preset's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// hidden 32, 4 heads, lookback 52, horizon 12, batch 64 (the flags' defaults).
    Default,
    /// The TFT paper's electricity scale: hidden 160, 4 heads, lookback 168, horizon 24,
    /// batch 256.
    Paper,
}

/// What a preset sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub hidden: usize,
    pub heads: usize,
    pub lookback: usize,
    pub horizon: usize,
    pub batch_size: usize,
}

impl Preset {
    pub fn sizes(self) -> Sizes {
        match self {
            Preset::Default => Sizes {
                hidden: 32,
                heads: 4,
                lookback: 52,
                horizon: 12,
                batch_size: 64,
            },
            Preset::Paper => Sizes {
                hidden: 160,
                heads: 4,
                lookback: 168,
                horizon: 24,
                batch_size: 256,
            },
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    about = "Temporal Fusion Transformer on weekly Mauna Loa CO2 or a synthetic hourly panel (candle + fused LayerNorm)"
)]
pub struct Args {
    /// Passes over the training windows (at least 1).
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    /// Windows per optimizer step (at least 1; preset default 64, paper 256).
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
    /// Model width; a positive multiple of --heads (preset default 32, paper 160).
    #[arg(long, default_value_t = 32)]
    pub hidden: usize,
    /// Attention heads (at least 1; both presets 4).
    #[arg(long, default_value_t = 4)]
    pub heads: usize,
    /// Steps (weeks, hours) of history per window (at least 2; preset default 52, paper 168).
    #[arg(long, default_value_t = 52)]
    pub lookback: usize,
    /// Steps forecast per window (at least 1; preset default 12, paper 24).
    #[arg(long, default_value_t = 12)]
    pub horizon: usize,
    /// Sizes of model, windows and batches; explicit flags override it.
    #[arg(long, value_enum, default_value_t = Preset::Default)]
    pub preset: Preset,
    #[arg(long, value_enum, default_value_t = DatasetChoice::Co2)]
    pub dataset: DatasetChoice,
    /// Seed of the synthetic panel (independent of --seed, which draws weights and batches).
    #[arg(long, default_value_t = 0)]
    pub data_seed: u64,
    /// Instead of training: write the synthetic panel to PATH as CSV (for the PyTorch twin,
    /// bench/scripts/tft_torch.py --data PATH) and exit. Needs --dataset synthetic.
    #[arg(long, value_name = "PATH")]
    pub dump_data: Option<PathBuf>,
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
    let args = Args::parse_resolved(std::env::args_os()).unwrap_or_else(|e| e.exit());
    if let Err(e) = args.validate() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    args
}

impl Args {
    /// Parses `argv` and applies `--preset` to every size flag not given on the command line.
    pub fn parse_resolved<I, T>(argv: I) -> std::result::Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let m = Self::command().try_get_matches_from(argv)?;
        let mut args = Self::from_arg_matches(&m)?;
        let given = |id: &str| m.value_source(id) == Some(ValueSource::CommandLine);
        let p = args.preset.sizes();
        for (id, slot, value) in [
            ("hidden", &mut args.hidden, p.hidden),
            ("heads", &mut args.heads, p.heads),
            ("lookback", &mut args.lookback, p.lookback),
            ("horizon", &mut args.horizon, p.horizon),
            ("batch_size", &mut args.batch_size, p.batch_size),
        ] {
            if !given(id) {
                *slot = value;
            }
        }
        Ok(args)
    }

    /// The synthetic panel's configuration (`--data-seed`, the rest `SynthConfig::default`).
    pub fn synth_config(&self) -> SynthConfig {
        SynthConfig {
            seed: self.data_seed,
            ..SynthConfig::default()
        }
    }

    /// The dataset `--dataset` names, windowed by `--lookback`/`--horizon`.
    pub fn dataset(&self) -> Result<Dataset> {
        match self.dataset {
            DatasetChoice::Co2 => Dataset::co2(self.lookback, self.horizon, VAL_FRAC),
            DatasetChoice::Synthetic => {
                Dataset::synthetic(&self.synth_config(), self.lookback, self.horizon, VAL_FRAC)
            }
        }
    }

    /// Refuses what cannot work, naming the flag and what to use instead.
    pub fn validate(&self) -> Result<()> {
        let heads = self.heads;
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
        if heads == 0 {
            bail!("--heads must be at least 1 (got 0)");
        }
        if self.hidden == 0 || !self.hidden.is_multiple_of(heads) {
            bail!(
                "--hidden must be a positive multiple of {heads} (the attention heads), e.g. --hidden {} (got {})",
                heads * 8,
                self.hidden
            );
        }
        if self.lookback < 2 {
            bail!("--lookback must be at least 2 (got {})", self.lookback);
        }
        if self.horizon == 0 {
            bail!("--horizon must be at least 1 (got 0)");
        }
        if self.dump_data.is_some() && self.dataset != DatasetChoice::Synthetic {
            bail!("--dump-data writes the synthetic panel: add --dataset synthetic");
        }
        match self.dataset {
            DatasetChoice::Co2 => self.check_fits(Series::parse(CO2_CSV)?.len(), "weeks"),
            DatasetChoice::Synthetic => self.check_fits(self.synth_config().hours, "hours"),
        }
    }

    /// `--lookback` and `--horizon` against series of `n` steps (`unit`) split by
    /// [`VAL_FRAC`]: a validation window needs `horizon` held-out steps, and the training
    /// steps must hold at least two windows of `lookback + horizon` (the rule of `Dataset`).
    fn check_fits(&self, n: usize, unit: &str) -> Result<()> {
        let split = split_index(n, VAL_FRAC);
        let max_horizon = n - split;
        if self.horizon > max_horizon {
            bail!(
                "--horizon must be at most {max_horizon}, the {unit} held out for validation (got {})",
                self.horizon
            );
        }
        let max_window = split.saturating_sub(1);
        if self.lookback.saturating_add(self.horizon) > max_window {
            bail!(
                "--lookback + --horizon must be at most {max_window}, the training {unit} less one (got {} + {}); use --lookback {} or less",
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

    fn resolved(argv: &[&str]) -> Args {
        Args::parse_resolved(std::iter::once("tft").chain(argv.iter().copied())).unwrap()
    }

    /// A preset sets every size; a flag given on the command line wins, wherever it stands.
    #[test]
    fn presets_set_sizes_and_explicit_flags_override() {
        let sizes = |a: &Args| Sizes {
            hidden: a.hidden,
            heads: a.heads,
            lookback: a.lookback,
            horizon: a.horizon,
            batch_size: a.batch_size,
        };
        assert_eq!(sizes(&resolved(&[])), Preset::Default.sizes());
        assert_eq!(
            sizes(&resolved(&["--preset", "paper"])),
            Preset::Paper.sizes()
        );
        let a = resolved(&["--hidden", "64", "--preset", "paper", "--batch-size", "32"]);
        assert_eq!(
            sizes(&a),
            Sizes {
                hidden: 64,
                batch_size: 32,
                ..Preset::Paper.sizes()
            }
        );
        // An explicit value equal to the default still overrides the preset.
        assert_eq!(
            resolved(&["--preset", "paper", "--hidden", "32"]).hidden,
            32
        );
        let p = resolved(&[
            "--preset",
            "paper",
            "--dataset",
            "synthetic",
            "--layer-norm",
            "composite",
        ]);
        p.validate().unwrap();
    }

    /// For the synthetic panel too, `validate` accepts exactly the windows the dataset accepts.
    #[test]
    fn synthetic_window_limits_match_the_dataset() {
        let n = SynthConfig::default().hours;
        let split = split_index(n, VAL_FRAC);
        let (max_h, max_w) = (n - split, split - 1);
        let cases = [
            (168, 24),
            (max_w - max_h, max_h),
            (max_w - max_h + 1, max_h),
            (2, max_h + 1),
        ];
        let mut outcomes = Vec::new();
        for (l, h) in cases {
            let (l_, h_) = (l.to_string(), h.to_string());
            let a = resolved(&[
                "--layer-norm",
                "composite",
                "--dataset",
                "synthetic",
                "--lookback",
                &l_,
                "--horizon",
                &h_,
            ]);
            let ok = a.validate().is_ok();
            assert_eq!(ok, a.dataset().is_ok(), "lookback {l}, horizon {h}");
            outcomes.push(ok);
        }
        assert_eq!(outcomes, [true, true, false, false]);
    }
}
