//! Running `git`, `tar` and `cargo`, with clear errors.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use anyhow::{bail, Context, Result};

/// `git -C dir ...` that ignores the user's and the system's git configuration, so that
/// the output (format-patch, am, apply) depends only on the arguments given here.
pub fn git_isolated(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir);
    c.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
    c.args([
        "-c",
        "user.name=candle-patch series",
        "-c",
        "user.email=series@invalid",
        "-c",
        "core.autocrlf=false",
        "-c",
        "core.safecrlf=false",
        "-c",
        "commit.gpgsign=false",
        "-c",
        "init.defaultBranch=series",
    ]);
    c
}

/// `git -C dir ...` in the user's repository (their config applies).
pub fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir);
    c.env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    c
}

fn describe(c: &Command) -> String {
    let mut s = c.get_program().to_string_lossy().into_owned();
    for a in c.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Run, capture, and fail with the command's stderr when it exits non-zero.
pub fn output(c: &mut Command) -> Result<Output> {
    let out = c
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{}`", describe(c)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}):\n{}{}",
            describe(c),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out)
}

/// Run and return stdout as a string.
pub fn stdout(c: &mut Command) -> Result<String> {
    let out = output(c)?;
    String::from_utf8(out.stdout).context("command output is not UTF-8")
}

/// Run, capture, do not fail on a non-zero exit.
pub fn try_output(c: &mut Command) -> Result<Output> {
    c.stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{}`", describe(c)))
}

/// Split NUL-separated output (`git ls-files -z`).
pub fn split_nul(s: &str) -> Vec<String> {
    s.split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}
