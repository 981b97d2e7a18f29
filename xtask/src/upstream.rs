//! `cargo xtask upstream-check | upstream-export`: the upstream PR series in `upstream/series/`
//! (our fused layer norm rebased onto upstream candle main), checked against the pristine
//! upstream tree and regenerated from the vendored change in `candle-patch/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::cmd;
use crate::dep3;
use crate::layout::{Layout, Pin};
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

fn resolve(arg: &Option<PathBuf>, root: &Path, pin: &Pin) -> Upstream {
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
}

#[derive(Args, Clone, Debug)]
pub struct ExportArgs {
    /// Upstream main: an archive or a git checkout holding 2a13b0f3.
    #[arg(long, value_name = "ARCHIVE|DIR")]
    upstream: Option<PathBuf>,
    /// The pin candle-patch/ is built from (default ../shared/upstream/candle-671de1dbba.tar.gz).
    #[arg(long, value_name = "ARCHIVE|DIR")]
    pin_upstream: Option<PathBuf>,
    /// `Last-Update:` of the patches whose diff changes (default: today, UTC).
    #[arg(long, value_name = "YYYY-MM-DD")]
    last_update: Option<String>,
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

fn commit_all(dir: &Path, msg: &str) -> Result<()> {
    git(dir, &["add", "-A", "-f", "."])?;
    cmd::output(
        cmd::git_isolated(dir)
            .env("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z")
            .args(["commit", "-q", "--allow-empty", "--no-verify", "-m", msg]),
    )?;
    Ok(())
}

/// `git apply --check`, then `git am` each patch in file-name order; false at the first failure.
fn apply_series(dir: &Path, series: &[PatchFile]) -> Result<bool> {
    for p in series {
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
    }
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
    name: &'static str,
    status: String,
    secs: f64,
}

fn run_step(tree: &Path, target: &Path, name: &'static str, args: &[&str]) -> Result<Step> {
    let (prog, rest) = args.split_first().context("empty command")?;
    println!("\n=== {name}: {}", args.join(" "));
    let t = Instant::now();
    let status = Command::new(prog)
        .args(rest)
        .current_dir(tree)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_TERM_COLOR", "never")
        .status()
        .with_context(|| format!("cannot run {prog}"))?;
    Ok(Step {
        name,
        status: match status.code() {
            Some(0) => "ok".into(),
            Some(code) => format!("FAILED (exit {code})"),
            None => "FAILED (killed)".into(),
        },
        secs: t.elapsed().as_secs_f64(),
    })
}

pub fn check(root: &Path, args: &CheckArgs) -> Result<bool> {
    check_in(root, args, &root.join(CHECK_DIR).join("candle"))
}

/// The check with the patched tree in `tree` (recreated).
fn check_in(root: &Path, args: &CheckArgs, tree: &Path) -> Result<bool> {
    let t0 = Instant::now();
    let pin = main_pin();
    let upstream = resolve(&args.upstream, root, &pin);
    let series = series(root)?;
    println!(
        "upstream series: {} patch(es) in {SERIES_DIR}, onto {} ({})",
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
    let t_apply = t0.elapsed().as_secs_f64();
    if !apply_series(tree, &series)? {
        return Ok(false);
    }
    println!(
        "OK: the series applies onto {} ({:.1}s); patched tree: {}",
        &pin.rev[..10],
        t0.elapsed().as_secs_f64() - t_apply,
        tree.display()
    );
    if args.quick {
        return Ok(ok);
    }

    trim_workspace(tree)?;
    let target = root.join(CHECK_DIR);
    let mut rs_files: Vec<String> = Vec::new();
    for p in &series {
        rs_files.extend(touched_files(p)?.into_iter().filter(|f| f.ends_with(".rs")));
    }
    rs_files.sort();
    rs_files.dedup();
    let mut fmt = vec!["rustfmt", "--edition", "2021", "--check"];
    fmt.extend(rs_files.iter().map(String::as_str));
    let cuda_check = ["cargo", "check", "-p", "candle-nn", "--features", "cuda"];
    let mut steps = vec![
        run_step(tree, &target, "fmt", &fmt)?,
        run_step(
            tree,
            &target,
            "clippy",
            &[
                "cargo",
                "clippy",
                "-p",
                "candle-nn",
                "--tests",
                "--",
                "-D",
                "warnings",
            ],
        )?,
        run_step(
            tree,
            &target,
            "test-nn",
            &["cargo", "test", "--release", "-p", "candle-nn"],
        )?,
        run_step(
            tree,
            &target,
            "test-grad",
            &[
                "cargo",
                "test",
                "--release",
                "-p",
                "candle-core",
                "--test",
                "grad_tests",
            ],
        )?,
    ];
    if !args.no_cuda && on_path("nvcc") {
        steps.push(run_step(tree, &target, "cuda-check", &cuda_check)?);
    } else {
        steps.push(Step {
            name: "cuda-check",
            status: match args.no_cuda {
                true => "skipped (--no-cuda)".into(),
                false => {
                    "skipped (no nvcc on PATH: eval \"$(../shared/gpu/cuda-toolchain.sh)\")".into()
                }
            },
            secs: 0.0,
        });
    }

    println!(
        "\n=================== upstream-check summary ({})",
        &pin.rev[..10]
    );
    println!(
        "  {:<12} {:>5}   ok ({} patches)",
        "apply",
        "",
        series.len()
    );
    for s in &steps {
        ok &= s.status == "ok" || s.status.starts_with("skipped");
        println!("  {:<12} {:>5.0}s  {}", s.name, s.secs, s.status);
    }
    println!(
        "total {:.0}s -> {}",
        t0.elapsed().as_secs_f64(),
        if ok { "PASSED" } else { "FAILED" }
    );
    Ok(ok)
}

// ---------------------------------------------------------------- export

/// The patch text with its `Last-Update:` header (before the first diff) set to `date`.
fn with_last_update(text: &str, date: &str) -> String {
    let split = text.find("\ndiff --git ").unwrap_or(text.len());
    let (head, diff) = text.split_at(split);
    let head: Vec<String> = head
        .split('\n')
        .map(|l| {
            if l.to_ascii_lowercase().starts_with("last-update:") {
                format!("Last-Update: {date}")
            } else {
                l.to_string()
            }
        })
        .collect();
    head.join("\n") + diff
}

/// The diff part of a patch file (from the first `diff --git`).
fn diff_part(text: &str) -> &str {
    text.find("\ndiff --git ").map_or("", |i| &text[i..])
}

pub fn export(root: &Path, args: &ExportArgs) -> Result<bool> {
    let layout = Layout::new(root);
    let (pin, main) = (layout.pin.clone(), main_pin());
    let stamp = args.last_update.clone().unwrap_or_else(today_utc);
    if !dep3::is_iso_date(&stamp) {
        bail!("--last-update {stamp}: expected YYYY-MM-DD");
    }
    let series = series(root)?;
    // Which vendored files each patch carries; a file belongs to one patch.
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut files: Vec<Vec<String>> = Vec::new();
    for p in &series {
        let f = touched_files(p)?;
        for x in &f {
            if let Some(prev) = owner.insert(x.clone(), p.file_name()) {
                bail!(
                    "{x} is in {prev} and {}: a file must belong to one patch",
                    p.file_name()
                );
            }
        }
        files.push(f);
    }
    let dirty = git(root, &["status", "--porcelain", "--", "candle-patch"])?;
    if !dirty.trim().is_empty() {
        println!("note: candle-patch/ has uncommitted changes; exporting the working tree");
    }

    // A fixed scratch folder (not a temp dir): on a conflict it is left for resolving.
    let scratch = root.join(CHECK_DIR).join("export");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)?;
    }
    let work = scratch.join("tree");
    std::fs::create_dir_all(&work)?;

