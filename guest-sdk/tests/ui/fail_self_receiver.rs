use assignor_sdk::{assignor, AssignError, AssignRequest, Assignment};

pub struct Strategy;

impl Strategy {
    #[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager")]
    pub fn assign(&self, request: &AssignRequest) -> Result<Assignment, AssignError> {
    Ok(Assignment::new(request))
}
}

fn main() {}
