//! A seeded synthetic panel at the scale of the TFT paper's electricity/traffic experiments:
//! many hourly series with daily and weekly seasonality, trends, level shifts and noise, a
//! static category and scale per series, known-future calendar inputs and an observed-only
//! covariate that drives the target.
//!
//! [`Panel::generate`] draws everything from one `StdRng` (deterministic in
//! [`SynthConfig::seed`]); [`Panel::write_csv`] writes it losslessly (shortest round-trip
//! decimals) for the PyTorch twin, `bench/scripts/tft_torch.py`, which reads the file and
//! builds the same features as [`SynthData`].

use crate::data::{mean_std, split_index};
use anyhow::{bail, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use std::f64::consts::PI;
use std::io::Write;

/// Hours per weekly cycle (the seasonal-naive period).
pub const SEASON: usize = 168;
/// Known inputs (past and future), in order; `weekend` is 0/1, `time` the standardised hour.
pub const KNOWN_VARS: [&str; 6] = [
    "hod_sin", "hod_cos", "dow_sin", "dow_cos", "weekend", "time",
];
/// Observed-only inputs, in order, followed in the past input by [`KNOWN_VARS`].
pub const OBSERVED_VARS: [&str; 2] = ["target", "covariate"];
/// First line of [`Panel::write_csv`]'s file (then `key=value` pairs).
pub const CSV_MAGIC: &str = "# tft synthetic panel";

/// Size and seed of the panel, and which window ends the dataset uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthConfig {
    pub n_series: usize,
    /// Hours per series (every series covers the same hours, starting on a Monday at 00:00).
    pub hours: usize,
    /// Static categories (the daily/weekly profile family), assigned round-robin.
    pub categories: usize,
    pub seed: u64,
    /// A training window ends every `train_stride` hours of each series.
    pub train_stride: usize,
    /// A validation window ends every `val_stride` hours of each series.
    pub val_stride: usize,
}

impl Default for SynthConfig {
    /// 64 series x 16 weeks, 4 categories; ~21k training windows at the paper preset.
    fn default() -> Self {
        Self {
            n_series: 64,
            hours: 16 * SEASON,
            categories: 4,
            seed: 0,
            train_stride: 6,
            val_stride: 24,
        }
    }
}

/// Daily profile of a category: two harmonics (amplitude, peak hour) and the weekend factor.
struct Profile {
    a1: f64,
    p1: f64,
    a2: f64,
    p2: f64,
    weekend: f64,
}

/// Residential (evening + morning peaks), commercial (office hours, quiet weekends),
/// industrial (flat), lighting (night peak); categories past 4 reuse them in turn.
const PROFILES: [Profile; 4] = [
    Profile {
        a1: 0.25,
        p1: 19.0,
        a2: 0.15,
        p2: 8.0,
        weekend: 1.1,
    },
    Profile {
        a1: 0.45,
        p1: 13.0,
        a2: 0.10,
        p2: 10.0,
        weekend: 0.55,
    },
    Profile {
        a1: 0.10,
        p1: 12.0,
        a2: 0.05,
        p2: 3.0,
        weekend: 0.8,
    },
    Profile {
        a1: 0.50,
        p1: 0.0,
        a2: 0.0,
        p2: 0.0,
        weekend: 1.0,
    },
];

/// The generated series, series-major: value of series `s` at hour `t` is `[s * hours + t]`.
#[derive(Debug, Clone)]
pub struct Panel {
    pub cfg: SynthConfig,
    pub category: Vec<usize>,
    /// Typical magnitude of each series (10..1000 units, log-uniform).
    pub scale: Vec<f64>,
    pub target: Vec<f64>,
    /// Observed-only driver of the target ("temperature"): AR(1) plus a daily cycle.
    pub covariate: Vec<f64>,
}

/// Hour of day and day of week (0 = Monday) of hour `t`.
pub fn calendar(t: usize) -> (usize, usize) {
    (t % 24, (t / 24) % 7)
}

