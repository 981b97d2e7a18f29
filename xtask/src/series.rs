//! `cargo series verify | export | list`: the patch series over the pristine upstream tree.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::cmd;
use crate::dep3::{self, Dep3};
use crate::layout::Layout;
use crate::patches::{self, PatchFile};
use crate::pristine::{self, Upstream};
use crate::tree;
use crate::vendor_md;

#[derive(Args, Clone, Debug)]
pub struct UpstreamArg {
    /// Pristine upstream: an archive (.tar.gz, default ../shared/upstream/candle-671de1dbba.tar.gz)
    /// or an upstream git checkout holding the pinned revision.
    #[arg(long, value_name = "ARCHIVE|DIR")]
    upstream: Option<PathBuf>,
}

impl UpstreamArg {
    fn resolve(&self, layout: &Layout) -> Upstream {
        match &self.upstream {
            Some(p) => Upstream::from_arg(p),
            None => Upstream::Archive(layout.default_archive()),
        }
    }
}

#[derive(Subcommand, Clone, Debug)]
pub enum SeriesCommand {
    /// Rebuild pristine + patches and compare byte for byte with candle-patch/ (tracked and
    /// untracked files); check DEP-3 headers and the VENDOR.md table. Exit 1 on any difference.
    Verify {
        #[command(flatten)]
        upstream: UpstreamArg,
        /// Also print `git diff` of each differing file.
        #[arg(long)]
        diff: bool,
    },
    /// Regenerate patches/ (and the VENDOR.md table) from the candle-patch/ tree.
    Export(ExportArgs),
    /// List the series with its DEP-3 status.
    List,
}

#[derive(Args, Clone, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    upstream: UpstreamArg,
    /// Fold the tree's changes into existing patch NNNN (fixup + rebase --autosquash).
    #[arg(long, value_name = "NNNN", conflicts_with = "new")]
    into: Option<String>,
    /// Add the tree's changes as a new patch at the end: NNNN-<short-name>.patch.
    #[arg(long, value_name = "short-name", requires_all = ["description", "forwarded"])]
    new: Option<String>,
    /// New patch: description; its first line becomes the Subject.
    #[arg(long, requires = "new")]
    description: Option<String>,
    /// New patch: `Forwarded:` (no | not-needed | <PR url>).
    #[arg(long, requires = "new")]
    forwarded: Option<String>,
    /// New patch: `Origin:` (vendor | upstream, <url> | backport, <url>).
    #[arg(long, requires = "new", default_value = "vendor")]
    origin: String,
    /// New patch: author "Name <email>" (default: git config user.name/user.email).
    #[arg(long, requires = "new")]
    author: Option<String>,
    /// New patch: author date, any format git accepts (default: now).
    #[arg(long, requires = "new")]
    date: Option<String>,
    /// `Last-Update:` written into the new or folded patch (default: --date's day, else today, UTC).
    #[arg(long, value_name = "YYYY-MM-DD")]
    last_update: Option<String>,
}

pub fn run(root: &Path, command: SeriesCommand) -> Result<bool> {
    let layout = Layout::new(root);
    match command {
        SeriesCommand::Verify { upstream, diff } => {
            verify(&layout, &upstream.resolve(&layout), diff)
        }
        SeriesCommand::Export(args) => export(&layout, &args).map(|_| true),
        SeriesCommand::List => list(&layout).map(|_| true),
    }
}

fn load_series(layout: &Layout) -> Result<Vec<(PatchFile, Dep3)>> {
    patches::list(&layout.patches_dir())?
        .into_iter()
        .map(|p| {
            let d = p.dep3()?;
            Ok((p, d))
        })
        .collect()
}

fn named(series: &[(PatchFile, Dep3)]) -> Vec<(String, Dep3)> {
    series
        .iter()
        .map(|(p, d)| (p.file_name(), d.clone()))
        .collect()
}

/// A temporary git repository holding the pristine tree in its first commit.
struct Scratch {
    _tmp: tempfile::TempDir,
    work: PathBuf,
    base: String,
}

fn git_ok(dir: &Path, args: &[&str]) -> Result<String> {
    cmd::stdout(cmd::git_isolated(dir).args(args))
}

