//! Checks that the attribute sits on a function of the one shape the glue can call:
//! `fn NAME(request: &AssignRequest) -> Result<Assignment, AssignError>`, free, synchronous,
//! safe, not generic. Each mistake is a `syn::Error` on the offending tokens.
//!
//! The check is by the types' last path segment, so `assignor_sdk::AssignRequest` and a
//! `use`d `AssignRequest` both pass; the generated code then coerces the function to the real
//! `fn` pointer type, so a same-named but different type still fails to compile.

use quote::{ToTokens, quote};
use syn::{FnArg, GenericArgument, Item, ItemFn, PathArguments, ReturnType, Signature, Type};

use crate::args::Errors;

const SHAPE: &str = "fn assign(request: &AssignRequest) -> Result<Assignment, AssignError>";

/// The function the attribute is on, if it has the right shape.
pub(crate) fn check(item: Item) -> syn::Result<ItemFn> {
    let function = match item {
        Item::Fn(function) => function,
        other => {
            return Err(syn::Error::new_spanned(
                head(&other),
                format!("#[assignor] goes on a function: `{SHAPE}`"),
            ));
        }
    };
    let mut errors = Errors::default();
    check_signature(&function.sig, &mut errors);
    errors.finish()?;
    Ok(function)
}

fn check_signature(sig: &Signature, errors: &mut Errors) {
    let mut refuse = |tokens: &dyn ToTokens, message: String| {
        errors.push(syn::Error::new_spanned(tokens.to_token_stream(), message));
    };
    check_qualifiers(sig, &mut refuse);
    check_inputs(sig, &mut refuse);
    check_output(sig, &mut refuse);
}

type Refuse<'a> = dyn FnMut(&dyn ToTokens, String) + 'a;

fn check_qualifiers(sig: &Signature, refuse: &mut Refuse<'_>) {
    if let Some(token) = &sig.asyncness {
        refuse(token, "#[assignor] function must not be `async`: the host calls it synchronously, and there is nothing to await in the sandbox".into());
    }
    if let Some(token) = &sig.unsafety {
        refuse(token, "#[assignor] function must not be `unsafe`: the generated export calls it as a safe function".into());
    }
    if let Some(abi) = &sig.abi {
        refuse(abi, "#[assignor] function must not declare an ABI: the attribute writes the `extern \"C\"` exports itself".into());
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        refuse(
            &sig.generics,
            format!(
                "#[assignor] function must not be generic: the export needs one concrete function, `{SHAPE}`"
            ),
        );
    }
}

fn check_inputs(sig: &Signature, refuse: &mut Refuse<'_>) {
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        let message = "#[assignor] goes on a free function, not a method: remove `self` and take `request: &AssignRequest`";
        return refuse(receiver, message.into());
    }
    if sig.inputs.len() != 1 {
        let message = format!(
            "#[assignor] function takes exactly one argument, `request: &AssignRequest`, found {}",
            sig.inputs.len()
        );
        return refuse(&Parens(sig), message);
    }
    if let Some(FnArg::Typed(typed)) = sig.inputs.first()
        && !is_request_ref(&typed.ty)
    {
        let message = format!(
            "the argument of an #[assignor] function must be `&AssignRequest`, found `{}`",
            pretty(&typed.ty)
        );
        refuse(&typed.ty, message);
    }
}

fn check_output(sig: &Signature, refuse: &mut Refuse<'_>) {
    match &sig.output {
        ReturnType::Default => refuse(
            sig,
            "#[assignor] function is missing its return type: `-> Result<Assignment, AssignError>`"
                .into(),
        ),
        ReturnType::Type(_, ty) if !is_result(ty) => refuse(
            ty,
            format!(
                "#[assignor] function must return `Result<Assignment, AssignError>`, found `{}`",
                pretty(ty)
            ),
        ),
        ReturnType::Type(..) => {}
    }
}

/// The `(...)` of a signature, for errors about the argument list as a whole.
struct Parens<'a>(&'a Signature);

impl ToTokens for Parens<'_> {
    fn to_tokens(&self, tokens: &mut proc_macro2::TokenStream) {
        self.0
            .paren_token
            .surround(tokens, |inner| self.0.inputs.to_tokens(inner));
    }
}

/// `&AssignRequest` (any path ending in `AssignRequest`), not `&mut`.
fn is_request_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => r.mutability.is_none() && last_ident_is(&r.elem, "AssignRequest"),
        _ => false,
    }
}

/// `Result<Assignment, AssignError>` (any paths ending in those names).
fn is_result(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    last.ident == "Result"
        && args.args.len() == 2
        && types.len() == 2
        && last_ident_is(types[0], "Assignment")
        && last_ident_is(types[1], "AssignError")
}

fn last_ident_is(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == name && s.arguments.is_empty()),
        Type::Paren(p) => last_ident_is(&p.elem, name),
        _ => false,
    }
}

/// The tokens of a type as a person writes them (`&mut AssignRequest`, not `& mut AssignRequest`).
fn pretty(ty: &Type) -> String {
    let text = ty.to_token_stream().to_string();
    text.replace("& ", "&")
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
}

/// The keyword and name of a non-function item, so the error points at its first line.
fn head(item: &Item) -> proc_macro2::TokenStream {
    match item {
        Item::Struct(i) => {
            let (kw, id) = (&i.struct_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Enum(i) => {
            let (kw, id) = (&i.enum_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Const(i) => {
            let (kw, id) = (&i.const_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Static(i) => {
            let (kw, id) = (&i.static_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Mod(i) => {
            let (kw, id) = (&i.mod_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Trait(i) => {
            let (kw, id) = (&i.trait_token, &i.ident);
            quote!(#kw #id)
        }
        Item::Impl(i) => {
            let (kw, ty) = (&i.impl_token, &i.self_ty);
            quote!(#kw #ty)
        }
        other => other.to_token_stream(),
    }
}
