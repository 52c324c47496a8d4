//! `POST /prompts/<name>`: one operation per prompt of the service, made from the contract's
//! `POST /prompts/{name}` with the prompt's `args_schema` as its body, as each tool has its own
//! `POST /tools/<name>`. The template says any object is a body for any name, which the gateway
//! refuses for every prompt with a required argument; a client (or a fuzzer) reading the typed
//! operation knows which arguments each prompt takes.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::{ComponentNames, component, example, hoist, operation_id, safe_name};
use crate::{ArgumentValidator, PromptInfo};

/// Each prompt's operation, by path, with the components its body needs added to `schemas`.
/// A served name offered by two providers is the first's, as the server resolves it. A prompt
/// whose `args_schema` is not a schema the gateway can check gets no operation (the server
/// would refuse every call of it).
pub(super) fn operations(
    template: &Value,
    prompts: &[PromptInfo],
    names: &mut ComponentNames,
    schemas: &mut Map<String, Value>,
) -> Vec<(String, Value)> {
    let mut seen = BTreeSet::new();
    let mut operations = Vec::new();
    for prompt in prompts {
        if !seen.insert(prompt.name.as_str()) {
            continue;
        }
        let Ok(validator) = ArgumentValidator::compile(&prompt.args_schema) else {
            continue;
        };
        let prefix = format!("prompt__{}__", safe_name(&prompt.name));
        let hoisted = hoist::hoist(
            &prompt.args_schema,
            names.take(&format!("{prefix}Arguments")),
            |def| names.take(&format!("{prefix}{def}")),
        );
        schemas.extend(hoisted.components);
        let mut body = json!({"schema": {"$ref": component(&hoisted.root)}});
        if let Some(arguments) = example::example(&prompt.args_schema, &validator) {
            body["example"] = arguments;
        }
        let mut op = template.clone();
        op["operationId"] = json!(operation_id("get_prompt", &prompt.name));
        op["summary"] = json!(prompt.title.as_deref().unwrap_or(&prompt.name));
        op["description"] = json!(match prompt.description.as_deref() {
            Some(description) if !description.is_empty() => description.to_owned(),
            _ => format!("Renders prompt `{}`.", prompt.name),
        });
        op["tags"] = json!(["prompt"]);
        if let Some(params) = op["parameters"].as_array_mut() {
            params.retain(|p| p["in"] != "path");
        }
        // No body is `{}`: required only when `{}` fails the prompt's arguments.
        op["requestBody"] = json!({
            "required": validator.check(&json!({})).is_err(),
            "description": format!("The arguments of prompt `{}`.", prompt.name),
            "content": {"application/json": body},
        });
        // The template's example renders another prompt: none rather than a wrong one.
        if let Some(ok) = op["responses"]["200"]["content"]["application/json"].as_object_mut() {
            ok.remove("example");
        }
        operations.push((format!("/prompts/{}", prompt.name), json!({ "post": op })));
    }
    operations
}
