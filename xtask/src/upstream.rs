//! `cargo xtask upstream-check`: the upstream PR stack in `upstream/series/` applied PR by PR
//! onto pristine upstream candle main, with rustfmt, clippy, tests and the CUDA check after
//! each PR. (`upstream-export` produces the series: see `upstream_export.rs`.)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::cmd;
use crate::dep3;
use crate::layout::Pin;
use crate::patches::{self, PatchFile};
use crate::pristine::{self, Upstream};

/// The series, relative to the repository root.
pub const SERIES_DIR: &str = "upstream/series";
/// Where the check extracts, patches and builds upstream (tree in `candle/`, cargo output next to it).
const CHECK_DIR: &str = "target/upstream-check";
/// `Origin:` of the series' patches.
const ORIGIN: &str = "upstream-candidate";

/// Upstream main: the base the series applies to.
pub fn main_pin() -> Pin {
    let mut pin = Pin::candle();
    pin.rev = "2a13b0f3ff62f7e67013597f2996f764c5735e21".into();
    pin.archive_name = "candle-2a13b0f3ff.tar.gz".into();
    pin.top_folder = "candle-2a13b0f3ff".into();
    pin.archive_sha256 = "9bee79ab6fc6ae9d5846b25f1b95a762073ec93b6235c9208220aee3fc849f7b".into();
    pin
}

fn shared_archive(root: &Path, pin: &Pin) -> PathBuf {
    root.join("../shared/upstream").join(&pin.archive_name)
}

pub fn resolve(arg: &Option<PathBuf>, root: &Path, pin: &Pin) -> Upstream {
    match arg {
        Some(p) => Upstream::from_arg(p),
        None => Upstream::Archive(shared_archive(root, pin)),
    }
}

#[derive(Args, Clone, Debug)]
pub struct CheckArgs {
    /// Upstream main: an archive or a git checkout holding 2a13b0f3
    /// (default ../shared/upstream/candle-2a13b0f3ff.tar.gz).
    #[arg(long, value_name = "ARCHIVE|DIR")]
    upstream: Option<PathBuf>,
    /// Only check that the series applies (no fmt, clippy, tests, builds).
    #[arg(long)]
    quick: bool,
    /// Skip `cargo check --features cuda` even when nvcc is on PATH.
    #[arg(long)]
    no_cuda: bool,
    /// Check only after this PR (slug of upstream/series/NNNN-<slug>.patch; the PRs before
    /// it are applied, not checked).
    #[arg(long, value_name = "SLUG")]
    pr: Option<String>,
    /// rustfmt and clippy after each PR, the tests and the CUDA check only after the last
    /// (less build time, e.g. for CI).
    #[arg(long)]
    tests_at_end: bool,
}

impl CheckArgs {
    /// Apply-only check of the default upstream.
    pub fn quick() -> CheckArgs {
        CheckArgs {
            upstream: None,
            quick: true,
            no_cuda: true,
            pr: None,
            tests_at_end: false,
        }
    }
}

fn series(root: &Path) -> Result<Vec<PatchFile>> {
    let s = patches::list(&root.join(SERIES_DIR))?;
    if s.is_empty() {
        bail!("no NNNN-*.patch in {}", root.join(SERIES_DIR).display());
    }
    Ok(s)
}

/// Header problems of one patch of the upstream series.
fn header_problems(p: &PatchFile) -> Result<Vec<String>> {
    let d = p.dep3()?;
    let mut out = Vec::new();
    if d.description.trim().is_empty() {
        out.push("no Description".to_string());
    }
    if d.origin.as_deref() != Some(ORIGIN) {
        out.push(format!("Origin: {:?}, expected `{ORIGIN}`", d.origin));
    }
    match d.forwarded.as_deref().map(dep3::parse_forwarded) {
        None => out.push("no Forwarded:".into()),
        Some(Err(e)) => out.push(e.to_string()),
        Some(Ok(dep3::Forwarded::NotNeeded)) => out.push("Forwarded: not-needed".into()),
        Some(Ok(_)) => {}
    }
    match d.last_update.as_deref() {
        Some(u) if dep3::is_iso_date(u) => {}
        other => out.push(format!("Last-Update: {other:?} is not YYYY-MM-DD")),
    }
    Ok(out)
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    cmd::stdout(cmd::git_isolated(dir).args(args))
}

