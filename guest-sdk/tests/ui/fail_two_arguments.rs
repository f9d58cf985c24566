use assignor_sdk::{assignor, AssignError, AssignRequest, Assignment};

#[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager")]
pub fn assign(request: &AssignRequest, extra: u32) -> Result<Assignment, AssignError> {
    let _ = extra;
    Ok(Assignment::new(request))
}

fn main() {}
