//! The attribute's arguments: `name`, `version`, `description`, `protocol`, all required, and
//! `inputs`, optional, all string literals; and `in_place`, an optional `bool` literal. Every mistake is a `syn::Error` pointing at the
//! culprit; several mistakes in one attribute are reported together.

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Token};

/// The full form, quoted in messages so a fix is one copy away.
pub(crate) const USAGE: &str =
    "#[assignor(name = \"...\", version = \"...\", description = \"...\", protocol = \"eager\")]";

const KEYS: [&str; 5] = ["name", "version", "description", "protocol", "inputs"];

/// The required keys: the first four of [`KEYS`].
const REQUIRED: usize = 4;

/// The optional inputs of ABI v2 (`assignor_sdk::abi::Input`): the name an author writes and
/// the variant. A variant missing from the SDK fails the expansion's compile, so the two lists
/// cannot drift apart unnoticed.
const INPUTS: [(&str, &str); 7] = [
    ("client", "Client"),
    ("racks", "Racks"),
    ("user_data", "UserData"),
    ("metadata", "Metadata"),
    ("lag", "Lag"),
    ("weights", "Weights"),
    ("state", "State"),
];

/// Validated arguments.
pub(crate) struct Args {
    pub(crate) name: LitStr,
    pub(crate) version: LitStr,
    pub(crate) description: LitStr,
    /// `Eager` or `Cooperative`: the `RebalanceProtocol` variant.
    pub(crate) protocol: Ident,
    /// The `Input` variants of `inputs = "..."`, in the order written, without repeats.
    pub(crate) inputs: Vec<Ident>,
    /// `in_place = true`: the module's answers to a change of membership may be applied
    /// without a rebalance (`AssignorInfo::in_place`).
    pub(crate) in_place: bool,
}

/// Parses and checks the tokens inside `#[assignor(...)]`.
pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Args> {
    let entries = entries.parse2(tokens)?;
    let mut errors = Errors::default();
    let mut found: [Option<LitStr>; 5] = Default::default();
    // Keys written at all, valid or not: a bad value is reported once, not also as missing.
    let mut seen = [false; 5];
    let mut in_place: Option<bool> = None;
    for (key, value) in entries {
        if key == "in_place" {
            if in_place.is_some() {
                errors.push(syn::Error::new(
                    key.span(),
                    "duplicate key `in_place` in #[assignor]",
                ));
            }
            match bool_value(&key, value) {
                Ok(value) => in_place = Some(value),
                Err(e) => errors.push(e),
            }
            continue;
        }
        let Some(slot) = KEYS.iter().position(|k| key == k) else {
            errors.push(syn::Error::new(
                key.span(),
                format!(
                    "unknown key `{key}` in #[assignor]; expected `name`, `version`, `description` and `protocol`, and optionally `inputs` and `in_place`"
                ),
            ));
            continue;
        };
        if std::mem::replace(&mut seen[slot], true) {
            errors.push(syn::Error::new(
                key.span(),
                format!("duplicate key `{key}` in #[assignor]"),
            ));
            continue;
        }
        match string_value(&key, value) {
            Ok(value) => found[slot] = Some(value),
            Err(e) => errors.push(e),
        }
    }
    let missing: Vec<String> = KEYS[..REQUIRED]
        .iter()
        .zip(&seen)
        .filter(|(_, seen)| !**seen)
        .map(|(k, _)| format!("`{k}`"))
        .collect();
    if !missing.is_empty() {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!(
                "#[assignor] is missing {}; write {USAGE}",
                missing.join(", ")
            ),
        ));
    }
    errors.finish()?;
    let [
        Some(name),
        Some(version),
        Some(description),
        Some(protocol),
        inputs,
    ] = found
    else {
        // Every key was seen with a valid value, or an error was returned above.
        return Err(syn::Error::new(Span::call_site(), USAGE));
    };
    for (key, value) in [("name", &name), ("version", &version)] {
        if value.value().trim().is_empty() {
            errors.push(syn::Error::new(
                value.span(),
                format!("`{key}` must not be empty: {}", why(key)),
            ));
        }
    }
    let protocol_variant = match protocol.value().as_str() {
        "eager" => "Eager",
        "cooperative" => "Cooperative",
        other => {
            errors.push(syn::Error::new(
                protocol.span(),
                format!(
                    "`protocol` must be \"eager\" or \"cooperative\", not {other:?}: it is the strategy's KIP-429 rebalance protocol"
                ),
            ));
            "Eager"
        }
    };
    let mut variants: Vec<Ident> = Vec::new();
    if let Some(inputs) = &inputs {
        for word in inputs.value().split([',', ' ']).filter(|w| !w.is_empty()) {
            match INPUTS.iter().find(|(name, _)| *name == word) {
                Some((_, variant)) => {
                    if !variants.iter().any(|v| v == variant) {
                        variants.push(Ident::new(variant, inputs.span()));
                    }
                }
                None => errors.push(syn::Error::new(
                    inputs.span(),
                    format!(
                        "unknown input `{word}` in `inputs`; the inputs a module may read are {}",
                        INPUTS
                            .iter()
                            .map(|(n, _)| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
            }
        }
    }
    errors.finish()?;
    Ok(Args {
        name,
        version,
        description,
        protocol: Ident::new(protocol_variant, protocol.span()),
        inputs: variants,
        in_place: in_place.unwrap_or(false),
    })
}

fn why(key: &str) -> &'static str {
    match key {
        "name" => "it is the protocol name consumers select in `partition.assignment.strategy`",
        _ => "the host shows it to tell module versions apart",
    }
}

/// `key = value` pairs separated by commas; the value is any expression, checked afterwards
/// so a non-string value gets a message about strings rather than a parse error.
fn entries(input: ParseStream<'_>) -> syn::Result<Vec<(Ident, Expr)>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let key: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected `key = \"value\"` pairs: {USAGE}"),
            )
        })?;
        if !input.peek(Token![=]) {
            return Err(syn::Error::new(
                key.span(),
                format!("`{key}` needs a value: `{key} = \"...\"`"),
            ));
        }
        input.parse::<Token![=]>()?;
        let value: Expr = input.parse()?;
        out.push((key, value));
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(out)
}

