//! The crates of the workspace, read from the root `Cargo.toml`, and the path dependencies of
//! each, read from its own.

use std::fs;
use std::path::{Path, PathBuf};

/// One member crate: its folder relative to the workspace root (`assignors/range`), its root
/// source file, and its manifest's text.
pub struct Crate {
    pub dir: String,
    pub root_file: PathBuf,
    pub manifest: String,
}

/// The workspace's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every member of the workspace (the `members` list of the root manifest, `dir/*` expanded)
/// that has a `src/lib.rs` or, failing that, a `src/main.rs`.
pub fn crates() -> Vec<Crate> {
    let root = root();
    let manifest = read(&root.join("Cargo.toml"));
    let start = manifest.find("members = [").expect("a members list") + "members = [".len();
    let end = start + manifest[start..].find(']').expect("closed members list");
    let mut dirs = Vec::new();
    for entry in manifest[start..end].split(',') {
        let entry = entry.trim().trim_matches('"');
        if entry.is_empty() {
            continue;
        }
        match entry.strip_suffix("/*") {
            Some(parent) => {
                let mut children: Vec<String> = fs::read_dir(root.join(parent))
                    .unwrap_or_else(|e| panic!("{parent}: {e}"))
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|name| root.join(parent).join(name).join("Cargo.toml").exists())
                    .map(|name| format!("{parent}/{name}"))
                    .collect();
                children.sort();
                dirs.extend(children);
            }
            None => dirs.push(entry.to_owned()),
        }
    }
    dirs.into_iter()
        .filter_map(|dir| {
            let src = root.join(&dir).join("src");
            let root_file = [src.join("lib.rs"), src.join("main.rs")]
                .into_iter()
                .find(|f| f.exists())?;
            let manifest = read(&root.join(&dir).join("Cargo.toml"));
            Some(Crate {
                dir,
                root_file,
                manifest,
            })
        })
        .collect()
}

impl Crate {
    /// The folders (relative to the workspace root) of the crates this one depends on by
    /// path, in any section: normal, build and dev dependencies alike.
    pub fn path_dependencies(&self) -> Vec<String> {
        let here = Path::new(&self.dir);
        self.manifest
            .lines()
            .filter_map(|line| {
                let at = line.find("path = \"")? + "path = \"".len();
                let path = &line[at..at + line[at..].find('"')?];
                Some(normalize(&here.join(path)))
            })
            .collect()
    }
}

/// `a/b/../c` as `a/c`.
fn normalize(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
        }
    }
    parts.join("/")
}
