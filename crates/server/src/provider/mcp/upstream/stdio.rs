//! Spawning an MCP server as a child process: its command line, its environment, the process
//! group and parent-death signal that keep it from outliving us, and its stderr in our log.
//!
//! A child starts from an empty environment: only [`INHERITED_ENV`] (and `LC_*`) come from
//! the gateway's, then the entry's `env_passthrough` names, then its `env`. The gateway's own
//! secrets (API keys, dependency passwords) never reach a child unless named there.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

use super::EndpointError;
use super::child::ChildTransport;
use super::wire::WireRequests;
use crate::config::expand_env;
use crate::shutdown::Shutdown;

/// The variables a child inherits without being named: the official MCP SDKs' default set on
/// Unix (TypeScript `getDefaultEnvironment`, Python `get_default_environment`: HOME, LOGNAME,
/// PATH, SHELL, TERM, USER), plus the locale, the temporary directory, the time zone and
/// Python's stdio encoding, which servers need to read and print text as the gateway does.
/// Every `LC_*` variable is inherited too.
pub const INHERITED_ENV: &[&str] = &[
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
];

/// The child's whole environment, from the gateway's (`gateway`): the inherited allowlist
/// (values starting with `()`, exported shell functions, are skipped as the SDKs do), then
/// the `passthrough` names that are set, then `env` (already expanded), each overriding the
/// one before.
pub fn child_environment(
    gateway: impl IntoIterator<Item = (String, String)>,
    passthrough: &[String],
    env: &[(String, String)],
) -> Vec<(String, String)> {
    let mut out = std::collections::BTreeMap::new();
    for (name, value) in gateway {
        let inherited = INHERITED_ENV.contains(&name.as_str()) || name.starts_with("LC_");
        if (inherited && !value.starts_with("()")) || passthrough.contains(&name) {
            out.insert(name, value);
        }
    }
    out.extend(env.iter().cloned());
    out.into_iter().collect()
}

/// What to run, with `${VAR}` already expanded and `cwd` resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioSpec {
    pub program: String,
    pub args: Vec<String>,
    /// The child's whole environment ([`child_environment`]).
    pub env: Vec<(String, String)>,
    pub cwd: std::path::PathBuf,
}

impl StdioSpec {
    pub fn new(
        base_dir: &Path,
        config: &crate::config::StdioTransport,
    ) -> Result<StdioSpec, EndpointError> {
        let (command, args, env, cwd) = (
            &config.command,
            &config.args,
            &config.env,
            config.cwd.as_deref(),
        );
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand_env(v)?)))
            .collect::<Result<_, EndpointError>>()?;
        // Names or values that are not UTF-8 cannot be matched or passed as text: left out.
        let gateway = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        let env = child_environment(gateway, &config.env_passthrough, &env);
        let cwd = base_dir.join(expand_env(cwd.unwrap_or("."))?);
        // Absolute, so a relative program path means the same before and after the chdir.
        let cwd = std::path::absolute(&cwd).map_err(|source| EndpointError::Cwd {
            path: cwd.display().to_string(),
            source,
        })?;
        let program = expand_env(command)?;
        // A relative path with a slash is relative to cwd, as a shell in cwd would read it.
        let program = if program.contains('/') && !program.starts_with('/') {
            cwd.join(&program).to_string_lossy().into_owned()
        } else {
            program
        };
        Ok(StdioSpec {
            program,
            args: args
                .iter()
                .map(|a| expand_env(a))
                .collect::<Result<_, _>>()?,
            env,
            cwd,
        })
    }

    /// Starts the child. It leads its own process group (so stopping it stops its children
    /// too) and, on Linux, gets SIGKILL when the gateway dies, even by SIGKILL.
    /// What it writes on stdout is shown to `wire` as it is read.
    pub fn spawn(
        &self,
        wire: Arc<WireRequests>,
    ) -> std::io::Result<(ChildTransport, Option<ChildStderr>, Option<u32>)> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().cloned())
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(target_os = "linux")]
        // SAFETY: prctl and getppid are async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            let parent = libc::getpid();
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before prctl took effect.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let mut wrapped = CommandWrap::from(command);
        wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let mut child = wrapped.spawn()?;
        let stderr = child.stderr().take();
        let process = ChildTransport::new(child, wire)?;
        let pid = process.id();
        Ok((process, stderr, pid))
    }
}

/// Copies the child's stderr into our log, one event per line, tagged with who wrote it.
pub fn forward_stderr(
    stderr: ChildStderr,
    tasks: &Shutdown,
    service: String,
    provider: String,
    pid: Option<u32>,
) {
    tasks.spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(target: "upstream_stderr", service = %service, provider = %provider, pid, "{line}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_child_gets_the_allowlist_the_named_and_its_env_nothing_else() {
        let gateway = pairs(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/g"),
            ("LC_TIME", "C"),
            ("SHELL", "() { evil; }"),
            ("MCP_GATEWAY_API_KEYS", "k1,k2"),
            ("CODE_GRAPH_BOLT_PASSWORD", "pw"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("LEVEL", "gateway"),
        ]);
        let child = child_environment(
            gateway,
            &["GITHUB_TOKEN".into(), "NOT_SET".into()],
            &pairs(&[("LEVEL", "child"), ("EXTRA", "1")]),
        );
        assert_eq!(
            child,
            pairs(&[
                ("EXTRA", "1"),
                ("GITHUB_TOKEN", "ghp_x"),
                ("HOME", "/home/g"),
                ("LC_TIME", "C"),
                ("LEVEL", "child"),
                ("PATH", "/usr/bin"),
            ])
        );
    }
}
