//! axum-service: a small in-memory JSON API for "items", the sample service
//! of Kavach's axum integration (integrations/axum: Kavach records and
//! replays its HTTP/1.1 traffic; see docs/design.md, "Integrations"). Built
//! offline from Debian's source crates by scripts/axum-build.sh; planted
//! bugs live in patches/.
//!
//! Routes:
//!
//!   GET    /health                      {"status":"ok"}
//!   GET    /metrics                     counters, Prometheus text format
//!   POST   /api/v1/items                {"name","price_cents","quantity"} -> 201 + Location
//!   GET    /api/v1/items                every item, ordered by id
//!   GET    /api/v1/items/:id            the item, or 404
//!   DELETE /api/v1/items/:id            204, or 404
//!   POST   /api/v1/items/:id/split      {"parts"} -> the price split in parts
//!   anything else                       404 {"error":"no route"}
//!
//! Every error is JSON: {"error": "..."}. Responses are deterministic: ids
//! are sequential from 1 (never reused), lists are ordered by id, and no body
//! holds a time.
//!
//! Listens on 127.0.0.1:PORT, PORT from `--port N` or else from the PORT
//! environment variable (else 3000; 0 picks a free port), and prints
//! "listening on 127.0.0.1:N" to stderr once it accepts connections.
//!
//! Items live in memory only, unless `--state DIR` is given: then they are
//! loaded from DIR/items.json at start-up (none when it is not there) and
//! written back there after each change (to a temporary file, renamed), as
//! {"last_id": N, "items": [...]}.

use std::collections::BTreeMap;
use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

const DEFAULT_PORT: u16 = 3000;

#[derive(Clone, Serialize, Deserialize)]
struct Item {
    id: u64,
    name: String,
    /// The price of the whole line (all the units).
    price_cents: i64,
    quantity: i64,
    /// price_cents / quantity, rounded down.
    unit_price_cents: i64,
}

#[derive(Deserialize)]
struct NewItem {
    name: String,
    price_cents: i64,
    quantity: i64,
}

#[derive(Deserialize)]
struct SplitRequest {
    parts: i64,
}

#[derive(Serialize)]
struct Split {
    id: u64,
    price_cents: i64,
    parts: i64,
    each_cents: i64,
    remainder_cents: i64,
}

#[derive(Serialize)]
struct ErrorBody {
    error: String,
}

#[derive(Default)]
struct Store {
    last_id: u64,
    items: BTreeMap<u64, Item>,
    /// DIR/items.json, with `--state DIR`: written after each change.
    file: Option<PathBuf>,
}

/// What DIR/items.json holds.
#[derive(Serialize, Deserialize)]
struct StoreFile {
    last_id: u64,
    items: Vec<Item>,
}

impl Store {
    /// The store of `--state DIR`: DIR/items.json, or empty when the file
    /// is not there.
    fn load(dir: &FsPath) -> Result<Store, String> {
        if !dir.is_dir() {
            return Err(format!("--state {}: not a directory", dir.display()));
        }
        let file = dir.join("items.json");
        let mut store = Store {
            file: Some(file.clone()),
            ..Store::default()
        };
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(store),
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        let saved: StoreFile =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        store.last_id = saved.last_id;
        store.items = saved
            .items
            .into_iter()
            .map(|item| (item.id, item))
            .collect();
        Ok(store)
    }

    /// Writes the items back, with `--state DIR`: to a temporary file,
    /// renamed over items.json, so that a reader never sees half of it.
    fn save(&self) {
        let Some(file) = &self.file else { return };
        let saved = StoreFile {
            last_id: self.last_id,
            items: self.items.values().cloned().collect(),
        };
        let tmp = file.with_extension("json.tmp");
        let written = serde_json::to_vec(&saved)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, file));
        if let Err(e) = written {
            eprintln!("axum-service: cannot write {}: {e}", file.display());
        }
    }
}

/// What the metrics middleware counts.
#[derive(Default)]
struct Metrics {
    /// Requests that reached the middleware.
    requests: AtomicU64,
    /// Responses that left it, by status class: 1xx at 0 ... 5xx at 4. A
    /// request whose handler panicked never gets a response, so it is in
    /// `requests` only.
    responses: [AtomicU64; 5],
}

