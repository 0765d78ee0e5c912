//! The `tools` filter (spec `config.md` §8, §9, §10): which registered tools — built-in names or
//! exposed MCP names — the model is offered. Start at [`tool_allowed`].
//!
//! Layering: `enabled` (the whitelist) is replaced by the highest layer that sets it — the
//! global file (a project may not set it, §9), `ODEK_TOOLS_ENABLED`, then `--tool`. `disabled`
//! only grows: the global list, the project's additions, `ODEK_TOOLS_DISABLED` and `--no-tool`
//! are all merged, so no layer can re-enable a tool a lower layer disabled. Unknown names need no
//! special case: a name no tool has matches nothing.

use serde::Deserialize;

use super::dangerous::non_blank;

/// `tools` as written in one file (or in a profile).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ToolsFile {
    enabled: Option<Vec<String>>,
    disabled: Option<Vec<String>>,
}

/// The merged tool filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolsConfig {
    /// The whitelist: `None` = every tool; `Some([])` = no tools.
    pub enabled: Option<Vec<String>>,
    /// The blacklist; wins over the whitelist.
    pub disabled: Vec<String>,
}

impl ToolsConfig {
    /// One file's (or profile's) `tools` on its own. Blank names are dropped; an `enabled`
    /// list that is present stays a whitelist even when it ends up empty.
    pub(crate) fn from_file(file: &ToolsFile) -> Self {
        ToolsConfig {
            enabled: file.enabled.as_deref().map(|names| non_blank(Some(names))),
            disabled: non_blank(file.disabled.as_deref()),
        }
    }

    /// Whether the filter lets `name` through (no CLI flags on top: they are folded in by
    /// [`super::resolve_effective`]).
    pub fn allows(&self, name: &str) -> bool {
        tool_allowed(name, self, &[], &[])
    }

    /// Adds names to `disabled`, keeping it free of duplicates.
    pub(crate) fn disable(&mut self, names: &[String]) {
        for name in names {
            if !name.trim().is_empty() && !self.disabled.contains(name) {
                self.disabled.push(name.clone());
            }
        }
    }

    /// Replaces the whitelist when a higher layer sets one.
    pub(crate) fn replace_enabled(&mut self, names: Option<&[String]>) {
        if let Some(names) = names {
            self.enabled = Some(non_blank(Some(names)));
        }
    }
}

/// Merges the global and project `tools`: the project's `enabled` was already stripped (§9),
/// so the project can only add to `disabled`.
pub(crate) fn merge_tools(global: Option<&ToolsFile>, project: Option<&ToolsFile>) -> ToolsConfig {
    let mut tools = global.map(ToolsConfig::from_file).unwrap_or_default();
    if let Some(project) = project {
        tools.disable(&ToolsConfig::from_file(project).disabled);
    }
    tools
}

/// The §8/§10 filter for one tool: `--tool` names (when any) are the whitelist of the highest
/// layer, otherwise `tools.enabled` (absent = all, `[]` = none); a name in `tools.disabled` or
/// among the `--no-tool` names is always refused.
pub fn tool_allowed(name: &str, tools: &ToolsConfig, cli_enabled: &[String], cli_disabled: &[String]) -> bool {
    let listed = |names: &[String]| names.iter().any(|listed| listed == name);
    let whitelisted =
        if cli_enabled.is_empty() { tools.enabled.as_deref().is_none_or(listed) } else { listed(cli_enabled) };
    whitelisted && !listed(&tools.disabled) && !listed(cli_disabled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn whitelist_blacklist_and_flags() {
        let all = ToolsConfig::default();
        assert!(tool_allowed("shell", &all, &[], &[]));
        assert!(!tool_allowed("shell", &all, &[], &names(&["shell"])));
        assert!(!tool_allowed("shell", &all, &names(&["read_file"]), &[]));

        let none = ToolsConfig { enabled: Some(Vec::new()), disabled: Vec::new() };
        assert!(!none.allows("read_file"));
        assert!(tool_allowed("read_file", &none, &names(&["read_file"]), &[]));

        let some = ToolsConfig { enabled: Some(names(&["read_file", "shell"])), disabled: names(&["shell"]) };
        assert!(some.allows("read_file"));
        assert!(!some.allows("shell"));
        assert!(!some.allows("write_file"));
        assert!(!tool_allowed("shell", &some, &names(&["shell"]), &[]));
        assert!(tool_allowed("write_file", &some, &names(&["write_file"]), &[]));
    }

    #[test]
    fn project_adds_to_disabled_only() {
        let global = ToolsFile { enabled: Some(names(&["a", "b", " "])), disabled: Some(names(&["c"])) };
        let project = ToolsFile { enabled: None, disabled: Some(names(&["b", "c", ""])) };
        let merged = merge_tools(Some(&global), Some(&project));
        assert_eq!(merged, ToolsConfig { enabled: Some(names(&["a", "b"])), disabled: names(&["c", "b"]) });
    }
}
