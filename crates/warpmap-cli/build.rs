//! Embeds the source revision as `WARPMAP_COMMIT`: `git rev-parse --short=12 HEAD`, plus
//! "-dirty" when `git status --porcelain` lists anything, or "unknown" when git fails.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

fn commit() -> Option<String> {
    let hash = String::from_utf8(git(&["rev-parse", "--short=12", "HEAD"])?).ok()?;
    let hash = hash.trim();
    if hash.is_empty() {
        return None;
    }
    let dirty = git(&["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{hash}-dirty")
    } else {
        hash.to_string()
    })
}

fn main() {
    let commit = commit().unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=WARPMAP_COMMIT={commit}");
    // A path that does not exist would make cargo rerun this script on every build: name only
    // those that exist.
    let root = Path::new("../..");
    let mut watch = vec![
        root.join(".git/HEAD"),
        root.join(".git/index"),
        root.join(".git/packed-refs"),
    ];
    if let Ok(head) = std::fs::read_to_string(root.join(".git/HEAD")) {
        if let Some(r) = head.trim().strip_prefix("ref: ") {
            watch.push(root.join(".git").join(r));
        }
    }
    // Edits to tracked sources make the tree dirty without touching the index.
    for d in [
        "src",
        "kernels",
        "Cargo.toml",
        "crates/warpmap-bench/src",
        "crates/warpmap-bench/kernels",
    ] {
        watch.push(root.join(d));
    }
    watch.push(Path::new("src").to_path_buf());
    watch.push(Path::new("Cargo.toml").to_path_buf());
    for p in watch {
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}
