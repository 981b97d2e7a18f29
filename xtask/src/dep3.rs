//! DEP-3 patch headers (https://dep-team.pages.debian.net/deps/dep3/) carried in the
//! commit message of a `git format-patch` file.

use anyhow::{bail, Result};

/// The fields we use, parsed from one patch file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dep3 {
    /// Mail `Subject:` without the `[PATCH ...]` prefix.
    pub subject: String,
    /// `Description:` if given, else the subject plus the body text before the headers.
    pub description: String,
    pub origin: Option<String>,
    pub forwarded: Option<String>,
    pub applied_upstream: Option<String>,
    pub last_update: Option<String>,
    /// Mail `Date:` header.
    pub date: Option<String>,
    /// Mail `From:` header (the author).
    pub author: Option<String>,
}

/// Keys recognised as DEP-3 headers in the message body.
const DEP3_KEYS: &[&str] = &[
    "Description",
    "Subject",
    "Origin",
    "Bug",
    "Forwarded",
    "Author",
    "From",
    "Reviewed-by",
    "Acked-by",
    "Last-Update",
    "Applied-Upstream",
];

fn header_key(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    let known = DEP3_KEYS.iter().any(|d| d.eq_ignore_ascii_case(k)) || k.starts_with("Bug-");
    known.then(|| (k, v.trim()))
}

fn strip_patch_prefix(subject: &str) -> &str {
    let s = subject.trim();
    if s.starts_with('[') {
        if let Some(end) = s.find(']') {
            if s[1..end].contains("PATCH") {
                return s[end + 1..].trim_start();
            }
        }
    }
    s
}

/// Parse a `git format-patch` file.
pub fn parse(text: &str) -> Result<Dep3> {
    let mut lines = text.lines().peekable();
    let mut d = Dep3::default();
    // Mail headers, up to the first blank line (continuation lines start with whitespace).
    let mut mail: Vec<(String, String)> = Vec::new();
    for line in lines.by_ref() {
        if line.is_empty() {
            break;
        }
        if line.starts_with(' ') || line.starts_with('\t') {
            if let Some(last) = mail.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            mail.push((k.to_string(), v.trim().to_string()));
        }
    }
    for (k, v) in &mail {
        match k.as_str() {
            "Subject" => d.subject = strip_patch_prefix(v).to_string(),
            "Date" => d.date = Some(v.clone()),
            "From" => d.author = Some(v.clone()),
            _ => {}
        }
    }
    if d.subject.is_empty() {
        bail!("no Subject: mail header (is this `git format-patch` output?)");
    }
    // Commit message body, up to the `---` separator or the first diff.
    let mut free_text: Vec<String> = Vec::new();
    let mut explicit_description: Option<String> = None;
    let mut in_headers = false;
    let mut last_key: Option<String> = None;
    for line in lines {
        if line == "---" || line.starts_with("diff --git ") {
            break;
        }
        if in_headers && (line.starts_with(' ') || line.starts_with('\t')) {
            if let Some(k) = &last_key {
                let cont = line.trim();
                let cont = if cont == "." { "" } else { cont };
                let target = match k.as_str() {
                    "description" | "subject" => explicit_description.as_mut(),
                    _ => None,
                };
                if let Some(t) = target {
                    t.push('\n');
                    t.push_str(cont);
                }
            }
            continue;
        }
        if let Some((k, v)) = header_key(line) {
            in_headers = true;
            let key = k.to_ascii_lowercase();
            let v = v.to_string();
            match key.as_str() {
                "description" | "subject" => explicit_description = Some(v),
                "origin" => d.origin = Some(v),
                "forwarded" => d.forwarded = Some(v),
                "applied-upstream" => d.applied_upstream = Some(v),
                "last-update" => d.last_update = Some(v),
                _ => {}
            }
            last_key = Some(key);
            continue;
        }
        last_key = None;
        if !in_headers {
            free_text.push(line.to_string());
        }
    }
    d.description = match explicit_description {
        Some(desc) => desc,
        None => {
            let body = free_text.join("\n");
            let body = body.trim();
            if body.is_empty() {
                d.subject.clone()
            } else {
                format!("{}\n\n{body}", d.subject)
            }
        }
    };
    Ok(d)
}

/// What a `Forwarded:` value says about the patch's upstream intent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Forwarded {
    /// Local-only: never goes upstream.
    NotNeeded,
    /// Meant for upstream, not yet sent.
    No,
    /// Sent upstream (PR / mailing list URL).
    Url(String),
    /// `yes` without a URL (allowed by DEP-3, discouraged).
    Yes,
}

pub fn parse_forwarded(v: &str) -> Result<Forwarded> {
    let v = v.trim();
    Ok(match v {
        "not-needed" => Forwarded::NotNeeded,
        "no" => Forwarded::No,
        "yes" => Forwarded::Yes,
        _ if v.starts_with("http://") || v.starts_with("https://") => Forwarded::Url(v.to_string()),
        _ => bail!("Forwarded: `{v}` is not one of no, not-needed, <URL>"),
    })
}

