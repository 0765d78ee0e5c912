//! Files behind the fixture's artifacts: a file of a repeated pattern of exactly the size asked
//! for, and a digest made wrong on purpose. Shared by the contract tools and `bad_artifact`.

use std::io::Write;
use std::path::Path;

/// Bytes per write when filling a file with a repeated pattern.
const PATTERN_BLOCK_BYTES: usize = 64 * 1024;

/// Writes `pattern` to `path`, or, when `size` is given, exactly `size` bytes of `pattern`
/// repeated (zero bytes if the pattern is empty), streamed so large sizes cost no memory.
pub(crate) fn write_pattern_file(path: &Path, pattern: &[u8], size: Option<u64>) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|error| format!("create {}: {error}", path.display()))?;
    let mut writer = std::io::BufWriter::new(file);
    let write_error = |error: std::io::Error| format!("write {}: {error}", path.display());
    match size {
        None => writer.write_all(pattern).map_err(write_error)?,
        Some(size) => {
            let unit: &[u8] = if pattern.is_empty() { b"\0" } else { pattern };
            // A whole number of units per block, so consecutive blocks continue the cycle.
            let block = unit.repeat((PATTERN_BLOCK_BYTES / unit.len()).max(1));
            let mut left = size;
            while left > 0 {
                let take = block.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                writer.write_all(&block[..take]).map_err(write_error)?;
                left -= take as u64;
            }
        }
    }
    writer.flush().map_err(write_error)
}

/// A different, still valid lowercase hex digest.
pub(crate) fn flip_last_hex_digit(digest: &str) -> String {
    let mut flipped = digest.to_owned();
    if let Some(last) = flipped.pop() {
        flipped.push(if last == '0' { '1' } else { '0' });
    }
    flipped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_digest_differs_and_stays_lowercase_hex() {
        let digest = "ab".repeat(32);
        let flipped = flip_last_hex_digit(&digest);
        assert_ne!(flipped, digest);
        assert_eq!(flipped.len(), 64);
        assert!(flipped.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }

    #[test]
    fn pattern_files_have_the_exact_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        write_pattern_file(&path, b"abc", Some(10)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcabcabca");
        write_pattern_file(&path, b"", Some(3)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"\0\0\0");
        write_pattern_file(&path, b"exact", None).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"exact");
    }
}