    // 1. The current series as commits on upstream main (messages, authors, dates).
    pristine_repo(&work, &resolve(&args.upstream, root, &main), &main)?;
    let base = git(&work, &["rev-parse", "HEAD"])?.trim().to_string();
    if !apply_series(&work, &series)? {
        bail!("the current series does not apply onto upstream main");
    }
    let old: Vec<String> = git(&work, &["rev-list", "--reverse", &format!("{base}..HEAD")])?
        .lines()
        .map(str::to_string)
        .collect();
    git(&work, &["branch", "-q", "-m", "main"])?;

    // 2. Pristine pin plus each patch's files from candle-patch/, one commit per patch.
    git(&work, &["checkout", "-q", "--orphan", "pin"])?;
    git(&work, &["rm", "-rqf", "."])?;
    pristine::extract(&resolve(&args.pin_upstream, root, &pin), &pin, &work)?;
    commit_all(&work, &format!("pristine pin {}", pin.rev))?;
    let mut pin_commits = Vec::new();
    for (c, f) in old.iter().zip(&files) {
        for rel in f {
            let (src, dst) = (layout.vendor_dir().join(rel), work.join(rel));
            if src.is_file() {
                std::fs::create_dir_all(dst.parent().context("no parent")?)?;
                std::fs::copy(&src, &dst)?;
            } else if dst.exists() {
                std::fs::remove_file(&dst)?;
            }
        }
        git(&work, &["add", "-A", "-f", "."])?;
        git(
            &work,
            &["commit", "-q", "--allow-empty", "--no-verify", "-C", c],
        )?;
        pin_commits.push(git(&work, &["rev-parse", "HEAD"])?.trim().to_string());
    }

