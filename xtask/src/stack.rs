//! `upstream/stack.toml`: the upstream PR stack described in terms of the pin series.
//!
//! Each `[[pr]]` names the pin patches (`candle-patch/patches/NNNN-*.patch`) it consists of,
//! in the order they are applied, plus the PR's commit message. Pin patches that no PR
//! names are pin-only (e.g. the vendoring trim). `upstream-export` turns this file into
//! `upstream/series/NNNN-<slug>.patch`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::dep3;
use crate::patches::{self, PatchFile};

/// The stack file, relative to the repository root.
pub const STACK_FILE: &str = "upstream/stack.toml";

/// `upstream/stack.toml` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackFile {
    /// Header values for every PR unless the PR sets its own.
    #[serde(default)]
    pub defaults: Defaults,
    /// The PRs, in stack order (each applies on top of the ones before it).
    #[serde(rename = "pr", default)]
    pub prs: Vec<PrEntry>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    pub origin: Option<String>,
    pub forwarded: Option<String>,
    pub last_update: Option<String>,
    pub author: Option<String>,
    pub date: Option<String>,
}

/// One `[[pr]]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrEntry {
    /// File slug: `upstream/series/NNNN-<slug>.patch`, `upstream/resolutions/<slug>.patch`.
    pub slug: String,
    /// Commit subject (one line).
    pub title: String,
    /// DEP-3 `Description:`: first line is the summary, the rest the long description.
    pub description: String,
    /// Pin patches, by number (`"0003"`) or file name, applied in this order.
    pub patches: Vec<String>,
    pub origin: Option<String>,
    pub forwarded: Option<String>,
    pub last_update: Option<String>,
    /// `Name <email>`; default: the author of the PR's first pin patch.
    pub author: Option<String>,
    /// Author date (any format git accepts); default: that of the PR's first pin patch.
    pub date: Option<String>,
}

/// A validated PR of the stack.
#[derive(Clone, Debug)]
pub struct Pr {
    pub slug: String,
    pub title: String,
    pub description: String,
    pub patches: Vec<PatchFile>,
    pub origin: String,
    pub forwarded: String,
    pub last_update: String,
    pub author: Option<String>,
    pub date: Option<String>,
}

/// The validated stack plus the pin patches no PR uses.
#[derive(Clone, Debug)]
pub struct Stack {
    pub prs: Vec<Pr>,
    pub pin_only: Vec<PatchFile>,
}

impl Pr {
    /// `NNNN-<slug>.patch` for the PR at 0-based position `index`.
    pub fn file_name(&self, index: usize) -> String {
        patches::file_name(index as u32 + 1, &self.slug)
    }

    /// The commit message: title, DEP-3 `Description:` (continuation lines indented, empty
    /// lines as ` .`), `Origin:`, `Forwarded:`, `Last-Update:`.
    pub fn message(&self) -> String {
        let mut lines = self.description.trim().lines();
        let mut m = format!(
            "{}\n\nDescription: {}\n",
            self.title.trim(),
            lines.next().unwrap_or_default().trim_end()
        );
        for l in lines {
            let l = l.trim_end();
            if l.is_empty() {
                m.push_str(" .\n");
            } else {
                m.push(' ');
                m.push_str(l);
                m.push('\n');
            }
        }
        m.push_str(&format!(
            "Origin: {}\nForwarded: {}\nLast-Update: {}\n",
            self.origin, self.forwarded, self.last_update
        ));
        m
    }
}

/// Read and validate `upstream/stack.toml` against the pin series.
pub fn load(root: &Path, pin_series: &[PatchFile]) -> Result<Stack> {
    let path = root.join(STACK_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (the upstream PR stack)", path.display()))?;
    parse(&text, pin_series).with_context(|| format!("{STACK_FILE} is not valid"))
}

/// Parse and validate stack.toml text.
pub fn parse(text: &str, pin_series: &[PatchFile]) -> Result<Stack> {
    let file: StackFile = toml::from_str(text)?;
    validate(file, pin_series)
}

/// Find the pin patch a reference names: `0003`, `3`, `0003-name` or `0003-name.patch`.
fn find_patch<'a>(r: &str, pin_series: &'a [PatchFile]) -> Option<&'a PatchFile> {
    let r = r.trim();
    let stem = r.strip_suffix(".patch").unwrap_or(r);
    if let Ok(n) = stem.parse::<u32>() {
        return pin_series.iter().find(|p| p.number == n);
    }
    pin_series
        .iter()
        .find(|p| p.file_name() == r || p.file_name() == format!("{stem}.patch"))
}

