//! Compiles the TC-BPF programs with clang (`-target bpf -g`: BTF for CO-RE loaders): the probe,
//! and a program the tests attach beside it. Without clang the crate still builds, and loading
//! the probe reports how to install it.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    // The target's architecture (not the build host's): the program's lock release depends on it.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| std::env::consts::ARCH.into());
    let arch_include = format!("-I/usr/include/{arch}-linux-gnu");
    let arch_define = format!("-D__TARGET_ARCH_{}", if arch == "x86_64" { "x86" } else { &arch });
    println!("cargo:rustc-check-cfg=cfg(probe_object)");
    for name in ["upf_probe", "test_drop"] {
        let src = format!("bpf/{name}.bpf.c");
        println!("cargo:rerun-if-changed={src}");
        let status = Command::new(std::env::var("CLANG").unwrap_or_else(|_| "clang".into()))
            .args(["-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror", &arch_include, &arch_define, "-c"])
            .arg(&src)
            .arg("-o")
            .arg(out_dir.join(format!("{name}.bpf.o")))
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!("clang failed to compile {src} ({s})"),
            Err(e) => {
                println!("cargo:warning=clang not found ({e}): `scout probe` will be unavailable (apt-get install clang libbpf-dev)");
                return;
            }
        }
    }
    println!("cargo:rustc-cfg=probe_object");
}
