//! A temporary directory removed on drop (no external crate).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};

pub struct TempDir {
    path: PathBuf,
    keep: bool,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl TempDir {
    pub fn new(prefix: &str) -> Result<TempDir> {
        let base = std::env::temp_dir();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::SeqCst);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let path = base.join(format!("{prefix}-{}-{n}-{nanos}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    let keep = std::env::var_os("XTASK_KEEP_TMP").is_some();
                    if keep {
                        eprintln!("note: keeping temporary directory {}", path.display());
                    }
                    return Ok(TempDir { path, keep });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