fn validate(file: StackFile, pin_series: &[PatchFile]) -> Result<Stack> {
    if file.prs.is_empty() {
        bail!("no [[pr]] tables: the stack needs at least one PR");
    }
    let d = &file.defaults;
    let mut used: BTreeMap<u32, String> = BTreeMap::new();
    let mut prs = Vec::new();
    for (i, e) in file.prs.into_iter().enumerate() {
        let at = format!("[[pr]] #{} (slug `{}`)", i + 1, e.slug);
        if !patches::valid_short_name(&e.slug) {
            bail!("{at}: slug must be lower-case letters, digits, '-', '.', '_'");
        }
        if prs.iter().any(|p: &Pr| p.slug == e.slug) {
            bail!("{at}: slug used by two PRs; slugs name the patch files and must be unique");
        }
        if e.title.trim().is_empty() || e.title.trim().contains('\n') {
            bail!("{at}: title must be one non-empty line");
        }
        if e.description.trim().is_empty() {
            bail!("{at}: description is empty (DEP-3 needs one)");
        }
        if e.patches.is_empty() {
            bail!("{at}: patches = [] names no pin patch");
        }
        let mut files = Vec::new();
        for r in &e.patches {
            let p = find_patch(r, pin_series).with_context(|| {
                format!(
                    "{at}: no pin patch `{r}` in candle-patch/patches/ (have: {})",
                    pin_series
                        .iter()
                        .map(|p| format!("{:04}", p.number))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            if let Some(prev) = used.insert(p.number, e.slug.clone()) {
                bail!(
                    "{at}: pin patch {} is already in PR `{prev}`; a pin patch belongs to one PR \
                     (split it in the pin series if two PRs need parts of it)",
                    p.file_name()
                );
            }
            files.push(p.clone());
        }
        let pick = |own: Option<String>, def: &Option<String>, fallback: Option<&str>| {
            own.or_else(|| def.clone())
                .or_else(|| fallback.map(str::to_string))
        };
        let origin = pick(e.origin, &d.origin, Some("upstream-candidate")).unwrap_or_default();
        let forwarded = pick(e.forwarded, &d.forwarded, Some("no")).unwrap_or_default();
        match dep3::parse_forwarded(&forwarded) {
            Ok(dep3::Forwarded::NotNeeded) => {
                bail!("{at}: forwarded = \"not-needed\" marks a pin-only patch; leave it out of the stack instead")
            }
            Ok(_) => {}
            Err(e) => bail!("{at}: {e}"),
        }
        let last_update = pick(e.last_update, &d.last_update, None)
            .with_context(|| format!("{at}: no last_update (YYYY-MM-DD), here or in [defaults]"))?;
        if !dep3::is_iso_date(&last_update) {
            bail!("{at}: last_update = \"{last_update}\" is not YYYY-MM-DD");
        }
        prs.push(Pr {
            slug: e.slug,
            title: e.title.trim().to_string(),
            description: e.description,
            patches: files,
            origin,
            forwarded,
            last_update,
            author: pick(e.author, &d.author, None),
            date: pick(e.date, &d.date, None),
        });
    }
    let pin_only = pin_series
        .iter()
        .filter(|p| !used.contains_key(&p.number))
        .cloned()
        .collect();
    Ok(Stack { prs, pin_only })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn pin() -> Vec<PatchFile> {
        ["vendor-trim", "kernels", "backprop", "ops"]
            .iter()
            .enumerate()
            .map(|(i, s)| PatchFile {
                number: i as u32 + 1,
                short_name: s.to_string(),
                path: PathBuf::from(format!("{:04}-{s}.patch", i + 1)),
            })
            .collect()
    }

    const TWO: &str = r#"
[defaults]
last_update = "2026-11-30"

[[pr]]
slug = "candle-kernels-ln"
title = "candle-kernels: fused layer norm"
patches = ["0002"]
description = '''
Add the kernels.
Details here.

More.
'''

[[pr]]
slug = "backprop"
title = "candle-core: backprop"
patches = ["0004-ops.patch", "3"]
description = "One line."
forwarded = "https://github.com/huggingface/candle/pull/1"
last_update = "2026-12-01"
date = "2026-11-30 12:00:00 +0000"
"#;

    #[test]
    fn parses_prs_patches_and_defaults() {
        let s = parse(TWO, &pin()).unwrap();
        assert_eq!(s.prs.len(), 2);
        assert_eq!(s.prs[0].file_name(0), "0001-candle-kernels-ln.patch");
        let nums: Vec<u32> = s.prs[1].patches.iter().map(|p| p.number).collect();
        assert_eq!(nums, [4, 3], "patches apply in the listed order");
        assert_eq!(s.prs[0].origin, "upstream-candidate");
        assert_eq!(s.prs[0].forwarded, "no");
        assert_eq!(s.prs[0].last_update, "2026-11-30");
        assert_eq!(s.prs[1].last_update, "2026-12-01");
        assert_eq!(s.prs[1].date.as_deref(), Some("2026-11-30 12:00:00 +0000"));
        assert_eq!(s.prs[0].author, None);
        let pin_only: Vec<u32> = s.pin_only.iter().map(|p| p.number).collect();
        assert_eq!(pin_only, [1]);
    }

    #[test]
    fn message_has_dep3_description_and_headers() {
        let s = parse(TWO, &pin()).unwrap();
        assert_eq!(
            s.prs[0].message(),
            "candle-kernels: fused layer norm\n\nDescription: Add the kernels.\n Details here.\n .\n \
             More.\nOrigin: upstream-candidate\nForwarded: no\nLast-Update: 2026-11-30\n"
        );
        let text = format!(
            "From: a <a@b>\nSubject: [PATCH] x\n\n{}",
            s.prs[1].message()
        );
        let d = dep3::parse(&text).unwrap();
        assert_eq!(d.description, "One line.");
        assert_eq!(d.origin.as_deref(), Some("upstream-candidate"));
        assert_eq!(
            d.forwarded.as_deref(),
            Some("https://github.com/huggingface/candle/pull/1")
        );
        assert_eq!(d.last_update.as_deref(), Some("2026-12-01"));
    }

    fn err(text: &str) -> String {
        format!("{:#}", parse(text, &pin()).unwrap_err())
    }

    fn one(fields: &str) -> String {
        format!(
            "[[pr]]\nslug = \"a\"\ntitle = \"t\"\ndescription = \"d\"\nlast_update = \"2026-11-30\"\n{fields}\n"
        )
    }

    #[test]
    fn rejects_unknown_and_shared_patches() {
        let e = err(&one("patches = [\"0009\"]"));
        assert!(
            e.contains("no pin patch `0009`") && e.contains("0001, 0002"),
            "{e}"
        );
        let e = err(&one("patches = [\"0002-nope.patch\"]"));
        assert!(e.contains("no pin patch `0002-nope.patch`"), "{e}");
        let twice = format!(
            "{}\n{}",
            one("patches = [\"0002\"]"),
            one("patches = [\"0002-kernels.patch\"]").replace("slug = \"a\"", "slug = \"b\"")
        );
        let e = err(&twice);
        assert!(e.contains("0002-kernels.patch is already in PR `a`"), "{e}");
        let e = err(&one("patches = [\"0002\", \"2\"]"));
        assert!(e.contains("already in PR `a`"), "{e}");
    }

    #[test]
    fn rejects_bad_fields() {
        let e = err(&format!(
            "{}\n{}",
            one("patches = [\"2\"]"),
            one("patches = [\"3\"]")
        ));
        assert!(e.contains("slug used by two PRs"), "{e}");
        assert!(err(&one("patches = []")).contains("names no pin patch"));
        assert!(err(&one("patches = [\"2\"]\nforwarded = \"not-needed\"")).contains("pin-only"));
        assert!(err(&one("patches = [\"2\"]\nforwarded = \"maybe\"")).contains("Forwarded"));
        let bad_date = one("patches = [\"2\"]").replace("2026-11-30", "30/11/2026");
        assert!(err(&bad_date).contains("not YYYY-MM-DD"));
        let no_date = one("patches = [\"2\"]").replace("last_update = \"2026-11-30\"\n", "");
        assert!(err(&no_date).contains("no last_update"));
        let e = err(&one("patches = [\"2\"]\npatchs = [\"3\"]"));
        assert!(e.contains("unknown field `patchs`"), "{e}");
        assert!(
            err(&one("patches = [\"2\"]").replace("slug = \"a\"", "slug = \"A b\""))
                .contains("slug must be")
        );
        assert!(err("").contains("no [[pr]]"));
    }
}
