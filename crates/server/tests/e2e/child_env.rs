//! What an MCP child sees of the gateway's environment: the real server-everything tool
//! `get-env` prints its whole environment, called through the gateway while the gateway holds
//! its API keys and dependency passwords in its own environment. And `check-config` warns
//! about a literal secret in `env:`.

use std::process::Command;

use serde_json::json;

use crate::harness::*;

const SECRETS: &[(&str, &str)] = &[
    ("MCP_GATEWAY_API_KEYS", "gateway-key-1,gateway-key-2"),
    ("CODE_GRAPH_BOLT_PASSWORD", "bolt-password-value"),
    ("AI_GATEWAY_API_KEY", "sk-ai-gateway-secret"),
];

#[tokio::test(flavor = "multi_thread")]
async fn a_child_sees_no_secret_of_the_gateway_only_what_it_is_given() {
    let extra = format!(
        "providers:\n  - {{ name: everything, kind: mcp, command: node, args: [\"{}\", stdio], \
         env: {{ GIVEN: \"${{SOME_OTHER_TOKEN:-unset}}-and-literal\" }}, \
         env_passthrough: [PASSED_THROUGH, NOT_SET_ANYWHERE] }}\n",
        everything_js()
    );
    let mut env: Vec<(&str, &str)> = SECRETS.to_vec();
    env.push(("PASSED_THROUGH", "passed-value"));
    env.push(("SOME_OTHER_TOKEN", "other-token-value"));
    env.push(("LC_MESSAGES", "C"));
    let mut gw = Gateway::spawn_env("childenv", &extra, &env);
    gw.wait_running().await;
    let answer = call(&gw, "get-env", json!({})).await;
    answer.assert_envelope();
    assert_eq!(answer.status, 200, "{}", answer.body);
    // What the child printed: the text of the tool's only block (its members are also spread
    // beside `content` in `data`).
    let data = &answer.body["data"];
    let seen: serde_json::Value = data["content"][0]["text"]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_else(|| panic!("get-env printed no JSON text: {data}"));
    assert!(seen.is_object(), "get-env printed no object: {seen}");
    for (name, value) in seen.as_object().unwrap() {
        assert_eq!(&data[name], value, "{name} is not spread into data: {data}");
    }
    let printed = seen.to_string();
    for (name, value) in SECRETS {
        assert!(
            seen.get(name).is_none(),
            "{name} reached the child: {printed}"
        );
        assert!(
            !printed.contains(value),
            "the value of {name} reached the child"
        );
    }
    assert_eq!(seen["PASSED_THROUGH"], "passed-value", "{printed}");
    assert!(seen.get("NOT_SET_ANYWHERE").is_none(), "{printed}");
    // `env:` may use a gateway variable by reference: that is naming it (its value, not it).
    assert!(seen.get("SOME_OTHER_TOKEN").is_none(), "{printed}");
    assert_eq!(seen["GIVEN"], "other-token-value-and-literal", "{printed}");
    assert_eq!(seen["LC_MESSAGES"], "C", "{printed}");
    assert_eq!(
        seen["PATH"].as_str(),
        std::env::var("PATH").ok().as_deref(),
        "{printed}"
    );
    // Nothing beyond the allowlist, the named and what node sets for itself.
    let allowed = |name: &str| {
        [
            "HOME",
            "LOGNAME",
            "PATH",
            "SHELL",
            "TERM",
            "USER",
            "LANG",
            "LANGUAGE",
            "TMPDIR",
            "TZ",
            "PYTHONIOENCODING",
            "PASSED_THROUGH",
            "GIVEN",
        ]
        .contains(&name)
            || name.starts_with("LC_")
    };
    let extra_names: Vec<&String> = seen
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !allowed(k))
        .collect();
    assert!(
        extra_names.is_empty(),
        "unexpected variables: {extra_names:?}"
    );
}

#[test]
fn check_config_warns_about_a_literal_secret_and_still_accepts_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("s.yaml");
    std::fs::write(
        &config,
        "service: { name: s, port: 18999 }\nproviders:\n  - { name: p, kind: mcp, command: node, \
         env: { SEEKR_API_KEY: abc123, FROM_ENV_TOKEN: \"${FROM_ENV_TOKEN:-}\", LEVEL: debug } }\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["check-config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("env.SEEKR_API_KEY")
            && warnings[0].contains("${SEEKR_API_KEY}")
            && warnings[0].contains("env_passthrough"),
        "{stderr}"
    );
}
