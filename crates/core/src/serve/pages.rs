//! The window's own files (`ui/`, embedded in the binary) as pages, under the app's strict
//! content security policy.

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};

static UI: include_dir::Dir<'_> = include_dir::include_dir!("$CARGO_MANIFEST_DIR/../../ui");

/// The app's content security policy, with the page's own origin for its calls.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The file at `path` (`/` is `index.html`), or 404.
pub(super) fn page(path: &str) -> Response<Body> {
    let path = path.trim_start_matches('/');
    let path = if path.is_empty() { "index.html" } else { path };
    let Some(file) = UI.get_file(path) else {
        return super::plain(StatusCode::NOT_FOUND, "not found");
    };
    let kind = match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    };
    let mut r = Response::new(Body::from(file.contents()));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // The first page's URL carries the token: never send it on as a referrer.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    super::no_store(&mut r);
    r
}
