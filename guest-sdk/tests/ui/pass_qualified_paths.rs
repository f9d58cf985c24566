/// Fully qualified types and a private function are fine.
#[assignor_sdk::assignor(name = "q", version = "1", description = "", protocol = "eager")]
fn strategy(
    request: &assignor_sdk::AssignRequest,
) -> ::core::result::Result<assignor_sdk::Assignment, assignor_sdk::AssignError> {
    Ok(assignor_sdk::Assignment::new(request))
}

fn main() {
    let response = strategy(&assignor_sdk::AssignRequest::default()).unwrap().into_response();
    assert_eq!(response.error, None);
}