/// A git repository in `dir` (created empty) holding the pristine tree of `pin` as its first commit.
fn pristine_repo(dir: &Path, upstream: &Upstream, pin: &Pin) -> Result<()> {
    pristine::extract(upstream, pin, dir)
        .with_context(|| format!("extracting {} from {}", &pin.rev[..10], upstream.describe()))?;
    git(dir, &["init", "-q"])?;
    std::fs::write(dir.join(".git/info/attributes"), "* -text -filter -ident\n")?;
    commit_all(dir, &format!("pristine upstream {}", pin.rev))
}

pub fn commit_all(dir: &Path, msg: &str) -> Result<()> {
    git(dir, &["add", "-A", "-f", "."])?;
    cmd::output(
        cmd::git_isolated(dir)
            .env("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z")
            .args(["commit", "-q", "--allow-empty", "--no-verify", "-m", msg]),
    )?;
    Ok(())
}

/// `git apply --check`, then `git am` one patch; false (with the reason printed) on failure.
fn apply_patch(dir: &Path, p: &PatchFile) -> Result<bool> {
    let path = p.path.canonicalize()?;
    let check = cmd::try_output(
        cmd::git_isolated(dir)
            .args(["apply", "--check", "--whitespace=error-all"])
            .arg(&path),
    )?;
    if !check.status.success() {
        println!(
            "FAILED: {} does not apply (git apply --check) onto upstream + the patches before it:\n{}",
            p.file_name(),
            String::from_utf8_lossy(&check.stderr)
        );
        return Ok(false);
    }
    let am = cmd::try_output(
        cmd::git_isolated(dir)
            .args(["am", "-q", "--keep-cr", "--committer-date-is-author-date"])
            .arg(&path),
    )?;
    if !am.status.success() {
        println!(
            "FAILED: git am {}:\n{}{}",
            p.file_name(),
            String::from_utf8_lossy(&am.stdout),
            String::from_utf8_lossy(&am.stderr)
        );
        return Ok(false);
    }
    println!("  applies  {}", p.file_name());
    Ok(true)
}

/// Files a `git format-patch` file touches (`diff --git a/X b/X`).
fn touched_files(p: &PatchFile) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(&p.path)?;
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .filter_map(|l| l.split_once(" b/").map(|(a, _)| a.to_string()))
        .collect())
}

// ---------------------------------------------------------------- check

/// Local-only workspace trim of the upstream root manifest (never part of the series): members
/// candle-core and candle-nn; `path = "./x"` of crates absent from the tree dropped, so they
/// resolve from crates.io.
fn trim_workspace(tree: &Path) -> Result<()> {
    let path = tree.join("Cargo.toml");
    let text = std::fs::read_to_string(&path)?;
    let start = text
        .find("members = [")
        .context("upstream Cargo.toml: no `members = [`")?;
    let end = start + text[start..].find(']').context("unterminated members")?;
    let mut out = format!(
        "{}members = [\"candle-core\", \"candle-nn\"{}",
        &text[..start],
        &text[end..]
    );
    let mut lines: Vec<String> = Vec::new();
    for line in out.lines() {
        let mut line = line.to_string();
        if let Some(i) = line.find("path = \"./") {
            let rest = &line[i + "path = \"./".len()..];
            let dir = rest.split('"').next().unwrap_or_default().to_string();
            if !tree.join(&dir).is_dir() {
                let mut cut = format!("path = \"./{dir}\"");
                if line[i + cut.len()..].starts_with(", ") {
                    cut.push_str(", ");
                }
                line = line.replacen(&cut, "", 1);
            }
        }
        lines.push(line);
    }
    out = lines.join("\n") + "\n";
    std::fs::write(&path, out)?;
    Ok(())
}

fn on_path(exe: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(exe).is_file()))
        .unwrap_or(false)
}

struct Step {
    /// The PR (series file) the step ran after.
    pr: String,
    name: &'static str,
    status: String,
    secs: f64,
}

