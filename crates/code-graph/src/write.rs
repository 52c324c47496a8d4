//! Writing a graph into a Bolt database (ArcadeDB, Neo4j 5; Memgraph without the indexes):
//! first the project's previous graph is deleted (every node this indexer wrote carries
//! `project`, so other projects and other tools' nodes stay), then nodes and relationships are
//! created in batches of `UNWIND $rows` (one query per batch, not one per row). Relationships
//! find their ends through an index on `qualified_name` per label, created if missing.
//!
//! Cypher that ArcadeDB 26 accepts (tried): `CREATE INDEX IF NOT EXISTS FOR (n:L) ON (n.p)`,
//! `UNWIND $rows AS row CREATE (n:L) SET n = row`, `MATCH … WITH n LIMIT k DETACH DELETE n`.
//! CREATE, not MERGE: MERGE of relationships in large batches fails on ArcadeDB with
//! "modified by a concurrent transaction", and after the delete there is nothing to merge with.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use neo4rs::{BoltType, ConfigBuilder, Graph as Bolt, query};
use serde_json::{Map, Value, json};

use crate::graph::{Graph, Label, Rel};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot connect to {uri}: {why}")]
    Connect { uri: String, why: String },
    #[error("cannot log in to {uri} as '{user}': {why}")]
    Login {
        uri: String,
        user: String,
        why: String,
    },
    #[error("{what}: {why}")]
    Query { what: String, why: String },
}

/// Where to write.
pub struct Target {
    pub uri: String,
    pub user: String,
    pub password: String,
    pub batch_size: usize,
}

/// What a write did, and how long each part took.
#[derive(Debug, Default)]
pub struct Written {
    pub deleted: u64,
    pub nodes: usize,
    pub relationships: usize,
    pub delete_time: Duration,
    pub write_time: Duration,
}

pub async fn write(project: &str, graph: &Graph, target: &Target) -> Result<Written, WriteError> {
    let config = ConfigBuilder::default()
        .uri(target.uri.as_str())
        .user(target.user.as_str())
        .password(target.password.as_str())
        .max_connections(2)
        .build()
        .map_err(|e| WriteError::Connect {
            uri: target.uri.clone(),
            why: e.to_string(),
        })?;
    probe(&target.uri).await?;
    let db = Bolt::connect(config)
        .await
        .map_err(|e| WriteError::Connect {
            uri: target.uri.clone(),
            why: e.to_string(),
        })?;
    login(&db, target).await?;
    let batch = target.batch_size.max(1);
    let mut out = Written::default();

    // Indexes first: the deletes and the relationship matches use them. A database whose DDL
    // differs (Memgraph) refuses these; the write still works, only slower.
    for label in Label::ALL {
        for prop in ["qualified_name", "project"] {
            let ddl = format!(
                "CREATE INDEX IF NOT EXISTS FOR (n:{}) ON (n.{prop})",
                label.as_str()
            );
            let _ = db.run(query(&ddl)).await;
        }
    }

    let started = Instant::now();
    for label in Label::ALL {
        let text = format!(
            "MATCH (n:{}) WHERE n.project = $project WITH n LIMIT {batch} \
             DETACH DELETE n RETURN count(*) AS deleted",
            label.as_str()
        );
        loop {
            let q = query(&text).param("project", project);
            let mut rows = db.execute(q).await.map_err(|e| err("delete", e))?;
            let mut n = 0u64;
            while let Some(row) = rows.next().await.map_err(|e| err("delete", e))? {
                n += row.get::<i64>("deleted").unwrap_or(0).max(0) as u64;
            }
            out.deleted += n;
            if n == 0 {
                break;
            }
        }
    }
    out.delete_time = started.elapsed();

    let started = Instant::now();
    let mut by_label: BTreeMap<Label, Vec<Value>> = BTreeMap::new();
    for ((label, qn), p) in &graph.nodes {
        let mut row = Map::new();
        row.insert("qualified_name".into(), json!(qn));
        row.insert("name".into(), json!(p.name));
        row.insert("path".into(), json!(p.path));
        row.insert("project".into(), json!(project));
        if let Some((start, end)) = p.lines {
            row.insert("start_line".into(), json!(start));
            row.insert("end_line".into(), json!(end));
        }
        if let Some(e) = &p.extension {
            row.insert("extension".into(), json!(e));
        }
        by_label.entry(*label).or_default().push(Value::Object(row));
    }
    for (label, rows) in &by_label {
        let text = format!(
            "UNWIND $rows AS row CREATE (n:{}) SET n = row",
            label.as_str()
        );
        for chunk in rows.chunks(batch) {
            run_rows(&db, &text, chunk, label.as_str()).await?;
            out.nodes += chunk.len();
        }
    }

    let mut by_type: BTreeMap<(Rel, Label, Label), Vec<Value>> = BTreeMap::new();
    for (rel, from, to) in &graph.rels {
        by_type
            .entry((*rel, from.0, to.0))
            .or_default()
            .push(json!({"f": from.1, "t": to.1}));
    }
    for ((rel, from, to), rows) in &by_type {
        let text = format!(
            "UNWIND $rows AS row MATCH (a:{} {{qualified_name: row.f, project: $project}}) \
             MATCH (b:{} {{qualified_name: row.t, project: $project}}) CREATE (a)-[:{}]->(b)",
            from.as_str(),
            to.as_str(),
            rel.as_str()
        );
        for chunk in rows.chunks(batch) {
            let q = query(&text)
                .param("rows", bolt(chunk))
                .param("project", project);
            db.run(q).await.map_err(|e| err(rel.as_str(), e))?;
            out.relationships += chunk.len();
        }
    }
    out.write_time = started.elapsed();
    Ok(out)
}

