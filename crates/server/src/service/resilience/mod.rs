//! Containment of upstreams that fail without dying, per provider (`resilience`): a circuit
//! breaker that refuses calls at once while the upstream keeps failing ([`breaker`]), retries of
//! idempotent tools within a budget ([`budget`]), hedging of slow read-only calls, and shared
//! read-only results ([`cache`]). Outlier ejection among a pool's children is the pool's own
//! (`provider/mcp/pool.rs`).
//!
//! One call's way through it (`service/call.rs` drives it, on the one call path REST, MCP and
//! tasks share): look for a kept or in-flight result → the breaker → admission → attempts
//! (retried, hedged) → the verdict of each attempt to the breaker → the result kept and handed
//! to the calls that waited.
//!
//! Each provider's state is kept across tool-list rebuilds and reloads while its section is
//! unchanged, so a reload does not close an open breaker or empty the cache.

pub mod breaker;
pub mod budget;
pub mod cache;
mod window;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{BoxFuture, Either};
use serde_json::Value;

pub use self::breaker::{Breaker, BreakerReport, BreakerState, Pass, Refused, Verdict};
pub use self::budget::{Budget, Extra};
pub use self::cache::{CacheStatus, ResultCache};
use crate::config::{Resilience as ResilienceConfig, RetryConfig};
use crate::provider::{ToolError, ToolOutput};
use crate::sync::Unpoisoned;

/// One provider's breaker, budget and cache.
pub struct ProviderResilience {
    pub provider: String,
    config: ResilienceConfig,
    pub breaker: Breaker,
    pub budget: Budget,
    pub cache: Arc<ResultCache>,
}

impl ProviderResilience {
    fn new(service: &str, provider: &str, config: &ResilienceConfig) -> ProviderResilience {
        ProviderResilience {
            provider: provider.to_owned(),
            breaker: Breaker::new(service, provider, config.breaker.clone()),
            budget: Budget::new(&config.retry),
            cache: Arc::new(ResultCache::new(config.cache.clone())),
            config: config.clone(),
        }
    }

    pub fn retry(&self) -> &RetryConfig {
        &self.config.retry
    }

    /// `resilience` of the provider in GET /health.
    pub fn report(&self) -> contract::ResilienceReport {
        use std::sync::atomic::Ordering::Relaxed;
        let breaker = self.breaker.report();
        let (cache_entries, cache_bytes) = self.cache.size();
        contract::ResilienceReport {
            circuit: match breaker.state {
                BreakerState::Closed => contract::CircuitState::Closed,
                BreakerState::Open => contract::CircuitState::Open,
                BreakerState::HalfOpen => contract::CircuitState::HalfOpen,
            },
            circuit_since: breaker
                .since
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            retry_after_seconds: breaker.retry_after.map(|d| d.as_secs_f64().ceil() as u64),
            circuit_reason: breaker.reason,
            circuit_opened: breaker.opened,
            circuit_refused: breaker.refused,
            retries: self.budget.retries.load(Relaxed),
            hedges: self.budget.hedges.load(Relaxed),
            retry_budget_exhausted: self.budget.exhausted.load(Relaxed),
            cache_hits: self.cache.hits.load(Relaxed),
            cache_coalesced: self.cache.coalesced.load(Relaxed),
            cache_misses: self.cache.misses.load(Relaxed),
            cache_entries,
            cache_bytes,
        }
    }