#[derive(Clone, Default)]
struct AppState {
    store: Arc<Mutex<Store>>,
    metrics: Arc<Metrics>,
}

impl AppState {
    /// The store, even after a handler panicked while holding it: every
    /// change to it is a single insert or remove, so it is never left half
    /// done.
    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The store, for a change: written back (with `--state DIR`) once the
    /// change is done and the lock is let go.
    fn change(&self) -> StoreChange<'_> {
        StoreChange(self.store())
    }
}

/// The store locked for a change (AppState::change): saved when dropped.
struct StoreChange<'a>(MutexGuard<'a, Store>);

impl std::ops::Deref for StoreChange<'_> {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.0
    }
}

impl std::ops::DerefMut for StoreChange<'_> {
    fn deref_mut(&mut self) -> &mut Store {
        &mut self.0
    }
}

impl Drop for StoreChange<'_> {
    fn drop(&mut self) {
        self.0.save();
    }
}

type ApiError = (StatusCode, Json<ErrorBody>);

fn error(status: StatusCode, msg: impl Into<String>) -> ApiError {
    (status, Json(ErrorBody { error: msg.into() }))
}

fn not_found(id: u64) -> ApiError {
    error(StatusCode::NOT_FOUND, format!("item {id} not found"))
}

/// A body that is not the JSON expected: 400 (syntax), 415 (no JSON content
/// type) or 422 (wrong fields), as axum says, but with a JSON body.
fn bad_json(rejection: JsonRejection) -> ApiError {
    error(rejection.status(), rejection.body_text())
}

/// An id that is not a number.
fn bad_path(rejection: PathRejection) -> ApiError {
    error(rejection.status(), rejection.body_text())
}

async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn create_item(
    State(state): State<AppState>,
    body: Result<Json<NewItem>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(new) = body.map_err(bad_json)?;
    if new.name.trim().is_empty() {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, "name must not be empty"));
    }
    if new.price_cents < 0 {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, "price_cents must not be negative"));
    }
    if new.quantity < 1 {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, "quantity must be at least 1"));
    }
    let mut store = state.change();
    store.last_id += 1;
    let id = store.last_id;
    let item = Item {
        id,
        name: new.name,
        price_cents: new.price_cents,
        quantity: new.quantity,
        unit_price_cents: new.price_cents / new.quantity,
    };
    store.items.insert(id, item.clone());
    drop(store);
    let location = format!("/api/v1/items/{id}");
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(item)).into_response())
}

async fn list_items(State(state): State<AppState>) -> Json<Vec<Item>> {
    Json(state.store().items.values().cloned().collect())
}

async fn get_item(
    State(state): State<AppState>,
    id: Result<Path<u64>, PathRejection>,
) -> Result<Json<Item>, ApiError> {
    let Path(id) = id.map_err(bad_path)?;
    let item = state.store().items.get(&id).cloned();
    item.map(Json).ok_or_else(|| not_found(id))
}

async fn delete_item(
    State(state): State<AppState>,
    id: Result<Path<u64>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let Path(id) = id.map_err(bad_path)?;
    let removed = state.change().items.remove(&id);
    removed.map(|_| StatusCode::NO_CONTENT).ok_or_else(|| not_found(id))
}

async fn split_item(
    State(state): State<AppState>,
    id: Result<Path<u64>, PathRejection>,
    body: Result<Json<SplitRequest>, JsonRejection>,
) -> Result<Json<Split>, ApiError> {
    let Path(id) = id.map_err(bad_path)?;
    let Json(req) = body.map_err(bad_json)?;
    // Copied out: the store is not locked while computing.
    let price_cents = state.store().items.get(&id).map(|item| item.price_cents);
    let price_cents = price_cents.ok_or_else(|| not_found(id))?;
    if req.parts <= 0 {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, "parts must be at least 1"));
    }
    Ok(Json(Split {
        id,
        price_cents,
        parts: req.parts,
        each_cents: price_cents / req.parts,
        remainder_cents: price_cents % req.parts,
    }))
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let m = &state.metrics;
    let items = state.store().items.len();
    let mut text = String::new();
    text.push_str("# HELP axum_service_requests_total Requests received.\n");
    text.push_str("# TYPE axum_service_requests_total counter\n");
    text.push_str(&format!(
        "axum_service_requests_total {}\n",
        m.requests.load(Ordering::Relaxed)
    ));
    text.push_str("# HELP axum_service_responses_total Responses sent, by status class.\n");
    text.push_str("# TYPE axum_service_responses_total counter\n");
    for (i, count) in m.responses.iter().enumerate() {
        text.push_str(&format!(
            "axum_service_responses_total{{class=\"{}xx\"}} {}\n",
            i + 1,
            count.load(Ordering::Relaxed)
        ));
    }
    text.push_str("# HELP axum_service_items Items in the store.\n");
    text.push_str("# TYPE axum_service_items gauge\n");
    text.push_str(&format!("axum_service_items {items}\n"));
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
}

