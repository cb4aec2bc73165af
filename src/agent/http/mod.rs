//! `transport: http`: an OpenAI-compatible chat completions server (ollama,
//! llama.cpp, vLLM, OpenAI, over http or https). One turn is one
//! `POST <base_url>/chat/completions` with the whole conversation, tried again on
//! 429, 500, 502, 503, 504 and a dropped connection; the model's tool calls come back
//! as `tool_calls`. docs/agent.md says what each fault does.
//!
//! With `agent.driver`, a WASM component speaks the provider's protocol instead: each
//! try is one call of the driver ([`driver`]); the retries, bounds and trace are the same.

pub mod driver;
mod retry;
pub(crate) mod tls;
mod wire;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use super::{BoxFuture, Conversation, HttpConfig, Progress, Reply, Transport};
use crate::catalogue::E_AGT_001;
use crate::diag::Diagnostic;
use crate::trace::{AttemptResult, Event, TraceWriter, Usage};

pub use driver::Driver;
pub use retry::{BACKOFF_BASE, BACKOFF_CAP, RETRY_AFTER_CAP, RETRY_STATUSES, backoff, retry_after};
pub use tls::{CONNECT_TIMEOUT, SSL_CERT_FILE};
pub use wire::{Stream, body, parse_completion};

/// The http transport.
pub struct HttpTransport {
    client: reqwest::Client,
    url: String,
    config: HttpConfig,
    /// The key itself, read from `api_key_env` at start; never logged or traced.
    api_key: Option<String>,
    /// Where each try goes as a `model_request` record.
    trace: Option<Arc<TraceWriter>>,
    /// Where streamed text goes as it arrives.
    progress: Option<Progress>,
    /// `agent.driver`, loaded: each try is one call of it.
    driver: Option<Arc<dyn Driver>>,
}

/// One try that did not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The server's HTTP status, when one answered.
    pub status: Option<u16>,
    pub message: String,
    /// Worth another try under `agent.max_retries`.
    pub retryable: bool,
    /// How long the server asked to wait.
    pub retry_after: Option<Duration>,
}

impl Failure {
    pub fn new(message: String) -> Self {
        Failure {
            status: None,
            message,
            retryable: false,
            retry_after: None,
        }
    }
}

/// One try that answered: the reply, the server's usage, the status.
type Answered = (Reply, Option<Usage>, u16);

/// The model key from the variable `agent.api_key_env` names (`None`: it names none).
/// Unset or empty is E-AGT-001, with a hint naming that variable. `mur doctor` runs
/// this same check before a launch would.
pub fn api_key(name: Option<&str>) -> Result<Option<String>, Diagnostic> {
    let Some(name) = name else { return Ok(None) };
    let state = match std::env::var(name) {
        Ok(key) if !key.is_empty() => return Ok(Some(key)),
        Ok(_) => "empty",
        Err(_) => "not set",
    };
    Err(Diagnostic::new(
        E_AGT_001,
        format!("agent.api_key_env names {name}, which is {state}"),
    )
    .hint(format!(
        "Export {name} before `mur run` (`export {name}=...`), or remove \
         `agent.api_key_env` for a server that needs no key."
    )))
}

impl HttpTransport {
    /// Reads the key and loads the CA certificates. Refuses an `api_key_env` that is
    /// unset or empty (E-AGT-001), CA files that do not load (E-AGT-003). A transport
    /// whose config names a driver needs one handed over ([`HttpTransport::with_driver`]).
    pub fn new(config: &HttpConfig) -> Result<Self, Diagnostic> {
        let api_key = api_key(config.api_key_env.as_deref())?;
        Ok(HttpTransport {
            client: tls::client(config.ca_file.as_deref(), config.timeout)?,
            url: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            config: config.clone(),
            api_key,
            trace: None,
            progress: None,
            driver: None,
        })
    }

    /// Each try goes to `driver` (the loaded `agent.driver`) instead of chat completions.
    pub fn with_driver(mut self, driver: Arc<dyn Driver>) -> Self {
        self.driver = Some(driver);
        self
    }

