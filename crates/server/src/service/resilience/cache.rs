//! Read-only results shared between callers: identical calls in flight at once share one
//! upstream call (coalescing), and a tool's successful results are kept for its `ttl_ms`
//! (the cache), bounded in entries and bytes per provider, oldest out first. A call is
//! identical to another when its tool, its arguments in canonical form (keys sorted, so key
//! order does not matter) and its caller's tool scope are; with `per_caller`, its caller too.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::config::CacheConfig;
use crate::provider::ToolOutput;
use crate::service::{CallFailure, CallResult};
use crate::sync::Unpoisoned;

pub use contract::CacheStatus;

/// A call's identity for sharing: the SHA-256 of what makes two calls the same.
pub type CallKey = [u8; 32];

/// The key of a call of `tool` with `arguments` by a caller whose tool scope is `scope` (its
/// hash; 0 for every tool) and, for results kept per caller, by `caller`.
pub fn call_key(tool: &str, arguments: &Value, scope: u64, caller: Option<&str>) -> CallKey {
    let mut hash = Sha256::new();
    hash.update(scope.to_be_bytes());
    for part in [tool, caller.unwrap_or("")] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    canonical(arguments, &mut hash);
    hash.finalize().into()
}

/// Feeds `value` to the hash with object keys sorted, so that `{"a":1,"b":2}` and
/// `{"b":2,"a":1}` are one call.
fn canonical(value: &Value, hash: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hash.update(b"{");
            for key in keys {
                hash.update(serde_json::to_string(key).unwrap_or_default().as_bytes());
                hash.update(b":");
                canonical(&map[key], hash);
                hash.update(b",");
            }
            hash.update(b"}");
        }
        Value::Array(items) => {
            hash.update(b"[");
            for item in items {
                canonical(item, hash);
                hash.update(b",");
            }
            hash.update(b"]");
        }
        other => hash.update(other.to_string().as_bytes()),
    }
}

/// The answer an identical call in flight ends with.
pub type Shared = Result<CallResult, CallFailure>;

/// A provider's kept results and calls in flight.
pub struct ResultCache {
    config: CacheConfig,
    kept: Mutex<Kept>,
    flights: Mutex<HashMap<CallKey, watch::Receiver<Option<Shared>>>>,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub coalesced: AtomicU64,
    waiting: AtomicUsize,
}

#[derive(Default)]
struct Kept {
    entries: HashMap<CallKey, Entry>,
    /// Keys in the order they were kept (a key kept again is in it twice; the older place
    /// is skipped by its stamp).
    order: VecDeque<(CallKey, u64)>,
    bytes: u64,
    stamp: u64,
}

struct Entry {
    result: CallResult,
    expires: Instant,
    bytes: u64,
    stamp: u64,
}

/// What a call found when it asked to share.
pub enum Found {
    /// A kept result.
    Kept(CallResult),
    /// An identical call is in flight: wait for its answer.
    InFlight(watch::Receiver<Option<Shared>>),
    /// Nothing: this call runs, and its [`Leader`] hands the answer to those that wait.
    Lead(Leader),
}

/// The call that runs for every identical call that waits on it. Dropped unfinished (its
/// caller went away), its waiters find it gone and one of them runs instead.
pub struct Leader {
    cache: Arc<ResultCache>,
    key: CallKey,
    sender: Option<watch::Sender<Option<Shared>>>,
}

impl Leader {
    /// Hands `answer` to the calls that waited, and keeps it for `ttl` when it succeeded.
    pub fn finish(mut self, answer: &Shared, ttl: Option<Duration>) {
        if let (Ok(result), Some(ttl)) = (answer, ttl)
            && !ttl.is_zero()
        {
            self.cache.keep(self.key, result.clone(), ttl);
        }
        // Out of the map first: no call can start waiting on it after this.
        self.cache.flights.write_unpoisoned().remove(&self.key);
        if let Some(sender) = self.sender.take()
            && sender.receiver_count() > 0
        {
            sender.send_replace(Some(answer.clone()));
        }
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        self.cache.flights.write_unpoisoned().remove(&self.key);
    }
}

