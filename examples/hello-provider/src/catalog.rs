//! What hello offers: its tools, resources and prompt, with their JSON Schemas, and the checks
//! of arguments against those schemas. This file is the one a provider team rewrites first.

use jsonschema::Validator;
use serde_json::{Value, json};

use provider_proto::v1::{Prompt, Resource, ResourceTemplate, Tool};

/// The resource with a fixed URI.
pub const GREETING_URI: &str = "hello://greeting";
/// The template of the per-name greetings.
pub const GREETING_TEMPLATE: &str = "hello://greeting/{name}";
/// The one prompt.
pub const PLAN_PROMPT: &str = "hello-plan";
/// What `hello-plan` renders.
pub const PLAN_TEMPLATE: &str = "Make a plan to reach this goal: {{goal}}. Use {{steps}} steps.";
/// `steps` when the caller gives none.
pub const DEFAULT_STEPS: i64 = 3;
/// The longest `slow.v1` may be asked to sleep.
pub const MAX_SLOW_MS: u64 = 60_000;

/// One tool: its listing plus its compiled input schema.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    input: Validator,
}

impl ToolSpec {
    fn new(
        name: &'static str,
        description: &'static str,
        input_schema: Value,
        output_schema: Option<Value>,
    ) -> Self {
        // The schemas are ours and fixed: a schema that does not compile is a bug in this file.
        let input = jsonschema::draft202012::new(&input_schema)
            .unwrap_or_else(|e| panic!("the input schema of {name}: {e}"));
        ToolSpec {
            name,
            description,
            input_schema,
            output_schema,
            input,
        }
    }

    /// The tool as ListCapabilities lists it.
    pub fn listing(&self) -> Tool {
        Tool {
            name: self.name.to_owned(),
            description: self.description.to_owned(),
            input_schema_json: self.input_schema.to_string(),
            output_schema_json: self
                .output_schema
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
        }
    }

    /// Checks arguments against the input schema; the error names the first violation.
    pub fn check(&self, arguments: &Value) -> Result<(), String> {
        check(&self.input, arguments)
    }
}

/// Everything hello offers.
pub struct Catalog {
    pub tools: Vec<ToolSpec>,
    pub prompt_args_schema: Value,
    prompt_args: Validator,
}

impl Catalog {
    pub fn new() -> Self {
        let no_arguments =
            json!({"type": "object", "properties": {}, "additionalProperties": false});
        let tools = vec![
            ToolSpec::new(
                "echo.v1",
                "Returns the message it is given, with the name of the provider that answered.",
                json!({
                    "type": "object",
                    "properties": {"message": {"type": "string", "description": "The text to echo."}},
                    "required": ["message"],
                    "additionalProperties": false
                }),
                Some(json!({
                    "type": "object",
                    "properties": {"message": {"type": "string"}, "provider": {"type": "string"}},
                    "required": ["message", "provider"]
                })),
            ),
            ToolSpec::new(
                "fail.v1",
                "Always fails (status INTERNAL): for testing how failures are reported.",
                no_arguments.clone(),
                None,
            ),
            ToolSpec::new(
                "slow.v1",
                "Sleeps `ms` milliseconds, then answers; stops when the call's deadline passes.",
                json!({
                    "type": "object",
                    "properties": {"ms": {"type": "integer", "minimum": 0, "maximum": MAX_SLOW_MS}},
                    "required": ["ms"],
                    "additionalProperties": false
                }),
                Some(json!({
                    "type": "object",
                    "properties": {"slept_ms": {"type": "integer"}},
                    "required": ["slept_ms"]
                })),
            ),
            ToolSpec::new(
                "bad_output.v1",
                "Returns a result that violates its own output schema: for testing output validation.",
                no_arguments,
                Some(json!({
                    "type": "object",
                    "properties": {"count": {"type": "integer"}},
                    "required": ["count"]
                })),
            ),
        ];
        let prompt_args_schema = json!({
            "type": "object",
            "properties": {
                "goal": {"type": "string", "minLength": 1, "description": "What the plan is for."},
                "steps": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many steps (default 3)."}
            },
            "required": ["goal"],
            "additionalProperties": false
        });
        let prompt_args = jsonschema::draft202012::new(&prompt_args_schema)
            .unwrap_or_else(|e| panic!("the args schema of {PLAN_PROMPT}: {e}"));
        Catalog {
            tools,
            prompt_args_schema,
            prompt_args,
        }
    }

    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    pub fn resources(&self) -> Vec<Resource> {
        vec![Resource {
            uri: GREETING_URI.to_owned(),
            name: "greeting".to_owned(),
            description: "A greeting from the provider.".to_owned(),
            mime_type: "text/plain".to_owned(),
        }]
    }

