//! The downstream proof: a crate that depends on candle 0.9.1 from crates.io, exactly as a
//! user's would, and applies our `[patch.crates-io]` (tests/downstream/). Its binary builds the
//! stock `candle_nn::layer_norm` module and checks that gradients reach the weight, the bias
//! and the input (they vanish on stock candle).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn cargo(fixture: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.args(args).current_dir(fixture).env(
        "CARGO_TARGET_DIR",
        repo_root().join("target").join("downstream"),
    );
    // Nothing of the outer build may leak into the fixture's own build.
    for var in [
        "CARGO_MANIFEST_DIR",
        "CARGO_PKG_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    cmd.output().expect("spawn cargo")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn downstream_crate_gets_the_patched_layer_norm_with_gradients() {
    let root = repo_root();
    let fixture = root.join("tests").join("downstream");

    let run = cargo(&fixture, &["run"]);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    eprintln!("--- fixture stdout ---\n{stdout}\n--- fixture stderr ---\n{stderr}");
    assert!(
        !stderr.contains("was not used in the crate graph"),
        "a [patch] entry was not used"
    );
    let lock = std::fs::read_to_string(fixture.join("Cargo.lock")).expect("fixture Cargo.lock");
    assert!(
        !lock.contains("[[patch.unused]]"),
        "fixture Cargo.lock has [[patch.unused]]"
    );
    assert!(run.status.success(), "fixture failed: {}", run.status);
    assert!(
        stdout.contains("downstream: OK"),
        "fixture did not report OK"
    );

    // candle-core and candle-nn resolve to candle-patch/, not to the registry.
    let meta = cargo(&fixture, &["metadata", "--format-version", "1"]);
    assert!(
        meta.status.success(),
        "cargo metadata: {}",
        text(&meta.stderr)
    );
    let meta = text(&meta.stdout);
    let patch = root.join("candle-patch");
    for krate in ["candle-core", "candle-nn"] {
        let manifest = patch.join(krate).join("Cargo.toml");
        let manifest = manifest.to_str().expect("utf-8 path");
        assert!(
            meta.contains(&format!("\"manifest_path\":\"{manifest}\"")),
            "{krate} does not resolve to {manifest}"
        );
        assert!(
            !meta.contains(&format!("crates.io-index#{krate}@")),
            "{krate} also resolves to the registry"
        );
    }
}