    /// The request body for a conversation: chat completions', or the driver's
    /// provider-neutral request.
    pub fn body(&self, c: &Conversation) -> Value {
        match self.driver {
            Some(_) => driver::request(&self.config, c),
            None => wire::body(&self.config, c),
        }
    }

    /// One turn: tries until one answers, a fault is not worth another try, or
    /// `agent.max_retries` more tries have failed. Each try is a `model_request`.
    async fn exchange(&self, c: &Conversation) -> Result<Reply, String> {
        let body = self.body(c);
        if crate::trace::holds_token(&body.to_string()) {
            return Err("refused to send the conversation: it holds a formation token".into());
        }
        let mut attempt = 1;
        loop {
            let started = Instant::now();
            let tried = self.try_once(&body).await;
            let elapsed_ms = started.elapsed().as_millis() as u64;
            let failure = match tried {
                Ok((reply, usage, status)) => {
                    self.record(Event::ModelRequest {
                        task_id: c.task_id.clone(),
                        attempt,
                        result: AttemptResult::Answered,
                        status: Some(status),
                        error: None,
                        elapsed_ms,
                        retry_in_ms: None,
                        usage,
                    });
                    return Ok(reply);
                }
                Err(f) => f,
            };
            let wait = match failure.retry_after {
                _ if !failure.retryable || attempt > self.config.max_retries => None,
                Some(asked) if asked > RETRY_AFTER_CAP => None,
                Some(asked) => Some(asked),
                None => Some(backoff(attempt)),
            };
            let result = if wait.is_some() {
                AttemptResult::Retrying
            } else {
                AttemptResult::Failed
            };
            self.record(Event::ModelRequest {
                task_id: c.task_id.clone(),
                attempt,
                result,
                status: failure.status,
                error: Some(failure.message.clone()),
                elapsed_ms,
                retry_in_ms: wait.map(|w| w.as_millis() as u64),
                usage: None,
            });
            let Some(wait) = wait else {
                return Err(self.give_up(&failure, attempt));
            };
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// The turn's error after its last try.
    fn give_up(&self, failure: &Failure, attempt: u32) -> String {
        let mut message = failure.message.clone();
        if let Some(asked) = failure.retry_after.filter(|a| *a > RETRY_AFTER_CAP) {
            message.push_str(&format!(
                "; it asked to be tried again in {}, longer than mur waits ({})",
                humantime::format_duration(asked),
                humantime::format_duration(RETRY_AFTER_CAP)
            ));
        } else if failure.retryable {
            message.push_str(&format!(
                " (after {attempt} tries; agent.max_retries is {})",
                self.config.max_retries
            ));
        }
        message
    }

    /// One request, bounded by `agent.timeout`: the whole exchange for a plain
    /// answer; for a stream, the wait for its headers and for each event.
    async fn try_once(&self, body: &Value) -> Result<Answered, Failure> {
        if let Some(d) = &self.driver {
            let answer = d
                .turn(
                    &body.to_string(),
                    self.api_key.as_deref(),
                    self.config.timeout,
                )
                .await?;
            return driver::parse(&answer).map_err(Failure::new);
        }
        let limit = self.config.timeout;
        let deadline = Instant::now() + limit;
        let stalled = || {
            Failure::new(format!(
                "{} gave no answer within {} (agent.timeout)",
                self.url,
                humantime::format_duration(limit)
            ))
        };
        let mut request = self.client.post(&self.url).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = tokio::time::timeout_at(deadline, request.send())
            .await
            .map_err(|_| stalled())?
            .map_err(|e| self.fault(&e))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry_after(v, SystemTime::now()));
            let text = tokio::time::timeout_at(deadline, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let shown: String = text.chars().take(300).collect();
            return Err(Failure {
                status: Some(status.as_u16()),
                message: format!("{} answered {status}: {shown}", self.url),
                retryable: RETRY_STATUSES.contains(&status.as_u16()),
                retry_after,
            });
        }
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let (reply, usage) = if is_stream {
            self.read_stream(response, limit).await?
        } else {
            let text = tokio::time::timeout_at(deadline, response.text())
                .await
                .map_err(|_| stalled())?
                .map_err(|e| self.fault(&e))?;
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                Failure::new(format!(
                    "{} answered with something not JSON: {e}",
                    self.url
                ))
            })?;
            parse_completion(&value).map_err(|why| Failure::new(format!("{}: {why}", self.url)))?
        };
        Ok((reply, usage, status.as_u16()))
    }

    /// A streamed answer: each event must come within `limit` of the one before.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        limit: Duration,
    ) -> Result<(Reply, Option<Usage>), Failure> {
        use eventsource_stream::Eventsource;
        let mut events = response.bytes_stream().eventsource();
        let mut stream = Stream::default();
        let mut shown = false;
        let read = self
            .read_events(&mut events, &mut stream, &mut shown, limit)
            .await;
        if shown && let Some(progress) = &self.progress {
            progress("", true);
        }
        read?;
        Ok(stream.finish())
    }

    /// Reads events into `stream` until `[DONE]` or the end; each piece of text goes to
    /// the progress sink (`shown` once one has).
    async fn read_events(
        &self,
        events: &mut (
                 impl futures_util::Stream<
            Item = Result<
                eventsource_stream::Event,
                eventsource_stream::EventStreamError<reqwest::Error>,
            >,
        > + Unpin
             ),
        stream: &mut Stream,
        shown: &mut bool,
        limit: Duration,
    ) -> Result<(), Failure> {
        while !stream.is_done() {
            let next = tokio::time::timeout(limit, events.next())
                .await
                .map_err(|_| {
                    Failure::new(format!(
                        "{} stopped streaming: no event within {} (agent.timeout)",
                        self.url,
                        humantime::format_duration(limit)
                    ))
                })?;
            match next {
                Some(Ok(event)) => {
                    let added = stream
                        .push(&event.data)
                        .map_err(|why| Failure::new(format!("{} {why}", self.url)))?;
                    if !added.is_empty()
                        && let Some(progress) = &self.progress
                    {
                        progress(&added, false);
                        *shown = true;
                    }
                }
                Some(Err(eventsource_stream::EventStreamError::Transport(e))) => {
                    return Err(self.fault(&e));
                }
                Some(Err(e)) => {
                    return Err(Failure::new(format!("{} streamed badly: {e}", self.url)));
                }
                // Some servers end the stream without `[DONE]`.
                None => break,
            }
        }
        Ok(())
    }

    fn fault(&self, e: &reqwest::Error) -> Failure {
        let fault = tls::fault(e);
        Failure {
            status: None,
            retryable: fault.is_retryable(),
            message: format!("{}: {fault}", self.url),
            retry_after: None,
        }
    }

    /// A `model_request` record; a trace that refuses it never stops the turn.
    fn record(&self, event: Event) {
        if let Some(trace) = &self.trace
            && let Err(e) = trace.write(event)
        {
            tracing::warn!("{e}");
        }
    }
}

