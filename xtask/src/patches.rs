//! The patch files in `candle-patch/patches/`: `NNNN-short-name.patch`, applied in name order.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::dep3::{self, Dep3};

#[derive(Clone, Debug)]
pub struct PatchFile {
    pub number: u32,
    /// `short-name` of `NNNN-short-name.patch`.
    pub short_name: String,
    pub path: PathBuf,
}

impl PatchFile {
    pub fn file_name(&self) -> String {
        file_name(self.number, &self.short_name)
    }
    pub fn dep3(&self) -> Result<Dep3> {
        let text = std::fs::read_to_string(&self.path)
            .with_context(|| format!("reading {}", self.path.display()))?;
        dep3::parse(&text).with_context(|| self.file_name())
    }
}

pub fn file_name(number: u32, short_name: &str) -> String {
    format!("{number:04}-{short_name}.patch")
}

/// A short name: lower-case ASCII letters, digits, `-`, `.`, `_`, starting alphanumeric.
pub fn valid_short_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_'))
}

/// Split `NNNN-short-name.patch`; `None` when the name does not follow the convention.
pub fn parse_name(name: &str) -> Option<(u32, String)> {
    let stem = name.strip_suffix(".patch")?;
    let (num, short) = stem.split_once('-')?;
    if num.len() != 4 || !num.bytes().all(|b| b.is_ascii_digit()) || !valid_short_name(short) {
        return None;
    }
    Some((num.parse().ok()?, short.to_string()))
}

/// Order a set of file names the way the series applies them; errors on bad or duplicate numbers.
pub fn order(names: &[String]) -> Result<Vec<(u32, String, String)>> {
    let mut out = Vec::new();
    for n in names {
        if !n.ends_with(".patch") {
            continue;
        }
        match parse_name(n) {
            Some((num, short)) => out.push((num, short, n.clone())),
            None => bail!(
                "patches/{n}: name must be NNNN-short-name.patch (4 digits, lower-case short name)"
            ),
        }
    }
    out.sort_by(|a, b| a.2.cmp(&b.2));
    for w in out.windows(2) {
        if w[0].0 == w[1].0 {
            bail!(
                "patches/{} and patches/{} share the number {:04}",
                w[0].2,
                w[1].2,
                w[0].0
            );
        }
    }
    if out.first().is_some_and(|f| f.0 == 0) {
        bail!("patches/{}: numbering starts at 0001", out[0].2);
    }
    Ok(out)
}

/// The series in application order (empty if the folder does not exist).
pub fn list(dir: &Path) -> Result<Vec<PatchFile>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let e = e?;
        if e.file_type()?.is_file() {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(order(&names)?
        .into_iter()
        .map(|(number, short_name, name)| PatchFile {
            number,
            short_name,
            path: dir.join(name),
        })
        .collect())
}

/// `git format-patch` flags that make the output a pure function of the commits (no commit
/// ids, signature, stat, numbering or base), shared by both series exports.
pub const FORMAT_PATCH_FLAGS: [&str; 12] = [
    "--zero-commit",
    "--no-signature",
    "--no-stat",
    "--full-index",
    "--binary",
    "--no-renames",
    "--no-numbered",
    "--no-thread",
    "--no-cover-letter",
    "--no-base",
    "--diff-algorithm=myers",
    "--subject-prefix=PATCH",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn orders_by_file_name_and_ignores_other_files() {
        let o = order(&names(&[
            "0010-z.patch",
            "0002-fused-layer-norm.patch",
            "README.md",
            "0001-vendor-trim.patch",
        ]))
        .unwrap();
        let got: Vec<&str> = o.iter().map(|x| x.2.as_str()).collect();
        assert_eq!(
            got,
            [
                "0001-vendor-trim.patch",
                "0002-fused-layer-norm.patch",
                "0010-z.patch"
            ]
        );
        assert_eq!(o[1].0, 2);
        assert_eq!(o[1].1, "fused-layer-norm");
    }

    #[test]
    fn rejects_bad_names_and_duplicates() {
        assert!(order(&names(&["1-x.patch"])).is_err());
        assert!(order(&names(&["0001-Upper.patch"])).is_err());
        assert!(order(&names(&["0001-a.patch", "0001-b.patch"])).is_err());
        assert!(order(&names(&["0000-a.patch"])).is_err());
        assert_eq!(
            parse_name("0003-cuda-ln.v2.patch"),
            Some((3, "cuda-ln.v2".to_string()))
        );
        assert_eq!(file_name(7, "x"), "0007-x.patch");
    }
}
