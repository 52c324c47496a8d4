//! The bodies of the resource routes: what a resource and a resource template are as clients
//! see them, and what reading one answers.
//!
//! Every entry names the provider that offers it and its qualified name `{provider}.{name}`,
//! so two providers offering the same URI or name stay apart.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A resource a provider offers (MCP `resources/list`, a gRPC provider's capabilities).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceInfo {
    /// The resource's URI, scheme included (`hello://greeting`); what `GET /resources/read`
    /// takes.
    pub uri: String,
    /// The provider's name for the resource.
    pub name: String,
    /// A human-friendly name, when the provider gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media type of its contents (`text/plain`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The configured name of the provider that offers it.
    pub provider: String,
    /// `{provider}.{name}`.
    pub qualified_name: String,
}

/// A family of resources addressed by an RFC 6570 URI template (`hello://greeting/{name}`):
/// any URI the template matches can be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceTemplateInfo {
    pub uri_template: String,
    /// The provider's name for the template.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    pub provider: String,
    /// `{provider}.{name}`.
    pub qualified_name: String,
}

/// One part of a resource's contents: `text`, or `blob` (base64) for binary contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceContents {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The contents as text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The contents in base64 (RFC 4648, with padding), for a binary resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = Byte)]
    pub blob: Option<String>,
}

/// `data` of GET /resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourcesResponse {
    /// The service's name.
    pub service: String,
    /// Every resource of every provider, in provider order (configuration), then as listed.
    pub resources: Vec<ResourceInfo>,
}

/// `data` of GET /resource-templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceTemplatesResponse {
    pub service: String,
    pub resource_templates: Vec<ResourceTemplateInfo>,
}

/// `data` of GET /resources/read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceReadResponse {
    /// The URI asked for.
    pub uri: String,
    /// The provider that answered.
    pub provider: String,
    /// The contents; a resource may come in several parts.
    pub contents: Vec<ResourceContents>,
}
