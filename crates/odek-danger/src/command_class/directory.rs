//! Where a line's relative paths land after its `cd`s, as an effect that composes: what one
//! `cd` does to the directory, and what a whole run of them does, so the walker can apply the
//! `cd`s of a substitution a second time without walking the substitution again.

use std::path::PathBuf;

use crate::file_write::normalize_lexically;

/// What `cd`s do to the directory relative paths land in (`None` = computed at run time).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) enum DirEffect {
    /// No `cd`.
    #[default]
    Keep,
    /// A fixed directory (the home directory, an absolute target) or lost track (`None`).
    Set(Option<PathBuf>),
    /// A relative target: joined to the current directory (the working directory when track
    /// was lost) and normalized.
    Append(PathBuf),
}

impl DirEffect {
    pub(super) fn apply(&self, directory: Option<PathBuf>) -> Option<PathBuf> {
        match self {
            DirEffect::Keep => directory,
            DirEffect::Set(directory) => directory.clone(),
            DirEffect::Append(relative) => Some(normalize_lexically(&directory.unwrap_or_default().join(relative))),
        }
    }

    /// This effect followed by `next`. Lexical normalization of a join is the same whether the
    /// first part was normalized before or not, so two appends are one.
    pub(super) fn then(self, next: DirEffect) -> DirEffect {
        match (self, next) {
            (first, DirEffect::Keep) => first,
            (_, DirEffect::Set(directory)) => DirEffect::Set(directory),
            (DirEffect::Keep, append) => append,
            (DirEffect::Set(directory), append) => DirEffect::Set(append.apply(directory)),
            (DirEffect::Append(first), DirEffect::Append(second)) => {
                DirEffect::Append(normalize_lexically(&first.join(second)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(path: &str) -> DirEffect {
        DirEffect::Append(PathBuf::from(path))
    }

    /// Applying a composed effect is applying its parts one after the other, from any start.
    #[test]
    fn composing_is_applying_in_turn() {
        let effects = [
            DirEffect::Keep,
            DirEffect::Set(None),
            DirEffect::Set(Some(PathBuf::from("/home/u"))),
            append(""),
            append("."),
            append(".."),
            append("../.."),
            append("a/../b"),
            append("sub"),
            append("/etc"),
            append("/.."),
            append("./x/./y/.."),
        ];
        let starts = [
            None,
            Some(PathBuf::new()),
            Some(PathBuf::from("/")),
            Some(PathBuf::from("/tmp/a")),
            Some(PathBuf::from("../x")),
        ];
        for first in &effects {
            for second in &effects {
                for third in &effects {
                    for start in &starts {
                        let in_turn = third.apply(second.apply(first.apply(start.clone())));
                        let composed = first.clone().then(second.clone()).then(third.clone());
                        assert_eq!(
                            composed.apply(start.clone()),
                            in_turn,
                            "{first:?} {second:?} {third:?} from {start:?}"
                        );
                        let right = first.clone().then(second.clone().then(third.clone()));
                        assert_eq!(right.apply(start.clone()), in_turn);
                    }
                }
            }
        }
    }
}
