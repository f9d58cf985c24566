use assignor_sdk::{assignor, AssignError, AssignRequest, Assignment};

#[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager", in_place = "yes")]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    Ok(Assignment::new(request))
}

fn main() {}
