//! The operator-only `serve` section: how `odek serve` bounds itself. The project file never
//! reaches it (`serve` is among [`super::OPERATOR_ONLY_KEYS`]). Start at [`validate_serve`].
//!
//! `max_concurrent_runs`: `≤ 0` or absent = the face's default; above [`SERVE_MAX_CONCURRENT_RUNS`]
//! it is clamped with a warning. The `--max-concurrent-runs` flag wins over it.

use serde::Deserialize;

/// The most runs `odek serve` lets run at once.
pub const SERVE_MAX_CONCURRENT_RUNS: usize = 256;

/// `serve` as written in the global file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ServeFile {
    max_concurrent_runs: Option<i64>,
}

/// The validated `serve` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServeConfig {
    /// Runs running at once (1..=256); `None`: the face's default.
    pub max_concurrent_runs: Option<usize>,
}

pub(crate) fn validate_serve(file: Option<&ServeFile>, warnings: &mut Vec<String>) -> ServeConfig {
    let max_concurrent_runs = file.and_then(|file| file.max_concurrent_runs).filter(|&runs| runs > 0).map(|runs| {
        let runs = usize::try_from(runs).unwrap_or(usize::MAX);
        if runs > SERVE_MAX_CONCURRENT_RUNS {
            warnings.push(format!(
                "serve.max_concurrent_runs {runs} exceeds the maximum {SERVE_MAX_CONCURRENT_RUNS}; clamped to \
                 {SERVE_MAX_CONCURRENT_RUNS}"
            ));
            return SERVE_MAX_CONCURRENT_RUNS;
        }
        runs
    });
    ServeConfig { max_concurrent_runs }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_concurrent_runs_defaults_when_not_positive_and_is_clamped_above_the_cap() {
        let mut warnings = Vec::new();
        let file = |runs| ServeFile { max_concurrent_runs: Some(runs) };
        assert_eq!(validate_serve(None, &mut warnings).max_concurrent_runs, None);
        assert_eq!(validate_serve(Some(&file(0)), &mut warnings).max_concurrent_runs, None);
        assert_eq!(validate_serve(Some(&file(-3)), &mut warnings).max_concurrent_runs, None);
        assert_eq!(validate_serve(Some(&file(12)), &mut warnings).max_concurrent_runs, Some(12));
        assert!(warnings.is_empty());
        assert_eq!(validate_serve(Some(&file(1000)), &mut warnings).max_concurrent_runs, Some(256));
        assert_eq!(warnings, ["serve.max_concurrent_runs 1000 exceeds the maximum 256; clamped to 256"]);
    }
}
