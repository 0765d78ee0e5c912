//! The odek agent loop: iterations, tool execution, wrappers, budgets, events, context trimming,
//! the plan tool, sessions and sub-agents.
//!
//! Nothing lives here yet; the loop arrives in issue 3. The MCP client it will drive is `odek-mcp`.
