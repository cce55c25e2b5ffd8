//! The targets link four plugin crates as libraries (`llm-deepseek`, `acp`, `sdk`, `mcp`), and
//! each exports abi_stable's root-module symbol for the host's `dlopen`. Nothing in the fuzz
//! binaries looks that symbol up, so the linker may keep any one of the four definitions.

fn main() {
    println!("cargo:rustc-link-arg=-Wl,--allow-multiple-definition");
}