impl Step {
    fn ok(&self) -> bool {
        self.status == "ok"
            || self.status.starts_with("skipped")
            || self.status.starts_with("not runnable")
    }
}

fn run_step(
    tree: &Path,
    target: &Path,
    pr: &str,
    name: &'static str,
    args: &[String],
) -> Result<Step> {
    let (prog, rest) = args.split_first().context("empty command")?;
    println!("\n=== {pr}: {name}: {}", args.join(" "));
    let t = Instant::now();
    let status = Command::new(prog)
        .args(rest)
        .current_dir(tree)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_TERM_COLOR", "never")
        .status()
        .with_context(|| format!("cannot run {prog}"))?;
    Ok(Step {
        pr: pr.to_string(),
        name,
        status: match status.code() {
            Some(0) => "ok".into(),
            Some(code) => format!("FAILED (exit {code})"),
            None => "FAILED (killed)".into(),
        },
        secs: t.elapsed().as_secs_f64(),
    })
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The commands checking the tree after one PR that touches `files` (those that exist after it;
/// `deletes`: it also removes files); `tests`: also the test runs and the CUDA check
/// (`rebuild_kernels`: with candle-kernels built afresh).
fn pr_commands(
    files: &[String],
    deletes: bool,
    tests: bool,
    cuda: bool,
    rebuild_kernels: bool,
) -> Vec<(&'static str, Vec<String>)> {
    let mut cmds = Vec::new();
    let rs: Vec<&String> = files.iter().filter(|f| f.ends_with(".rs")).collect();
    if !rs.is_empty() {
        let mut fmt = strings(&["rustfmt", "--edition", "2021", "--check"]);
        fmt.extend(rs.iter().map(|f| f.to_string()));
        cmds.push(("fmt", fmt));
    }
    // Clippy checks Rust without `cuda`: a PR that touches only CUDA sources (the tier
    // registry reaches Rust as a string, read at run time) cannot change what it reports.
    // A PR that removes a file keeps it (the file may have been Rust).
    let cuda_only = !deletes
        && files
            .iter()
            .all(|f| f.ends_with(".cu") || f.ends_with(".cuh"));
    if !cuda_only {
        let core = files.iter().any(|f| f.starts_with("candle-core/"));
        let mut clippy = strings(&["cargo", "clippy", "-p", "candle-nn"]);
        if core {
            clippy.extend(strings(&["-p", "candle-core"]));
        }
        clippy.extend(strings(&["--tests", "--", "-D", "warnings"]));
        cmds.push(("clippy", clippy));
    }
    if tests {
        cmds.push((
            "test-nn",
            strings(&["cargo", "test", "--release", "-p", "candle-nn"]),
        ));
        let mut core_tests = strings(&[
            "cargo",
            "test",
            "--release",
            "-p",
            "candle-core",
            "--test",
            "grad_tests",
        ]);
        for f in files {
            let name = f
                .strip_prefix("candle-core/tests/")
                .and_then(|n| n.strip_suffix(".rs"))
                .filter(|n| !n.contains('/') && *n != "grad_tests");
            if let Some(n) = name {
                core_tests.extend(strings(&["--test", n]));
            }
        }
        cmds.push(("test-core", core_tests));
        // The PTX of candle-kernels lives in its build script's OUT_DIR, which outlives the
        // trees this check builds, and the build script only watches the `.cu` files that
        // existed when it last ran: a PR that adds one got the old module list. When a PR
        // touches the kernels, the PTX outputs are removed and the build script made to rerun
        // (the moe/mmq library, ~10 min of nvcc that no PR changes, is kept).
        let kernels = files.iter().any(|f| f.starts_with("candle-kernels/"));
        if cuda && (kernels || rebuild_kernels) {
            let outputs = ["*.ptx", "ptx.rs", "*.fatbin", "fatbin.rs"]
                .map(|f| format!("\"$CARGO_TARGET_DIR\"/*/build/candle-kernels-*/out/{f}"));
            let script = format!(
                "rm -f {} && touch candle-kernels/build.rs",
                outputs.join(" ")
            );
            cmds.push(("cuda-clean", strings(&["sh", "-c", &script])));
        }
        if cuda {
            cmds.push((
                "cuda-check",
                strings(&["cargo", "check", "-p", "candle-nn", "--features", "cuda"]),
            ));
        }
    }
    cmds
}

pub fn check(root: &Path, args: &CheckArgs) -> Result<bool> {
    check_in(root, args, &root.join(CHECK_DIR).join("candle"))
}

/// The check with the patched tree in `tree` (recreated).
pub fn check_in(root: &Path, args: &CheckArgs, tree: &Path) -> Result<bool> {
    let t0 = Instant::now();
    let pin = main_pin();
    let upstream = resolve(&args.upstream, root, &pin);
    let series = series(root)?;
    let last = match &args.pr {
        None => series.len() - 1,
        Some(slug) => series
            .iter()
            .position(|p| &p.short_name == slug)
            .with_context(|| {
                format!(
                    "--pr {slug}: no {SERIES_DIR}/NNNN-{slug}.patch (slugs: {})",
                    series
                        .iter()
                        .map(|p| p.short_name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?,
    };
    println!(
        "upstream series: {} PR(s) in {SERIES_DIR}, onto {} ({})",
        series.len(),
        &pin.rev[..10],
        upstream.describe()
    );
    let mut ok = true;
    for p in &series {
        for problem in header_problems(p)? {
            ok = false;
            println!("  DEP-3    {}: {problem}", p.file_name());
        }
    }

    if tree.exists() {
        std::fs::remove_dir_all(tree).with_context(|| format!("removing {}", tree.display()))?;
    }
    std::fs::create_dir_all(tree)?;
    pristine_repo(tree, &upstream, &pin)?;
    let target = root.join(CHECK_DIR);
    let cuda = !args.no_cuda && on_path("nvcc");
    let mut steps: Vec<Step> = Vec::new();
    let mut kernels_rebuilt = false;
    let t_apply = t0.elapsed().as_secs_f64();
    for (i, p) in series.iter().enumerate() {
        if i > last {
            break;
        }
        // The local workspace trim is undone before each patch (a PR may touch Cargo.toml).
        git(tree, &["checkout", "-q", "--", "Cargo.toml"])?;
        if !apply_patch(tree, p)? {
            return Ok(false);
        }
        let checked = args.pr.is_none() || i == last;
        if args.quick || !checked {
            continue;
        }
        trim_workspace(tree)?;
        let touched = touched_files(p)?;
        let files: Vec<String> = touched
            .iter()
            .filter(|f| tree.join(f).exists())
            .cloned()
            .collect();
        let deletes = files.len() < touched.len();
        let tests = !args.tests_at_end || i == last;
        // The first CUDA check of a run rebuilds the kernels: an earlier run's may be there.
        let rebuild_kernels = !kernels_rebuilt;
        kernels_rebuilt |= cuda && tests;
        for (name, c) in pr_commands(&files, deletes, tests, cuda, rebuild_kernels) {
            steps.push(run_step(tree, &target, &p.file_name(), name, &c)?);
        }
        if !steps.iter().all(Step::ok) {
            println!("\nstopping after {}: a check failed", p.file_name());
            break;
        }
    }
    println!(
        "OK: {} applies onto {} ({:.1}s); patched tree: {}",
        match args.pr {
            None => "the series".to_string(),
            Some(_) => format!("PRs 1-{}", last + 1),
        },
        &pin.rev[..10],
        t0.elapsed().as_secs_f64() - t_apply,
        tree.display()
    );
    if args.quick {
        return Ok(ok);
    }

    println!(
        "\n=================== upstream-check summary ({}, after each PR)",
        &pin.rev[..10]
    );
    for s in &steps {
        ok &= s.ok();
        println!(
            "  {:<48} {:<10} {:>5.0}s  {}",
            s.pr, s.name, s.secs, s.status
        );
    }
    if !cuda {
        println!(
            "  cuda-check: {}",
            if args.no_cuda {
                "skipped (--no-cuda)"
            } else {
                "skipped (no nvcc on PATH: eval \"$(../shared/gpu/cuda-toolchain.sh)\")"
            }
        );
    }
    println!(
        "  metal-check: not runnable on {} (`cargo check --features metal` needs macOS' Metal \
         framework)",
        std::env::consts::OS
    );
    println!(
        "total {:.0}s -> {}",
        t0.elapsed().as_secs_f64(),
        if ok { "PASSED" } else { "FAILED" }
    );
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_the_workspace() {
        let dir = std::env::temp_dir().join(format!("xtask-trim-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("candle-nn")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[workspace]\nmembers = [\n    \"candle-core\",\n    \"candle-pyo3\",\n]\n\
             [workspace.dependencies]\n\
             candle-nn = { path = \"./candle-nn\", version = \"0.11.0\" }\n\
             candle-onnx = { path = \"./candle-onnx\", version = \"0.11.0\" }\n",
        )
        .unwrap();
        trim_workspace(&dir).unwrap();
        let got = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            got,
            "[workspace]\nmembers = [\"candle-core\", \"candle-nn\"]\n[workspace.dependencies]\n\
             candle-nn = { path = \"./candle-nn\", version = \"0.11.0\" }\n\
             candle-onnx = { version = \"0.11.0\" }\n"
        );
    }

    #[test]
    fn checks_follow_what_the_pr_touches() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cmds = |files: &[&str], tests| -> Vec<String> {
            pr_commands(&f(files), false, tests, false, false)
                .into_iter()
                .map(|(n, c)| format!("{n}: {}", c.join(" ")))
                .collect()
        };
        let kernels = cmds(
            &[
                "candle-kernels/src/layer_norm.cu",
                "candle-kernels/src/layer_norm_tiers.cuh",
            ],
            false,
        );
        assert!(kernels.is_empty(), "{kernels:?}");
        // A PR that also removes a file keeps its clippy.
        let removes = pr_commands(
            &f(&["candle-kernels/src/layer_norm.cu"]),
            true,
            false,
            false,
            false,
        );
        assert_eq!(removes.iter().map(|c| c.0).collect::<Vec<_>>(), ["clippy"]);
        let kernels_last = cmds(&["candle-kernels/src/layer_norm.cu"], true);
        assert_eq!(
            kernels_last,
            [
                "test-nn: cargo test --release -p candle-nn",
                "test-core: cargo test --release -p candle-core --test grad_tests",
            ]
        );
        let kernels_lib = cmds(
            &[
                "candle-kernels/src/layer_norm.cu",
                "candle-kernels/src/lib.rs",
            ],
            false,
        );
        assert_eq!(
            kernels_lib,
            [
                "fmt: rustfmt --edition 2021 --check candle-kernels/src/lib.rs",
                "clippy: cargo clippy -p candle-nn --tests -- -D warnings",
            ]
        );
        let core = cmds(
            &[
                "candle-core/src/cuda_backend/device.rs",
                "candle-core/tests/cuda_pool_tests.rs",
            ],
            true,
        );
        assert_eq!(
            core,
            [
                "fmt: rustfmt --edition 2021 --check candle-core/src/cuda_backend/device.rs \
                 candle-core/tests/cuda_pool_tests.rs",
                "clippy: cargo clippy -p candle-nn -p candle-core --tests -- -D warnings",
                "test-nn: cargo test --release -p candle-nn",
                "test-core: cargo test --release -p candle-core --test grad_tests --test cuda_pool_tests",
            ]
        );
        let with_cuda = pr_commands(&f(&["candle-nn/src/ops.rs"]), false, true, true, false);
        assert_eq!(with_cuda.last().map(|c| c.0), Some("cuda-check"));
        assert!(!with_cuda.iter().any(|c| c.0 == "cuda-clean"));
        let names = |files: &[&str], rebuild| -> Vec<&str> {
            let cmds = pr_commands(&f(files), false, true, true, rebuild);
            cmds.iter().rev().take(2).map(|c| c.0).collect()
        };
        let kernel_pr = names(&["candle-kernels/src/layer_norm.cu"], false);
        assert_eq!(kernel_pr, ["cuda-check", "cuda-clean"]);
        assert_eq!(
            names(&["candle-nn/src/ops.rs"], true),
            ["cuda-check", "cuda-clean"]
        );
    }
}
