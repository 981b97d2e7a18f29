//! The datasets: weekly Mauna Loa CO2 (1958-2001, shipped in `tft/data/`, see
//! `data/PROVENANCE.md`): loading, gap filling, covariates, chronological split, train-only
//! normalisation; the synthetic hourly panel ([`crate::synth`]); and the windows and batches
//! of either ([`Dataset`]).

use crate::synth::{self, Panel, SynthConfig, SynthData, KNOWN_VARS, OBSERVED_VARS};
use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};
use std::io::Write;

/// The shipped CSV (`date,co2`; `date` is YYYYMMDD, `co2` in ppmv, empty when missing).
pub const CO2_CSV: &str = include_str!("../data/co2_weekly_mlo.csv");

/// Weeks per seasonal cycle (for the seasonal-naive baseline).
pub const SEASON: usize = 52;

/// Past (observed) inputs, in order.
pub const PAST_VARS: [&str; 5] = ["co2_rel", "co2_diff", "woy_sin", "woy_cos", "time"];
/// Known future inputs, in order.
pub const FUTURE_VARS: [&str; 3] = ["woy_sin", "woy_cos", "time"];
/// Static (per-window) inputs.
pub const STATIC_VARS: [&str; 1] = ["level"];

#[derive(Debug, Clone)]
pub struct Series {
    pub dates: Vec<u32>,
    /// CO2 in ppmv, missing weeks linearly interpolated.
    pub values: Vec<f64>,
    /// False where the raw file had no value (excluded from validation metrics).
    pub observed: Vec<bool>,
    /// Fractional calendar year, e.g. 1958.24.
    pub year: Vec<f64>,
}

fn is_leap(y: u32) -> bool {
    (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400)
}

/// Fractional year at the middle of the given day.
fn fractional_year(date: u32) -> Result<f64> {
    let (y, m, d) = (date / 10000, (date / 100) % 100, date % 100);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        bail!("bad date {date}");
    }
    const CUM: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let leap = is_leap(y);
    let doy = CUM[(m - 1) as usize] + d + u32::from(leap && m > 2); // 1-based
    let days = if leap { 366.0 } else { 365.0 };
    Ok(y as f64 + (doy as f64 - 0.5) / days)
}

impl Series {
    pub fn parse(csv: &str) -> Result<Self> {
        let mut dates = Vec::new();
        let mut raw: Vec<Option<f64>> = Vec::new();
        for (i, line) in csv.lines().enumerate() {
            let line = line.trim();
            if i == 0 || line.is_empty() {
                continue;
            }
            let (d, v) = line
                .split_once(',')
                .with_context(|| format!("line {}: {line:?}", i + 1))?;
            dates.push(
                d.trim()
                    .parse::<u32>()
                    .with_context(|| format!("line {}", i + 1))?,
            );
            let v = v.trim();
            raw.push(if v.is_empty() || v.eq_ignore_ascii_case("nan") {
                None
            } else {
                Some(
                    v.parse::<f64>()
                        .with_context(|| format!("line {}", i + 1))?,
                )
            });
        }
        if raw.first().copied().flatten().is_none() || raw.last().copied().flatten().is_none() {
            bail!("series must start and end with an observed value");
        }
        // Linear interpolation over gaps.
        let mut values = vec![0.0; raw.len()];
        let mut prev = 0usize;
        for i in 0..raw.len() {
            if let Some(v) = raw[i] {
                values[i] = v;
                for (j, slot) in values.iter_mut().enumerate().take(i).skip(prev + 1) {
                    let w = (j - prev) as f64 / (i - prev) as f64;
                    *slot = raw[prev].unwrap() * (1.0 - w) + v * w;
                }
                prev = i;
            }
        }
        let year = dates
            .iter()
            .map(|&d| fractional_year(d))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            dates,
            observed: raw.iter().map(Option::is_some).collect(),
            values,
            year,
        })
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// Normalisation constants, computed from the training segment only.
#[derive(Debug, Clone)]
pub struct Normaliser {
    pub level_mean: f64,
    pub level_std: f64,
    /// Scale of `y[t+h] - y[t]` (RMS over training windows, h = 1..=horizon).
    pub rel_scale: f64,
    /// Standard deviation of the weekly difference.
    pub diff_scale: f64,
    pub year_mean: f64,
    pub year_std: f64,
}

/// Mean and population standard deviation (at least 1e-8).
pub(crate) fn mean_std(xs: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = xs.clone().count() as f64;
    let m = xs.clone().sum::<f64>() / n;
    let v = xs.map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, v.sqrt().max(1e-8))
}