impl Transport for HttpTransport {
    fn name(&self) -> &'static str {
        "http"
    }

    fn turn<'a>(&'a mut self, c: &'a Conversation) -> BoxFuture<'a, Result<Reply, String>> {
        Box::pin(self.exchange(c))
    }

    fn set_trace(&mut self, trace: Arc<TraceWriter>) {
        // No record may hold the key, whoever writes it.
        if let Some(key) = &self.api_key {
            trace.forbid(key);
        }
        self.trace = Some(trace);
    }

    fn set_progress(&mut self, progress: Progress) {
        self.progress = Some(progress);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Message;

    // The transport against a real server (tool calls, the bearer key, retries, TLS,
    // streams) is tested from outside, in tests/it/models/.

    #[tokio::test]
    async fn an_unreachable_or_failing_server_fails_the_task() {
        // A port that was just free: nothing listens on it.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut config = HttpConfig::new(&format!("http://127.0.0.1:{port}/v1"), "m");
        config.max_retries = 0;
        let mut t = HttpTransport::new(&config).unwrap();
        let c = Conversation {
            task_id: "t".into(),
            system: String::new(),
            tools: vec![],
            messages: vec![Message::User { text: "x".into() }],
        };
        let err = t.turn(&c).await.unwrap_err();
        assert!(err.contains("cannot connect"), "{err}");
    }
}
