//! Writes the generated code: `Kind::controller`, `Kind::rbac_rules` and the kind's
//! `Definition`, or a stub on error.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, Lit, LitStr};

use crate::validate::{Checked, Stub};

/// The impl block for a valid input.
pub(crate) fn expand(c: &Checked) -> TokenStream {
    let Checked {
        kind,
        krate,
        reconciler,
        ..
    } = c;
    let owns = c
        .owns
        .iter()
        .map(|ty| quote_spanned!(ty.span()=> .owns::<#ty>()))
        .chain(
            c.owns_metadata
                .iter()
                .map(|ty| quote_spanned!(ty.span()=> .owns_metadata::<#ty>())),
        );
    let watches = c
        .watches
        .iter()
        .map(|(ty, mapper)| quote_spanned!(ty.span()=> .watches::<#ty>(#mapper)))
        .chain(
            c.watches_metadata
                .iter()
                .map(|(ty, mapper)| quote_spanned!(ty.span()=> .watches_metadata::<#ty>(#mapper))),
        );
    let name = c.name.as_ref().map(|n| quote!(.name(#n)));
    let condition = &c.condition;
    let settings = settings(c);
    // With a finalizer the reconciler must implement `Cleanup`; without one, it need not.
    let new = if let Some(f) = &c.finalizer {
        quote_spanned! {f.span()=>
            #krate::controller::Controller::<#kind>::with_finalizer(reconciler, #f)
        }
    } else {
        quote!(#krate::controller::Controller::<#kind>::new(reconciler))
    };
    let status = c.status;
    // `update` on `<plural>/finalizers`: for the finalizer, and for the `blockOwnerDeletion` of
    // the owner references `ctx.apply` sets on owned objects.
    let needs_finalizers =
        c.finalizer.is_some() || !c.owns.is_empty() || !c.owns_metadata.is_empty();
    // Metadata-only caching needs the same verbs: the owned objects are still written in full.
    let owned_rules = c
        .owns
        .iter()
        .chain(&c.owns_metadata)
        .map(|ty| quote_spanned!(ty.span()=> .owned::<#ty>()));
    let watched_rules = c
        .watches
        .iter()
        .chain(&c.watches_metadata)
        .map(|(ty, _)| quote_spanned!(ty.span()=> .watched::<#ty>()));
    let description = doc_comment(&c.docs);
    let (crd, converter) = versions(c);
    quote! {
        #[automatically_derived]
        impl #krate::crd::Definition for #kind {
            /// kube's CRD of the kind (with its other versions and their conversion webhook, when
            /// `versions(...)` names them), polished: described by the spec struct's doc comment,
            /// with an explainable status and columns of its condition (see
            /// `kubeward::crd::polish`).
            fn definition() -> #krate::crd::CustomResourceDefinition {
                #krate::crd::polish(#crd, #description, #condition)
            }
        }

        #[automatically_derived]
        impl #kind {
            /// The status condition the controller reports on (`#[controller(condition = "...")]`,
            /// `Ready` by default): what `ctx.report` and the failure reports set, and what the
            /// CRD's columns show.
            pub const CONDITION: &'static str = #condition;

            /// The controller declared by `#[controller(...)]` on the spec struct, calling
            /// `reconciler`, with the kind's CRD and RBAC rules for the manager's `crd` and
            /// `manifests` subcommands; hand it to the manager.
            #[must_use]
            pub fn controller(reconciler: #reconciler) -> #krate::controller::Controller<#kind> {
                let (controller, rules) = Self::__kubeward_wiring();
                controller(reconciler)
                    .crd(<Self as #krate::crd::Definition>::definition())
                    .rbac_rules(rules)
            }

            #converter

            /// The least RBAC rules the controller needs: its kind (and subresources), what it
            /// owns and watches, and Events.
            #[must_use]
            pub fn rbac_rules() -> ::std::vec::Vec<#krate::rbac::PolicyRule> {
                Self::__kubeward_wiring().1
            }

            // The controller and its rules name the owned and watched kinds in one body, so a
            // kind that is not a resource is reported once, not once per use.
            #[doc(hidden)]
            #[allow(clippy::type_complexity)]
            fn __kubeward_wiring() -> (
                fn(#reconciler) -> #krate::controller::Controller<#kind>,
                ::std::vec::Vec<#krate::rbac::PolicyRule>,
            ) {
                let controller = |reconciler: #reconciler| {
                    #new
                        #name
                        #(#owns)*
                        #(#watches)*
                        #settings
                };
                let rules = #krate::rbac::Rules::new()
                    .reconciled::<#kind>(#status, #needs_finalizers)
                    #(#owned_rules)*
                    #(#watched_rules)*
                    .events()
                    .build();
                (controller, rules)
            }
        }
    }
}

/// The builder calls of the keys that set one value each: predicate, concurrency, ring and the
/// condition's settings (a condition other than the default, its first state, owned Events).
fn settings(c: &Checked) -> TokenStream {
    let predicate = c.predicate.as_ref().map(|p| quote!(.predicate(#p)));
    let concurrency = c.concurrency.map(|n| quote!(.concurrency(#n)));
    let ring = c.ring.as_ref().map(|r| quote!(.ring(#r)));
    let condition = &c.condition;
    let set_condition =
        (condition != kubeward_core::condition::DEFAULT).then(|| quote!(.condition(#condition)));
    let initial_condition = c
        .initial_condition
        .map(|on| quote!(.initial_condition(#on)));
    let owned_events = c.owned_events.map(|on| quote!(.owned_events(#on)));
    quote!(#predicate #concurrency #ring #set_condition #initial_condition #owned_events)
}

/// For a kind with other versions: its CRD with them all (each described by its own spec
/// struct, not by this one's doc comment) and `Kind::converter()`; else kube's CRD and nothing.
fn versions(c: &Checked) -> (TokenStream, TokenStream) {
    let krate = &c.krate;
    let condition = &c.condition;
    let own = quote!(<Self as #krate::crd::CustomResourceExt>::crd());
    if c.versions.is_empty() {
        return (own, TokenStream::new());
    }
    let crds = c
        .versions
        .iter()
        .map(|v| quote_spanned!(v.span()=> #krate::crd::polish(<#v as #krate::crd::CustomResourceExt>::crd(), ::core::option::Option::None, #condition)));
    let spokes = c
        .versions
        .iter()
        .map(|v| quote_spanned!(v.span()=> .spoke::<#v>()));
    let kind = &c.kind;
    let mut crd = quote!(#krate::crd::with_versions(#own, [#(#crds),*]));
    if let Some(storage) = &c.storage {
        crd = quote_spanned!(storage.span()=> #krate::crd::stored_in(#crd, #storage));
    }
    let converter = quote! {
        /// Converts between this version, the hub and storage version, and the versions
        /// `#[controller(versions(...))]` names, each through its `Convertible` implementation;
        /// serve it with `manager.add_conversion(Kind::converter())?`.
        #[must_use]
        pub fn converter() -> #krate::conversion::Converter {
            #krate::conversion::Converter::with_hub::<#kind>()
                #(#spokes)*
                .build()
        }
    };
    (crd, converter)
}

/// The doc comment as rustdoc reads it: one line per `#[doc]`, without the space after `///`.
fn doc_comment(docs: &[Expr]) -> TokenStream {
    if docs.is_empty() {
        return quote!(::core::option::Option::None);
    }
    let lines = docs.iter().enumerate().map(|(i, line)| {
        let line = match line {
            Expr::Lit(ExprLit {
                lit: Lit::Str(text),
                ..
            }) => {
                let value = text.value();
                let trimmed = LitStr::new(value.strip_prefix(' ').unwrap_or(&value), text.span());
                quote!(#trimmed)
            }
            other => quote!(#other),
        };
        if i == 0 { line } else { quote!("\n", #line) }
    });
    quote!(::core::option::Option::Some(::core::concat!(#(#lines),*)))
}

/// Stands in for the impl when the input has errors, so uses of `Kind::controller` do not add
/// errors of their own to the one that matters.
pub(crate) fn stub(stub: &Stub) -> TokenStream {
    let Some(kind) = &stub.kind else {
        return TokenStream::new();
    };
    let krate = &stub.krate;
    quote! {
        #[automatically_derived]
        impl #krate::crd::Definition for #kind {
            fn definition() -> #krate::crd::CustomResourceDefinition {
                ::core::unimplemented!("#[derive(Controller)] reported an error")
            }
        }

        #[automatically_derived]
        impl #kind {
            /// Not generated: `#[derive(Controller)]` reported an error.
            pub const CONDITION: &'static str = "";

            /// Not generated: `#[derive(Controller)]` reported an error.
            #[must_use]
            pub fn controller<R>(_reconciler: R) -> #krate::controller::Controller<#kind> {
                ::core::unimplemented!("#[derive(Controller)] reported an error")
            }

            /// Not generated: `#[derive(Controller)]` reported an error.
            #[must_use]
            pub fn rbac_rules() -> ::std::vec::Vec<#krate::rbac::PolicyRule> {
                ::core::unimplemented!("#[derive(Controller)] reported an error")
            }
        }
    }
}
