//! With `cuda`: compiles the pin's own `candle-kernels/src/reduce.cu` (whose `layernorm_*` kernel
//! was candle 0.9.1's fused forward, removed from our candle-kernels) to PTX for the `stock`
//! baseline, straight from the pristine upstream archive the patch series starts from.

use std::path::PathBuf;
use std::process::Command;

const ARCHIVE_ENV: &str = "LN_BENCH_PIN_ARCHIVE";
const FILES: [&str; 3] = ["reduce.cu", "cuda_utils.cuh", "compatibility.cuh"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed={ARCHIVE_ENV}");
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let archive = std::env::var_os(ARCHIVE_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../shared/upstream/candle-671de1dbba.tar.gz"));
    println!("cargo:rerun-if-changed={}", archive.display());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let src = out.join("stock-src");
    std::fs::create_dir_all(&src).unwrap();

    let file = std::fs::File::open(&archive).unwrap_or_else(|e| {
        panic!(
            "the stock baseline needs the pin's archive {} ({e}); set {ARCHIVE_ENV}",
            archive.display()
        )
    });
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut found = 0;
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().into_owned();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if FILES.contains(&name)
            && path
                .parent()
                .is_some_and(|p| p.ends_with("candle-kernels/src"))
        {
            entry.unpack(src.join(name)).unwrap();
            found += 1;
        }
    }
    assert_eq!(
        found,
        FILES.len(),
        "{}: missing {FILES:?}",
        archive.display()
    );

    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".to_string());
    let ptx = out.join("stock_reduce.ptx");
    let status = Command::new("nvcc")
        .args(["--ptx", &format!("--gpu-architecture=sm_{cap}"), "-O3"])
        .args(["--expt-relaxed-constexpr", "-std=c++17", "-o"])
        .arg(&ptx)
        .arg(src.join("reduce.cu"))
        .status()
        .expect("nvcc not found: the stock baseline needs the CUDA toolchain");
    assert!(status.success(), "nvcc failed on the pin's reduce.cu");
}
