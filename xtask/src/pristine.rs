//! Materialize the pristine upstream tree (the pinned revision, imported paths only)
//! from the archive in `../shared/upstream/` or from an upstream git checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::cmd;
use crate::layout::Pin;
use crate::sha256;

/// Where the pristine source comes from.
#[derive(Clone, Debug)]
pub enum Upstream {
    /// A `git archive` tarball (`.tar.gz`/`.tgz`/`.tar`) with one top folder.
    Archive(PathBuf),
    /// An upstream git checkout holding the pinned revision.
    Checkout(PathBuf),
}

impl Upstream {
    pub fn from_arg(p: &Path) -> Upstream {
        if p.is_dir() {
            Upstream::Checkout(p.to_path_buf())
        } else {
            Upstream::Archive(p.to_path_buf())
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Upstream::Archive(p) => format!("archive {}", p.display()),
            Upstream::Checkout(p) => format!("git checkout {}", p.display()),
        }
    }
}

/// Extract the pristine imported paths into `dest` (which must exist and be empty).
pub fn extract(upstream: &Upstream, pin: &Pin, dest: &Path) -> Result<()> {
    match upstream {
        Upstream::Archive(archive) => extract_archive(archive, pin, dest),
        Upstream::Checkout(dir) => extract_checkout(dir, pin, dest),
    }
}

fn check_archive_checksum(archive: &Path, pin: &Pin) -> Result<()> {
    let name = archive
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name != pin.archive_name {
        eprintln!(
            "note: {} is not {}; no recorded sha256 to check, checking its top folder only",
            archive.display(),
            pin.archive_name
        );
        return Ok(());
    }
    let bytes = std::fs::read(archive).with_context(|| format!("reading {}", archive.display()))?;
    let got = sha256::hex_digest(&bytes);
    if got != pin.archive_sha256 {
        bail!(
            "{}: sha256 {got} does not match the recorded {} (SOURCES.md / VENDOR.md)",
            archive.display(),
            pin.archive_sha256
        );
    }
    Ok(())
}

fn extract_archive(archive: &Path, pin: &Pin, dest: &Path) -> Result<()> {
    if !archive.is_file() {
        bail!(
            "pristine archive {} not found (pass --upstream <archive.tar.gz | upstream checkout>)",
            archive.display()
        );
    }
    check_archive_checksum(archive, pin)?;
    let archive = archive.canonicalize()?;
    // Every entry must live under the one expected top folder.
    let listing = cmd::stdout(Command::new("tar").arg("-tf").arg(&archive))?;
    let top = format!("{}/", pin.top_folder);
    let stray: Vec<&str> = listing
        .lines()
        .filter(|l| !l.starts_with(&top) && *l != pin.top_folder)
        .collect();
    if listing.trim().is_empty() || !stray.is_empty() {
        bail!(
            "{}: expected a single top folder `{}` (entries outside it: {})",
            archive.display(),
            top,
            stray.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let members: Vec<String> = pin
        .imported
        .iter()
        .map(|p| format!("{}/{p}", pin.top_folder))
        .collect();
    for m in &members {
        if !listing
            .lines()
            .any(|l| l == m || l.starts_with(&format!("{m}/")))
        {
            bail!("{}: has no `{m}`", archive.display());
        }
    }
    cmd::output(
        Command::new("tar")
            .arg("-xf")
            .arg(&archive)
            .arg("-C")
            .arg(dest)
            .arg("--strip-components=1")
            .arg("--no-same-owner")
            .args(&members),
    )?;
    Ok(())
}

fn extract_checkout(dir: &Path, pin: &Pin, dest: &Path) -> Result<()> {
    let tar_path = dest.join(".pristine.tar");
    cmd::output(
        cmd::git(dir)
            .args(["archive", "--format=tar"])
            .arg(format!("--prefix={}/", pin.top_folder))
            .arg("-o")
            .arg(&tar_path)
            .arg(&pin.rev)
            .arg("--")
            .args(&pin.imported),
    )
    .with_context(|| {
        format!(
            "{} does not hold upstream revision {}",
            dir.display(),
            pin.rev
        )
    })?;
    let res = cmd::output(
        Command::new("tar")
            .arg("-xf")
            .arg(&tar_path)
            .arg("-C")
            .arg(dest)
            .arg("--strip-components=1")
            .arg("--no-same-owner"),
    );
    std::fs::remove_file(&tar_path)?;
    res.map(|_| ())
}