/// The CO2 series with its split and train-only normalisation.
#[derive(Debug, Clone)]
pub struct Co2 {
    pub series: Series,
    pub norm: Normaliser,
    /// First index of the validation segment.
    pub split: usize,
}

/// Where the windows come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Weekly Mauna Loa CO2; a window end is a week index.
    Co2(Co2),
    /// The hourly synthetic panel; a window end is the flat index `series * hours + hour`.
    Synthetic(SynthData),
}

/// Windows over a [`Source`]: which ends train and validate, and their batches.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub source: Source,
    pub lookback: usize,
    pub horizon: usize,
    /// Window "ends" (index of the last observed step) for training / validation.
    pub train_ends: Vec<usize>,
    pub val_ends: Vec<usize>,
}

/// One batch of windows.
#[derive(Debug, Clone)]
pub struct Batch {
    pub static_x: Tensor,
    pub past: Tensor,
    pub future: Tensor,
    /// Normalised target, `[b, horizon]` (CO2: `(y[e+h] - y[e]) / rel_scale`; synthetic: the
    /// series' z-score).
    pub target: Tensor,
    pub ends: Vec<usize>,
}

/// First week of the validation segment when the last `val_frac` of `n` weeks are held out.
pub fn split_index(n: usize, val_frac: f64) -> usize {
    ((n as f64) * (1.0 - val_frac)).round() as usize
}

/// The window rule shared by both sources (and `cli::Args::validate`): a series of `n` steps
/// split at `split` needs `horizon` held-out steps and two training windows.
fn check_fits(n: usize, split: usize, lookback: usize, horizon: usize) -> Result<()> {
    if lookback < 2 || horizon == 0 || split < lookback + horizon + 1 || n - split < horizon {
        bail!("series too short: n={n}, split={split}, lookback={lookback}, horizon={horizon}");
    }
    Ok(())
}

impl Dataset {
    /// The shipped CO2 series with the last `val_frac` of weeks held out for validation.
    pub fn co2(lookback: usize, horizon: usize, val_frac: f64) -> Result<Self> {
        Self::new(Series::parse(CO2_CSV)?, lookback, horizon, val_frac)
    }

    /// The synthetic panel of `cfg`; the last `val_frac` of every series' hours validate.
    pub fn synthetic(
        cfg: &SynthConfig,
        lookback: usize,
        horizon: usize,
        val_frac: f64,
    ) -> Result<Self> {
        let data = SynthData::new(Panel::generate(cfg)?, val_frac);
        check_fits(cfg.hours, data.split, lookback, horizon)?;
        let (train_ends, val_ends) = data.window_ends(lookback, horizon);
        Ok(Self {
            source: Source::Synthetic(data),
            lookback,
            horizon,
            train_ends,
            val_ends,
        })
    }

    pub fn new(series: Series, lookback: usize, horizon: usize, val_frac: f64) -> Result<Self> {
        let n = series.len();
        let split = split_index(n, val_frac);
        check_fits(n, split, lookback, horizon)?;
        let y = &series.values;
        let tr = &y[..split];
        let (level_mean, level_std) = mean_std(tr.iter().copied());
        let (_, diff_scale) = mean_std(tr.windows(2).map(|w| w[1] - w[0]));
        let mut sq = 0.0;
        let mut cnt = 0usize;
        for e in 0..split - horizon {
            for h in 1..=horizon {
                sq += (tr[e + h] - tr[e]).powi(2);
                cnt += 1;
            }
        }
        let rel_scale = (sq / cnt as f64).sqrt();
        let (year_mean, year_std) = mean_std(series.year[..split].iter().copied());
        // A training window's targets lie entirely before the split; a validation window's
        // targets lie entirely after it (its lookback may reach back into the training weeks).
        let train_ends: Vec<usize> = (lookback - 1..split - horizon).collect();
        let val_ends: Vec<usize> = (split - 1..n - horizon).collect();
        Ok(Self {
            source: Source::Co2(Co2 {
                norm: Normaliser {
                    level_mean,
                    level_std,
                    rel_scale,
                    diff_scale,
                    year_mean,
                    year_std,
                },
                series,
                split,
            }),
            lookback,
            horizon,
            train_ends,
            val_ends,
        })
    }

    /// Static real inputs per window.
    pub fn n_static(&self) -> usize {
        match &self.source {
            Source::Co2(_) => STATIC_VARS.len(),
            Source::Synthetic(d) => d.n_static(),
        }
    }

