//! Which tool names a caller may see in the service's reports (`GET /health`,
//! `GET /status/data`, `GET /metrics`). While the service asks for no credentials, every name.
//! Once API keys or OAuth are on, only the tools the caller's key or token may call, and none
//! for a caller without credentials (a public `/health`), who still sees how many there are
//! (`tool_count`). So no route tells a key of a tool outside its scope, as `GET /tools`,
//! MCP `tools/list` and `/openapi.json` tell it none.

use contract::{HealthResponse, StatusReport};

use super::Settings;
use super::client::Client;

/// What one caller may see of the tools' names.
#[derive(Clone, Copy, Debug)]
pub struct ToolSight<'a> {
    /// The service asks for no credentials: every name is the caller's to see.
    open: bool,
    /// The caller, when it came with a key or token (one without sees no name).
    credentialed: Option<&'a Client>,
}

impl<'a> ToolSight<'a> {
    /// The sight of `client` (`None`: no client was told) on a service with `settings`.
    pub fn of(settings: &Settings, client: Option<&'a Client>) -> Self {
        ToolSight {
            open: !settings.config.security.credentials_required(),
            // Judged once here, not per tool: `identity` makes a string.
            credentialed: client.filter(|c| c.identity().is_some()),
        }
    }

    /// Whether the caller may see `tool`'s name: a caller with a key or token, the tools it
    /// may call; a caller without, none.
    pub fn sees(&self, tool: &str) -> bool {
        self.open || self.credentialed.is_some_and(|c| c.may_use(tool))
    }

    /// Whether the caller sees every name (no scope narrows its view).
    pub fn sees_all(&self) -> bool {
        self.open || self.credentialed.is_some_and(Client::is_unscoped)
    }

    /// `report` as the caller may see it: the tools it cannot see, and the name clashes
    /// among them, are left out; `tool_count` still counts them all.
    pub fn health(&self, mut report: HealthResponse) -> HealthResponse {
        report.tool_count = report.tools.len() as u64;
        report.tools.retain(|name, _| self.sees(name));
        report
            .conflicts
            .retain(|c| self.sees(&c.tool) && c.served.iter().all(|n| self.sees(n)));
        report
    }

    /// The status page's `report` as the caller may see it, as [`health`](Self::health).
    pub fn status(&self, mut report: StatusReport) -> StatusReport {
        report.tool_count = report.tools.len() as u64;
        report.tools.retain(|t| self.sees(&t.name));
        report.timeline.tools.retain(|name, _| self.sees(name));
        report
    }
}
