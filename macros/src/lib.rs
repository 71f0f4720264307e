//! Derives the controller wiring, least RBAC and polished CRD of a kubeward custom resource.
//!
//! Use it through the framework: `kubeward::Controller` (its documentation shows the attributes).

mod expand;
mod parse;
mod validate;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Generates `Kind::controller(reconciler)`, `Kind::rbac_rules()` and `kubeward::crd::Definition`
/// for the kind that kube's `CustomResource` derive makes from this spec struct. See
/// `kubeward::Controller`.
#[proc_macro_derive(Controller, attributes(controller))]
pub fn derive_controller(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let mut errors = Vec::new();
    let parsed = parse::parse(&input, &mut errors);
    let tokens = match validate::validate(parsed, &mut errors) {
        Ok(checked) => expand::expand(&checked),
        Err(stub) => {
            let compile_errors = errors.iter().map(syn::Error::to_compile_error);
            let stub = expand::stub(&stub);
            quote::quote!(#(#compile_errors)* #stub)
        }
    };
    tokens.into()
}
