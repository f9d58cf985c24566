use assignor_sdk::{assignor, AssignError, Assignment};

#[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager")]
pub fn assign() -> Result<Assignment, AssignError> {
    Err(AssignError::new("nothing to assign"))
}

fn main() {}
