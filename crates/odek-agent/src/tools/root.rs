//! The confinement root of the file tools: when a [`ToolContext`](crate::tool::ToolContext)
//! carries one (`odek mcp` sets its start directory), every path a file tool reads or writes
//! must stay inside it — an absolute path elsewhere, a `..` that climbs out, and a symlink (at
//! any depth, dangling or not) whose target lies outside are all refused, for reads and writes
//! alike. The check is one function, [`confine_to_root`]; the use is [`RootDir`]: the checked
//! path is then opened from the root's directory handle one component at a time, never
//! following a symlink, so a component swapped for a symlink between the check and the use is
//! refused ([`OutsideRoot::Swapped`]) instead of followed out of the root.
//!
//! Not here: the lexical resolution of a model's path (`resolve_path` in `tools`), and the
//! danger classes of a write (`odek_danger::classify_write`), which still apply inside the root.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use odek_contract::regular_file::{open_regular_read_at, through_a_symlink};
use thiserror::Error;

use crate::no_follow::{EntryKind, make_dir_at, open_dir, open_dir_at, stat_at};

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
    /// A component of the checked path became a symlink before it was used (it is never
    /// followed).
    #[error(
        "refused: {path} changed while it was used (a symlink appeared on the way); only files under {root} can be used"
    )]
    Swapped { path: String, root: String },
}

/// The mode directories are made with on the way to a new file (the umask applies).
const NEW_DIRECTORY_MODE: u32 = 0o777;

/// A confinement root: its canonical path and a handle on the directory, opened once. Every
/// file a confined tool opens is reached from the handle by [`RootDir::parent_of`], so what was
/// checked by name is what is used.
#[derive(Debug)]
pub struct RootDir {
    path: PathBuf,
    handle: OwnedFd,
}

/// The directory that holds a file inside a root, as [`RootDir::parent_of`] reached it: the
/// root's own handle, or one opened on the way.
pub(crate) enum Parent<'a> {
    Root(&'a OwnedFd),
    Below(OwnedFd),
}

impl std::ops::Deref for Parent<'_> {
    type Target = OwnedFd;

    fn deref(&self) -> &OwnedFd {
        match self {
            Parent::Root(handle) => handle,
            Parent::Below(handle) => handle,
        }
    }
}

impl RootDir {
    /// The root at `path`, made canonical and opened; a root that does not exist (or is not a
    /// directory) is an error.
    pub fn open(path: &Path) -> std::io::Result<RootDir> {
        let path = std::fs::canonicalize(path)?;
        let handle = open_dir(&path)?;
        Ok(RootDir { path, handle })
    }

    /// The root's canonical path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory holding `path` — a path [`confine_to_root`] returned for this root — and
    /// its last component, reached from the root's handle one component at a time without
    /// following a symlink: a symlink on the way is [`through_a_symlink`], never followed.
    /// With `create`, missing directories are made on the way. The root itself has no parent
    /// inside the root: `EISDIR` (it is a directory).
    pub(crate) fn parent_of<'a>(&'a self, path: &'a Path, create: bool) -> std::io::Result<(Parent<'a>, &'a OsStr)> {
        let relative = path.strip_prefix(&self.path).map_err(|_| not_beneath())?;
        let mut names = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => names.push(name),
                // A checked path is canonical: anything else did not come from confine_to_root.
                _ => return Err(not_beneath()),
            }
        }
        let Some((last, directories)) = names.split_last() else {
            return Err(std::io::Error::from_raw_os_error(nix::libc::EISDIR));
        };
        let mut parent = Parent::Root(&self.handle);
        for name in directories {
            if create {
                make_dir_at(&parent, name, NEW_DIRECTORY_MODE)?;
            }
            parent = match open_dir_at(&parent, name) {
                Ok(directory) => Parent::Below(directory),
                Err(error) if swapped_out(&parent, name, &error) => return Err(through_a_symlink()),
                Err(error) => return Err(error),
            };
        }
        Ok((parent, last))
    }

    /// The regular file at `path` (checked by [`confine_to_root`]) opened for reading from the
    /// root's handle: [`open_regular_read_at`]'s guarantees, and no symlink followed anywhere.
    pub(crate) fn open_regular_read(&self, path: &Path) -> std::io::Result<std::fs::File> {
        let (parent, name) = self.parent_of(path, false)?;
        open_regular_read_at(parent.as_fd(), name)
    }
}

