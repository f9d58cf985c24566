//! The `#[assignor]` attribute of assignor-sdk: wires one author function to the SDK's glue.
//!
//! ```text
//! #[assignor(name = "range", version = "1.0.0", description = "...", protocol = "eager")]
//! pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> { ... }
//! ```
//!
//! expands to the function exactly as written (so `cargo test` calls it natively), a native
//! compile-time check that it coerces to
//! `fn(&AssignRequest) -> Result<Assignment, AssignError>`, and a
//! `#[cfg(target_arch = "wasm32")]` module with the four ABI exports, each a one-line call
//! into `assignor_sdk::__private`. All behaviour lives in the SDK; this crate only checks the
//! input (modules `args` and `signature`) and writes the wiring. Misuse is a `syn::Error` on the
//! offending tokens, never a panic; the UI tests in `guest-sdk/tests/ui` lock the messages.

// Every public item is part of an author's manual: say what it guarantees (tests/run denies
// warnings, so an undocumented one fails the build).
#![warn(missing_docs)]

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::Item;

mod args;
mod signature;

/// Marks the function that computes a group's assignment and exports it to the host.
/// See the `assignor-sdk` crate docs.
#[proc_macro_attribute]
pub fn assignor(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr.into(), item.into()).into()
}

/// The export names the ABI fixes (`assignor_sdk::abi::EXPORT_*`); the expansion checks at
/// compile time that each literal equals its constant.
const EXPORTS: [(&str, &str); 4] = [
    ("EXPORT_ABI_VERSION", "assignor_abi_version"),
    ("EXPORT_ALLOC", "assignor_alloc"),
    ("EXPORT_ASSIGN", "assignor_assign"),
    ("EXPORT_DESCRIBE", "assignor_describe"),
];

fn expand(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let args = args::parse(attr);
    let function = syn::parse2::<Item>(item.clone()).and_then(signature::check);
    match (args, function) {
        (Ok(args), Ok(function)) => generate(&args, &function.sig.ident, item),
        (args, function) => {
            let mut errors = args::Errors::default();
            if let Err(e) = args {
                errors.push(e);
            }
            if let Err(e) = function {
                errors.push(e);
            }
            let errors = errors.finish().err().map(|e| e.to_compile_error());
            // The item stays, so the only errors a user sees are ours, not "cannot find
            // function" knock-ons.
            quote!(#errors #item)
        }
    }
}

fn generate(args: &args::Args, ident: &syn::Ident, item: TokenStream2) -> TokenStream2 {
    let args::Args {
        name,
        version,
        description,
        protocol,
        inputs,
        in_place,
    } = args;
    let module = format_ident!("__assignor_exports_{}", ident);
    let checks = EXPORTS.iter().map(|(constant, literal)| {
        let constant = format_ident!("{}", constant);
        quote! {
            const _: () = ::assignor_sdk::__private::check_export_name(
                ::assignor_sdk::abi::#constant, #literal,
            );
        }
    });
    let [abi_version, alloc, assign, describe] = EXPORTS.map(|(_, literal)| literal);
    quote! {
        #item

        /// Fails to compile, natively too, if the function does not have the ABI's type.
        #[doc(hidden)]
        const _: fn(&::assignor_sdk::AssignRequest) -> ::core::result::Result<
            ::assignor_sdk::Assignment,
            ::assignor_sdk::AssignError,
        > = #ident;

        /// The ABI exports of this module (see `assignor_sdk::abi`).
        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        mod #module {
            #(#checks)*

            #[unsafe(export_name = #abi_version)]
            extern "C" fn abi_version() -> i32 {
                ::assignor_sdk::__private::abi_version()
            }

            #[unsafe(export_name = #alloc)]
            extern "C" fn alloc(len: i32) -> i32 {
                ::assignor_sdk::__private::alloc(len)
            }

            #[unsafe(export_name = #assign)]
            extern "C" fn assign(ptr: i32, len: i32) -> i64 {
                ::assignor_sdk::__private::assign(ptr, len, super::#ident)
            }

            #[unsafe(export_name = #describe)]
            extern "C" fn describe() -> i64 {
                ::assignor_sdk::__private::describe(
                    #name,
                    #version,
                    #description,
                    ::assignor_sdk::__private::RebalanceProtocol::#protocol,
                    &[#(::assignor_sdk::__private::Input::#inputs),*],
                    #in_place,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_keeps_the_function_and_gates_exports_on_wasm32() {
        let function = quote!(
            pub fn assign(r: &AssignRequest) -> Result<Assignment, AssignError> {
                todo!()
            }
        );
        let attr = quote!(
            name = "n",
            version = "1",
            description = "d",
            protocol = "eager"
        );
        let out = expand(attr, function.clone()).to_string();
        assert!(out.starts_with(&function.to_string()), "{out}");
        assert!(out.contains("# [cfg (target_arch = \"wasm32\")]"), "{out}");
        for (_, name) in EXPORTS {
            assert!(
                out.contains(&format!("export_name = \"{name}\"")),
                "{name} missing: {out}"
            );
        }
        assert!(out.contains("RebalanceProtocol :: Eager"), "{out}");
    }

    #[test]
    fn errors_keep_the_item_and_carry_every_message() {
        let function = quote!(
            async fn assign() {}
        );
        let out = expand(quote!(name = "n"), function.clone()).to_string();
        assert!(out.ends_with(&function.to_string()), "{out}");
        for needle in [
            "is missing `version`",
            "must not be `async`",
            "exactly one argument",
            "missing its return type",
        ] {
            assert!(out.contains(needle), "{needle} missing: {out}");
        }
    }
}
