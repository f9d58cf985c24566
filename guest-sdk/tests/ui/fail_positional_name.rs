use assignor_sdk::{assignor, AssignError, AssignRequest, Assignment};

#[assignor("range")]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    Ok(Assignment::new(request))
}

fn main() {}