fn scratch(layout: &Layout, upstream: &Upstream) -> Result<Scratch> {
    let mut tmp = tempfile::Builder::new()
        .prefix("candle-series-")
        .tempdir()
        .context("creating a temporary directory")?;
    if std::env::var_os("XTASK_KEEP_TMP").is_some() {
        tmp.disable_cleanup(true);
        eprintln!("note: keeping temporary directory {}", tmp.path().display());
    }
    let work = tmp.path().join("tree");
    std::fs::create_dir(&work)?;
    pristine::extract(upstream, &layout.pin, &work)
        .with_context(|| format!("extracting the pristine tree from {}", upstream.describe()))?;
    git_ok(&work, &["init", "-q"])?;
    // Byte-exact: no attribute-driven conversion whatever upstream's .gitattributes say.
    std::fs::write(
        work.join(".git/info/attributes"),
        "* -text -filter -ident\n",
    )?;
    git_ok(&work, &["add", "-A", "-f", "."])?;
    cmd::output(
        cmd::git_isolated(&work)
            .env("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z")
            .args(["commit", "-q", "--allow-empty", "-m"])
            .arg(format!("pristine upstream {}", layout.pin.rev)),
    )?;
    let base = git_ok(&work, &["rev-parse", "HEAD"])?.trim().to_string();
    Ok(Scratch {
        _tmp: tmp,
        work,
        base,
    })
}

// ---------------------------------------------------------------- verify

pub fn verify(layout: &Layout, upstream: &Upstream, show_diff: bool) -> Result<bool> {
    let mut ok = true;
    let series = load_series(layout)?;
    println!(
        "series: {} patch(es) in {}",
        series.len(),
        layout.patches_dir().display()
    );

    for (p, d) in &series {
        for problem in d.problems() {
            ok = false;
            println!("  DEP-3     patches/{}: {problem}", p.file_name());
        }
    }

    match std::fs::read_to_string(layout.vendor_md()) {
        Err(_) => {
            ok = false;
            println!("  VENDOR.md {} is missing", layout.vendor_md().display());
        }
        Ok(doc) => match vendor_md::check(&doc, &named(&series)) {
            Ok(problems) => {
                for problem in problems {
                    ok = false;
                    println!("  VENDOR.md {problem}");
                }
            }
            Err(e) => {
                ok = false;
                println!("  VENDOR.md {e}");
            }
        },
    }

    let s = scratch(layout, upstream)?;
    for (p, _) in &series {
        let out = cmd::try_output(
            cmd::git_isolated(&s.work)
                .args(["apply", "--whitespace=nowarn"])
                .arg(p.path.canonicalize()?),
        )?;
        if !out.status.success() {
            println!(
                "FAILED: patches/{} does not apply onto pristine + the patches before it:\n{}",
                p.file_name(),
                String::from_utf8_lossy(&out.stderr)
            );
            return Ok(false);
        }
    }
    let expected = tree::walk(&s.work)?;
    let actual = tree::vendored_files(layout)?;
    let problems = tree::compare(&expected, &actual)?;
    for p in &problems {
        println!("  {p}");
        if show_diff {
            if let tree::Problem::Differs(rel) = p {
                let out = cmd::try_output(
                    std::process::Command::new("git")
                        .args(["diff", "--no-index", "--no-color", "--"])
                        .arg(s.work.join(rel))
                        .arg(layout.vendor_dir().join(rel)),
                )?;
                print!("{}", String::from_utf8_lossy(&out.stdout));
            }
        }
    }
    if !problems.is_empty() {
        ok = false;
        println!(
            "{} path(s) of candle-patch/ differ from pristine {} + patches/.",
            problems.len(),
            &layout.pin.rev[..10]
        );
        println!(
            "  differs/missing/extra: record the change with `cargo series export --into NNNN` or \
             `--new <name> --description ... --forwarded no|not-needed`, or revert it;"
        );
        println!(
            "  untracked: `git add` it (or ignore it); deleted: restore it or record the deletion."
        );
    }
    if ok {
        println!(
            "OK: {} files of candle-patch/ == pristine {} ({}) + {} patch(es), byte for byte; VENDOR.md table up to date",
            expected.len(),
            &layout.pin.rev[..10],
            upstream.describe(),
            series.len()
        );
    } else {
        println!("FAILED: cargo series verify");
    }
    Ok(ok)
}

// ---------------------------------------------------------------- export

fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    civil_date((secs / 86_400) as i64)
}

/// Days since 1970-01-01 -> YYYY-MM-DD (Howard Hinnant's civil_from_days).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}")
}