    // 3. Replay them onto upstream main (3-way), stop at a conflict.
    git(&work, &["checkout", "-q", "-B", "export", &base])?;
    for (c, p) in pin_commits.iter().zip(&series) {
        let out = cmd::try_output(cmd::git_isolated(&work).args([
            "cherry-pick",
            "--allow-empty",
            "--keep-redundant-commits",
            c,
        ]))?;
        if !out.status.success() {
            let files = git(&work, &["diff", "--name-only", "--diff-filter=U"]).unwrap_or_default();
            let mut conflicts = String::new();
            for f in files.lines() {
                let text = std::fs::read_to_string(work.join(f)).unwrap_or_default();
                let at: Vec<String> = (1..)
                    .zip(text.lines())
                    .filter(|(_, l)| l.starts_with("<<<<<<< "))
                    .map(|(n, _)| n.to_string())
                    .collect();
                conflicts.push_str(&format!("  {f}: conflict at line(s) {}\n", at.join(", ")));
            }
            bail!(
                "CONFLICT replaying {} onto upstream main {}.\nConflicting files:\n{conflicts}\
                 Nothing was written. The scratch repository is left at {} (branch `export`):\n  \
                 resolve there, `git add` the files, `git cherry-pick --continue`, cherry-pick the \
                 remaining commits of branch `pin`, then `git format-patch` {}..HEAD (flags in \
                 upstream/README.md) into {SERIES_DIR}/ under the same names.\ngit:\n{}{}",
                p.file_name(),
                &main.rev[..10],
                work.display(),
                &base[..12],
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .filter(|l| !l.starts_with("hint:"))
                    .map(|l| format!("{l}\n"))
                    .collect::<String>()
            );
        }
    }

    // 4. format-patch; rewrite only the patches whose diff changed.
    let out_dir = scratch.join("out");
    let out = out_dir.to_str().context("non-UTF-8 temp path")?;
    let range = format!("{base}..HEAD");
    let mut format_patch = vec!["format-patch", "-q"];
    format_patch.extend(patches::FORMAT_PATCH_FLAGS);
    format_patch.extend(["-o", out, &range]);
    git(&work, &format_patch)?;
    let mut produced: Vec<PathBuf> = std::fs::read_dir(&out_dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    produced.sort();
    if produced.len() != series.len() {
        bail!(
            "format-patch wrote {} files for {} patches",
            produced.len(),
            series.len()
        );
    }
    let mut changed = 0;
    for (new, p) in produced.iter().zip(&series) {
        let new = std::fs::read_to_string(new)?;
        let cur = std::fs::read_to_string(&p.path)?;
        if diff_part(&new) == diff_part(&cur) {
            println!("unchanged {}", p.file_name());
            continue;
        }
        std::fs::write(&p.path, with_last_update(&new, &stamp))?;
        println!("wrote     {} (Last-Update: {stamp})", p.file_name());
        changed += 1;
    }
    println!(
        "upstream-export: {changed} of {} patch(es) rewritten",
        series.len()
    );
    let quick = CheckArgs {
        upstream: args.upstream.clone(),
        quick: true,
        no_cuda: true,
    };
    check_in(root, &quick, &scratch.join("verify"))
}

fn today_utc() -> String {
    let out = Command::new("date").args(["-u", "+%Y-%m-%d"]).output();
    out.ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
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
    fn sets_last_update_in_the_header_only() {
        let p = "Subject: x\n\nOrigin: upstream-candidate\nLast-Update: 2026-11-30\n\
                 \ndiff --git a/f b/f\n+Last-Update: keep\n";
        let got = with_last_update(p, "2026-12-24");
        assert!(got.contains("\nLast-Update: 2026-12-24\n"));
        assert!(got.contains("+Last-Update: keep"));
        assert_eq!(diff_part(&got), diff_part(p));
    }
}