impl ResultCache {
    pub fn new(config: CacheConfig) -> ResultCache {
        ResultCache {
            config,
            kept: Mutex::default(),
            flights: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            coalesced: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
        }
    }

    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// A kept result of `key`, or the call in flight, or the lead (`coalesce`: whether calls
    /// in flight are shared).
    pub fn find(self: &Arc<Self>, key: CallKey, coalesce: bool) -> Found {
        if let Some(result) = self.kept(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Found::Kept(result);
        }
        let sender = {
            let mut flights = self.flights.write_unpoisoned();
            if coalesce
                && let Some(waiting) = flights.get(&key)
                && waiting.has_changed().is_ok()
            {
                return Found::InFlight(waiting.clone());
            }
            let (sender, receiver) = watch::channel(None);
            if coalesce {
                flights.insert(key, receiver);
            }
            sender
        };
        self.misses.fetch_add(1, Ordering::Relaxed);
        Found::Lead(Leader {
            cache: self.clone(),
            key,
            sender: Some(sender),
        })
    }

    /// A waiter's answer: the leader's, or `None` when the leader went away unfinished.
    pub async fn wait(&self, mut flight: watch::Receiver<Option<Shared>>) -> Option<Shared> {
        let _waiting = Waiting::enter(&self.waiting);
        let answer = flight
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|a| a.clone());
        if answer.is_some() {
            self.coalesced.fetch_add(1, Ordering::Relaxed);
        }
        answer
    }

    /// A result found kept by another replica (`cluster`) counts as a hit.
    pub fn counted_remote_hit(&self) {
        self.misses.fetch_sub(1, Ordering::Relaxed);
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    fn kept(&self, key: &CallKey) -> Option<CallResult> {
        let mut kept = self.kept.write_unpoisoned();
        let entry = kept.entries.get(key)?;
        if entry.expires > Instant::now() {
            return Some(entry.result.clone());
        }
        let gone = kept.entries.remove(key).map_or(0, |e| e.bytes);
        kept.bytes -= gone;
        None
    }

    /// Keeps `result` for `ttl`, dropping the oldest until the bounds hold. A result larger
    /// than the whole bound is not kept.
    pub fn keep(&self, key: CallKey, result: CallResult, ttl: Duration) {
        let bytes = approximate_size(&result.output);
        if bytes > self.config.max_bytes {
            return;
        }
        let mut kept = self.kept.write_unpoisoned();
        kept.stamp += 1;
        let stamp = kept.stamp;
        let entry = Entry {
            result,
            expires: Instant::now() + ttl,
            bytes,
            stamp,
        };
        if let Some(old) = kept.entries.insert(key, entry) {
            kept.bytes -= old.bytes;
        }
        kept.bytes += bytes;
        kept.order.push_back((key, stamp));
        while kept.bytes > self.config.max_bytes
            || kept.entries.len() as u64 > self.config.max_entries
        {
            let Some((oldest, stamp)) = kept.order.pop_front() else {
                break;
            };
            if kept.entries.get(&oldest).is_some_and(|e| e.stamp == stamp) {
                let gone = kept.entries.remove(&oldest).map_or(0, |e| e.bytes);
                kept.bytes -= gone;
            }
        }
        // Places of keys kept again since pile up only as fast as keeps; trim them when they
        // outnumber the entries by far.
        if kept.order.len() > 4 * (kept.entries.len() + 16) {
            let Kept { entries, order, .. } = &mut *kept;
            order.retain(|(k, s)| entries.get(k).is_some_and(|e| e.stamp == *s));
        }
    }

    /// Calls waiting now on an identical call in flight.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Entries and bytes kept now.
    pub fn size(&self) -> (u64, u64) {
        let kept = self.kept.write_unpoisoned();
        (kept.entries.len() as u64, kept.bytes)
    }
}

/// A call counted as waiting while it does (also when its caller goes away meanwhile).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The bytes a kept output holds, near enough to bound memory by: its JSON length.
fn approximate_size(output: &ToolOutput) -> u64 {
    let length = match output {
        ToolOutput::Data(data) => serde_json::to_vec(data).map_or(0, |v| v.len()),
        ToolOutput::Mcp(result) => serde_json::to_vec(result).map_or(0, |v| v.len()),
    };
    length as u64 + 64
}