    /// Past (observed) inputs per step, target included.
    pub fn n_past(&self) -> usize {
        match &self.source {
            Source::Co2(_) => PAST_VARS.len(),
            Source::Synthetic(_) => OBSERVED_VARS.len() + KNOWN_VARS.len(),
        }
    }

    /// Known future inputs per step.
    pub fn n_future(&self) -> usize {
        match &self.source {
            Source::Co2(_) => FUTURE_VARS.len(),
            Source::Synthetic(_) => KNOWN_VARS.len(),
        }
    }

    /// Steps per seasonal cycle (the seasonal-naive period): 52 weeks, or 168 hours.
    pub fn season(&self) -> usize {
        match &self.source {
            Source::Co2(_) => SEASON,
            Source::Synthetic(_) => synth::SEASON,
        }
    }

    /// Unit of the target (and of every MAE).
    pub fn unit(&self) -> &'static str {
        match &self.source {
            Source::Co2(_) => "ppm",
            Source::Synthetic(_) => "units",
        }
    }

    /// Target value at a (flat) index, in its units.
    pub fn value(&self, i: usize) -> f64 {
        match &self.source {
            Source::Co2(c) => c.series.values[i],
            Source::Synthetic(d) => d.panel.target[i],
        }
    }

    /// False where the value was interpolated (excluded from MAEs).
    pub fn observed(&self, i: usize) -> bool {
        match &self.source {
            Source::Co2(c) => c.series.observed[i],
            Source::Synthetic(_) => true,
        }
    }

    /// One line on the data: what, how long, the split and the window counts.
    pub fn describe(&self) -> String {
        let (nt, nv) = (self.train_ends.len(), self.val_ends.len());
        match &self.source {
            Source::Co2(c) => {
                let s = &c.series;
                format!(
                    "weekly Mauna Loa CO2, {} weeks ({}..{}), {} gaps interpolated; train {} weeks / {nt} windows, validation {} weeks / {nv} windows",
                    s.len(),
                    s.dates[0],
                    s.dates[s.len() - 1],
                    s.observed.iter().filter(|o| !**o).count(),
                    c.split,
                    s.len() - c.split,
                )
            }
            Source::Synthetic(d) => {
                let p = &d.panel.cfg;
                format!(
                    "synthetic hourly panel (seed {}), {} series x {} hours, {} categories; train {} hours / {nt} windows (every {} h), validation {} hours / {nv} windows (every {} h)",
                    p.seed,
                    p.n_series,
                    p.hours,
                    p.categories,
                    d.split,
                    p.train_stride,
                    p.hours - d.split,
                    p.val_stride,
                )
            }
        }
    }

    /// Sum of |x| over the static, past, future and target tensors of the batch of every k-th
    /// training and every k-th validation window (k = count / 128): a cheap check that another
    /// implementation (the PyTorch twin) built the same windows.
    pub fn fingerprint(&self) -> Result<f64> {
        let mut total = 0.0;
        for ends in [&self.train_ends, &self.val_ends] {
            let k = (ends.len() / 128).max(1);
            let sample: Vec<usize> = ends.iter().step_by(k).copied().collect();
            let b = self.batch(&sample, &Device::Cpu)?;
            for t in [&b.static_x, &b.past, &b.future, &b.target] {
                let v = t.flatten_all()?.to_vec1::<f32>()?;
                total += v.iter().map(|x| x.abs() as f64).sum::<f64>();
            }
        }
        Ok(total)
    }

    /// The synthetic panel as CSV (see [`Panel::write_csv`]); CO2 is refused.
    pub fn write_panel_csv(&self, path: &std::path::Path) -> Result<usize> {
        let Source::Synthetic(d) = &self.source else {
            bail!("only the synthetic panel can be written (--dataset synthetic)");
        };
        let f =
            std::fs::File::create(path).with_context(|| format!("create {}", path.display()))?;
        let mut w = std::io::BufWriter::new(f);
        let rows = d.panel.write_csv(&mut w)?;
        w.flush()?;
        Ok(rows)
    }

    fn week_features(c: &Co2, i: usize) -> [f64; 3] {
        let s = &c.series;
        let phase = 2.0 * std::f64::consts::PI * s.year[i].fract();
        [
            phase.sin(),
            phase.cos(),
            (s.year[i] - c.norm.year_mean) / c.norm.year_std,
        ]
    }

    /// Appends one CO2 window (see [`SynthData::write_window`] for the synthetic one).
    fn write_co2_window(
        c: &Co2,
        e: usize,
        (l, h): (usize, usize),
        st: &mut Vec<f32>,
        past: &mut Vec<f32>,
        fut: &mut Vec<f32>,
        tgt: &mut Vec<f32>,
    ) {
        let y = &c.series.values;
        let nm = &c.norm;
        let last = y[e];
        st.push(((last - nm.level_mean) / nm.level_std) as f32);
        for i in e + 1 - l..=e {
            let diff = if i > 0 { y[i] - y[i - 1] } else { 0.0 };
            let [s, cs, t] = Self::week_features(c, i);
            past.extend_from_slice(&[
                ((y[i] - last) / nm.rel_scale) as f32,
                (diff / nm.diff_scale) as f32,
                s as f32,
                cs as f32,
                t as f32,
            ]);
        }
        for (i, &yi) in y.iter().enumerate().take(e + h + 1).skip(e + 1) {
            let [s, cs, t] = Self::week_features(c, i);
            fut.extend_from_slice(&[s as f32, cs as f32, t as f32]);
            tgt.push(((yi - last) / nm.rel_scale) as f32);
        }
    }

    /// Is `e` the end of a whole window (lookback and horizon inside one series)?
    fn window_in_range(&self, e: usize) -> bool {
        let (l, h) = (self.lookback, self.horizon);
        let (t, n) = match &self.source {
            Source::Co2(c) => (e, c.series.len()),
            Source::Synthetic(d) => {
                let c = &d.panel.cfg;
                if e >= c.n_series * c.hours {
                    return false;
                }
                (e % c.hours, c.hours)
            }
        };
        t + 1 >= l && t + h < n
    }

    pub fn batch(&self, ends: &[usize], device: &Device) -> Result<Batch> {
        let (l, h) = (self.lookback, self.horizon);
        let b = ends.len();
        let (ns, np, nf) = (self.n_static(), self.n_past(), self.n_future());
        let mut st = Vec::with_capacity(b * ns);
        let mut past = Vec::with_capacity(b * l * np);
        let mut fut = Vec::with_capacity(b * h * nf);
        let mut tgt = Vec::with_capacity(b * h);
        for &e in ends {
            if !self.window_in_range(e) {
                bail!("window end {e} out of range");
            }
            let bufs = (&mut st, &mut past, &mut fut, &mut tgt);
            match &self.source {
                Source::Co2(c) => {
                    Self::write_co2_window(c, e, (l, h), bufs.0, bufs.1, bufs.2, bufs.3)
                }
                Source::Synthetic(d) => d.write_window(e, (l, h), bufs.0, bufs.1, bufs.2, bufs.3),
            }
        }
        Ok(Batch {
            static_x: Tensor::from_vec(st, (b, ns), device)?,
            past: Tensor::from_vec(past, (b, l, np), device)?,
            future: Tensor::from_vec(fut, (b, h, nf), device)?,
            target: Tensor::from_vec(tgt, (b, h), device)?,
            ends: ends.to_vec(),
        })
    }

    /// Back to the target's units: CO2 `y[e] + pred * rel_scale`, synthetic `mean + pred * std`.
    pub fn denormalise(&self, end: usize, pred: f32) -> f64 {
        match &self.source {
            Source::Co2(c) => c.series.values[end] + pred as f64 * c.norm.rel_scale,
            Source::Synthetic(d) => d.denormalise(end, pred),
        }
    }

    /// Mean absolute error (target units) of a point forecast over the observed target steps
    /// of `ends`. `forecast(end, h)` gives the prediction for step `end + h` (h = 1..=horizon).
    pub fn mae(&self, ends: &[usize], mut forecast: impl FnMut(usize, usize) -> f64) -> f64 {
        let (mut sum, mut n) = (0.0, 0usize);
        for &e in ends {
            for h in 1..=self.horizon {
                if self.observed(e + h) {
                    sum += (forecast(e, h) - self.value(e + h)).abs();
                    n += 1;
                }
            }
        }
        sum / n.max(1) as f64
    }

    /// Persistence: the last observed step, repeated.
    pub fn persistence_mae(&self, ends: &[usize]) -> f64 {
        self.mae(ends, |e, _| self.value(e))
    }

    /// Seasonal naive: the same step one season ([`Dataset::season`]) earlier.
    pub fn seasonal_naive_mae(&self, ends: &[usize]) -> f64 {
        let s = self.season();
        self.mae(ends, |e, h| self.value(e + h - s))
    }

    /// Seasonal naive plus the last season's change: `y[e+h-S] + (y[e] - y[e-S])`.
    pub fn seasonal_drift_mae(&self, ends: &[usize]) -> f64 {
        let s = self.season();
        self.mae(ends, |e, h| {
            self.value(e + h - s) + (self.value(e) - self.value(e - s))
        })
    }
}
