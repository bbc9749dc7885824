//! The C types of librdmacm's API (`<rdma/rdma_cma.h>`, with libibverbs' types it uses) through
//! the bindgen crate, so that applications and this library agree on every struct layout by
//! construction: none is copied by hand.

use std::{env, path::PathBuf, process::Command};

/// The C compiler's own header directory (`stddef.h`, ...), which the libclang of `make deps`
/// (PyPI's, without clang's resource headers) does not have.
fn compiler_include_dir() -> String {
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .arg("-print-file-name=include")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(out.status.success(), "{cc} -print-file-name=include failed");
    String::from_utf8(out.stdout)
        .expect("a path")
        .trim()
        .to_owned()
}

fn main() {
    println!("cargo:rerun-if-changed=src/sys.h");
    println!("cargo:rerun-if-env-changed=LIBCLANG_PATH");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindgen::Builder::default()
        .header("src/sys.h")
        .clang_arg(format!("-isystem{}", compiler_include_dir()))
        .allowlist_type("rdma_.*|ibv_.*|verbs_context|sockaddr_ib")
        .allowlist_var("RDMA_.*|RAI_.*|IBV_.*|AF_IB")
        .allowlist_function(
            "ibv_get_device_list|ibv_free_device_list|ibv_get_device_name|ibv_open_device|\
             ibv_close_device|ibv_query_device|ibv_alloc_pd|ibv_dealloc_pd|ibv_create_qp|\
             ibv_modify_qp|ibv_destroy_qp|ibv_create_cq|ibv_destroy_cq|\
             ibv_create_comp_channel|ibv_destroy_comp_channel|ibv_create_srq|ibv_destroy_srq|\
             _ibv_query_gid_table|_ibv_query_gid_ex|ibv_attach_mcast|ibv_detach_mcast|\
             ibv_query_ece|ibv_set_ece",
        )
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(true)
        .generate()
        .expect("bindgen: <rdma/rdma_cma.h> (Debian's librdmacm-dev, which make deps installs)")
        .write_to_file(out.join("sys.rs"))
        .expect("write the bindings");
    println!("cargo:rustc-link-lib=dylib=ibverbs");
}
