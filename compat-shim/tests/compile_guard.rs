//! Feature `kernel` against stock crates.io candle (no [patch]) must not compile, and the error
//! must say how to apply the patch. Builds `tests/fixtures/unpatched-kernel` (its own workspace)
//! with `cargo check` into `<repo>/target/fixtures`. The first run downloads and checks stock
//! candle-core/candle-nn 0.9.1 (a few minutes on 2 cores); later runs take seconds.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn kernel_feature_on_unpatched_candle_fails_to_compile_with_instructions() {
    let shim = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let repo = shim.parent().expect("repo root");
    let fixture = shim.join("tests/fixtures/unpatched-kernel");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .arg("check")
        .arg("--manifest-path")
        .arg(fixture.join("Cargo.toml"))
        .arg("--color=never")
        .env("CARGO_TARGET_DIR", repo.join("target/fixtures"))
        // Do not inherit the outer build's flags/features meant for this workspace.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .output()
        .expect("run cargo check on the fixture");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "fixture unexpectedly compiled:\n{log}"
    );
    for needle in [
        "error[E0277]: feature \"kernel\" of candle-layer-norm-compat needs the patched candle-nn",
        "[patch.crates-io]",
        "candle-nn = { path = \"<candle-layer-norm-compat repo>/candle-patch/candle-nn\" }",
        "or drop feature \"kernel\"",
    ] {
        assert!(
            log.contains(needle),
            "missing {needle:?} in cargo output:\n{log}"
        );
    }
    // Exactly one error, from the shim's guard (stock candle itself must have compiled).
    assert!(
        log.contains("could not compile `candle-layer-norm-compat` (lib) due to 1 previous error"),
        "expected exactly one error, in the shim:\n{log}"
    );
}
