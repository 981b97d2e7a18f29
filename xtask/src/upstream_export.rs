//! `cargo xtask upstream-export [--check | --record <slug> | --continue]`: produce
//! `upstream/series/` from the pin series and `upstream/stack.toml`.
//!
//! In a scratch git repository: upstream main's pristine tree, then per PR its pin patches
//! with `git am -3` (conflicts resolved from `upstream/resolutions/rr-cache` by rerere), the
//! PR's recorded adaptation `upstream/resolutions/<slug>.patch`, all squashed into one commit
//! with the PR's message; then `git format-patch` with fixed flags. Same inputs, same bytes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::cmd;
use crate::layout::Layout;
use crate::patches::{self, PatchFile};
use crate::pristine;
use crate::resolutions::{self, Resolutions, RESOLUTIONS_DIR};
use crate::stack::{self, Pr, Stack, STACK_FILE};
use crate::upstream::{self, SERIES_DIR};
use crate::upstream_table;

/// Where an export works (scratch repository `tree/`, `state.json` while stopped).
const EXPORT_DIR: &str = "target/upstream-export";

#[derive(Args, Clone, Debug, Default)]
pub struct ExportArgs {
    /// Upstream main: an archive or a git checkout holding 2a13b0f3.
    #[arg(long, value_name = "ARCHIVE|DIR")]
    upstream: Option<PathBuf>,
    /// The pin candle-patch/ is built from (default ../shared/upstream/candle-671de1dbba.tar.gz).
    #[arg(long, value_name = "ARCHIVE|DIR")]
    pin_upstream: Option<PathBuf>,
    /// Regenerate into a temporary folder and compare with upstream/series/ (exit 1 on a
    /// difference); writes nothing.
    #[arg(long, conflicts_with_all = ["record", "continue_"])]
    check: bool,
    /// Stop after PR <slug>'s pin patches and recorded adaptation are applied, to edit its
    /// main-only adaptation in the scratch tree; then `--continue` records it.
    #[arg(long, value_name = "SLUG", conflicts_with = "continue_")]
    record: Option<String>,
    /// After a stop (conflict or --record): record the resolution made in the scratch tree
    /// into upstream/resolutions/ and finish the export.
    #[arg(long = "continue")]
    continue_: bool,
}

/// Why and where an export stopped; kept in `target/upstream-export/state.json`.
#[derive(Serialize, Deserialize, Debug)]
struct State {
    /// 0-based PR index.
    pr: usize,
    /// Index of the PR's next pin patch to apply.
    next_patch: usize,
    /// The commit the PR starts from.
    pr_base: String,
    /// "conflict" (git am stopped) or "record" (--record, or a fixup that needs redoing).
    kind: String,
    upstream: Option<PathBuf>,
    pin_upstream: Option<PathBuf>,
}

/// How a replay ended.
enum Outcome {
    /// All PRs committed on top of `base`.
    Done { base: String },
    /// Stopped for the user (state written, instructions printed).
    Stopped,
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    cmd::stdout(cmd::git_isolated(dir).args(args))
}

fn stderr_of(out: &std::process::Output) -> String {
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    for l in String::from_utf8_lossy(&out.stderr).lines() {
        if !l.starts_with("hint:") {
            s.push_str(l);
            s.push('\n');
        }
    }
    s
}

/// The scratch repository of one export, with the stack it replays.
struct Replay<'a> {
    root: &'a Path,
    work: PathBuf,
    stack: &'a Stack,
    res: Resolutions,
    /// Where to write `state.json` on a stop (`None`: a stop is an error, e.g. `--check`).
    state_file: Option<PathBuf>,
    args: ExportArgs,
}

