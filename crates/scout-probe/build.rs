//! Compiles the TC-BPF program with clang (`-target bpf -g`: BTF for CO-RE loaders). Without
//! clang the crate still builds, and loading the probe reports how to install it.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "bpf/upf_probe.bpf.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("upf_probe.bpf.o");
    // The target's architecture (not the build host's): the program's lock release depends on it.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| std::env::consts::ARCH.into());
    let arch_include = format!("-I/usr/include/{arch}-linux-gnu");
    let arch_define = format!("-D__TARGET_ARCH_{}", if arch == "x86_64" { "x86" } else { &arch });
    let status = Command::new(std::env::var("CLANG").unwrap_or_else(|_| "clang".into()))
        .args([
            "-O2",
            "-g",
            "-target",
            "bpf",
            "-mcpu=v3",
            "-Wall",
            "-Werror",
            &arch_include,
            &arch_define,
            "-c",
            src,
            "-o",
        ])
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => println!("cargo:rustc-cfg=probe_object"),
        Ok(s) => panic!("clang failed to compile {src} ({s})"),
        Err(e) => {
            println!("cargo:warning=clang not found ({e}): `scout probe` will be unavailable (apt-get install clang libbpf-dev)");
        }
    }
    println!("cargo:rustc-check-cfg=cfg(probe_object)");
}
