//! The `input_required` rounds of a server the gateway speaks 2026-07-28 to (multi round-trip
//! requests): the gateway is that server's client, so it answers each round's input requests
//! by asking the call's caller what the server asked — through the same [`Caller::ask`] a
//! handshake-era server's mid-call request takes, so a session is asked on its call's stream,
//! and a 2026-07-28 client in `input_required` rounds of its own (`mcp/input_required.rs`) —
//! or, with no client to ask, as a client without a user or a model would; then it retries
//! the call with the answers and the server's `requestState`, at most [`MAX_ROUNDS`] times.
//!
//! The server's `requestState` never leaves the gateway: it is bound to the server (the
//! Python SDK seals it with a key of its process) and to its own tool name, which the gateway
//! may serve under another; the call waits here, on its link, for its caller's answers.
// rmcp marks sampling and roots deprecated (SEP-2577); 2026-07-28 still asks them in rounds.
#![allow(deprecated)]

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientRequest,
    ErrorCode, InputRequest, InputRequests, InputResponses,
};
use rmcp::service::ServiceError;
use serde_json::Value;

use super::call::{Link, Refused};
use super::client::no_client;
use super::{Inner, JsonObject};
use crate::provider::ProgressSink;
use crate::provider::clients::{Caller, ClientAnswer, ClientAsk};
use crate::telemetry::TraceContext;

/// The most `input_required` rounds one call answers before it fails.
pub(super) const MAX_ROUNDS: usize = 10;

impl Inner {
    /// `tools/call` of `tool` with `arguments`, and its retries (with `arguments` again,
    /// copied only then) while the server answers `input_required`.
    pub(super) async fn send_in_rounds(
        &self,
        link: &Link,
        tool: &str,
        (first, arguments): (JsonObject, &JsonObject),
        trace: &TraceContext,
        sink: Option<ProgressSink>,
        caller: Option<Caller>,
    ) -> (Result<CallToolResponse, ServiceError>, Refused) {
        let params = || CallToolRequestParams::new(tool.to_owned());
        let mut round = params().with_arguments(first);
        for _ in 0..=MAX_ROUNDS {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(round));
            let (answer, refused) = self
                .send_routed(link, request, trace, sink.clone(), caller.clone())
                .await;
            let Ok(CallToolResponse::InputRequired(asked)) = answer else {
                return (answer, refused);
            };
            let requests = asked.input_requests.unwrap_or_default();
            let responses = match answered(requests, caller.as_ref()).await {
                Ok(responses) => responses,
                Err((error, refused)) => return (Err(ServiceError::McpError(error)), refused),
            };
            round = params()
                .with_arguments(arguments.clone())
                .with_input_responses(responses);
            if let Some(state) = asked.request_state {
                round = round.with_request_state(state);
            }
        }
        let error = McpError::new(
            ErrorCode::INTERNAL_ERROR,
            format!("Tool '{tool}' still asked for input after {MAX_ROUNDS} rounds"),
            None,
        );
        (Err(ServiceError::McpError(error)), None)
    }
}

/// What a call's caller offers a server that asks in rounds (sampling, elicitation, roots as
/// its client declared them); nothing for a caller without a client (REST).
pub(super) fn offered_by(caller: Option<&Caller>) -> ClientCapabilities {
    let mut offered = ClientCapabilities::default();
    if let Some(theirs) = caller.and_then(|c| c.session.capabilities()) {
        offered.sampling = theirs.sampling;
        offered.elicitation = theirs.elicitation;
        offered.roots = theirs.roots;
    }
    offered
}

/// What the server asked, as an ask of a client; `None` for a kind this gateway does not know.
fn ask_of(request: InputRequest) -> Option<ClientAsk> {
    match request {
        InputRequest::Elicitation(elicit) => Some(ClientAsk::Elicitation {
            params: Some(elicit.params),
            as_sent: None,
        }),
        InputRequest::CreateMessage(sample) => Some(ClientAsk::Sampling(sample.params)),
        InputRequest::ListRoots(_) => Some(ClientAsk::Roots),
        _ => None,
    }
}

/// One round's answers, each under the key of its request; all asked at once (a client of
/// rounds gets them in one). Fails, naming what could not be given, when a request has no
/// answer (sampling without a client that samples).
async fn answered(
    requests: InputRequests,
    caller: Option<&Caller>,
) -> Result<InputResponses, (McpError, Refused)> {
    let asks = requests.into_iter().map(|(key, request)| async move {
        let Some(ask) = ask_of(request) else {
            let error = McpError::invalid_params(
                format!("input request '{key}' is of a kind this gateway cannot ask"),
                None,
            );
            return Err((error, None));
        };
        let kind = ask.method();
        let offered = caller.filter(|c| {
            c.session
                .capabilities()
                .is_some_and(|caps| ask.offered_by(&caps))
        });
        let refused = if kind == "sampling/createMessage" {
            Some("sampling")
        } else {
            None
        };
        let answer = match offered {
            Some(caller) => caller.ask_keyed(&key, ask).await,
            None => no_client(ask),
        }
        .map_err(|error| (error, if offered.is_none() { refused } else { None }))?;
        Ok((key, value_of(answer)))
    });
    futures::future::try_join_all(asks)
        .await
        .map(|answers| answers.into_iter().collect())
}

/// A client's answer as the JSON of its result.
fn value_of(answer: ClientAnswer) -> Value {
    match answer {
        ClientAnswer::Elicitation(result) => serde_json::to_value(result),
        ClientAnswer::Sampling(result) => serde_json::to_value(result),
        ClientAnswer::Roots(result) => serde_json::to_value(result),
    }
    .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_input_request_is_an_ask() {
        let request = |json| serde_json::from_value::<InputRequest>(json).unwrap();
        let elicit = request(
            serde_json::json!({"method": "elicitation/create", "params": {
            "message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}}),
        );
        assert_eq!(ask_of(elicit).unwrap().method(), "elicitation/create");
        let sample = request(
            serde_json::json!({"method": "sampling/createMessage", "params": {
            "messages": [], "maxTokens": 5}}),
        );
        assert_eq!(ask_of(sample).unwrap().method(), "sampling/createMessage");
        let roots = request(serde_json::json!({"method": "roots/list"}));
        assert_eq!(ask_of(roots).unwrap().method(), "roots/list");
    }

    #[tokio::test]
    async fn without_a_client_an_elicitation_is_declined_and_sampling_refused() {
        let mut requests = InputRequests::new();
        requests.insert(
            "who".into(),
            serde_json::from_value(
                serde_json::json!({"method": "elicitation/create", "params": {
                "message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}}),
            )
            .unwrap(),
        );
        let responses = answered(requests, None).await.ok().unwrap();
        assert_eq!(responses["who"]["action"], "decline");
        let mut requests = InputRequests::new();
        requests.insert(
            "llm".into(),
            serde_json::from_value(serde_json::json!({"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 5}}))
            .unwrap(),
        );
        let (_, refused) = answered(requests, None).await.err().unwrap();
        assert_eq!(refused, Some("sampling"));
    }
}