impl Replay<'_> {
    fn git_dir(&self) -> PathBuf {
        self.work.join(".git")
    }

    fn head(&self) -> Result<String> {
        Ok(git(&self.work, &["rev-parse", "HEAD"])?.trim().to_string())
    }

    /// Branch `pin`: the pristine pin plus the whole pin series (its blobs make `git am -3`
    /// possible); branch `stack`: pristine upstream main, checked out. Returns main's commit.
    fn setup(&self, layout: &Layout, pin_series: &[PatchFile]) -> Result<String> {
        let w = &self.work;
        std::fs::create_dir_all(w)?;
        git(w, &["init", "-q"])?;
        std::fs::write(w.join(".git/info/attributes"), "* -text -filter -ident\n")?;
        // A build in the scratch tree must not become part of a recorded adaptation.
        std::fs::write(w.join(".git/info/exclude"), "/target/\n/Cargo.lock\n")?;
        // In .git/config, so that rerere also records when the user works there by hand.
        for (k, v) in [
            ("rerere.enabled", "true"),
            ("rerere.autoUpdate", "true"),
            ("gc.auto", "0"),
            ("gc.rerereResolved", "100000"),
            ("gc.rerereUnresolved", "100000"),
        ] {
            git(w, &["config", k, v])?;
        }
        let pin = &layout.pin;
        pristine::extract(
            &upstream::resolve(&self.args.pin_upstream, self.root, pin),
            pin,
            w,
        )
        .context("extracting the pristine pin")?;
        upstream::commit_all(w, &format!("pristine pin {}", pin.rev))?;
        for p in pin_series {
            let out = cmd::try_output(
                cmd::git_isolated(w)
                    .args(["am", "-q", "--keep-cr"])
                    .arg(p.path.canonicalize()?),
            )?;
            if !out.status.success() {
                bail!(
                    "pin patch {} does not apply onto the pristine pin: run `cargo series verify`\n{}",
                    p.file_name(),
                    stderr_of(&out)
                );
            }
        }
        git(w, &["branch", "-q", "-m", "pin"])?;
        git(w, &["checkout", "-q", "--orphan", "stack"])?;
        git(w, &["rm", "-rqf", "."])?;
        let main = upstream::main_pin();
        pristine::extract(
            &upstream::resolve(&self.args.upstream, self.root, &main),
            &main,
            w,
        )
        .context("extracting pristine upstream main")?;
        upstream::commit_all(w, &format!("pristine upstream {}", main.rev))?;
        self.res.install(&self.git_dir())?;
        self.head()
    }

    /// `git am -3` one pin patch; conflicts that rerere resolves are continued. False when
    /// conflicts remain (git am left in progress).
    fn am(&mut self, p: &PatchFile) -> Result<bool> {
        let out = cmd::try_output(
            cmd::git_isolated(&self.work)
                .args(["am", "-3", "-q", "--keep-cr"])
                .arg(p.path.canonicalize()?),
        )?;
        if out.status.success() {
            return Ok(true);
        }
        if !self.git_dir().join("rebase-apply").exists() {
            bail!("git am -3 {} failed:\n{}", p.file_name(), stderr_of(&out));
        }
        if !self.unresolved()?.is_empty() {
            return Ok(false);
        }
        let cont = cmd::try_output(cmd::git_isolated(&self.work).args(["am", "--continue"]))?;
        if !cont.status.success() {
            bail!(
                "git am --continue after rerere ({}):\n{}",
                p.file_name(),
                stderr_of(&cont)
            );
        }
        println!(
            "    {}: conflicts resolved by {RESOLUTIONS_DIR}/rr-cache",
            p.file_name()
        );
        Ok(true)
    }

    /// Paths still unmerged (not `git add`ed) or holding conflict markers.
    fn unresolved(&self) -> Result<Vec<String>> {
        let mut out: Vec<String> = git(&self.work, &["diff", "--name-only", "--diff-filter=U"])?
            .lines()
            .map(str::to_string)
            .collect();
        for f in self.with_markers()? {
            if !out.contains(&f) {
                out.push(f);
            }
        }
        Ok(out)
    }

    /// Changed paths that still hold `<<<<<<<` / `>>>>>>>` lines.
    fn with_markers(&self) -> Result<Vec<String>> {
        let changed = git(&self.work, &["diff", "--name-only", "HEAD"])?;
        Ok(changed
            .lines()
            .filter(|f| {
                let text = std::fs::read(self.work.join(f)).unwrap_or_default();
                String::from_utf8_lossy(&text)
                    .lines()
                    .any(|l| l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> "))
            })
            .map(str::to_string)
            .collect())
    }

    /// Apply the PR's recorded adaptation. `interactive`: on failure try a 3-way apply and
    /// report false (the user fixes the tree); otherwise fail with what to do.
    fn apply_fixup(&self, pr: &Pr, interactive: bool) -> Result<bool> {
        let path = self.res.fixup(&pr.slug);
        if !path.is_file() {
            return Ok(true);
        }
        let abs = path.canonicalize()?;
        let out = cmd::try_output(
            cmd::git_isolated(&self.work)
                .args(["apply", "--index", "--whitespace=nowarn"])
                .arg(&abs),
        )?;
        if out.status.success() {
            println!("    {RESOLUTIONS_DIR}/{}.patch applied", pr.slug);
            return Ok(true);
        }
        if !interactive {
            println!(
                "{RESOLUTIONS_DIR}/{}.patch (the recorded main-only adaptation of PR `{}`) no longer \
                 applies after its pin patches:\n{}Redo it: `cargo xtask upstream-export --record {}`, \
                 edit the scratch tree it names, then `cargo xtask upstream-export --continue`.",
                pr.slug,
                pr.slug,
                stderr_of(&out),
                pr.slug
            );
            return Ok(false);
        }
        let out3 = cmd::try_output(
            cmd::git_isolated(&self.work)
                .args(["apply", "--index", "--3way", "--whitespace=nowarn"])
                .arg(&abs),
        )?;
        println!(
            "    {RESOLUTIONS_DIR}/{}.patch does not apply cleanly{}",
            pr.slug,
            if out3.status.success() {
                " (applied 3-way)"
            } else {
                "; left out: redo the adaptation by hand"
            }
        );
        Ok(false)
    }

    /// Squash the PR's commits (and the staged adaptation) into one commit with its message.
    fn squash(&self, pr: &Pr, pr_base: &str) -> Result<()> {
        let w = &self.work;
        git(w, &["add", "-A", "."])?;
        if git(w, &["diff", "--cached", "--name-only", pr_base])?
            .trim()
            .is_empty()
        {
            bail!(
                "PR `{}` changes nothing on upstream main (already upstream, or its pin patches \
                 cancel out): drop it from {STACK_FILE}",
                pr.slug
            );
        }
        let first = git(w, &["rev-list", "--reverse", &format!("{pr_base}..HEAD")])?
            .lines()
            .next()
            .map(str::to_string)
            .context("no pin patch commit in the PR")?;
        let who = git(w, &["log", "-1", "--format=%an <%ae>%x00%aD", &first])?;
        let (pin_author, pin_date) = who.trim().split_once('\0').unwrap_or_default();
        let author = pr.author.clone().unwrap_or_else(|| pin_author.to_string());
        let date = pr.date.clone().unwrap_or_else(|| pin_date.to_string());
        git(w, &["reset", "-q", "--soft", pr_base])?;
        cmd::output(
            cmd::git_isolated(w)
                .env("GIT_AUTHOR_DATE", &date)
                .env("GIT_COMMITTER_DATE", &date)
                .args(["commit", "-q", "--no-verify", "--cleanup=whitespace"])
                .arg(format!("--author={author}"))
                .arg("-m")
                .arg(pr.message()),
        )
        .with_context(|| {
            format!(
                "committing PR `{}` (author {author:?}, date {date:?})",
                pr.slug
            )
        })?;
        Ok(())
    }

    fn save_state(&self, state: &State) -> Result<()> {
        let path = self.state_file.as_ref().context("no state file")?;
        std::fs::write(path, serde_json::to_string_pretty(state)?)?;
        Ok(())
    }

    /// Replay every PR of the stack onto the checked-out pristine main.
    fn run(&mut self) -> Result<Outcome> {
        let stack = self.stack;
        for (i, pr) in stack.prs.iter().enumerate() {
            let pr_base = self.head()?;
            println!("  PR {} {}", i + 1, pr.slug);
            for (j, p) in pr.patches.iter().enumerate() {
                if !self.am(p)? {
                    return self.stop_conflict(i, j, &pr_base, p);
                }
                println!("    {} applied", p.file_name());
            }
            let recording = self.args.record.as_deref() == Some(pr.slug.as_str());
            let fixup_ok = self.apply_fixup(pr, recording || self.state_file.is_some())?;
            if recording || !fixup_ok {
                return self.stop_record(i, &pr_base);
            }
            self.squash(pr, &pr_base)?;
        }
        Ok(Outcome::Done {
            base: git(&self.work, &["rev-list", "--max-parents=0", "stack"])?
                .trim()
                .to_string(),
        })
    }

    fn state(&self, pr: usize, next_patch: usize, pr_base: &str, kind: &str) -> State {
        State {
            pr,
            next_patch,
            pr_base: pr_base.to_string(),
            kind: kind.into(),
            upstream: self.args.upstream.clone(),
            pin_upstream: self.args.pin_upstream.clone(),
        }
    }

    fn stop_conflict(&self, i: usize, j: usize, pr_base: &str, p: &PatchFile) -> Result<Outcome> {
        let pr = &self.stack.prs[i];
        let files = self.unresolved()?;
        if self.state_file.is_none() {
            println!(
                "pin patch {} (PR {} `{}`) conflicts on upstream main in {} and no recorded \
                 resolution covers it: run `cargo xtask upstream-export` to resolve and record it",
                p.file_name(),
                i + 1,
                pr.slug,
                files.join(", ")
            );
            return Ok(Outcome::Stopped);
        }
        self.save_state(&self.state(i, j + 1, pr_base, "conflict"))?;
        println!(
            "\nCONFLICT: pin patch {} (PR {} `{}`) does not merge onto upstream main + the PRs \
             before it, and no recorded resolution covers it. Conflicting files:",
            p.file_name(),
            i + 1,
            pr.slug
        );
        for f in &files {
            println!("  {f}");
        }
        println!(
            "\nResolve in the scratch repository {} (git am is in progress there):\n  \
             edit the files (keep main's code and the patch's intent; `git add` is optional);\n  \
             main-only edits elsewhere that this PR needs (e.g. match arms for main's extra\n  \
             variants) can be made now too, or afterwards with --record {}.\n\
             Then: cargo xtask upstream-export --continue\n  \
             (records the resolution under {RESOLUTIONS_DIR}/: rerere data in rr-cache/, other \
             edits in {}.patch; then finishes the export).\n\
             Nothing was written to {SERIES_DIR}/. To give up: rm -rf {EXPORT_DIR}",
            self.work.display(),
            pr.slug,
            pr.slug
        );
        Ok(Outcome::Stopped)
    }

    fn stop_record(&self, i: usize, pr_base: &str) -> Result<Outcome> {
        let pr = &self.stack.prs[i];
        if self.state_file.is_none() {
            return Ok(Outcome::Stopped); // apply_fixup said what to do
        }
        self.save_state(&self.state(i, pr.patches.len(), pr_base, "record"))?;
        println!(
            "\nSTOPPED after PR {} `{}` (its pin patches are commits, its recorded adaptation, where it applied, \
             is in the working tree). Edit {} until the PR builds on upstream main (main-only \
             adaptations), leave the edits uncommitted, then:\n  cargo xtask upstream-export \
             --continue\n(records the tree's difference to the plain replay as {RESOLUTIONS_DIR}/{}.patch \
             and finishes the export). Nothing was written to {SERIES_DIR}/.",
            i + 1,
            pr.slug,
            self.work.display(),
            pr.slug
        );
        Ok(Outcome::Stopped)
    }

    /// `git format-patch` of the PR commits: `(NNNN-<slug>.patch, bytes)` in stack order.
    fn format_patches(&self, base: &str, out_dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
        let out = out_dir.to_str().context("non-UTF-8 path")?;
        let range = format!("{base}..HEAD");
        let mut args = vec!["format-patch", "-q"];
        args.extend(patches::FORMAT_PATCH_FLAGS);
        args.extend(["-o", out, &range]);
        git(&self.work, &args)?;
        let mut produced: Vec<PathBuf> = std::fs::read_dir(out_dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        produced.sort();
        if produced.len() != self.stack.prs.len() {
            bail!(
                "format-patch wrote {} files for {} PRs",
                produced.len(),
                self.stack.prs.len()
            );
        }
        produced
            .iter()
            .zip(self.stack.prs.iter().enumerate())
            .map(|(f, (i, pr))| Ok((pr.file_name(i), std::fs::read(f)?)))
            .collect()
    }

    /// Recorded resolutions no PR used (obsolete ones should be deleted).
    fn unused_resolutions(&self) -> Result<Vec<String>> {
        let used = resolutions::used_ids(&self.git_dir())?;
        Ok(self
            .res
            .rerere_ids()?
            .into_iter()
            .filter(|id| !used.contains(id))
            .collect())
    }
}

fn load_stack(root: &Path) -> Result<(Layout, Vec<PatchFile>, Stack)> {
    let layout = Layout::new(root);
    let pin_series = patches::list(&layout.patches_dir())?;
    let stack = stack::load(root, &pin_series)?;
    Ok((layout, pin_series, stack))
}

fn print_plan(stack: &Stack) {
    for (i, pr) in stack.prs.iter().enumerate() {
        let p: Vec<String> = pr
            .patches
            .iter()
            .map(|p| format!("{:04}", p.number))
            .collect();
        println!("  {} <- pin {}", pr.file_name(i), p.join(" + "));
    }
    if !stack.pin_only.is_empty() {
        let p: Vec<String> = stack.pin_only.iter().map(PatchFile::file_name).collect();
        println!("  pin-only (in no PR): {}", p.join(", "));
    }
}

pub fn run(root: &Path, args: &ExportArgs) -> Result<bool> {
    if args.continue_ {
        return continue_export(root);
    }
    let (layout, pin_series, stack) = load_stack(root)?;
    if let Some(slug) = &args.record {
        if !stack.prs.iter().any(|p| &p.slug == slug) {
            bail!("--record {slug}: no PR with that slug in {STACK_FILE}");
        }
    }
    println!(
        "upstream-export: {} PR(s) from {STACK_FILE} onto upstream main {}",
        stack.prs.len(),
        &upstream::main_pin().rev[..10]
    );
    print_plan(&stack);
    if args.check {
        return check(root, &layout, &pin_series, &stack, args);
    }
    let dir = root.join(EXPORT_DIR);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let mut replay = Replay {
        root,
        work: dir.join("tree"),
        stack: &stack,
        res: Resolutions::new(root),
        state_file: Some(dir.join("state.json")),
        args: args.clone(),
    };
    replay.setup(&layout, &pin_series)?;
    match replay.run()? {
        Outcome::Stopped => Ok(false),
        Outcome::Done { base } => write_series(root, &replay, &base, &dir),
    }
}

fn write_series(root: &Path, replay: &Replay, base: &str, dir: &Path) -> Result<bool> {
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir)?;
    let produced = replay.format_patches(base, &out_dir)?;
    let series_dir = root.join(SERIES_DIR);
    std::fs::create_dir_all(&series_dir)?;
    let keep: BTreeSet<&str> = produced.iter().map(|(n, _)| n.as_str()).collect();
    for old in patches::list(&series_dir)? {
        if !keep.contains(old.file_name().as_str()) {
            std::fs::remove_file(&old.path)?;
            println!("removed   {SERIES_DIR}/{}", old.file_name());
        }
    }
    let mut written = 0;
    for (name, bytes) in &produced {
        let dest = series_dir.join(name);
        let old = std::fs::read(&dest).ok();
        if old.as_deref() == Some(&bytes[..]) {
            println!("unchanged {SERIES_DIR}/{name}");
            continue;
        }
        if let Some(old) = old {
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            let last = |t: &str| {
                t.lines()
                    .find(|l| l.starts_with("Last-Update:"))
                    .map(str::to_string)
            };
            let diff = |t: &str| t.find("\ndiff --git ").map(|i| t[i..].to_string());
            let (o, n) = (text(&old), text(bytes));
            if diff(&o) != diff(&n) && last(&o) == last(&n) {
                println!(
                    "note: the diff of {name} changed but its Last-Update did not: set last_update in {STACK_FILE}"
                );
            }
        }
        std::fs::write(&dest, bytes).with_context(|| format!("writing {}", dest.display()))?;
        println!("wrote     {SERIES_DIR}/{name}");
        written += 1;
    }
    for id in replay.unused_resolutions()? {
        println!(
            "note: {RESOLUTIONS_DIR}/rr-cache/{id} resolved no conflict in this export: delete it \
             if the conflict it was recorded for is gone"
        );
    }
    let md_path = root.join(upstream_table::UPSTREAM_MD);
    let md = std::fs::read_to_string(&md_path)?;
    let (md_new, changes) = upstream_table::update(&md, &table_rows(replay.stack, &produced))?;
    if !changes.is_empty() {
        std::fs::write(&md_path, md_new)?;
        for c in &changes {
            println!("{}: {c}", upstream_table::UPSTREAM_MD);
        }
    }
    println!(
        "upstream-export: {} PR(s), {written} file(s) written",
        produced.len()
    );
    let quick = upstream::CheckArgs::quick();
    upstream::check_in(root, &quick, &dir.join("verify"))
}

