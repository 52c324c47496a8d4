//! A Bolt graph database (Memgraph, Neo4j, ArcadeDB) through a neo4rs connection pool.
//!
//! The pool is made on first use and thrown away on a connection error, so a database that
//! went down and came back is reached again without restarting the gateway. Every wait is
//! bounded: a database that refuses connections fails a call within `timeout_ms` (default
//! 1 s), a query runs within the call's timeout; result streams are always drained within
//! that bound and dropped otherwise.

use crate::sync::Unpoisoned;
use std::sync::Arc;
use std::time::{Duration, Instant};

use contract::DependencyStatus;
use neo4rs::{BoltType, ConfigBuilder, Graph, Query};
use tokio::sync::Mutex;

use super::{DependencyError, HealthRecord};
use crate::config::{BoltConfig, expand_env};

/// Default wait for a connection: a database that is down must fail a call within a second.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const DEFAULT_POOL: usize = 16;

/// Why a Bolt URI names no address to connect to.
#[derive(Debug, thiserror::Error)]
pub enum BoltAddressError {
    #[error("{uri}: not a URI ({source})")]
    NotUri {
        uri: String,
        source: url::ParseError,
    },
    #[error("{uri}: no host")]
    NoHost { uri: String },
}

/// Why a query failed.
#[derive(Debug)]
pub enum BoltError {
    /// No connection: the database is down or unreachable.
    Connection(String),
    /// The database ran the query and refused it.
    Query(String),
    /// The query did not finish in time.
    Timeout,
}

pub struct BoltDependency {
    pub name: String,
    uri: String,
    user: String,
    password_env: Option<String>,
    max_connections: usize,
    connect_timeout: Duration,
    graph: Mutex<Option<Arc<Graph>>>,
    record: HealthRecord,
    /// Set while the database is known to be unreachable: calls fail at once instead of each
    /// waiting out the connect timeout, and one attempt per [`RETRY_EVERY`] finds out whether it
    /// is back.
    down: std::sync::Mutex<Option<Down>>,
}

struct Down {
    since: Instant,
    last_attempt: Instant,
    why: String,
}

/// How often a call may try to reach a database known to be down.
const RETRY_EVERY: Duration = Duration::from_secs(2);

impl BoltDependency {
    pub fn new(name: &str, config: &BoltConfig) -> Result<BoltDependency, DependencyError> {
        let error = |e: crate::config::EnvError| DependencyError {
            name: name.to_owned(),
            message: e.to_string(),
        };
        let uri = expand_env(&config.uri).map_err(error)?;
        Ok(BoltDependency {
            name: name.to_owned(),
            uri,
            user: expand_env(config.user.as_deref().unwrap_or_default()).map_err(error)?,
            password_env: config.password_env.clone(),
            max_connections: config
                .max_connections
                .map(|m| m as usize)
                .unwrap_or(DEFAULT_POOL),
            connect_timeout: config.timeout.unwrap_or(CONNECT_TIMEOUT),
            graph: Mutex::new(None),
            record: HealthRecord::default(),
            down: std::sync::Mutex::new(None),
        })
    }

    /// The pool, made now if there is none.
    async fn graph(&self) -> Result<Arc<Graph>, BoltError> {
        let mut slot = self.graph.lock().await;
        if let Some(graph) = slot.as_ref() {
            return Ok(graph.clone());
        }
        // Read at connect time so a rotated password is picked up on reconnect.
        let password = self
            .password_env
            .as_deref()
            .and_then(|v| std::env::var(v).ok())
            .unwrap_or_default();
        let config = ConfigBuilder::default()
            .uri(self.uri.as_str())
            .user(self.user.as_str())
            .password(password)
            .max_connections(self.max_connections)
            .build()
            .map_err(|e| BoltError::Connection(e.to_string()))?;
        // neo4rs retries a refused connection with backoff for up to a minute, so a database
        // that is down would take the whole connect timeout to say so; one plain TCP connect
        // first makes a refused port fail at once, with the system's reason.
        self.probe().await?;
        let graph = tokio::time::timeout(self.connect_timeout, Graph::connect(config))
            .await
            .map_err(|_| {
                BoltError::Connection(format!(
                    "no connection to {} within {} ms",
                    self.uri,
                    self.connect_timeout.as_millis()
                ))
            })?
            .map_err(|e| BoltError::Connection(format!("{}: {e}", self.uri)))?;
        let graph = Arc::new(graph);
        *slot = Some(graph.clone());
        Ok(graph)
    }

    /// One TCP connect to the database's address, within the connect timeout.
    async fn probe(&self) -> Result<(), BoltError> {
        let (host, port) =
            bolt_address(&self.uri).map_err(|e| BoltError::Connection(e.to_string()))?;
        match tokio::time::timeout(
            self.connect_timeout,
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(BoltError::Connection(format!("{}: {e}", self.uri))),
            Err(_) => Err(BoltError::Connection(format!(
                "no connection to {} within {} ms",
                self.uri,
                self.connect_timeout.as_millis()
            ))),
        }
    }

    async fn forget_pool(&self) {
        self.graph.lock().await.take();
    }

    /// Runs a query and returns every row as `column → value`, draining the stream.
    pub async fn rows(
        &self,
        query: Query,
        timeout: Duration,
    ) -> Result<Vec<std::collections::HashMap<String, BoltType>>, BoltError> {
        let started = Instant::now();
        {
            let mut down = self.down.write_unpoisoned();
            if let Some(d) = down.as_mut() {
                if d.last_attempt.elapsed() < RETRY_EVERY {
                    return Err(BoltError::Connection(format!(
                        "{} (unreachable for {} s; retried every {} s)",
                        d.why,
                        d.since.elapsed().as_secs(),
                        RETRY_EVERY.as_secs()
                    )));
                }
                d.last_attempt = Instant::now();
            }
        }
        let outcome = self.rows_now(query, timeout, started).await;
        let mut down = self.down.write_unpoisoned();
        match &outcome {
            Err(BoltError::Connection(why)) => {
                let since = down.as_ref().map_or_else(Instant::now, |d| d.since);
                *down = Some(Down {
                    since,
                    last_attempt: Instant::now(),
                    why: why.clone(),
                });
            }
            _ => *down = None,
        }
        outcome
    }

