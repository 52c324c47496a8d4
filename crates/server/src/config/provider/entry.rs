//! How a provider entry is read: `kind` picks the variant, then a key the kind does not have
//! (another kind's, or a typo) is refused before anything else about the entry, as `unknown
//! field`, with the list of the keys this kind has ([`EntryKeys`]) — what
//! `deny_unknown_fields` said when each kind was one flat struct, now that the fields every
//! kind has are a struct of their own ([`super::ProviderCommon`], flattened into each kind).

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};

use super::super::types::text;
use super::EntryKeys;
use super::cypher::CypherProviderConfig;
use super::grpc::GrpcProviderConfig;
use super::http::HttpProviderConfig;
use super::mcp::McpProviderConfig;
use super::search::SearchProviderConfig;

/// [`super::ProviderConfig`] as it is read; it has the same name, which serde's messages say
/// (`expected internally tagged enum ProviderConfig`).
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ProviderConfig {
    Mcp(OnlyKeysOf<McpProviderConfig>),
    Cypher(OnlyKeysOf<CypherProviderConfig>),
    Http(OnlyKeysOf<HttpProviderConfig>),
    Grpc(OnlyKeysOf<GrpcProviderConfig>),
    Search(OnlyKeysOf<SearchProviderConfig>),
}

impl From<ProviderConfig> for super::ProviderConfig {
    fn from(entry: ProviderConfig) -> super::ProviderConfig {
        match entry {
            ProviderConfig::Mcp(p) => super::ProviderConfig::Mcp(p.entry),
            ProviderConfig::Cypher(p) => super::ProviderConfig::Cypher(p.entry),
            ProviderConfig::Http(p) => super::ProviderConfig::Http(p.entry),
            ProviderConfig::Grpc(p) => super::ProviderConfig::Grpc(p.entry),
            ProviderConfig::Search(p) => super::ProviderConfig::Search(p.entry),
        }
    }
}

/// An entry of kind `K`, read once every key it has is one of `K::KEYS`.
#[derive(Deserialize)]
#[serde(bound(deserialize = "K: Deserialize<'de> + EntryKeys"))]
pub struct OnlyKeysOf<K> {
    // First: flattened fields are read in order, so no other rule speaks before this one.
    #[serde(flatten)]
    _known: KnownKeys<K>,
    #[serde(flatten)]
    entry: K,
}

/// Reads nothing; refuses the first key that is not one of `K::KEYS`.
struct KnownKeys<K>(PhantomData<K>);

impl<'de, K: EntryKeys> Deserialize<'de> for KnownKeys<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(KnownKeys(PhantomData))
    }
}

impl<'de, K: EntryKeys> Visitor<'de> for KnownKeys<K> {
    type Value = KnownKeys<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a provider entry")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            if !K::KEYS.contains(&key.as_str()) {
                return Err(A::Error::unknown_field(&key, K::KEYS));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(self)
    }
}

/// A key as the file wrote it (`7:` is the key `7`).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        text(deserializer).map(Key)
    }
}
