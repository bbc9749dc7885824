//! Generates the ABI declarations from the C headers with the bindgen CLI that `make deps`
//! installs, so that the userspace side has the same single definition as the kernel.

use std::{env, path::PathBuf, process::Command};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let include = manifest.join("../include");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for f in ["cepm_bindgen.h", "uapi/cepm.h"] {
        println!("cargo:rerun-if-changed={}", include.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=LIBCLANG_PATH");

    let header = include.join("cepm_bindgen.h");
    let bindgen = env::var("BINDGEN").unwrap_or_else(|_| "bindgen".into());
    let status = Command::new(&bindgen)
        .arg(&header)
        .args(["--allowlist-type", "cepm_.*"])
        .args(["--allowlist-var", "CEPM_.*"])
        .args([
            "--with-derive-default",
            "--no-layout-tests",
            "--no-prepend-enum-name",
        ])
        .arg("-o")
        .arg(out.join("sys.rs"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {bindgen} ({e}): run 'make deps'"));
    assert!(status.success(), "bindgen failed on {}", header.display());
}
