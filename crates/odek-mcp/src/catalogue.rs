//! The tool catalogue: every registered MCP tool by exposed name, ordered by server name and then
//! by each server's `tools/list` order (spec `mcp-client.md` §1 step 4), with the collision rule
//! of §3. Pure data; the hub owns the only instance behind a lock that is never held across an
//! `.await`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use odek_contract::names::qualify_tool_name;

use crate::discovery::ToolDescriptor;
use crate::error::McpError;
use crate::output_schema::OutputSchema;
use crate::wire::tool_call_prefix;

#[derive(Debug, Default)]
pub(crate) struct Catalogue {
    /// Indexed like the hub's servers (ascending name).
    servers: Vec<Vec<ToolDescriptor>>,
    names: Vec<String>,
    lookup: HashMap<String, Route>,
}

/// Where an exposed name leads, with what every call to it needs precomputed (cheap to clone:
/// `Arc`s).
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub server: usize,
    /// The raw tool name, for the wire and for errors.
    pub raw_name: Arc<str>,
    /// `{"name":<raw name as JSON>,"arguments":` — the start of every `tools/call` params.
    pub params_prefix: Arc<str>,
    /// The tool's compiled `outputSchema`, checked against every `structuredContent`.
    pub output_schema: Option<Arc<OutputSchema>>,
}

impl Catalogue {
    pub fn new(server_names: Vec<String>) -> Self {
        Self { servers: vec![Vec::new(); server_names.len()], names: server_names, lookup: HashMap::new() }
    }

    /// Spec §3 collisions: the first raw name whose exposed name is already used by another
    /// server's tool, or by an earlier name of the same list, rejects the list's server.
    pub fn check_collisions<'a>(
        &self,
        server: usize,
        raw_names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), McpError> {
        let name = &self.names[server];
        let mut own = HashSet::new();
        for raw in raw_names {
            let exposed = qualify_tool_name(name, raw).into_string();
            let other = match self.lookup.get(&exposed) {
                Some(route) if route.server != server => Some(self.names[route.server].clone()),
                _ if own.contains(&exposed) => Some(name.clone()),
                _ => None,
            };
            if let Some(other) = other {
                return Err(McpError::ExposedNameCollision {
                    server: name.clone(),
                    tool: raw.to_owned(),
                    exposed,
                    other,
                });
            }
            own.insert(exposed);
        }
        Ok(())
    }

    /// Replaces a server's tools after checking collisions again (another server may have
    /// changed its list since the first check).
    pub fn replace(&mut self, server: usize, tools: Vec<ToolDescriptor>) -> Result<(), McpError> {
        self.check_collisions(server, tools.iter().map(|tool| tool.raw_name.as_str()))?;
        self.servers[server] = tools;
        self.rebuild_lookup();
        Ok(())
    }

    /// Removes every tool of a disabled server.
    pub fn remove_server(&mut self, server: usize) {
        self.servers[server].clear();
        self.rebuild_lookup();
    }

    pub fn tools_of(&self, server: usize) -> &[ToolDescriptor] {
        &self.servers[server]
    }

    /// The route behind an exposed name (cheap to clone: two `Arc`s).
    pub fn route(&self, exposed: &str) -> Option<&Route> {
        self.lookup.get(exposed)
    }

    /// The descriptor behind an exposed name.
    pub fn tool(&self, exposed: &str) -> Option<&ToolDescriptor> {
        let route = self.lookup.get(exposed)?;
        self.servers[route.server].iter().find(|tool| tool.exposed.as_str() == exposed)
    }

    /// Whether the server currently offers the raw tool name.
    pub fn offers(&self, server: usize, raw_name: &str) -> bool {
        self.servers[server].iter().any(|tool| tool.raw_name == raw_name)
    }

    /// Every tool in catalogue order.
    pub fn all(&self) -> Vec<ToolDescriptor> {
        self.servers.iter().flatten().cloned().collect()
    }

    fn rebuild_lookup(&mut self) {
        self.lookup.clear();
        for (server, tools) in self.servers.iter().enumerate() {
            for tool in tools {
                let raw_name: Arc<str> = Arc::from(tool.raw_name.as_str());
                let params_prefix = tool_call_prefix(&tool.raw_name);
                let route = Route {
                    server,
                    raw_name,
                    params_prefix: Arc::from(params_prefix),
                    output_schema: tool.compiled_output_schema.clone(),
                };
                self.lookup.insert(tool.exposed.as_str().to_owned(), route);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(server: &str, name: &str) -> ToolDescriptor {
        ToolDescriptor {
            exposed: qualify_tool_name(server, name),
            server: server.into(),
            raw_name: name.into(),
            description: String::new(),
            raw_description: String::new(),
            input_schema: serde_json::json!({"type":"object"}),
            compiled_output_schema: None,
            hints: crate::discovery::ToolHints::default(),
        }
    }

    #[test]
    fn shortened_names_can_collide_across_servers() {
        // Across servers, exposed names can only coincide through shortening; forge one.
        let mut catalogue = Catalogue::new(vec!["one".into(), "two".into()]);
        catalogue.replace(0, vec![tool("one", "echo")]).unwrap();
        let mut forged = tool("two", "echo");
        forged.exposed = qualify_tool_name("one", "echo");
        catalogue.servers[1] = vec![forged];
        catalogue.rebuild_lookup();
        let err = catalogue.check_collisions(0, ["echo"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "mcp server \"one\": tool \"echo\" maps to exposed name \"one__echo\", already used by server \"two\""
        );
    }

    #[test]
    fn duplicate_tool_in_one_list_collides_with_itself() {
        let catalogue = Catalogue::new(vec!["one".into()]);
        let err = catalogue.check_collisions(0, ["echo", "echo"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "mcp server \"one\": tool \"echo\" maps to exposed name \"one__echo\", already used by server \"one\""
        );
    }

    #[test]
    fn catalogue_order_is_server_then_list_order() {
        let mut catalogue = Catalogue::new(vec!["a".into(), "b".into()]);
        catalogue.replace(1, vec![tool("b", "z"), tool("b", "y")]).unwrap();
        catalogue.replace(0, vec![tool("a", "x")]).unwrap();
        let names: Vec<String> = catalogue.all().into_iter().map(|t| t.exposed.into_string()).collect();
        assert_eq!(names, vec!["a__x", "b__z", "b__y"]);
        assert!(catalogue.route("b__y").is_some());
        catalogue.remove_server(1);
        assert!(catalogue.route("b__y").is_none());
    }
}
