//! The confinement root of the file tools: when a [`ToolContext`](crate::tool::ToolContext)
//! carries one (`odek mcp` sets its start directory), every path a file tool reads or writes
//! must stay inside it — an absolute path elsewhere, a `..` that climbs out, and a symlink (at
//! any depth, dangling or not) whose target lies outside are all refused, for reads and writes
//! alike. One rule, one function: [`confine_to_root`].
//!
//! Not here: the lexical resolution of a model's path (`resolve_path` in `tools`), and the
//! danger classes of a write (`odek_danger::classify_write`), which still apply inside the root.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// Why a path was refused by [`confine_to_root`]. The texts are what the caller (another
/// program, through `odek mcp`) reads as the tool's error.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OutsideRoot {
    /// The path itself names a place outside the root (absolute elsewhere, or `..` out of it).
    #[error("refused: {path} is outside the working directory {root}; only files under it can be used")]
    Outside { path: String, root: String },
    /// A symlink on the way leads outside the root.
    #[error(
        "refused: {path} leads outside the working directory {root} through a symlink (to {target}); only files under it can be used"
    )]
    ThroughSymlink { path: String, root: String, target: String },
    /// A symlink on the way cannot be resolved (dangling, a loop, or unreadable), so where it
    /// leads cannot be checked.
    #[error(
        "refused: {path} goes through a symlink that cannot be resolved ({reason}); only files under {root} can be used"
    )]
    Unresolvable { path: String, root: String, reason: String },
}

/// Confines `path` (absolute and lexically normalised: no `.` or `..` left) to `root` (absolute
/// and canonical): returns the path with every symlink of its existing part resolved, which is
/// inside `root`, or why it is not.
///
/// The part of the path that exists is resolved by the operating system (`canonicalize`), so a
/// symlink anywhere on it — a file, a directory, nested — is followed before the check; an
/// entry that exists but cannot be resolved (a dangling symlink, a loop) is refused rather than
/// guessed at. The part that does not exist yet (a file about to be created) is appended
/// unchanged: it holds no symlink. The caller uses the returned path for the operation, so the
/// checked place is the one used.
pub fn confine_to_root(path: &Path, root: &Path) -> Result<PathBuf, OutsideRoot> {
    let shown = || path.display().to_string();
    let shown_root = || root.display().to_string();
    if !path.is_absolute() || !path.starts_with(root) {
        return Err(OutsideRoot::Outside { path: shown(), root: shown_root() });
    }
    // The common case, a path that exists: one resolution, one check.
    if let Ok(resolved) = std::fs::canonicalize(path) {
        if resolved.starts_with(root) {
            return Ok(resolved);
        }
        return Err(OutsideRoot::ThroughSymlink {
            path: shown(),
            root: shown_root(),
            target: resolved.display().to_string(),
        });
    }
    // The longest prefix that exists as an entry (a dangling symlink counts: it exists).
    let mut existing = path;
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                existing = parent;
            }
            // Not even `/` exists: nothing can be checked.
            _ => return Err(OutsideRoot::Outside { path: shown(), root: shown_root() }),
        }
    }
    let mut resolved = std::fs::canonicalize(existing).map_err(|error| OutsideRoot::Unresolvable {
        path: shown(),
        root: shown_root(),
        reason: error.to_string(),
    })?;
    if !resolved.starts_with(root) {
        return Err(OutsideRoot::ThroughSymlink {
            path: shown(),
            root: shown_root(),
            target: resolved.display().to_string(),
        });
    }
    for name in missing.iter().rev() {
        resolved.push(name);
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    struct Tree {
        _dir: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    /// `<tmp>/root/{inner/file.txt}` and `<tmp>/outside/secret.txt`, canonical.
    fn tree() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(root.join("inner")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("inner/file.txt"), "in").unwrap();
        std::fs::write(outside.join("secret.txt"), "out").unwrap();
        Tree { _dir: dir, root, outside }
    }

    #[test]
    fn paths_inside_the_root_pass_existing_or_not() {
        let tree = tree();
        let file = tree.root.join("inner/file.txt");
        assert_eq!(confine_to_root(&file, &tree.root).unwrap(), file);
        let new = tree.root.join("inner/new/deeper.txt");
        assert_eq!(confine_to_root(&new, &tree.root).unwrap(), new);
        assert_eq!(confine_to_root(&tree.root, &tree.root).unwrap(), tree.root);
        // A symlink that stays inside is fine, and resolved.
        symlink(tree.root.join("inner"), tree.root.join("alias")).unwrap();
        assert_eq!(confine_to_root(&tree.root.join("alias/file.txt"), &tree.root).unwrap(), file);
    }

    #[test]
    fn absolute_path_outside_the_root_red() {
        let tree = tree();
        let secret = tree.outside.join("secret.txt");
        let error = confine_to_root(&secret, &tree.root).unwrap_err();
        assert!(matches!(error, OutsideRoot::Outside { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            format!(
                "refused: {} is outside the working directory {}; only files under it can be used",
                secret.display(),
                tree.root.display()
            )
        );
        assert!(confine_to_root(Path::new("/etc/passwd"), &tree.root).is_err());
        assert!(confine_to_root(Path::new("relative.txt"), &tree.root).is_err());
    }

    #[test]
    fn sibling_with_the_root_as_a_name_prefix_red() {
        let tree = tree();
        let sibling = PathBuf::from(format!("{}-evil", tree.root.display()));
        std::fs::create_dir_all(&sibling).unwrap();
        assert!(confine_to_root(&sibling.join("x"), &tree.root).is_err());
    }

    #[test]
    fn dot_dot_out_of_the_root_red() {
        let tree = tree();
        // The caller normalises lexically first; what is left of `root/../outside` is outside.
        let climbed = odek_danger::normalize_lexically(&tree.root.join("inner/../../outside/secret.txt"));
        assert!(matches!(confine_to_root(&climbed, &tree.root), Err(OutsideRoot::Outside { .. })));
    }

    #[test]
    fn symlinked_file_pointing_outside_red() {
        let tree = tree();
        symlink(tree.outside.join("secret.txt"), tree.root.join("link.txt")).unwrap();
        let error = confine_to_root(&tree.root.join("link.txt"), &tree.root).unwrap_err();
        assert!(matches!(error, OutsideRoot::ThroughSymlink { .. }), "{error:?}");
    }

    #[test]
    fn symlinked_directory_pointing_outside_red() {
        let tree = tree();
        symlink(&tree.outside, tree.root.join("inner/escape")).unwrap();
        // Reading through it, and creating a new file through it: both refused.
        assert!(confine_to_root(&tree.root.join("inner/escape/secret.txt"), &tree.root).is_err());
        assert!(confine_to_root(&tree.root.join("inner/escape/new/planted.txt"), &tree.root).is_err());
    }

    #[test]
    fn dangling_symlink_to_outside_red() {
        let tree = tree();
        // Writing through a dangling link would create the file at its target.
        symlink(tree.outside.join("not-yet.txt"), tree.root.join("dangling.txt")).unwrap();
        let error = confine_to_root(&tree.root.join("dangling.txt"), &tree.root).unwrap_err();
        assert!(matches!(error, OutsideRoot::Unresolvable { .. }), "{error:?}");
    }

    #[test]
    fn symlink_loop_red() {
        let tree = tree();
        symlink(tree.root.join("b"), tree.root.join("a")).unwrap();
        symlink(tree.root.join("a"), tree.root.join("b")).unwrap();
        assert!(matches!(confine_to_root(&tree.root.join("a/x"), &tree.root), Err(OutsideRoot::Unresolvable { .. })));
    }
}