/// The PR table's rows: titles from the stack, changed lines from the produced series.
fn table_rows(stack: &Stack, produced: &[(String, Vec<u8>)]) -> Vec<upstream_table::Row> {
    stack
        .prs
        .iter()
        .zip(produced)
        .map(|(pr, (_, bytes))| upstream_table::Row {
            title: pr.title.clone(),
            lines: upstream_table::changed_lines(bytes),
        })
        .collect()
}

/// `--check`: the same export in a temporary folder, compared with upstream/series/ and with
/// UPSTREAM.md's PR table.
fn check(
    root: &Path,
    layout: &Layout,
    pin_series: &[PatchFile],
    stack: &Stack,
    args: &ExportArgs,
) -> Result<bool> {
    let tmp = tempfile::Builder::new()
        .prefix("upstream-export-check-")
        .tempdir()?;
    let mut replay = Replay {
        root,
        work: tmp.path().join("tree"),
        stack,
        res: Resolutions::new(root),
        state_file: None,
        args: args.clone(),
    };
    replay.setup(layout, pin_series)?;
    let Outcome::Done { base } = replay.run()? else {
        println!(
            "FAILED: the stack does not replay onto upstream main with the recorded resolutions \
             (see above); {SERIES_DIR}/ cannot be what it produces."
        );
        return Ok(false);
    };
    let out_dir = tmp.path().join("out");
    std::fs::create_dir_all(&out_dir)?;
    let produced = replay.format_patches(&base, &out_dir)?;
    let series_dir = root.join(SERIES_DIR);
    let mut problems = Vec::new();
    for (name, bytes) in &produced {
        match std::fs::read(series_dir.join(name)) {
            Err(_) => problems.push(format!("missing  {SERIES_DIR}/{name}")),
            Ok(old) if old != *bytes => {
                let line = String::from_utf8_lossy(&old)
                    .lines()
                    .zip(String::from_utf8_lossy(bytes).lines())
                    .position(|(a, b)| a != b)
                    .map_or_else(|| "length".to_string(), |n| format!("line {}", n + 1));
                problems.push(format!(
                    "differs  {SERIES_DIR}/{name} (first difference: {line})"
                ));
            }
            Ok(_) => {}
        }
    }
    let md = std::fs::read_to_string(root.join(upstream_table::UPSTREAM_MD))?;
    let (_, changes) = upstream_table::update(&md, &table_rows(stack, &produced))?;
    problems.extend(
        changes
            .into_iter()
            .map(|c| format!("differs  {} PR table: {c}", upstream_table::UPSTREAM_MD)),
    );
    let names: BTreeSet<&str> = produced.iter().map(|(n, _)| n.as_str()).collect();
    for old in patches::list(&series_dir)? {
        if !names.contains(old.file_name().as_str()) {
            problems.push(format!(
                "extra    {SERIES_DIR}/{} (no PR produces it)",
                old.file_name()
            ));
        }
    }
    for id in replay.unused_resolutions()? {
        println!("note: {RESOLUTIONS_DIR}/rr-cache/{id} resolved no conflict");
    }
    if problems.is_empty() {
        println!(
            "OK: {SERIES_DIR}/ == what {STACK_FILE} + candle-patch/patches + {RESOLUTIONS_DIR}/ \
             produce ({} files, byte for byte)",
            produced.len()
        );
        return Ok(true);
    }
    for p in &problems {
        println!("  {p}");
    }
    println!(
        "FAILED: {SERIES_DIR}/ is not what {STACK_FILE} + the pin series + {RESOLUTIONS_DIR}/ \
         produce. Run `cargo xtask upstream-export` and commit {SERIES_DIR}/ and its PR table in \
         UPSTREAM.md (edit {STACK_FILE} or the pin patches, not the series files)."
    );
    Ok(false)
}

