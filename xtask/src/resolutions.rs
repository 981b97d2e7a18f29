//! `upstream/resolutions/`: what it takes to replay the pin patches onto upstream main.
//!
//! - `rr-cache/<id>/{preimage,postimage}`: `git rerere` records of conflict resolutions,
//!   copied into the scratch repository's `.git/rr-cache` before the replay;
//! - `<slug>.patch`: main-only adaptations of one PR that are not conflicts (e.g. match arms
//!   for variants only main has), applied after the PR's pin patches and squashed into it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

/// The folder, relative to the repository root.
pub const RESOLUTIONS_DIR: &str = "upstream/resolutions";

/// Modification time given to installed postimages.
const UNUSED: SystemTime = UNIX_EPOCH;

/// Ids of the entries of `git_dir/rr-cache` whose resolution rerere used since [`Resolutions::install`].
pub fn used_ids(git_dir: &Path) -> Result<BTreeSet<String>> {
    let mut ids = BTreeSet::new();
    let dir = git_dir.join("rr-cache");
    if dir.is_dir() {
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            let post = e.path().join("postimage");
            if let Ok(m) = std::fs::metadata(&post).and_then(|m| m.modified()) {
                if m > UNUSED + Duration::from_secs(86_400) {
                    ids.insert(e.file_name().to_string_lossy().into_owned());
                }
            }
        }
    }
    Ok(ids)
}

pub struct Resolutions {
    dir: PathBuf,
}

impl Resolutions {
    pub fn new(root: &Path) -> Resolutions {
        Resolutions {
            dir: root.join(RESOLUTIONS_DIR),
        }
    }

    /// The recorded adaptation of PR `slug` (may not exist).
    pub fn fixup(&self, slug: &str) -> PathBuf {
        self.dir.join(format!("{slug}.patch"))
    }

    fn rr_cache(&self) -> PathBuf {
        self.dir.join("rr-cache")
    }

    /// Ids of the recorded conflict resolutions.
    pub fn rerere_ids(&self) -> Result<BTreeSet<String>> {
        let mut ids = BTreeSet::new();
        let dir = self.rr_cache();
        if dir.is_dir() {
            for e in std::fs::read_dir(&dir)? {
                let e = e?;
                if e.file_type()?.is_dir() {
                    ids.insert(e.file_name().to_string_lossy().into_owned());
                }
            }
        }
        Ok(ids)
    }

    /// Copy the recorded resolutions into `git_dir/rr-cache`, their postimages dated
    /// [`UNUSED`] (rerere touches the postimage of a resolution it uses: see [`used_ids`]).
    pub fn install(&self, git_dir: &Path) -> Result<()> {
        let to = git_dir.join("rr-cache");
        copy_entries(&self.rr_cache(), &to)?;
        for id in self.rerere_ids()? {
            let post = std::fs::File::options()
                .write(true)
                .open(to.join(&id).join("postimage"))?;
            post.set_modified(UNUSED)?;
        }
        Ok(())
    }

    /// Copy the resolved entries of `git_dir/rr-cache` (those with a postimage) into the
    /// repository; returns the ids that are new there.
    pub fn save(&self, git_dir: &Path) -> Result<Vec<String>> {
        let before = self.rerere_ids()?;
        copy_entries(&git_dir.join("rr-cache"), &self.rr_cache())?;
        Ok(self
            .rerere_ids()?
            .into_iter()
            .filter(|id| !before.contains(id))
            .collect())
    }
}

/// Copy `preimage*`/`postimage*` of every entry of `from` that has a postimage.
fn copy_entries(from: &Path, to: &Path) -> Result<()> {
    if !from.is_dir() {
        return Ok(());
    }
    for e in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        if !e.file_type()?.is_dir() || !e.path().join("postimage").is_file() {
            continue;
        }
        let dest = to.join(e.file_name());
        std::fs::create_dir_all(&dest)?;
        for f in std::fs::read_dir(e.path())? {
            let f = f?;
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with("preimage") || name.starts_with("postimage") {
                std::fs::copy(f.path(), dest.join(&name))
                    .with_context(|| format!("copying {}", f.path().display()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_resolved_entries_only() {
        let tmp = tempfile::tempdir().unwrap();
        let git = tmp.path().join("git");
        for (id, post) in [("aa", true), ("bb", false)] {
            let d = git.join("rr-cache").join(id);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("preimage"), "pre").unwrap();
            std::fs::write(d.join("thisimage"), "tmp").unwrap();
            if post {
                std::fs::write(d.join("postimage"), "post").unwrap();
            }
        }
        let r = Resolutions {
            dir: tmp.path().join("res"),
        };
        assert_eq!(r.save(&git).unwrap(), ["aa"]);
        assert!(r.dir.join("rr-cache/aa/postimage").is_file());
        assert!(!r.dir.join("rr-cache/aa/thisimage").exists());
        assert!(!r.dir.join("rr-cache/bb").exists());
        assert!(
            r.save(&git).unwrap().is_empty(),
            "nothing new the second time"
        );
        let git2 = tmp.path().join("git2");
        r.install(&git2).unwrap();
        assert!(
            used_ids(&git2).unwrap().is_empty(),
            "installed entries count as unused"
        );
        let post = std::fs::File::options()
            .write(true)
            .open(git2.join("rr-cache/aa/postimage"))
            .unwrap();
        post.set_modified(std::time::SystemTime::now()).unwrap();
        assert_eq!(
            used_ids(&git2).unwrap().into_iter().collect::<Vec<_>>(),
            ["aa"]
        );
    }
}