async fn no_route() -> ApiError {
    error(StatusCode::NOT_FOUND, "no route")
}

async fn method_not_allowed() -> ApiError {
    error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}

/// Middleware: counts every request, and every response by status class.
/// The metrics request itself is counted once it is answered.
async fn count_requests(State(state): State<AppState>, req: Request, next: Next) -> Response {
    state.metrics.requests.fetch_add(1, Ordering::Relaxed);
    let resp = next.run(req).await;
    let class = usize::from(resp.status().as_u16() / 100);
    if (1..=5).contains(&class) {
        state.metrics.responses[class - 1].fetch_add(1, Ordering::Relaxed);
    }
    resp
}

fn app(state: AppState) -> Router {
    let items = Router::new()
        .route(
            "/items",
            post(create_item).get(list_items).fallback(method_not_allowed),
        )
        .route(
            "/items/:id",
            get(get_item).delete(delete_item).fallback(method_not_allowed),
        )
        .route("/items/:id/split", post(split_item).fallback(method_not_allowed));
    Router::new()
        .route("/health", get(health).fallback(method_not_allowed))
        .route("/metrics", get(metrics).fallback(method_not_allowed))
        .nest("/api/v1", items)
        .fallback(no_route)
        .layer(middleware::from_fn_with_state(state.clone(), count_requests))
        .with_state(state)
}

/// The port and the state directory: `--port N` (or `--port=N`) wins over
/// the PORT environment variable; neither gives DEFAULT_PORT. `--state DIR`
/// (or `--state=DIR`) is optional.
fn args_from(args: &[String], env: Option<String>) -> Result<(u16, Option<PathBuf>), String> {
    let parse = |what: &str, s: &str| {
        s.trim()
            .parse::<u16>()
            .map_err(|_| format!("{what}: not a port number: {s:?}"))
    };
    let mut port = None;
    let mut state = None;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--port" || arg == "--state" {
            let value = args.get(i + 1).ok_or(format!("{arg} needs a value"))?;
            if arg == "--port" {
                port = Some(parse("--port", value)?);
            } else {
                state = Some(PathBuf::from(value));
            }
            i += 2;
            continue;
        }
        if let Some(value) = arg.strip_prefix("--port=") {
            port = Some(parse("--port", value)?);
        } else if let Some(value) = arg.strip_prefix("--state=") {
            state = Some(PathBuf::from(value));
        } else {
            return Err(format!(
                "unknown argument {arg:?} (usage: axum-service [--port N] [--state DIR])"
            ));
        }
        i += 1;
    }
    let port = match (port, env) {
        (Some(p), _) => p,
        (None, Some(s)) if !s.is_empty() => parse("PORT", &s)?,
        _ => DEFAULT_PORT,
    };
    Ok((port, state))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (port, state_dir) = args_from(&args, std::env::var("PORT").ok()).unwrap_or_else(|e| {
        eprintln!("axum-service: {e}");
        std::process::exit(2);
    });
    let mut state = AppState::default();
    if let Some(dir) = state_dir {
        let store = Store::load(&dir).unwrap_or_else(|e| {
            eprintln!("axum-service: {e}");
            std::process::exit(2);
        });
        state.store = Arc::new(Mutex::new(store));
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| {
            eprintln!("axum-service: cannot listen on 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        });
    let addr = listener.local_addr().expect("local address of a bound socket");
    eprintln!("listening on {addr}");
    if let Err(e) = axum::serve(listener, app(state)).await {
        eprintln!("axum-service: {e}");
        std::process::exit(1);
    }
}
