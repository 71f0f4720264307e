//! Reads the derive input: the struct, its `#[kube(...)]` and its `#[controller(...)]` attributes.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::{DeriveInput, Expr, Ident, LitBool, LitInt, LitStr, Path, Token};

/// The keys `#[controller(...)]` accepts, for the "did you mean" suggestion.
pub(crate) const KEYS: &[&str] = &[
    "reconciler",
    "owns",
    "owns_metadata",
    "watches",
    "watches_metadata",
    "versions",
    "storage",
    "finalizer",
    "concurrency",
    "predicate",
    "name",
    "ring",
    "condition",
    "initial_condition",
    "owned_events",
    "crate",
];

/// What the attributes of the spec struct say, as written (checked by `validate`).
pub(crate) struct Input {
    /// The spec struct's name, where errors about the whole derive point.
    pub(crate) ident: Ident,
    /// What `#[kube(...)]` says; `None` when the struct has no such attribute.
    pub(crate) kube: Option<Kube>,
    /// What `#[controller(...)]` says.
    pub(crate) controller: ControllerAttr,
    /// The span of the first `#[controller]` attribute, or of the struct name.
    pub(crate) controller_span: Span,
    /// The values of the struct's `#[doc = ...]` attributes (its doc comment), line by line.
    pub(crate) docs: Vec<Expr>,
}

/// The parts of kube's `#[kube(...)]` the derive uses.
pub(crate) struct Kube {
    /// `kind = "..."`.
    pub(crate) kind: Option<LitStr>,
    /// `struct = "..."`: the generated type's name when it differs from the kind.
    pub(crate) struct_name: Option<LitStr>,
    /// `status = "..."`.
    pub(crate) status: bool,
    /// The span of the attribute.
    pub(crate) span: Span,
}

/// `#[controller(...)]`, key by key.
#[derive(Default)]
pub(crate) struct ControllerAttr {
    pub(crate) reconciler: Option<Path>,
    pub(crate) owns: Vec<Path>,
    pub(crate) owns_metadata: Vec<Path>,
    pub(crate) watches: Vec<(Path, Expr)>,
    pub(crate) watches_metadata: Vec<(Path, Expr)>,
    /// `versions(Type, ...)`: the kind's other versions, converted through this one.
    pub(crate) versions: Vec<Path>,
    /// `storage = "v1alpha1"`: the version stored, when not this one.
    pub(crate) storage: Option<LitStr>,
    /// The span of the `versions` key, where an empty list is reported.
    pub(crate) versions_span: Option<Span>,
    pub(crate) finalizer: Option<LitStr>,
    pub(crate) concurrency: Option<LitInt>,
    pub(crate) predicate: Option<Expr>,
    pub(crate) name: Option<LitStr>,
    /// `ring = "generators"`: the controller ring it can be sharded in.
    pub(crate) ring: Option<LitStr>,
    /// `condition = "Available"`: the status condition failures go on and the columns show.
    pub(crate) condition: Option<LitStr>,
    /// `initial_condition = false`: the condition does not start `Unknown`.
    pub(crate) initial_condition: Option<LitBool>,
    /// `owned_events = true`: an Event for each owned object written.
    pub(crate) owned_events: Option<LitBool>,
    pub(crate) krate: Option<LitStr>,
    /// Keys that are not in [`KEYS`], for validation to report with a suggestion.
    pub(crate) unknown: Vec<Ident>,
    /// Keys given twice.
    pub(crate) duplicates: Vec<Ident>,
}

