//! Keeps what a Manager's webhook server serves: admission webhooks, routes and conversions.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use http::{Response, header};
use parking_lot::Mutex;

use crate::conversion::{Converter, answer_body};
use crate::crd::CONVERSION_PATH;
use crate::manager::{Error, Result};
use crate::webhook::{Admission, Route};

/// What the webhook server serves, and every path taken.
#[derive(Default)]
pub(super) struct WebhookSet {
    pub(super) admissions: Vec<Admission>,
    pub(super) routes: Vec<Route>,
    /// The converters served at `/convert`, one per CRD.
    pub(super) converters: Vec<Converter>,
    paths: HashSet<String>,
}

/// The webhook set of a manager, kept in it and shared with its webhook server's runnable.
#[derive(Clone, Default)]
pub(super) struct Webhooks(pub(super) Arc<Mutex<WebhookSet>>);

impl WebhookSet {
    /// The routes of the webhooks, the other routes and the conversions, as served.
    pub(super) fn all_routes(&self) -> Vec<Route> {
        (self.admissions.iter().map(|w| w.route.clone()))
            .chain(self.routes.iter().cloned())
            .chain(conversion_route(&self.converters))
            .collect()
    }

    /// Reserves `path`.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a webhook or route has it already.
    pub(super) fn claim(&mut self, path: &str) -> Result<()> {
        if self.paths.insert(path.to_owned()) {
            return Ok(());
        }
        Err(Error::DuplicatePath {
            path: path.to_owned(),
        })
    }
}

/// The route answering `ConversionReview`s with `converters`, if there are any.
fn conversion_route(converters: &[Converter]) -> Option<Route> {
    if converters.is_empty() {
        return None;
    }
    let converters: Arc<[Converter]> = converters.to_vec().into();
    let crds: Vec<String> = converters.iter().map(|c| c.crd_name().to_owned()).collect();
    let route = Route::new(CONVERSION_PATH, move |body: Bytes| {
        let (status, body) = answer_body(&converters, &body);
        let mut response = Response::new(Bytes::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        std::future::ready(response)
    });
    Some(crds.into_iter().fold(route, Route::converts))
}
