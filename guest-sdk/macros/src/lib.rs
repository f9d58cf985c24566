//! The `#[assignor]` attribute of assignor-sdk.
use proc_macro::TokenStream;

/// Placeholder until the attribute lands.
#[proc_macro_attribute]
pub fn assignor(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
