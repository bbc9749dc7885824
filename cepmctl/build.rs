//! Generates the ABI declarations from the C headers with the bindgen CLI that `make deps`
//! installs, so that the userspace side has the same single definition as the kernel.

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let include = manifest.join("../include");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let wrapper = out.join("wrapper.h");
    std::fs::write(
        &wrapper,
        format!(
            "#include \"{}\"\n\
             #include <rdma/ib_user_mad.h>\n\
             const unsigned int CEPM_UMAD_REGISTER_AGENT = IB_USER_MAD_REGISTER_AGENT;\n\
             const unsigned int CEPM_UMAD_ENABLE_PKEY = IB_USER_MAD_ENABLE_PKEY;\n",
            include.join("cepm_bindgen.h").display()
        ),
    )
    .unwrap();
    for f in ["cepm_bindgen.h", "uapi/cepm.h"] {
        println!("cargo:rerun-if-changed={}", include.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=LIBCLANG_PATH");

    let bindgen = env::var("BINDGEN").unwrap_or_else(|_| "bindgen".into());
    let status = Command::new(&bindgen)
        .arg(&wrapper)
        .args([
            "--allowlist-type",
            "cepm_.*|ib_user_mad_hdr|ib_user_mad_reg_req",
        ])
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
    assert!(status.success(), "bindgen failed on {}", wrapper.display());

    verbs_shim(&bindgen, &manifest, &out);
}

/// The libibverbs shim (`csrc/verbs_shim.{h,c}`, used by `src/verbs.rs`): compiled with the `cc`
/// crate and linked with `-libverbs` (Debian's `libibverbs-dev`, installed by `make deps`); its
/// Rust declarations are generated from the header, which is self-contained so that bindgen
/// needs neither libibverbs' headers nor the compiler's.
fn verbs_shim(bindgen: &str, manifest: &Path, out: &Path) {
    let header = manifest.join("csrc/verbs_shim.h");
    let source = manifest.join("csrc/verbs_shim.c");
    for f in [&header, &source] {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let status = Command::new(bindgen)
        .arg(&header)
        .args(["--allowlist-function", "cepm_verbs_.*"])
        .args(["--allowlist-type", "cepm_verbs_.*"])
        .args(["--allowlist-var", "CEPM_VERBS_.*"])
        .args(["--with-derive-default", "--no-layout-tests"])
        .arg("-o")
        .arg(out.join("verbs_sys.rs"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {bindgen} ({e}): run 'make deps'"));
    assert!(status.success(), "bindgen failed on {}", header.display());

    cc::Build::new()
        .file(&source)
        .include(manifest.join("csrc"))
        .flag("-Wall")
        .flag("-Wextra")
        .warnings_into_errors(true)
        .compile("cepm_verbs_shim");
    println!("cargo:rustc-link-lib=dylib=ibverbs");
}
