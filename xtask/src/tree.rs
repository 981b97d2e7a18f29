//! File sets of the vendored tree and their byte-for-byte comparison.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cmd;
use crate::layout::{Layout, VENDOR_DIR};

/// Files of `candle-patch/` as the repository holds them: tracked files plus untracked,
/// not-ignored ones (a forgotten `git add`), minus the series metadata (patches/, VENDOR.md).
/// Keys are relative to `candle-patch/`.
pub struct WorkTree {
    pub files: BTreeMap<String, PathBuf>,
    pub untracked: BTreeSet<String>,
    /// Tracked but deleted from the working tree.
    pub deleted: BTreeSet<String>,
}

pub fn vendored_files(layout: &Layout) -> Result<WorkTree> {
    let root = &layout.root;
    let prefix = format!("{VENDOR_DIR}/");
    let tracked =
        cmd::stdout(cmd::git(root).args(["ls-files", "-z", "--full-name", "--", VENDOR_DIR]))?;
    let untracked = cmd::stdout(cmd::git(root).args([
        "ls-files",
        "-z",
        "--full-name",
        "--others",
        "--exclude-standard",
        "--",
        VENDOR_DIR,
    ]))?;
    let mut wt = WorkTree {
        files: BTreeMap::new(),
        untracked: BTreeSet::new(),
        deleted: BTreeSet::new(),
    };
    for (list, is_untracked) in [(tracked, false), (untracked, true)] {
        for p in cmd::split_nul(&list) {
            let Some(rel) = p.strip_prefix(&prefix) else {
                continue;
            };
            if Layout::is_series_metadata(rel) {
                continue;
            }
            let abs = root.join(&p);
            if std::fs::symlink_metadata(&abs).is_err() {
                wt.deleted.insert(rel.to_string());
                continue;
            }
            if is_untracked {
                wt.untracked.insert(rel.to_string());
            }
            wt.files.insert(rel.to_string(), abs);
        }
    }
    Ok(wt)
}

/// All files below `dir` (skipping a top-level `.git`), keyed by `/`-separated relative path.
pub fn walk(dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((d, rel)) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type()?.is_dir() {
                stack.push((e.path(), r));
            } else {
                out.insert(r, e.path());
            }
        }
    }
    Ok(out)
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Problem {
    /// Content (or symlink target) differs from what the series produces.
    Differs(String),
    /// The executable bit differs.
    Mode(String),
    /// The series produces it; candle-patch/ lacks it.
    Missing(String),
    /// Tracked by git but deleted from the working tree.
    Deleted(String),
    /// candle-patch/ has it; the series does not produce it.
    Extra(String),
    /// Not tracked by git (forgotten `git add`); reported even when its content matches.
    Untracked(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, p) = match self {
            Problem::Differs(p) => ("differs  ", p),
            Problem::Mode(p) => ("mode     ", p),
            Problem::Missing(p) => ("missing  ", p),
            Problem::Deleted(p) => ("deleted  ", p),
            Problem::Extra(p) => ("extra    ", p),
            Problem::Untracked(p) => ("untracked", p),
        };
        write!(f, "{what} {VENDOR_DIR}/{p}")
    }
}

fn is_exec(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(p)
            .map(|m| m.permissions().mode() & 0o100 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        let _ = p;
        false
    }
}

fn content(p: &Path) -> Result<Vec<u8>> {
    let m = std::fs::symlink_metadata(p)?;
    if m.file_type().is_symlink() {
        Ok(std::fs::read_link(p)?.to_string_lossy().as_bytes().to_vec())
    } else {
        std::fs::read(p).with_context(|| format!("reading {}", p.display()))
    }
}

/// Compare the tree the series produces (`expected`) with the vendored working tree.
pub fn compare(expected: &BTreeMap<String, PathBuf>, actual: &WorkTree) -> Result<Vec<Problem>> {
    let mut problems = Vec::new();
    for (rel, exp) in expected {
        match actual.files.get(rel) {
            None if actual.deleted.contains(rel) => problems.push(Problem::Deleted(rel.clone())),
            None => problems.push(Problem::Missing(rel.clone())),
            Some(act) => {
                if content(exp)? != content(act)? {
                    problems.push(Problem::Differs(rel.clone()));
                } else if is_exec(exp) != is_exec(act) {
                    problems.push(Problem::Mode(rel.clone()));
                }
            }
        }
    }
    for rel in actual.files.keys() {
        if !expected.contains_key(rel) {
            problems.push(Problem::Extra(rel.clone()));
        }
    }
    for rel in &actual.deleted {
        if !expected.contains_key(rel) {
            // Tracked, deleted, and the series does not produce it either: consistent on disk,
            // but the deletion is not committed yet.
            problems.push(Problem::Deleted(rel.clone()));
        }
    }
    for rel in &actual.untracked {
        problems.push(Problem::Untracked(rel.clone()));
    }
    problems.sort();
    Ok(problems)
}

/// Replace every file of `dest` (except `.git`) with the vendored working tree.
pub fn mirror_into(actual: &WorkTree, dest: &Path) -> Result<()> {
    for e in std::fs::read_dir(dest)? {
        let e = e?;
        if e.file_name() == ".git" {
            continue;
        }
        if e.file_type()?.is_dir() {
            std::fs::remove_dir_all(e.path())?;
        } else {
            std::fs::remove_file(e.path())?;
        }
    }
    for (rel, src) in &actual.files {
        let to = dest.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let m = std::fs::symlink_metadata(src)?;
        if m.file_type().is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(std::fs::read_link(src)?, &to)?;
        } else {
            std::fs::copy(src, &to).with_context(|| format!("copying {}", src.display()))?;
        }
    }
    Ok(())
}
