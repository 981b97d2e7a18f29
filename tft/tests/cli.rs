//! The `tft` binary's command line: every argument that cannot work is refused up front with
//! one line naming the flag, a non-zero exit and no panic, before any data or training.
//!
//! Each case starts from tiny but valid sizes, so that a binary that does not refuse still
//! finishes (or is killed at the deadline) quickly instead of training for minutes.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// A run that does not refuse is killed after this long.
const DEADLINE: Duration = Duration::from_secs(60);

/// Valid, tiny arguments; each case overrides one or two of them.
const BASE: [(&str, &str); 6] = [
    ("--epochs", "1"),
    ("--batch-size", "512"),
    ("--hidden", "8"),
    ("--lookback", "8"),
    ("--horizon", "2"),
    ("--layer-norm", "composite"),
];

/// Runs the binary with `BASE` overridden by `overrides` (a flag not in `BASE` is appended).
/// `RUST_BACKTRACE=1` so that an error printed with a backtrace would show up as extra lines.
fn run(overrides: &[(&str, &str)]) -> (Output, Duration) {
    let mut args: Vec<(String, String)> = BASE
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    for (flag, value) in overrides {
        match args.iter_mut().find(|(f, _)| f == flag) {
            Some(slot) => slot.1 = value.to_string(),
            None => args.push((flag.to_string(), value.to_string())),
        }
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tft"));
    cmd.arg("--quiet")
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (flag, value) in &args {
        // `--flag=value`, so that a negative number is a value and not a flag.
        cmd.arg(format!("{flag}={value}"));
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn the tft binary");
    let drain = |mut r: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            r.read_to_end(&mut buf).ok();
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for tft") {
            break s;
        }
        if start.elapsed() > DEADLINE {
            child.kill().ok();
            break child.wait().expect("wait for the killed tft");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, start.elapsed())
}

/// The run is refused: non-zero exit, no panic, nothing on stdout (no data loaded, no
/// training), and stderr is exactly one line containing `expected`.
fn assert_refused(overrides: &[(&str, &str)], expected: &str) {
    let (out, took) = run(overrides);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ctx = format!(
        "args {overrides:?}, {took:.1?}, {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    assert!(took < DEADLINE, "not refused within {DEADLINE:?}: {ctx}");
    assert!(!out.status.success(), "exit status 0: {ctx}");
    assert!(!stderr.contains("panicked"), "panicked: {ctx}");
    assert!(
        stdout.trim().is_empty(),
        "printed to stdout before refusing: {ctx}"
    );
    assert_eq!(
        stderr.trim().lines().count(),
        1,
        "stderr is not one line: {ctx}"
    );
    assert!(
        stderr.contains(expected),
        "stderr does not contain {expected:?}: {ctx}"
    );
}

#[test]
fn refuses_zero_epochs() {
    assert_refused(&[("--epochs", "0")], "--epochs must be at least 1 (got 0)");
}

#[test]
fn refuses_zero_batch_size() {
    assert_refused(
        &[("--batch-size", "0")],
        "--batch-size must be at least 1 (got 0)",
    );
}

#[test]
fn refuses_bad_learning_rate() {
    for lr in ["0", "-0.001", "NaN", "inf"] {
        assert_refused(&[("--lr", lr)], "--lr must be a finite number above 0");
    }
}

#[test]
fn refuses_negative_learning_rate_without_equals_sign() {
    // `--lr -1` (two words) reaches the same check instead of clap's "unexpected argument".
    let output = Command::new(env!("CARGO_BIN_EXE_tft"))
        .args(["--quiet", "--epochs", "1", "--lr", "-1"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run tft");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "stdout: {:?}", output.stdout);
    assert_eq!(stderr.trim().lines().count(), 1, "stderr: {stderr}");
    assert!(
        stderr.contains("--lr must be a finite number above 0"),
        "stderr: {stderr}"
    );
}

#[test]
fn refuses_hidden_zero() {
    assert_refused(
        &[("--hidden", "0")],
        "--hidden must be a positive multiple of 4",
    );
}

#[test]
fn refuses_hidden_not_divisible_by_heads() {
    for hidden in ["1", "6", "30"] {
        assert_refused(
            &[("--hidden", hidden)],
            &format!("--hidden must be a positive multiple of 4 (the attention heads), e.g. --hidden 32 (got {hidden})"),
        );
    }
}

#[test]
fn refuses_short_lookback() {
    for lookback in ["0", "1"] {
        assert_refused(
            &[("--lookback", lookback)],
            &format!("--lookback must be at least 2 (got {lookback})"),
        );
    }
}

#[test]
fn refuses_zero_horizon() {
    assert_refused(
        &[("--horizon", "0")],
        "--horizon must be at least 1 (got 0)",
    );
}

#[test]
fn refuses_horizon_longer_than_validation() {
    assert_refused(&[("--horizon", "5000")], "--horizon must be at most");
}

#[test]
fn refuses_window_longer_than_training() {
    assert_refused(
        &[("--lookback", "5000")],
        "--lookback + --horizon must be at most",
    );
}

#[test]
fn refuses_zero_heads() {
    assert_refused(&[("--heads", "0")], "--heads must be at least 1 (got 0)");
}

#[test]
fn refuses_hidden_not_divisible_by_explicit_heads() {
    assert_refused(
        &[("--heads", "3")],
        "--hidden must be a positive multiple of 3 (the attention heads), e.g. --hidden 24 (got 8)",
    );
}

#[test]
fn refuses_dump_data_without_the_synthetic_dataset() {
    assert_refused(
        &[("--dump-data", "/nonexistent/panel.csv")],
        "--dump-data writes the synthetic panel: add --dataset synthetic",
    );
}

#[test]
fn refuses_synthetic_windows_longer_than_the_series() {
    assert_refused(
        &[("--dataset", "synthetic"), ("--horizon", "5000")],
        "--horizon must be at most 538, the hours held out for validation (got 5000)",
    );
    assert_refused(
        &[("--dataset", "synthetic"), ("--lookback", "2148")],
        "--lookback + --horizon must be at most 2149, the training hours less one",
    );
}

#[cfg(not(feature = "cuda"))]
#[test]
fn refuses_cuda_without_the_feature() {
    assert_refused(
        &[("--device", "cuda")],
        "--device cuda: this binary was built without CUDA",
    );
}

#[cfg(not(feature = "kernel"))]
#[test]
fn refuses_kernel_layer_norm_without_the_feature() {
    assert_refused(
        &[("--layer-norm", "kernel")],
        "--layer-norm kernel: the fused kernel is not compiled in",
    );
}

#[test]
fn trains_one_tiny_epoch() {
    let (out, took) = run(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{took:.1?}, {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    assert!(stdout.contains("epoch   1: train loss"), "stdout: {stdout}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

#[test]
fn trains_one_tiny_synthetic_epoch() {
    let (out, took) = run(&[("--dataset", "synthetic")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ctx = format!(
        "{took:.1?}, {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    assert!(out.status.success(), "{ctx}");
    assert!(stdout.contains("data: synthetic hourly panel"), "{ctx}");
    assert!(stdout.contains("epoch   1: train loss"), "{ctx}");
    assert!(stdout.contains("seasonal naive"), "{ctx}");
    assert!(stdout.contains("(period 168)"), "{ctx}");
}
