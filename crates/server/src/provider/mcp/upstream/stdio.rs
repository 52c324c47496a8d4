//! Spawning an MCP server as a child process: its command line, its environment, the process
//! group and parent-death signal that keep it from outliving us, and its stderr in our log.

use std::path::Path;
use std::process::Stdio;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::transport::TokioChildProcess;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

use super::EndpointError;
use crate::config::expand_env;
use crate::shutdown::Shutdown;

/// What to run, with `${VAR}` already expanded and `cwd` resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioSpec {
    pub program: String,
    pub args: Vec<String>,
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
            env: env
                .iter()
                .map(|(k, v)| Ok((k.clone(), expand_env(v)?)))
                .collect::<Result<_, EndpointError>>()?,
            cwd,
        })
    }

    /// Starts the child. It leads its own process group (so stopping it stops its children
    /// too) and, on Linux, gets SIGKILL when the gateway dies, even by SIGKILL.
    pub fn spawn(&self) -> std::io::Result<(TokioChildProcess, Option<ChildStderr>, Option<u32>)> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.env.iter().cloned())
            .current_dir(&self.cwd);
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
        let (process, stderr) = TokioChildProcess::builder(wrapped)
            .stderr(Stdio::piped())
            .spawn()?;
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
