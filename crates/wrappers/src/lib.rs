//! The wrapper generator: reads the registry of services, fetches each one's GET /tools, and
//! renders bash scripts, a Python client, a CLI, Claude Code slash commands and a skill from
//! templates (see docs/wrappers.md).

pub mod context;
pub mod fetch;
pub mod filters;
pub mod generate;
pub mod names;
pub mod registry;
