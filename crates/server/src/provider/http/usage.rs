//! Token usage counted by the gateway from an OpenAI-compatible API's answers: per model,
//! calls and prompt/completion tokens since the gateway started.

use crate::sync::Unpoisoned;
use std::collections::BTreeMap;
use std::sync::Mutex;

use contract::ToolSchema;
use serde_json::{Value, json};

#[derive(Default)]
pub struct UsageCounter {
    since: std::sync::OnceLock<String>,
    models: Mutex<BTreeMap<String, Totals>>,
}

#[derive(Default, Clone, Copy)]
struct Totals {
    calls: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
}

impl UsageCounter {
    /// Counts an answer that carries `model` and `usage` (chat and completion answers).
    pub fn count(&self, answer: &Value) {
        self.since.get_or_init(crate::clock::timestamp);
        let (Some(model), Some(usage)) = (answer["model"].as_str(), answer.get("usage")) else {
            return;
        };
        let mut models = self.models.write_unpoisoned();
        let totals = models.entry(model.to_owned()).or_default();
        totals.calls += 1;
        totals.prompt_tokens += usage["prompt_tokens"].as_u64().unwrap_or(0);
        totals.completion_tokens += usage["completion_tokens"].as_u64().unwrap_or(0);
    }

    pub fn report(&self) -> Value {
        let models = self.models.write_unpoisoned();
        let mut total = Totals::default();
        let per_model: serde_json::Map<String, Value> = models
            .iter()
            .map(|(model, t)| {
                total.calls += t.calls;
                total.prompt_tokens += t.prompt_tokens;
                total.completion_tokens += t.completion_tokens;
                (model.clone(), totals_json(t))
            })
            .collect();
        json!({"models": per_model, "total": totals_json(&total), "counted_since": self.since.get()})
    }
}

fn totals_json(t: &Totals) -> Value {
    json!({
        "calls": t.calls,
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
        "total_tokens": t.prompt_tokens + t.completion_tokens,
    })
}

pub fn tool_schema(name: &str) -> ToolSchema {
    ToolSchema {
        qualified_name: None,
        title: None,
        output_schema: None,
        untyped_result: contract::UntypedResult::AnyJson,
        name: name.to_owned(),
        description: "Calls and prompt/completion tokens per model, counted by the gateway from the upstream's answers since it started".into(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        annotations: Some(json!({"readOnlyHint": true, "openWorldHint": false})),
        icons: None,
        score: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_model() {
        let c = UsageCounter::default();
        c.count(&json!({"model": "a", "usage": {"prompt_tokens": 3, "completion_tokens": 5}}));
        c.count(&json!({"model": "a", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}));
        c.count(&json!({"model": "b", "usage": {"prompt_tokens": 2, "completion_tokens": 0}}));
        c.count(&json!({"object": "list"}));
        let r = c.report();
        assert_eq!(r["models"]["a"]["calls"], 2);
        assert_eq!(r["models"]["a"]["total_tokens"], 10);
        assert_eq!(r["total"]["prompt_tokens"], 6);
    }
}
