use assignor_sdk::{assignor, AssignError, AssignRequest, Assignment};

#[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager")]
pub fn assign(request: &mut AssignRequest) -> Result<Assignment, AssignError> {
    Ok(Assignment::new(request))
}

fn main() {}