    /// What this provider's section says of one tool (`upstream`: the provider's name for it;
    /// `annotations`: what the upstream says of it; `per_caller`: its upstream is called with
    /// each caller's own credentials, so results are never shared between callers).
    pub fn policy(
        &self,
        upstream: &str,
        annotations: Option<&Value>,
        per_caller: bool,
    ) -> ToolPolicy {
        let hint = |name: &str| {
            annotations
                .and_then(|a| a.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let read_only = hint("readOnlyHint") || self.config.read_only(upstream);
        let idempotent = read_only || hint("idempotentHint") || self.config.idempotent(upstream);
        let cache = &self.config.cache;
        let rule = cache.rule_for(upstream);
        ToolPolicy {
            retries: if idempotent && self.config.retry.enabled {
                self.config.retry.attempts.saturating_sub(1) as u32
            } else {
                0
            },
            hedge: (read_only && self.config.hedge.enabled).then_some(self.config.hedge.after),
            share: (read_only && cache.enabled && (cache.coalesce || rule.is_some())).then(|| {
                Sharing {
                    coalesce: cache.coalesce,
                    ttl: rule.map(|r| r.ttl),
                    per_caller: per_caller || rule.is_some_and(|r| r.per_caller),
                }
            }),
        }
    }
}

/// How one tool's calls are run, resolved once per tool list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolPolicy {
    /// Attempts after the first, for a failure that left the tool unrun or safe to run again.
    pub retries: u32,
    /// Hedged (read-only, `hedge.enabled`): after this long, or after the tool's p95 when
    /// `None`.
    pub hedge: Option<Option<Duration>>,
    /// Shared with identical calls (read-only tools).
    pub share: Option<Sharing>,
}

impl ToolPolicy {
    /// Whether a call may be sent more than once (its arguments are kept for that).
    pub fn more_than_once(&self) -> bool {
        self.retries > 0 || self.hedge.is_some()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sharing {
    pub coalesce: bool,
    /// How long a success is kept (`None`: only calls in flight are shared).
    pub ttl: Option<Duration>,
    pub per_caller: bool,
}

/// The providers' states of one service, kept across rebuilds while their sections are
/// unchanged.
#[derive(Default)]
pub struct Resilience {
    providers: Mutex<HashMap<String, Arc<ProviderResilience>>>,
}

impl Resilience {
    /// `provider`'s state under `config`: the one it has, or a new one if the section changed.
    pub fn of(
        &self,
        service: &str,
        provider: &str,
        config: &ResilienceConfig,
    ) -> Arc<ProviderResilience> {
        let mut providers = self.providers.write_unpoisoned();
        if let Some(current) = providers.get(provider)
            && current.config == *config
        {
            return current.clone();
        }
        let fresh = Arc::new(ProviderResilience::new(service, provider, config));
        providers.insert(provider.to_owned(), fresh.clone());
        fresh
    }

    /// Forgets providers no longer configured.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.providers
            .write_unpoisoned()
            .retain(|name, _| keep(name));
    }

    /// Every provider's state, by name.
    pub fn all(&self) -> Vec<Arc<ProviderResilience>> {
        let mut all: Vec<_> = self
            .providers
            .write_unpoisoned()
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| a.provider.cmp(&b.provider));
        all
    }