    async fn rows_now(
        &self,
        query: Query,
        timeout: Duration,
        started: Instant,
    ) -> Result<Vec<std::collections::HashMap<String, BoltType>>, BoltError> {
        let graph = self.graph().await?;
        let remaining = timeout.saturating_sub(started.elapsed());
        let run = async {
            // The driver takes a connection from its pool inside `execute` and retries a refused
            // one with backoff for up to a minute, so that wait cannot be bounded on its own.
            // Past the connect timeout one plain TCP connect tells the two apart: a database that
            // stopped accepting connections fails the call now; a live one that is still
            // answering (a cold first query, a large graph) gets the rest of the call's time.
            let execute = graph.execute(query);
            tokio::pin!(execute);
            let executed = match tokio::time::timeout(self.connect_timeout, &mut execute).await {
                Ok(executed) => executed,
                Err(_) => {
                    self.probe().await?;
                    execute.await
                }
            };
            let mut stream = executed.map_err(classify)?;
            let mut rows = Vec::new();
            while let Some(row) = stream.next().await.map_err(classify)? {
                rows.push(
                    row.to::<std::collections::HashMap<String, BoltType>>()
                        .map_err(|e| BoltError::Query(e.to_string()))?,
                );
            }
            Ok(rows)
        };
        let outcome = match tokio::time::timeout(remaining, run).await {
            Ok(outcome) => outcome,
            Err(_) => Err(BoltError::Timeout),
        };
        if matches!(outcome, Err(BoltError::Connection(_))) {
            self.forget_pool().await;
        }
        outcome
    }

    /// `RETURN 1`, within the connect timeout.
    pub async fn check(&self) -> DependencyStatus {
        let started = Instant::now();
        match self
            .rows(neo4rs::query("RETURN 1 AS ok"), self.connect_timeout)
            .await
        {
            Ok(_) => self.record.ok(started),
            Err(BoltError::Connection(e) | BoltError::Query(e)) => self.record.failed(started, e),
            Err(BoltError::Timeout) => self.record.failed(
                started,
                format!(
                    "RETURN 1 took longer than {} ms",
                    self.connect_timeout.as_millis()
                ),
            ),
        }
    }
}

/// The host and port a Bolt URI names (`bolt://`, `neo4j://` and their `+s`/`+ssc` forms;
/// the port defaults to Bolt's 7687).
fn bolt_address(uri: &str) -> Result<(String, u16), BoltAddressError> {
    let url = url::Url::parse(uri).map_err(|source| BoltAddressError::NotUri {
        uri: uri.to_owned(),
        source,
    })?;
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_owned(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => {
            return Err(BoltAddressError::NoHost {
                uri: uri.to_owned(),
            });
        }
    };
    Ok((host, url.port().unwrap_or(7687)))
}

/// The database's own refusals (and values we cannot read) are query errors; everything
/// else means the connection is not usable, and the pool is rebuilt on the next call.
fn classify(error: neo4rs::Error) -> BoltError {
    match error {
        neo4rs::Error::Neo4j(_)
        | neo4rs::Error::DeserializationError(_)
        | neo4rs::Error::ConversionError
        | neo4rs::Error::UnknownType(_)
        | neo4rs::Error::StringTooLong
        | neo4rs::Error::MapTooBig
        | neo4rs::Error::BytesTooBig
        | neo4rs::Error::ListTooLong => BoltError::Query(error.to_string()),
        other => BoltError::Connection(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contract::DependencyState;

    #[test]
    fn bolt_address_reads_host_and_port_with_the_bolt_default() {
        assert_eq!(
            bolt_address("bolt://127.0.0.1:7688").unwrap(),
            ("127.0.0.1".into(), 7688)
        );
        assert_eq!(
            bolt_address("neo4j+s://db.example:7690").unwrap(),
            ("db.example".into(), 7690)
        );
        assert_eq!(bolt_address("bolt://[::1]").unwrap(), ("::1".into(), 7687));
        assert_eq!(
            bolt_address("not a uri").unwrap_err().to_string(),
            "not a uri: not a URI (relative URL without a base)"
        );
        assert_eq!(
            bolt_address("bolt:x").unwrap_err().to_string(),
            "bolt:x: no host"
        );
    }

    /// A refused port is a verdict (unavailable, with the system's reason), not a check that
    /// waits out its timeout while neo4rs retries.
    #[tokio::test]
    async fn a_refused_port_is_unavailable_with_the_reason() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let config = BoltConfig {
            uri: format!("bolt://127.0.0.1:{port}"),
            user: None,
            password_env: None,
            max_connections: None,
            // Far longer than any refused connect: only the probe can answer before it.
            timeout: Some(Duration::from_secs(600)),
        };
        let db = BoltDependency::new("graph", &config).unwrap();
        // neo4rs alone keeps retrying a refused port for tens of seconds; a refused connect
        // is answered by the system at once. 5 s tells the two apart on any machine.
        let status = tokio::time::timeout(Duration::from_secs(5), db.check())
            .await
            .expect("a refused port is answered without waiting out neo4rs' retries");
        assert_eq!(status.status, DependencyState::Unavailable);
        let error = status.error.unwrap();
        assert!(error.contains("refused"), "{error}");
    }
}