/// One TCP connect to the database's address first: neo4rs retries a refused connection with
/// backoff for about a minute, so a database that is not there would take that long to say so.
async fn probe(uri: &str) -> Result<(), WriteError> {
    let fail = |why: String| WriteError::Connect {
        uri: uri.to_owned(),
        why,
    };
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let address = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:7687")
    };
    match tokio::time::timeout(
        Duration::from_secs(5),
        tokio::net::TcpStream::connect(&address),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(fail(e.to_string())),
        Err(_) => Err(fail(format!("no TCP connection to {address} within 5 s"))),
    }
}

/// How long a login may take.
const LOGIN_DEADLINE: Duration = Duration::from_secs(15);

/// A login before any work, with a deadline. Through a transaction: neo4rs connects lazily
/// and its `run` and `execute` retry a refused login with backoff for minutes (and the index
/// statements' errors are ignored), so a wrong password used to look like an indexer hung;
/// a transaction is not retried, and a refused login ends it at once.
async fn login(db: &Bolt, target: &Target) -> Result<(), WriteError> {
    let fail = |why: String| WriteError::Login {
        uri: target.uri.clone(),
        user: target.user.clone(),
        why,
    };
    let attempt = async {
        let txn = db.start_txn().await?;
        txn.rollback().await
    };
    match tokio::time::timeout(LOGIN_DEADLINE, attempt).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(fail(e.to_string())),
        Err(_) => Err(fail(format!(
            "the database accepted the connection but did not answer a login within {} s",
            LOGIN_DEADLINE.as_secs()
        ))),
    }
}

async fn run_rows(db: &Bolt, text: &str, rows: &[Value], what: &str) -> Result<(), WriteError> {
    db.run(query(text).param("rows", bolt(rows)))
        .await
        .map_err(|e| err(what, e))
}

fn bolt(rows: &[Value]) -> BoltType {
    // Only strings and integers: the conversion cannot fail.
    BoltType::try_from(Value::Array(rows.to_vec())).unwrap_or(BoltType::Null(Default::default()))
}

fn err(what: &str, e: neo4rs::Error) -> WriteError {
    WriteError::Query {
        what: what.to_owned(),
        why: e.to_string(),
    }
}