    pub fn get(&self, provider: &str) -> Option<Arc<ProviderResilience>> {
        self.providers.write_unpoisoned().get(provider).cloned()
    }
}

/// What an attempt's end says of the upstream, and whether another attempt may follow.
pub fn verdict(outcome: &Result<ToolOutput, ToolError>) -> (Verdict, bool) {
    match outcome {
        // A tool's own `isError` is its answer: the upstream worked.
        Ok(_) => (Verdict::Success, false),
        Err(ToolError::Unavailable(_)) => (Verdict::Failure, true),
        Err(ToolError::Upstream { transient, .. }) => (Verdict::Failure, *transient),
        Err(ToolError::Timeout { .. }) => (Verdict::Failure, false),
        Err(
            ToolError::Execution(_)
            | ToolError::NotFound(_)
            | ToolError::InvalidArguments(_)
            | ToolError::CapabilityRequired(_),
        ) => (Verdict::Neutral, false),
    }
}

/// Makes one attempt of a call, bounded by the given time.
pub type Attempt<'a> =
    dyn Fn(Duration) -> BoxFuture<'a, Result<ToolOutput, ToolError>> + Send + Sync + 'a;

impl ProviderResilience {
    /// Runs the call's attempts until one answers, or no other may follow (not retryable,
    /// attempts or budget spent, the breaker open, the deadline near). `first` is the breaker
    /// pass the call was admitted with; `hedge_after` when the call is hedged.
    pub async fn attempts<'a>(
        &'a self,
        policy: &ToolPolicy,
        deadline: Instant,
        first: Pass<'a>,
        hedge_after: Option<Duration>,
        attempt: &'a Attempt<'a>,
    ) -> Result<ToolOutput, ToolError> {
        self.budget.called();
        let mut pass = first;
        let mut retry = 0u32;
        loop {
            let outcome = self
                .attempt_hedged(pass, deadline, hedge_after, attempt)
                .await;
            let (_, retryable) = verdict(&outcome);
            if !retryable || retry >= policy.retries {
                return outcome;
            }
            retry += 1;
            let wait = budget::backoff(&self.config.retry, retry);
            // Never after the deadline: a retry needs the wait and some time to run.
            if Instant::now() + wait + Duration::from_millis(5) >= deadline {
                return outcome;
            }
            let Ok(next) = self.breaker.admit() else {
                return outcome;
            };
            if !self.budget.take(Extra::Retry) {
                tracing::debug!(provider = %self.provider, "retry budget spent: the failure is answered as it is");
                return outcome;
            }
            if let Err(e) = &outcome {
                tracing::debug!(provider = %self.provider, retry, wait_ms = wait.as_millis() as u64, "retrying after a failure that left the tool unrun: {e}");
            }
            tokio::time::sleep(wait).await;
            pass = next;
        }
    }

    /// One attempt, and a second one beside it if the first is still unanswered after
    /// `hedge_after` (budget and breaker allowing).
    async fn attempt_hedged<'a>(
        &'a self,
        pass: Pass<'a>,
        deadline: Instant,
        hedge_after: Option<Duration>,
        attempt: &'a Attempt<'a>,
    ) -> Result<ToolOutput, ToolError> {
        // Rounded up to the millisecond: the first attempt gets the tool's timeout as it is
        // configured (its message says so), later ones what is left of it.
        let left = || {
            let left = deadline.saturating_duration_since(Instant::now());
            Duration::from_millis((left.as_micros() as u64).div_ceil(1000))
        };
        let primary = recorded(pass, attempt(left()));
        let Some(after) = hedge_after.filter(|after| *after < left()) else {
            return primary.await;
        };
        let mut primary = primary.boxed();
        match tokio::time::timeout(after, &mut primary).await {
            Ok(answer) => answer,
            Err(_) => self.hedge(primary, left(), attempt).await,
        }
    }

    /// The second attempt beside a primary still unanswered: the first success wins and the
    /// other is dropped, which cancels it upstream; a failure waits for the other's answer.
    async fn hedge<'a>(
        &'a self,
        primary: BoxFuture<'a, Result<ToolOutput, ToolError>>,
        left: Duration,
        attempt: &'a Attempt<'a>,
    ) -> Result<ToolOutput, ToolError> {
        let pass = match self.breaker.admit() {
            Ok(pass) if self.budget.take(Extra::Hedge) => pass,
            _ => return primary.await,
        };
        tracing::debug!(provider = %self.provider, "hedging: a second attempt beside one still unanswered");
        let second = recorded(pass, attempt(left)).boxed();
        match futures::future::select(primary, second).await {
            Either::Left((Ok(answer), _)) | Either::Right((Ok(answer), _)) => Ok(answer),
            Either::Left((Err(_), other)) | Either::Right((Err(_), other)) => other.await,
        }
    }
}

/// An attempt whose end is recorded with the breaker.
async fn recorded<'a>(
    pass: Pass<'a>,
    attempt: BoxFuture<'a, Result<ToolOutput, ToolError>>,
) -> Result<ToolOutput, ToolError> {
    let outcome = attempt.await;
    pass.record(verdict(&outcome).0);
    outcome
}