    pub fn resource_templates(&self) -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: GREETING_TEMPLATE.to_owned(),
            name: "greeting-for".to_owned(),
            description: "A greeting for someone by name.".to_owned(),
            mime_type: "text/plain".to_owned(),
        }]
    }

    pub fn prompts(&self) -> Vec<Prompt> {
        vec![Prompt {
            name: PLAN_PROMPT.to_owned(),
            description: "Asks for a plan of a few steps to reach a goal.".to_owned(),
            args_schema_json: self.prompt_args_schema.to_string(),
            template: PLAN_TEMPLATE.to_owned(),
        }]
    }

    /// The text of a resource, or None when the URI names none of ours.
    pub fn read(&self, uri: &str, provider: &str) -> Option<String> {
        if uri == GREETING_URI {
            return Some(format!("Hello from {provider}!"));
        }
        let name = uri.strip_prefix("hello://greeting/")?;
        (!name.is_empty() && !name.contains('/'))
            .then(|| format!("Hello, {name}! (from {provider})"))
    }

    /// Checks the arguments of `hello-plan` against its args schema.
    pub fn check_plan(&self, arguments: &Value) -> Result<(), String> {
        check(&self.prompt_args, arguments)
    }

    /// Renders `hello-plan`'s template with checked arguments.
    pub fn render_plan(&self, arguments: &Value) -> String {
        let goal = arguments["goal"].as_str().unwrap_or_default();
        let steps = arguments["steps"].as_i64().unwrap_or(DEFAULT_STEPS);
        PLAN_TEMPLATE
            .replace("{{goal}}", goal)
            .replace("{{steps}}", &steps.to_string())
    }
}

/// Arguments travel as JSON text; an empty text means no arguments, i.e. `{}`.
pub fn parse_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(text).map_err(|e| format!("the arguments are not JSON: {e}"))
}

fn check(validator: &Validator, instance: &Value) -> Result<(), String> {
    validator.validate(instance).map_err(|e| {
        let path = e.instance_path().to_string();
        let at = if path.is_empty() { "/" } else { &path };
        format!("invalid arguments at {at}: {e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_requires_a_string_message() {
        let catalog = Catalog::new();
        let echo = catalog.tool("echo.v1").unwrap();
        assert!(echo.check(&json!({"message": "hi"})).is_ok());
        assert!(echo.check(&json!({})).unwrap_err().contains("message"));
        assert!(echo.check(&json!({"message": 5})).is_err());
        assert!(echo.check(&json!({"message": "hi", "extra": 1})).is_err());
        assert!(echo.check(&json!("hi")).is_err());
    }

    #[test]
    fn slow_takes_an_integer_in_range() {
        let catalog = Catalog::new();
        let slow = catalog.tool("slow.v1").unwrap();
        assert!(slow.check(&json!({"ms": 0})).is_ok());
        assert!(slow.check(&json!({"ms": 60000})).is_ok());
        assert!(slow.check(&json!({"ms": 60001})).is_err());
        assert!(slow.check(&json!({"ms": -1})).is_err());
        assert!(slow.check(&json!({"ms": 1.5})).is_err());
        assert!(slow.check(&json!({"ms": "10"})).is_err());
    }

    #[test]
    fn tools_without_arguments_refuse_unknown_ones() {
        let catalog = Catalog::new();
        for name in ["fail.v1", "bad_output.v1"] {
            let tool = catalog.tool(name).unwrap();
            assert!(tool.check(&json!({})).is_ok(), "{name}");
            assert!(tool.check(&json!({"x": 1})).is_err(), "{name}");
        }
    }

    #[test]
    fn empty_arguments_text_is_an_empty_object_and_garbage_is_refused() {
        assert_eq!(parse_arguments("").unwrap(), json!({}));
        assert_eq!(parse_arguments(" {\"a\":1} ").unwrap(), json!({"a": 1}));
        assert!(parse_arguments("{").is_err());
    }

    #[test]
    fn bad_output_really_violates_its_output_schema() {
        let catalog = Catalog::new();
        let schema = catalog
            .tool("bad_output.v1")
            .unwrap()
            .output_schema
            .clone()
            .unwrap();
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        assert!(!validator.is_valid(&crate::provider::bad_output()));
    }

    #[test]
    fn the_plan_renders_goal_and_steps() {
        let catalog = Catalog::new();
        assert_eq!(
            catalog.render_plan(&json!({"goal": "ship it", "steps": 2})),
            "Make a plan to reach this goal: ship it. Use 2 steps."
        );
        assert_eq!(
            catalog.render_plan(&json!({"goal": "rest"})),
            "Make a plan to reach this goal: rest. Use 3 steps."
        );
    }

    #[test]
    fn the_plan_arguments_are_checked() {
        let catalog = Catalog::new();
        assert!(
            catalog
                .check_plan(&json!({"goal": "x", "steps": 10}))
                .is_ok()
        );
        assert!(catalog.check_plan(&json!({})).is_err());
        assert!(catalog.check_plan(&json!({"goal": ""})).is_err());
        assert!(
            catalog
                .check_plan(&json!({"goal": "x", "steps": 11}))
                .is_err()
        );
        assert!(
            catalog
                .check_plan(&json!({"goal": "x", "steps": "2"}))
                .is_err()
        );
    }

    #[test]
    fn greetings_are_read_by_uri_and_template() {
        let catalog = Catalog::new();
        assert_eq!(
            catalog.read("hello://greeting", "p").unwrap(),
            "Hello from p!"
        );
        assert_eq!(
            catalog.read("hello://greeting/ada", "p").unwrap(),
            "Hello, ada! (from p)"
        );
        assert!(catalog.read("hello://greeting/", "p").is_none());
        assert!(catalog.read("hello://greeting/a/b", "p").is_none());
        assert!(catalog.read("hello://other", "p").is_none());
    }
}
