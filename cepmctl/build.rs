//! Generates the declarations of the kernel's user MAD interface (`<rdma/ib_user_mad.h>`, used
//! by `src/umad.rs`) and of the libibverbs shim (`csrc/`, used by `src/verbs.rs`) with the
//! bindgen CLI that `make deps` installs, and compiles the shim.

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=LIBCLANG_PATH");
    let bindgen = env::var("BINDGEN").unwrap_or_else(|_| "bindgen".into());
    umad(&bindgen, &out);
    verbs_shim(&bindgen, &manifest, &out);
}

/// `struct ib_user_mad_hdr`, `struct ib_user_mad_reg_req` and the two ioctl numbers `src/umad.rs`
/// needs, as constants because bindgen cannot expand the `_IOWR()` macros itself.
fn umad(bindgen: &str, out: &Path) {
    let wrapper = out.join("umad_wrapper.h");
    std::fs::write(
        &wrapper,
        "#include <rdma/ib_user_mad.h>\n\
         const unsigned int CEPM_UMAD_REGISTER_AGENT = IB_USER_MAD_REGISTER_AGENT;\n\
         const unsigned int CEPM_UMAD_ENABLE_PKEY = IB_USER_MAD_ENABLE_PKEY;\n",
    )
    .unwrap();
    let status = Command::new(bindgen)
        .arg(&wrapper)
        .args(["--allowlist-type", "ib_user_mad_hdr|ib_user_mad_reg_req"])
        .args(["--allowlist-var", "CEPM_UMAD_.*"])
        .args(["--with-derive-default", "--no-layout-tests"])
        .arg("-o")
        .arg(out.join("umad_sys.rs"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {bindgen} ({e}): run 'make deps'"));
    assert!(status.success(), "bindgen failed on {}", wrapper.display());
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