fn default_author(layout: &Layout) -> String {
    let get = |k: &str| {
        cmd::stdout(cmd::git(&layout.root).args(["config", k]))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let (n, e) = (get("user.name"), get("user.email"));
    if n.is_empty() || e.is_empty() {
        "candle-patch series <series@invalid>".into()
    } else {
        format!("{n} <{e}>")
    }
}

fn commits(s: &Scratch) -> Result<Vec<String>> {
    Ok(git_ok(
        &s.work,
        &["rev-list", "--reverse", &format!("{}..HEAD", s.base)],
    )?
    .lines()
    .map(str::to_string)
    .collect())
}

pub fn export(layout: &Layout, args: &ExportArgs) -> Result<()> {
    let upstream = args.upstream.resolve(layout);
    let series = load_series(layout)?;
    if let Some(n) = &args.new {
        if !patches::valid_short_name(n) {
            bail!("--new {n}: short name must be lower-case letters, digits, '-', '.', '_'");
        }
        let f = args.forwarded.as_deref().unwrap_or_default();
        dep3::parse_forwarded(f)?;
    }
    let s = scratch(layout, &upstream)?;

    // 1. The existing series as commits, messages kept.
    for (p, _) in &series {
        let out = cmd::try_output(
            cmd::git_isolated(&s.work)
                .args(["am", "-q", "--keep-cr", "--committer-date-is-author-date"])
                .arg(p.path.canonicalize()?),
        )?;
        if !out.status.success() {
            let _ = cmd::try_output(cmd::git_isolated(&s.work).args(["am", "--abort"]));
            bail!(
                "patches/{} does not apply (git am) onto pristine + the patches before it:\n{}{}",
                p.file_name(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let mut names: Vec<String> = series.iter().map(|(p, _)| p.file_name()).collect();
    let before = commits(&s)?;
    if before.len() != series.len() {
        bail!(
            "expected {} commits after git am, got {}",
            series.len(),
            before.len()
        );
    }

    // 2. The difference between the series and the candle-patch/ tree.
    let actual = tree::vendored_files(layout)?;
    tree::mirror_into(&actual, &s.work)?;
    git_ok(&s.work, &["add", "-A", "-f", "."])?;
    let status = git_ok(&s.work, &["status", "--porcelain", "--no-renames"])?;
    let changed = !status.trim().is_empty();
    let stamp = args
        .last_update
        .clone()
        .or_else(|| {
            args.date
                .as_ref()
                .filter(|d| d.len() >= 10 && dep3::is_iso_date(&d[..10]))
                .map(|d| d[..10].to_string())
        })
        .unwrap_or_else(today_utc);
    if !dep3::is_iso_date(&stamp) {
        bail!("--last-update {stamp}: expected YYYY-MM-DD");
    }

    match (&args.into, &args.new) {
        (None, None) => {
            if changed {
                bail!(
                    "candle-patch/ differs from the series; say where the change goes:\n  \
                     cargo series export --into NNNN   (fold into an existing patch)\n  \
                     cargo series export --new <short-name> --description \"...\" --forwarded no|not-needed\n\
                     changed paths:\n{status}"
                );
            }
        }
        (Some(into), None) => {
            let n: u32 = into
                .trim_end_matches(".patch")
                .split('-')
                .next()
                .unwrap_or("")
                .parse()
                .with_context(|| format!("--into {into}: expected a patch number NNNN"))?;
            let idx = series
                .iter()
                .position(|(p, _)| p.number == n)
                .with_context(|| format!("--into {into}: no patch {n:04} in patches/"))?;
            if !changed {
                println!("nothing to fold: candle-patch/ already equals the series");
            } else {
                let target = &before[idx];
                let msg = git_ok(&s.work, &["log", "-1", "--format=%B", target])?;
                let msg = dep3::set_last_update(&msg, &stamp);
                cmd::output(
                    cmd::git_isolated(&s.work)
                        .args(["commit", "-q", "--no-verify", "--cleanup=verbatim", "-m"])
                        .arg(format!("amend! {target}\n\n{msg}")),
                )?;
                let out = cmd::try_output(
                    cmd::git_isolated(&s.work)
                        .env("GIT_SEQUENCE_EDITOR", "true")
                        .env("GIT_EDITOR", "true")
                        .args([
                            "rebase",
                            "-q",
                            "-i",
                            "--autosquash",
                            "--keep-empty",
                            &s.base,
                        ]),
                )?;
                if !out.status.success() {
                    let conflicts = git_ok(&s.work, &["diff", "--name-only", "--diff-filter=U"])
                        .unwrap_or_default();
                    let stopped_at = std::fs::read_to_string(s.work.join(".git/rebase-merge/done"))
                        .ok()
                        .and_then(|d| d.lines().last().map(str::to_string))
                        .unwrap_or_default();
                    let _ = cmd::try_output(cmd::git_isolated(&s.work).args(["rebase", "--abort"]));
                    let later = names[idx + 1..].join(", ");
                    let git_says: String = String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .filter(|l| !l.starts_with("hint:"))
                        .map(|l| format!("  {l}\n"))
                        .collect();
                    bail!(
                        "CONFLICT: the change cannot be folded into {}: it touches lines that later \
                         patches ({later}) add or modify.\nConflicting files:\n{conflicts}\
                         Nothing was written. Fold into the later patch instead, or add the change \
                         as a new patch (--new).\ngit (rebase stopped at `{stopped_at}`):\n{git_says}",
                        names[idx]
                    );
                }
                println!("folded the change into {}", names[idx]);
            }
        }
        (None, Some(short)) => {
            if !changed {
                bail!("--new {short}: candle-patch/ already equals the series; there is nothing to record");
            }
            let msg = dep3::new_message(
                args.description.as_deref().unwrap_or_default(),
                &args.origin,
                args.forwarded.as_deref().unwrap_or_default(),
                &stamp,
            );
            let author = args
                .author
                .clone()
                .unwrap_or_else(|| default_author(layout));
            let mut c = cmd::git_isolated(&s.work);
            if let Some(d) = &args.date {
                c.env("GIT_AUTHOR_DATE", d);
            }
            cmd::output(
                c.args(["commit", "-q", "--no-verify", "--cleanup=strip", "--author"])
                    .arg(&author)
                    .arg("-m")
                    .arg(&msg),
            )?;
            let number = series.last().map(|(p, _)| p.number + 1).unwrap_or(1);
            names.push(patches::file_name(number, short));
            println!("new patch {}", names.last().unwrap());
        }
        (Some(_), Some(_)) => bail!("--into and --new exclude each other"),
    }

    // 3. format-patch the commits back, with stable output.
    let after = commits(&s)?;
    if after.len() != names.len() {
        bail!(
            "the series has {} commits after the export but {} patch names (did a fold empty a patch?)",
            after.len(),
            names.len()
        );
    }
    let out_dir = s.work.parent().unwrap().join("out");
    let out = out_dir.to_str().context("non-UTF-8 temp path")?;
    let range = format!("{}..HEAD", s.base);
    let mut format_patch = vec!["format-patch", "-q"];
    format_patch.extend(patches::FORMAT_PATCH_FLAGS);
    format_patch.extend(["-o", out, &range]);
    git_ok(&s.work, &format_patch)?;
    let mut produced: Vec<PathBuf> = std::fs::read_dir(&out_dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    produced.sort();
    if produced.len() != names.len() {
        bail!(
            "format-patch wrote {} files for {} patches",
            produced.len(),
            names.len()
        );
    }
    let patches_dir = layout.patches_dir();
    std::fs::create_dir_all(&patches_dir)?;
    let mut written = 0;
    for (src, name) in produced.iter().zip(&names) {
        let bytes = std::fs::read(src)?;
        let dest = patches_dir.join(name);
        if std::fs::read(&dest).ok().as_deref() != Some(&bytes[..]) {
            std::fs::write(&dest, &bytes).with_context(|| format!("writing {}", dest.display()))?;
            println!("wrote     patches/{name}");
            written += 1;
        } else {
            println!("unchanged patches/{name}");
        }
    }

    // 4. The VENDOR.md table.
    let series = load_series(layout)?;
    let md = layout.vendor_md();
    match std::fs::read_to_string(&md) {
        Ok(doc) => {
            let new = vendor_md::regenerate(&doc, &named(&series))?;
            if new != doc {
                std::fs::write(&md, new)?;
                println!("wrote     VENDOR.md (Local Modifications table)");
            }
        }
        Err(_) => println!(
            "warning: {} is missing; verify will fail until it exists",
            md.display()
        ),
    }
    println!(
        "export: {} patch(es), {written} file(s) rewritten",
        names.len()
    );

    // 5. The series must reproduce the tree.
    if !verify(layout, &upstream, false)? {
        bail!("exported series does not verify (see above)");
    }
    Ok(())
}

// ---------------------------------------------------------------- list

fn list(layout: &Layout) -> Result<()> {
    let series = load_series(layout)?;
    if series.is_empty() {
        println!("(no patches in {})", layout.patches_dir().display());
    }
    for (p, d) in &series {
        println!(
            "{}  Origin: {}  Forwarded: {}  Last-Update: {}\n      {}",
            p.file_name(),
            d.origin.as_deref().unwrap_or("?"),
            d.forwarded.as_deref().unwrap_or("?"),
            d.last_update.as_deref().unwrap_or("?"),
            d.subject
        );
        for problem in d.problems() {
            println!("      DEP-3 problem: {problem}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::civil_date;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_366), "2025-10-05");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }
}