fn string_value(key: &Ident, value: Expr) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{key}` must be a string literal, e.g. `{key} = \"...\"`"),
        )),
    }
}

fn bool_value(key: &Ident, value: Expr) -> syn::Result<bool> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.value),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{key}` must be `true` or `false`, e.g. `{key} = true`"),
        )),
    }
}

/// Collects errors so one compile shows every mistake.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn finish(&mut self) -> syn::Result<()> {
        match self.0.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn messages(tokens: TokenStream) -> Vec<String> {
        match parse(tokens) {
            Ok(_) => vec![],
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn all_four_keys_parse_in_any_order() {
        let args = parse(quote!(
            protocol = "cooperative",
            description = "d",
            version = "1",
            name = "n"
        ))
        .unwrap();
        assert_eq!(args.name.value(), "n");
        assert_eq!(args.version.value(), "1");
        assert_eq!(args.description.value(), "d");
        assert_eq!(args.protocol.to_string(), "Cooperative");
        assert!(!args.in_place, "in_place is false unless written");
    }

    #[test]
    fn in_place_is_a_bool_written_once() {
        let base = quote!(
            name = "n",
            version = "1",
            description = "d",
            protocol = "eager"
        );
        assert!(parse(quote!(#base, in_place = true)).unwrap().in_place);
        assert!(!parse(quote!(#base, in_place = false)).unwrap().in_place);
        assert_eq!(
            messages(quote!(#base, in_place = true, in_place = 1)),
            [
                "duplicate key `in_place` in #[assignor]",
                "`in_place` must be `true` or `false`, e.g. `in_place = true`",
            ]
        );
    }

    #[test]
    fn every_mistake_is_reported_together() {
        let got = messages(quote!(name = "n", colour = "red", name = "m", version = 1));
        assert_eq!(
            got,
            [
                "unknown key `colour` in #[assignor]; expected `name`, `version`, `description` and `protocol`, and optionally `inputs` and `in_place`",
                "duplicate key `name` in #[assignor]",
                "`version` must be a string literal, e.g. `version = \"...\"`",
                format!("#[assignor] is missing `description`, `protocol`; write {USAGE}").as_str(),
            ]
        );
    }

    #[test]
    fn inputs_are_optional_and_checked_by_name() {
        let base = quote!(
            name = "n",
            version = "1",
            description = "d",
            protocol = "eager"
        );
        assert!(parse(base.clone()).unwrap().inputs.is_empty());
        let args = parse(quote!(#base, inputs = "racks, lag racks")).unwrap();
        let names: Vec<String> = args.inputs.iter().map(|i| i.to_string()).collect();
        assert_eq!(names, ["Racks", "Lag"]);
        let got = messages(quote!(#base, inputs = "lags"));
        assert_eq!(got.len(), 1);
        assert!(
            got[0].starts_with("unknown input `lags` in `inputs`"),
            "{got:?}"
        );
    }

    #[test]
    fn protocol_and_empty_values_are_checked() {
        let got = messages(quote!(
            name = " ",
            version = "1",
            description = "",
            protocol = "sticky"
        ));
        assert_eq!(got.len(), 2);
        assert!(got[0].starts_with("`name` must not be empty"), "{got:?}");
        assert!(
            got[1].starts_with("`protocol` must be \"eager\" or \"cooperative\", not \"sticky\"")
        );
    }
}
