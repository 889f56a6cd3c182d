//! Compiles the TC-BPF program with clang (`-target bpf -g`: BTF for CO-RE loaders). Without
//! clang the crate still builds, and loading the probe reports how to install it.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "bpf/upf_probe.bpf.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("upf_probe.bpf.o");
    let arch_include = format!("-I/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    let status = Command::new(std::env::var("CLANG").unwrap_or_else(|_| "clang".into()))
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror", &arch_include, "-c", src, "-o"])
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
