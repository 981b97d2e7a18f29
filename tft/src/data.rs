//! Weekly Mauna Loa CO2 (1958-2001, shipped in `tft/data/`, see `data/PROVENANCE.md`):
//! loading, gap filling, covariates, chronological split, train-only normalisation, windows.

use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};

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

fn mean_std(xs: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = xs.clone().count() as f64;
    let m = xs.clone().sum::<f64>() / n;
    let v = xs.map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, v.sqrt().max(1e-8))
}

#[derive(Debug, Clone)]
pub struct Dataset {
    pub series: Series,
    pub norm: Normaliser,
    pub lookback: usize,
    pub horizon: usize,
    /// First index of the validation segment.
    pub split: usize,
    /// Window "ends" (index of the last observed week) for training / validation.
    pub train_ends: Vec<usize>,
    pub val_ends: Vec<usize>,
}

/// One batch of windows.
#[derive(Debug, Clone)]
pub struct Batch {
    pub static_x: Tensor,
    pub past: Tensor,
    pub future: Tensor,
    /// Normalised target `(y[e+h] - y[e]) / rel_scale`, `[b, horizon]`.
    pub target: Tensor,
    pub ends: Vec<usize>,
}

/// First week of the validation segment when the last `val_frac` of `n` weeks are held out.
pub fn split_index(n: usize, val_frac: f64) -> usize {
    ((n as f64) * (1.0 - val_frac)).round() as usize
}

impl Dataset {
    /// The shipped CO2 series with the last `val_frac` of weeks held out for validation.
    pub fn co2(lookback: usize, horizon: usize, val_frac: f64) -> Result<Self> {
        Self::new(Series::parse(CO2_CSV)?, lookback, horizon, val_frac)
    }

    pub fn new(series: Series, lookback: usize, horizon: usize, val_frac: f64) -> Result<Self> {
        let n = series.len();
        let split = split_index(n, val_frac);
        if lookback < 2 || horizon == 0 || split < lookback + horizon + 1 || n - split < horizon {
            bail!("series too short: n={n}, split={split}, lookback={lookback}, horizon={horizon}");
        }
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
            norm: Normaliser {
                level_mean,
                level_std,
                rel_scale,
                diff_scale,
                year_mean,
                year_std,
            },
            series,
            lookback,
            horizon,
            split,
            train_ends,
            val_ends,
        })
    }

    fn week_features(&self, i: usize) -> [f64; 3] {
        let s = &self.series;
        let phase = 2.0 * std::f64::consts::PI * s.year[i].fract();
        [
            phase.sin(),
            phase.cos(),
            (s.year[i] - self.norm.year_mean) / self.norm.year_std,
        ]
    }

    pub fn batch(&self, ends: &[usize], device: &Device) -> Result<Batch> {
        let (l, h) = (self.lookback, self.horizon);
        let y = &self.series.values;
        let nm = &self.norm;
        let b = ends.len();
        let mut st = Vec::with_capacity(b);
        let mut past = Vec::with_capacity(b * l * PAST_VARS.len());
        let mut fut = Vec::with_capacity(b * h * FUTURE_VARS.len());
        let mut tgt = Vec::with_capacity(b * h);
        for &e in ends {
            if e + 1 < l || e + h >= y.len() {
                bail!("window end {e} out of range");
            }
            let last = y[e];
            st.push(((last - nm.level_mean) / nm.level_std) as f32);
            for i in e + 1 - l..=e {
                let diff = if i > 0 { y[i] - y[i - 1] } else { 0.0 };
                let [s, c, t] = self.week_features(i);
                past.extend_from_slice(&[
                    ((y[i] - last) / nm.rel_scale) as f32,
                    (diff / nm.diff_scale) as f32,
                    s as f32,
                    c as f32,
                    t as f32,
                ]);
            }
            for (i, &yi) in y.iter().enumerate().take(e + h + 1).skip(e + 1) {
                let [s, c, t] = self.week_features(i);
                fut.extend_from_slice(&[s as f32, c as f32, t as f32]);
                tgt.push(((yi - last) / nm.rel_scale) as f32);
            }
        }
        Ok(Batch {
            static_x: Tensor::from_vec(st, (b, STATIC_VARS.len()), device)?,
            past: Tensor::from_vec(past, (b, l, PAST_VARS.len()), device)?,
            future: Tensor::from_vec(fut, (b, h, FUTURE_VARS.len()), device)?,
            target: Tensor::from_vec(tgt, (b, h), device)?,
            ends: ends.to_vec(),
        })
    }

    /// Back to ppmv: `y[e] + pred * rel_scale`.
    pub fn denormalise(&self, end: usize, pred: f32) -> f64 {
        self.series.values[end] + pred as f64 * self.norm.rel_scale
    }

    /// Mean absolute error (ppmv) of a point forecast over the observed target weeks of `ends`.
    /// `forecast(end, h)` gives the prediction for week `end + h` (h = 1..=horizon).
    pub fn mae(&self, ends: &[usize], mut forecast: impl FnMut(usize, usize) -> f64) -> f64 {
        let (mut sum, mut n) = (0.0, 0usize);
        for &e in ends {
            for h in 1..=self.horizon {
                if self.series.observed[e + h] {
                    sum += (forecast(e, h) - self.series.values[e + h]).abs();
                    n += 1;
                }
            }
        }
        sum / n.max(1) as f64
    }

    /// Persistence: the last observed week, repeated.
    pub fn persistence_mae(&self, ends: &[usize]) -> f64 {
        self.mae(ends, |e, _| self.series.values[e])
    }

    /// Seasonal naive: the same week one year (52 weeks) earlier.
    pub fn seasonal_naive_mae(&self, ends: &[usize]) -> f64 {
        self.mae(ends, |e, h| self.series.values[e + h - SEASON])
    }

    /// Seasonal naive plus the last year's change: `y[e+h-52] + (y[e] - y[e-52])`.
    pub fn seasonal_drift_mae(&self, ends: &[usize]) -> f64 {
        let y = &self.series.values;
        self.mae(ends, |e, h| y[e + h - SEASON] + (y[e] - y[e - SEASON]))
    }
}