/// A result as JSON text, for Redis.
pub fn to_shared_text(result: &CallResult) -> Option<String> {
    let value = match &result.output {
        ToolOutput::Data(data) => json!({"typed": result.typed, "data": data}),
        ToolOutput::Mcp(r) => json!({"typed": result.typed, "mcp": r}),
    };
    serde_json::to_string(&value).ok()
}

/// A result read back from Redis (`None`: not one this version wrote).
pub fn from_shared_text(text: &str) -> Option<CallResult> {
    let mut value: Value = serde_json::from_str(text).ok()?;
    let typed = value.get("typed")?.as_bool()?;
    let output = if let Some(data) = value.get_mut("data") {
        ToolOutput::Data(data.take())
    } else {
        ToolOutput::Mcp(Box::new(
            serde_json::from_value(value.get_mut("mcp")?.take()).ok()?,
        ))
    };
    Some(CallResult {
        output,
        typed,
        cache: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(n: u64) -> CallResult {
        CallResult {
            output: ToolOutput::Data(json!({"n": n})),
            typed: false,
            cache: None,
        }
    }

    fn cache(max_entries: u64, max_bytes: u64) -> Arc<ResultCache> {
        Arc::new(ResultCache::new(CacheConfig {
            max_entries,
            max_bytes,
            ..CacheConfig::default()
        }))
    }

    fn n(result: &CallResult) -> Value {
        match &result.output {
            ToolOutput::Data(d) => d["n"].clone(),
            ToolOutput::Mcp(_) => Value::Null,
        }
    }

    #[test]
    fn the_key_ignores_key_order_and_tells_tools_scopes_and_callers_apart() {
        let a = json!({"a": 1, "b": {"x": [1, 2], "y": null}});
        let b = json!({"b": {"y": null, "x": [1, 2]}, "a": 1});
        assert_eq!(call_key("t", &a, 0, None), call_key("t", &b, 0, None));
        assert_ne!(call_key("t", &a, 0, None), call_key("u", &a, 0, None));
        assert_ne!(call_key("t", &a, 0, None), call_key("t", &a, 7, None));
        assert_ne!(call_key("t", &a, 0, None), call_key("t", &a, 0, Some("c")));
        assert_ne!(
            call_key("t", &json!({"a": [1, 2]}), 0, None),
            call_key("t", &json!({"a": [2, 1]}), 0, None)
        );
        // Lengths are hashed: no two splits of one text are one key.
        assert_ne!(
            call_key("ab", &a, 0, Some("c")),
            call_key("a", &a, 0, Some("bc"))
        );
    }

    #[tokio::test]
    async fn calls_in_flight_share_the_leader_s_answer() {
        let cache = cache(10, 1 << 20);
        let key = call_key("t", &json!({}), 0, None);
        let Found::Lead(leader) = cache.find(key, true) else {
            panic!("the first call should lead");
        };
        let waiters: Vec<_> = (0..5)
            .map(|_| match cache.find(key, true) {
                Found::InFlight(flight) => {
                    let cache = cache.clone();
                    tokio::spawn(async move { cache.wait(flight).await })
                }
                _ => panic!("an identical call in flight should be waited for"),
            })
            .collect();
        leader.finish(&Ok(result(7)), None);
        for waiter in waiters {
            let answer = waiter.await.unwrap().unwrap().unwrap();
            assert_eq!(n(&answer), json!(7));
        }
        assert_eq!(cache.coalesced.load(Ordering::Relaxed), 5);
        // Not kept without a ttl: the next call leads again.
        assert!(matches!(cache.find(key, true), Found::Lead(_)));
    }

    #[tokio::test]
    async fn a_leader_that_goes_away_leaves_its_waiters_to_run_themselves() {
        let cache = cache(10, 1 << 20);
        let key = call_key("t", &json!({}), 0, None);
        let Found::Lead(leader) = cache.find(key, true) else {
            panic!()
        };
        let Found::InFlight(flight) = cache.find(key, true) else {
            panic!()
        };
        drop(leader);
        assert!(cache.wait(flight).await.is_none());
        assert!(matches!(cache.find(key, true), Found::Lead(_)));
        // Without coalescing nobody waits.
        let Found::Lead(_first) = cache.find(key, false) else {
            panic!()
        };
        assert!(matches!(cache.find(key, false), Found::Lead(_)));
    }

    #[test]
    fn successes_are_kept_for_their_ttl_and_failures_never() {
        let cache = cache(10, 1 << 20);
        let key = call_key("t", &json!({}), 0, None);
        let Found::Lead(leader) = cache.find(key, true) else {
            panic!()
        };
        leader.finish(&Ok(result(1)), Some(Duration::from_secs(60)));
        match cache.find(key, true) {
            Found::Kept(r) => assert_eq!(n(&r), json!(1)),
            _ => panic!("not kept"),
        }
        assert_eq!(cache.hits.load(Ordering::Relaxed), 1);
        let other = call_key("u", &json!({}), 0, None);
        let Found::Lead(leader) = cache.find(other, true) else {
            panic!()
        };
        let failure = CallFailure::new(contract::ErrorCode::ExecutionError, "x".into());
        leader.finish(&Err(failure), Some(Duration::from_secs(60)));
        assert!(matches!(cache.find(other, true), Found::Lead(_)));
        // An expired result is gone.
        let short = call_key("v", &json!({}), 0, None);
        cache.keep(short, result(2), Duration::ZERO);
        assert!(matches!(cache.find(short, true), Found::Lead(_)));
    }

    #[test]
    fn results_kept_together_never_pass_the_bounds() {
        for (max_entries, max_bytes) in [(5, 1 << 20), (100, 300)] {
            let cache = cache(max_entries, max_bytes);
            let barrier = std::sync::Barrier::new(32);
            std::thread::scope(|scope| {
                for t in 0..32u64 {
                    let (cache, barrier) = (&cache, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        for i in 0..20u64 {
                            let key = call_key("t", &json!({"t": t, "i": i}), 0, None);
                            cache.keep(key, result(i), Duration::from_secs(60));
                            let (entries, bytes) = cache.size();
                            assert!(entries <= max_entries && bytes <= max_bytes);
                        }
                    });
                }
            });
            let (entries, bytes) = cache.size();
            assert!(
                entries <= max_entries && bytes <= max_bytes,
                "{entries}, {bytes}"
            );
            assert!(entries > 0);
        }
    }

    #[test]
    fn the_oldest_go_first_when_a_bound_is_reached() {
        let cache = cache(3, 1 << 20);
        let keys: Vec<CallKey> = (0..5)
            .map(|i| call_key("t", &json!({"i": i}), 0, None))
            .collect();
        for (i, key) in keys.iter().enumerate() {
            cache.keep(*key, result(i as u64), Duration::from_secs(60));
        }
        assert_eq!(cache.size().0, 3);
        assert!(cache.kept(&keys[0]).is_none() && cache.kept(&keys[1]).is_none());
        assert!(cache.kept(&keys[4]).is_some());
        // Bytes bound: each result is ~72 bytes; 200 bytes hold two.
        let small = self::cache(100, 200);
        for (i, key) in keys.iter().enumerate() {
            small.keep(*key, result(i as u64), Duration::from_secs(60));
        }
        let (entries, bytes) = small.size();
        assert!(
            entries == 2 && bytes <= 200,
            "{entries} entries, {bytes} bytes"
        );
        // Kept again: one entry, the bytes counted once.
        let again = self::cache(100, 1 << 20);
        for _ in 0..100 {
            again.keep(keys[0], result(1), Duration::from_secs(60));
        }
        let (entries, bytes) = again.size();
        assert_eq!((entries, bytes), (1, approximate_size(&result(1).output)));
        assert!(again.kept.write_unpoisoned().order.len() < 100);
    }

    #[test]
    fn a_result_goes_to_redis_and_back_whole() {
        let data = result(3);
        let back = from_shared_text(&to_shared_text(&data).unwrap()).unwrap();
        assert_eq!(n(&back), json!(3));
        let mcp = CallResult {
            output: ToolOutput::Mcp(Box::new(rmcp::model::CallToolResult::success(vec![
                rmcp::model::ContentBlock::text("hi"),
            ]))),
            typed: true,
            cache: None,
        };
        let back = from_shared_text(&to_shared_text(&mcp).unwrap()).unwrap();
        assert!(back.typed);
        let ToolOutput::Mcp(r) = back.output else {
            panic!()
        };
        assert_eq!(r.content.len(), 1);
        assert!(from_shared_text("{\"x\":1}").is_none());
    }
}