/// Reads the input; syntax errors are collected into `errors` and parsing goes on.
pub(crate) fn parse(input: &DeriveInput, errors: &mut Vec<syn::Error>) -> Input {
    let mut kube = None;
    let mut controller = ControllerAttr::default();
    let mut controller_span = None;
    let mut docs = Vec::new();
    for attr in &input.attrs {
        if attr.path().is_ident("doc") {
            if let Ok(line) = attr.meta.require_name_value() {
                docs.push(line.value.clone());
            }
        } else if attr.path().is_ident("kube") {
            // Several `#[kube(...)]` attributes add up, as they do for kube's own derive.
            let found = kube.get_or_insert_with(|| Kube {
                kind: None,
                struct_name: None,
                status: false,
                span: attr
                    .path()
                    .get_ident()
                    .map_or_else(Span::call_site, Ident::span),
            });
            // kube's own derive reports mistakes in `#[kube]`; only the keys used here are read.
            let _ = attr.parse_nested_meta(|meta| read_kube_key(&meta, found));
        } else if attr.path().is_ident("controller") {
            controller_span.get_or_insert_with(|| {
                attr.path()
                    .get_ident()
                    .map_or_else(Span::call_site, Ident::span)
            });
            if let Err(e) =
                attr.parse_nested_meta(|meta| read_controller_key(&meta, &mut controller, errors))
            {
                errors.push(e);
            }
        }
    }
    Input {
        ident: input.ident.clone(),
        kube,
        controller,
        controller_span: controller_span.unwrap_or_else(|| input.ident.span()),
        docs,
    }
}

fn read_kube_key(meta: &ParseNestedMeta<'_>, kube: &mut Kube) -> syn::Result<()> {
    if meta.path.is_ident("kind") {
        kube.kind = Some(meta.value()?.parse()?);
    } else if meta.path.is_ident("struct") {
        kube.struct_name = Some(meta.value()?.parse()?);
    } else if meta.path.is_ident("status") {
        kube.status = true;
        skip_value(meta)?;
    } else {
        skip_value(meta)?;
    }
    Ok(())
}

fn read_controller_key(
    meta: &ParseNestedMeta<'_>,
    c: &mut ControllerAttr,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<()> {
    let Some(key) = meta.path.get_ident().cloned() else {
        errors.push(meta.error("expected a key such as `reconciler = Type`"));
        return skip_value(meta);
    };
    let duplicate = match key.to_string().as_str() {
        "reconciler" => c.reconciler.replace(meta.value()?.parse()?).is_some(),
        "owns" | "owns_metadata" => {
            let owns = if key == "owns" {
                &mut c.owns
            } else {
                &mut c.owns_metadata
            };
            meta.parse_nested_meta(|inner| {
                owns.push(inner.path.clone());
                Ok(())
            })?;
            false
        }
        "watches" | "watches_metadata" => {
            let watches = if key == "watches" {
                &mut c.watches
            } else {
                &mut c.watches_metadata
            };
            meta.parse_nested_meta(|inner| {
                let mapper: Expr = inner.value()?.parse()?;
                watches.push((inner.path.clone(), mapper));
                Ok(())
            })?;
            false
        }
        "versions" => {
            c.versions_span.get_or_insert_with(|| key.span());
            // Read by hand, so that an empty list is one clear error from `validate`.
            let content;
            syn::parenthesized!(content in meta.input);
            let paths = content.parse_terminated(<Path as syn::parse::Parse>::parse, Token![,])?;
            c.versions.extend(paths);
            false
        }
        "storage" => c.storage.replace(meta.value()?.parse()?).is_some(),
        "finalizer" => c.finalizer.replace(meta.value()?.parse()?).is_some(),
        "concurrency" => c.concurrency.replace(meta.value()?.parse()?).is_some(),
        "predicate" => c.predicate.replace(meta.value()?.parse()?).is_some(),
        "name" => c.name.replace(meta.value()?.parse()?).is_some(),
        "ring" => c.ring.replace(meta.value()?.parse()?).is_some(),
        "condition" => c.condition.replace(meta.value()?.parse()?).is_some(),
        "initial_condition" => (c.initial_condition)
            .replace(meta.value()?.parse()?)
            .is_some(),
        "owned_events" => c.owned_events.replace(meta.value()?.parse()?).is_some(),
        "crate" => c.krate.replace(meta.value()?.parse()?).is_some(),
        _ => {
            c.unknown.push(key);
            return skip_value(meta);
        }
    };
    if duplicate {
        c.duplicates.push(key);
    }
    Ok(())
}

/// Skips what follows a key: `= value`, `(...)` or nothing.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _: TokenStream = meta.input.parse::<proc_macro2::Group>()?.stream();
    }
    Ok(())
}
