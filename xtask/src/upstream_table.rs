//! The PR table at the top of UPSTREAM.md (`| PR | Title | Changed lines | Depends on |`): its
//! titles come from upstream/stack.toml and its line counts from the exported series, so
//! `upstream-export` rewrites them and `upstream-export --check` reports any drift.
use anyhow::{bail, Result};

pub const UPSTREAM_MD: &str = "UPSTREAM.md";

/// Added plus removed lines of a `git format-patch` file, as `git apply --numstat` counts them.
pub fn changed_lines(patch: &[u8]) -> usize {
    let text = String::from_utf8_lossy(patch);
    let Some(start) = text.find("\ndiff --git ") else {
        return 0;
    };
    let mut in_header = false;
    let mut n = 0;
    for line in text[start + 1..].lines() {
        if line.starts_with("diff --git ") {
            in_header = true;
        } else if line.starts_with("@@") {
            in_header = false;
        } else if !in_header && (line.starts_with('+') || line.starts_with('-')) {
            n += 1;
        }
    }
    n
}

/// One PR as the table shows it.
pub struct Row {
    pub title: String,
    pub lines: usize,
}

/// `text` with the table's title and line-count cells set from `rows` (PR n = `rows[n - 1]`),
/// and a line per cell that changed. Fails when the table's PR numbers are not 1..=rows.len().
pub fn update(text: &str, rows: &[Row]) -> Result<(String, Vec<String>)> {
    let mut out = String::with_capacity(text.len());
    let mut changes = vec![];
    let mut seen = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let cells: Vec<&str> = body.split(" | ").collect();
        let pr = cells
            .first()
            .and_then(|c| c.strip_prefix("| "))
            .and_then(|c| c.parse::<usize>().ok());
        let (Some(pr), 4) = (pr, cells.len()) else {
            out.push_str(line);
            continue;
        };
        seen += 1;
        if pr != seen || pr > rows.len() {
            bail!(
                "{UPSTREAM_MD}: table row `{body}`: expected PR {seen} of {}",
                rows.len()
            );
        }
        let row = &rows[pr - 1];
        if cells[1] != row.title {
            changes.push(format!("PR {pr}: title `{}` -> `{}`", cells[1], row.title));
        }
        if cells[2] != row.lines.to_string() {
            changes.push(format!(
                "PR {pr}: {} -> {} changed lines",
                cells[2], row.lines
            ));
        }
        out.push_str(&format!(
            "| {pr} | {} | {} | {}",
            row.title, row.lines, cells[3]
        ));
        out.push_str(&line[body.len()..]);
    }
    if seen != rows.len() {
        bail!(
            "{UPSTREAM_MD}: the PR table has {seen} rows, the stack {} PRs: add or remove rows",
            rows.len()
        );
    }
    Ok((out, changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "Subject: x\n\n---\n a | 2 +-\n\ndiff --git a/a b/a\nindex 1..2 100644\n\
                         --- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n ctx\n-old\n+new\n+--- added\n\
                         diff --git a/b b/b\nnew file mode 100644\n--- /dev/null\n+++ b/b\n\
                         @@ -0,0 +1,2 @@\n+b\n+\n";

    #[test]
    fn counts_hunk_lines_only() {
        assert_eq!(changed_lines(PATCH.as_bytes()), 5);
        assert_eq!(changed_lines(b"no diff"), 0);
    }

    #[test]
    fn rewrites_titles_and_counts() {
        let md = "intro | x\n| PR | Title | Changed lines | Depends on |\n|---|---|---|---|\n\
                  | 1 | old | 10 | — |\n| 2 | b | 5 | 1 |\nafter\n";
        let rows = [
            Row {
                title: "a".into(),
                lines: 12,
            },
            Row {
                title: "b".into(),
                lines: 5,
            },
        ];
        let (out, changes) = update(md, &rows).unwrap();
        assert_eq!(
            out,
            md.replace("| 1 | old | 10 | — |", "| 1 | a | 12 | — |")
        );
        assert_eq!(changes.len(), 2, "{changes:?}");
        let (again, none) = update(&out, &rows).unwrap();
        assert_eq!((again.as_str(), none.len()), (out.as_str(), 0));
        assert!(update(md, &rows[..1]).is_err());
    }
}
