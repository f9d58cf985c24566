use assignor_sdk::{assignor, AssignError, Assignment};

/// Not the SDK's request: the names match, the types do not.
pub struct AssignRequest;

#[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager")]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    let _ = request;
    Err(AssignError::new("unreachable"))
}

fn main() {}