impl Panel {
    pub fn generate(cfg: &SynthConfig) -> Result<Self> {
        if cfg.n_series == 0 || cfg.hours == 0 || cfg.categories == 0 {
            bail!("synthetic panel needs at least one series, hour and category: {cfg:?}");
        }
        if cfg.train_stride == 0 || cfg.val_stride == 0 {
            bail!("synthetic window strides must be at least 1: {cfg:?}");
        }
        let mut rng = StdRng::seed_from_u64(cfg.seed);
        let n = cfg.n_series * cfg.hours;
        let (mut category, mut scale) = (Vec::new(), Vec::new());
        let (mut target, mut covariate) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for s in 0..cfg.n_series {
            let cat = s % cfg.categories;
            let p = &PROFILES[cat % PROFILES.len()];
            let sc = (10f64.ln() + 100f64.ln() * rng.random::<f64>()).exp();
            let trend = -0.3 + 0.8 * rng.random::<f64>(); // relative change over the span
            let jitter = -1.5 + 3.0 * rng.random::<f64>(); // hours
            let amp = 0.8 + 0.4 * rng.random::<f64>();
            let beta = 0.05 + 0.15 * rng.random::<f64>();
            let noise_sd = 0.02 + 0.06 * rng.random::<f64>();
            let n_shifts = rng.random_range(0..3usize);
            let shifts: Vec<(usize, f64)> = (0..n_shifts)
                .map(|_| {
                    let at = rng.random_range(0..cfg.hours);
                    let z: f64 = StandardNormal.sample(&mut rng);
                    (at, (0.2 * z).exp())
                })
                .collect();
            let (mut x_ar, mut noise) = (0.0f64, 0.0f64);
            for t in 0..cfg.hours {
                let (hod, dow) = calendar(t);
                let h = hod as f64;
                let zx: f64 = StandardNormal.sample(&mut rng);
                let zn: f64 = StandardNormal.sample(&mut rng);
                x_ar = 0.97 * x_ar + 0.25 * zx;
                noise = 0.6 * noise + noise_sd * zn;
                let x = x_ar + 0.5 * (2.0 * PI * (h - 15.0) / 24.0).cos();
                let daily = amp
                    * (p.a1 * (2.0 * PI * (h - p.p1 - jitter) / 24.0).cos()
                        + p.a2 * (4.0 * PI * (h - p.p2 - jitter) / 24.0).cos());
                let week = if dow >= 5 { p.weekend } else { 1.0 };
                let level = (1.0 + trend * t as f64 / cfg.hours as f64)
                    * shifts
                        .iter()
                        .filter(|(at, _)| t >= *at)
                        .map(|(_, f)| f)
                        .product::<f64>();
                let y = level * week * (1.0 + daily + beta * x) + noise;
                target.push(sc * y.max(0.05));
                covariate.push(x);
            }
            category.push(cat);
            scale.push(sc);
        }
        Ok(Self {
            cfg: cfg.clone(),
            category,
            scale,
            target,
            covariate,
        })
    }

    /// One series' target, `hours` long.
    pub fn series(&self, s: usize) -> &[f64] {
        &self.target[s * self.cfg.hours..(s + 1) * self.cfg.hours]
    }

    /// Writes `# tft synthetic panel: seed=..` then `series,hour,category,scale,target,covariate`
    /// rows (series-major); floats in Rust's shortest round-trip form, so reading them back
    /// gives the same `f64`s. Returns the number of rows.
    pub fn write_csv(&self, w: &mut impl Write) -> Result<usize> {
        let c = &self.cfg;
        writeln!(
            w,
            "{CSV_MAGIC}: seed={}, n_series={}, hours={}, categories={}, train_stride={}, val_stride={}",
            c.seed, c.n_series, c.hours, c.categories, c.train_stride, c.val_stride
        )?;
        writeln!(w, "series,hour,category,scale,target,covariate")?;
        for s in 0..c.n_series {
            for t in 0..c.hours {
                let i = s * c.hours + t;
                writeln!(
                    w,
                    "{s},{t},{},{:?},{:?},{:?}",
                    self.category[s], self.scale[s], self.target[i], self.covariate[i]
                )?;
            }
        }
        Ok(c.n_series * c.hours)
    }
}

