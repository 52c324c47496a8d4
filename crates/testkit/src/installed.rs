//! The real servers the end-to-end tests run, where `scripts/install-*.sh` put them in the
//! checkout's `.deps/`. Paths are strings: they go into YAML configs and environment variables.

use crate::checkout::repo;

/// `.deps/<relative>`, which `installer` (a script of `scripts/`) puts there.
fn installed(relative: &str, installer: &str) -> String {
    let path = repo().join(".deps").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/{installer} first",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// `@modelcontextprotocol/server-everything` (run with `node … stdio|sse|streamableHttp`).
pub fn everything_js() -> String {
    installed(
        "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        "install-mcp-servers.sh",
    )
}

/// `@modelcontextprotocol/server-memory` (stdio; `MEMORY_FILE_PATH` says where it keeps data).
pub fn memory_js() -> String {
    installed(
        "node_modules/@modelcontextprotocol/server-memory/dist/index.js",
        "install-mcp-servers.sh",
    )
}

/// The MCP Inspector's command line (`node … --cli URL`).
pub fn inspector_cli() -> String {
    installed(
        "node_modules/@modelcontextprotocol/inspector/cli/build/cli.js",
        "install-mcp-servers.sh",
    )
}

/// `mcp-server-time` (stdio).
pub fn time_bin() -> String {
    installed("venv/bin/mcp-server-time", "install-mcp-servers.sh")
}

/// The Python of the MCP servers' venv: it has the MCP Python SDK, for fixture servers and
/// clients written in Python.
pub fn venv_python() -> String {
    installed("venv/bin/python", "install-mcp-servers.sh")
}

/// The LiteLLM proxy: an OpenAI-compatible server.
pub fn litellm_bin() -> String {
    installed("litellm-venv/bin/litellm", "install-litellm.sh")
}

/// hello-py, the Python example gRPC provider: the venv's Python and the script to run with it
/// (examples/hello-py/install.sh, which install-test-tools.sh runs, made the venv and stubs).
pub fn hello_py() -> (String, String) {
    let python = installed("hello-py/bin/python", "install-test-tools.sh");
    installed("hello-py/stubs/mcpgateway", "install-test-tools.sh");
    let script = repo().join("examples/hello-py/hello_py.py");
    (python, script.to_string_lossy().into_owned())
}

/// Node 22, which the official MCP conformance suite needs (Node 20 lacks `fs.globSync`).
pub fn node22() -> String {
    installed("node22-venv/bin/node", "install-conformance.sh")
}

/// The command line of `@modelcontextprotocol/conformance` at `version` (run with [`node22`]).
pub fn conformance_suite(version: &str) -> String {
    installed(
        &format!(
            "conformance/{version}/node_modules/@modelcontextprotocol/conformance/dist/index.js"
        ),
        "install-conformance.sh",
    )
}