impl Dep3 {
    /// Problems that make the patch's headers unusable (empty when fine).
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.description.trim().is_empty() {
            p.push("no Description (or Subject/body)".to_string());
        }
        match &self.origin {
            None => p.push("no Origin: header".into()),
            Some(o) => {
                let kind = o.split(',').next().unwrap_or("").trim();
                if !["vendor", "upstream", "backport", "other"].contains(&kind) {
                    p.push(format!(
                        "Origin: `{o}` should start with vendor, upstream, backport or other"
                    ));
                }
            }
        }
        match &self.forwarded {
            None => p.push("no Forwarded: header".into()),
            Some(f) => {
                if let Err(e) = parse_forwarded(f) {
                    p.push(e.to_string());
                }
            }
        }
        match &self.last_update {
            None => p.push("no Last-Update: header".into()),
            Some(d) if !is_iso_date(d) => p.push(format!("Last-Update: `{d}` is not YYYY-MM-DD")),
            _ => {}
        }
        p
    }

    /// "Meant for upstream" column of the VENDOR.md table.
    pub fn upstream_intent(&self) -> String {
        if let Some(a) = &self.applied_upstream {
            return format!("yes (applied upstream: {a})");
        }
        match self.forwarded.as_deref().map(parse_forwarded) {
            Some(Ok(Forwarded::NotNeeded)) => "no (local only)".into(),
            Some(Ok(Forwarded::No)) => "yes (not yet forwarded)".into(),
            Some(Ok(Forwarded::Yes)) | Some(Ok(Forwarded::Url(_))) => "yes (forwarded)".into(),
            _ => "?".into(),
        }
    }
}

pub fn is_iso_date(d: &str) -> bool {
    let b = d.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// The commit message of a new patch: subject, body, then the DEP-3 headers.
pub fn new_message(description: &str, origin: &str, forwarded: &str, last_update: &str) -> String {
    let description = description.trim();
    let (subject, body) = match description.split_once('\n') {
        Some((s, rest)) => (s.trim(), rest.trim()),
        None => (description, ""),
    };
    let mut m = format!("{subject}\n\n");
    if !body.is_empty() {
        m.push_str(body);
        m.push_str("\n\n");
    }
    m.push_str(&format!(
        "Origin: {origin}\nForwarded: {forwarded}\nLast-Update: {last_update}\n"
    ));
    m
}

/// Replace (or add) the `Last-Update:` header of a commit message.
pub fn set_last_update(message: &str, date: &str) -> String {
    let mut found = false;
    let mut out: Vec<String> = message
        .lines()
        .map(|l| {
            if !found && l.to_ascii_lowercase().starts_with("last-update:") {
                found = true;
                format!("Last-Update: {date}")
            } else {
                l.to_string()
            }
        })
        .collect();
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    if !found {
        out.push(format!("Last-Update: {date}"));
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Jane Dev <jane@example.com>
Date: Mon, 30 Nov 2026 06:33:20 +0000
Subject: [PATCH] vendoring-only: trim the upstream workspace to candle-core
 and candle-nn

Absent sibling crates resolve from crates.io.
Local-only.

Origin: vendor
Forwarded: not-needed
Last-Update: 2026-11-30
---
 Cargo.toml | 7 -------
diff --git a/Cargo.toml b/Cargo.toml
";

    #[test]
    fn parses_format_patch_with_dep3_in_body() {
        let d = parse(PATCH).unwrap();
        assert_eq!(
            d.subject,
            "vendoring-only: trim the upstream workspace to candle-core and candle-nn"
        );
        assert_eq!(d.origin.as_deref(), Some("vendor"));
        assert_eq!(d.forwarded.as_deref(), Some("not-needed"));
        assert_eq!(d.last_update.as_deref(), Some("2026-11-30"));
        assert_eq!(d.author.as_deref(), Some("Jane Dev <jane@example.com>"));
        assert!(d.description.starts_with("vendoring-only: trim"));
        assert!(d.description.contains("Absent sibling crates"));
        assert!(d.problems().is_empty(), "{:?}", d.problems());
        assert_eq!(d.upstream_intent(), "no (local only)");
    }

    #[test]
    fn explicit_description_and_url() {
        let p = "From: A <a@b>\nSubject: [PATCH 2/3] fused layer norm\n\nDescription: Fused LayerNorm kernels\n for CUDA and CPU.\nOrigin: vendor\nForwarded: https://github.com/huggingface/candle/pull/1\nLast-Update: 2026-12-01\n---\n";
        let d = parse(p).unwrap();
        assert_eq!(d.subject, "fused layer norm");
        assert_eq!(d.description, "Fused LayerNorm kernels\nfor CUDA and CPU.");
        assert_eq!(
            parse_forwarded(d.forwarded.as_deref().unwrap()).unwrap(),
            Forwarded::Url("https://github.com/huggingface/candle/pull/1".into())
        );
        assert_eq!(d.upstream_intent(), "yes (forwarded)");
    }

    #[test]
    fn missing_and_bad_headers_are_problems() {
        let p = "From: A <a@b>\nSubject: [PATCH] x\n\nOrigin: mine\nForwarded: maybe\nLast-Update: 30/11/2026\n---\n";
        let probs = parse(p).unwrap().problems();
        assert_eq!(probs.len(), 3, "{probs:?}");
        let p = "From: A <a@b>\nSubject: [PATCH] x\n\nbody only\n---\n";
        assert_eq!(parse(p).unwrap().problems().len(), 3);
    }

    #[test]
    fn message_round_trip() {
        let m = new_message(
            "short summary\n\nlonger text\nmore",
            "vendor",
            "no",
            "2026-11-30",
        );
        assert_eq!(m, "short summary\n\nlonger text\nmore\n\nOrigin: vendor\nForwarded: no\nLast-Update: 2026-11-30\n");
        let m2 = set_last_update(&m, "2026-12-24");
        assert!(m2.ends_with("Forwarded: no\nLast-Update: 2026-12-24\n"));
        assert_eq!(
            set_last_update("s\n\nb\n", "2026-01-02"),
            "s\n\nb\nLast-Update: 2026-01-02\n"
        );
        assert!(is_iso_date("2026-11-30") && !is_iso_date("2026-1-30"));
    }
}
