use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/compatibility.cuh");
    println!("cargo:rerun-if-changed=src/cuda_utils.cuh");
    println!("cargo:rerun-if-changed=src/binary_op_macros.cuh");

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    // The fatbin is compiled while the PTX of every module is.
    let layer_norm_fatbin = Fatbin::spawn("layer_norm", &out_dir);
    remove_stale_ptx(&out_dir);
    let ptx_path = out_dir.join("ptx.rs");
    let builder = bindgen_cuda::Builder::default();
    println!("cargo:info={builder:?}");
    let bindings = builder.build_ptx().unwrap();
    bindings.write(ptx_path).unwrap();

    let fatbin = match layer_norm_fatbin {
        Some(fatbin) => format!(
            r#"Some(include_bytes!(concat!(env!("OUT_DIR"), "/{}")))"#,
            fatbin.wait()
        ),
        None => "None".to_string(),
    };
    let fatbin_rs = format!("pub const LAYER_NORM: Option<&[u8]> = {fatbin};\n");
    std::fs::write(out_dir.join("fatbin.rs"), fatbin_rs).unwrap();
}

/// bindgen_cuda compiles a module again only when its `.cu` file is newer than its PTX, not when
/// a header changed (`layer_norm_*.cuh`, `cuda_utils.cuh`): removes the PTX older than a header.
fn remove_stale_ptx(out_dir: &Path) {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let newest_header = std::fs::read_dir("src")
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cuh"))
        .filter_map(|path| modified(&path))
        .max();
    let Some(newest_header) = newest_header else {
        return;
    };
    for entry in std::fs::read_dir(out_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "ptx")
            && modified(&path).is_some_and(|ptx| ptx < newest_header)
        {
            std::fs::remove_file(path).unwrap();
        }
    }
}

/// The compute capabilities that get compiled code (SASS) in the fatbins when
/// `CANDLE_KERNELS_FATBIN_ARCHS` is not set: Ampere, Ada and Hopper. Newer GPUs JIT-compile the
/// PTX that the fatbins carry for the highest of them.
const DEFAULT_FATBIN_ARCHS: [usize; 4] = [80, 86, 89, 90];

/// An nvcc process compiling `src/{name}.cu` into a fatbin: the kernels compiled for each
/// compute capability of `CANDLE_KERNELS_FATBIN_ARCHS`, plus the PTX of the highest one, so that
/// loading the module on these GPUs does not JIT-compile its PTX (which takes tens of seconds
/// for a large module when the driver's cache is cold). The flags are those that bindgen_cuda
/// compiles the PTX with.
struct Fatbin {
    file_name: String,
    command: String,
    child: std::process::Child,
}

impl Fatbin {
    /// Starts nvcc, `None` when `CANDLE_KERNELS_FATBIN_ARCHS` is empty.
    fn spawn(name: &str, out_dir: &Path) -> Option<Self> {
        let archs = fatbin_archs();
        let ptx_arch = *archs.iter().max()?;
        let src = format!("src/{name}.cu");
        // The module and the headers it includes (layer_norm.cu, layer_norm_*.cuh).
        for entry in std::fs::read_dir("src").unwrap() {
            let file_name = entry.unwrap().file_name();
            let file_name = file_name.to_string_lossy();
            if file_name.starts_with(name)
                && (file_name.ends_with(".cu") || file_name.ends_with(".cuh"))
            {
                println!("cargo:rerun-if-changed=src/{file_name}");
            }
        }
        let file_name = format!("{name}.fatbin");
        let mut command = std::process::Command::new("nvcc");
        // Compresses the compiled code as well as the PTX (the driver decompresses it on load):
        // a fifth of the size.
        command.arg("--fatbin").args(["-Xfatbin", "-compress-all"]);
        for arch in &archs {
            command.arg(format!(
                "--generate-code=arch=compute_{arch},code=sm_{arch}"
            ));
        }
        command.arg(format!(
            "--generate-code=arch=compute_{ptx_arch},code=compute_{ptx_arch}"
        ));
        // nvcc compiles the architectures in parallel.
        command.args([
            "--threads",
            &env::var("NUM_JOBS").unwrap_or_else(|_| "0".to_string()),
        ]);
        command
            .args(["--default-stream", "per-thread"])
            .arg("-Isrc")
            .arg("-o")
            .arg(out_dir.join(&file_name));
        if let Ok(ccbin_path) = env::var("NVCC_CCBIN") {
            command
                .arg("-allow-unsupported-compiler")
                .args(["-ccbin", &ccbin_path]);
        }
        command.arg(src);
        let child = command.spawn().expect(
            "nvcc failed to start. Ensure that you have CUDA installed and that `nvcc` is in your PATH.",
        );
        Some(Self {
            file_name,
            command: format!("{command:?}"),
            child,
        })
    }

    /// Waits for nvcc, returns the fatbin's file name in `OUT_DIR`.
    fn wait(self) -> String {
        let output = self.child.wait_with_output().expect("nvcc failed to run");
        assert!(
            output.status.success(),
            "nvcc error while compiling {}:\n\n# CLI {}\n\n# stdout\n{:#}\n\n# stderr\n{:#}",
            self.file_name,
            self.command,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        self.file_name
    }
}

/// The compute capabilities to compile the fatbins for: `CANDLE_KERNELS_FATBIN_ARCHS`, a comma
/// separated list such as `80,86,89,90` (empty: no fatbins, the modules are loaded from their PTX
/// only), or by default those of `DEFAULT_FATBIN_ARCHS` that nvcc supports and
/// `CUDA_COMPUTE_CAP`, the one the PTX is compiled for.
fn fatbin_archs() -> Vec<usize> {
    println!("cargo:rerun-if-env-changed=CANDLE_KERNELS_FATBIN_ARCHS");
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    let parse = |arch: &str| -> usize {
        arch.trim().parse().unwrap_or_else(|_| {
            panic!("expected compute capabilities such as 80,86,89,90, got {arch:?}")
        })
    };
    if let Ok(archs) = env::var("CANDLE_KERNELS_FATBIN_ARCHS") {
        return archs
            .split(',')
            .filter(|arch| !arch.trim().is_empty())
            .map(parse)
            .collect();
    }
    // Cuda 11.x lacks some of the defaults: keep those that nvcc lists (sm_80, ...).
    let out = std::process::Command::new("nvcc")
        .arg("--list-gpu-code")
        .output()
        .expect(
            "`nvcc` failed. Ensure that you have CUDA installed and that `nvcc` is in your PATH.",
        );
    let out = String::from_utf8_lossy(&out.stdout);
    let supported: Vec<usize> = out
        .lines()
        .filter_map(|code| code.strip_prefix("sm_")?.parse().ok())
        .collect();
    let mut archs: Vec<usize> = DEFAULT_FATBIN_ARCHS
        .into_iter()
        .filter(|arch| supported.contains(arch))
        .collect();
    if let Ok(compute_cap) = env::var("CUDA_COMPUTE_CAP") {
        let compute_cap = parse(&compute_cap);
        if !archs.contains(&compute_cap) {
            archs.push(compute_cap);
        }
    }
    archs
}
