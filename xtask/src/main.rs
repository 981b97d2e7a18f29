//! Repository tasks: the vendored candle patch series (`cargo series ...`) and the
//! `[patch.crates-io]` resolution check (`cargo check-patch`).

mod check_patch;
mod cmd;
mod dep3;
mod layout;
mod patches;
mod pristine;
mod resolutions;
mod series;
mod stack;
mod tree;
mod upstream;
mod upstream_export;
mod upstream_table;
mod vendor_md;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "xtask",
    about = "Repository tasks for the candle-patch workspace"
)]
struct Cli {
    /// Repository root (default: the workspace this xtask was built from).
    #[arg(long, global = true)]
    repo: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The candle-patch/patches/ series: verify, export, list.
    Series {
        #[command(subcommand)]
        command: series::SeriesCommand,
    },
    /// Check that [patch.crates-io] is used and candle resolves to candle-patch/.
    CheckPatch(check_patch::Args),
    /// Apply upstream/series/ PR by PR onto upstream candle main; fmt, clippy, tests after
    /// each PR (unless --quick).
    UpstreamCheck(upstream::CheckArgs),
    /// Produce upstream/series/ from upstream/stack.toml + the pin series + upstream/resolutions/
    /// (git am -3 onto main, one commit per PR); --check compares instead of writing.
    UpstreamExport(upstream_export::ExportArgs),
}

fn main() {
    let cli = Cli::parse();
    let repo = cli.repo.unwrap_or_else(layout::default_repo_root);
    let result: Result<bool> = match cli.command {
        Command::Series { command } => series::run(&repo, command),
        Command::CheckPatch(args) => check_patch::run(&repo, &args),
        Command::UpstreamCheck(args) => upstream::check(&repo, &args),
        Command::UpstreamExport(args) => upstream_export::run(&repo, &args),
    };
    match result {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}
