//! Usage counted by every replica together: each call of a tool adds to the hash
//! `mcp-http-gateway:{service}:usage:calls` (fields `calls:{tool}` and `errors:{tool}`), off
//! the request path, and the totals are read back every second for /health's `cluster.usage`.

use std::collections::BTreeMap;

use contract::ToolUsage;

use super::Cluster;
use super::writes::Write;
use crate::sync::Unpoisoned;

impl Cluster {
    /// A call of `tool` ended (`failed`: it counts as the tool's failure). Never waits.
    pub fn count_call(&self, tool: &str, failed: bool) {
        self.writes.push(Write::Call {
            tool: tool.to_owned(),
            failed,
        });
    }

    /// Reads the shared totals into what /health answers.
    pub(super) async fn read_usage(&self) {
        let key = self.key("usage", "calls");
        let Ok(fields) = self
            .run(|mut c| async move {
                redis::cmd("HGETALL")
                    .arg(key)
                    .query_async::<BTreeMap<String, u64>>(&mut c)
                    .await
            })
            .await
        else {
            return;
        };
        *self.usage.write_unpoisoned() = totals(fields);
    }
}

/// `calls:{tool}` and `errors:{tool}` fields as one entry per tool.
fn totals(fields: BTreeMap<String, u64>) -> BTreeMap<String, ToolUsage> {
    let mut out: BTreeMap<String, ToolUsage> = BTreeMap::new();
    for (field, n) in fields {
        match field.split_once(':') {
            Some(("calls", tool)) => out.entry(tool.to_owned()).or_default().calls = n,
            Some(("errors", tool)) => out.entry(tool.to_owned()).or_default().errors = n,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_fold_into_one_entry_per_tool() {
        let fields = BTreeMap::from([
            ("calls:echo".to_owned(), 7),
            ("errors:echo".to_owned(), 2),
            ("calls:a:b".to_owned(), 1),
            ("junk".to_owned(), 9),
        ]);
        let t = totals(fields);
        assert_eq!(
            t["echo"],
            ToolUsage {
                calls: 7,
                errors: 2
            }
        );
        assert_eq!(
            t["a:b"],
            ToolUsage {
                calls: 1,
                errors: 0
            }
        );
        assert_eq!(t.len(), 2);
    }
}