/// `--continue`: record what the user did in the stopped scratch tree, then export afresh.
fn continue_export(root: &Path) -> Result<bool> {
    let dir = root.join(EXPORT_DIR);
    let state_file = dir.join("state.json");
    let text = std::fs::read_to_string(&state_file).with_context(|| {
        format!(
            "no stopped export ({} missing): run `cargo xtask upstream-export` first",
            state_file.display()
        )
    })?;
    let state: State = serde_json::from_str(&text).context("state.json")?;
    let (_, _, stack) = load_stack(root)?;
    let pr = stack
        .prs
        .get(state.pr)
        .context("stack.toml changed since the export stopped: start again with `cargo xtask upstream-export`")?
        .clone();
    let args = ExportArgs {
        upstream: state.upstream.clone(),
        pin_upstream: state.pin_upstream.clone(),
        ..Default::default()
    };
    let mut replay = Replay {
        root,
        work: dir.join("tree"),
        stack: &stack,
        res: Resolutions::new(root),
        state_file: Some(state_file.clone()),
        args: args.clone(),
    };
    let w = replay.work.clone();
    let left = replay.with_markers()?;
    if !left.is_empty() {
        bail!(
            "{} still has conflict markers in: {}\nresolve them (no <<<<<<< / >>>>>>> lines left), \
             then run --continue again",
            w.display(),
            left.join(", ")
        );
    }
    if state.kind == "conflict" {
        if !w.join(".git/rebase-apply").exists() {
            bail!(
                "git am is no longer in progress in {}: start again with `cargo xtask upstream-export`",
                w.display()
            );
        }
        git(&w, &["add", "-A", "."])?;
        git(&w, &["rerere"])?;
        let out = cmd::try_output(cmd::git_isolated(&w).args(["am", "--continue"]))?;
        if !out.status.success() {
            bail!("git am --continue in {}:\n{}", w.display(), stderr_of(&out));
        }
        // The PR's remaining pin patches and its recorded adaptation.
        for p in &pr.patches[state.next_patch..] {
            if !replay.am(p)? {
                let j = pr
                    .patches
                    .iter()
                    .position(|q| q.number == p.number)
                    .unwrap_or(0);
                replay.stop_conflict(state.pr, j, &state.pr_base, p)?;
                return Ok(false);
            }
        }
        if !replay.apply_fixup(&pr, true)? {
            replay.stop_record(state.pr, &state.pr_base)?;
            return Ok(false);
        }
    }

    // The tree the user wants for this PR, and what the pin patches + rerere alone give.
    git(&w, &["add", "-A", "."])?;
    let wanted = git(&w, &["write-tree"])?.trim().to_string();
    git(&w, &["reset", "-q", "--hard", &state.pr_base])?;
    for p in &pr.patches {
        if !replay.am(p)? {
            bail!(
                "replaying PR `{}` again, {} still conflicts: rerere did not record the resolution \
                 (the scratch tree {} is left as is)",
                pr.slug,
                p.file_name(),
                w.display()
            );
        }
    }
    git(&w, &["add", "-A", "."])?;
    let replayed = git(&w, &["write-tree"])?.trim().to_string();
    let fixup = cmd::output(cmd::git_isolated(&w).args([
        "diff",
        "--binary",
        "--full-index",
        "--no-renames",
        "--diff-algorithm=myers",
        &replayed,
        &wanted,
    ]))?
    .stdout;
    let new_ids = replay.res.save(&replay.git_dir())?;
    for id in &new_ids {
        println!("recorded  {RESOLUTIONS_DIR}/rr-cache/{id}");
    }
    let path = replay.res.fixup(&pr.slug);
    if fixup.is_empty() {
        if path.exists() {
            std::fs::remove_file(&path)?;
            println!(
                "removed   {RESOLUTIONS_DIR}/{}.patch (no adaptation needed)",
                pr.slug
            );
        }
    } else if std::fs::read(&path).ok().as_deref() == Some(&fixup[..]) {
        println!("unchanged {RESOLUTIONS_DIR}/{}.patch", pr.slug);
    } else {
        std::fs::create_dir_all(path.parent().context("no parent")?)?;
        std::fs::write(&path, &fixup)?;
        println!("recorded  {RESOLUTIONS_DIR}/{}.patch", pr.slug);
    }
    std::fs::remove_file(&state_file)?;
    println!("\nexporting again with the recorded resolutions:");
    drop(replay);
    run(root, &args)
}
