//! Materialize the pristine upstream tree (the pinned revision, imported paths only)
//! from the archive in `../shared/upstream/` or from an upstream git checkout.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cmd;
use crate::layout::Pin;

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

/// sha256 of a file, lower-case hex.
fn sha256_hex(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("reading {}", path.display()))?;
    Ok(format!("{:x}", h.finalize()))
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
    let got = sha256_hex(archive)?;
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
    let file =
        std::fs::File::open(archive).with_context(|| format!("reading {}", archive.display()))?;
    let name = archive.to_string_lossy();
    let reader: Box<dyn Read> = if name.ends_with(".gz") || name.ends_with(".tgz") {
        Box::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)))
    } else {
        Box::new(std::io::BufReader::new(file))
    };
    unpack_members(reader, pin, dest).with_context(|| archive.display().to_string())
}

/// Unpack the imported paths of `pin` from a tar stream whose entries all live under
/// `pin.top_folder/`, with that folder stripped.
fn unpack_members(reader: impl Read, pin: &Pin, dest: &Path) -> Result<()> {
    let mut tar = tar::Archive::new(reader);
    tar.set_preserve_permissions(true);
    // Files get the time of extraction, not the archive's: cargo compares the mtimes of a
    // path crate's sources with its last build, and `upstream-check` builds in a target
    // folder that outlives the tree (an older mtime would pass for an unchanged build.rs).
    tar.set_preserve_mtime(false);
    let mut seen = vec![false; pin.imported.len()];
    let mut stray: Vec<String> = Vec::new();
    let mut entries = 0usize;
    for entry in tar.entries().context("not a tar archive")? {
        let mut entry = entry.context("reading a tar entry")?;
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue; // `git archive` stores the commit id in a global header
        }
        entries += 1;
        let path = entry
            .path()
            .context("tar entry with a bad path")?
            .into_owned();
        let mut comps = path.components();
        let top = comps
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        if top.as_deref() != Some(pin.top_folder.as_str()) {
            stray.push(path.display().to_string());
            continue;
        }
        let rel: PathBuf = comps.collect();
        if rel.as_os_str().is_empty() {
            continue;
        }
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            bail!("tar entry {} leaves its folder", path.display());
        }
        let rel_s = rel.to_string_lossy().replace('\\', "/");
        let Some(i) = pin
            .imported
            .iter()
            .position(|m| rel_s == *m || rel_s.starts_with(&format!("{m}/")))
        else {
            continue;
        };
        seen[i] = true;
        let to = dest.join(&rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        entry
            .unpack(&to)
            .with_context(|| format!("unpacking {}", path.display()))?;
    }
    if entries == 0 || !stray.is_empty() {
        bail!(
            "expected a single top folder `{}/` (entries outside it: {})",
            pin.top_folder,
            stray.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        bail!("has no `{}/{}`", pin.top_folder, pin.imported[i]);
    }
    Ok(())
}

fn extract_checkout(dir: &Path, pin: &Pin, dest: &Path) -> Result<()> {
    let out = cmd::output(
        cmd::git(dir)
            .args(["archive", "--format=tar"])
            .arg(format!("--prefix={}/", pin.top_folder))
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
    unpack_members(&out.stdout[..], pin, dest)
        .with_context(|| format!("git archive {} in {}", &pin.rev, dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, path, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn pin(imported: &[&str]) -> Pin {
        let mut p = Pin::candle();
        p.top_folder = "top".into();
        p.imported = imported.iter().map(|s| s.to_string()).collect();
        p
    }

    #[test]
    fn unpacks_imported_members_only() {
        let dir = tempfile::tempdir().unwrap();
        let tar = archive(&[("top/a/x.rs", b"x"), ("top/b/y.rs", b"y"), ("top/C", b"c")]);
        unpack_members(&tar[..], &pin(&["a", "C"]), dir.path()).unwrap();
        assert_eq!(std::fs::read(dir.path().join("a/x.rs")).unwrap(), b"x");
        assert_eq!(std::fs::read(dir.path().join("C")).unwrap(), b"c");
        assert!(!dir.path().join("b").exists());
    }

    #[test]
    fn refuses_stray_entries_and_missing_members() {
        let dir = tempfile::tempdir().unwrap();
        let tar = archive(&[("top/a/x.rs", b"x"), ("other/y", b"y")]);
        let e = unpack_members(&tar[..], &pin(&["a"]), dir.path()).unwrap_err();
        assert!(format!("{e:#}").contains("other/y"), "{e:#}");
        let tar = archive(&[("top/a/x.rs", b"x")]);
        let e = unpack_members(&tar[..], &pin(&["a", "b"]), dir.path()).unwrap_err();
        assert!(format!("{e:#}").contains("has no `top/b`"), "{e:#}");
    }

    #[test]
    fn sha256_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("abc");
        std::fs::write(&f, b"abc").unwrap();
        assert_eq!(
            sha256_hex(&f).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
