//! The synthetic panel: deterministic in its seed, the shapes the model expects, daily and
//! weekly seasonality and a covariate that drives the target, windows that never cross
//! series, a lossless dump for the PyTorch twin, and one tiny training step.

use candle_core::Device;
use std::process::Command;
use tft::data::{Dataset, Source};
use tft::synth::{calendar, Panel, SynthConfig, KNOWN_VARS, OBSERVED_VARS, SEASON};
use tft::train::{epoch_batches, ParamTracker, Trainer};
use tft::TftConfig;

/// 6 series x 4 weeks, 3 categories: generated in well under a millisecond.
fn small() -> SynthConfig {
    SynthConfig {
        n_series: 6,
        hours: 4 * SEASON,
        categories: 3,
        seed: 11,
        train_stride: 5,
        val_stride: 7,
    }
}

/// Mean over series of the lag-`lag` autocorrelation of `f(series)`.
fn acf(p: &Panel, lag: usize, f: impl Fn(&[f64]) -> Vec<f64>) -> f64 {
    let mut total = 0.0;
    for s in 0..p.cfg.n_series {
        let x = f(p.series(s));
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        let v = x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / n;
        let c = (lag..x.len())
            .map(|i| (x[i] - m) * (x[i - lag] - m))
            .sum::<f64>()
            / (x.len() - lag) as f64;
        total += c / v;
    }
    total / p.cfg.n_series as f64
}

fn diff(x: &[f64]) -> Vec<f64> {
    x.windows(2).map(|w| w[1] - w[0]).collect()
}

