use assignor_sdk::{assignor, AssignError, AssignRequest, Assignment};

#[assignor(name = "range")]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    Ok(Assignment::new(request))
}

fn main() {}