/// Whether a directory open of `name` failed because a symlink stood there: `ELOOP`, or the
/// `ENOTDIR` Linux gives a symlink under `O_DIRECTORY` — unless a file that is not a directory
/// stands there now (a plain `ENOTDIR`). An entry that is a directory again was swapped back.
fn swapped_out(dir: &OwnedFd, name: &OsStr, error: &std::io::Error) -> bool {
    match error.raw_os_error() {
        Some(nix::libc::ELOOP) => true,
        Some(nix::libc::ENOTDIR) => {
            !stat_at(dir, name).is_ok_and(|stat| matches!(stat.kind, EntryKind::RegularFile | EntryKind::Other))
        }
        _ => false,
    }
}

/// A path that is not beneath the root reached [`RootDir::parent_of`]: a caller's mistake,
/// refused rather than followed.
fn not_beneath() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path is not beneath the confinement root")
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
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    pub(in crate::tools) struct Tree {
        _dir: tempfile::TempDir,
        pub(in crate::tools) root: PathBuf,
        pub(in crate::tools) outside: PathBuf,
    }

    /// `<tmp>/root/{inner/file.txt}` ("in") and `<tmp>/outside/secret.txt` ("out"), canonical.
    pub(in crate::tools) fn tree() -> Tree {
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

    /// What was checked by name is what is used: a directory on the way swapped for a symlink
    /// after the check is refused by the walk from the root's handle, never followed.
    #[test]
    fn a_directory_swapped_for_a_symlink_after_the_check_is_refused_red() {
        let tree = tree();
        std::fs::write(tree.outside.join("file.txt"), "out").unwrap();
        let root = RootDir::open(&tree.root).unwrap();
        let checked = confine_to_root(&tree.root.join("inner/file.txt"), &tree.root).unwrap();
        std::fs::rename(tree.root.join("inner"), tree.root.join("moved")).unwrap();
        symlink(&tree.outside, tree.root.join("inner")).unwrap();
        let error = root.open_regular_read(&checked).unwrap_err();
        assert!(odek_contract::regular_file::is_through_a_symlink(&error), "{error}");
        let planted = confine_to_root(&tree.root.join("moved/new/planted.txt"), &tree.root).unwrap();
        std::fs::rename(tree.root.join("moved"), tree.root.join("moved-away")).unwrap();
        symlink(&tree.outside, tree.root.join("moved")).unwrap();
        assert!(root.parent_of(&planted, true).is_err());
        assert!(!tree.outside.join("new").exists(), "a directory was made outside the root");
    }

    #[test]
    fn the_walk_makes_missing_directories_and_keeps_to_the_root() {
        let tree = tree();
        let root = RootDir::open(&tree.root).unwrap();
        let path = tree.root.join("inner/a/b/new.txt");
        let (_, name) = root.parent_of(&path, true).unwrap();
        assert_eq!(name, "new.txt");
        assert!(tree.root.join("inner/a/b").is_dir());
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut root.open_regular_read(&tree.root.join("inner/file.txt")).unwrap(),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "in");
        assert_eq!(root.parent_of(&tree.root, false).err().map(|e| e.kind()), Some(std::io::ErrorKind::IsADirectory));
        assert!(root.parent_of(&tree.outside.join("secret.txt"), false).is_err());
        assert!(root.open_regular_read(&tree.root.join("inner/../inner/file.txt")).is_err());
    }

    #[test]
    fn symlink_loop_red() {
        let tree = tree();
        symlink(tree.root.join("b"), tree.root.join("a")).unwrap();
        symlink(tree.root.join("a"), tree.root.join("b")).unwrap();
        assert!(matches!(confine_to_root(&tree.root.join("a/x"), &tree.root), Err(OutsideRoot::Unresolvable { .. })));
    }
}
