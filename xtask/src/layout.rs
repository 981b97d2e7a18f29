//! Where things live: the repository layout and the pinned upstream revision.

use std::path::{Path, PathBuf};

/// The pinned upstream source that `candle-patch/` is built from.
#[derive(Clone, Debug)]
pub struct Pin {
    /// Full upstream commit id.
    pub rev: String,
    /// File name of the pristine archive in `../shared/upstream/`.
    pub archive_name: String,
    /// The single top folder inside that archive.
    pub top_folder: String,
    /// sha256 of the archive (from `../shared/upstream/SOURCES.md`).
    pub archive_sha256: String,
    /// Paths (relative to the upstream root) vendored into `candle-patch/`.
    pub imported: Vec<String>,
}

impl Pin {
    pub fn candle() -> Pin {
        Pin {
            rev: "671de1dbbac6542b3f005ed3847bba5add4ae3da".into(),
            archive_name: "candle-671de1dbba.tar.gz".into(),
            top_folder: "candle-671de1dbba".into(),
            archive_sha256: "15d51cda12be7c6004cc18487dcaabd855ed6c3b9069b6c8e20855f9a5d49ff5"
                .into(),
            imported: [
                "Cargo.toml",
                "LICENSE-APACHE",
                "LICENSE-MIT",
                "candle-core",
                "candle-kernels",
                "candle-nn",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        }
    }
}

/// Paths of one repository checkout.
#[derive(Clone, Debug)]
pub struct Layout {
    pub root: PathBuf,
    pub pin: Pin,
}

/// The vendored tree, relative to the repository root.
pub const VENDOR_DIR: &str = "candle-patch";
/// The patch folder, relative to `VENDOR_DIR`.
pub const PATCHES_DIR: &str = "patches";
/// The provenance file, relative to `VENDOR_DIR`.
pub const VENDOR_MD: &str = "VENDOR.md";

impl Layout {
    pub fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
            pin: Pin::candle(),
        }
    }
    pub fn vendor_dir(&self) -> PathBuf {
        self.root.join(VENDOR_DIR)
    }
    pub fn patches_dir(&self) -> PathBuf {
        self.vendor_dir().join(PATCHES_DIR)
    }
    pub fn vendor_md(&self) -> PathBuf {
        self.vendor_dir().join(VENDOR_MD)
    }
    /// `../shared/upstream/<archive>` next to the repository.
    pub fn default_archive(&self) -> PathBuf {
        self.root
            .join("..")
            .join("shared")
            .join("upstream")
            .join(&self.pin.archive_name)
    }
    /// Paths under `candle-patch/` (relative to it) that are not part of the vendored tree.
    pub fn is_series_metadata(rel: &str) -> bool {
        rel == VENDOR_MD || rel == PATCHES_DIR || rel.starts_with(&format!("{PATCHES_DIR}/"))
    }
}

pub fn default_repo_root() -> PathBuf {
    // xtask/ lives in the repository root.
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or(manifest_dir)
}
