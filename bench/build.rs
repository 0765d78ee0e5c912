//! Records, for the report header, the commit the benchmark binary was built from and whether the
//! measured crates (odek-mcp, odek-contract) had uncommitted changes at build time: the numbers
//! belong to that build, not to whatever the tree holds when the binary runs.

use std::process::Command;

fn main() {
    for watched in ["../.git/HEAD", "../.git/index", "../crates/odek-mcp/src", "../crates/odek-contract/src"] {
        println!("cargo:rerun-if-changed={watched}");
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg("..")
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let tree = match git(&["rev-parse", "--short", "HEAD"]) {
        None => "unknown (not built from a git checkout)".to_owned(),
        Some(commit) => match git(&["status", "--porcelain", "--", "crates/odek-mcp", "crates/odek-contract"]) {
            Some(changes) if changes.is_empty() => format!("{commit}, odek-mcp and odek-contract as committed"),
            _ => format!("{commit} plus uncommitted changes in odek-mcp or odek-contract"),
        },
    };
    println!("cargo:rustc-env=ODEK_BENCH_BUILT_FROM={tree}");
}
