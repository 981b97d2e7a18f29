//! `cargo check-patch`: the root `[patch.crates-io]` is used and candle resolves to candle-patch/.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;

use crate::cmd;

#[derive(ClapArgs, Clone, Debug)]
pub struct Args {
    /// Features passed to `cargo metadata`/`cargo tree` (e.g. `cuda`); with `cuda`,
    /// candle-kernels must resolve to candle-patch/ as well.
    #[arg(long, short = 'F')]
    features: Vec<String>,
}

const UNUSED_WARNING: &str = "was not used in the crate graph";

fn cargo(root: &Path) -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root);
    c
}

pub fn run(root: &Path, args: &Args) -> Result<bool> {
    let mut ok = true;
    let features = args.features.join(",");
    let with_features = |c: &mut Command| {
        if !features.is_empty() {
            c.arg("--features").arg(&features);
        }
    };
    let cuda = args
        .features
        .iter()
        .any(|f| f.split(',').any(|f| f == "cuda" || f.ends_with("/cuda")));

    // cargo metadata: where each candle crate resolved.
    let mut c = cargo(root);
    c.args(["metadata", "--format-version", "1"]);
    with_features(&mut c);
    let meta = cmd::output(&mut c).context("cargo metadata on the root workspace")?;
    let meta_stderr = String::from_utf8_lossy(&meta.stderr).into_owned();
    let json: serde_json::Value =
        serde_json::from_slice(&meta.stdout).context("parsing cargo metadata")?;

    // cargo tree: prints the same warning when a [patch] entry is unused.
    let mut c = cargo(root);
    c.args([
        "tree",
        "--workspace",
        "--prefix",
        "none",
        "-e",
        "normal,build",
    ]);
    with_features(&mut c);
    let tree = cmd::output(&mut c).context("cargo tree on the root workspace")?;
    let tree_stderr = String::from_utf8_lossy(&tree.stderr).into_owned();

    for (what, stderr) in [
        ("cargo metadata", &meta_stderr),
        ("cargo tree", &tree_stderr),
    ] {
        for line in stderr.lines().filter(|l| l.contains(UNUSED_WARNING)) {
            ok = false;
            println!("FAIL  {what}: {}", line.trim());
        }
    }

    // Cargo.lock: an unused patch is recorded as [[patch.unused]].
    let lock_path = root.join("Cargo.lock");
    let lock = std::fs::read_to_string(&lock_path)
        .with_context(|| format!("reading {}", lock_path.display()))?;
    if lock.lines().any(|l| l.trim() == "[[patch.unused]]") {
        ok = false;
        println!("FAIL  Cargo.lock has [[patch.unused]]: a [patch.crates-io] entry does not match the requested version");
        for block in lock.split("[[patch.unused]]").skip(1) {
            let entry: Vec<&str> = block
                .lines()
                .filter(|l| l.starts_with("name") || l.starts_with("version"))
                .take(2)
                .collect();
            println!("      {}", entry.join(" "));
        }
    }

    let patch_dir = root
        .join("candle-patch")
        .canonicalize()
        .context("candle-patch/ is missing")?;
    let packages = json["packages"]
        .as_array()
        .context("cargo metadata: no packages")?;
    let mut required = vec!["candle-core", "candle-nn"];
    if cuda {
        required.push("candle-kernels");
    }
    for name in ["candle-core", "candle-nn", "candle-kernels"] {
        let found: Vec<&serde_json::Value> =
            packages.iter().filter(|p| p["name"] == name).collect();
        if found.is_empty() {
            if required.contains(&name) {
                ok = false;
                println!("FAIL  {name}: not in the resolved graph");
            } else {
                println!(
                    "skip  {name}: not in the resolved graph (pass --features cuda to require it)"
                );
            }
            continue;
        }
        for p in &found {
            let version = p["version"].as_str().unwrap_or("?");
            let manifest = p["manifest_path"].as_str().unwrap_or("?");
            let source = p["source"].as_str().unwrap_or("path");
            let under = Path::new(manifest)
                .canonicalize()
                .map(|m| m.starts_with(&patch_dir))
                .unwrap_or(false);
            if under && p["source"].is_null() {
                println!("ok    {name} {version} -> {manifest}");
            } else {
                ok = false;
                println!(
                    "FAIL  {name} {version} -> {manifest} (source: {source}), expected under {}",
                    patch_dir.display()
                );
            }
        }
        if found.len() > 1 {
            ok = false;
            println!(
                "FAIL  {name}: {} copies in the graph; the [patch] must replace every one",
                found.len()
            );
        }
    }
    if ok {
        println!("OK: [patch.crates-io] is used; candle resolves to candle-patch/");
    } else {
        println!("FAILED: cargo check-patch");
    }
    Ok(ok)
}