/// The panel with its train-only normalisation: what `Dataset` needs to build windows.
///
/// A window end is the flat index `s * hours + t` of its last observed hour. Per window:
/// static = one-hot category ++ standardised ln(scale); past rows = [target z-score, covariate
/// z-score] ++ known; future rows = known; target = the z-scores of the next `horizon` hours.
/// Each series' mean and standard deviation (target and covariate) come from its training
/// hours only; `time` is standardised over the training hours.
#[derive(Debug, Clone)]
pub struct SynthData {
    pub panel: Panel,
    /// First hour of the validation segment (the same for every series).
    pub split: usize,
    /// Per series: target mean and standard deviation over the training hours.
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
    cov_mean: Vec<f64>,
    cov_std: Vec<f64>,
    log_scale: (f64, f64),
    time: (f64, f64),
}

impl SynthData {
    pub fn new(panel: Panel, val_frac: f64) -> Self {
        let hours = panel.cfg.hours;
        let split = split_index(hours, val_frac).min(hours);
        let (mut mean, mut std, mut cov_mean, mut cov_std) = (vec![], vec![], vec![], vec![]);
        for s in 0..panel.cfg.n_series {
            let r = s * hours..s * hours + split;
            let (m, sd) = mean_std(panel.target[r.clone()].iter().copied());
            let (cm, cs) = mean_std(panel.covariate[r].iter().copied());
            mean.push(m);
            std.push(sd);
            cov_mean.push(cm);
            cov_std.push(cs);
        }
        let log_scale = mean_std(panel.scale.iter().map(|s| s.ln()));
        let time = mean_std((0..split.max(1)).map(|t| t as f64));
        Self {
            panel,
            split,
            mean,
            std,
            cov_mean,
            cov_std,
            log_scale,
            time,
        }
    }

    pub fn n_static(&self) -> usize {
        self.panel.cfg.categories + 1
    }

    /// Training and validation window ends for `lookback`/`horizon`, series by series.
    pub fn window_ends(&self, lookback: usize, horizon: usize) -> (Vec<usize>, Vec<usize>) {
        let c = &self.panel.cfg;
        let (mut train, mut val) = (Vec::new(), Vec::new());
        for s in 0..c.n_series {
            let base = s * c.hours;
            train.extend(
                (lookback - 1..self.split - horizon)
                    .step_by(c.train_stride)
                    .map(|t| base + t),
            );
            val.extend(
                (self.split - 1..c.hours - horizon)
                    .step_by(c.val_stride)
                    .map(|t| base + t),
            );
        }
        (train, val)
    }

    /// [`KNOWN_VARS`] at hour `t`.
    pub fn known(&self, t: usize) -> [f64; 6] {
        let (hod, dow) = calendar(t);
        let ph = 2.0 * PI * hod as f64 / 24.0;
        let pw = 2.0 * PI * dow as f64 / 7.0;
        [
            ph.sin(),
            ph.cos(),
            pw.sin(),
            pw.cos(),
            if dow >= 5 { 1.0 } else { 0.0 },
            (t as f64 - self.time.0) / self.time.1,
        ]
    }

    /// Appends the static row, `lookback` past rows, `horizon` future rows and `horizon`
    /// targets of the window ending at flat index `e` (checked by the caller).
    pub fn write_window(
        &self,
        e: usize,
        (lookback, horizon): (usize, usize),
        st: &mut Vec<f32>,
        past: &mut Vec<f32>,
        fut: &mut Vec<f32>,
        tgt: &mut Vec<f32>,
    ) {
        let p = &self.panel;
        let hours = p.cfg.hours;
        let s = e / hours;
        st.extend((0..p.cfg.categories).map(|c| if c == p.category[s] { 1.0 } else { 0.0 }));
        st.push(((p.scale[s].ln() - self.log_scale.0) / self.log_scale.1) as f32);
        let z = |i: usize| (p.target[i] - self.mean[s]) / self.std[s];
        for i in e + 1 - lookback..=e {
            past.push(z(i) as f32);
            past.push(((p.covariate[i] - self.cov_mean[s]) / self.cov_std[s]) as f32);
            past.extend(self.known(i % hours).map(|v| v as f32));
        }
        for i in e + 1..=e + horizon {
            fut.extend(self.known(i % hours).map(|v| v as f32));
            tgt.push(z(i) as f32);
        }
    }

    /// Back to the series' units: `mean + pred * std`.
    pub fn denormalise(&self, end: usize, pred: f32) -> f64 {
        let s = end / self.panel.cfg.hours;
        self.mean[s] + pred as f64 * self.std[s]
    }
}