fn corr(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

#[test]
fn same_seed_same_panel_other_seed_other_panel() {
    let a = Panel::generate(&small()).unwrap();
    let b = Panel::generate(&small()).unwrap();
    assert_eq!(a.target, b.target);
    assert_eq!(a.covariate, b.covariate);
    assert_eq!(a.scale, b.scale);
    assert_eq!(a.category, b.category);
    let c = Panel::generate(&SynthConfig {
        seed: 12,
        ..small()
    })
    .unwrap();
    assert_ne!(a.target, c.target);
    assert_ne!(a.scale, c.scale);
}

#[test]
fn panel_shapes_and_ranges() {
    let cfg = small();
    let p = Panel::generate(&cfg).unwrap();
    let n = cfg.n_series * cfg.hours;
    assert_eq!((p.target.len(), p.covariate.len()), (n, n));
    assert_eq!(p.category, [0, 1, 2, 0, 1, 2]);
    assert!(p.scale.iter().all(|s| (10.0..=1000.0).contains(s)));
    assert!(p.target.iter().all(|y| y.is_finite() && *y > 0.0));
    assert!(p.covariate.iter().all(|x| x.is_finite()));
    assert!(Panel::generate(&SynthConfig {
        n_series: 0,
        ..small()
    })
    .is_err());
}

#[test]
fn daily_and_weekly_seasonality_and_a_driving_covariate() {
    let p = Panel::generate(&SynthConfig::default()).unwrap();
    // Daily: a day apart is alike, half a day apart is not.
    let (a12, a24) = (acf(&p, 12, |x| x.to_vec()), acf(&p, 24, |x| x.to_vec()));
    eprintln!("acf(12) {a12:.3}, acf(24) {a24:.3}");
    assert!(a24 > 0.5 && a12 < 0.0, "acf(12) {a12}, acf(24) {a24}");
    // Weekly: the change over an hour repeats better a week later than six days later.
    let (d144, d168) = (acf(&p, 144, diff), acf(&p, SEASON, diff));
    eprintln!("diff acf(144) {d144:.3}, acf(168) {d168:.3}");
    assert!(d168 > d144 + 0.02, "diff acf(144) {d144}, acf(168) {d168}");
    // Weekly: the commercial category (1) drops at weekends.
    let (mut we, mut wd) = ((0.0, 0), (0.0, 0));
    for s in (0..p.cfg.n_series).filter(|&s| p.category[s] == 1) {
        for (t, y) in p.series(s).iter().enumerate() {
            let slot = if calendar(t).1 >= 5 { &mut we } else { &mut wd };
            slot.0 += y / p.scale[s];
            slot.1 += 1;
        }
    }
    let ratio = (we.0 / we.1 as f64) / (wd.0 / wd.1 as f64);
    assert!(ratio < 0.7, "weekend/weekday {ratio}");
    // The observed covariate moves the target.
    let h = p.cfg.hours;
    let c = (0..p.cfg.n_series)
        .map(|s| corr(&diff(p.series(s)), &diff(&p.covariate[s * h..(s + 1) * h])))
        .sum::<f64>()
        / p.cfg.n_series as f64;
    assert!(c > 0.2, "corr of hourly changes {c}");
}

#[test]
fn batches_have_the_model_shapes_and_windows_stay_in_their_series() {
    let cfg = small();
    let (l, h) = (48, 12);
    let data = Dataset::synthetic(&cfg, l, h, 0.2).unwrap();
    assert_eq!(
        (data.n_static(), data.n_past(), data.n_future()),
        (
            cfg.categories + 1,
            OBSERVED_VARS.len() + KNOWN_VARS.len(),
            KNOWN_VARS.len()
        )
    );
    let Source::Synthetic(d) = &data.source else {
        panic!("not synthetic")
    };
    for &e in data.train_ends.iter().chain(&data.val_ends) {
        let t = e % cfg.hours;
        assert!(t + 1 >= l && t + h < cfg.hours, "end {e}");
    }
    // Training targets before the split, validation targets after it, in every series.
    assert!(data.train_ends.iter().all(|&e| e % cfg.hours + h < d.split));
    assert!(data.val_ends.iter().all(|&e| e % cfg.hours + 1 >= d.split));
    let per_series = (l - 1..d.split - h).step_by(cfg.train_stride).count();
    assert_eq!(data.train_ends.len(), cfg.n_series * per_series);
    let b = data.batch(&data.train_ends[..5], &Device::Cpu).unwrap();
    assert_eq!(b.static_x.dims(), &[5, cfg.categories + 1]);
    assert_eq!(b.past.dims(), &[5, l, data.n_past()]);
    assert_eq!(b.future.dims(), &[5, h, data.n_future()]);
    assert_eq!(b.target.dims(), &[5, h]);
    // The target is the z-score of the series, and denormalises back to its value.
    let e = data.val_ends[3];
    let z = data
        .batch(&[e], &Device::Cpu)
        .unwrap()
        .target
        .to_vec2::<f32>()
        .unwrap()[0][0];
    let back = data.denormalise(e, z);
    assert!((back - data.value(e + 1)).abs() < 1e-4 * data.value(e + 1).abs().max(1.0));
    assert!(data.batch(&[cfg.hours + l - 2], &Device::Cpu).is_err());
}

#[test]
fn dump_is_lossless() {
    let path = std::env::temp_dir().join(format!("tft-synth-{}.csv", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_tft"))
        .args(["--dataset", "synthetic", "--data-seed", "3", "--dump-data"])
        .arg(&path)
        .output()
        .expect("run tft");
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let p = Panel::generate(&SynthConfig {
        seed: 3,
        ..SynthConfig::default()
    })
    .unwrap();
    let mut lines = text.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("# tft synthetic panel: seed=3, n_series=64"));
    assert_eq!(
        lines.next().unwrap(),
        "series,hour,category,scale,target,covariate"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), p.target.len());
    for (i, row) in rows.iter().enumerate().step_by(997) {
        let f: Vec<&str> = row.split(',').collect();
        let s = i / p.cfg.hours;
        assert_eq!(f[0].parse::<usize>().unwrap(), s);
        assert_eq!(f[1].parse::<usize>().unwrap(), i % p.cfg.hours);
        assert_eq!(f[2].parse::<usize>().unwrap(), p.category[s]);
        assert_eq!(f[3].parse::<f64>().unwrap(), p.scale[s]);
        assert_eq!(f[4].parse::<f64>().unwrap(), p.target[i]);
        assert_eq!(f[5].parse::<f64>().unwrap(), p.covariate[i]);
    }
}

#[test]
fn one_tiny_synthetic_training_step() {
    let synth = small();
    let data = Dataset::synthetic(&synth, 24, 6, 0.2).unwrap();
    let cfg = TftConfig {
        hidden: 8,
        n_heads: 2,
        lookback: 24,
        horizon: 6,
        n_static: data.n_static(),
        n_past: data.n_past(),
        n_future: data.n_future(),
        ..TftConfig::default()
    };
    let mut t = Trainer::new(cfg, 1, 3e-3, &Device::Cpu).unwrap();
    let mut tracker = ParamTracker::new(&t.params).unwrap();
    let batches = epoch_batches(&data.train_ends, 16, 1, 1);
    let mut losses = Vec::new();
    for b in batches.iter().take(3) {
        let (loss, grads) = t.step(&data, b).unwrap();
        tracker.record(&t.params, &grads).unwrap();
        losses.push(loss);
    }
    assert!(
        losses.iter().all(|l| l.is_finite() && *l > 0.0),
        "{losses:?}"
    );
    let r = tracker.report(&t.params).unwrap();
    assert!(r.ok(), "{r:?}");
    let eval = t.evaluate(&data, &data.val_ends, 64).unwrap();
    assert!(eval.loss.is_finite() && eval.mae.is_finite(), "{eval:?}");
}
