//! Conformance tester for the mcp-http-gateway contract: runs every check against a service at
//! a URL — ours or anyone's — and reports what passed and what did not, with the request that
//! shows each failure; with `--grpc`, a provider of the gRPC Provider contract instead
//! ([`grpc`]). The binary (`main.rs`) is a thin command line around [`run`].

pub mod catalog;
pub mod client;
pub mod discovery;
pub mod grpc;
pub mod mcp;
pub mod probes;
pub mod report;
pub mod schema_gen;
pub mod spec;
pub mod tasks;
pub mod tester;
pub mod tools;

pub use report::Report;
pub use tester::Options;

/// Runs every check. `Err` only when the run cannot start (bad spec, bad URL).
pub fn run(options: Options) -> Result<Report, String> {
    let mut t = tester::Tester::new(options)?;
    t.progress(&format!(
        "testing {} (seed {})",
        t.client.base, t.options.seed
    ));
    discovery::health(&mut t);
    let tools = discovery::tools_list(&mut t);
    discovery::openapi_tools(&mut t, &tools);
    discovery::openapi_refs(&mut t);
    probes::status_codes(&mut t);
    probes::methods(&mut t, &tools);
    probes::request_id_echo(&mut t);
    tools::run(&mut t, &tools);
    catalog::run(&mut t);
    tasks::run(&mut t, &tools);
    t.report
        .skip("tool-output", "no tool that ran declares an output_schema");
    if t.options.mcp {
        mcp::run(&mut t, &tools);
    } else {
        t.report.skip("mcp", "not asked (--mcp)");
    }
    if tools.is_empty() {
        for check in [
            "tool-valid-inputs",
            "tool-invalid-inputs",
            "tool-output",
            "unicode",
        ] {
            t.report.skip(check, "the service lists no tools");
        }
    }
    Ok(t.report)
}
